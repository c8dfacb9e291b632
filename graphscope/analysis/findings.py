"""Findings, a lint for CUDA graphs: known mistakes, each with its nodes, its cost and a fix.

Every rule is a function ``rule(G, index) -> list[Finding]`` over the graph model and an
:class:`Index` of its structure; ``findings(G)`` builds the index once and runs them all.
Rules that need timing or pointers stay silent on graphs without them (DOT dumps).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from ..io import bulk
from ..model import creation_order, display_name, origin_of, replay_median
from .numerics import (
    Difference,
    first_difference_text,
    grouped_lines,
    op_in_module,
    read_frozen,
    read_values,
)
from .summary import parity_lines
from .timing import step_timing

#: Copies and memsets up to this many bytes count as tiny (chains of them are a finding).
TINY_BYTES = 64 * 1024
#: Runs shorter than this are not reported: fewer nodes save too little to be worth a change.
MIN_RUN = 3


@dataclass
class Finding:
    """One problem in a graph."""

    code: str  # stable identifier, e.g. "host-node"
    severity: str  # "warning" (costs time or correctness) or "info" (worth a look)
    title: str  # one line
    nodes: list[str]  # node keys involved, in graph order
    why: str  # why it costs time or correctness
    fix: str  # what to do about it
    cost_us: float | None = None  # replay time at stake, where it can be estimated
    details: list[str] = field(default_factory=list)  # one line per instance

    def as_dict(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it copies each of up to 100,000 node keys one call at a time.
        return {**vars(self), "nodes": list(self.nodes), "details": list(self.details)}


class Index:
    """The graph's order and adjacency, which several rules walk: built once per ``findings``.

    Each rule building its own took 0.25 s of the 1.1 s the rules took at 100,000 nodes.
    """

    def __init__(self, G: nx.DiGraph) -> None:
        self.order = [key for _, _, key in creation_order(G)]
        self.rank = {k: i for i, k in enumerate(self.order)}
        self.succ = dict(G.adjacency())  # the adjacency dicts themselves: no view per lookup
        self.indegree = dict(G.in_degree())
        self.sole_pred = {v: u for u, v in G.edges if self.indegree[v] == 1}

    def ordered(self, keys: Any) -> list[str]:
        """``keys`` in graph order."""
        return sorted(keys, key=self.rank.__getitem__)

    def chains(self, member: Callable[[str], bool]) -> Iterator[list[str]]:
        """Maximal runs ``a -> b -> c`` of member nodes, each the sole successor of the last."""
        succ, indegree = self.succ, self.indegree
        for key in self.order:
            if not member(key):
                continue
            before = self.sole_pred.get(key)
            if before is not None and member(before) and len(succ[before]) == 1:
                continue  # inside a run that starts earlier
            run = [key]
            while len(succ[run[-1]]) == 1:
                nxt = next(iter(succ[run[-1]]))
                if not member(nxt) or indegree[nxt] != 1:
                    break
                run.append(nxt)
            yield run


def _where(data: dict[str, Any]) -> str:
    origin = origin_of(data)
    module, op = origin.get("module"), origin.get("op")
    parts = [p for p in (module, op) if p]
    if origin.get("file") and origin.get("line"):
        parts.append(f"{origin['file']}:{origin['line']}")
    return " ".join(parts)


def _module(data: dict[str, Any]) -> str | None:
    origin = origin_of(data)
    module = origin.get("module")
    return module if isinstance(module, str) else None


def _op(data: dict[str, Any]) -> str:
    origin = origin_of(data)
    op = origin.get("op")
    return op.removeprefix("aten::") if isinstance(op, str) else display_name(data)


def _by_module(G: nx.DiGraph, run: list[str]) -> Iterator[list[str]]:
    """``run`` cut where the module that launched its nodes changes."""
    part: list[str] = []
    module = None
    for key in run:
        mine = _module(G.nodes[key])
        if part and mine != module:
            yield part
            part = []
        part.append(key)
        module = mine
    if part:
        yield part


def host_nodes(G: nx.DiGraph, index: Index) -> list[Finding]:
    keys = index.ordered((k for k, d in G.nodes(data=True) if d.get("type") == "HOST"))
    if not keys:
        return []
    return [
        Finding(
            "host-node",
            "warning",
            f"{len(keys):,} host node(s) in the replayed step",
            keys,
            "A host node runs a CPU function inside the replay: the GPU work after it waits "
            "until a driver thread has run it, a round trip of tens of microseconds that the "
            "graph was meant to remove.",
            "Do the host work before or after the replay (or as a kernel); in PyTorch this is "
            "a CPU callback or a Python op captured into the step.",
            details=[f"{k}: {_where(G.nodes[k])}".rstrip(": ") for k in keys],
        )
    ]


def _pageable(data: dict[str, Any], side: str) -> bool:
    """Whether a copy's ``side`` is pageable host memory, as the verbose DOT dump says it.

    The dump prints a side's memory type with where the pointer really lives in brackets:
    ``HOST (HOST PINNED)`` for page-locked memory.
    """
    kind = data.get(f"{side}.memory_type")
    return isinstance(kind, str) and "PAGEABLE" in kind.upper()


def pageable_copies(G: nx.DiGraph, index: Index) -> list[Finding]:
    keys = index.ordered(
        (
            k
            for k, d in G.nodes(data=True)
            if d.get("type") == "MEMCPY" and (_pageable(d, "src") or _pageable(d, "dst"))
        ),
    )
    if not keys:
        return []
    return [
        Finding(
            "pageable-copy",
            "warning",
            f"{len(keys):,} copy node(s) to or from pageable host memory",
            keys,
            "The driver cannot copy pageable memory asynchronously: it stages the copy "
            "through a pinned buffer, so the copy is slower and holds up the work after it.",
            "Copy from pinned memory (torch.empty(..., pin_memory=True), or cudaHostAlloc / "
            "cudaHostRegister on the buffer) allocated before capture.",
            cost_us=sum(replay_median(G.nodes[k]) or 0.0 for k in keys) or None,
            details=[
                f"{k}: {G.nodes[k].get('kind')} {G.nodes[k].get('bytes')} bytes "
                + _where(G.nodes[k])
                for k in keys
            ],
        )
    ]


def _launch_cost(G: nx.DiGraph) -> float | None:
    """The eager step's mean CPU time per launch call, in us."""
    eager = G.graph.get("eager_summary")
    if isinstance(eager, dict) and eager.get("launch_calls") and eager.get("cpu_launch_us"):
        return float(eager["cpu_launch_us"]) / float(eager["launch_calls"])
    return None


