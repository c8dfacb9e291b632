"""A process's graph memory, as a ledger: each pool, the graphs in it, what dropping a graph
or a batch size would free, and the pools against all the process's allocator reserved.

A graph's memory is its pool: the allocator's private pool torch gives a capture, which
graphs can share (SGLang's and Inductor's all share one; ``torch.cuda.graph(pool=...)``).
``recording.json`` gives each graph its pool's id and the pool's bytes when the graph was
read; a pool is as large as its largest reading. A pool is freed only once every graph in it
is gone, so dropping one graph of a shared pool frees nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..recording import Recording


@dataclass
class Pool:
    """One memory pool and the graphs that hold it."""

    pool: list[Any]  # its id as the recording gives it (or the graph's id, for a lone one)
    bytes: int  # reserved: the pool's segments, at its largest reading
    graphs: list[str]
    batches: list[Any]  # each graph's batch, in the same order (None where unknown)
    active_bytes: int | None = None  # in use at that reading, where the recording says

    @property
    def shared(self) -> bool:
        return len(self.graphs) > 1


@dataclass
class Ledger:
    """The pools of one process, largest first, and what each batch size holds alone."""

    pools: list[Pool] = field(default_factory=list)
    total_bytes: int = 0  # every pool once
    # Per batch size: the bytes freed if every graph of that batch were dropped (the pools
    # no graph of another batch shares).
    frees_by_batch: dict[str, int] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # graphs whose pool the recording lacks
    # What torch's allocator held in all at the recorder's last read (recordings made since
    # it was written down): reserved and in use, and when (seconds into the recording).
    process_reserved: int | None = None
    process_active: int | None = None
    process_at_s: float | None = None

    @property
    def active_bytes(self) -> int | None:
        """Bytes in use in every pool, where each pool's reading says."""
        known = [p.active_bytes for p in self.pools if p.active_bytes is not None]
        return sum(known) if self.pools and len(known) == len(self.pools) else None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["active_bytes"] = self.active_bytes
        for pool, entry in zip(self.pools, out["pools"], strict=True):
            entry["shared"] = pool.shared
        return out


def ledger(recording: Recording) -> Ledger:
    """The memory ledger of one process's recording."""
    pools: dict[tuple[Any, ...], Pool] = {}
    out = Ledger()
    for g in recording.graphs:
        pool = g.get("pool")
        if not isinstance(pool, dict) or not isinstance(pool.get("bytes"), int):
            out.unknown.append(g["id"])
            continue
        ident = list(pool.get("id") or [g["id"]])
        entry = pools.setdefault(tuple(ident), Pool(ident, 0, [], []))
        if pool["bytes"] >= entry.bytes:  # the largest reading, and what was in use then
            entry.bytes = pool["bytes"]
            active = pool.get("active_bytes")
            entry.active_bytes = active if isinstance(active, int) else None
        entry.graphs.append(g["id"])
        entry.batches.append(g.get("batch"))
    memory = recording.memory
    if isinstance(memory.get("reserved_bytes"), int):
        out.process_reserved = memory["reserved_bytes"]
        out.process_active = memory.get("active_bytes")
        out.process_at_s = memory.get("at_s")
    out.pools = sorted(pools.values(), key=lambda p: (-p.bytes, p.graphs))
    out.total_bytes = sum(p.bytes for p in out.pools)
    batches = {str(b) for p in out.pools for b in p.batches if b is not None}
    for batch in sorted(batches, key=lambda b: (len(b), b)):
        out.frees_by_batch[batch] = sum(
            p.bytes for p in out.pools if all(str(b) == batch for b in p.batches)
        )
    return out


def pool_total(recording: Recording) -> int | None:
    """The bytes of a process's graph pools, each distinct pool counted once."""
    book = ledger(recording)
    return book.total_bytes if book.pools else None
