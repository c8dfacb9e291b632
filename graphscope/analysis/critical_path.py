"""The critical path: the longest dependency chain of a graph, weighted by node durations."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import networkx as nx


def _members(G: nx.DiGraph) -> dict[int, list[str]]:
    by_graph: dict[int, list[str]] = defaultdict(list)
    for key, data in G.nodes(data=True):
        by_graph[int(data.get("graph_id", 0))].append(key)
    return by_graph


def critical_path(G: nx.DiGraph, weight: Callable[[str], float]) -> tuple[list[str], float]:
    """The heaviest chain of a root graph and its total weight.

    A GRAPH or CONDITIONAL node weighs the critical path of the graphs it owns (the heaviest
    body, for a conditional: the worst case), so a child graph counts with its inside.
    The path lists nodes of the root graph only.
    """
    by_graph = _members(G)
    owned: dict[str, list[int]] = defaultdict(list)  # owner node -> graph ids it holds
    for gid, keys in by_graph.items():
        parent = G.nodes[keys[0]].get("parent")
        if parent is not None and parent in G:
            owned[parent].append(gid)
    lengths: dict[int, tuple[list[str], float]] = {}
    # Edges join nodes of one graph, so the whole graph's topological order, filtered, is each
    # graph's: sorting a subgraph view instead took 2.0 s of a 100,000-node report.
    order = list(nx.topological_sort(G))
    preds = dict(G.reverse(copy=False).adjacency())  # the predecessor dicts, no view per node

    def node_weight(key: str) -> float:
        inner = [solve(gid)[1] for gid in owned.get(key, [])]
        return max([weight(key), *inner])

    def solve(gid: int) -> tuple[list[str], float]:
        if gid in lengths:
            return lengths[gid]
        members = by_graph[gid]
        inside = set(members)
        best: dict[str, float] = {}
        via: dict[str, str | None] = {}
        for key in (k for k in order if k in inside):
            start = max(preds[key], key=best.__getitem__, default=None)
            own = weight(key) if key not in owned else node_weight(key)
            best[key] = (best[start] if start is not None else 0.0) + own
            via[key] = start
        end = max(best, key=lambda k: best[k], default=None)
        path: list[str] = []
        while end is not None:
            path.append(end)
            end = via[end]
        path.reverse()
        lengths[gid] = (path, best[path[-1]] if path else 0.0)
        return lengths[gid]

    roots = [gid for gid, keys in by_graph.items() if G.nodes[keys[0]].get("parent") is None]
    return max((solve(gid) for gid in sorted(roots)), key=lambda r: r[1], default=([], 0.0))
