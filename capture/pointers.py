"""Resolve device pointers inside kernel arguments to allocations and named buffers."""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass
from typing import Any


@dataclass
class Region:
    """A span of device memory with a name."""

    start: int  # first byte
    end: int  # one past the last byte
    name: str  # "input:tokens", "param:blocks.0.attn.qkv.weight", "segment 3", ...


class PointerMap:
    """Looks up which named buffer, or failing that which allocator segment, holds an address."""

    def __init__(self, buffers: list[Region], segments: list[Region]) -> None:
        self._buffers = sorted(buffers, key=lambda r: r.start)
        self._segments = sorted(segments, key=lambda r: r.start)
        self._buffer_starts = [r.start for r in self._buffers]
        self._segment_starts = [r.start for r in self._segments]

    @staticmethod
    def _find(starts: list[int], regions: list[Region], address: int) -> Region | None:
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and address < regions[i].end:
            return regions[i]
        return None

    def resolve(self, address: int) -> dict[str, Any] | None:
        """Where ``address`` points, or None if no known allocation holds it."""
        segment = self._find(self._segment_starts, self._segments, address)
        buffer = self._find(self._buffer_starts, self._buffers, address)
        if segment is None and buffer is None:
            return None
        out: dict[str, Any] = {}
        if segment is not None:
            out["segment"] = segment.name
            out["segment_offset"] = address - segment.start
        if buffer is not None:
            out["buffer"] = buffer.name
            out["buffer_offset"] = address - buffer.start
        return out

    def scan(self, args: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Every 8-byte word of the arguments that points into known memory.

        Most device pointers of PyTorch kernels sit inside struct arguments (TensorInfo,
        OffsetCalculator), so each aligned word of each argument is tried (DESIGN.md); words
        outside the span of all known memory are dropped before any lookup.
        """
        low = min(self._segment_starts[:1] + self._buffer_starts[:1], default=0)
        high = max([r.end for r in self._segments[-1:]] + [r.end for r in self._buffers], default=0)
        found = []
        for index, arg in enumerate(args):
            raw = bytes.fromhex(arg.get("value", ""))
            words = len(raw) // 8
            if not words:
                continue
            for slot, address in enumerate(struct.unpack_from(f"<{words}Q", raw)):
                if low <= address < high:
                    where = self.resolve(address)
                    if where is not None:
                        found.append(
                            {"arg": index, "offset": slot * 8, "address": address, **where}
                        )
        return found
