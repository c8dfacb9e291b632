"""Probe: where a recorded capture's time goes, capture by capture.

``bench_record.py deep`` gives one ratio per process; this looks inside. It captures a deep
decoder (``torch_buckets.py``'s layers) several times in one process, with some eager steps
before each, as an engine that captures batch sizes in turn does, and prints one JSON line:

- each capture's seconds (``torch.cuda.graph``, instantiation included);
- the garbage collector's time inside each capture, and its full collections;
- recorded (``rec``: in-process ``record``; ``cli``: run under ``graphscope record``): the
  program's wait at instantiation split into its parts (the clone, the node count, the
  parameter walk), the recorder's other hooks, the C labeller's node ids asked of CUPTI and
  guessed in each capture, the worker's ticks and builds inside each capture, and the
  commonest stacks of every thread, sampled every 2 ms inside each capture;
- how much of each capture is the forward (its launches captured), the rest being the
  capture's end (instantiation and the recorder's hooks there);
- every thread's CPU time inside each capture, Python's or not (CUPTI's, the driver's), its
  wait on a run queue for a core (``schedstat``, 0 where the kernel keeps none), its minor
  page faults and its context switches, read from ``/proc/self/task``: a capture whose
  program thread ran for less CPU time than its wall time waited (for the GIL, a lock, the
  driver or a core), and the threads that ran beside it are named.

``--no-builds`` stops the recorder's worker building bundles (the probe leaves without
them anyway), to tell whether the builds between captures slow the next capture;
``--no-sampler`` leaves the stack sampler out.

    python benchmarks/probe_capture_parts.py plain          # on the GPU machine
    python benchmarks/probe_capture_parts.py rec
    graphscope record --out /tmp/r -- python benchmarks/probe_capture_parts.py cli

The sampler takes the GIL every 2 ms; on the development VM it did not measurably slow a
loop of small CPU torch ops (``probe_gil_neighbours.py``), but on a GPU that is not shown:
compare the recorded modes with each other, or leave it out.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "record_programs"))

Span = tuple[int, int]


def overlap_ms(spans: list[Span], window: Span) -> float:
    """Milliseconds of ``spans`` inside ``window`` (perf_counter_ns pairs)."""
    start, end = window
    return round(sum(max(0, min(b, end) - max(a, start)) for a, b in spans) / 1e6, 2)


class GcWatch:
    """The collector's runs, as (start, end, generation)."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, int, int]] = []
        self._began = 0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter_ns()
        else:
            self.runs.append((self._began, time.perf_counter_ns(), info["generation"]))


class StackSampler:
    """Every 2 ms inside a capture, the innermost frame and graphscope's frames of each thread."""

    def __init__(self, captures: int) -> None:
        self.capture = -1  # the capture running, or -1
        self.counts = [collections.Counter[str]() for _ in range(captures)]
        self._running = True
        threading.Thread(target=self._run, daemon=True, name="probe-sampler").start()

    @staticmethod
    def _signature(frame: FrameType | None) -> str:
        if frame is None:
            return "?"
        inner = f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"
        ours: list[str] = []
        while frame is not None and len(ours) < 4:
            name = frame.f_code.co_filename
            if "graphscope" in name or "/capture/" in name:
                ours.append(f"{Path(name).name}:{frame.f_code.co_name}")
            frame = frame.f_back
        return f"{inner} <- {' < '.join(ours)}"

    def _run(self) -> None:
        me = threading.get_ident()
        while self._running:
            time.sleep(0.002)
            capture = self.capture
            if capture < 0:
                continue
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    thread = names.get(ident, "?")
                    self.counts[capture][f"{thread} | {self._signature(frame)}"] += 1

    def stop(self) -> dict[str, list[list[str]]]:
        self._running = False

        def top(counter: collections.Counter[str], main: bool) -> list[str]:
            rows = [(k, n) for k, n in counter.most_common() if ("MainThread" in k) == main]
            return [f"{n} {k}" for k, n in rows[:6]]

        return {
            "main_thread": [top(c, True) for c in self.counts],
            "other_threads": [top(c, False) for c in self.counts],
        }


