"""The fallback observer: what Inductor and torch say when a function runs without CUDA graphs.

They say it to artifact loggers, silent unless enabled; a handler of ours still hears them.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import sys
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


class SkipListener(logging.Handler):
    """Keeps each distinct reason once (:func:`reason_text`), the first ``REASONS_KEPT``."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.reasons: list[str] = []
        self.changed = False  # a reason arrived since the index was last written

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            text = reason_text(record.getMessage())
            if text not in self.reasons and len(self.reasons) < REASONS_KEPT:
                self.reasons.append(text)
                self.changed = True

    def start(self) -> None:
        for name in _SKIP_LOGGERS:
            logging.getLogger(name).addHandler(self)

    def stop(self) -> None:
        for name in _SKIP_LOGGERS:
            logging.getLogger(name).removeHandler(self)

    def fallbacks(self) -> dict[str, Any]:
        """The index's ``fallbacks`` section: Inductor's skip count, where torch keeps one,
        and the reasons heard."""
        out: dict[str, Any] = {}
        utils = sys.modules.get("torch._dynamo.utils")
        counters = getattr(utils, "counters", None)
        if counters is not None:
            with contextlib.suppress(Exception):
                out["inductor_cudagraph_skips"] = int(counters["inductor"]["cudagraph_skips"])
        if self.reasons:
            out["reasons"] = list(self.reasons)
        return out
