"""Writing an output file: whole or not at all, never over the command's own input.

A file is written to a temporary file beside it, then renamed over it: a reader sees the old
file or the new one, never half of one. An overwrite keeps what the user set on the file: its
mode (a 0600 bundle stays private) and, where it is a symlink, the link (the file it points
to is replaced). Temporary files are named ``.NAME.PID.XXXXXXXX.graphscope-tmp``; one left by
a save that was killed is removed by the next save of the same file.

What is at the path decides how it is written, and nothing but a regular file is replaced:

- a regular file, or nothing (a dangling symlink creates its target): the atomic rename above;
- this process's own stdout, by any name (``/dev/stdout``, ``/dev/fd/1``, or the file the
  shell redirected it to): written through it, so that ``>>`` appends and a pipe reads it;
- a FIFO or a character device (``/dev/null``, a terminal): opened and written in place, no
  temporary file, no rename. A FIFO that no process reads is refused rather than waited on;
  the data is built whole before the file is opened, so a refusal or a failure before the
  first byte writes nothing;
- a folder, a block device, a socket, a symlink loop: refused.

Every failure is one ``InputError`` line naming the file: a name that names no file (empty,
".", "/", ending in a slash), a folder that does not exist or cannot be written or searched, a
name too long, a full disk.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from . import paths
from .errors import InputError

#: The end of every temporary file graphscope writes.
TMP_SUFFIX = ".graphscope-tmp"
#: A temporary file this old is stale whoever wrote it: a process on another host sharing
#: the folder, or a dead writer whose PID was reused (no save takes a day).
STALE_AFTER_S = 24 * 3600
# Bytes of the target's name kept in a temporary file's name, so that the name stays within
# the file system's 255 bytes (100 characters of a non-ASCII name could be 400).
_NAME_BYTES = 100
# The rest of a temporary file's name: the writer's PID and mkstemp's 8 random characters.
_TMP_REST = re.compile(r"(\d+)\.[a-z0-9_]{8}")
# The process's umask, read once at import (os.umask can only be read by setting it).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _prefix(name: str) -> str:
    # Cut as bytes; a character cut in two comes back as surrogate escapes, which give the
    # same bytes again, so the save and remove_stale agree on the name.
    return f".{os.fsdecode(os.fsencode(name)[:_NAME_BYTES])}."


_reason = paths.reason


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
    stays, and the file it points to is replaced. A FIFO or a character device is written in
    place (the module's docstring says what else is refused). Returns ``path`` as given.
    """
    p = paths.output_path(path)
    if isinstance(data, str):
        # A name from a file may hold a lone surrogate (JSON can carry "\ud800"), which UTF-8
        # cannot: written as its escape, valid text in HTML, JSON and JS strings alike.
        data = data.encode("utf-8", errors="backslashreplace")
    existing = paths.stat(p)  # through a symlink; a loop is refused here
    if existing is not None and _is_stdout(existing):
        _write_stdout(p, data)
        return p
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        if stat.S_ISFIFO(existing.st_mode) or stat.S_ISCHR(existing.st_mode):
            _write_special(p, existing, data)
            return p
        raise InputError(p, f"is {_kind(existing)}; name a file to write")
    link = paths.stat(p, follow=False)
    target = Path(os.path.realpath(p)) if link is not None and stat.S_ISLNK(link.st_mode) else p
    folder = target.parent
    if not paths.is_dir(folder):
        there = "is not a folder" if paths.exists(folder) else "does not exist"
        raise InputError(p, f"folder {folder} {there}")
    remove_stale(target)
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f"{_prefix(target.name)}{os.getpid()}.", suffix=TMP_SUFFIX, dir=folder
        )
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise paths.refusal(p, exc) from None
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


def _is_stdout(found: os.stat_result) -> bool:
    try:
        return os.path.samestat(found, os.fstat(1))
    except OSError:  # no stdout
        return False


def _write_stdout(p: Path, data: bytes) -> None:
    """Write through this process's own stdout (``-o /dev/stdout``): reopening the file it
    is would write from its start, over what the shell appended, and renaming over it would
    replace a file the shell opened with ``>>``."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        sys.stdout.flush()  # what was printed before comes before
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]
    except BrokenPipeError:  # its reader stopped reading (| head): the CLI ends quietly
        raise
    except OSError as exc:
        raise InputError(p, f"cannot write it: {_reason(exc)}") from None


def _kind(found: os.stat_result) -> str:
    """What a file that is not a regular file is, in words."""
    mode = found.st_mode
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISBLK(mode):
        return "a block device (writing it would overwrite a disk)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def is_special(found: os.stat_result | None) -> bool:
    """Whether a file is one ``write_atomic`` writes in place: a FIFO or a character device."""
    return found is not None and (stat.S_ISFIFO(found.st_mode) or stat.S_ISCHR(found.st_mode))


def _write_special(p: Path, found: os.stat_result, data: bytes) -> None:
    """Write into a FIFO or a character device: opened, written, closed; never replaced.

    A FIFO is opened without blocking first: with no reader, open() would wait for ever (a
    command that hangs), so that is refused; once open, writes block as a pipe's do.
    """
    fifo = stat.S_ISFIFO(found.st_mode)
    flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | (os.O_NONBLOCK if fifo else 0)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        if fifo and exc.errno == errno.ENXIO:
            raise InputError(
                p,
                "is a FIFO that no process is reading: start its reader first (cat FIFO), or "
                "write to a file",
            ) from None
        raise paths.refusal(p, exc) from None
    try:
        if not is_special(os.fstat(fd)):  # replaced between the look and the open
            raise InputError(p, "changed while it was opened; write again")
        if fifo:
            os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BrokenPipeError:  # its reader stopped reading: the CLI ends quietly, as on stdout
        raise
    except OSError as exc:
        raise InputError(p, f"cannot write it: {_reason(exc)}") from None
    finally:
        os.close(fd)


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
