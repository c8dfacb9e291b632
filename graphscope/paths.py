"""Asking the operating system about a path, with every refusal one ``InputError`` line.

pathlib's queries raise on what the OS refuses to look up: a name over the file system's 255
bytes or a path over 4,096 (``ENAMETOOLONG``), a folder on the way that the user cannot search
(``EACCES``), and some of them a symlink loop (``ELOOP``). Every path query of the CLI, the
readers and the writers goes through here, so that each of these is one line naming the path
and saying what is wrong, never a traceback. A path that names nothing is no refusal: the
queries answer None or False for it, as pathlib does.

What a name given as an output may be (not empty, not a folder's name) is decided here too.
"""

from __future__ import annotations

import errno
import os
import stat as st
from pathlib import Path

from .errors import InputError

#: What Linux and most file systems allow: bytes in one name, and in a whole path. Used to
#: word the message only; the OS decides what it refuses.
NAME_MAX = 255
PATH_MAX = 4096
# Errors that mean "nothing is there": the answer to a query, not a refusal (ENOTDIR: a part
# of the path is a file, as in "run.json/recording.json").
_ABSENT = (errno.ENOENT, errno.ENOTDIR)


def reason(exc: OSError) -> str:
    """The OS's words for ``exc``, lower-cased to follow ``FILE: ``."""
    why = exc.strerror or str(exc)
    return why[:1].lower() + why[1:]


def refusal(path: str | os.PathLike[str], exc: OSError) -> InputError:
    """The one-line ``InputError`` for an OS refusal of ``path``: what it means, and the fix."""
    code = exc.errno
    if code == errno.ENAMETOOLONG:
        raw = os.fsencode(path)
        longest = max((len(part) for part in raw.split(b"/")), default=0)
        if longest > NAME_MAX:
            why = (
                f"a name in it is {longest} bytes, longer than the file system allows "
                f"({NAME_MAX} bytes on most): use a shorter name"
            )
        elif len(raw) >= PATH_MAX:
            why = (
                f"the path is {len(raw)} bytes, longer than the system allows ({PATH_MAX} "
                "bytes on most): use a shorter path, or run from a folder nearer the file"
            )
        else:
            why = f"{reason(exc)}: use a shorter name"
    elif code == errno.ELOOP:
        why = "is a symlink loop (or a chain of symlinks too long to follow): point it at a file"
    elif code in (errno.EACCES, errno.EPERM):
        why = (
            "permission denied: a folder on its way cannot be searched, or it cannot be "
            "opened; check the permissions"
        )
    else:
        why = f"cannot reach it ({reason(exc)})"
    return InputError(path, why)


def stat(path: str | os.PathLike[str], *, follow: bool = True) -> os.stat_result | None:
    """``os.stat`` (``os.lstat`` without ``follow``), or None where nothing is there."""
    try:
        return os.stat(path) if follow else os.lstat(path)
    except OSError as exc:
        if exc.errno in _ABSENT:
            return None
        raise refusal(path, exc) from None
    except ValueError:  # a NUL in the name: no file can have it
        raise InputError(path, "holds a NUL character, which no file name can") from None


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether something is at ``path`` (a dangling symlink is nothing)."""
    return stat(path) is not None


def lexists(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names anything, a dangling symlink included."""
    return stat(path, follow=False) is not None


def is_dir(path: str | os.PathLike[str]) -> bool:
    found = stat(path)
    return found is not None and st.S_ISDIR(found.st_mode)


def is_file(path: str | os.PathLike[str]) -> bool:
    found = stat(path)
    return found is not None and st.S_ISREG(found.st_mode)


def entries(folder: str | os.PathLike[str]) -> list[Path]:
    """What ``folder`` holds, sorted by name (pathlib's glob passes over a folder it cannot
    read, which would say "nothing here" for "not allowed to look")."""
    try:
        with os.scandir(folder) as found:
            return sorted(Path(folder) / entry.name for entry in found)
    except OSError as exc:
        raise refusal(folder, exc) from None


def same_file(a: str | os.PathLike[str], b: os.stat_result | None) -> bool:
    """Whether ``a`` is the file ``b`` describes; False where ``a`` cannot be looked up."""
    try:
        return b is not None and os.path.samestat(os.stat(a), b)
    except (OSError, ValueError):
        return False


def output_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a file to write, or one line saying why it names none.

    Refused: an empty name, a name ending in "/" (it names a folder: pathlib would drop the
    slash and write a file), and ".", ".." or "/" as the last part.
    """
    raw = os.fspath(path)
    if raw == "":
        raise InputError(raw, "no file named: name a file")
    if raw.endswith(("/", os.sep)) or (os.altsep is not None and raw.endswith(os.altsep)):
        raise InputError(
            raw, "ends in a slash, which names a folder: name a file to write (no slash)"
        )
    p = Path(raw)
    if p.name in ("", ".", ".."):
        raise InputError(raw, "names a folder: name a file to write in it")
    return p
