"""Would ``cudaGraphExecUpdate`` accept graph B for an executable graph instantiated from A?

The driver pairs the nodes of the two graphs in the order they were created (the local ids
``cudaGraphDebugDotPrint`` prints), graph by graph, and then checks the rules of the CUDA
Runtime API reference for ``cudaGraphExecUpdate``:
- topology: the same node count in each graph, and each node's dependencies paired with
  its pair's dependencies (``ERROR_TOPOLOGY_CHANGED``);
- node types: a node and its pair are of one type (``ERROR_NODE_TYPE_CHANGED``);
- kernels: a cooperative node stays cooperative and vice versa (``ERROR_ATTRIBUTES_CHANGED``);
  the function may change, within its context (a bundle is of one context);
- memsets: the reference says only 1D memsets can change, but the H200's driver (580.159)
  accepted a new value for a 2D memset (tests/test_gpu_update.py), so memsets are not held
  against an update;
- copies: neither the source nor the destination memory type may change
  (``ERROR_PARAMETERS_CHANGED``);
- memory allocation and free nodes cannot be changed (``ERROR_NOT_SUPPORTED``);
- child graphs: the same rules, recursively.
``capture.update`` asks the driver itself on a GPU; a ``gpu`` test compares the two.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import networkx as nx

from ..model import nodes_by_graph

#: The node attributes each type's update rules look at.
_MEMCPY_TYPES = ("src.memory_type", "dst.memory_type")
# A MEM_ALLOC node's dptr is where the driver put the memory, not a parameter the user set.
_ALLOC_FIELDS = ("bytes", "pool_props.location.id", "pool_props.alloc_type")


@dataclass
class Obstacle:
    """One reason the update would be refused."""

    result: str  # the CUgraphExecUpdateResult the driver would give, less CU_GRAPH_EXEC_UPDATE_
    node: str | None  # B's node that causes it (None: the graph as a whole)
    pair: str | None  # the node of A it is paired with
    why: str  # in words


@dataclass
class UpdateVerdict:
    """The prediction for updating an executable graph of A with B."""

    ok: bool  # True: cudaGraphExecUpdate would succeed
    result: str  # "SUCCESS" or the first obstacle's result
    obstacles: list[Obstacle] = field(default_factory=list)
    paired: int = 0  # node pairs checked

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _children(G: nx.DiGraph, by_graph: dict[int, list[str]]) -> dict[str | None, list[int]]:
    """Graph ids owned by each GRAPH or CONDITIONAL node (None: the root graphs)."""
    owned: dict[str | None, list[int]] = defaultdict(list)
    for gid in sorted(by_graph):
        owned[G.nodes[by_graph[gid][0]].get("parent")].append(gid)
    return owned


def _changed(a: dict[str, Any], b: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if a.get(n) != b.get(n)]


def _memory_type(value: Any) -> Any:
    return value.split(" (", 1)[0] if isinstance(value, str) else value


def _node_obstacles(A: nx.DiGraph, B: nx.DiGraph, ka: str, kb: str) -> list[Obstacle]:
    a, b = A.nodes[ka], B.nodes[kb]
    kind = a.get("type")
    if kind != b.get("type"):
        return [Obstacle("ERROR_NODE_TYPE_CHANGED", kb, ka, f"{kind} in A, {b.get('type')} in B")]
    cooperative = a.get("cooperative"), b.get("cooperative")
    if kind == "KERNEL" and None not in cooperative and cooperative[0] != cooperative[1]:
        why = f"cooperative launch {cooperative[0]} in A, {cooperative[1]} in B"
        return [Obstacle("ERROR_ATTRIBUTES_CHANGED", kb, ka, why)]
    if kind == "MEMCPY":
        # The dump prints "HOST (HOST PINNED)": the type the copy was given, then where the
        # pointer lives. The rule is about the first (CU_MEMORYTYPE_*).
        changed = [n for n in _MEMCPY_TYPES if _memory_type(a.get(n)) != _memory_type(b.get(n))]
        if changed:
            moves = ", ".join(f"{n} {a.get(n)} -> {b.get(n)}" for n in changed)
            why = f"copy memory type changed ({moves})"
            return [Obstacle("ERROR_PARAMETERS_CHANGED", kb, ka, why)]
    if kind in ("MEM_ALLOC", "MEM_FREE"):
        changed = _changed(a, b, _ALLOC_FIELDS)
        if changed:
            why = f"{kind} node's {', '.join(changed)} changed: allocation nodes cannot be updated"
            return [Obstacle("ERROR_NOT_SUPPORTED", kb, ka, why)]
    return []


def update_verdict(A: nx.DiGraph, B: nx.DiGraph) -> UpdateVerdict:
    """Predict ``cudaGraphExecUpdate(instantiate(A), B)``; see the module docstring."""
    graphs_a, graphs_b = nodes_by_graph(A), nodes_by_graph(B)
    owned_a, owned_b = _children(A, graphs_a), _children(B, graphs_b)
    obstacles: list[Obstacle] = []
    paired = 0
    # Graphs to compare: the root graphs in order, then the graphs of paired owner nodes.
    queue: list[tuple[str | None, str | None]] = [(None, None)]
    while queue:
        owner_a, owner_b = queue.pop(0)
        gids_a, gids_b = owned_a.get(owner_a, []), owned_b.get(owner_b, [])
        if len(gids_a) != len(gids_b):
            why = f"{len(gids_a)} graph(s) in A, {len(gids_b)} in B"
            obstacles.append(Obstacle("ERROR_TOPOLOGY_CHANGED", owner_b, owner_a, why))
            continue
        for gid_a, gid_b in zip(gids_a, gids_b, strict=False):
            nodes_a, nodes_b = graphs_a[gid_a], graphs_b[gid_b]
            if len(nodes_a) != len(nodes_b):
                where = "the graph" if owner_b is None else f"the graph of {owner_b}"
                why = f"{where} has {len(nodes_a)} nodes in A and {len(nodes_b)} in B"
                obstacles.append(Obstacle("ERROR_TOPOLOGY_CHANGED", owner_b, owner_a, why))
                continue
            pairs = dict(zip(nodes_b, nodes_a, strict=True))
            paired += len(pairs)
            for kb, ka in pairs.items():
                found = _node_obstacles(A, B, ka, kb)
                obstacles += found
                deps_a = sorted(A.pred[ka], key=lambda k: A.nodes[k].get("local_id", 0))
                deps_b = [pairs.get(k) for k in B.pred[kb]]
                if (
                    sorted(deps_b, key=lambda k: A.nodes[k].get("local_id", 0) if k else -1)
                    != deps_a
                ):
                    why = (
                        f"depends on {len(deps_b)} node(s) in B and {len(deps_a)} in A, "
                        "or on nodes that are not each other's pairs"
                    )
                    obstacles.append(Obstacle("ERROR_TOPOLOGY_CHANGED", kb, ka, why))
                if not found and A.nodes[ka].get("type") in ("GRAPH", "CONDITIONAL"):
                    queue.append((ka, kb))
    return UpdateVerdict(
        ok=not obstacles,
        result=obstacles[0].result if obstacles else "SUCCESS",
        obstacles=obstacles,
        paired=paired,
    )
