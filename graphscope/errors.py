"""The one exception tree graphscope raises, and the one way its messages show a path."""

from __future__ import annotations

import os


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on, or that UTF-8 cannot hold,
    written as its Python escape: ``\\n``, ``\\x1b``, ``\\udcff``.

    A file name may hold a newline, an escape sequence or (from bytes that are not UTF-8) a
    lone surrogate; printed raw, it splits a one-line error, drives the terminal, or fails
    to encode. Escaped are the characters ``str.isprintable`` refuses (controls, line and
    paragraph separators, format characters such as the bidirectional overrides, surrogates)
    but the plain space; a backslash stays as it is, so a text that holds none of these
    comes back unchanged, and escaping twice changes nothing.
    """
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


class GraphscopeError(Exception):
    """Base of every error graphscope raises on purpose."""


class InputError(GraphscopeError):
    """A file cannot be read as a graph: missing, truncated, of another format or schema.

    ``str()`` gives ``FILE[:LINE]: what is wrong``, the form the CLI prints, on one line:
    ``printable`` escapes what the path or the message holds that would break it.
    """

    def __init__(self, path: str | os.PathLike[str] | None, message: str, line: int | None = None):
        self.path = None if path is None else os.fspath(path)
        self.line = line
        self.message = message
        where = "<input>" if self.path is None else printable(self.path) or '""'
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {printable(message)}")


class DotFormatError(InputError):
    """A DOT file is malformed or was not written by cudaGraphDebugDotPrint."""


class BundleFormatError(InputError):
    """A bundle is malformed, of another schema, or of a newer schema version."""


class CaptureError(GraphscopeError):
    """Capturing, introspecting or timing a graph on the GPU failed."""
