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
  accepted a new value for a 2D memset (tests/capture/test_gpu_update.py), so memsets are not held
  against an update;
- copies: neither the source nor the destination memory type may change
  (``ERROR_PARAMETERS_CHANGED``);
- memory allocation and free nodes cannot be changed (``ERROR_NOT_SUPPORTED``);
- child graphs: the same rules, recursively.
``capture.update`` asks the driver itself on a GPU; a ``gpu`` test compares the two.

An update the driver accepts can still go wrong. ``hazards`` names what it does not report:
- a kernel node whose function changes keeps the executable's launch attributes that
  ``cuGraphKernelNodeGetAttribute`` cannot read back (a preferred cluster dimension): the
  driver applies the new function under the old attributes and reports success. sgl-project/
  sglang#37657 traced a deadlock on GB300 to a cuBLASLt kernel updated this way. A dump does
  not show these attributes, so every change of function is named;
- the same kernel name with another function (another handle in one process): JIT compilers
  and cuDNN's runtime-compiled kernels give kernels of different code one name, so a name is
  no identity. Handles are compared only where the two graphs come from one process, which
  the handles of their other same-name kernels show.
``changes`` counts what the update would apply, each of which changes what the graph computes:
kernels, launch geometry, argument values that hold no known pointer (a sequence length, a
seed, a scalar baked in at capture), pointers, memset values and copies.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import networkx as nx

from ..model import display_name, nodes_by_graph
from .arguments import changed_words

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
class Hazard:
    """One change the driver accepts without a word that can make the replay go wrong."""

    kind: str  # one of HAZARDS
    node: str  # B's node
    pair: str  # the node of A it is paired with
    why: str  # in words; equal for nodes of one kind and one kernel pair, so they group


#: Hazard kinds, and what each means in one line.
HAZARDS = {
    "function-replaced": "the kernel's function changes; launch attributes the driver cannot "
    "read back (a preferred cluster dimension) stay as they were for A's kernel",
    "same-name-other-function": "a kernel of the same name is another function; the update "
    "replaces it, keeping A's launch attributes that cannot be read back",
}
#: What ``changes`` counts, in the order it is told.
CHANGES = (
    "kernel function",
    "launch geometry",
    "argument values",
    "argument pointers",
    "memset",
    "copy",
)


@dataclass
class UpdateVerdict:
    """The prediction for updating an executable graph of A with B."""

    ok: bool  # True: cudaGraphExecUpdate would succeed
    result: str  # "SUCCESS" or the first obstacle's result
    obstacles: list[Obstacle] = field(default_factory=list)
    paired: int = 0  # node pairs checked
    hazards: list[Hazard] = field(default_factory=list)  # what the driver would not report
    # CHANGES -> node pairs the update would change so (only those with a change)
    changes: dict[str, int] = field(default_factory=dict)
    # whether kernel handles could be compared (one process); None: no same-name pair
    handles_compared: bool | None = None

    @property
    def safe(self) -> bool:
        """Accepted, and with no hazard the driver would keep quiet about."""
        return self.ok and not self.hazards

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "safe": self.safe}


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


def _changed_args(a: dict[str, Any], b: dict[str, Any]) -> tuple[bool, bool]:
    """Whether a kernel pair's argument bytes differ in a word that holds a known pointer in
    either, and whether they differ elsewhere (a value: a scalar, a size, a pointer into
    memory the bundle could not name)."""
    found, reshaped = changed_words(a, b)
    return any(w.pointer for w in found), reshaped or any(not w.pointer for w in found)


def _handles_comparable(A: nx.DiGraph, B: nx.DiGraph, pairs: list[tuple[str, str]]) -> bool | None:
    """Whether A's and B's kernel handles are of one process: most paired kernels of one
    name share their handle there, and almost none do across processes (a handle is where
    the driver put the function). None where no pair has one name and two handles."""
    same = total = 0
    for ka, kb in pairs:
        a, b = A.nodes[ka], B.nodes[kb]
        if a.get("type") != "KERNEL" or b.get("type") != "KERNEL" or a.get("name") != b.get("name"):
            continue
        handles = a.get("func_handle"), b.get("func_handle")
        if None in handles:
            continue
        total += 1
        same += handles[0] == handles[1]
    return None if not total else same * 2 > total


