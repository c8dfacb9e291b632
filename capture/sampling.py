"""When to time a program's own graph replays, and what the timed ones say.

Tracing kernels with CUPTI costs the program 0.19 to 0.34 us per kernel (DESIGN.md), so
``graphscope record`` traces only some launches: the first ``first`` of each graph, then every
launch of a short window of ``window`` launches opened every ``every_s`` seconds. Between
windows tracing is off and a launch costs the program only graphscope's launch callback.

Pure Python: the recorder feeds it launches and activity records; tests feed it numbers.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from graphscope.analysis.replay import ReplayTiming, replay_timing, summarize_replays
from graphscope.recording import Settings

__all__ = ["Replays", "Schedule", "Settings"]


class Schedule:
    """Decides, launch by launch, whether it is traced."""

    def __init__(self, settings: Settings, now_s: float) -> None:
        self.settings = settings
        self.next_window_s = now_s + settings.every_s if settings.every_s > 0 else float("inf")
        self.window_left = 0
        self.windows = 0

    def wants(self, traced_so_far: int, now_s: float) -> bool:
        """Whether a launch of a graph traced ``traced_so_far`` times is traced."""
        if traced_so_far < self.settings.first:
            return True
        if now_s >= self.next_window_s:
            self.windows += 1
            self.window_left = self.settings.window
            self.next_window_s = now_s + self.settings.every_s
        if self.window_left > 0:
            self.window_left -= 1
            return True
        return False


@dataclass
class Replays:
    """The traced replays of one executable graph, as their records arrived."""

    # correlation id of the launch -> [(graph node id, start ns, end ns)]: the id is CUPTI's
    # (exec id << 32) | local id, whole, since a local id of 0 alone would read as no id
    records: dict[int, list[tuple[int, int, int]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    cpu_launch_ns: dict[int, int] = field(default_factory=dict)  # correlation id -> CPU ns
    skip: set[int] = field(default_factory=set)  # launches not timed (CUPTI's setup in them)

    def add(self, graph_node_id: int, start: int, end: int, correlation: int) -> None:
        self.records[correlation].append((graph_node_id, start, end))

    @property
    def count(self) -> int:
        """Traced launches whose records arrived, setup launches aside."""
        return sum(1 for corr in self.records if corr not in self.skip)

    def copy(self) -> Replays:
        """A copy to compute from while more records arrive on another thread."""
        out = Replays()
        out.records.update(
            {corr: list(recs) for corr, recs in self.records.items() if corr not in self.skip}
        )
        out.cpu_launch_ns = dict(self.cpu_launch_ns)
        return out

    def timing(self, local_ids: dict[int, str]) -> tuple[ReplayTiming, dict[str, Any]]:
        """Per-node statistics and the summary, over the replays whose records are whole.

        A replay is whole when it holds as many records as the fullest one: a launch traced
        at a window's edge can lose some. Records are grouped by the launch's correlation id;
        where CUPTI gives none that tells launches apart (a node seen twice under one id),
        each node's i-th record is taken as replay i instead.
        """
        groups = self.records
        if any(len({n for n, _, _ in recs}) != len(recs) for recs in groups.values()):
            flat = [
                {"graph_node_id": n, "start": s, "end": e}
                for recs in groups.values()
                for n, s, e in recs
            ]
            per_node: dict[int, int] = defaultdict(int)
            for record in flat:
                per_node[record["graph_node_id"]] += 1
            count = max(per_node.values(), default=0)
            timing = replay_timing(flat, local_ids, count)
            return timing, self._summary(timing, count)
        fullest = max((len(r) for r in groups.values()), default=0)
        whole = sorted(
            (min(s for _, s, _ in recs), corr)
            for corr, recs in groups.items()
            if len(recs) == fullest
        )
        flat = [
            {"graph_node_id": node, "start": s, "end": e}
            for _, corr in whole
            for node, s, e in groups[corr]
        ]
        cpu = [self.cpu_launch_ns[corr] for _, corr in whole if corr in self.cpu_launch_ns]
        timing = replay_timing(flat, local_ids, len(whole), cpu if len(cpu) == len(whole) else None)
        summary = self._summary(timing, len(whole))
        summary["partial_replays"] = len(groups) - len(whole)
        return timing, summary

    @staticmethod
    def _summary(timing: ReplayTiming, replays: int) -> dict[str, Any]:
        summary = summarize_replays(timing)
        return {
            "replay_us": summary.get("gpu_span_us"),
            "replay_max_us": summary.get("gpu_span_max_us"),
            "gpu_busy_us": summary.get("gpu_busy_us"),
            "cpu_launch_us": summary.get("cpu_launch_us"),
            "replays": replays,
            "timed_nodes": len(timing.nodes),
            "untimed_nodes": timing.missing,
            "unjoined_records": timing.unjoined,
            "source": "the program's own replays, sampled by graphscope record",
        }
