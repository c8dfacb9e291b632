"""What changed between two captures: nodes matched by topology and kernel identity.

Nodes are matched graph by graph, in creation order, by their identity: the module and op
that launched them where the bundles have attribution (so a GEMM whose cuBLAS kernel changed
with the batch size still pairs with itself), otherwise the node type and kernel name. Runs
that differ are aligned with ``difflib``; a position that differs in both with nodes of one
type pairs them as changed, the rest are added or removed. An edge is kept where both its ends
pair and the pairs are joined in the other graph too; every other edge is added or removed, so
every edge of an added or removed node is.
"""

from __future__ import annotations

import difflib
import heapq
from dataclasses import asdict, dataclass, field
from typing import Any

import networkx as nx

from ..io import bulk
from ..model import display_name, nodes_by_graph, replay_median
from .eager import common_ends
from .timing import read_timing
from .update import UpdateVerdict, update_verdict

#: Timing changes a diff keeps: the largest, by absolute change of the replay median.
TIMING_TOP = 200
#: Beyond this many node pairs in the differing middle of two graphs, difflib (cubic on runs
#: that barely match: 0.44 s for two 2,000-node runs, 3.8 s for 4,000) gives way to a
#: linear alignment that looks a few nodes ahead (``_nearby_pairs``).
ALIGN_LIMIT = 4_000_000
#: How far ``_nearby_pairs`` looks ahead for the next node of the same identity.
LOOKAHEAD = 32
#: Attributes compared for each node type; arguments are compared separately.
COMPARED = {
    "KERNEL": ("name", "grid", "block", "shared_mem", "cooperative", "priority"),
    "MEMCPY": ("kind", "bytes", "src.memory_type", "dst.memory_type"),
    "MEMSET": ("value", "element_size", "width", "height"),
    "MEM_ALLOC": ("bytes",),
    "CONDITIONAL": ("conditional_type", "bodies"),
}


@dataclass
class NodeChange:
    """A node present in both graphs whose parameters or timing differ."""

    a: str  # key in A
    b: str  # key in B
    name: str  # display name in B
    fields: dict[str, list[Any]]  # attribute -> [value in A, value in B]
    args_changed: list[int]  # indices of kernel arguments whose bytes differ
    median_a_us: float | None
    median_b_us: float | None
    kernels: list[str] | None = None  # [in A, in B] where the kernel changed (kernel_names)

    @property
    def delta_us(self) -> float | None:
        if self.median_a_us is None or self.median_b_us is None:
            return None
        return self.median_b_us - self.median_a_us


@dataclass
class GraphDiff:
    """The difference of B from A."""

    matched: int  # node pairs, changed or not
    added: list[str]  # keys in B without a pair
    removed: list[str]  # keys in A without a pair
    changed: list[NodeChange]  # pairs whose parameters differ
    timing: list[NodeChange]  # the timed pairs that changed most, by |delta| descending
    edges_added: list[list[str]] = field(default_factory=list)  # [from, to] in B's keys
    edges_removed: list[list[str]] = field(default_factory=list)  # [from, to] in A's keys
    replay_a_us: float | None = None
    replay_b_us: float | None = None
    update: UpdateVerdict | None = None

    @property
    def configured(self) -> list[NodeChange]:
        """The changed pairs whose parameters differ (grid, block, kernel, sizes...), not only
        their argument values: between two captures nearly every node's arguments differ."""
        return [c for c in self.changed if c.fields]

    @property
    def args_only(self) -> list[NodeChange]:
        """The changed pairs whose argument values alone differ."""
        return [c for c in self.changed if not c.fields]

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.update is not None:  # its own as_dict adds the verdict's `safe`
            out["update"] = self.update.as_dict()
        for entry in out["changed"] + out["timing"]:
            a, b = entry["median_a_us"], entry["median_b_us"]
            entry["delta_us"] = None if a is None or b is None else b - a
        return out


def _identity(data: dict[str, Any]) -> tuple[Any, ...]:
    origin = data.get("attribution") if isinstance(data.get("attribution"), dict) else None
    if origin and (origin.get("module") is not None or origin.get("op")):
        return (data.get("type"), origin.get("module"), origin.get("op"))
    return (data.get("type"), data.get("short_name") or data.get("name"))


