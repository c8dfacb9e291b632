"""The one exception tree graphscope raises."""

from __future__ import annotations

import os


class GraphscopeError(Exception):
    """Base of every error graphscope raises on purpose."""


class InputError(GraphscopeError):
    """A file cannot be read as a graph: missing, truncated, of another format or schema.

    ``str()`` gives ``FILE[:LINE]: what is wrong``, the form the CLI prints.
    """

    def __init__(self, path: str | os.PathLike[str] | None, message: str, line: int | None = None):
        self.path = None if path is None else os.fspath(path)
        self.line = line
        self.message = message
        where = self.path if self.path is not None else "<input>"
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {message}")


class DotFormatError(InputError):
    """A DOT file is malformed or was not written by cudaGraphDebugDotPrint."""


class BundleFormatError(InputError):
    """A bundle is malformed, of another schema, or of a newer schema version."""


class CaptureError(GraphscopeError):
    """Capturing, introspecting or timing a graph on the GPU failed."""