def _kernel_hazard(
    A: nx.DiGraph, B: nx.DiGraph, ka: str, kb: str, handles: bool | None
) -> Hazard | None:
    a, b = A.nodes[ka], B.nodes[kb]
    if a.get("name") != b.get("name"):
        why = f"{display_name(a)} in A, {display_name(b)} in B"
        return Hazard("function-replaced", kb, ka, why)
    if handles and a.get("func_handle") != b.get("func_handle"):
        why = f"{display_name(b)}: another function of the same name in B"
        return Hazard("same-name-other-function", kb, ka, why)
    return None


def _node_changes(a: dict[str, Any], b: dict[str, Any], handles: bool | None) -> list[str]:
    """Which of CHANGES an update from node a to its pair b applies (``handles``: whether
    the two graphs' function handles are of one process, so a difference is a change)."""
    kind = a.get("type")
    if kind == "KERNEL":
        out = []
        other = handles and a.get("func_handle") != b.get("func_handle")
        if a.get("name") != b.get("name") or other:
            out.append("kernel function")
        if _changed(a, b, ("grid", "block", "shared_mem")):
            out.append("launch geometry")
        pointer, value = _changed_args(a, b)
        out += ["argument values"] * value + ["argument pointers"] * pointer
        return out
    if kind == "MEMSET" and _changed(a, b, ("value", "element_size", "width", "height", "dst")):
        return ["memset"]
    if kind == "MEMCPY" and _changed(a, b, ("bytes", "src", "dst", "kind")):
        return ["copy"]
    return []


def update_verdict(A: nx.DiGraph, B: nx.DiGraph) -> UpdateVerdict:
    """Predict ``cudaGraphExecUpdate(instantiate(A), B)``; see the module docstring."""
    graphs_a, graphs_b = nodes_by_graph(A), nodes_by_graph(B)
    owned_a, owned_b = _children(A, graphs_a), _children(B, graphs_b)
    obstacles: list[Obstacle] = []
    accepted: list[tuple[str, str]] = []  # node pairs with no obstacle of their own
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
                if not found:
                    accepted.append((ka, kb))
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
    handles = _handles_comparable(A, B, accepted)
    hazards: list[Hazard] = []
    changes: Counter[str] = Counter()
    for ka, kb in accepted:
        a, b = A.nodes[ka], B.nodes[kb]
        changes.update(_node_changes(a, b, handles))
        if a.get("type") == "KERNEL":
            hazard = _kernel_hazard(A, B, ka, kb, handles)
            if hazard is not None:
                hazards.append(hazard)
    return UpdateVerdict(
        ok=not obstacles,
        result=obstacles[0].result if obstacles else "SUCCESS",
        obstacles=obstacles,
        paired=paired,
        hazards=hazards,
        changes={name: changes[name] for name in CHANGES if changes[name]},
        handles_compared=handles,
    )


@dataclass
class HazardGroup:
    """Hazards of one kind and one kernel pair, with the nodes of B they are at."""

    kind: str
    why: str
    nodes: list[str]  # B's keys
    pairs: list[str]  # A's keys, in the same order


def hazard_groups(verdict: UpdateVerdict) -> list[HazardGroup]:
    """A verdict's hazards grouped by kind and kernel pair, most nodes first."""
    groups: dict[tuple[str, str], HazardGroup] = {}
    for h in verdict.hazards:
        group = groups.setdefault((h.kind, h.why), HazardGroup(h.kind, h.why, [], []))
        group.nodes.append(h.node)
        group.pairs.append(h.pair)
    return sorted(groups.values(), key=lambda g: (-len(g.nodes), g.kind, g.why))


def changes_text(verdict: UpdateVerdict) -> str:
    """What an accepted update would change, in one clause ("" where nothing)."""
    parts = [
        f"{name} at {count:,} node{'s' * (count != 1)}" for name, count in verdict.changes.items()
    ]
    return "it would change " + ", ".join(parts) if parts else "it would change nothing"


#: The line said under the hazards: where they come from and what to check.
HAZARD_NOTE = (
    "an update keeps the launch attributes that cannot be read back (a preferred cluster "
    "dimension) of A's kernel when the function changes, and a dump does not show them: check "
    "that B's kernels were captured with the same, or instantiate B anew "
    "(sgl-project/sglang#37657: a cuBLASLt kernel updated so hung on GB300)"
)
