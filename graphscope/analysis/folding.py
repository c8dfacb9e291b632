"""Collapsing nodes into module groups, and the graph the page draws when some are collapsed.

A node's groups are the prefixes of its module path, outermost first: ``model.layers.3``, then
``model.layers.3.self_attn``, then ``model.layers.3.self_attn.o_proj``. A node is drawn inside
the outermost of its groups that is not expanded; when every one is expanded it is drawn
itself. Nodes without attribution (DOT files) are grouped by runs of ``CHUNK`` nodes of one
graph in creation order. Repeated layers (and repeated spans of nodes in DOT files) fold into
one block. A graph opens to its ``overview``: as many groups open as keep the drawing small.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Set
from itertools import pairwise
from typing import Any, TypedDict

import networkx as nx

from graphscope.analysis.repeats import layer_repeats, sequence_repeats
from graphscope.model import layer_of, module_text

CHUNK = 100
#: Most nodes drawn when a graph first opens: enough for a layer's kernels and what is
#: around it, few enough to label every one.
OVERVIEW_NODES = 256
# The name of a fold of repeats (repeats.Repeat.name and rest_name).
_BLOCK = re.compile(r"( \d+\.\.\d+ x\d+|, \d+ x \d+|, repeats 2\.\.\d+)$")
GROUP = "GROUP"  # the node type of a collapsed group in the drawn graph
# A fold of repeats with no module path in its name (a DOT dump's): "graph 1: nodes 3..1698,
# 32 x 53" (repeats.Repeat.name).
_SPAN_BLOCK = re.compile(r", (\d+) x \d+$")


class _GroupNode(TypedDict):
    type: str  # GROUP
    group: str  # its name: a module path, a block of repeats or a run of nodes
    members: int  # the nodes folded into it
    time_us: float | None  # their replay medians, summed; None where none has one
    graph_id: int
    local_id: int  # the lowest of its members': where it sits in creation order
    attribution: dict[str, str]  # {"module": group}, as a node's attribution names it


class GroupNode(_GroupNode, total=False):
    """The attributes of a collapsed group's node in the drawn graph."""

    start_us: float  # the span of its members' replays, where they were timed
    end_us: float


def _module_levels(module: str) -> list[str]:
    layer = layer_of({"attribution": {"module": module}})
    parts = module.split(".")
    # Outermost group: the layer (model.layers.3), else the first two parts (model.norm).
    first = len(layer.split(".")) if layer is not None else min(2, len(parts))
    return [".".join(parts[:n]) for n in range(first, len(parts) + 1)]


def group_levels(G: nx.DiGraph) -> dict[str, list[str]]:
    """Each node's groups, outermost first (nodes of one module share one list: read only).

    Layers that launch the same kernels in the same order, and in graphs without module
    paths spans of nodes that repeat back to back, are folded under one block
    (``model.layers 0..223 x224``) that opens to the first instance and a block of the rest.
    """
    out: dict[str, list[str]] = {}
    unattributed: dict[int, list[str]] = {}
    heads: dict[str, list[str]] = {}  # a layer in a run -> the run's blocks above it
    for run in layer_repeats(G):
        for i in range(run.count):
            rest = [run.rest_name()] if i and run.count > 2 else []
            heads[f"{run.prefix}.{run.first + i}"] = [run.name, *rest]
    # Once per module, not per node: a model's nodes come from a few modules each.
    by_module: dict[str, list[str]] = {}
    for key, data in G.nodes(data=True):
        label = data.get("attribution")
        module = label.get("module") if isinstance(label, dict) else None
        if isinstance(module, str) and module:
            chain = by_module.get(module)
            if chain is None:
                levels = _module_levels(module)
                chain = by_module[module] = heads.get(levels[0], []) + levels
            out[key] = chain
        elif isinstance(label, dict):
            out[key] = [module_text(module if isinstance(module, str) else None)]
        else:
            unattributed.setdefault(int(data.get("graph_id", 0)), []).append(key)
    for graph_id, keys in unattributed.items():
        keys.sort(key=lambda k: G.nodes[k].get("local_id", 0))
        out.update(_sequence_levels(G, keys, graph_id))
    return out


def _span_name(G: nx.DiGraph, graph_id: int, keys: list[str]) -> str:
    first, last = G.nodes[keys[0]].get("local_id", 0), G.nodes[keys[-1]].get("local_id", 0)
    return f"graph {graph_id}: nodes {first}..{last}"


def _sequence_levels(G: nx.DiGraph, keys: list[str], graph_id: int) -> dict[str, list[str]]:
    """Groups for one graph's nodes without module paths: repeated spans folded, the rest in
    runs of ``CHUNK`` nodes."""
    out: dict[str, list[str]] = {}
    covered: set[str] = set()
    for run in sequence_repeats(G, keys, f"graph {graph_id}"):
        for i, instance in enumerate(run.instances):
            rest = [run.rest_name()] if i and run.count > 2 else []
            chain = [run.name, *rest, _span_name(G, graph_id, instance)]
            for key in instance:
                out[key] = chain
            covered.update(instance)
    loose: list[list[str]] = [[]]  # the spans between repeats, each chunked on its own
    for key in keys:
        if key in covered:
            if loose[-1]:
                loose.append([])
            continue
        loose[-1].append(key)
    for span in loose:
        for start in range(0, len(span), CHUNK):
            run_keys = span[start : start + CHUNK]
            chain = [_span_name(G, graph_id, run_keys)]
            for key in run_keys:
                out[key] = chain
    return out


