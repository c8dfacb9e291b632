"""What a recorder's observers and its worker share: the process's graphs and the run's status.

Observers write it from the program's threads (and CUPTI's), the worker reads it from its
own; ``lock`` guards the graph lists, ``records_lock`` each graph's timing records.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphscope.hlo import DumpFolder
from graphscope.recording import Settings

from .. import introspect
from ..environment import now_iso

if TYPE_CHECKING:
    from .. import sites
    from ..attribution import Attribution
    from .inputs import InputCheck
    from .lives import Life


def int_env(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None


#: The longest the worker gives way to one stretch of captures (a capture left open by a
#: thread that died would otherwise hold its builds back until exit).
GIVE_WAY_S = 5.0
#: How often a worker giving way looks again without being woken (finish() wakes it too).
GIVE_WAY_WAKE_S = 0.5


def process_folder_name(pid: int) -> str:
    """``pid<P>``, or ``rank<R>-pid<P>`` where the launcher says the rank."""
    rank = int_env("RANK")
    return f"rank{rank}-pid{pid}" if rank is not None else f"pid{pid}"


class State:
    """One process's recording as it stands."""

    def __init__(self, run_dir: str | os.PathLike[str], settings: Settings | None = None):
        self.run_dir = Path(run_dir)
        self.settings = settings or Settings()
        self.pid = os.getpid()
        self.started_ns = time.perf_counter_ns()
        self.started_at = now_iso()
        self.folder = self.run_dir / process_folder_name(self.pid)
        self.lives: list[Life] = []
        self.by_exec: dict[int, Life] = {}  # live executable graphs, by handle
        self.by_exec_id: dict[int, Life] = {}  # every graph, by CUPTI's exec id
        self.notes: list[str] = []
        self.status = "running"
        self.stop_reason: str | None = None
        self.stopped = False
        self.dirty = True  # the index is behind what is known
        self.index_written_ns = 0
        self.last_grab_ns = 0
        self.process: dict[str, Any] = {}
        # What torch's allocator held in all at the worker's last read (RECORDING_MEMORY).
        self.memory: dict[str, Any] = {}
        # What observers read from the program, set as recording starts.
        self.torch: Any = None
        self.attribution: Attribution | None = None
        self.hlo: DumpFolder | None = None  # where XLA dumps its optimized modules
        self.frames: sites.Frames | None = None
        self.cuda_graph_type: Any = None
        self.inputs: InputCheck | None = None  # samples the blocks graphs read (inputs.py)
        self.kernels = introspect.KernelReader()
        self.lock = threading.Lock()
        self.records_lock = threading.Lock()  # records arrive on CUPTI's thread too
        # How many stream captures run now (graphs.GraphWatch counts them in the recorder).
        self.captures_running: Callable[[], int] = lambda: 0
        self._given_way_ns = 0
        # Set as the last capture running ends (capture_ended): what give_way waits on.
        self._capture_ended = threading.Event()

    def give_way(self) -> None:
        """The worker's pause point (``graphscope.pace``): wait while the program captures.

        A build's Python holds the GIL the capture's own Python needs, every few ms taking
        it back, so a capture beside a build runs longer. Waiting costs the program
        nothing: sleeping lets the GIL go. Not while recording stops (``finish`` builds at
        exit on the program's thread), and at most ``GIVE_WAY_S`` per stretch of captures.
        """
        if not self.captures_running():
            self._given_way_ns = 0
            return
        began = time.perf_counter_ns()
        limit = GIVE_WAY_S * 1e9 - self._given_way_ns
        while not self.stopped:
            # Cleared, then the count read again: a capture that ended in between set it
            # after its count went down, so the wait below returns at once.
            self._capture_ended.clear()
            left = limit - (time.perf_counter_ns() - began)
            if not self.captures_running() or left <= 0:
                break
            # Woken by the capture's end, not polling: a thread that wakes every millisecond
            # takes the GIL from the capturing thread at each of torch's ops, which release
            # it. On the H100 two recorded captures beside such a loop took 0.51 and 0.53 s,
            # against 0.16 to 0.21 s unrecorded (benchmarks/probe_capture_parts.py).
            self._capture_ended.wait(min(left / 1e9, GIVE_WAY_WAKE_S))
        self._given_way_ns += time.perf_counter_ns() - began

    def capture_ended(self) -> None:
        """The last capture running ended (the graph observer says), or recording stops:
        wake give_way."""
        self._capture_ended.set()

    def since_s(self, ns: int) -> float:
        return (ns - self.started_ns) / 1e9

    def add_life(self, exe: int, life: Life) -> None:
        """A graph was instantiated (and read, if it could be)."""
        with self.lock:
            self.lives.append(life)
            self.by_exec[exe] = life
            self.by_exec_id[life.exec_id] = life
            self.last_grab_ns = time.perf_counter_ns()
            self.dirty = True

    def destroyed(self, exe: int, at_ns: int) -> None:
        life = self.by_exec.pop(exe, None)
        if life is not None:
            life.destroyed_ns = at_ns
            self.dirty = True

    def lives_now(self) -> list[Life]:
        with self.lock:
            return list(self.lives)

    def changed(self) -> None:
        """Something the index shows changed: it is rewritten at the worker's next turn."""
        self.dirty = True

    def note(self, text: str) -> None:
        if text not in self.notes and len(self.notes) < 100:
            self.notes.append(text)
            self.dirty = True
