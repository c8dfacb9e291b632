"""The eager step beside the graph: its trace, its summary, its join to nodes, and parity.

An eager trace is what CUPTI recorded while the step ran once without the graph: the CUDA
runtime and driver calls of the CPU thread that ran it, and the kernels, copies and memsets they
put on the GPU. It is stored in ``G.graph["eager_trace"]`` (docs/FORMAT.md) as two tables with
times in ns relative to the step's first CUDA call.

Eager launches carry no graph node id, so they are joined to nodes by order and identity: stream
capture creates a node for each launch in the order the CPU issues them, which is the order the
same code launches them eagerly, and node local ids grow in creation order (DESIGN.md). The two
sequences of (type, kernel name) are aligned; what does not align, or aligns with a different
launch configuration, is a parity difference.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from .replay import busy_ns

API_FIELDS = ("name", "start_ns", "end_ns", "correlation_id", "domain")
GPU_FIELDS = (
    "type",
    "name",
    "start_ns",
    "end_ns",
    "correlation_id",
    "stream_id",
    "grid",
    "block",
    "shared_mem",
    "bytes",
    "copy_kind",
    "value",
)
#: CUpti_ActivityMemcpyKind codes, spelt as the graph model spells a MEMCPY's ``kind``.
COPY_KINDS = {
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
}
_GPU_TYPES = {
    "concurrent_kernel": "KERNEL",
    "kernel": "KERNEL",
    "memcpy": "MEMCPY",
    "memset": "MEMSET",
}
_OP_TYPES = frozenset(_GPU_TYPES.values())
# Beyond this many token pairs the middle of two sequences is not aligned (difflib is
# quadratic on repetitive sequences); what lies there is reported as differing.
_ALIGN_LIMIT = 25_000_000


def encode_eager_trace(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The stored form of one eager step's CUPTI records (as ``graphscope.capture`` keeps them).

    Only the CUDA calls of the thread that launched the GPU work are kept; times become ns
    relative to that thread's first call.
    """
    records = list(records)
    gpu = [r for r in records if r.get("kind") in _GPU_TYPES]
    api = [r for r in records if r.get("kind") in ("runtime", "driver")]
    launcher = {r["correlation_id"]: r.get("thread_id") for r in api}
    threads = Counter(launcher.get(r.get("correlation_id")) for r in gpu)
    thread = threads.most_common(1)[0][0] if threads else None
    if thread is not None:
        api = [r for r in api if r.get("thread_id") == thread]
    starts = [int(r["start"]) for r in api] or [int(r["start"]) for r in gpu] or [0]
    origin = min(starts)
    api.sort(key=lambda r: (int(r["start"]), int(r.get("correlation_id", 0))))
    gpu.sort(key=lambda r: (int(r["start"]), int(r.get("correlation_id", 0))))
    api_rows = [
        [
            r.get("api", f"{r['kind']} call {r.get('cbid')}"),
            int(r["start"]) - origin,
            int(r["end"]) - origin,
            r.get("correlation_id"),
            r["kind"],
        ]
        for r in api
    ]
    gpu_rows = []
    for r in gpu:
        kind = _GPU_TYPES[r["kind"]]
        kernel = kind == "KERNEL"
        gpu_rows.append(
            [
                kind,
                r.get("name") if kernel else None,
                int(r["start"]) - origin,
                int(r["end"]) - origin,
                r.get("correlation_id"),
                r.get("stream_id"),
                [r.get("grid_x"), r.get("grid_y"), r.get("grid_z")] if kernel else None,
                [r.get("block_x"), r.get("block_y"), r.get("block_z")] if kernel else None,
                r.get("dynamic_shared_memory") if kernel else None,
                None if kernel else r.get("bytes"),
                COPY_KINDS.get(r.get("copy_kind", 0), "?") if kind == "MEMCPY" else None,
                r.get("value") if kind == "MEMSET" else None,
            ]
        )
    return {
        "origin_ns": origin,
        "thread_id": thread,
        "api": {"fields": list(API_FIELDS), "rows": api_rows},
        "gpu": {"fields": list(GPU_FIELDS), "rows": gpu_rows},
    }


def _rows(table: Mapping[str, Any]) -> list[dict[str, Any]]:
    fields = table["fields"]
    return [dict(zip(fields, row, strict=True)) for row in table["rows"]]


