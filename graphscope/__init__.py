"""graphscope: see inside the CUDA graphs that run your model.

``load(path)`` reads a ``cudaGraphDebugDotPrint`` dump or a graphscope bundle into a
``networkx.DiGraph``; ``save(G, path)`` writes a bundle or a readable DOT file.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import (
    BundleFormatError,
    CaptureError,
    DotFormatError,
    GraphscopeError,
    InputError,
)
from .version import __version__

if TYPE_CHECKING:
    from .io import load, save

# A source checkout keeps the dashboard and the GPU side in ../app and ../capture, which an
# install maps to graphscope.app and graphscope.capture (pyproject's package-dir). Run from the
# checkout's root without an editable install (``python -m graphscope serve``), Python finds
# this folder before the installed package; the checkout's root on __path__ lets those import.
_checkout = Path(__file__).resolve().parent.parent
if (_checkout / "pyproject.toml").is_file() and (_checkout / "app" / "__init__.py").is_file():
    __path__.append(str(_checkout))


def __getattr__(name: str) -> Any:
    """``load`` and ``save``, imported on first use: importing graphscope stays cheap (no
    networkx) for the recorder's start-up inside a user's program and ``graphscope record``."""
    if name in ("load", "save"):
        from . import io

        return getattr(io, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
