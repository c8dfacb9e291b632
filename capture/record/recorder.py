"""The recorder of one process: its observers on the one CUPTI subscriber, and its worker.

Observers (``graphs.GraphWatch``, ``launches.LaunchSampler``, ``skips.SkipListener``) note
what happens on the program's threads. The worker, a thread of the recorder's, builds bundles
(``bundles.Builder``), collects timing records and rewrites the index (``index``) while the
program rests, so a killed program leaves a readable recording.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

from graphscope import hlo, pace
from graphscope.errors import CaptureError
from graphscope.recording import Settings

from .. import callbacks, sites
from . import batches
from .blocks import BLOCKS_EVERY_S, BLOCKS_MAX_SHARE, BlockMap
from .bundles import Builder
from .calls import Calls, Subscription
from .coverage import Coverage
from .failures import FailureWatch
from .graphs import GraphWatch
from .index import process_info, write_index
from .inputs import InputCheck
from .integrity import IntegrityCheck, worth_keeping
from .launches import PROBE_S, PROBE_SAMPLES, LaunchSampler
from .skips import SkipListener
from .state import State

# Bundles are built, timing records collected and bundles rewritten with them while the
# program rests: no graph grabbed or launched for this long. That work parses dumps, scans
# the process's objects for modules and takes CUPTI's buffers, all holding the GIL the
# program's own thread needs. A program that never rests gets it done at exit, or once
# BUILD_LATEST_S have passed.
BUILD_QUIET_S = 1.0
BUILD_LATEST_S = 120.0
INDEX_EVERY_S = 2.0  # the index is rewritten at most this often while the program runs
TICK_S = 0.2  # the worker's pace
INTEGRITY_EVERY_S = 2.0  # how often live graphs' parameter pointers are checked
JOIN_S = 60.0  # at exit, how long the worker's build under way is waited for


class Recorder(State):
    """Records the graphs of this process into ``run_dir/<pid or rank>/``."""

    def __init__(self, run_dir: str | os.PathLike[str], settings: Settings | None = None):
        super().__init__(run_dir, settings)
        self._finished = False
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._subscribed: list[Subscription] = []
        self.calls = Calls(lambda: self.stopped)
        self.graphs = GraphWatch(self)
        self.captures_running = lambda: self.graphs.capturing
        self.failures = FailureWatch(self, self.calls, self.graphs.captures, self._failed)
        self.graphs.failures = self.failures
        self.integrity = IntegrityCheck()
        self._integrity_ns = 0
        self._blocks_ns = 0
        self._blocks_every_s = BLOCKS_EVERY_S
        self.inputs: InputCheck = InputCheck(self)
        self.launches = LaunchSampler(self, self.inputs, self.captures_running)
        self.coverage = Coverage()
        self.skips = SkipListener()
        self.builder = Builder(self)

    # -- starting and stopping ---------------------------------------------------------------

    def start(self) -> Recorder:
        """Subscribe the observers to CUPTI and start the worker; raises CaptureError if
        refused.

        torch is used where the program imported it (module attribution, the allocator's
        memory map, ``torch.cuda.graph``'s pools), never imported here: a JAX, CuPy or
        cuda-python process is recorded with what CUDA itself says."""
        self.torch = sys.modules.get("torch")
        from ..attribution import Attribution, generated_code_dirs, library_paths

        if self.settings.attribution and self.torch is not None:  # its frames serve ours too
            self.attribution = Attribution(track_ops=self.settings.ops)
            self.frames = self.attribution.frames
        else:
            self.frames = sites.Frames(library_paths(self.torch), generated_code_dirs)
        self.cuda_graph_type = getattr(getattr(self.torch, "_C", None), "_CUDAGraph", None)
        dump = hlo.dump_folder(os.environ.get("XLA_FLAGS", ""))
        self.hlo = hlo.DumpFolder(dump) if dump is not None else None
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process = process_info(self.pid, self.started_at)
        sub = callbacks.subscriber()
        try:
            for domain, cbid, handler in [
                *self.graphs.subscriptions(self.calls),
                *self.launches.subscriptions(self.calls),
            ]:
                sub.on(domain, cbid, handler, self._failed)
                self._subscribed.append((domain, cbid, handler))
            self.launches.start()
            self.failures.start()
        except CaptureError:
            self._unsubscribe()
            raise
        self.skips.start()
        self.write_index()
        self._thread = threading.Thread(target=self._run, name="graphscope-record", daemon=True)
        self._thread.start()
        return self

    def _unsubscribe(self) -> None:
        sub = callbacks.subscriber()
        for domain, cbid, handler in self._subscribed:
            with contextlib.suppress(Exception):
                sub.off(domain, cbid, handler)
        self._subscribed = []
        with contextlib.suppress(Exception):
            self.failures.stop()
        with contextlib.suppress(Exception):
            self.graphs.stop()

    def finish(self) -> None:
        """Stop recording, build what is left, write final bundles and the index. Idempotent."""
        if self._finished:
            return
        self._finished = True
        self.stopped = True
        self._wake.set()
        self.capture_ended()  # a worker giving way to a capture looks up at once
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=JOIN_S)
        try:
            self._unsubscribe()
            self.launches.stop()
            if self.attribution is not None:
                self.attribution.deactivate()
            self.builder.build_pending()
            self.check_integrity()
            self.inputs.collect(self.lives_now())
            self._bin_coverage(time.perf_counter_ns(), final=True)
            for life in list(self.lives):
                self.builder.write(life, final=True)
        finally:
            if self.status == "running":
                self.status = "finished"
            self.write_index(ended=True)
            self.skips.stop()

    def _failed(self, exc: BaseException) -> None:
        """A callback raised: say so once, stop recording; the program goes on."""
        if self.stopped:
            return
        self.stopped = True
        self.status = "stopped"
        self.stop_reason = f"{type(exc).__name__}: {exc}"
        sys.stderr.write(
            f"graphscope record: pid {self.pid}: recording stopped ({self.stop_reason}); "
            "the program goes on unrecorded\n"
        )
        self.dirty = True
        self._wake.set()

    def write_index(self, ended: bool = False) -> None:
        lives = self.lives_now()
        replays = {life.id: life.replays for life in lives}
        stale = worth_keeping(
            [s.as_dict(self.since_s, replays.get(s.graph, 0)) for s in self.integrity.found]
        )
        write_index(
            self,
            self.launches.summary(lives),
            self.skips.fallbacks(final=ended),
            self.failures.as_list(),
            stale,
            self.coverage.as_dict(),
            self.inputs.as_list(lives),
            self.inputs.coverage() if self.torch is not None else None,
            ended=ended,
        )

    def _bin_coverage(self, now: int, final: bool = False) -> bool:
        """Close a coverage bin when one is due (coverage.py); whether one closed."""
        launches = self.launches
        return self.coverage.tick(
            self.since_s(now),
            self.lives_now(),
            launches.unknown_launches,
            final,
            (launches.probe_ns, launches.probe_kernels, launches.probe_kernel_ns),
            launches.probe_batches,
        )

    def check_integrity(self) -> None:
        """Whether the live graphs still point at their parameters (integrity.py)."""
        now = time.perf_counter_ns()
        self._integrity_ns = now
        if self.integrity.run(self.lives_now(), now):
            self.changed()

    def check_blocks(self) -> None:
        """Whether the allocator blocks the live graphs point into are still the allocations
        they were (blocks.py): one read of torch's memory map, at most 1% of the time."""
        torch = self.torch
        started = time.perf_counter_ns()
        self._blocks_ns = started
        if torch is None or not torch.cuda.is_initialized():
            return
        try:
            blocks = BlockMap(torch.cuda.memory_snapshot())
        except Exception:  # the map could not be read: the check waits for the next turn
            return
        spent_s = (time.perf_counter_ns() - started) / 1e9
        self._blocks_every_s = max(BLOCKS_EVERY_S, spent_s / BLOCKS_MAX_SHARE)
        if self.integrity.run_blocks(self.lives_now(), blocks, started):
            self.changed()

    def changed(self) -> None:
        super().changed()
        self._wake.set()

    # -- the worker -----------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            # cuda-python's driver module, which reads the graphs' clones, is imported at the
            # first build, while the program rests: its import holds the GIL for a few hundred
            # ms, which here, at CUDA's initialisation, could fall inside the program's first
            # capture. What the program waits on at instantiation goes through ctypes
            # (_cuda.libcuda).
            with pace.giving_way(self.give_way):  # the long loops wait while the program captures
                while not self.stopped:
                    self._wake.wait(TICK_S)
                    self._wake.clear()
                    if self.stopped:
                        break
                    self._tick()
        except BaseException as exc:
            self._failed(exc)
        if self.status == "stopped":
            self._unsubscribe()
            self.launches.stop()
            if self.attribution is not None:  # the C labeller holds its lists until stopped
                self.attribution.deactivate()
            self.write_index()

    def _tick(self) -> None:
        # Nothing of the worker's runs beside a capture: each of its Python steps (an index
        # write, a stack sample) holds the GIL the capturing thread needs (State.give_way).
        self.give_way()
        now = time.perf_counter_ns()
        launches = self.launches
        # A closed bin does not rewrite the index by itself (a write holds the GIL for a
        # while the program waits): it goes out with the next write, and at the end.
        self._bin_coverage(now)
        capturing = self.captures_running()
        if launches.probe(now, bool(capturing)):
            # The program runs on; a launch or finish() cuts the probe short. Its stacks are
            # sampled meanwhile for the batch of each eager step (batches.py).
            module_type = batches.module_type_of(self.torch)
            ends = now + PROBE_S * 1e9
            while (
                launches.probing
                and not self.stopped
                and not self.captures_running()
                and time.perf_counter_ns() < ends
            ):
                time.sleep(PROBE_S / PROBE_SAMPLES)
                if module_type is not None and launches.probing:
                    batches.sample(launches.probe_batches, module_type)
            launches.end_probe()
        if self.skips.changed:
            self.skips.changed = False
            self.dirty = True
        # Not only while the program rests: a weight reload comes between replays, and the
        # walk takes milliseconds (3,203 tensors: 2.4 ms in C on a 2-core development VM).
        if not capturing and now - self._integrity_ns >= INTEGRITY_EVERY_S * 1e9:
            self.check_integrity()
        if (
            not capturing
            and now - self._blocks_ns >= self._blocks_every_s * 1e9
            and any(life.blocks for life in self.lives)
        ):
            self.check_blocks()
        if any(life.inputs is not None for life in self.lives) and self.inputs.collect(
            self.lives_now()
        ):
            self.dirty = True  # a finding came or went: the index says so at its next write
        busy = max(self.last_grab_ns, launches.last_launch_ns)
        idle = now - busy >= BUILD_QUIET_S * 1e9 and not capturing
        waited = [life for life in self.lives if life.unread]
        overdue = bool(waited) and now - waited[0].instantiated_ns >= BUILD_LATEST_S * 1e9
        if launches.records_since_ns and not launches.tracing:
            overdue = overdue or now - launches.records_since_ns >= BUILD_LATEST_S * 1e9
        if not (idle or overdue) or capturing:
            if self.dirty and now - self.index_written_ns >= INDEX_EVERY_S * 1e9:
                self.write_index()
            return
        self.builder.build_pending()
        launches.collect()
        for life in list(self.lives):
            with self.records_lock:  # CUPTI's thread may be adding records
                timed = life.timed.count
            first_timed = timed >= min(self.settings.first, life.traced) > 0
            if life.bundle is not None and life.written_with < self.settings.first and first_timed:
                self.builder.write(life)
        if self.dirty and now - self.index_written_ns >= INDEX_EVERY_S * 1e9:
            self.write_index()