def short_kernels(G: nx.DiGraph, index: Index) -> list[Finding]:
    mean_launch = _launch_cost(G)
    short: dict[str, float] = {}
    kernels = 0
    for key, data in G.nodes(data=True):
        if data.get("type") != "KERNEL":
            continue
        kernels += 1
        median = replay_median(data)
        if median is None:
            continue
        eager = data.get("eager")
        launch = eager.get("launch_us") if isinstance(eager, dict) else None
        cost = launch if isinstance(launch, (int, float)) else mean_launch
        if cost is not None and median < cost:
            short[key] = median
    if not short:
        return []
    runs = sorted(
        (
            run
            for chain in index.chains(short.__contains__)
            for run in _by_module(G, chain)
            if len(run) >= MIN_RUN
        ),
        key=lambda run: -sum(short[k] for k in run),
    )
    details = [
        f"{_module(G.nodes[run[0]]) or 'no module'}: {len(run):,} in a row, "
        f"{sum(short[k] for k in run):.1f} us: "
        + ", ".join(_op(G.nodes[k]) for k in run[:8])
        + (", ..." if len(run) > 8 else "")
        for run in runs[:10]
    ]
    launch_text = f" (a launch took {mean_launch:.1f} us on average eagerly)" if mean_launch else ""
    return [
        Finding(
            "short-kernel",
            "info",
            f"{len(short):,} of {kernels:,} kernels run shorter than their eager launch call"
            + launch_text,
            index.ordered(short),
            "The graph removes their launch cost, but each still costs a scheduling slot on "
            "the GPU and a write and read of its operands in memory; chains of them are what "
            "kernel fusion removes.",
            _fusion_fix(G, short),
            cost_us=sum(short.values()),
            details=details,
        )
    ]


