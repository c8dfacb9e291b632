"""GPU side of graphscope: capture a step into a CUDA graph and read it through the driver.

Installed as ``graphscope.capture``. Everything here imports torch, cuda-python and cupti lazily.
"""