def _ordered_graphs(G: nx.DiGraph) -> list[list[str]]:
    by_graph = nodes_by_graph(G)
    # Root graphs first, then child graphs, each in graph id order.
    order = sorted(by_graph, key=lambda g: (G.nodes[by_graph[g][0]].get("parent") is not None, g))
    return [by_graph[g] for g in order]


#: Characters after which a differing part of a C++ name may start.
_BREAKS = " <>(),:&*"


def kernel_names(a: dict[str, Any], b: dict[str, Any], width: int = 60) -> list[str]:
    """Two kernels' short names, each followed, where they are equal, by its full name from the
    first place the two differ (the demangled name where there is one, cut at ``width``)."""
    short_a, short_b = display_name(a), display_name(b)
    full_a = str(a.get("demangled") or a.get("name"))
    full_b = str(b.get("demangled") or b.get("name"))
    if short_a != short_b or full_a == full_b:
        return [short_a, short_b]
    start, _ = common_ends(list(full_a), list(full_b))
    while start and full_a[start - 1] not in _BREAKS:  # from the start of the differing word
        start -= 1
    return [
        f"{short_a} [{_cut(full_a, start, width)}]",
        f"{short_b} [{_cut(full_b, start, width)}]",
    ]


def _cut(text: str, start: int, width: int) -> str:
    part = text[start:]
    part = part if len(part) <= width else part[: width - 3] + "..."
    return ("..." if start else "") + part


