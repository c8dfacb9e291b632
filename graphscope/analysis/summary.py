"""What ``graphscope inspect`` reports: counts, shape, kernels by name, and times if present."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import networkx as nx

from ..model import display_name, nodes_by_graph, replay_median
from .numerics import values_verdict


def _graph_shape(G: nx.DiGraph, members: list[str]) -> tuple[int, int]:
    """(depth in nodes of the longest dependency chain, size of the widest level)."""
    sub = G.subgraph(members)
    levels = [len(level) for level in nx.topological_generations(sub)]
    return len(levels), max(levels, default=0)


def parity_lines(parity: dict[str, Any]) -> list[str]:
    """A parity record's differences (see ``eager.join_eager``), one short line each."""
    lines = [
        f"only in the graph: {d.get('what')} ({d.get('node')})"
        for d in parity.get("only_in_graph", [])
    ]
    lines += [f"only in the eager step: {d.get('what')}" for d in parity.get("only_in_eager", [])]
    lines += [
        f"{d.get('node')}: {d.get('field')} {d.get('graph')} in the graph, {d.get('eager')} eagerly"
        for d in parity.get("config", [])
    ]
    lines += [
        f"{d.get('what')}: {d.get('graph')} in the graph, {d.get('eager')} eagerly"
        for d in parity.get("counts", [])
    ]
    return lines


def _parity(parity: Any) -> dict[str, Any] | None:
    """The parity verdict with its differences as one list of short lines."""
    if not isinstance(parity, dict):
        return None
    lines = parity_lines(parity)
    keys = ("ok", "matched", "graph_ops", "eager_ops")
    return {**{k: parity.get(k) for k in keys}, "differences": lines}


def summarize(G: nx.DiGraph) -> dict[str, Any]:
    """A summary of ``G`` as plain data (the ``--json`` output of ``inspect``)."""
    members = nodes_by_graph(G)
    graphs = []
    for gid in sorted(members):
        depth, width = _graph_shape(G, members[gid])
        parent = G.nodes[members[gid][0]].get("parent")
        graphs.append(
            {
                "graph_id": gid,
                "parent": parent,
                "nodes": len(members[gid]),
                "depth": depth,
                "widest_level": width,
            }
        )
    roots = G.graph.get("root_graph_ids")
    if not graphs and isinstance(roots, list):  # an empty graph is still a graph
        graphs = [
            {"graph_id": gid, "parent": None, "nodes": 0, "depth": 0, "widest_level": 0}
            for gid in roots
            if isinstance(gid, int)
        ]
    kernels: dict[str, dict[str, Any]] = {}
    configs: dict[str, Counter[tuple[Any, ...]]] = defaultdict(Counter)
    for _, data in G.nodes(data=True):
        if data.get("type") != "KERNEL":
            continue
        name = display_name(data)
        entry = kernels.setdefault(name, {"short_name": name, "count": 0, "replay_us": None})
        entry["count"] += 1
        if "grid" in data:
            config = (tuple(data["grid"]), tuple(data.get("block", ())), data.get("shared_mem"))
            configs[name][config] += 1
        median = replay_median(data)
        if median is not None:
            entry["replay_us"] = (entry["replay_us"] or 0.0) + median
    for name, entry in kernels.items():
        entry["launch_configs"] = [
            {"grid": list(g), "block": list(b), "shared_mem": s, "count": n}
            for (g, b, s), n in configs[name].most_common()
        ]
    ordered = sorted(
        kernels.values(), key=lambda k: (-(k["replay_us"] or 0.0), -k["count"], k["short_name"])
    )
    roots = [g for g in graphs if g["parent"] is None]
    labels = [
        d["attribution"] for _, d in G.nodes(data=True) if isinstance(d.get("attribution"), dict)
    ]
    timed = [m for m in (replay_median(d) for _, d in G.nodes(data=True)) if m is not None]
    return {
        "nodes": G.number_of_nodes(),
        "edges": G.number_of_edges(),
        "types": dict(Counter(d["type"] for _, d in G.nodes(data=True)).most_common()),
        "graphs": graphs,
        "depth": max((g["depth"] for g in roots), default=0),
        "widest_level": max((g["widest_level"] for g in roots), default=0),
        "kernels": ordered,
        "timed_nodes": len(timed),
        "replay_node_time_us": sum(timed) if timed else None,
        "timing": G.graph.get("timing"),
        "eager": G.graph.get("eager_summary"),
        "parity": _parity(G.graph.get("parity")),
        "values": values_verdict(G),
        "attributed_nodes": len(labels),
        # Not every label names both: code of the step outside the model has no module, and
        # a torch.compile'd step's Triton kernels have no aten op.
        "attributed_with_module": sum(1 for label in labels if label.get("module") is not None),
        "attributed_with_op": sum(1 for label in labels if label.get("op")),
        "metadata": {
            k: v
            for k, v in G.graph.items()
            if k
            in (
                "source",
                "device",
                "driver",
                "cuda",
                "torch",
                "model",
                "batch_size",
                "graphscope_version",
                "schema_version",
            )
        },
    }