def _task_clock(tid: int) -> int:
    """Linux's CPU-time clock of one thread of this process (MAKE_THREAD_CPUCLOCK)."""
    return ((~tid) << 3) | 6


def _switches(tid: int) -> tuple[int, int]:
    voluntary = involuntary = 0
    try:
        for line in Path(f"/proc/self/task/{tid}/status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                voluntary = int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                involuntary = int(line.split()[1])
    except OSError:
        pass
    return voluntary, involuntary


def _minor_faults(tid: int) -> int:
    """The thread's minor page faults so far (``stat``'s tenth field)."""
    try:
        text = Path(f"/proc/self/task/{tid}/stat").read_text()
        return int(text.rsplit(")", 1)[1].split()[7])
    except (OSError, IndexError, ValueError):
        return 0


def _run_delay(tid: int) -> int:
    """Nanoseconds the thread has waited on a run queue for a core (schedstat), or 0."""
    try:
        return int(Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


class TaskCounts(NamedTuple):
    """One thread's counters at one moment."""

    comm: str
    cpu_ns: int
    queued_ns: int
    faults: int
    voluntary: int
    involuntary: int

    @classmethod
    def read(cls, tid: int) -> TaskCounts | None:
        try:
            comm = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
            cpu = time.clock_gettime_ns(_task_clock(tid))
        except OSError:
            return None  # the thread ended
        return cls(comm, cpu, _run_delay(tid), _minor_faults(tid), *_switches(tid))


class ThreadTimes:
    """Every thread's CPU time, run-queue wait, page faults and context switches in a window."""

    def __init__(self) -> None:
        self.windows: list[list[str]] = []
        self._before: dict[int, TaskCounts] = {}

    @staticmethod
    def _read() -> dict[int, TaskCounts]:
        counts = {int(name): TaskCounts.read(int(name)) for name in os.listdir("/proc/self/task")}
        return {tid: c for tid, c in counts.items() if c is not None}

    def begin(self) -> None:
        self._before = self._read()

    def end(self, wall_ns: int) -> None:
        rows = []
        for tid, now in self._read().items():
            was = self._before.get(tid, TaskCounts(now.comm, 0, 0, 0, 0, 0))
            ms = (now.cpu_ns - was.cpu_ns) / 1e6
            involuntary = now.involuntary - was.involuntary
            main = tid == os.getpid()
            if main or ms >= 0.5 or involuntary:
                who = "MAIN" if main else f"{now.comm}/{tid}"
                rows.append(
                    (
                        ms,
                        f"{who} cpu {ms:.1f} ms, queued {(now.queued_ns - was.queued_ns) / 1e6:.1f}"
                        f" ms, faults {now.faults - was.faults}, switches"
                        f" {now.voluntary - was.voluntary}+{involuntary}",
                    )
                )
        rows.sort(reverse=True)
        self.windows.append([f"wall {wall_ns / 1e6:.1f} ms"] + [text for _, text in rows[:8]])


class RecorderParts:
    """The recorder's parts on the program's thread, timed; its worker's ticks and builds."""

    def __init__(self) -> None:
        from graphscope.capture import grab
        from graphscope.capture.attribution import Attribution
        from graphscope.capture.record import bundles, graphs, recorder

        self.parts: dict[str, list[float]] = {}
        self.ticks: list[Span] = []
        self.builds: list[Span] = []
        grab.clone = self._timed("clone", grab.clone)
        grab.node_count = self._timed("node_count", grab.node_count)
        graphs.parameter_spans = self._timed("parameter_spans", graphs.parameter_spans)
        for name in ("take", "activate", "deactivate"):
            setattr(Attribution, name, self._timed(name, getattr(Attribution, name)))
        for name in ("_capture_begins", "_capture_ends"):
            setattr(graphs.GraphWatch, name, self._timed(name, getattr(graphs.GraphWatch, name)))
        recorder.Recorder._tick = self._spanned(self.ticks, recorder.Recorder._tick)
        bundles.Builder.build_pending = self._spanned(
            self.builds, bundles.Builder.build_pending, at_least_ns=1_000_000
        )

    def _timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = (time.perf_counter_ns() - started) / 1e6
                self.parts.setdefault(name, []).append(round(spent, 2))

        return wrapper

    @staticmethod
    def _spanned(
        spans: list[Span], fn: Callable[..., Any], at_least_ns: int = 0
    ) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                ended = time.perf_counter_ns()
                if ended - started >= at_least_ns:
                    spans.append((started, ended))

        return wrapper


def id_counts() -> tuple[int, int, int]:
    """The C labeller's node ids asked of CUPTI, guessed, and guessed wrong, so far."""
    try:
        from graphscope.capture import _labeller
    except ImportError:
        return (0, 0, 0)
    return tuple(_labeller.id_counts())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["plain", "rec", "cli"])
    parser.add_argument("--layers", type=int, default=400)
    parser.add_argument("--captures", type=int, default=4)
    parser.add_argument("--eager", type=int, default=12, help="eager steps before each capture")
    parser.add_argument("--no-builds", action="store_true", help="the worker builds nothing")
    parser.add_argument("--no-sampler", action="store_true", help="no stack sampler")
    args = parser.parse_args()
    watch = GcWatch()
    import torch
    from torch_buckets import deep_decoder, warm_up

    recorded = args.mode != "plain"
    parts = RecorderParts() if recorded else None
    sampler = StackSampler(args.captures) if recorded and not args.no_sampler else None
    if recorded and args.no_builds:
        from graphscope.capture.record import bundles

        bundles.Builder.build_pending = lambda self: None  # type: ignore[method-assign]
    times = ThreadTimes()
    recording = None
    if args.mode == "rec":
        from graphscope.capture.record import process

        # Held, and left open: collected, the context would stop recording at once; the
        # process exits without building the rest.
        recording = process.record(tempfile.mkdtemp())
        recording.__enter__()
    # cli: `graphscope record` attaches as the program makes its CUDA context, below

    model, tokens, pos = deep_decoder(args.layers)
    seconds: list[float] = []
    forward_ms: list[float] = []  # the forward's launches into the capture; the rest is its end
    windows: list[Span] = []
    ids: list[list[int]] = []
    kept = []
    with torch.no_grad():
        warm_up(lambda: model(tokens, pos), 3)
        for i in range(args.captures):
            warm_up(lambda: model(tokens, pos), args.eager)  # an engine's eager steps
            graph = torch.cuda.CUDAGraph()
            torch.cuda.synchronize()
            if sampler is not None:
                sampler.capture = i
            before = id_counts()
            times.begin()
            started = time.perf_counter_ns()
            with torch.cuda.graph(graph):
                model(tokens, pos)
                launched = time.perf_counter_ns()
            ended = time.perf_counter_ns()
            times.end(ended - started)
            after = id_counts()
            if sampler is not None:
                sampler.capture = -1
            seconds.append(round((ended - started) / 1e9, 4))
            forward_ms.append(round((launched - started) / 1e6, 1))
            windows.append((started, ended))
            ids.append([b - a for a, b in zip(before, after, strict=True)])
            kept.append(graph)
    gc_spans = [(a, b) for a, b, _ in watch.runs]
    result: dict[str, Any] = {
        "mode": args.mode,
        "captures_s": seconds,
        "forward_ms": forward_ms,
        "gc_in_capture_ms": [overlap_ms(gc_spans, w) for w in windows],
        "full_collections_in_capture": [
            sum(1 for a, b, g in watch.runs if g == 2 and a < w[1] and b > w[0]) for w in windows
        ],
    }
    result["threads"] = times.windows
    if parts is not None:
        from graphscope.capture.record import process

        rec = process.current()
        result["grab_ms"] = [round(life.grab_ns / 1e6, 2) for life in rec.lives] if rec else None
        result["parts_ms"] = parts.parts
        result["ids_asked_guessed_missed"] = ids
        result["ticks_in_capture_ms"] = [overlap_ms(parts.ticks, w) for w in windows]
        result["builds_in_capture_ms"] = [overlap_ms(parts.builds, w) for w in windows]
        result["builds_ms"] = [round((b - a) / 1e6, 1) for a, b in parts.builds]
        if sampler is not None:
            result.update(sampler.stop())
    print(json.dumps(result), flush=True)
    os._exit(0)  # the recording is not the point: leave without building the rest


if __name__ == "__main__":
    main()
