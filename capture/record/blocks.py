"""Pointer integrity beyond parameters: the allocator blocks a graph's kernels point into.

A graph reads its inputs at the addresses they had when it was captured. A program that frees
a static input after capture (``del x``, a tensor rebuilt each step, a cache made anew) leaves
the graph reading memory the allocator may hand to the next tensor: no error, wrong output.
When a graph is read (while the program rests after its instantiation), each of its pointers
that falls in an allocated block of torch's caching allocator, outside the graph's own memory
pool and outside the model's parameters (``integrity.py`` watches those), is watched: the
block's first byte and size. Every ``BLOCKS_EVERY_S`` the recorder's thread reads the
allocator's map again (``torch.cuda.memory_snapshot()``) and files each watched block that is
now free, or part of another allocation. A block freed and allocated again at the same
address and size cannot be told from the one the graph was made with: that is not caught.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: How often the allocator's map is read while graphs live...
BLOCKS_EVERY_S = 10.0
#: ...unless reading it costs more than this share of the time between reads.
BLOCKS_MAX_SHARE = 0.01
_NODES_KEPT = 20


@dataclass(frozen=True)
class Block:
    """One block of a segment of torch's caching allocator."""

    start: int
    size: int
    active: bool  # allocated to a tensor (``active_allocated``)
    pool: tuple[int, ...]  # the segment's pool: (0, 0) for the default one


class BlockMap:
    """The allocator's blocks by address, from one ``torch.cuda.memory_snapshot()``."""

    def __init__(self, segments: Iterable[dict[str, Any]]) -> None:
        blocks: list[Block] = []
        for segment in segments:
            at = int(segment["address"])
            pool = tuple(int(x) for x in segment.get("segment_pool_id") or ())
            for b in segment.get("blocks") or ():
                # Blocks carry their address in torch 2.1 and later; before, they tile the
                # segment in order.
                start = int(b.get("address", at))
                size = int(b["size"])
                blocks.append(Block(start, size, b.get("state") == "active_allocated", pool))
                at = start + size
        blocks.sort(key=lambda b: b.start)
        self._blocks = blocks
        self._starts = [b.start for b in blocks]

    def find(self, address: int) -> Block | None:
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0 and address < self._blocks[i].start + self._blocks[i].size:
            return self._blocks[i]
        return None


@dataclass
class Watch:
    """An allocated block a graph points into, as it was when the graph was read."""

    block: Block
    nodes: list[str] = field(default_factory=list)
    pointers: int = 0


def watches(G: Any, blocks: BlockMap, own_pool: tuple[int, ...] | None) -> dict[int, Watch]:
    """The blocks a built graph's kernel pointers fall in, by first byte: allocated ones,
    outside the graph's own pool, not the model's parameters (``param:`` buffers)."""
    found: dict[int, Watch] = {}
    for key, data in G.nodes(data=True):
        for p in data.get("pointers") or ():
            buffer = p.get("buffer")
            address = p.get("address")
            if (isinstance(buffer, str) and buffer.startswith("param:")) or not isinstance(
                address, int
            ):
                continue
            block = blocks.find(address)
            if block is None or not block.active or (own_pool and block.pool == own_pool):
                continue
            watch = found.setdefault(block.start, Watch(block))
            watch.pointers += 1
            if len(watch.nodes) < _NODES_KEPT and (not watch.nodes or watch.nodes[-1] != key):
                watch.nodes.append(str(key))
    return found


def what_became(watch: Watch, blocks: BlockMap) -> tuple[str, int | None] | None:
    """How the watched block differs now: (why, the first byte of the block holding its
    address now, if any); None where it is as it was."""
    was = watch.block
    now = blocks.find(was.start)
    if now is None:
        return "was freed and its memory returned to the driver", None
    if not now.active:
        return "was freed", None
    if now.start != was.start or now.size != was.size:
        return f"was freed; its address is now in another allocation of {now.size:,} bytes", (
            now.start
        )
    return None


def block_name(block: Block) -> str:
    return f"block {block.start:#x} ({block.size:,} bytes)"
