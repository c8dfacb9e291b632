"""A process's graph memory, as a ledger: each pool, the graphs in it, and what dropping a
graph or a batch size would free (issue 26, part 5, from what recordings hold today).

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
    bytes: int
    graphs: list[str]
    batches: list[Any]  # each graph's batch, in the same order (None where unknown)

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

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
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
        entry.bytes = max(entry.bytes, pool["bytes"])
        entry.graphs.append(g["id"])
        entry.batches.append(g.get("batch"))
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
