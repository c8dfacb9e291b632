"""The timing observer: every graph launch counted, some traced, their kernel records joined.

Launch handlers run on the program's threads and only count, time the call and switch CUPTI's
kernel tracing on or off at the edges of a sampled window (``sampling.Schedule``). Records
come back on CUPTI's thread (or the worker's, at a flush) through :meth:`LaunchSampler.consume`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any

from .. import callbacks
from .._cuda import cupti
from ..sampling import Schedule
from ..trace import GPU_KINDS, enable_kinds, start_activities, stop_activities
from .calls import Calls, Subscription

if TYPE_CHECKING:
    from ..activities import Record
    from .lives import Life
    from .state import State


class LaunchSampler:
    """Counts launches per graph and traces the ones the schedule picks."""

    def __init__(self, recorder: State) -> None:
        self.rec = recorder
        self.schedule = Schedule(recorder.settings, 0.0)
        self.tracing = False
        # The launch traced last, (its graph, its correlation id): see untime_last_traced.
        self._last_traced: tuple[Life, int] | None = None
        self.records_since_ns = 0  # when tracing last stopped with records not collected
        self.last_launch_ns = 0
        self.unknown_launches = 0  # launches of graphs instantiated before recording began
        self.eager_kernels = 0
        self.eager_kernel_ns = 0
        self.records = 0
        self._local = threading.local()  # per thread: the launch under way

    def subscriptions(self, calls: Calls) -> list[Subscription]:
        return calls.watch(("cudaGraphLaunch", "cuGraphLaunch"), self._launch)

    def start(self) -> None:
        """Route activity records here; tracing stays off until a window opens."""
        start_activities(self, GPU_KINDS)
        enable_kinds(GPU_KINDS, enable=False)

    def stop(self) -> None:
        """Stop tracing; the records in flight are flushed to :meth:`consume`."""
        if self.tracing:
            self.untime_last_traced()
        with contextlib.suppress(Exception):
            stop_activities(self, GPU_KINDS)

    def _launch(self, cbdata: Any, exiting: bool) -> None:
        local = self._local
        if exiting:
            entered = getattr(local, "launch", None)
            if entered is not None:
                local.launch = None
                life, traced, began = entered
                spent = time.perf_counter_ns() - began
                if traced:
                    life.timed.cpu_launch_ns[callbacks.correlation_id(cbdata)] = spent
                else:
                    life.launch_ns.append(spent)
            return
        (exe,) = callbacks.param_words(cbdata, 1)
        correlation = callbacks.correlation_id(cbdata)
        life = self.rec.by_exec.get(exe)
        self.last_launch_ns = began = time.perf_counter_ns()
        if life is None:
            self.unknown_launches += 1
            return
        life.replays += 1
        wanted = self.schedule.wants(life.traced, self.rec.since_s(began))
        if wanted != self.tracing:
            # Turned on before the launch is submitted; off at the first launch not traced,
            # so that the last traced one's records are all in flight by then.
            enable_kinds(GPU_KINDS, enable=wanted)
            self.tracing = wanted
            if wanted:
                # The first launch traced after tracing starts carries CUPTI's setup of the
                # executable graph (its kernels read as 100 ms long on the H200): not timed.
                life.timed.skip.add(correlation)
            else:
                self.untime_last_traced()
                if not self.records_since_ns:  # collected when the program next rests
                    self.records_since_ns = began
        if wanted:
            if life.traced == 0:
                life.timed.skip.add(correlation)
            life.traced += 1
            self._last_traced = (life, correlation)
        local.launch = (life, wanted, time.perf_counter_ns())

    def untime_last_traced(self) -> None:
        """Leave out the launch traced last, as tracing stops.

        The CPU runs ahead of the GPU: when tracing stops, at the next launch or at exit, the
        launch traced last may not have run yet. Its kernels' records then come back stretched
        to the time of a later flush, every node of that replay 2 to 94 ms long on the H200 (the
        last traced replay of 7 of the 10 recorded graphs in samples/ before this fix, each
        node's max against a 0.2 ms replay). One replay per window is the price."""
        if self._last_traced is not None:
            life, correlation = self._last_traced
            life.timed.skip.add(correlation)
            self._last_traced = None

    def collect(self) -> None:
        """Take the records of windows that have closed (the worker, while the program rests).

        A flush takes CUPTI's locks and holds the GIL while the records are read. Flushing
        every 0.2 s beside a decode loop made it 54% slower on the H200; collected at rest,
        the default sampling costs 2.5% (docs/RECORD.md)."""
        if self.records_since_ns and not self.tracing:
            self.records_since_ns = 0
            with contextlib.suppress(Exception):
                cupti().activity_flush_all(0)

    def consume(self, records: list[Record]) -> None:
        """Route kernel, copy and memset records to their graph; count the eager ones."""
        eager_ns = eager = 0
        by_exec_id = self.rec.by_exec_id
        with self.rec.records_lock:
            for record in records:
                node = record.get("graph_node_id", 0)
                start, end = record["start"], record["end"]
                if node:
                    life = by_exec_id.get(node >> 32)
                    if life is not None:
                        life.timed.add(node, start, end, record["correlation_id"])
                else:
                    eager += 1
                    eager_ns += end - start
        self.records += len(records)
        self.eager_kernels += eager
        self.eager_kernel_ns += eager_ns
        if records:
            self.rec.dirty = True

    def summary(self, lives: list[Life]) -> dict[str, Any]:
        """The index's ``sampling`` section."""
        return {
            "windows": self.schedule.windows,
            "records": self.records,
            # From the timed replays (busy time x launches traced), not the raw records: a
            # launch traced as tracing starts can carry records 100 ms long (CUPTI's setup).
            "graph_kernel_us": sum(
                life.timing["gpu_busy_us"] * life.traced
                for life in lives
                if life.timing and isinstance(life.timing.get("gpu_busy_us"), (int, float))
            ),
            "eager_kernels": self.eager_kernels,
            "eager_kernel_us": self.eager_kernel_ns / 1e3,
            "launches_of_unknown_graphs": self.unknown_launches,
        }