def columns(table: Mapping[str, Any], *names: str) -> list[tuple[Any, ...]]:
    """Columns of a stored table (``trace["api"]`` or ``trace["gpu"]``) by field name.

    For traces too long to turn into a dict per row: a 100,000-kernel eager step makes about
    1.4 million CUDA calls.
    """
    fields = list(table["fields"])
    rows = table["rows"]
    if not rows:
        return [() for _ in names]
    transposed = list(zip(*rows, strict=True))
    return [transposed[fields.index(name)] for name in names]


def eager_calls(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The trace's CUDA API calls as dicts, in start order."""
    return _rows(trace["api"])


def eager_gpu(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The trace's GPU activities as dicts, each with ``launch`` (its API call) when known.

    A null correlation id joins nothing: it says the id is unknown, not that two rows share it.
    """
    calls = {c["correlation_id"]: c for c in eager_calls(trace) if c["correlation_id"] is not None}
    ops = _rows(trace["gpu"])
    for op in ops:
        call = calls.get(op["correlation_id"])
        if call is not None:
            op["launch"] = call
    return ops


def eager_summary(trace: Mapping[str, Any]) -> dict[str, Any]:
    """Where the eager step's time went, in us: CPU in CUDA calls, GPU busy and idle."""
    calls = eager_calls(trace)
    ops = eager_gpu(trace)
    launched = {op["correlation_id"] for op in ops} - {None}
    gpu_spans = [(op["start_ns"], op["end_ns"]) for op in ops]
    out: dict[str, Any] = {
        "api_calls": len(calls),
        "launch_calls": sum(1 for c in calls if c["correlation_id"] in launched),
        "kernels": sum(1 for op in ops if op["type"] == "KERNEL"),
        "copies": sum(1 for op in ops if op["type"] == "MEMCPY"),
        "memsets": sum(1 for op in ops if op["type"] == "MEMSET"),
        "cpu_api_us": busy_ns((c["start_ns"], c["end_ns"]) for c in calls) / 1000,
        "cpu_launch_us": busy_ns(
            (c["start_ns"], c["end_ns"]) for c in calls if c["correlation_id"] in launched
        )
        / 1000,
    }
    ends = [e for _, e in gpu_spans] + [c["end_ns"] for c in calls]
    out["step_us"] = max(ends, default=0) / 1000  # times are relative to the first call
    if gpu_spans:
        first = min(s for s, _ in gpu_spans)
        span = max(e for _, e in gpu_spans) - first
        busy = busy_ns(gpu_spans)
        out.update(
            gpu_span_us=span / 1000,
            gpu_busy_us=busy / 1000,
            gpu_idle_us=(span - busy) / 1000,
            gpu_idle_pct=(span - busy) / span * 100 if span else 0.0,
            first_gpu_start_us=first / 1000,
        )
    return out


def graph_ops(G: nx.DiGraph) -> list[str]:
    """Keys of the nodes that do GPU work (kernels, copies, memsets) in creation order."""
    ops = [
        (d["graph_id"], d["local_id"], k) for k, d in G.nodes(data=True) if d["type"] in _OP_TYPES
    ]
    return [k for _, _, k in sorted(ops)]


def _node_token(data: Mapping[str, Any]) -> tuple[str, str | None]:
    if data["type"] == "KERNEL":
        return ("KERNEL", data.get("name"))
    if data["type"] == "MEMCPY":
        return ("MEMCPY", data.get("kind"))
    return (data["type"], None)


def _op_token(op: Mapping[str, Any]) -> tuple[str, str | None]:
    if op["type"] == "KERNEL":
        return ("KERNEL", op["name"])
    if op["type"] == "MEMCPY":
        return ("MEMCPY", op["copy_kind"])
    return (op["type"], None)


def common_ends(a: list[Any], b: list[Any]) -> tuple[int, int]:
    """How many items two sequences share at their start and, after that, at their end."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def _align(a: list[Any], b: list[Any]) -> list[tuple[int, int]]:
    """Index pairs (i, j) with ``a[i] == b[j]`` of a longest-matching alignment."""
    head, tail = common_ends(a, b)
    pairs = [(i, i) for i in range(head)]
    mid_a, mid_b = a[head : len(a) - tail], b[head : len(b) - tail]
    if mid_a and mid_b and len(mid_a) * len(mid_b) <= _ALIGN_LIMIT:
        matcher = difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=False)
        for block in matcher.get_matching_blocks():
            pairs += [(head + block.a + k, head + block.b + k) for k in range(block.size)]
    pairs += [(len(a) - tail + k, len(b) - tail + k) for k in range(tail)]
    return pairs


def _label(token: tuple[str, str | None]) -> str:
    kind, detail = token
    return f"{kind} {detail}" if detail else kind


def _config_differences(
    key: str, data: Mapping[str, Any], op: Mapping[str, Any]
) -> list[dict[str, Any]]:
    if data["type"] == "KERNEL":
        pairs = [(f, data.get(f), op.get(f)) for f in ("grid", "block", "shared_mem")]
    elif data["type"] == "MEMCPY":
        pairs = [("bytes", data.get("bytes"), op.get("bytes"))]
    else:
        size = None
        if None not in (data.get("width"), data.get("element_size")):
            size = data["width"] * max(data.get("height") or 1, 1) * data["element_size"]
        pairs = [("bytes", size, op.get("bytes"))]
    return [
        {"node": key, "name": data.get("name"), "field": f, "graph": g, "eager": e}
        for f, g, e in pairs
        if g is not None and e is not None and g != e
    ]


@dataclass
class EagerJoin:
    """The eager step joined to the graph's nodes."""

    nodes: dict[str, dict[str, Any]]  # node key -> its eager counterpart's timing and launch
    parity: dict[str, Any] = field(default_factory=dict)  # what differs; see join_eager


def join_eager(G: nx.DiGraph, trace: Mapping[str, Any]) -> EagerJoin:
    """Join each eager GPU activity to the node it became, and list what differs.

    ``parity`` holds ``matched``, ``graph_ops`` and ``eager_ops`` counts; ``only_in_graph``
    (nodes with no eager launch), ``only_in_eager`` (launches with no node), ``config`` (a
    joined pair whose grid, block, shared memory or byte count differ) and ``counts`` (per
    kernel name or copy kind, where the eager step and the graph launch it a different number
    of times); ``ok`` is true when all four are empty.
    """
    keys = graph_ops(G)
    ops = eager_gpu(trace)
    a = [_node_token(G.nodes[k]) for k in keys]
    b = [_op_token(op) for op in ops]
    pairs = _align(a, b)
    nodes: dict[str, dict[str, Any]] = {}
    config: list[dict[str, Any]] = []
    for i, j in pairs:
        key, op = keys[i], ops[j]
        entry: dict[str, Any] = {
            "index": j,
            "start_us": op["start_ns"] / 1000,
            "duration_us": (op["end_ns"] - op["start_ns"]) / 1000,
            "stream": op["stream_id"],
        }
        launch = op.get("launch")
        if launch is not None:
            entry.update(
                launch_api=launch["name"],
                launch_start_us=launch["start_ns"] / 1000,
                launch_us=(launch["end_ns"] - launch["start_ns"]) / 1000,
            )
        nodes[key] = entry
        config += _config_differences(key, G.nodes[key], op)
    joined_a = {i for i, _ in pairs}
    joined_b = {j for _, j in pairs}
    only_graph = [
        {"node": keys[i], "what": _label(a[i])} for i in range(len(keys)) if i not in joined_a
    ]
    only_eager = [
        {"index": j, "what": _label(b[j]), "start_us": ops[j]["start_ns"] / 1000}
        for j in range(len(ops))
        if j not in joined_b
    ]
    count_a, count_b = Counter(a), Counter(b)
    counts = [
        {"what": _label(t), "graph": count_a[t], "eager": count_b[t]}
        for t in sorted(set(count_a) | set(count_b), key=lambda t: (t[0], t[1] or ""))
        if count_a[t] != count_b[t]
    ]
    parity = {
        "matched": len(pairs),
        "graph_ops": len(keys),
        "eager_ops": len(ops),
        "only_in_graph": only_graph,
        "only_in_eager": only_eager,
        "config": config,
        "counts": counts,
        "ok": not (only_graph or only_eager or config or counts),
    }
    return EagerJoin(nodes=nodes, parity=parity)


def attach_eager(G: nx.DiGraph, trace: dict[str, Any]) -> EagerJoin:
    """Make ``trace`` (``encode_eager_trace``) ``G``'s eager step, in place: each node's
    ``eager`` entry, and the graph's ``eager_trace``, ``eager_summary`` and ``parity``.

    The one way both capture and ``import-trace`` store an eager step; entries of an earlier
    trace are dropped first, so no node keeps a launch the new trace does not join to it.
    """
    joined = join_eager(G, trace)
    for key in G:
        G.nodes[key].pop("eager", None)
    for key, entry in joined.nodes.items():
        G.nodes[key]["eager"] = entry
    G.graph["eager_trace"] = trace
    G.graph["eager_summary"] = eager_summary(trace)
    G.graph["parity"] = joined.parity
    return joined
