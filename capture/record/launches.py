"""The timing observer: every graph launch counted, some traced, their kernel records joined.

Launch handlers run on the program's threads and only count, time the call and switch CUPTI's
kernel tracing on or off at the edges of a sampled window (``sampling.Schedule``). Records
come back on CUPTI's thread (or the worker's, at a flush) through :meth:`LaunchSampler.consume`.

Windows open only at graph launches, so they cannot see what a program does once it stops
launching its graphs. For that the worker opens a short probe (``PROBE_S`` of kernel tracing,
once a second) while no graph has been launched for ``PROBE_AFTER_S``: the kernels it sees
tell a program that went on eagerly from one whose GPU sat idle (compiling, loading,
finished its steps). Its kernels are counted per coverage bin, apart from the windows'.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import callbacks
from .._cuda import cupti
from ..sampling import Schedule
from ..trace import GPU_KINDS, enable_kinds, start_activities, stop_activities
from .calls import Calls, Subscription

if TYPE_CHECKING:
    from ..activities import Record
    from .inputs import InputCheck
    from .lives import Life
    from .state import State


#: No graph launched for this long: probe for eager kernels (and close a window left open).
PROBE_AFTER_S = 1.0
#: How long a probe traces, and how often one opens while no graph is launched. Tracing costs
#: an eager program 0.19 to 0.34 us per kernel (DESIGN.md): 5% of a second of that, at most.
PROBE_S = 0.05
PROBE_EVERY_S = 1.0
PROBE_SAMPLES = 5  # looks at the program's stacks in each, for the batch (batches.py)
_EPOCHS_KEPT = 256  # tracing starts remembered to tell a probe's records from a window's
_PER_THREAD_STREAM = 0x2  # CU_STREAM_PER_THREAD: what stream 0 means to a *_ptsz call


class LaunchSampler:
    """Counts launches per graph and traces the ones the schedule picks."""

    def __init__(
        self,
        recorder: State,
        inputs: InputCheck | None = None,
        capturing: Callable[[], int] = lambda: 0,
    ) -> None:
        self.rec = recorder
        self.inputs = inputs  # samples armed graphs' input blocks at untraced launches
        self._capturing = capturing  # stream captures running in the process
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
        # Probes (the worker's) and windows (the launch handlers') switch tracing under this
        # lock; a launch takes it only to switch, or while a probe is open.
        self._lock = threading.Lock()
        self.probing = False
        self._probe_began_ns = 0
        self._probed_ns = 0  # when the last probe opened
        # Where tracing went on, in CUPTI's clock, twice over plus 1 where a probe turned it
        # on: an eager record belongs to the latest start before it (tracing is off between
        # them). One list, replaced whole when trimmed, for CUPTI's thread to read unlocked.
        self._epochs: list[int] = []
        self.probe_ns = 0  # time traced by probes, all told
        self.probe_kernels = 0  # kernels they saw, outside any graph
        self.probe_kernel_ns = 0
        self.probe_batches: Counter[int] = Counter()  # eager steps' batches seen (batches.py)

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
        # last_launch_ns is set before probing is read, and the worker sets probing before
        # it reads last_launch_ns: one of the two sees the other, so no probe stays open
        # over a launch that did not close it.
        if wanted != self.tracing or self.probing:
            with self._lock:
                self._switch(life, wanted, correlation, began)
        if wanted:
            if life.traced == 0:
                life.timed.skip.add(correlation)
            life.traced += 1
            self._last_traced = (life, correlation)
        elif (
            life.inputs is not None
            and self.inputs is not None
            and self.inputs.due(life.inputs, began)
            and not self._capturing()
        ):
            _, stream = callbacks.param_words(cbdata, 2)
            if not stream and "_ptsz" in callbacks.function_name(cbdata):
                stream = _PER_THREAD_STREAM
            self.inputs.sample(life.inputs, stream, life.replays, began)
        local.launch = (life, wanted, time.perf_counter_ns())

    def _switch(self, life: Life, wanted: bool, correlation: int, began: int) -> None:
        """Tracing on for a launch the schedule wants, off for one it does not; a probe open
        is closed either way (under the lock)."""
        on = self.tracing or self.probing  # CUPTI's kinds are enabled now
        if self.probing:
            self._close_probe(began)
        if wanted:
            # Turned on before the launch is submitted.
            if not self.tracing:
                if not on:
                    enable_kinds(GPU_KINDS, enable=True)
                self._epoch(probe=False)
                # The first launch traced after tracing starts carries CUPTI's setup of the
                # executable graph (its kernels read as 100 ms long on the H200): not timed.
                life.timed.skip.add(correlation)
                self.tracing = True
            return
        # Off at the first launch not traced, so that the last traced one's records are all
        # in flight by then.
        if on:
            enable_kinds(GPU_KINDS, enable=False)
            if not self.records_since_ns:  # collected when the program next rests
                self.records_since_ns = began
        if self.tracing:
            self.untime_last_traced()
            self.tracing = False

    def _epoch(self, probe: bool) -> None:
        self._epochs.append(2 * int(cupti().get_timestamp()) + probe)
        if len(self._epochs) > 2 * _EPOCHS_KEPT:
            self._epochs = self._epochs[-_EPOCHS_KEPT:]

    def _close_probe(self, now_ns: int) -> None:
        self.probing = False
        self.probe_ns += max(0, now_ns - self._probe_began_ns)

    def probe(self, now_ns: int, capturing: bool) -> bool:
        """The worker's turn, while no graph is launched: close a window the last launches
        left open, and open a probe when one is due; whether one opened (close it with
        :meth:`end_probe` after ``PROBE_S``)."""
        if (
            not self.last_launch_ns
            or capturing
            or self.rec.stopped
            or now_ns - self.last_launch_ns < PROBE_AFTER_S * 1e9
        ):
            return False
        with self._lock:
            if self.tracing:
                # The program stopped launching inside a window: tracing would stay on, and
                # every eager kernel pay for it, until its next launch.
                enable_kinds(GPU_KINDS, enable=False)
                self.untime_last_traced()
                self.tracing = False
                if not self.records_since_ns:
                    self.records_since_ns = now_ns
            settings = self.schedule.settings
            if settings.every_s <= 0 or now_ns - self._probed_ns < PROBE_EVERY_S * 1e9:
                return False
            self.probing = True
            if time.perf_counter_ns() - self.last_launch_ns < PROBE_AFTER_S * 1e9:
                self.probing = False  # a launch came in between: the handler did not see us
                return False
            self._probed_ns = self._probe_began_ns = now_ns
            self._epoch(probe=True)
            enable_kinds(GPU_KINDS, enable=True)
            return True

    def end_probe(self) -> None:
        """Close the probe, unless a launch closed it first."""
        with self._lock:
            if not self.probing:
                return
            now = time.perf_counter_ns()
            enable_kinds(GPU_KINDS, enable=False)
            self._close_probe(now)
            if not self.records_since_ns:
                self.records_since_ns = now

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
        eager_ns = eager = probed_ns = probed = 0
        by_exec_id = self.rec.by_exec_id
        epochs = self._epochs
        with self.rec.records_lock:
            for record in records:
                node = record.get("graph_node_id", 0)
                start, end = record["start"], record["end"]
                if node:
                    life = by_exec_id.get(node >> 32)
                    if life is not None:
                        life.timed.add(node, start, end, record["correlation_id"])
                    continue
                i = bisect.bisect_right(epochs, 2 * start + 1) - 1
                if i >= 0 and epochs[i] & 1:
                    probed += 1
                    probed_ns += end - start
                else:
                    eager += 1
                    eager_ns += end - start
        self.records += len(records)
        self.eager_kernels += eager
        self.eager_kernel_ns += eager_ns
        self.probe_kernels += probed
        self.probe_kernel_ns += probed_ns
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
            "probe_s": self.probe_ns / 1e9,
            "probe_kernels": self.probe_kernels,
            "probe_kernel_us": self.probe_kernel_ns / 1e3,
            "probe_batches": {str(b): n for b, n in sorted(self.probe_batches.items())},
            "launches_of_unknown_graphs": self.unknown_launches,
        }