def _fusion_fix(G: nx.DiGraph, short: Iterable[str]) -> str:
    """What to do about the ``short`` kernels: compile the step, unless it already is."""
    compiled = any(str(G.nodes[key].get("name") or "").startswith("triton_") for key in short)
    if compiled:
        # torch.compile's kernels are named triton_<kind>_fused_<ops>; suggesting it again helps
        # no one (seen on the trial's compiled model, docs/CAPTURE.md).
        return (
            "The step is already compiled (its graph holds Inductor's Triton kernels): what is "
            "left are library calls and the fusions Inductor chose; fewer, larger kernels need "
            "a larger batch per step or hand-fused kernels. Below, the runs of one module, most "
            "time first."
        )
    return (
        "Fuse the runs (torch.compile, or a fused kernel such as a fused RMSNorm or rotary "
        "embedding); below, the runs of one module, most time first."
    )


def _bytes(data: dict[str, Any]) -> int | None:
    if data.get("type") == "MEMCPY":
        return data.get("bytes") if isinstance(data.get("bytes"), int) else None
    if data.get("type") == "MEMSET":
        width, height, size = data.get("width"), data.get("height"), data.get("element_size")
        if isinstance(width, int) and isinstance(height, int) and isinstance(size, int):
            return width * height * size
    return None


def tiny_copy_chains(G: nx.DiGraph, index: Index) -> list[Finding]:
    small = {
        k
        for k, d in G.nodes(data=True)
        if d.get("type") in ("MEMCPY", "MEMSET") and (_bytes(d) or TINY_BYTES + 1) <= TINY_BYTES
    }
    if len(small) < MIN_RUN:
        return []
    runs = [run for run in index.chains(small.__contains__) if len(run) >= MIN_RUN]
    if not runs:
        return []
    keys = [k for run in runs for k in run]
    return [
        Finding(
            "tiny-copy-chain",
            "info",
            f"{len(runs):,} chain(s) of {MIN_RUN} or more small copies or memsets",
            keys,
            f"Copies and memsets of at most {TINY_BYTES // 1024} KiB each, one after another: "
            "each is a separate node with its own start-up cost on a copy engine or the SMs, "
            "and the chain serialises them.",
            "Pack the small buffers into one and copy or clear it once, or do the work in the "
            "kernel that consumes it.",
            cost_us=sum(replay_median(G.nodes[k]) or 0.0 for k in keys) or None,
            details=[
                f"{len(run):,} nodes: " + ", ".join(f"{k} ({_bytes(G.nodes[k]):,} B)" for k in run)
                for run in runs
            ],
        )
    ]


def _addresses(data: dict[str, Any]) -> set[int]:
    return {int(p["address"]) for p in data.get("pointers", []) if p.get("address")}


Place = tuple[str, str, Any]


def _place(data: dict[str, Any], known: dict[tuple[str, Any], Place]) -> Place | None:
    """(parent module, module, op) of a node launched inside a submodule, else None.

    ``known`` holds the places already made: a model's layers repeat a few of them.
    """
    origin = data.get("attribution")
    if not isinstance(origin, dict):
        return None
    module, op = origin.get("module"), origin.get("op")
    if not isinstance(module, str) or "." not in module:
        return None
    place = known.get((module, op))
    if place is None:
        place = known[(module, op)] = (module.rsplit(".", 1)[0], module, op)
    return place


def _siblings(a: Place | None, b: Place | None) -> bool:
    """Whether two places are one op in two modules of one parent (q_proj, k_proj)."""
    return a is not None and b is not None and a[0] == b[0] and a[1] != b[1] and a[2] == b[2]


