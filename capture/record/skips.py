"""The fallback observer: what Inductor and torch say when a function runs without CUDA graphs.

They say it to artifact loggers, silent unless enabled; a handler of ours still hears them.
"""

from __future__ import annotations

import contextlib
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
    frames = list(_FRAME.finditer(message))
    if not frames:
        return head[:REASON_CHARS]
    last = frames[-1]
    after = message[last.end() :].splitlines()[1:]
    code = next((line.strip() for line in after if line.strip()), "")
    where = f"{Path(last.group(1)).name}:{last.group(2)} in {last.group(3)}"
    return (f"{head}: {where}" + (f": {code}" if code else ""))[:REASON_CHARS]


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
