"""The fallback observer: what Inductor and torch say when a function runs without CUDA graphs.

They say it to artifact loggers, silent unless enabled; a handler of ours still hears them.

What a skip costs: where torch logs a skip, it holds the function it decided for, and the
handler wraps it in a :class:`SkippedCalls`, which counts the calls that run eagerly and times
some of them on the GPU with a pair of CUDA events around the call, read back later by the
recorder's thread without a sync. Two places decide:

* ``cudagraph_post_compile``, at compile time (a CPU op, a dynamic shape, ...): the compiled
  graph's ``current_callable``, which every later call runs;
* CUDA graph trees' ``_update_non_cudagraph_managed_mutation``, at the first call (an input
  mutated that is no parameter and no tensor of the graphs' pool): the function's
  ``WrappedFunction.model``, counted only where the manager's ``_run`` calls it, which is its
  eager fallback (warm-up and recording call it from elsewhere).

A skip logged anywhere else holds no function: its calls are not counted, and the recording
says so rather than guess.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_SKIP_LOGGERS = (
    "torch._inductor.cudagraph_utils.__cudagraphs",
    "torch._inductor.cudagraph_utils.__perf_hints",
    "torch._inductor.cudagraph_trees.__cudagraphs",
    "torch._inductor.cudagraph_trees.__perf_hints",
)
REASONS_KEPT = 50
REASON_CHARS = 300
#: The calls of a skipped function timed on the GPU: every one of the first TIMED_FIRST after
#: its first (which may compile or autotune), then one each TIMED_EVERY_S. Two event records
#: cost a call about 10 us of CPU.
TIMED_FIRST = 32
TIMED_EVERY_S = 1.0
_PENDING_KEPT = 256  # event pairs not yet read back; past that a call goes untimed
# The frames that log a compile-time skip while holding the graph they decided for.
_DECIDERS = ("cudagraph_post_compile", "cudagraph_partition_post_compile")
# CUDA graph trees' frame that logs a mutation skip at run time, and the one that then runs the
# function eagerly each call.
_TREES_DECIDER = "_update_non_cudagraph_managed_mutation"
_TREES_FALLBACK = "_run"
_OURS = "_graphscope_skipped"  # marks a callable wrapped here: a graph is wrapped once


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def reason_text(message: str) -> str:
    """A skip message's first line and, where torch adds the stack of what caused it ("Found
    from": the op that mutated an input, the node on the CPU), its innermost frame and line
    of code: ``skipping cudagraphs due to mutated inputs (1 instances): model.py:31 in
    forward: cache.add_(x)``. Torch names no input there; nor does this."""
    lines = message.strip().splitlines()
    head = re.sub(r"\.?\s*Found from\s*:?\s*$", "", lines[0].strip()) if lines else ""
    where = innermost(message)
    return (f"{head}: {where}" if where else head)[:REASON_CHARS]


def innermost(stack: str) -> str | None:
    """``model.py:31 in forward: self.cache.add_(x)``: the innermost frame of a stack as
    Python prints it (``File "...", line N, in f`` and the line of code under it)."""
    frames = list(_FRAME.finditer(stack))
    if not frames:
        return None
    last = frames[-1]
    after = stack[last.end() :].splitlines()[1:]
    code = next((line.strip() for line in after if line.strip()), "")
    where = f"{Path(last.group(1)).name}:{last.group(2)} in {last.group(3)}"
    return f"{where}: {code}" if code else where


_MOVED = re.compile(
    r"input name: (\S+?)\. data pointer changed from (\d+) to (\d+)\."
    r"(?: input stack trace: (.*?))?(?=input name:|$)",
    re.S,
)


def rerecord_text(message: str) -> str:
    """What torch's CUDA graph trees computed for a re-record (``log_data_ptr_mismatch``), on
    one line: ``static input data pointer changed: primals_2 moved 0x7f00 -> 0x7f80
    (model.py:12 in forward: y = self.w @ x)``, each input it names, in its order.

    Inputs made by the same line (a KV cache's 24 layers, written at one ``index_copy_``) are
    one entry, its first input standing for the rest: ``12 inputs moved, as arg10_1 0x.. ->
    0x.. (cache_utils.py:482 in update: ...)``. Entries that do not fit ``REASON_CHARS * 2``
    are counted at the end, never cut mid-address."""
    head = message.strip().split("\n", 1)[0].strip().rstrip(".")
    groups: dict[str, list[tuple[str, int, int]]] = {}
    for match in _MOVED.finditer(message):
        name, before, after, trace = match.groups()
        # an input without a stack is its own entry: torch could not say where it came from
        key = innermost(trace or "") or f"\0{name}"
        groups.setdefault(key, []).append((name, int(before), int(after)))
    if not groups:
        return " ".join(message.split())[:REASON_CHARS]
    entries = []
    for where, moved in groups.items():
        name, before, after = moved[0]
        first = f"{name} moved {before:#x} -> {after:#x}"
        if len(moved) > 1:
            first = f"{len(moved)} inputs moved, as {first}"
        entries.append(first + ("" if where.startswith("\0") else f" ({where})"))
    counts = [len(moved) for moved in groups.values()]
    text = f"{head}: {entries[0]}"[: REASON_CHARS * 2]
    for i, entry in enumerate(entries[1:], 1):
        left = sum(counts[i:])
        tail = f"; and {left} more input{'s' if left > 1 else ''}"
        last = i == len(entries) - 1
        if len(text) + 2 + len(entry) + (0 if last else len(tail)) > REASON_CHARS * 2:
            return text + tail
        text += f"; {entry}"
    return text


def torch_rerecord_reason(frame: Any, inputs: list[Any] | None = None) -> str | None:
    """Why torch's CUDA graph trees record a function again, in torch's words, read from the
    frame that decided it (``CUDAGraphTreeManager._run``, below the capture beginning): an
    input at a new address (a parameter, a static input, a tensor of the graphs' pool), or a
    tensor expected dead still alive. ``_run`` keeps the reason of the last recorded graph it
    could not reuse: torch computes the text only while its cudagraphs logger is at DEBUG,
    else it keeps the function that would, called here once per re-record (torch 2.11 re-records
    on a moved parameter without counting it as unexpected, but keeps its reason the same
    way). None where torch kept none: a first recording, or another torch.

    By the time the capture begins, torch has emptied the list of inputs that function was
    given (the recording took them over): ``inputs`` is the recording's list, which holds the
    same static and pool-managed tensors, and stands in for it."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_run" and "unexpected_rerecord_reason" in code.co_varnames:
            reason = frame.f_locals.get("unexpected_rerecord_reason")
            if isinstance(reason, functools.partial) and inputs:
                args = list(reason.args)
                if len(args) > 1 and isinstance(args[1], list) and not args[1]:
                    args[1] = inputs
                    reason = functools.partial(reason.func, *args, **reason.keywords)
            try:
                text = reason() if callable(reason) else reason
            except Exception:  # torch's own helper failed: no reason, never a guess
                return None
            return rerecord_text(text) if isinstance(text, str) and text.strip() else None
        frame = frame.f_back
    return None


class SkippedCalls:
    """A compiled function's calls after torch decided to run it without CUDA graphs: how many,
    and the GPU time of some, each from an event recorded on the current stream before the
    call to one after it (the span on the GPU, idle gaps between its kernels included)."""

    def __init__(
        self, reason: str, event: Callable[[], Any], capturing: Callable[[], bool] = lambda: False
    ) -> None:
        self.reason = reason
        self._capturing = capturing  # a stream capture under way: no event is recorded
        self._event = event  # makes a timing CUDA event
        self.calls = 0
        self.gpu_us: list[float] = []
        self._pending: collections.deque[tuple[Any, Any]] = collections.deque()
        self._timed_ns = 0  # when a call was last picked to time

    def wrap(self, fn: Callable[[Any], Any], caller: str | None = None) -> Callable[[Any], Any]:
        """``fn`` counted and sometimes timed; its attributes (``_boxed_call``) kept. With
        ``caller``, only the calls made from a function of that name count."""

        @functools.wraps(fn)
        def call(inputs: Any) -> Any:
            if caller is not None and sys._getframe(1).f_code.co_name != caller:
                return fn(inputs)
            pair = self._begin()
            out = fn(inputs)
            if pair is not None:
                with contextlib.suppress(Exception):
                    pair[1].record()
                    self._pending.append(pair)
            return out

        return call

    def _begin(self) -> tuple[Any, Any] | None:
        """Count the call; record a start event where it is one to time."""
        self.calls += 1
        if self.calls == 1 or len(self._pending) >= _PENDING_KEPT:
            return None
        now = time.perf_counter_ns()
        if self.calls > TIMED_FIRST + 1 and now - self._timed_ns < TIMED_EVERY_S * 1e9:
            return None
        try:
            if self._capturing():  # an event recorded now would go into the capture
                return None
            start, end = self._event(), self._event()
            start.record()
        except Exception:
            return None
        self._timed_ns = now
        return start, end

    def settle(self, final: bool = False) -> None:
        """Read back the event pairs whose work is done, in order; at the end the rest are
        dropped, untimed. On the recorder's thread: ``query`` never waits."""
        while self._pending:
            start, end = self._pending[0]
            try:
                done = bool(end.query())
                if done:
                    self.gpu_us.append(float(start.elapsed_time(end)) * 1e3)
            except Exception:
                done = True  # an event that cannot be read is dropped, not retried
            if not done and not final:
                return
            self._pending.popleft()

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "calls": self.calls}
        out["timed"] = len(self.gpu_us)
        if self.gpu_us:
            median = statistics.median(self.gpu_us)
            out["gpu_us_median"] = round(median, 2)
            # the calls not timed are taken at the timed ones' median
            out["gpu_ms_est"] = round(median * self.calls / 1e3, 3)
        return out


class Decided:
    """Where the function torch decided to run eagerly is kept: read it, put a wrapper there."""

    def __init__(self, holder: Any, field: str, caller: str | None) -> None:
        self.holder, self.field, self.caller = holder, field, caller

    @property
    def fn(self) -> Any:
        return getattr(self.holder, self.field)

    def put(self, fn: Any) -> None:
        # WrappedFunction is a frozen dataclass: its field is set as its own __init__ does
        object.__setattr__(self.holder, self.field, fn)


def decided(frame: Any) -> Decided | None:
    """The function torch is deciding to run without CUDA graphs, where ``frame`` (the
    logging call's) lies under one of the frames that decide; None elsewhere."""
    while frame is not None:
        name = frame.f_code.co_name
        if name in _DECIDERS:
            graph = frame.f_locals.get("compiled_graph")
            ok = callable(getattr(graph, "current_callable", None))
            return Decided(graph, "current_callable", None) if ok else None
        if name == _TREES_DECIDER:
            manager, function_id = frame.f_locals.get("self"), frame.f_locals.get("function_id")
            wrapped = getattr(manager, "ids_to_funcs", {}).get(function_id)
            ok = callable(getattr(wrapped, "model", None))
            return Decided(wrapped, "model", _TREES_FALLBACK) if ok else None
        frame = frame.f_back
    return None


class SkipListener(logging.Handler):
    """Keeps each distinct reason once (:func:`reason_text`), the first ``REASONS_KEPT``, and
    wraps each compiled graph it hears skipped in a :class:`SkippedCalls` (one per reason)."""

    def __init__(
        self, event: Callable[[], Any] | None = None, capturing: Callable[[], bool] | None = None
    ) -> None:
        super().__init__(logging.WARNING)
        self.reasons: list[str] = []
        self.changed = False  # a reason arrived since the index was last written
        self._event = event
        self._capturing = capturing or _capturing
        self.skipped: dict[str, SkippedCalls] = {}

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            text = reason_text(record.getMessage())
            if text not in self.reasons and len(self.reasons) < REASONS_KEPT:
                self.reasons.append(text)
                self.changed = True
            self._wrap(text, sys._getframe(1))

    def _wrap(self, reason: str, frame: Any) -> None:
        where = decided(frame)
        if where is None or getattr(where.fn, _OURS, False):
            return
        event = self._event or _cuda_event()
        if event is None:
            return
        calls = self.skipped.get(reason)
        if calls is None:
            if len(self.skipped) >= REASONS_KEPT:
                return
            calls = self.skipped[reason] = SkippedCalls(reason, event, self._capturing)
        wrapped = calls.wrap(where.fn, where.caller)
        setattr(wrapped, _OURS, True)
        where.put(wrapped)

    def start(self) -> None:
        for name in _SKIP_LOGGERS:
            logging.getLogger(name).addHandler(self)

    def stop(self) -> None:
        for name in _SKIP_LOGGERS:
            logging.getLogger(name).removeHandler(self)

    def fallbacks(self, final: bool = False) -> dict[str, Any]:
        """The index's ``fallbacks`` section: Inductor's skip count, where torch keeps one,
        the reasons heard, and what the calls of each skipped function cost."""
        out: dict[str, Any] = {}
        if self.skipped:
            for calls in list(self.skipped.values()):
                with contextlib.suppress(Exception):
                    calls.settle(final)
            out["skipped"] = [c.as_dict() for c in list(self.skipped.values())]
        utils = sys.modules.get("torch._dynamo.utils")
        counters = getattr(utils, "counters", None)
        if counters is not None:
            with contextlib.suppress(Exception):
                out["inductor_cudagraph_skips"] = int(counters["inductor"]["cudagraph_skips"])
        if self.reasons:
            out["reasons"] = list(self.reasons)
        return out


def _cuda_event() -> Callable[[], Any] | None:
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return functools.partial(torch.cuda.Event, enable_timing=True)


def _capturing() -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and bool(torch.cuda.is_current_stream_capturing())
