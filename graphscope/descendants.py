"""The processes a recorded program starts, watched through ``/proc``: which of them loaded the
CUDA driver where ``graphscope record`` could not follow.

``record``'s start-up hook reaches Python processes only, and only those that start with it:
a program that starts a C++ server or another native binary using the GPU gets no recording
of it, nor does a Python process started with an environment of its own (no PYTHONPATH entry
for the hook) or with ``-I``, ``-E`` or ``-S``. The user should hear so rather than find the
process missing. ``graphscope record``'s own process (which waits for the program anyway)
polls the process table: every process descending from the program is noted with its name;
a Python process's command line and starting environment (``/proc/<pid>/environ``) say
whether the hook can run in it; and each process the hook cannot reach is checked for the
CUDA driver (``libcuda.so`` in its memory map) until it has loaded it. A process that lives
less than one poll can be missed; the docs say so. Linux only: elsewhere nothing is watched.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

POLL_S = 1.0
_PYTHON = re.compile(r"^(python|pypy)[0-9.]*(-dbg)?$")


@dataclass
class Seen:
    """One descendant of the program."""

    pid: int
    name: str  # the executable's file name, or the kernel's short name for the process
    python: bool
    cuda: bool = False  # loaded libcuda (seen in its memory map)
    hookless: str | None = None  # why record's start-up hook cannot run in this Python process

    @property
    def unreached(self) -> bool:
        """The start-up hook cannot run here: not Python, or Python started without it."""
        return not self.python or self.hookless is not None

    def why_unrecorded(self) -> str:
        if self.python:
            return (
                f"pid {self.pid} ({self.name}) loaded the CUDA driver, but graphscope "
                f"record's start-up hook could not run in it: {self.hookless}"
            )
        return (
            f"pid {self.pid} ({self.name}) loaded the CUDA driver but is not a Python "
            "process, and graphscope record's start-up hook reaches Python processes only"
        )


class Watch:
    """Polls ``proc`` for the descendants of ``root`` on a thread of its own."""

    def __init__(
        self,
        root: int,
        proc: Path = Path("/proc"),
        poll_s: float = POLL_S,
        hook: dict[str, str] | None = None,
    ) -> None:
        """``hook``: the environment variables a Python process needs for the start-up hook to
        run in it, each with its value or, for a path list (PYTHONPATH), one of its entries.
        Without it, every Python process is taken to run the hook."""
        self.root = root
        self.proc = proc
        self.poll_s = poll_s
        self.hook = hook or {}
        self.seen: dict[int, Seen] = {}
        self._gone: list[Seen] = []  # the program's processes whose pid went to another since
        # The program's processes, pid -> the inode of their /proc folder (a pid used again
        # is a new process with a new inode), and the processes that are not the program's.
        self._ours: dict[int, int] = {}
        self._others: set[tuple[int, int]] = set()
        self._stop = threading.Event()
        self._lock = threading.Lock()  # a look, against stop() reading what looks found
        self._thread: threading.Thread | None = None

    def start(self) -> Watch:
        if self.proc.is_dir():
            self._thread = threading.Thread(target=self._run, name="graphscope-descendants")
            self._thread.daemon = True
            self._thread.start()
        return self

    def stop(self) -> list[Seen]:
        """Stop polling; every descendant seen that loaded the driver where the hook could
        not run."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        # A look that outlived the join is not read half done, nor waited on for ever (a
        # process stuck in the kernel can hold a read of its maps).
        if not self._lock.acquire(timeout=5):
            return []
        try:
            return [s for s in (*self._gone, *self.seen.values()) if s.cuda and s.unreached]
        finally:
            self._lock.release()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception:  # a report, never a reason to fail the run
                return
            self._stop.wait(self.poll_s)

    def poll(self) -> None:
        """One look at the process table.

        Only the processes new since the last look have their parent read: one that was not
        the program's never becomes so (an orphan is handed up, to init or a subreaper above
        it), so a look on a machine of a thousand processes reads a few files, not a thousand.
        A process of the program stays one when it is orphaned (a server it daemonised)."""
        with self._lock:
            self._look()

    def _look(self) -> None:
        listed = self._listed()
        alive = {pid for pid, ino in self._ours.items() if listed.get(pid) == ino}
        new = {
            pid: ino
            for pid, ino in listed.items()
            if pid not in alive and (pid, ino) not in self._others
        }
        parents = self._parents(new)
        ours = _descendants({self.root} & parents.keys() | alive, parents)
        self._others = {(p, i) for p, i in self._others if listed.get(p) == i}
        self._others |= {(pid, new[pid]) for pid in parents.keys() - ours}
        for pid in self._ours.keys() - alive:  # gone, or its pid now another process's
            if (old := self.seen.pop(pid, None)) is not None:
                self._gone.append(old)
        self._ours = {pid: listed[pid] for pid in ours}
        for pid in sorted(ours):
            # The name is read on every look, not only the first: a child caught between
            # fork and exec still bears its parent's name (a Python program's subprocess is
            # "python3" until it becomes the native server it runs).
            name = self._name(pid)
            if name is None:
                continue
            seen = self.seen.get(pid)
            if seen is None or seen.name != name:
                seen = self.seen[pid] = Seen(pid, name, is_python(name))
                if seen.python and self.hook:
                    seen.hookless = self._hookless(pid)
            if seen.unreached and not seen.cuda:
                seen.cuda = self._maps_libcuda(pid)

    def _listed(self) -> dict[int, int]:
        """pid -> the inode of its ``/proc`` folder, for every process listed now."""
        with os.scandir(self.proc) as entries:
            return {int(e.name): e.inode() for e in entries if e.name.isdigit()}

    def _parents(self, pids: Iterable[int]) -> dict[int, int]:
        """pid -> parent pid, for each of ``pids`` still readable."""
        out: dict[int, int] = {}
        for pid in pids:
            try:
                stat = (self.proc / str(pid) / "stat").read_text(errors="replace")
            except OSError:  # gone since the listing
                continue
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) >= 2 and fields[1].isdigit():
                out[pid] = int(fields[1])
        return out

    def _name(self, pid: int) -> str | None:
        folder = self.proc / str(pid)
        try:
            return Path((folder / "exe").readlink()).name.removesuffix(" (deleted)")
        except OSError:  # not ours to read, or a kernel thread: the short name
            try:
                return (folder / "comm").read_text(errors="replace").strip() or None
            except OSError:
                return None

    def _hookless(self, pid: int) -> str | None:
        """Why the start-up hook cannot run in Python process ``pid``; None when it can, or
        when its command line or environment cannot be read (nothing is claimed then)."""
        folder = self.proc / str(pid)
        try:
            argv = (folder / "cmdline").read_bytes().split(b"\0")
            environ = (folder / "environ").read_bytes().split(b"\0")
        except OSError:
            return None
        flagged = hook_flag([a.decode(errors="replace") for a in argv])
        if flagged:
            return f"it was started with {flagged}"
        env = dict(e.decode(errors="replace").partition("=")[::2] for e in environ if e)
        for key, value in self.hook.items():
            got = env.get(key)
            if got is None or (got != value and value not in got.split(os.pathsep)):
                return (
                    f"its environment lacks graphscope record's {key} (the program started it "
                    "with an environment of its own; pass os.environ on to it)"
                )
        return None

    def _maps_libcuda(self, pid: int) -> bool:
        try:
            with open(self.proc / str(pid) / "maps", encoding="utf-8", errors="replace") as maps:
                return any("/libcuda.so" in line for line in maps)
        except OSError:
            return False