def serialised_work(G: nx.DiGraph, index: Index) -> list[Finding]:
    """Runs of one op in sibling modules (q_proj, k_proj, v_proj) that pass each other nothing.

    Pointers, not read and write sets, are what a bundle has: two kernels in a row whose only
    common addresses are also those of the node before them (their shared input) pass no
    output from one to the other at the same address. That alone is a weak hint (a view at
    an offset of the other's output does not show: on the samples it flagged a GEMM and the
    cache write that reads a slice of its output), so a run must also be one op applied by
    sibling modules. Even then it is a hint, and the finding says "may".
    """
    has_pointers = any(d.get("pointers") for _, d in G.nodes(data=True))
    if not has_pointers:
        return []
    out: list[list[str]] = []
    kernels = {k: d for k, d in G.nodes(data=True) if d.get("type") == "KERNEL"}
    made: dict[tuple[str, Any], Place] = {}
    places = {k: _place(d, made) for k, d in kernels.items()}
    seen: dict[str, set[int]] = {}

    def addresses(key: str) -> set[int]:
        # Only for kernels next to a sibling: reading every kernel's took 0.8 s at 100k nodes.
        if key not in seen:
            seen[key] = _addresses(kernels[key])
        return seen[key]

    def before(run: list[str], start: int) -> set[int]:
        """What the node before a group used: the input its members may share."""
        if start:
            return addresses(run[start - 1])
        return set().union(*(_addresses(G.nodes[p]) for p in G.pred[run[0]]))

    for run in index.chains(kernels.__contains__):
        start = 0
        for i in range(1, len(run) + 1):
            if i < len(run) and _siblings(places[run[i - 1]], places[run[i]]):
                group, shared = run[start : i + 1], before(run, start)
                mine = addresses(run[i])
                if (
                    mine
                    and addresses(run[start])
                    and all(mine & addresses(k) <= shared for k in group[:-1])
                ):
                    continue
            if i - start >= 2:
                out.append(run[start:i])
            start = i
    groups = []
    for group in out:
        times = [replay_median(G.nodes[k]) for k in group]
        known = [t for t in times if t is not None]
        saving = sum(known) - max(known) if known else None
        if known and (saving or 0) < 1.0:
            continue  # running them side by side could save under a microsecond
        groups.append((group, saving))
    if not groups:
        return []
    keys = [k for group, _ in groups for k in group]
    savings = [s for _, s in groups if s is not None]
    return [
        Finding(
            "serialised-independent-work",
            "info",
            f"{len(groups):,} run(s) of kernels that may be independent but wait for each other",
            keys,
            "Each kernel of a run is the same op in a sibling module and depends on the one "
            "before (they were captured on one stream), yet none passes a pointer to the "
            "next beyond the inputs they share: they may be independent, and then they need "
            "not wait.",
            "Check that they are independent; then capture them on separate streams (fork "
            "with torch.cuda.Stream and events) or fuse them (one GEMM for q, k and v).",
            cost_us=sum(savings) if savings else None,
            details=[
                f"{(_module(G.nodes[group[0]]) or '').rsplit('.', 1)[0]}: "
                + ", ".join((_module(G.nodes[k]) or "").rsplit(".", 1)[-1] for k in group)
                + f" ({_op(G.nodes[group[0]])}, {' '.join(group)})"
                + (f": up to {saving:.1f} us if run side by side" if saving else "")
                for group, saving in groups
            ],
        )
    ]


def allocation_nodes(G: nx.DiGraph, index: Index) -> list[Finding]:
    keys = index.ordered(
        (k for k, d in G.nodes(data=True) if d.get("type") in ("MEM_ALLOC", "MEM_FREE"))
    )
    if not keys:
        return []
    return [
        Finding(
            "allocation-node",
            "warning",
            f"{len(keys):,} memory allocation or free node(s) inside the step",
            keys,
            "The graph allocates and frees on every replay: the memory stays reserved for the "
            "graph's lifetime, the graph cannot be cloned (cudaGraphClone fails, 801), and "
            "cudaGraphExecUpdate cannot change these nodes.",
            "Allocate the buffers once before capture and keep them static (the gpt-fast "
            "discipline); cudaMallocAsync inside the captured region is what makes these.",
            details=[
                f"{k}: {G.nodes[k]['type']}"
                + (f" {G.nodes[k]['bytes']:,} bytes" if G.nodes[k].get("bytes") else "")
                for k in keys
            ],
        )
    ]


def parity_mismatches(G: nx.DiGraph, index: Index) -> list[Finding]:
    parity = G.graph.get("parity")
    if not isinstance(parity, dict) or parity.get("ok", True):
        return []
    keys = [d["node"] for d in parity.get("only_in_graph", []) if d.get("node") in G]
    keys += [d["node"] for d in parity.get("config", []) if d.get("node") in G]
    lines = parity_lines(parity)
    return [
        Finding(
            "parity-mismatch",
            "warning",
            f"the graph and the eager step differ ({len(lines):,} difference(s))",
            index.ordered(set(keys)),
            "The replayed graph does not launch what the eager step launches: a kernel chosen "
            "differently at capture (another GEMM, another launch configuration) or work that "
            "happens only in one of them. Timings of the two are then not comparable, and "
            "the graph may compute something else.",
            "Look at each difference: capture after the same warm-up the eager step had, and "
            "keep shapes and flags identical between the two.",
            details=lines,
        )
    ]