def match_nodes(A: nx.DiGraph, B: nx.DiGraph) -> dict[str, str]:
    """Pairs ``{key in A: key in B}``, graph by graph (see the module docstring)."""
    pairs: dict[str, str] = {}
    for nodes_a, nodes_b in zip(_ordered_graphs(A), _ordered_graphs(B), strict=False):
        ids_a = [_identity(A.nodes[k]) for k in nodes_a]
        ids_b = [_identity(B.nodes[k]) for k in nodes_b]
        if ids_a == ids_b:  # the common case (two captures of one step): no alignment needed
            pairs.update(zip(nodes_a, nodes_b, strict=True))
            continue
        # Runs that agree at the two ends are paired as they are; only the middle is aligned
        # (difflib on all of two 100,000-node graphs took 2 s).
        head, tail = common_ends(ids_a, ids_b)
        pairs.update(zip(nodes_a[:head], nodes_b[:head], strict=True))
        if tail:
            pairs.update(zip(nodes_a[-tail:], nodes_b[-tail:], strict=True))
        nodes_a, nodes_b = nodes_a[head : len(nodes_a) - tail], nodes_b[head : len(nodes_b) - tail]
        ids_a, ids_b = ids_a[head : len(ids_a) - tail], ids_b[head : len(ids_b) - tail]
        if len(ids_a) * len(ids_b) > ALIGN_LIMIT:
            for i, j in _nearby_pairs(ids_a, ids_b):
                pairs[nodes_a[i]] = nodes_b[j]
            continue
        matcher = difflib.SequenceMatcher(None, ids_a, ids_b, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                pairs.update(zip(nodes_a[i1:i2], nodes_b[j1:j2], strict=True))
            elif tag == "replace" and i2 - i1 == j2 - j1:
                # One for one: the same nodes with another identity (a kernel or module
                # renamed). Runs of unequal length stay unpaired: added and removed.
                for ka, kb in zip(nodes_a[i1:i2], nodes_b[j1:j2], strict=True):
                    if A.nodes[ka].get("type") == B.nodes[kb].get("type"):
                        pairs[ka] = kb
    return pairs


def _nearby_pairs(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> list[tuple[int, int]]:
    """Index pairs of an alignment in time linear in the lengths (above ``ALIGN_LIMIT``).

    Equal identities pair. Where they differ and the next two agree, the two pair as one
    node changed (a kernel renamed), when their types agree; otherwise the nearest next match
    within ``LOOKAHEAD`` in either sequence is taken (nodes removed or added), and failing
    one, the two pair one for one where their types agree, as difflib's equal-length
    replacements do.
    """
    out: list[tuple[int, int]] = []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        if a[i] == b[j]:
            out.append((i, j))
            i, j = i + 1, j + 1
            continue
        step = None
        if not (i + 1 < na and j + 1 < nb and a[i + 1] == b[j + 1]):
            # How far A is ahead of where B's progress puts it: skips in the sequence that
            # is ahead are left out past LOOKAHEAD, so that neither runs out long before the
            # other and leaves the rest of the other unpaired.
            ahead = i - j * na / nb
            for k in range(1, LOOKAHEAD):
                if ahead < LOOKAHEAD and i + k < na and a[i + k] == b[j]:
                    step = (k, 0)  # a[i:i+k] removed
                    break
                if ahead > -LOOKAHEAD and j + k < nb and a[i] == b[j + k]:
                    step = (0, k)  # b[j:j+k] added
                    break
        if step is None:
            if a[i][0] == b[j][0]:  # the identity starts with the node type
                out.append((i, j))
            i, j = i + 1, j + 1
        else:
            i, j = i + step[0], j + step[1]
    return out


def _args_changed(a: dict[str, Any], b: dict[str, Any]) -> list[int]:
    args_a, args_b = a.get("args") or [], b.get("args") or []
    if args_a == args_b:
        return []
    changed = [
        i
        for i, (x, y) in enumerate(zip(args_a, args_b, strict=False))
        if x.get("value") != y.get("value") or x.get("size") != y.get("size")
    ]
    longer = max(len(args_a), len(args_b))
    return changed + list(range(min(len(args_a), len(args_b)), longer))


def diff(A: nx.DiGraph, B: nx.DiGraph, timing_top: int = TIMING_TOP) -> GraphDiff:
    """The difference of ``B`` from ``A``, with the ``cudaGraphExecUpdate`` verdict.

    ``timing`` holds the ``timing_top`` pairs whose replay median changed most.
    """
    with bulk():
        return _diff(A, B, timing_top)


def _diff(A: nx.DiGraph, B: nx.DiGraph, timing_top: int) -> GraphDiff:
    pairs = match_nodes(A, B)
    paired_b = set(pairs.values())
    changed: list[NodeChange] = []
    timing: list[NodeChange] = []
    for ka, kb in pairs.items():
        a, b = A.nodes[ka], B.nodes[kb]
        fields = {
            f: [a.get(f), b.get(f)]
            for f in COMPARED.get(str(a.get("type")), ())
            if a.get(f) != b.get(f)
        }
        args = _args_changed(a, b) if a.get("type") == "KERNEL" else []
        change = NodeChange(
            ka,
            kb,
            display_name(b),
            fields,
            args,
            replay_median(a),
            replay_median(b),
            kernel_names(a, b) if "name" in fields else None,
        )
        if fields or args:
            changed.append(change)
        if change.delta_us is not None:
            timing.append(change)
    timing = heapq.nlargest(timing_top, timing, key=lambda c: abs(c.delta_us or 0.0))
    inverse = {kb: ka for ka, kb in pairs.items()}
    edges_a, edges_b = set(A.edges), set(B.edges)
    t_a, t_b = A.graph.get("timing"), B.graph.get("timing")
    return GraphDiff(
        matched=len(pairs),
        added=[k for k in _flat(B) if k not in paired_b],
        removed=[k for k in _flat(A) if k not in pairs],
        changed=changed,
        timing=timing,
        # An end without a pair maps to None, which no edge has: its edges are added or removed.
        edges_added=[[u, v] for u, v in B.edges if (inverse.get(u), inverse.get(v)) not in edges_a],
        edges_removed=[[u, v] for u, v in A.edges if (pairs.get(u), pairs.get(v)) not in edges_b],
        replay_a_us=read_timing(t_a).replay_wall_us,
        replay_b_us=read_timing(t_b).replay_wall_us,
        update=update_verdict(A, B),
    )


def _flat(G: nx.DiGraph) -> list[str]:
    return [k for keys in _ordered_graphs(G) for k in keys]
