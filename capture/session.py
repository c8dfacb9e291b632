"""Capture a decode step into a CUDA graph, read it node by node, time its replays, save a bundle.

Usage::

    from graphscope.capture import session
    path = session.capture_to_bundle("tiny-gpt", batch_size=1, out_dir="out")

The bundle (``<model>-b<batch>.json.gz``) and the verbose ``cudaGraphDebugDotPrint`` dump of
the same graph (``.dot``) are written side by side, each whole or not at all.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx

import graphscope
from graphscope.analysis.replay import replay_timing, summarize_replays
from graphscope.errors import CaptureError

from . import introspect
from ._cuda import check, driver, require
from .environment import device_info, versions
from .models import Step, resolve
from .pointers import PointerMap, Region
from .trace import ActivityTrace

Progress = Callable[[str], None]
# Restore the step's mutable state this often during timed replays: a Hugging Face StaticCache
# overruns after (max_cache_len - prompt) replays without it (DESIGN.md).
RESTORE_EVERY = 50
# Activity records a traced run may produce: a 64 MB CUPTI buffer holds about 300,000.
TRACE_RECORDS = 200_000


class _State:
    """Snapshot of a step's mutable tensors, restored in place."""

    def __init__(self, tensors: list[Any]) -> None:
        self.tensors = tensors
        self.saved = [t.detach().clone() for t in tensors]

    def restore(self) -> None:
        for tensor, saved in zip(self.tensors, self.saved, strict=True):
            tensor.copy_(saved)


def _pointer_map(torch: Any, step: Step) -> PointerMap:
    buffers = []
    for prefix, tensors in (("input", step.inputs), ("output", step.outputs)):
        for name, t in tensors.items():
            buffers.append(Region(t.data_ptr(), t.data_ptr() + t.nbytes, f"{prefix}:{name}"))
    if step.model is not None:
        for name, t in list(step.model.named_parameters()) + list(step.model.named_buffers()):
            if t.is_cuda:
                buffers.append(Region(t.data_ptr(), t.data_ptr() + t.nbytes, f"param:{name}"))
    segments = [
        Region(s["address"], s["address"] + s["total_size"], f"segment {i} ({s['segment_type']})")
        for i, s in enumerate(torch.cuda.memory_snapshot())
    ]
    return PointerMap(buffers, segments)


def _dump_dot(handle: int, path: Path) -> None:
    drv = driver()
    flags = int(drv.CUgraphDebugDot_flags.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE)
    check(
        drv.cuGraphDebugDotPrint(drv.CUgraph(init_value=handle), str(path).encode(), flags),
        "cuGraphDebugDotPrint",
    )


def read_captured_graph(
    handle: int, dot_path: Path, pointers: PointerMap | None
) -> tuple[nx.DiGraph, float]:
    """The graph as its verbose dump describes it, with what only the driver knows added.

    Returns the graph and the introspection time in seconds. The dump supplies every label
    field; the driver adds kernel function attributes and arguments. Node ids are checked to
    agree: a node the driver has and the dump lacks is an error.
    """
    G = graphscope.load(dot_path)
    drv = driver()
    graph = drv.CUgraph(init_value=handle)
    started = time.perf_counter()
    nodes = introspect.root_nodes(graph)
    gid = introspect.graph_id(graph)
    kernels = introspect.KernelReader()
    for local_id, node in nodes:
        key = f"graph_{gid}_node_{local_id}"
        if key not in G:
            raise CaptureError(f"driver node {key} is not in the DOT dump {dot_path}")
        data = G.nodes[key]
        kind = introspect.node_type(node)
        if kind != data["type"]:
            raise CaptureError(f"{key}: the driver says {kind}, the dump says {data['type']}")
        if kind == "KERNEL":
            details = kernels.read(node)
            if pointers is not None:
                details["pointers"] = pointers.scan(details.get("args", []))
            data.update(details)
    return G, time.perf_counter() - started


def _timed_replays(
    torch: Any, graph: Any, state: _State, count: int, trace: bool
) -> tuple[float, list[int], list[dict[str, Any]]]:
    """Replay ``count`` times; (wall seconds of the replays alone, CPU launch ns, records)."""
    cpu: list[int] = []
    wall = 0.0
    records: list[dict[str, Any]] = []

    def run() -> None:
        nonlocal wall
        done = 0
        while done < count:
            state.restore()
            torch.cuda.synchronize()
            batch = min(RESTORE_EVERY, count - done)
            start = time.perf_counter()
            for _ in range(batch):
                t0 = time.perf_counter_ns()
                graph.replay()
                cpu.append(time.perf_counter_ns() - t0)
            torch.cuda.synchronize()
            wall += time.perf_counter() - start
            done += batch

    if trace:
        with ActivityTrace() as tracer:
            run()
        records = tracer.records
    else:
        run()
    return wall, cpu, records