def launch_figures(G: nx.DiGraph) -> tuple[float | None, bool]:
    """The graph launch call's CPU time in us, and whether it may be the traced one.

    A recorded graph's ``recording.cpu_launch_us`` is the untraced median; ``timing`` held the
    traced median in ``cpu_launch_us`` until ``cpu_launch_traced_us`` was kept beside it.
    """
    step = step_timing(G)
    if step.recording.cpu_launch_us is not None:
        return step.recording.cpu_launch_us, False
    return step.timing.cpu_launch_us, step.timing.cpu_launch_traced_us is None


#: A launch call is CPU-bound past this share of the GPU's busy time: within 10%, the two are
#: the same within what a replay's timing varies by (a 4-node graph: 6.9 us against 6.2).
CPU_BOUND_OVER = 1.1


def cpu_bound_launch(G: nx.DiGraph, index: Index) -> list[Finding]:
    launch, maybe_traced = launch_figures(G)
    timing = step_timing(G).timing
    busy = timing.gpu_busy_us
    if launch is None or not busy or launch < busy * CPU_BOUND_OVER:
        return []
    extra = launch - busy
    nodes = G.number_of_nodes()
    details = [
        f"launch call {launch:,.1f} us of CPU against {busy:,.1f} us of GPU busy time a "
        f"replay (+{extra:,.1f} us, +{100 * extra / busy:.0f}%)",
        f"{nodes:,} nodes: {launch / max(nodes, 1):.2f} us of CPU per node",
    ]
    if timing.replay_wall_us is not None:
        details.append(
            f"a loop of untraced replays ran at {timing.replay_wall_us:,.1f} us a replay"
        )
    if maybe_traced:
        details.append(
            "this bundle keeps no cpu_launch_traced_us: its launch time may be the traced one, "
            "which CUPTI lengthens"
        )
    return [
        Finding(
            "cpu-bound-launch",
            "warning",
            f"the graph's launch call takes {launch:,.1f} us of CPU, {extra:,.1f} us "
            f"({100 * extra / busy:.0f}%) more than the GPU is busy in a replay: the launch is "
            "CPU-bound",
            [],
            "A replay cannot finish sooner than its launch call has handed the GPU its last "
            "node: the GPU waits on the CPU, and replays back to back run no faster than one "
            "launch call each, however fast their kernels are. The call's CPU time grows with "
            "the node count.",
            "Launch fewer nodes: fuse kernels (torch.compile, fused normalisation, rotary "
            "embedding and QKV projections); a node costs launch time whether it runs 1 us or "
            "100 us.",
            cost_us=extra,
            details=details,
        )
    ]


def values_differ(G: nx.DiGraph, index: Index) -> list[Finding]:
    """The graph's values against eager's at the next step (``numerics``, issue 28)."""
    values = read_values(G)
    if values is None:
        return []
    if values.error:
        return [
            Finding(
                "values-not-compared",
                "info",
                "the graph's values were not compared with eager's",
                [],
                values.error,
                "Capture again; graphscope capture --no-numerics skips the comparison.",
            )
        ]
    if not values.differing and not isinstance(values.first, dict):
        return []
    details = []
    nodes: list[str] = []
    title = "the graph computes other values than the eager step at the next step"
    first = values.first_difference
    if first is not None:
        details.append("first differs: " + first_difference_text(first))
        nodes = [k for k in first.get("nodes") or [] if k in G]
        site = f" ({first['site']})" if first.get("site") else ""
        title += f", first at {op_in_module(first)}{site}"
        details.append(
            f"{values.differing_ops:,} of {values.compared:,} op outputs compared differ"
        )
    details += [f"{o['name']}: " + Difference(**o["difference"]).said() for o in values.differing]
    details += [str(n) for n in values.notes]
    return [
        Finding(
            "values-differ",
            "warning",
            title,
            index.ordered(nodes),
            "Replayed one step after its capture, the graph's values depart from the same "
            "step run eagerly from the same state and RNG. A value the capture froze (a Python "
            "number, an RNG seed or offset, a length), a pointer to a tensor the step has since "
            "made anew, or memory freed since the capture gives that; replays then compute "
            "wrong results without an error.",
            "Look at the first differing op's inputs: pass changing numbers in device tensors "
            "updated in place, copy new inputs into the tensors the graph reads (x.copy_(new)), "
            "and keep what the graph reads alive while it lives.",
            details=details,
        )
    ]


