"""CUPTI's activity buffers read in place: the fields graphscope uses, as one dict per record.

cupti-python hands a completed buffer over as one Python object per record, each a numpy
record view, and reading a field costs several numpy calls. At exit from a recorded run of a
5,211-node graph (104,260 kernel records from 20 traced replays) that took 11 s of the 15.6 s
the process spent after the program's last statement, on the H100 (issue 25). Here the
buffers are registered and walked with ctypes (``cuptiActivityRegisterCallbacks``,
``cuptiActivityGetNextRecord``, the C API cupti-python wraps), and each record's fields are
unpacked at the offsets of cupti-python's own numpy layouts (``activity_kernel10_dtype``...),
so the layouts stay those of the CUPTI cupti-python was built for.

Where libcupti cannot be found in the process, cupti-python's own delivery is used, with its
objects turned into the same dicts.
"""

from __future__ import annotations

import contextlib
import ctypes
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ._cuda import cupti, libcupti

Record = dict[str, Any]
Deliver = Callable[[list[Record]], None]

#: The fields read from each record, where its kind has them.
FIELDS = (
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
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "dynamic_shared_memory",
)
# The record layout (cupti-python's numpy dtype) of each kind graphscope enables.
_DTYPES = {
    "CONCURRENT_KERNEL": "activity_kernel10_dtype",
    "MEMCPY": "activity_memcpy6_dtype",
    "MEMSET": "activity_memset4_dtype",
    "RUNTIME": "activity_api_dtype",
    "DRIVER": "activity_api_dtype",
}
_STRINGS = frozenset({"name"})  # char* fields: read as text
_CODES = {("i", 1): "b", ("u", 1): "B", ("i", 2): "h", ("u", 2): "H", ("i", 4): "i"}
_CODES.update({("u", 4): "I", ("i", 8): "q", ("u", 8): "Q"})
_CUPTI_SUCCESS = 0
BUFFER_BYTES = 64 << 20


@dataclass(frozen=True)
class Layout:
    """Where one record kind keeps the fields read from it."""

    kind: str  # "concurrent_kernel"
    names: tuple[str, ...]
    unpack: struct.Struct  # the fields, in ``names`` order, from the record's first byte
    strings: tuple[int, ...]  # positions in ``names`` of char* fields


def layout(kind: str, dtype: Any) -> Layout:
    """The layout of ``kind``'s records from its numpy dtype (field offsets and sizes)."""
    placed = sorted(
        (dtype.fields[name][1], name, dtype.fields[name][0])
        for name in FIELDS
        if dtype.fields is not None and name in dtype.fields
    )
    fmt, at, names = "<", 0, []
    for offset, name, field in placed:
        code = _CODES.get((field.kind, field.itemsize))
        if code is None or offset < at:
            continue  # a nested or overlapping field: not one graphscope reads
        fmt += f"{offset - at}x" if offset > at else ""
        fmt += code
        at = offset + field.itemsize
        names.append(name)
    strings = tuple(i for i, name in enumerate(names) if name in _STRINGS)
    return Layout(kind.lower(), tuple(names), struct.Struct(fmt), strings)


@dataclass
class Reader:
    """Turns the records of a buffer into dicts, by kind code."""

    layouts: dict[int, Layout]

    @classmethod
    def for_cupti(cls, api: Any) -> Reader:
        layouts = {}
        for kind, dtype_name in _DTYPES.items():
            dtype = getattr(api, dtype_name, None)
            code = getattr(api.ActivityKind, kind, None)
            if dtype is not None and code is not None:
                layouts[int(code)] = layout(kind, dtype)
        return cls(layouts)

    def records(self, view: memoryview, offsets: Iterator[int]) -> list[Record]:
        """The records starting at ``offsets`` in ``view``; kinds without a layout are left out."""
        out: list[Record] = []
        layouts = self.layouts
        kind_of = struct.Struct("<i").unpack_from
        for offset in offsets:
            (code,) = kind_of(view, offset)
            found = layouts.get(code)
            if found is None:
                continue
            values = found.unpack.unpack_from(view, offset)
            record: Record = {"kind": found.kind}
            record.update(zip(found.names, values, strict=True))
            for i in found.strings:
                pointer = values[i]
                name = found.names[i]
                if pointer:
                    record[name] = ctypes.string_at(pointer).decode(errors="replace")
                else:
                    del record[name]
            out.append(record)
        return out