#: Interpreter flags under which sitecustomize, graphscope's hook, is not run.
_HOOKLESS_FLAGS = {
    "I": "isolated mode, which ignores PYTHONPATH",
    "E": "which ignores PYTHONPATH",
    "S": "which skips the site module that runs the hook",
}


def hook_flag(argv: list[str]) -> str | None:
    """The interpreter option in Python command line ``argv`` under which the start-up hook
    cannot run, with what it does (``-I, isolated mode, ...``); None when there is none."""
    flags = _interpreter_flags(argv)
    return next((f"-{f}, {what}" for f, what in _HOOKLESS_FLAGS.items() if f in flags), None)


def is_python(argv0: str) -> bool:
    """Whether a command's first word names a Python interpreter (``python3.12``, ``pypy3``)."""
    return bool(_PYTHON.match(Path(argv0).name))


def _interpreter_flags(argv: list[str]) -> set[str]:
    """The one-letter options given to the interpreter in ``argv`` (``python -u -IS x.py``:
    ``{"u", "I", "S"}``), up to the script, ``-c`` or ``-m``."""
    flags: set[str] = set()
    args = iter(argv[1:])
    for arg in args:
        if arg == "--check-hash-based-pycs":  # the one long option that takes a value
            next(args, None)
            continue
        if arg in ("-", "--") or not arg.startswith("-") or arg.startswith("--"):
            break
        for i, letter in enumerate(arg[1:]):
            flags.add(letter)
            if letter in "cm":  # what follows is the program and its arguments
                return flags
            if letter in "WX":  # an option's value: the rest of this word, or the next one
                if i == len(arg) - 2:
                    next(args, None)
                break
    return flags


def _descendants(roots: set[int], parents: dict[int, int]) -> set[int]:
    """``roots`` and every process below them, in ``parents``."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    out, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        out.add(pid)
        todo.extend(children.get(pid, ()))
    return out
