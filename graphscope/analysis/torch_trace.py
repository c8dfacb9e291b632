"""A PyTorch profiler (Kineto) Chrome trace of the eager step, as an alternative eager trace.

Users often have a ``torch.profiler`` trace of their step already. Its CUDA runtime and driver
calls (``cuda_runtime``, ``cuda_driver``) and GPU work (``kernel``, ``gpu_memcpy``,
``gpu_memset``) carry the same correlation ids CUPTI gives, so they become the records
``encode_eager_trace`` stores, and ``join_eager`` joins them to the graph's nodes as it joins
graphscope's own trace. Kineto prints kernel names demangled; they are matched to the graph's
mangled names through each node's ``demangled`` name.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import networkx as nx

from ..contract import (
    EAGER_TRACE,
    MAX_BYTES,
    TORCH_EVENT,
    check,
    check_each,
    parse_json,
    read_limited,
)
from ..errors import InputError
from .eager import COPY_KINDS, attach_eager, encode_eager_trace

_API = {"cuda_runtime": "runtime", "cuda_driver": "driver"}
_GPU = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
_COPY_CODES = {kind: code for code, kind in COPY_KINDS.items()}
_COPY_NAME = re.compile(r"Memcpy (\w+)")
#: The least share of GPU ops (of the graph's or the trace's, whichever has more) that must
#: join with the same launch configuration for a trace to stand as the graph's eager step.
#: A trace of the same step joins all of them (tiny-llama b1: 212 of 212); of the same model at
#: another batch size 39% (b1 against b8: 192 joined, 110 of them configured otherwise); of
#: another model 15% (tiny-llama against tiny-gpt).
MIN_JOINED = 0.9


def read_torch_trace(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The ``traceEvents`` of a Chrome trace written by ``torch.profiler`` (.json or .json.gz).

    The events graphscope reads (CUDA calls and GPU work) are checked against
    ``contract.TORCH_EVENT``; the others are passed over.
    """
    where = Path(path)
    raw = read_limited(where, MAX_BYTES, hint=" for a profiler trace")
    try:
        doc = parse_json(raw, where, InputError, "trace")
    except InputError as exc:
        raise InputError(where, f"not a Chrome trace JSON ({exc.message})", exc.line) from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise InputError(where, 'not a Chrome trace: no "traceEvents" list')
    read = [(i, e) for i, e in enumerate(events) if type(e) is dict and _is_read(e)]
    if not any(e["cat"] in _GPU for _, e in read):
        raise InputError(
            where,
            "holds no GPU kernels, copies or memsets: profile the step with "
            "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]",
        )
    check_each([e for _, e in read], TORCH_EVENT, where, lambda n: f"traceEvents[{read[n][0]}]")
    return [e for e in events if isinstance(e, dict)]


def _is_read(event: dict[str, Any]) -> bool:
    cat = event.get("cat")
    return event.get("ph") == "X" and type(cat) is str and (cat in _API or cat in _GPU)


def records_from_torch_trace(
    events: list[dict[str, Any]],
    mangled: dict[str, str] | None = None,
    static_shared: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """CUPTI-like records (as ``encode_eager_trace`` takes them) from Kineto's events.

    The events are as ``read_torch_trace`` returns them: checked against the contract.
    ``mangled`` maps a demangled kernel name to the name the graph records. Kineto's "shared
    memory" is dynamic plus static (a real trace gave 528 for a kernel with 512 dynamic and 16
    static bytes); ``static_shared`` (mangled name -> static bytes) takes the static part off.
    """
    names = mangled or {}
    static = static_shared or {}
    records = []
    for e in events:
        if not _is_read(e):
            continue
        cat, args = e["cat"], e.get("args") or {}
        correlation = args.get("correlation")
        if not isinstance(correlation, int) or correlation <= 0:
            continue
        start = round(float(e["ts"]) * 1000)
        record: dict[str, Any] = {
            "start": start,
            "end": start + round(float(e.get("dur", 0)) * 1000),
            "correlation_id": correlation,
        }
        if cat in _API:
            record.update(kind=_API[cat], api=e.get("name"), thread_id=e.get("tid"))
        else:
            record.update(kind=_GPU[cat], stream_id=args.get("stream"))
            if cat == "kernel":
                grid, block = args.get("grid") or [None] * 3, args.get("block") or [None] * 3
                name = names.get(e["name"], e["name"])
                shared = args.get("shared memory")
                if isinstance(shared, int) and static.get(name, shared + 1) <= shared:
                    shared -= static[name]
                record.update(
                    name=name,
                    grid_x=grid[0],
                    grid_y=grid[1],
                    grid_z=grid[2],
                    block_x=block[0],
                    block_y=block[1],
                    block_z=block[2],
                    dynamic_shared_memory=shared,
                )
            else:
                record["bytes"] = args.get("bytes")
                match = _COPY_NAME.match(str(e.get("name", "")))
                if cat == "gpu_memcpy" and match:
                    record["copy_kind"] = _COPY_CODES.get(match.group(1), 0)
        records.append(record)
    return records


def poor_join(parity: dict[str, Any]) -> str | None:
    """Why the join ``parity`` (``join_eager``) describes is too poor for the trace to stand as
    the graph's eager step, or None when it is good enough (``MIN_JOINED``)."""
    matched, graph_ops, eager_ops = parity["matched"], parity["graph_ops"], parity["eager_ops"]
    configured = matched - len({c["node"] for c in parity["config"]})
    most = max(graph_ops, eager_ops)
    if most == 0 or configured >= MIN_JOINED * most:
        return None
    return (
        f"joins {matched:,} of its {eager_ops:,} GPU ops to the graph's {graph_ops:,}, "
        f"{configured:,} with the same launch configuration ({100 * configured / most:.0f}%, "
        f"under the {100 * MIN_JOINED:.0f}% needed): a trace of another model, batch size or "
        "step?"
    )


def with_torch_trace(G: nx.DiGraph, path: str | os.PathLike[str]) -> nx.DiGraph:
    """A copy of ``G`` whose eager side (trace, summary, parity, per-node eager timing) is the
    profiler trace at ``path``. Replay timing and the untimed eager step time stay as captured.
    """
    events = read_torch_trace(path)
    mangled = {
        str(d["demangled"]): str(d["name"])
        for _, d in G.nodes(data=True)
        if d.get("type") == "KERNEL" and d.get("demangled") and d.get("name")
    }
    static = {
        str(d["name"]): int(d["static_shared_mem"])
        for _, d in G.nodes(data=True)
        # A kernel's mangled name is optional in the contract: one without it is matched by
        # no profiler event's name, so its static shared memory is of no use here.
        if d.get("type") == "KERNEL"
        and isinstance(d.get("static_shared_mem"), int)
        and d.get("name")
    }
    trace = encode_eager_trace(records_from_torch_trace(events, mangled, static))
    # The events passed the contract; the trace made of them must too (times relative to
    # the first call, for one), before it is joined and stored.
    check(trace, EAGER_TRACE, Path(path), "eager trace")
    H = copy.deepcopy(G)
    attach_eager(H, trace)
    H.graph["eager_source"] = {"format": "torch-profiler", "file": Path(path).name}
    return H