_REQUESTED = ctypes.CFUNCTYPE(
    None,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.POINTER(ctypes.c_size_t),
    ctypes.POINTER(ctypes.c_size_t),
)
_COMPLETED = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t
)


class Buffers:
    """CUPTI's activity buffers, given and taken back through ctypes."""

    def __init__(self, lib: ctypes.CDLL, reader: Reader, deliver: Deliver) -> None:
        self._lib = lib
        self._reader = reader
        self._deliver = deliver
        self._held: dict[int, ctypes.Array[ctypes.c_char]] = {}
        next_record = lib.cuptiActivityGetNextRecord
        next_record.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
        next_record.restype = ctypes.c_int
        self._next = next_record
        # Kept referenced: CUPTI calls them for the life of the process.
        self._on_requested = _REQUESTED(self._requested)
        self._on_completed = _COMPLETED(self._completed)

    def register(self) -> None:
        register = self._lib.cuptiActivityRegisterCallbacks
        register.argtypes = [_REQUESTED, _COMPLETED]
        register.restype = ctypes.c_int
        status = register(self._on_requested, self._on_completed)
        if status != _CUPTI_SUCCESS:
            raise OSError(f"cuptiActivityRegisterCallbacks returned {status}")

    def _requested(self, buffer: Any, size: Any, most: Any) -> None:
        try:
            memory = ctypes.create_string_buffer(BUFFER_BYTES)  # malloc'd: 16-byte aligned
            address = ctypes.addressof(memory)
            self._held[address] = memory
            buffer[0], size[0], most[0] = address, BUFFER_BYTES, 0
        except BaseException:  # never into CUPTI's thread; CUPTI then drops the records
            buffer[0], size[0], most[0] = None, 0, 0

    def _offsets(self, address: int, valid: int) -> Iterator[int]:
        record = ctypes.c_void_p()
        while self._next(address, valid, ctypes.byref(record)) == _CUPTI_SUCCESS:
            yield int(record.value or 0) - address

    def _completed(self, context: Any, stream: int, address: Any, size: int, valid: int) -> None:
        memory = self._held.pop(int(address or 0), None)
        if memory is None or not valid:
            return
        try:
            view = memoryview(memory).cast("B")[:valid]
            records = self._reader.records(view, self._offsets(int(address), valid))
            self._deliver(records)
        except BaseException as exc:  # never into CUPTI's thread
            with contextlib.suppress(BaseException):
                lost = f"{type(exc).__name__}: {exc}"
                sys.stderr.write(f"graphscope: CUPTI activity records lost ({lost})\n")


def _from_objects(activities: list[Any], reader: Reader) -> list[Record]:
    """cupti-python's record objects as the same dicts (where libcupti was not found)."""
    out: list[Record] = []
    for activity in activities:
        found = reader.layouts.get(int(activity.kind))
        if found is None:
            continue
        record: Record = {"kind": found.kind}
        for name in found.names:
            value = getattr(activity, name, None)
            if value is not None:
                record[name] = value if isinstance(value, (int, str)) else int(value)
        out.append(record)
    return out


_buffers: Buffers | None = None
_registered = False


def register(deliver: Deliver) -> None:
    """Deliver each completed buffer's records to ``deliver``, from CUPTI's thread or a flush.

    Once per process (CUPTI keeps one pair of buffer callbacks): later calls change nothing.
    """
    global _buffers, _registered
    if _registered:
        return
    api = cupti()
    reader = Reader.for_cupti(api)
    lib = libcupti()
    if lib is not None:
        with contextlib.suppress(OSError, AttributeError):
            buffers = Buffers(lib, reader, deliver)
            buffers.register()
            _buffers, _registered = buffers, True
            return

    def requested() -> tuple[int, int]:
        return BUFFER_BYTES, 0

    def completed(activities: list[Any]) -> None:
        deliver(_from_objects(activities, reader))

    api.activity_register_callbacks(requested, completed)
    _registered = True