def _timed_eager(torch: Any, step: Step, state: _State, count: int) -> tuple[float, float]:
    """The same step run eagerly ``count`` times: (wall us per step, CPU us to issue it)."""
    walls, issues = [], []
    with torch.no_grad():
        for _ in range(count):
            state.restore()
            torch.cuda.synchronize()
            start = time.perf_counter()
            step.run()
            issued = time.perf_counter()
            torch.cuda.synchronize()
            walls.append(time.perf_counter() - start)
            issues.append(issued - start)
    walls.sort()
    issues.sort()
    return walls[len(walls) // 2] * 1e6, issues[len(issues) // 2] * 1e6


def capture_step(torch: Any, step: Step, warmup: int = 3) -> tuple[Any, dict[str, float]]:
    """Warm up on a side stream, capture with ``keep_graph``; the graph and phase times."""
    times: dict[str, float] = {}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    start = time.perf_counter()
    with torch.cuda.stream(side):
        for _ in range(warmup):
            step.run()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    times["warmup_s"] = time.perf_counter() - start
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    start = time.perf_counter()
    try:
        with torch.cuda.graph(graph):
            step.run()
    except Exception as exc:
        raise CaptureError(f"capture failed: {type(exc).__name__}: {exc}") from exc
    torch.cuda.synchronize()
    times["capture_s"] = time.perf_counter() - start
    return graph, times


def capture_to_bundle(
    model: str,
    batch_size: int,
    out_dir: str | os.PathLike[str],
    *,
    replays: int = 200,
    warmup: int = 3,
    progress: Progress | None = None,
    command: str | None = None,
) -> Path:
    """Capture ``model``'s decode step at ``batch_size`` and write its bundle and dump."""
    say = progress or (lambda _msg: None)
    torch = require("torch")
    if not torch.cuda.is_available():
        raise CaptureError("no CUDA device is visible to torch")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{model.replace(':', '-').replace('.', '-')}-b{batch_size}"
    say(f"{stem}: building the model")
    step = resolve(model)(batch_size)
    phases: dict[str, float] = {}
    if step.prefill is not None:
        start = time.perf_counter()
        step.prefill()
        torch.cuda.synchronize()
        phases["prefill_s"] = time.perf_counter() - start
    state = _State(step.state())
    say(f"{stem}: warming up and capturing")
    reserved = torch.cuda.memory_reserved()
    graph, times = capture_step(torch, step, warmup)
    # What the capture added to PyTorch's reserved memory: the graph's private pool.
    pool_bytes = torch.cuda.memory_reserved() - reserved
    phases.update(times)
    state.restore()
    handle = int(graph.raw_cuda_graph())
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        dot_tmp = Path(tmp) / f"{stem}.dot"
        _dump_dot(handle, dot_tmp)
        say(f"{stem}: reading the graph through the driver")
        G, introspect_s = read_captured_graph(handle, dot_tmp, _pointer_map(torch, step))
        phases["introspect_s"] = introspect_s
        kernels = sum(1 for _, d in G.nodes(data=True) if d["type"] == "KERNEL")
        say(
            f"{stem}: {G.number_of_nodes()} nodes ({kernels} kernels); timing {replays} "
            "replays without and with tracing"
        )
        graph.replay()  # instantiates
        torch.cuda.synchronize()
        # Traced replays are capped so that their records fit CUPTI's buffers: records drained
        # by the Python callback inside the loop would be timed too (DESIGN.md).
        traced = max(10, min(replays, TRACE_RECORDS // max(kernels, 1)))
        wall_plain, _, _ = _timed_replays(torch, graph, state, traced, trace=False)
        wall_traced, cpu, records = _timed_replays(torch, graph, state, traced, trace=True)
        eager_us, eager_cpu_us = _timed_eager(torch, step, state, min(replays, 50))
        state.restore()
        root = G.graph["root_graph_ids"][0]
        local_ids = {d["local_id"]: k for k, d in G.nodes(data=True) if d["graph_id"] == root}
        graph_records = [r for r in records if r.get("graph_node_id")]
        timing = replay_timing(graph_records, local_ids, traced, cpu)
        for key, stats in timing.nodes.items():
            G.nodes[key]["replay"] = stats
        summary = summarize_replays(timing)
        G.graph["timing"] = {
            "replay_us": summary.get("gpu_span_us"),
            "gpu_busy_us": summary.get("gpu_busy_us"),
            "cpu_launch_us": summary.get("cpu_launch_us"),
            "eager_step_us": eager_us,
            "eager_cpu_us": eager_cpu_us,
            "replay_wall_us": wall_plain / traced * 1e6,
            "replay_wall_traced_us": wall_traced / traced * 1e6,
            "tracing_overhead_pct": (wall_traced - wall_plain) / wall_plain * 100,
            "replays": traced,
            "timed_nodes": len(timing.nodes),
            "untimed_nodes": timing.missing,
            "unjoined_records": timing.unjoined,
            "introspect_us_per_node": introspect_s / max(G.number_of_nodes(), 1) * 1e6,
            "graph_pool_bytes": pool_bytes,
            **phases,
        }
        G.graph["replays"] = timing.replays
        G.graph.update(device_info(torch))
        G.graph.update(versions())
        G.graph.update(
            model=model,
            model_description=step.description,
            batch_size=batch_size,
            captured_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            command=command or " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            source={"format": "capture", "dot": f"{stem}.dot"},
        )
        bundle = graphscope.save(G, out / f"{stem}.json.gz")
        os.replace(dot_tmp, out / f"{stem}.dot")
    t = G.graph["timing"]
    with open(out / "manifest.jsonl", "a") as fh:  # how each bundle here was made
        fh.write(
            json.dumps(
                {
                    "file": bundle.name,
                    "dot": f"{stem}.dot",
                    **{
                        k: G.graph[k]
                        for k in (
                            "command",
                            "model",
                            "batch_size",
                            "device",
                            "driver",
                            "cuda_driver_api",
                            "cuda",
                            "python",
                            "torch",
                            "cuda-bindings",
                            "cupti-python",
                            "transformers",
                            "graphscope_version",
                            "captured_at",
                        )
                    },
                }
            )
            + "\n"
        )
    say(
        f"{stem}: eager step {t['eager_step_us']:.1f} us, graph replay "
        f"{t['replay_wall_us']:.1f} us ({t['replay_us']:.1f} us GPU span), CPU launch "
        f"{t['cpu_launch_us']:.1f} us; tracing overhead {t['tracing_overhead_pct']:.1f}%; "
        f"wrote {bundle}"
    )
    return bundle
