"""graphscope's C parts, both optional: everything else is in pyproject.toml.

``graphscope.capture._labeller`` labels the nodes a recorded capture creates (see
capture/_labeller.c); ``graphscope.capture._modulewalk`` reads where a model's parameters are
at each instantiation (capture/_modulewalk.c). Where no C compiler or Python headers are
found, the install goes on without them and both run in Python, slower (docs/RECORD.md gives
the costs).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "graphscope.capture._labeller",
            sources=["capture/_labeller.c"],
            optional=True,
        ),
        Extension(
            "graphscope.capture._modulewalk",
            sources=["capture/_modulewalk.c"],
            optional=True,
        ),
    ]
)
