"""Per-node replay statistics from activity records, joined to nodes by graph node id.

Input records are plain dicts as ``graphscope.capture`` stores them from CUPTI: ``start`` and
``end`` in ns, and ``graph_node_id``, which for a replayed node is
``(graph_exec_id << 32) | local_id``. The low 32 bits join a record to its node (DESIGN.md);
the order records arrive in is never used to join.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

LOCAL_ID_MASK = 0xFFFFFFFF


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0 to 100) by linear interpolation (numpy's default method)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def busy_ns(intervals: Iterable[tuple[int, int]]) -> int:
    """Length of the union of ``[start, end)`` intervals."""
    total, current_start, current_end = 0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None and current_start is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None and current_start is not None:
        total += current_end - current_start
    return total


@dataclass
class ReplayTiming:
    """What a set of timed replays says, per node and per replay."""

    nodes: dict[str, dict[str, float]]  # node key -> count, min/median/p90/max, start offset
    replays: list[dict[str, float]]  # per replay: gpu_span_us, gpu_busy_us (+ cpu_launch_us)
    unjoined: int = 0  # records whose node id matched no node
    missing: list[str] = field(default_factory=list)  # timed node types never seen replaying


def replay_timing(
    records: Iterable[Mapping[str, Any]],
    local_ids: Mapping[int, str],
    replays: int,
    cpu_launch_ns: list[int] | None = None,
) -> ReplayTiming:
    """Statistics for ``replays`` replays from their activity records.

    ``local_ids`` maps a root-graph node's local id to its key. The i-th record of a node (in
    start order) belongs to replay i; a node with other than ``replays`` records is reported
    with the records it has, and replay spans use only nodes seen in every replay.
    """
    by_node: dict[str, list[tuple[int, int]]] = defaultdict(list)
    unjoined = 0
    for record in records:
        node_id = record.get("graph_node_id")
        key = local_ids.get(int(node_id) & LOCAL_ID_MASK) if node_id else None
        if key is None:
            unjoined += 1
            continue
        by_node[key].append((int(record["start"]), int(record["end"])))
    per_replay: list[list[tuple[int, int]]] = [[] for _ in range(replays)]
    for spans in by_node.values():
        spans.sort()
        if len(spans) == replays:
            for i, span in enumerate(spans):
                per_replay[i].append(span)
    starts = [min(s for s, _ in spans) if spans else 0 for spans in per_replay]
    summary = []
    for i, spans in enumerate(per_replay):
        if not spans:
            continue
        entry = {
            "gpu_span_us": (max(e for _, e in spans) - starts[i]) / 1000,
            "gpu_busy_us": busy_ns(spans) / 1000,
        }
        if cpu_launch_ns is not None and i < len(cpu_launch_ns):
            entry["cpu_launch_us"] = cpu_launch_ns[i] / 1000
        summary.append(entry)
    nodes = {}
    for key, spans in by_node.items():
        durations = [(e - s) / 1000 for s, e in spans]
        stats = {
            "count": len(spans),
            "min_us": min(durations),
            "median_us": percentile(durations, 50),
            "p90_us": percentile(durations, 90),
            "max_us": max(durations),
        }
        if len(spans) == replays and per_replay[0]:
            stats["start_us"] = percentile(
                [(s - starts[i]) / 1000 for i, (s, _) in enumerate(spans)], 50
            )
        nodes[key] = stats
    missing = sorted(set(local_ids.values()) - set(by_node))
    return ReplayTiming(nodes=nodes, replays=summary, unjoined=unjoined, missing=missing)


def summarize_replays(timing: ReplayTiming) -> dict[str, float]:
    """Medians over replays of the GPU span, GPU busy time and CPU launch time (in us), and
    the longest GPU span as ``gpu_span_max_us``: no node of a replay can last longer."""
    out: dict[str, float] = {}
    for key in ("gpu_span_us", "gpu_busy_us", "cpu_launch_us"):
        values = [r[key] for r in timing.replays if key in r]
        if values:
            out[key] = percentile(values, 50)
            if key == "gpu_span_us":
                out["gpu_span_max_us"] = max(values)
    return out
