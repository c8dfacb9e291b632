"""Capture a decode step into a CUDA graph, read it node by node, time it, save a bundle.

Usage::

    from graphscope.capture import session
    paths = session.capture_buckets("tiny-gpt", [1, 2, 4], "out")     # one graph per bucket
    path = session.capture_to_bundle("tiny-gpt", 1, "out")            # one batch size
    path = session.inspect_graph(my_cuda_graph, "out", name="engine")  # a graph you captured

Each bundle (``<stem>.json.gz``) and the verbose ``cudaGraphDebugDotPrint`` dump of the same
graph (``<stem>.dot``) are written side by side, each whole or not at all, with a line in the
folder's ``manifest.jsonl`` saying how they were made.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import networkx as nx

import graphscope
from graphscope.analysis.buckets import DEFAULT_BUCKETS, PADDING_RULE
from graphscope.analysis.eager import attach_eager, eager_summary, encode_eager_trace
from graphscope.analysis.numerics import frozen_values
from graphscope.analysis.replay import replay_timing, summarize_replays
from graphscope.errors import CaptureError
from graphscope.io import write_atomic

from . import failure, grab
from . import numerics as values
from ._cuda import check, driver, require
from .attribution import Attribution, generated_code_dirs, library_paths
from .environment import device_info, now_iso, versions
from .introspect import graph_handle
from .models import HF_PREFIX, Step, resolve
from .pointers import PointerMap, allocated_in, pointer_map
from .record.blocks import BlockMap
from .timing import State, timed_eager, timed_replays, traced_run
from .update import DriverUpdate, driver_update

Progress = Callable[[str], None]
# Activity records a traced run may produce: a 64 MB CUPTI buffer holds about 300,000.
TRACE_RECORDS = 200_000
_MANIFEST_FIELDS = (
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


def _step_buffers(step: Step) -> dict[str, Any]:
    named = {f"input:{k}": t for k, t in step.inputs.items()}
    named.update({f"output:{k}": t for k, t in step.outputs.items()})
    return named


def read_captured_graph(
    handle: int, dot_path: Path, pointers: PointerMap | None
) -> tuple[nx.DiGraph, float]:
    """The graph as its verbose dump describes it, with what only the driver knows added.

    Writes the dump to ``dot_path``; returns the graph and the driver read's seconds
    (``grab.read_graph``, the read ``graphscope record`` does too).
    """
    return grab.read_graph(handle, dot_path, pointers)


def capture_step(
    torch: Any, step: Step, warmup: int = 3, what: str = "the step"
) -> tuple[Any, dict[str, float], Attribution]:
    """Warm up on a side stream, capture with ``keep_graph`` while attributing each node.

    Returns the graph, phase times and the attribution. A capture that fails raises one
    CaptureError naming the op, the module path and the user's source line; the CUDA context
    stays usable (checked), and nothing is returned to save.
    """
    times: dict[str, float] = {}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    start = time.perf_counter()
    attribution = Attribution(step.model)
    try:
        with torch.cuda.stream(side):
            for _ in range(warmup):
                step.run()
    except Exception as exc:
        site = attribution.site_of(exc)
        raise CaptureError(
            failure.describe(what, exc, site).replace("capture of", "warm-up of", 1)
        ) from None
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    times["warmup_s"] = time.perf_counter() - start
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    generators = _generator_states(torch)
    start = time.perf_counter()
    try:
        with attribution, torch.cuda.graph(graph):
            step.run()
    except Exception as exc:
        message = failure.describe(what, exc, attribution.site_of(exc))
        del graph
        _restore_generators(torch, generators)
        try:
            torch.cuda.synchronize()
            torch.rand(4, device="cuda").add_(1).sum().item()  # kernels and the RNG both work
        except Exception as broken:
            message += f"; the CUDA context is no longer usable ({broken})"
        else:
            message += "; nothing was saved for it, and the CUDA context is still usable"
        raise CaptureError(message) from None
    torch.cuda.synchronize()
    times["capture_s"] = time.perf_counter() - start
    return graph, times, attribution


@contextlib.contextmanager
def _phase(torch: Any, stem: str, phase: str, say: Progress) -> Iterator[None]:
    """Say ``phase``; an error in it from the GPU or the model's code becomes one CaptureError.

    Errors raised in graphscope's own code, with no frame of the user's, keep their
    traceback: they are bugs to report.
    """
    say(f"{stem}: {phase}")
    try:
        yield
    except CaptureError:
        raise
    except Exception as exc:
        cause = failure.first_error(exc)
        site = failure.user_site(
            failure.frames_of(cause.__traceback__), library_paths(torch) + generated_code_dirs()
        )
        if site.file is None and not failure.is_cuda_error(cause):
            raise
        raise CaptureError(failure.phase_failed(stem, phase, exc, site)) from exc


def _generator_states(torch: Any) -> list[Any]:
    """Copies of each CUDA generator's state, taken before a capture begins."""
    return [gen.clone_state() for gen in torch.cuda.default_generators]


