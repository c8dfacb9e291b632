"""The critical path: the longest dependency chain of a graph, weighted by node durations."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import networkx as nx

from ..model import nodes_by_graph


def _inner_first(G: nx.DiGraph, by_graph: dict[int, list[str]]) -> list[int]:
    """Graph ids ordered so that a graph comes after every graph its nodes own.

    Iterative: child graphs may nest thousands deep, past Python's recursion limit. The
    contract rules out a graph nested inside itself, so every walk up reaches a root.
    """
    depth: dict[int, int] = {}
    for start in by_graph:
        walk: list[int] = []
        gid: int | None = start
        while gid is not None and gid not in depth:
            walk.append(gid)
            parent = G.nodes[by_graph[gid][0]].get("parent")
            gid = G.nodes[parent]["graph_id"] if parent is not None and parent in G else None
        below = -1 if gid is None else depth[gid]
        for gid in reversed(walk):
            below += 1
            depth[gid] = below
    return sorted(by_graph, key=lambda gid: (-depth[gid], gid))


def critical_path(G: nx.DiGraph, weight: Callable[[str], float]) -> tuple[list[str], float]:
    """The heaviest chain of a root graph and its total weight.

    A GRAPH or CONDITIONAL node weighs the critical path of the graphs it owns (the heaviest
    body, for a conditional: the worst case), so a child graph counts with its inside.
    The path lists nodes of the root graph only.
    """
    by_graph = nodes_by_graph(G)
    owned: dict[str, list[int]] = defaultdict(list)  # owner node -> graph ids it holds
    for gid, keys in by_graph.items():
        parent = G.nodes[keys[0]].get("parent")
        if parent is not None and parent in G:
            owned[parent].append(gid)
    # Edges join nodes of one graph, so the whole graph's topological order, filtered, is each
    # graph's: sorting a subgraph view instead took 2.0 s of a 100,000-node report.
    ordered: dict[int, list[str]] = defaultdict(list)  # each graph's nodes in that order
    graph_of = dict(G.nodes(data="graph_id"))
    for key in nx.topological_sort(G):
        ordered[graph_of[key]].append(key)
    preds = dict(G.reverse(copy=False).adjacency())  # the predecessor dicts, no view per node
    lengths: dict[int, tuple[list[str], float]] = {}
    for gid in _inner_first(G, by_graph):  # each graph after the graphs its nodes own
        best: dict[str, float] = {}
        via: dict[str, str | None] = {}
        for key in ordered[gid]:
            start = max(preds[key], key=best.__getitem__, default=None)
            own = weight(key)
            if key in owned:
                own = max([own, *(lengths[inner][1] for inner in owned[key])])
            best[key] = (best[start] if start is not None else 0.0) + own
            via[key] = start
        end = max(best, key=lambda k: best[k], default=None)
        path: list[str] = []
        while end is not None:
            path.append(end)
            end = via[end]
        path.reverse()
        lengths[gid] = (path, best[path[-1]] if path else 0.0)
    roots = [gid for gid, keys in by_graph.items() if G.nodes[keys[0]].get("parent") is None]
    return max((lengths[gid] for gid in sorted(roots)), key=lambda r: r[1], default=([], 0.0))
