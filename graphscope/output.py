"""Writing an output file: whole or not at all, never over the command's own input.

A file is written to a temporary file beside it, then renamed over it: a reader sees the old
file or the new one, never half of one. An overwrite keeps what the user set on the file: its
mode (a 0600 bundle stays private) and, where it is a symlink, the link (the file it points
to is replaced). Temporary files are named ``.NAME.PID.XXXXXXXX.graphscope-tmp``; one left by
a save that was killed is removed by the next save of the same file.

Every failure is one ``InputError`` line naming the file: a folder that does not exist or
cannot be written, a path that is a folder, a full disk.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from .errors import InputError

#: The end of every temporary file graphscope writes.
TMP_SUFFIX = ".graphscope-tmp"
#: A temporary file this old is stale whoever wrote it: a process on another host sharing
#: the folder, or a dead writer whose PID was reused (no save takes a day).
STALE_AFTER_S = 24 * 3600
# Characters of the target's name kept in a temporary file's name, so that the name stays
# within the file system's 255 bytes.
_NAME_CHARS = 100
# The rest of a temporary file's name: the writer's PID and mkstemp's 8 random characters.
_TMP_REST = re.compile(r"(\d+)\.[a-z0-9_]{8}")
# The process's umask, read once at import (os.umask can only be read by setting it).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _prefix(name: str) -> str:
    return f".{name[:_NAME_CHARS]}."


def _reason(exc: OSError) -> str:
    why = exc.strerror or str(exc)
    return why[:1].lower() + why[1:]


def _alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would end the process there; age alone decides
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process: alive
        return True
    return True


def remove_stale(target: Path) -> list[Path]:
    """Remove the temporary files of saves of ``target`` that will never finish.

    A file is stale when the process that wrote it is gone (it was killed mid-save) or when
    it is older than ``STALE_AFTER_S``; a save still running in another process keeps its
    file. Returns the files removed; a file that cannot be removed is left.
    """
    prefix = _prefix(target.name)
    removed = []
    now = time.time()
    for path in target.parent.glob(glob.escape(prefix) + "*" + TMP_SUFFIX):
        rest = _TMP_REST.fullmatch(path.name[len(prefix) : -len(TMP_SUFFIX)])
        if rest is None:
            continue  # another file's temporary, or not one of ours
        try:
            old = now - path.lstat().st_mtime > STALE_AFTER_S
            if old or not _alive(int(rest.group(1))):
                path.unlink()
                removed.append(path)
        except OSError:
            continue
    return removed


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable; where a folder cannot be opened, the rename stands."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _keep_owner(tmp: str, existing: os.stat_result) -> None:
    if os.name == "nt" or (existing.st_uid, existing.st_gid) == (os.geteuid(), os.getegid()):
        return
    with contextlib.suppress(OSError):  # only root may give a file away; the mode stays
        os.chown(tmp, existing.st_uid, existing.st_gid)


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` to ``path`` whole or not at all: a temporary file beside it, renamed.

    An existing file keeps its mode (and owner, where this process may set it); a symlink
    stays, and the file it points to is replaced. Returns ``path`` as given.
    """
    p = Path(path)
    if isinstance(data, str):
        # A name from a file may hold a lone surrogate (JSON can carry "\ud800"), which UTF-8
        # cannot: written as its escape, valid text in HTML, JSON and JS strings alike.
        data = data.encode("utf-8", errors="backslashreplace")
    target = Path(os.path.realpath(p)) if p.is_symlink() else p
    folder = target.parent
    if target.is_dir():
        raise InputError(p, "is a folder; name a file to write")
    if not folder.is_dir():
        raise InputError(p, f"folder {folder} does not exist")
    remove_stale(target)
    try:
        existing: os.stat_result | None = target.stat()
    except OSError:
        existing = None
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f"{_prefix(target.name)}{os.getpid()}.", suffix=TMP_SUFFIX, dir=folder
        )
    except OSError as exc:
        raise InputError(p, f"cannot write into {folder}: {_reason(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            if existing is None:
                # mkstemp makes the file private; give it the mode a plain open() would.
                os.chmod(tmp, 0o666 & ~_UMASK)
            else:
                os.chmod(tmp, stat.S_IMODE(existing.st_mode))
                _keep_owner(tmp, existing)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InputError(p, f"cannot write it: {_reason(exc)}") from None
        raise
    _fsync_folder(folder)
    return p


def refuse_inputs(output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Raise ``InputError`` when ``output`` is one of ``inputs``: by any name, link or path."""
    for source in inputs:
        try:
            same = os.path.samefile(output, source)
        except OSError:  # one of them does not exist (yet): they are not one file
            continue
        if same:
            raise InputError(
                output,
                f"is this command's input {os.fspath(source)!r}; write the output to another "
                "file (graphscope never replaces its own input)",
            )
