"""CUPTI activity tracing with cupti-python: GPU kernels, copies and memsets as plain dicts.

Records are copied out of CUPTI's buffers only when they are flushed, after the traced work:
consuming records inside a timed loop once cost 52 ms per 110k records (DESIGN.md), so the
buffers are large enough to hold a whole timed run.
"""

from __future__ import annotations

from typing import Any

from graphscope.errors import CaptureError

from ._cuda import cupti

_BUFFER_BYTES = 64 << 20
# Fields copied from each record kind, when the record has them.
_FIELDS = (
    "start",
    "end",
    "name",
    "correlation_id",
    "graph_id",
    "graph_node_id",
    "stream_id",
    "bytes",
    "copy_kind",
    "value",
    "cbid",
    "thread_id",
)
_callbacks_registered = False
_active: ActivityTrace | None = None


def _buffer_requested() -> tuple[int, int]:
    return _BUFFER_BYTES, 0


def _buffer_completed(activities: list[Any]) -> None:
    if _active is None:
        return
    kinds = _active.kind_names
    out = _active.records
    for activity in activities:
        kind = kinds.get(int(activity.kind))
        if kind is None:
            continue
        record: dict[str, Any] = {"kind": kind}
        for name in _FIELDS:
            value = getattr(activity, name, None)
            if value is not None:
                record[name] = value if isinstance(value, (int, str)) else int(value)
        out.append(record)


class ActivityTrace:
    """Collect CUPTI activity records of the given kinds while the ``with`` block runs.

    ``kinds`` are names of ``cupti.ActivityKind`` members, e.g. ``CONCURRENT_KERNEL``. The
    process can hold one CUPTI subscriber: PyTorch's profiler must not run at the same time.
    """

    def __init__(self, kinds: tuple[str, ...] = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET")):
        self.kinds = kinds
        self.records: list[dict[str, Any]] = []
        api = cupti()
        self.kind_names = {int(getattr(api.ActivityKind, k)): k.lower() for k in kinds}

    def __enter__(self) -> ActivityTrace:
        global _active, _callbacks_registered
        api = cupti()
        if _active is not None:
            raise CaptureError("an activity trace is already running in this process")
        try:
            if not _callbacks_registered:
                api.activity_register_callbacks(_buffer_requested, _buffer_completed)
                _callbacks_registered = True
            for kind in self.kinds:
                api.activity_enable(getattr(api.ActivityKind, kind))
        except api.cuptiError as exc:
            raise CaptureError(
                f"CUPTI could not start tracing: {exc} (is another profiler, "
                "such as torch.profiler or Nsight, attached?)"
            ) from None
        _active = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _active
        api = cupti()
        try:
            api.activity_flush_all(1)
        finally:
            for kind in self.kinds:
                api.activity_disable(getattr(api.ActivityKind, kind))
            _active = None