def all_groups(levels: dict[str, list[str]]) -> set[str]:
    return {group for chain in levels.values() for group in chain}


def is_block(group: str) -> bool:
    """Whether a group is a fold of repeated instances (a run, or the rest of one)."""
    return _BLOCK.search(group) is not None


def overview(levels: dict[str, list[str]], budget: int = OVERVIEW_NODES) -> set[str]:
    """The groups open when a graph first shows: all of them when the whole graph fits in
    ``budget`` drawn nodes; else breadth first, in the order the work runs, each group opened
    if the drawn nodes stay within ``budget``, and never the block of a run's later
    instances (the first instance stands for them).

    A graph with nested module paths opens one module level at a time, as Model Explorer
    folds namespaces: folds of repeats and the outermost modules that hold other modules
    (a layer) open, showing what is inside as blocks (its attention and MLP), and a module
    whose content is kernels alone stays a block until it is clicked. Opened kernel by
    kernel, the first layer of a 224-layer model took six rows all labelled ``layers.0``
    (issue 27). A graph without module paths (a DOT dump) has no such levels: its first
    repeated span opens to its kernels."""
    uses: dict[int, tuple[list[str], int]] = {}  # one entry per distinct chain: nodes under it
    loose = 0
    for chain in levels.values():
        if not chain:
            loose += 1
            continue
        entry = uses.get(id(chain))
        uses[id(chain)] = (chain, entry[1] + 1 if entry else 1)
    if sum(n for _, n in uses.values()) + loose <= budget:
        return all_groups(levels)
    top: dict[str, None] = {}
    below: dict[str, dict[str, None]] = {}  # group -> its child groups, in order
    leaves: dict[str, int] = {}  # group -> nodes directly in it
    rests: set[str] = set()
    depth: dict[str, int] = {}  # a module group's nesting among module groups (folds left out)
    for chain, nodes in uses.values():
        top[chain[0]] = None
        modules = 0
        for group in chain:
            if not is_block(group):
                depth.setdefault(group, modules)
                modules += 1
        for parent, child in pairwise(chain):
            below.setdefault(parent, {})[child] = None
            if is_block(parent) and is_block(child):
                rests.add(child)
        leaves[chain[-1]] = leaves.get(chain[-1], 0) + nodes
    nested = any(d > 0 for d in depth.values())
    drawn = len(top) + loose
    opened: set[str] = set()
    queue = deque(top)
    while queue:
        group = queue.popleft()
        children = below.get(group, {})
        cost = len(children) + leaves.get(group, 0) - 1
        if group in rests or drawn + cost > budget:
            continue
        if nested and not is_block(group) and (not children or depth[group] > 0):
            continue  # one module level: what a layer holds shows as blocks
        opened.add(group)
        drawn += cost
        queue.extend(children)
    return opened


def _time(data: dict[str, Any]) -> float | None:
    replay = data.get("replay")
    median = replay.get("median_us") if isinstance(replay, dict) else None
    return float(median) if isinstance(median, (int, float)) else None


def collapsed(G: nx.DiGraph, levels: dict[str, list[str]], expanded: Set[str]) -> nx.DiGraph:
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
    groups: dict[str, GroupNode] = {}
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
                "time_us": None,
                "graph_id": data.get("graph_id", 0),
                "local_id": data.get("local_id", 0),
                "attribution": {"module": rep[len("group:") :]},
            }
        entry["members"] += 1
        time = _time(data)
        if time is not None:  # a file without timing (a DOT dump) gives its groups none
            entry["time_us"] = (entry["time_us"] or 0.0) + time
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


def enclosing(levels: dict[str, list[str]], key: str, expanded: Set[str]) -> list[str]:
    """The expanded groups a drawn node sits in, innermost first (what a collapse can close)."""
    return [g for g in reversed(levels.get(key, [])) if g in expanded]


def repeat_sections(
    G: nx.DiGraph, levels: dict[str, list[str]], expanded: Set[str]
) -> dict[str, str]:
    """For each drawn node of an opened instance of a repeat that module paths do not name (a
    DOT dump's layer, found by its kernel period), that instance as a section of the drawing:
    ``graph 1: nodes 3..55, 1 of 32``. The drawing cuts its rows and draws a box there, as it
    does for a layer that attribution names."""
    out: dict[str, str] = {}
    # each group's repeat count where it is a fold of repeats, read from its name once: a view
    # of 10,780 nodes expanded took 18 ms with a search per node, most of it the same names'
    counts: dict[str, str | None] = {}
    for key in G:
        chain = levels.get(key)
        if not chain or len(chain) < 2:
            continue
        for parent, child in pairwise(chain):
            if parent not in counts:
                block = _SPAN_BLOCK.search(parent)
                counts[parent] = block.group(1) if block else None
            count = counts[parent]
            if count and parent in expanded and child in expanded and not is_block(child):
                if layer_of(G.nodes[key]) is None:
                    out[key] = f"{child}, 1 of {count}"
                break
    return out
