"""CUPTI activity tracing: GPU work and CUDA API calls as plain dicts (``activities``).

Records are copied out of CUPTI's buffers only when they are flushed, after the traced work:
consuming records inside a timed loop once cost 52 ms per 110k records (DESIGN.md), so the
buffers are large enough to hold a whole timed run.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any, Protocol

from graphscope.errors import CaptureError

from . import activities
from ._cuda import cupti
from .activities import Record

# CUPTI's device-side record buffers (3.2 MB by default) fill every replay or two of a
# 10,000-kernel graph; at 32 MB the traced replays ran 22.5% over untraced ones, not 34.6%.
_DEVICE_BUFFER_BYTES = 32 << 20
#: What a replay is timed with: GPU work only.
GPU_KINDS = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET")
#: What an eager step is traced with: GPU work and the CPU thread's CUDA calls.
EAGER_KINDS = ("RUNTIME", "DRIVER", *GPU_KINDS)
# CUPTI's callback names carry the API version: cudaLaunchKernel_v7000.
_VERSION_SUFFIX = re.compile(r"_v\d+$")
_callbacks_registered = False
_active: Consumer | None = None


def _set_size_attribute(attribute: Any, value: int) -> None:
    """``cuptiActivitySetAttribute`` for a size_t attribute: it takes pointers to both."""
    size = ctypes.c_size_t(ctypes.sizeof(ctypes.c_size_t))
    data = ctypes.c_size_t(value)
    cupti().activity_set_attribute(attribute, ctypes.addressof(size), ctypes.addressof(data))


def _buffer_completed(records: list[Record]) -> None:
    consumer = _active
    if consumer is not None:
        consumer.consume(records)


class Consumer(Protocol):
    """What takes CUPTI's activity records as buffers complete (one at a time per process):
    one dict per record, ``kind`` (``"concurrent_kernel"``) and ``activities.FIELDS``."""

    def consume(self, records: list[Record]) -> None: ...


def start_activities(consumer: Consumer, kinds: tuple[str, ...]) -> None:
    """Route completed buffers to ``consumer`` and enable ``kinds`` (ActivityKind names)."""
    global _active, _callbacks_registered
    api = cupti()
    if _active is not None and _active is not consumer:
        raise CaptureError("an activity trace is already running in this process")
    try:
        if not _callbacks_registered:
            _set_size_attribute(api.ActivityAttribute.ATTR_DEVICE_BUFFER_SIZE, _DEVICE_BUFFER_BYTES)
            activities.register(_buffer_completed)
            _callbacks_registered = True
        _active = consumer
        enable_kinds(kinds)
    except api.cuptiError as exc:
        _active = None
        raise CaptureError(
            f"CUPTI could not start tracing: {exc} (is another profiler, "
            "such as torch.profiler or Nsight, attached?)"
        ) from None


def enable_kinds(kinds: tuple[str, ...], enable: bool = True) -> None:
    """Turn activity kinds on or off (the consumer stays)."""
    api = cupti()
    for kind in kinds:
        (api.activity_enable if enable else api.activity_disable)(getattr(api.ActivityKind, kind))


def stop_activities(consumer: Consumer, kinds: tuple[str, ...], forced: bool = True) -> None:
    """Disable ``kinds``, deliver what is buffered to ``consumer``, and let it go."""
    global _active
    api = cupti()
    try:
        enable_kinds(kinds, enable=False)
    finally:
        try:
            api.activity_flush_all(1 if forced else 0)
        finally:
            if _active is consumer:
                _active = None


class ActivityTrace:
    """Collect CUPTI activity records of the given kinds while the ``with`` block runs.

    ``kinds`` are names of ``cupti.ActivityKind`` members, e.g. ``CONCURRENT_KERNEL``. The
    process can hold one CUPTI subscriber: PyTorch's profiler must not run at the same time.
    Records of the API kinds (``runtime``, ``driver``) get the call's ``api`` name.
    """

    def __init__(self, kinds: tuple[str, ...] = GPU_KINDS):
        self.kinds = kinds
        self.records: list[dict[str, Any]] = []
        self.kinds_read = {k.lower() for k in kinds}

    def consume(self, records: list[Record]) -> None:
        kinds = self.kinds_read
        self.records += [r for r in records if r["kind"] in kinds]

    def __enter__(self) -> ActivityTrace:
        start_activities(self, self.kinds)
        return self

    def __exit__(self, *exc: object) -> None:
        stop_activities(self, self.kinds)
        self._name_api_calls()

    def _name_api_calls(self) -> None:
        api = cupti()
        domains = {
            "runtime": api.CallbackDomain.RUNTIME_API,
            "driver": api.CallbackDomain.DRIVER_API,
        }
        names: dict[tuple[str, int], str] = {}
        for record in self.records:
            domain = domains.get(record["kind"])
            if domain is None or "cbid" not in record:
                continue
            key = (record["kind"], record["cbid"])
            name = names.get(key)
            if name is None:
                try:
                    raw = api.get_callback_name(domain, record["cbid"])
                except api.cuptiError:
                    raw = f"{record['kind']} call {record['cbid']}"
                name = names[key] = _VERSION_SUFFIX.sub("", str(raw))
            record["api"] = name
