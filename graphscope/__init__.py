"""graphscope: see inside the CUDA graphs that run your model.

``load(path)`` reads a ``cudaGraphDebugDotPrint`` dump or a graphscope bundle into a
``networkx.DiGraph``; ``save(G, path)`` writes a bundle or a readable DOT file.
"""

__version__ = "0.1.0"

from .errors import (
    BundleFormatError,
    CaptureError,
    DotFormatError,
    GraphscopeError,
    InputError,
)
from .io import load, save

__all__ = [
    "BundleFormatError",
    "CaptureError",
    "DotFormatError",
    "GraphscopeError",
    "InputError",
    "__version__",
    "load",
    "save",
]