def _restore_generators(torch: Any, states: list[Any]) -> None:
    """Put back generator states a failed capture left marked as capturing.

    ``capture_end`` raises before it releases the generators it registered, and every later
    random op then fails with "Offset increment outside graph capture" (seen on the H200 with
    torch 2.11); a clone taken before the capture is not marked.
    """
    for gen, state in zip(torch.cuda.default_generators, states, strict=True):
        gen.graphsafe_set_state(state)


def _time_replays(
    G: nx.DiGraph,
    replay: Callable[[], Any],
    sync: Callable[[], Any],
    state: State,
    replays: int,
) -> dict[str, Any]:
    """Replay untraced and traced; put per-node statistics on G; the timing summary."""
    kernels = sum(1 for _, d in G.nodes(data=True) if d["type"] == "KERNEL")
    replay()  # the first launch uploads the executable graph
    sync()
    # Traced replays are capped so that their records fit CUPTI's buffers: records drained
    # by the Python callback inside the loop would be timed too (DESIGN.md).
    traced = max(10, min(replays, TRACE_RECORDS // max(kernels, 1)))
    wall_plain, cpu_plain, _ = timed_replays(replay, sync, state, traced, trace=False)
    wall_traced, cpu, records = timed_replays(replay, sync, state, traced, trace=True)
    state.restore()
    root = G.graph["root_graph_ids"][0]
    local_ids = {d["local_id"]: k for k, d in G.nodes(data=True) if d["graph_id"] == root}
    graph_records = [r for r in records if r.get("graph_node_id")]
    timing = replay_timing(graph_records, local_ids, traced, cpu)
    for key, stats in timing.nodes.items():
        G.nodes[key]["replay"] = stats
    summary = summarize_replays(timing)
    G.graph["replays"] = timing.replays
    return {
        "replay_us": summary.get("gpu_span_us"),
        "replay_max_us": summary.get("gpu_span_max_us"),
        "gpu_busy_us": summary.get("gpu_busy_us"),
        # One meaning in capture and record: the launch call's CPU time untraced (median);
        # tracing adds CUPTI's work to the call, kept apart as cpu_launch_traced_us.
        "cpu_launch_us": sorted(cpu_plain)[len(cpu_plain) // 2] / 1000 if cpu_plain else None,
        "cpu_launch_traced_us": summary.get("cpu_launch_us"),
        "replay_wall_us": wall_plain / traced * 1e6,
        "replay_wall_traced_us": wall_traced / traced * 1e6,
        "tracing_overhead_pct": (wall_traced - wall_plain) / wall_plain * 100,
        "replays": traced,
        "timed_nodes": len(timing.nodes),
        "untimed_nodes": timing.missing,
        "unjoined_records": timing.unjoined,
    }


def _save(G: nx.DiGraph, out: Path, stem: str, dot_tmp: Path) -> Path:
    """Write the bundle, move the dump beside it, add the manifest line."""
    G.graph["source"] = {"format": "capture", "dot": f"{stem}.dot"}
    bundle = graphscope.save(G, out / f"{stem}.json.gz")
    os.replace(dot_tmp, out / f"{stem}.dot")
    line = {"file": bundle.name, "dot": f"{stem}.dot"}
    line.update({k: G.graph.get(k) for k in _MANIFEST_FIELDS})
    with open(out / "manifest.jsonl", "a") as fh:  # how each bundle here was made
        fh.write(json.dumps(line) + "\n")
    return bundle


def _metadata(torch: Any, command: str | None) -> dict[str, Any]:
    return {
        **device_info(torch),
        **versions(),
        "captured_at": now_iso(),
        "command": command or " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
    }


def _summary_line(stem: str, t: Mapping[str, Any]) -> str:
    eager = f"eager step {t['eager_step_us']:.1f} us, " if "eager_step_us" in t else ""
    return (
        f"{stem}: {eager}graph replay {t['replay_wall_us']:.1f} us "
        f"({t['replay_us']:.1f} us GPU span), CPU launch {t['cpu_launch_us']:.1f} us; "
        f"tracing overhead {t['tracing_overhead_pct']:.1f}%"
    )


#: A built-in model name, ``package.module:factory``, or the factory itself.
ModelSpec = str | Callable[[int], Step]


def _stem(name: str) -> str:
    """The file-name stem for a model spec; ``hf:PATH`` is named by the folder's name."""
    if name.startswith(HF_PREFIX):
        name = "hf-" + Path(name[len(HF_PREFIX) :]).expanduser().name
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "model"


def _model_name(model: ModelSpec) -> str:
    if isinstance(model, str):
        return model
    return f"{getattr(model, '__module__', '')}:{getattr(model, '__qualname__', 'factory')}"


def _build_step(model: ModelSpec, batch_size: int) -> Step:
    factory = resolve(model) if isinstance(model, str) else model
    step = factory(batch_size)
    if not isinstance(step, Step):
        raise CaptureError(
            f"the factory for {_model_name(model)} returned {type(step).__name__}, "
            "not a graphscope.capture.models.Step"
        )
    return step


def capture_to_bundle(
    model: ModelSpec,
    batch_size: int,
    out_dir: str | os.PathLike[str],
    *,
    replays: int = 200,
    warmup: int = 3,
    progress: Progress | None = None,
    command: str | None = None,
    buckets: Iterable[int] | None = None,
    numerics: bool = True,
) -> Path:
    """Capture ``model``'s decode step at ``batch_size`` and write its bundle and dump.

    ``model`` is a built-in name (``tiny-gpt``, ``tiny-gpt-parallel``, ``tiny-llama``),
    ``package.module:factory``, or a factory: a callable taking the batch size and returning
    a :class:`~graphscope.capture.models.Step`. ``buckets`` is the set of batch sizes this
    capture belongs to. With ``numerics`` (the default) the graph's values are compared with
    eager's at the next step, and the step is captured once more a step later to find the
    kernel arguments the graph froze (``capture.numerics``).
    """
    bundle, _, _ = _capture(
        model, batch_size, out_dir, replays, warmup, progress, command, buckets, numerics
    )
    return bundle


def _capture(
    model: ModelSpec,
    batch_size: int,
    out_dir: str | os.PathLike[str],
    replays: int = 200,
    warmup: int = 3,
    progress: Progress | None = None,
    command: str | None = None,
    buckets: Iterable[int] | None = None,
    numerics: bool = True,
) -> tuple[Path, nx.DiGraph, Any]:
    """:func:`capture_to_bundle`, also returning the graph it wrote and the CUDA graph."""
    say = progress or (lambda _msg: None)
    torch = require("torch")
    if not torch.cuda.is_available():
        raise CaptureError("no CUDA device is visible to torch")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = _model_name(model)
    stem = f"{_stem(name)}-b{batch_size}"
    with _phase(torch, stem, "building the model", say):
        step = _build_step(model, batch_size)
    sync = torch.cuda.synchronize
    phases: dict[str, float] = {}
    prefill: dict[str, Any] | None = None
    if step.prefill is not None:
        with _phase(torch, stem, "prefill (eager, traced)", say):
            wall, records = traced_run(step.prefill, sync)
        phases["prefill_s"] = wall
        prefill = {"wall_us": wall * 1e6, **eager_summary(encode_eager_trace(records))}
    with _phase(torch, stem, "warming up and capturing", say):
        state = State(step.state(), step.reset, step.capacity)
        graph, times, attribution = capture_step(torch, step, warmup, what=stem)
    phases.update(times)
    pool_bytes = allocated_in(torch.cuda.memory_snapshot(), tuple(graph.pool()))
    state.restore()
    handle = int(graph.raw_cuda_graph())
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        dot_tmp = Path(tmp) / f"{stem}.dot"
        say(f"{stem}: reading the graph through the driver")
        pointers = pointer_map(torch, _step_buffers(step), [("", step.model)])
        G, introspect_s = read_captured_graph(handle, dot_tmp, pointers)
        labelled = grab.attach_labels(G, attribution.labels)
        kernels = sum(1 for _, d in G.nodes(data=True) if d["type"] == "KERNEL")
        say(
            f"{stem}: {G.number_of_nodes()} nodes ({kernels} kernels, {labelled} attributed); "
            f"timing up to {replays} replays without and with tracing"
        )
        with _phase(torch, stem, "timing the replays", lambda _msg: None):
            timing = _time_replays(G, graph.replay, sync, state, replays)
        with _phase(torch, stem, "timing and tracing the same step eagerly", say), torch.no_grad():
            eager_us, eager_cpu_us = timed_eager(step.run, sync, state, min(replays, 50))
            state.restore()
            _, records = traced_run(step.run, sync, state.restore)
            state.restore()
        trace = encode_eager_trace(records)
        joined = attach_eager(G, trace)
        if numerics:
            _compare_with_eager(torch, step, state, G, Path(tmp), stem, say, warmup)
        G.graph["timing"] = {
            **timing,
            "eager_step_us": eager_us,
            "eager_cpu_us": eager_cpu_us,
            "introspect_us_per_node": introspect_s / max(G.number_of_nodes(), 1) * 1e6,
            "graph_pool_bytes": pool_bytes,
            **phases,
        }
        sizes = sorted(set(buckets or [batch_size]) | {batch_size})
        G.graph.update(_metadata(torch, command))
        G.graph.update(
            model=name,
            model_description=step.description,
            batch_size=batch_size,
            buckets={"sizes": sizes, "padding": PADDING_RULE},
            attributed_nodes=labelled,
            prefill=prefill,
        )
        bundle = _save(G, out, stem, dot_tmp)
    parity = joined.parity
    say(
        f"{_summary_line(stem, G.graph['timing'])}; eager/graph parity: "
        f"{'same' if parity['ok'] else 'DIFFERS'} ({parity['matched']} of "
        f"{parity['graph_ops']} nodes joined); wrote {bundle}"
    )
    return bundle, G, graph


def _compare_with_eager(
    torch: Any,
    step: Step,
    state: State,
    G: nx.DiGraph,
    tmp: Path,
    stem: str,
    say: Progress,
    warmup: int | None,
) -> None:
    """Put ``numerics`` and ``frozen`` on G (``capture.numerics``); a failure of either is
    said in its section, and the capture goes on. ``warmup``: the steps run from ``state``
    before G was captured by ``capture_step``; None for a graph captured elsewhere
    (``inspect_graph``), under no hooks of ours and at a step that cannot be made again."""
    say(f"{stem}: comparing the graph's values with eager's at the next step")
    section = values.compare_with_eager(torch, step, state, G, lambda m: say(f"{stem}: {m}"))
    G.graph["numerics"] = section
    if section.get("error"):
        say(f"{stem}: graph and eager not compared: {section['error']}")
    say(f"{stem}: capturing the step again one step later, for the arguments the graph froze")

    def read(handle: int) -> nx.DiGraph:
        pointers = pointer_map(torch, _step_buffers(step), [("", step.model)])
        later, _ = read_captured_graph(handle, tmp / f"{stem}-later.dot", pointers)
        return later

    def hooked() -> contextlib.AbstractContextManager[Any]:
        # the hooks the first capture ran under (capture_step); their labels are dropped
        return Attribution(step.model) if warmup is not None else contextlib.nullcontext()

    try:
        later = values.captured_later(torch, step, state, read, hooked)
        # which words are unsteady: the same steps again, the host's stack and heap moved
        first_again, again = values.captured_again(torch, step, state, read, hooked, warmup)
        first = section.get("first") or {}
        report = frozen_values(G, later, again, first_again, set(first.get("nodes") or ()))
        blocks = BlockMap(torch.cuda.memory_snapshot())
        for row in report.frozen:
            if row.kind == "pointer":
                block = blocks.find(row.captured_int)
                row.freed = block is not None and not block.active
        # a failure here leaves ``written`` unknown (None), never the findings unsaid
        with contextlib.suppress(Exception):
            values.mark_unwritten(torch, step, state, report.frozen, blocks)
        G.graph["frozen"] = report.as_dict()
    except Exception as exc:  # the step's code or the GPU: said in the section
        G.graph["frozen"] = {"error": str(exc) if isinstance(exc, CaptureError) else repr(exc)}
        say(f"{stem}: frozen arguments not looked for: {G.graph['frozen']['error']}")


def capture_buckets(
    model: ModelSpec,
    batch_sizes: Iterable[int] = DEFAULT_BUCKETS,
    out_dir: str | os.PathLike[str] = ".",
    **options: Any,
) -> list[Path]:
    """One graph per batch size, each with its own memory pool; writes ``<model>.buckets.json``.

    That file lists each bucket's bundle, replay time, node count and graph memory, the
    padding rule, and under ``updates`` what the driver said when each bucket's executable
    graph was updated with the next bucket's graph (``cudaGraphExecUpdate``): the truth that
    ``graphscope diff`` predicts from the bundles. Options are those of
    :func:`capture_to_bundle`.
    """
    sizes = sorted(set(batch_sizes))
    if not sizes or sizes[0] < 1:
        raise CaptureError(f"batch sizes must be positive integers, got {list(batch_sizes)}")
    name = _model_name(model)
    target = Path(out_dir) / f"{_stem(name)}.buckets.json"
    bundles: list[Path] = []
    entries: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    index: dict[str, Any] = {
        "model": name,
        "padding": PADDING_RULE,
        "buckets": entries,
        "updates": updates,
    }
    say = options.get("progress") or (lambda message: None)
    previous: tuple[int, Any] | None = None
    for size in sizes:
        # The index is made from the graphs as written, not by reading the bundles back.
        path, G, graph = _capture(model, size, out_dir, buckets=sizes, **options)
        t = G.graph["timing"]
        bundles.append(path)
        entries.append(
            {
                "batch_size": size,
                "bundle": path.name,
                "nodes": G.number_of_nodes(),
                "replay_us": t["replay_wall_us"],
                "eager_step_us": t["eager_step_us"],
                "graph_pool_bytes": t["graph_pool_bytes"],
            }
        )
        if previous is not None:
            # Asked while both graphs are fresh, and only the last one is kept: asked at the
            # end, with all four tiny-llama buckets' graphs held, the process died in
            # cuGraphInstantiate on the H200 (a segfault, twice), where two buckets did not.
            say(f"asking the driver whether b{previous[0]}'s executable graph takes b{size}'s")
            try:
                verdict: DriverUpdate | dict[str, str] = driver_update(previous[1], graph)
            except CaptureError as exc:
                verdict = {"error": str(exc)}
            updates.append({"from": previous[0], "to": size, **verdict})
        previous = (size, graph)
        # Rewritten after each bucket: a run that stops part way leaves an index of what it made.
        write_atomic(target, json.dumps(index, indent=1) + "\n")
    return bundles


def inspect_graph(
    graph: Any,
    out_dir: str | os.PathLike[str],
    *,
    name: str = "graph",
    replays: int = 200,
    state: Iterable[Any] = (),
    buffers: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
    command: str | None = None,
    step: Step | None = None,
) -> Path:
    """Read and time a graph someone else captured (vLLM, SGLang, your own engine) as it is.

    ``graph`` is a ``torch.cuda.CUDAGraph`` captured with ``keep_graph=True`` (replayed with
    its own ``replay()``), or a ``cudaGraph_t``/``CUgraph`` handle or its integer value
    (instantiated here and launched on a new stream). Replays run the graph's kernels on its
    buffers as they are: pass the tensors a replay mutates as ``state`` to have them restored,
    and ``buffers`` (name -> tensor) to name pointers in kernel arguments. There is no
    attribution: only the code that captured the graph could say that.

    ``step``, the code the graph was captured from as a :class:`~graphscope.capture.models.
    Step` (its ``run`` one step, eagerly, on the tensors the graph reads), adds what
    ``capture`` says of its own graphs: the step run eagerly and captured anew one step on,
    the first op whose values differ from eager's and the kernel arguments this graph froze
    (``numerics`` and ``frozen``). Its inputs, outputs and model name pointers too, and its
    ``state()`` is restored where ``state`` is not given.
    """
    say = progress or (lambda _msg: None)
    torch = require("torch")
    drv = driver()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = _stem(name)
    cleanup: list[Callable[[], Any]] = []
    handle = graph_handle(graph, name)
    if hasattr(graph, "raw_cuda_graph"):
        replay: Callable[[], Any] = graph.replay
    else:
        exe = check(drv.cuGraphInstantiate(drv.CUgraph(init_value=handle), 0), "cuGraphInstantiate")
        stream = check(drv.cuStreamCreate(0), "cuStreamCreate")
        cleanup += [lambda: drv.cuGraphExecDestroy(exe), lambda: drv.cuStreamDestroy(stream)]

        def replay() -> None:
            check(drv.cuGraphLaunch(exe, stream), "cuGraphLaunch")

    def sync() -> None:
        check(drv.cuCtxSynchronize(), "cuCtxSynchronize")

    try:
        tensors = list(state) or (step.state() if step is not None else [])
        snapshot = State(tensors, step.reset if step is not None else None)
        named = {**(_step_buffers(step) if step is not None else {}), **dict(buffers or {})}
        models = [("", step.model)] if step is not None and step.model is not None else []
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            dot_tmp = Path(tmp) / f"{stem}.dot"
            say(f"{stem}: reading the graph through the driver")
            pointers = pointer_map(torch, named, models)
            G, introspect_s = read_captured_graph(handle, dot_tmp, pointers)
            say(f"{stem}: {G.number_of_nodes()} nodes; timing up to {replays} replays")
            timing = _time_replays(G, replay, sync, snapshot, replays)
            timing["introspect_us_per_node"] = introspect_s / max(G.number_of_nodes(), 1) * 1e6
            if step is not None:
                _compare_with_eager(torch, step, snapshot, G, Path(tmp), stem, say, None)
            G.graph["timing"] = timing
            G.graph.update(_metadata(torch, command), model=name, batch_size=None)
            bundle = _save(G, out, stem, dot_tmp)
    finally:
        for release in cleanup:
            release()
    say(f"{_summary_line(stem, G.graph['timing'])}; wrote {bundle}")
    return bundle
