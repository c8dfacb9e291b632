"""Each node's replay time against the same launch run eagerly: which nodes run slower inside
the graph (issue 28, part 3).

A bundle's parity join pairs each node with its eager launch (``eager.duration_us``, the
traced eager step) and times it over the traced replays (``replay.median_us``). A node slower
in the graph than eagerly is worth a look: a copy kernel ran 2.1x slower inside a graph than
eagerly on GB200 (pytorch/pytorch#191284), and a kernel chosen differently at capture shows
here too. Single eager launches are noisier than replay medians, so a small difference is
not a finding; the table is sorted by the loss, largest first.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import networkx as nx

from ..model import display_name, module_of, replay_median


@dataclass
class NodeTimes:
    """Replay medians against eager durations, over the nodes that have both (us)."""

    compared: int  # nodes with a replay median and an eager duration
    graph_us: float  # their replay medians, summed
    eager_us: float  # their eager durations, summed
    slower_us: float  # the sum of (replay - eager) over the nodes slower in the graph
    faster_us: float  # the sum of (eager - replay) over the nodes faster in the graph
    slower: int  # nodes slower in the graph
    rows: list[dict[str, Any]] = field(default_factory=list)  # by loss, largest first

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def graph_and_eager(data: dict[str, Any]) -> tuple[float, float] | None:
    """A node's replay median and its eager launch's duration (us), where it has both."""
    graph = replay_median(data)
    eager = data.get("eager")
    duration = eager.get("duration_us") if isinstance(eager, dict) else None
    if graph is None or graph <= 0 or not isinstance(duration, (int, float)) or duration <= 0:
        return None
    return graph, float(duration)


def node_times(G: nx.DiGraph, top: int | None = None) -> NodeTimes | None:
    """Each node's replay median against its eager duration, the nodes slower in the graph
    first; None where no node has both (a DOT dump, a recording without an eager step)."""
    rows = []
    for key, data in G.nodes(data=True):
        pair = graph_and_eager(data)
        if pair is None:
            continue
        graph, duration = pair
        rows.append(
            {
                "node": key,
                "name": display_name(data),
                "module": module_of(data),
                "graph_us": graph,
                "eager_us": float(duration),
                "delta_us": graph - duration,
                "ratio": graph / duration,
            }
        )
    if not rows:
        return None
    rows.sort(key=lambda row: (-row["delta_us"], row["node"]))
    slower = [r["delta_us"] for r in rows if r["delta_us"] > 0]
    return NodeTimes(
        compared=len(rows),
        graph_us=sum(r["graph_us"] for r in rows),
        eager_us=sum(r["eager_us"] for r in rows),
        slower_us=sum(slower),
        faster_us=-sum(r["delta_us"] for r in rows if r["delta_us"] < 0),
        slower=len(slower),
        rows=rows[:top] if top is not None else rows,
    )
