"""Timed runs on the GPU: graph replays with and without CUPTI, eager steps, traced steps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ._cuda import cupti, require
from .trace import EAGER_KINDS, ActivityTrace

# Restore the step's mutable state at least this often during timed replays: a Hugging Face
# StaticCache overruns after (max_cache_len - prompt) replays without it (DESIGN.md), and a step
# with a smaller Step.capacity is restored more often.
RESTORE_EVERY = 50
# Traced replays run before the timed ones: the first launches after tracing starts carry
# CUPTI's setup of the executable graph (18% against 29% overhead on a 10,000-node graph).
TRACE_WARMUP = 2


class State:
    """Snapshot of a step's mutable tensors, restored in place.

    ``reset`` puts back what the step keeps outside tensors, after each restore; ``every`` is
    how many steps may run between restores (``Step.capacity``, at most RESTORE_EVERY).
    """

    def __init__(
        self,
        tensors: list[Any],
        reset: Callable[[], Any] | None = None,
        capacity: int | None = None,
    ) -> None:
        self.tensors = tensors
        self.saved = [t.detach().clone() for t in tensors]
        self.reset = reset
        self.every = max(1, min(RESTORE_EVERY, capacity or RESTORE_EVERY))

    def restore(self) -> None:
        for tensor, saved in zip(self.tensors, self.saved, strict=True):
            tensor.copy_(saved)
        if self.reset is not None:
            self.reset()


def timed_replays(
    replay: Callable[[], Any],
    sync: Callable[[], Any],
    state: State,
    count: int,
    trace: bool,
) -> tuple[float, list[int], list[dict[str, Any]]]:
    """Replay ``count`` times: (wall seconds of the replays alone, CPU launch ns, records).

    Traced, only the records of the ``count`` timed replays are returned, not those of the
    warm-up replays before them.
    """
    cpu: list[int] = []
    wall = 0.0

    def run() -> None:
        nonlocal wall
        done = 0
        while done < count:
            state.restore()
            sync()
            batch = min(state.every, count - done)
            start = time.perf_counter()
            for _ in range(batch):
                t0 = time.perf_counter_ns()
                replay()
                cpu.append(time.perf_counter_ns() - t0)
            sync()
            wall += time.perf_counter() - start
            done += batch

    if not trace:
        run()
        return wall, cpu, []
    warmup = min(TRACE_WARMUP, state.every)  # they count against the state's capacity too
    with ActivityTrace() as tracer:
        state.restore()
        sync()
        for _ in range(warmup):
            replay()
        sync()
        run()
    return wall, cpu, _drop_first(tracer.records, warmup)


def _drop_first(records: list[dict[str, Any]], skip: int) -> list[dict[str, Any]]:
    """Records without each node's first ``skip`` (those of the warm-up replays)."""
    by_node: dict[Any, list[dict[str, Any]]] = {}
    for record in records:
        by_node.setdefault(record.get("graph_node_id"), []).append(record)
    kept = []
    for node_id, group in by_node.items():
        if not node_id:  # not a graph node: keep (counted as unjoined downstream)
            kept += group
            continue
        group.sort(key=lambda r: r["start"])
        kept += group[skip:]
    return kept


def timed_eager(
    run: Callable[[], Any], sync: Callable[[], Any], state: State, count: int
) -> tuple[float, float]:
    """The step run eagerly ``count`` times: medians of (wall us, CPU us to issue it)."""
    walls, issues = [], []
    for _ in range(count):
        state.restore()
        sync()
        start = time.perf_counter()
        run()
        issued = time.perf_counter()
        sync()
        walls.append(time.perf_counter() - start)
        issues.append(issued - start)
    walls.sort()
    issues.sort()
    return walls[len(walls) // 2] * 1e6, issues[len(issues) // 2] * 1e6


def traced_run(
    run: Callable[[], Any], sync: Callable[[], Any], restore: Callable[[], Any] | None = None
) -> tuple[float, list[dict[str, Any]]]:
    """Run under CUPTI with the CPU's CUDA calls traced: (wall seconds, records).

    Only what runs after a warm-up inside the trace is kept: the first calls after tracing
    starts carry CUPTI's own setup (45 ms before the first kernel of a 63-kernel step on the
    H200), which is no part of the step. With ``restore`` (which puts the step's state back)
    the warm-up is a whole run of the step; without, one small kernel.
    """
    torch = require("torch")
    api = cupti()
    sync()
    with ActivityTrace(EAGER_KINDS) as tracer:
        if restore is None:
            torch.zeros(1, device="cuda").add_(1)
            sync()
        else:
            run()
            sync()
            restore()
            sync()
        mark = int(api.get_timestamp())
        start = time.perf_counter()
        run()
        sync()
        wall = time.perf_counter() - start
    return wall, [r for r in tracer.records if r.get("start", 0) >= mark]
