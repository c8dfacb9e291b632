"""Collapsing nodes into module groups, and the graph the page draws when some are collapsed.

A node's groups are the prefixes of its module path, outermost first: ``model.layers.3``, then
``model.layers.3.self_attn``, then ``model.layers.3.self_attn.o_proj``. A node is drawn inside
the outermost of its groups that is not expanded; when every one is expanded it is drawn
itself. Nodes without attribution (DOT files) are grouped by runs of ``CHUNK`` nodes of one
graph in creation order. Graphs above ``COLLAPSE_ABOVE`` nodes open with every group collapsed.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from .layout import layer_of

COLLAPSE_ABOVE = 20_000
CHUNK = 100
GROUP = "GROUP"  # the node type of a collapsed group in the drawn graph


def _module_levels(module: str) -> list[str]:
    layer = layer_of({"attribution": {"module": module}})
    parts = module.split(".")
    # Outermost group: the layer (model.layers.3), else the first two parts (model.norm).
    first = len(layer.split(".")) if layer is not None else min(2, len(parts))
    return [".".join(parts[:n]) for n in range(first, len(parts) + 1)]


def group_levels(G: nx.DiGraph) -> dict[str, list[str]]:
    """Each node's groups, outermost first (nodes of one module share one list: read only)."""
    out: dict[str, list[str]] = {}
    unattributed: dict[int, list[str]] = {}
    # Once per module, not per node: a model's nodes come from a few modules each.
    by_module: dict[str, list[str]] = {}
    for key, data in G.nodes(data=True):
        label = data.get("attribution")
        module = label.get("module") if isinstance(label, dict) else None
        if isinstance(module, str) and module:
            chain = by_module.get(module)
            if chain is None:
                chain = by_module[module] = _module_levels(module)
            out[key] = chain
        elif isinstance(label, dict):
            out[key] = ["(outside any module)"]
        else:
            unattributed.setdefault(int(data.get("graph_id", 0)), []).append(key)
    for graph_id, keys in unattributed.items():
        keys.sort(key=lambda k: G.nodes[k].get("local_id", 0))
        for start in range(0, len(keys), CHUNK):
            run = keys[start : start + CHUNK]
            first, last = G.nodes[run[0]]["local_id"], G.nodes[run[-1]]["local_id"]
            name = f"graph {graph_id}: nodes {first}..{last}"
            for key in run:
                out[key] = [name]
    return out


def all_groups(levels: dict[str, list[str]]) -> set[str]:
    return {group for chain in levels.values() for group in chain}


def _time(data: dict[str, Any]) -> float:
    replay = data.get("replay")
    median = replay.get("median_us") if isinstance(replay, dict) else None
    return float(median) if isinstance(median, (int, float)) else 0.0


def collapsed(G: nx.DiGraph, levels: dict[str, list[str]], expanded: set[str]) -> nx.DiGraph:
    """The graph with each collapsed group as one ``GROUP`` node (G itself if none is)."""
    where: dict[str, str] = {}
    for key, chain in levels.items():
        for group in chain:
            if group not in expanded:
                where[key] = "group:" + group
                break
    if not where:
        return G
    out = nx.DiGraph()
    out.graph.update(G.graph)
    groups: dict[str, dict[str, Any]] = {}
    for key, data in G.nodes(data=True):
        rep = where.get(key)
        if rep is None:
            out.add_node(key, **data)
            continue
        entry = groups.get(rep)
        if entry is None:
            entry = groups[rep] = {
                "type": GROUP,
                "group": rep[len("group:") :],
                "members": 0,
                "time_us": 0.0,
                "graph_id": data.get("graph_id", 0),
                "local_id": data.get("local_id", 0),
                "attribution": {"module": rep[len("group:") :]},
            }
        entry["members"] += 1
        entry["time_us"] += _time(data)
        replay = data.get("replay")
        if isinstance(replay, dict) and isinstance(replay.get("start_us"), (int, float)):
            start = float(replay["start_us"])
            end = start + float(replay.get("median_us") or 0.0)
            entry["start_us"] = min(entry.get("start_us", start), start)
            entry["end_us"] = max(entry.get("end_us", end), end)
        entry["local_id"] = min(entry["local_id"], data.get("local_id", 0))
    for rep, entry in groups.items():
        out.add_node(rep, **entry)
    for a, b in G.edges():
        ra, rb = where.get(a, a), where.get(b, b)
        if ra != rb:
            out.add_edge(ra, rb)
    return out


def enclosing(levels: dict[str, list[str]], key: str, expanded: set[str]) -> list[str]:
    """The expanded groups a drawn node sits in, innermost first (what a collapse can close)."""
    return [g for g in reversed(levels.get(key, [])) if g in expanded]