def values_agree(G: nx.DiGraph) -> bool:
    """Whether the value comparison ran and found the graph's values equal to eager's."""
    values = read_values(G)
    return values is not None and values.agree


def frozen_arguments(G: nx.DiGraph, index: Index) -> list[Finding]:
    """Kernel arguments that change from one step to the next, constant in the graph."""
    raw = G.graph.get("frozen")
    if isinstance(raw, dict) and raw.get("error"):
        return [
            Finding(
                "frozen-not-compared",
                "info",
                "the kernel arguments of two captures one step apart were not compared",
                [],
                str(raw["error"]),
                "Capture again; graphscope capture --no-numerics skips the comparison.",
            )
        ]
    report = read_frozen(G)
    if report is None:
        return []
    out = []
    values = [f for f in report.frozen if f.kind == "value"]
    pointers = [f for f in report.frozen if f.kind == "pointer"]
    if values:
        why = (
            "Captured one step later, the same launches take other values: a Python "
            "number, a position, a length, an RNG seed or offset passed by value. The "
            "graph keeps the value of the step it was captured at, and every replay runs "
            "with it."
        )
        title = (
            f"{len(values):,} kernel argument(s) change from one step to the next but are "
            "constant in the graph"
        )
        severity = "warning"
        if values_agree(G):
            # Evidence against: the graph replayed at that later step computed what eager did.
            severity = "info"
            title += ", yet the graph's values matched eager's at the step compared"
            why += (
                " Here the graph's values matched eager's at the step after the capture's, so "
                "these words may be bytes the kernel never reads (slots of an argument struct "
                "that the launch code leaves unfilled, holding whatever the host's memory "
                "held) or values that matter only at other steps."
            )
        out.append(
            Finding(
                "frozen-value",
                severity,
                title,
                index.ordered({f.node for f in values if f.node in G}),
                why,
                "Keep the value in a device tensor that the step updates in place and the "
                "kernel reads, or capture one graph per value.",
                details=grouped_lines(values),
            )
        )
    if pointers:
        out.append(
            Finding(
                "rebound-input",
                "warning",
                f"{len(pointers):,} kernel argument(s) read a tensor the step makes anew each "
                "step: the graph keeps reading the old one",
                index.ordered({f.node for f in pointers if f.node in G}),
                "Captured one step later, the same launches read other memory outside the "
                "graph's own pool: the program binds a new tensor where the graph needs new "
                "values in the old one. Replays read the tensor of the capture's step, or "
                "memory that has since been freed and reused.",
                "Copy the new values into the tensor the graph reads (static.copy_(new)) "
                "instead of binding a new one, and keep it alive while the graph lives.",
                details=grouped_lines(pointers),
            )
        )
    if report.unpaired:
        out.append(
            Finding(
                "frozen-not-compared",
                "info",
                "the kernel arguments of two captures one step apart were not compared",
                [],
                report.unpaired,
                "Nothing to do unless the step should launch the same work each step.",
            )
        )
    return out


RULES: tuple[Callable[[nx.DiGraph, Index], list[Finding]], ...] = (
    values_differ,
    frozen_arguments,
    host_nodes,
    pageable_copies,
    allocation_nodes,
    parity_mismatches,
    cpu_bound_launch,
    serialised_work,
    short_kernels,
    tiny_copy_chains,
)


def findings(G: nx.DiGraph) -> list[Finding]:
    """Every rule's findings, warnings first."""
    with bulk():
        index = Index(G)
        found = [f for rule in RULES for f in rule(G, index)]
    return sorted(found, key=lambda f: f.severity != "warning")
