"""Graph against eager, value by value, and the arguments a capture froze (issue 28).

``compare_with_eager`` answers "does the graph compute what eager computes?" at the step
where it matters: the step after the capture, where a value the capture froze (a position,
an RNG offset, a pointer to a tensor the step makes anew) no longer holds. It captures the
step again with every aten op's outputs copied, right after the op, into buffers of their
own (a ``TorchDispatchMode`` does the copies, so they are nodes of that graph), moves the
program one step on eagerly, replays that graph, then runs the same step eagerly from the
same state and RNG with the same copies made. The first op whose copy differs beyond its
dtype's tolerance is where the graph's result first departs from eager: one replay finds
it, however many nodes the graph has. Where the copies would take more than the memory
budget, ops are compared in windows that fit, and the run stops at the first window with a
difference.

Each op's nodes in the user's graph are found by counting the nodes the capture had before
and after the op (``cudaStreamGetCaptureInfo``): the capture of the same code creates them
in the same order. Where the counts do not add up to the graph's nodes, no node is named.

``captured_later`` captures the step once more, one step on, and reads it as the first was
read: ``graphscope.analysis.numerics.frozen_values`` compares the two. Neither raises: a
failure becomes the section's ``error``, and the capture goes on.
"""

from __future__ import annotations

import contextlib
import ctypes
import difflib
import math
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from graphscope.analysis.numerics import Difference, Frozen, tolerance
from graphscope.errors import CaptureError

from ._cuda import check, runtime
from .attribution import (
    dispatch_mode,
    generated_code_dirs,
    library_paths,
    module_at,
    module_names,
)
from .sites import Frames

#: The share of the GPU's free memory the copies of one window may take.
BUDGET_SHARE = 0.25
#: Outputs compared after the first difference, to say how far it spreads (ops).
SPREAD_LIMIT = 100_000
#: Ops whose outputs hold whatever the memory held: a graph's differ from eager's by where
#: the allocator put them, not by what either computed. Not compared.
UNDEFINED = frozenset(
    {
        "aten::empty",
        "aten::empty_like",
        "aten::empty_strided",
        "aten::new_empty",
        "aten::new_empty_strided",
        "aten::resize_",
        "aten::set_",
    }
)
#: Outputs, by the name the op's schema gives them, that are no result: the RNG's seed and
#: offset (a graph keeps them as device tensors that each replay advances, eager as plain
#: values) and a mask only a debug run fills (``_scaled_dot_product_*_attention``).
BOOKKEEPING = frozenset({"philox_seed", "philox_offset", "rng_state", "debug_attn_mask"})


@dataclass
class Kept:
    """One output of one op, as the tape saw it."""

    index: int  # the op's place in the step's order of aten ops
    output: int  # which of its outputs
    op: str  # "aten::mm"
    module: str | None
    site: str | None  # file:line in function
    value: Any  # the copy (a tensor)


class OpTape:
    """Every aten op of a step, in order, with copies of its outputs in ``window``.

    An output that is a view of an input is not copied: its values are its input's, already
    kept. An output written in place (``add_``, ``index_copy_``) is: its value after the op
    is not the value at the end of the step.
    """

    def __init__(
        self,
        torch: Any,
        names: dict[int, str],
        frames: Frames,
        window: tuple[int, int] | None,
        count_nodes: Callable[[], int | None] | None = None,
        device: str = "cuda",
    ) -> None:
        self.torch = torch
        self.device = device
        self.names = names
        self.frames = frames
        self.window = window  # None: copy nothing, only note ops and their sizes
        self.count_nodes = count_nodes
        self.ops: list[str] = []
        self.nodes: list[int | None] = []  # nodes each op created in a capture
        self.bytes: list[int] = []  # bytes each op's outputs would take copied
        self.kept: list[Kept] = []

    def _learn(self, module: Any, outermost: Any) -> str:
        if id(outermost) not in self.names:
            self.names.update(module_names(outermost))
        return self.names.get(id(module)) or type(module).__name__

    def _where(self) -> tuple[str | None, str | None]:
        frame = sys._getframe(1)
        module = module_at(frame, self.torch.nn.Module, self.names, self._learn)
        user, _ = self.frames.origin(frame)
        if user is None:
            return module, None
        code = user.f_code
        return module, f"{Path(code.co_filename).name}:{user.f_lineno} in {code.co_name}"

    def record(self, func: Any, out: Any, before: int | None) -> None:
        index = len(self.ops)
        self.ops.append(func._schema.name)
        after = self.count_nodes() if self.count_nodes is not None else None
        self.nodes.append(None if before is None or after is None else after - before)
        returns = func._schema.returns
        outputs = out if isinstance(out, (tuple, list)) else [out]
        tensor = self.torch.Tensor
        size = 0
        keep = self.window is not None and self.window[0] <= index < self.window[1]
        keep = keep and func._schema.name not in UNDEFINED
        where: tuple[str | None, str | None] | None = None
        for j, value in enumerate(outputs):
            if not isinstance(value, tensor) or value.device.type != self.device:
                continue
            if not value.numel():
                continue
            described = returns[min(j, len(returns) - 1)] if returns else None
            info = described.alias_info if described is not None else None
            if info is not None and not info.is_write:
                continue  # a view: its input's values
            if described is not None and described.name in BOOKKEEPING:
                continue
            size += value.numel() * value.element_size()
            if keep:
                if where is None:
                    where = self._where()
                copy = value.detach().clone()
                self.kept.append(Kept(index, j, func._schema.name, *where, copy))
        self.bytes.append(size)

    @contextlib.contextmanager
    def active(self) -> Iterator[OpTape]:
        def run(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            before = self.count_nodes() if self.count_nodes is not None else None
            out = func(*args, **kwargs)
            self.record(func, out, before)
            return out

        with dispatch_mode(run):
            yield self


class CaptureCounter:
    """Nodes in the graph the current stream is capturing into, or None; ``problem`` says
    why, the first time it could not tell."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.rt = runtime()
        self.problem: str | None = None

    def _failed(self, why: str) -> None:
        if self.problem is None:
            self.problem = why

    def __call__(self) -> int | None:
        rt = self.rt
        try:
            stream = self.torch.cuda.current_stream().cuda_stream
            info = rt.cudaStreamGetCaptureInfo(stream)
            if int(info[0]) != 0 or len(info) < 4:
                self._failed(f"cudaStreamGetCaptureInfo answered {info[0]!r}")
                return None
            got = rt.cudaGraphGetNodes(info[3], 0)
            if int(got[0]) != 0:
                self._failed(f"cudaGraphGetNodes answered {got[0]!r}")
                return None
            return int(got[-1])
        except Exception as exc:  # a binding of another signature: said once, never raised
            self._failed(f"{type(exc).__name__}: {exc}")
            return None


def capture_counter(torch: Any) -> CaptureCounter:
    """Nodes in the graph the current stream is capturing into (``CaptureCounter``)."""
    return CaptureCounter(torch)


def _difference(torch: Any, graph: Any, eager: Any) -> Difference | None:
    """How ``graph`` differs from ``eager`` beyond the dtype's tolerance, or None."""
    dtype = str(eager.dtype).removeprefix("torch.")
    shape = [int(n) for n in eager.shape]
    if graph.shape != eager.shape or graph.dtype != eager.dtype:
        return Difference(dtype, shape, None, None, eager.numel(), [], "", "")
    tol = tolerance(dtype)
    if tol is None or not (eager.is_floating_point() or eager.is_complex()):
        bad = graph != eager
        a, b = graph, eager
    else:
        a, b = graph.float(), eager.float()
        bad = ~torch.isclose(a, b, rtol=tol[0], atol=tol[1], equal_nan=True)
    count = int(bad.sum())
    if not count:
        return None
    flat = int(bad.reshape(-1).nonzero()[0][0])
    index = []
    for n in reversed(shape):
        index.append(flat % n if n else 0)
        flat //= n if n else 1
    index.reverse()
    a64, b64 = a.double(), b.double()
    gap = float((a64 - b64).abs()[bad].max())
    finite = math.isfinite(gap)
    scale = float(torch.nan_to_num(b64.abs(), nan=0.0, posinf=0.0, neginf=0.0).max()) or 1.0
    at = tuple(index)
    return Difference(
        dtype,
        shape,
        gap if finite else None,
        gap / scale if finite else None,
        count,
        index,
        f"{float(a64[at]):.6g}",
        f"{float(b64[at]):.6g}",
    )


def _windows(sizes: list[int], budget: int) -> list[tuple[int, int]]:
    """Runs of ops whose copies fit ``budget`` (an op larger than it stands alone)."""
    out: list[tuple[int, int]] = []
    start, used = 0, 0
    for i, size in enumerate(sizes):
        if used and used + size > budget:
            out.append((start, i))
            start, used = i, 0
        used += size
    out.append((start, len(sizes)))
    return out


def _nodes_of(G: nx.DiGraph, counts: list[int | None]) -> list[list[str]] | None:
    """Each op's nodes in ``G``'s root graph, from the nodes each created in the capture;
    None where the counts are unknown or do not add up to the graph's nodes."""
    if any(c is None for c in counts):
        return None
    roots = G.graph.get("root_graph_ids") or []
    if len(roots) != 1:
        return None
    order = sorted(
        (d.get("local_id", 0), k) for k, d in G.nodes(data=True) if d.get("graph_id") == roots[0]
    )
    keys = [k for _, k in order]
    if sum(c or 0 for c in counts) != len(keys):
        return None
    out, at = [], 0
    for c in counts:
        out.append(keys[at : at + (c or 0)])
        at += c or 0
    return out


class _Run:
    """What one window's run gives: the two tapes and the step's final tensors."""

    def __init__(self, graph: OpTape, eager: OpTape, finals: list[tuple[str, Any, Any]]) -> None:
        self.graph, self.eager, self.finals = graph, eager, finals


def compare_with_eager(
    torch: Any,
    step: Any,
    state: Any,
    G: nx.DiGraph,
    say: Callable[[str], None] = lambda _m: None,
    budget: int | None = None,
) -> dict[str, Any]:
    """The bundle's ``numerics`` section (``graphscope.analysis.numerics``); never raises."""
    start = time.perf_counter()
    try:
        section = _compare(torch, step, state, G, say, budget)
    except CaptureError as exc:
        section = {"error": str(exc)}
    except Exception as exc:  # the step's own code or the GPU: said, never raised
        section = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        with contextlib.suppress(Exception):
            torch.cuda.synchronize()
            state.restore()
    section["seconds"] = time.perf_counter() - start
    return section


def _compare(
    torch: Any,
    step: Any,
    state: Any,
    G: nx.DiGraph,
    say: Callable[[str], None],
    budget: int | None,
) -> dict[str, Any]:
    names = module_names(step.model) if step.model is not None else {}
    frames = Frames(library_paths(torch), generated_code_dirs)
    sync = torch.cuda.synchronize
    # A dry eager run learns the ops and what their copies would take.
    state.restore()
    dry = OpTape(torch, names, frames, None)
    with torch.no_grad(), dry.active():
        step.run()
    sync()
    state.restore()
    if budget is None:
        free, _ = torch.cuda.mem_get_info()
        budget = int(free * BUDGET_SHARE)
    windows = _windows(dry.bytes, budget)
    section: dict[str, Any] = {
        "at": "the step after the capture's, replayed and run eagerly from one state and RNG",
        "ops": len(dry.ops),
        "copied_bytes": sum(dry.bytes),
        "windows": len(windows),
        "tolerances": {},
        "outputs": [],
        "first": None,
        "differing_ops": 0,
        "compared": 0,
        "notes": [],
    }
    first_run = True
    for number, window in enumerate(windows, 1):
        if len(windows) > 1:
            say(
                f"comparing ops {window[0]:,}..{window[1] - 1:,} "
                f"(window {number} of {len(windows)})"
            )
        run = _run(torch, step, state, names, frames, window)
        if first_run:
            section["outputs"] = _finals(torch, run.finals, section)
            section["nodes_per_op_known"] = all(c is not None for c in run.graph.nodes)
            counter = run.graph.count_nodes
            if not section["nodes_per_op_known"] and isinstance(counter, CaptureCounter):
                section["notes"].append(
                    f"each op's nodes in the graph are not known: {counter.problem}"
                )
            first_run = False
        found = _first(torch, run, G, section)
        del run
        if found:
            break
    if section["first"] is None and not any(o["difference"] for o in section["outputs"]):
        section["notes"].append("the graph's outputs and every op's outputs agree with eager")
    return section


def _run(
    torch: Any,
    step: Any,
    state: Any,
    names: dict[int, str],
    frames: Frames,
    window: tuple[int, int],
) -> _Run:
    sync = torch.cuda.synchronize
    state.restore()
    counter = capture_counter(torch)
    tape_graph = OpTape(torch, names, frames, window, counter)
    graph = torch.cuda.CUDAGraph()
    generators = [g.clone_state() for g in torch.cuda.default_generators]
    try:
        # The tape inside the capture: torch.cuda.graph's own entry and exit run aten ops
        # the eager step does not, which put the two tapes out of step.
        with torch.no_grad(), torch.cuda.graph(graph), tape_graph.active():
            step.run()
    except Exception as exc:
        for g, saved in zip(torch.cuda.default_generators, generators, strict=True):
            g.graphsafe_set_state(saved)
        raise CaptureError(
            f"the step with every op's outputs copied could not be captured ({exc})"
        ) from None
    sync()
    # One step on, eagerly: the graph now runs where its captured values are a step old.
    state.restore()
    with torch.no_grad():
        step.run()
    sync()
    at = [t.detach().clone() for t in state.tensors]
    rng = torch.cuda.get_rng_state()
    graph.replay()
    sync()
    named = [(f"output:{k}", t) for k, t in step.outputs.items()]
    named += [(f"state {i}", t) for i, t in enumerate(state.tensors)]
    after_graph = [t.detach().clone() for _, t in named]
    for tensor, saved in zip(state.tensors, at, strict=True):
        tensor.copy_(saved)
    torch.cuda.set_rng_state(rng)
    tape_eager = OpTape(torch, names, frames, window)
    with torch.no_grad(), tape_eager.active():
        step.run()
    sync()
    finals = [(n, g, t.detach().clone()) for (n, t), g in zip(named, after_graph, strict=True)]
    del graph
    return _Run(tape_graph, tape_eager, finals)


def _finals(torch: Any, finals: list[tuple[str, Any, Any]], section: dict[str, Any]) -> list[Any]:
    out = []
    for name, graph, eager in finals:
        diff = _difference(torch, graph, eager)
        dtype = str(eager.dtype).removeprefix("torch.")
        section["tolerances"].setdefault(dtype, tolerance(dtype))
        out.append({"name": name, "difference": None if diff is None else vars(diff)})
    return out


def _first(torch: Any, run: _Run, G: nx.DiGraph, section: dict[str, Any]) -> bool:
    """Compare a window's copies; set the section's first difference. True: one found."""
    g_ops, e_ops = run.graph.ops, run.eager.ops
    pairs: dict[int, int]
    if g_ops == e_ops:
        pairs = {i: i for i in range(len(g_ops))}
    else:
        section["notes"].append(
            f"the graph's capture ran {len(g_ops):,} aten ops and the eager step "
            f"{len(e_ops):,}: they were paired by op name"
        )
        matcher = difflib.SequenceMatcher(None, g_ops, e_ops, autojunk=False)
        pairs = {}
        for tag, i1, i2, j1, _ in matcher.get_opcodes():
            if tag == "equal":
                pairs.update({i1 + k: j1 + k for k in range(i2 - i1)})
    eager = {(k.index, k.output): k for k in run.eager.kept}
    nodes = _nodes_of(G, run.graph.nodes)
    counted = [c for c in run.graph.nodes if c is not None]
    if nodes is None and len(counted) == len(run.graph.nodes):
        note = (
            f"the ops' captures made {sum(counted):,} nodes and the graph has "
            f"{G.number_of_nodes():,}: no op's nodes are named"
        )
        if note not in section["notes"]:
            section["notes"].append(note)
    found = False
    for kept in run.graph.kept:
        other = eager.get((pairs.get(kept.index, -1), kept.output))
        if other is None:
            continue
        section["compared"] += 1
        dtype = str(other.value.dtype).removeprefix("torch.")
        section["tolerances"].setdefault(dtype, tolerance(dtype))
        diff = _difference(torch, kept.value, other.value)
        if diff is None:
            continue
        section["differing_ops"] += 1
        if section["first"] is None:
            section["first"] = {
                "index": kept.index,
                "output": kept.output,
                "op": kept.op,
                "module": kept.module,
                "site": kept.site,
                "nodes": nodes[kept.index] if nodes is not None else [],
                "difference": vars(diff),
            }
            found = True
        if section["differing_ops"] >= SPREAD_LIMIT:
            break
    if nodes is None and found:
        section["notes"].append(
            "the nodes each op created could not be counted in the capture, or did not add "
            "up to the graph's: the first difference names its op and line, not its node"
        )
    return found


#: C frames put under each further capture of the later step (``at_depth``).
AGAIN_DEPTHS = (48, 112)

#: Sizes of the host heap blocks taken during the second further capture (``heap_moved``):
#: the small ones C++ temporaries (shape and stride vectors, argument lists) are made in.
HEAP_SIZES = tuple(range(16, 1025, 16))
HEAP_BLOCKS = 32  # per size: past glibc's per-thread cache (7) and its fast bins
#: Larger blocks (C++ objects such as a graph's or a pool's), fewer of each.
HEAP_LARGE = tuple(1 << n for n in range(11, 17))
HEAP_LARGE_BLOCKS = 8


def at_depth(levels: int, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` called ``levels`` C-to-Python calls deeper on the host's stack.

    Kernel arguments passed by value are host structs that PyTorch's launch code builds on
    its C++ stack, and the slots of them it does not fill (an offset table's slots past the
    tensor's dims) keep whatever that stack memory held. Those bytes repeat when the same step
    is captured twice along the same path (an H100 run: 494 such words on tiny-gpt at batch 2,
    4,763 on tiny-llama, all the same in both later captures), so the further captures are
    made deeper on the stack, where they hold something else and show as unsteady."""
    if levels <= 0:
        return fn(*args)
    # map() calls the lambda from C: each level is one more C frame under the capture
    return next(map(lambda _: at_depth(levels - 1, fn, *args), (0,)))


def heap_moved(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` with many blocks of the host's heap taken, and given back after.

    Some unfilled slots hold the address of a C++ temporary an earlier launch made and freed:
    the allocator hands the same block back along the same path, so those words repeat from
    capture to capture however deep the stack is (an H100 run, after ``at_depth``: 8 words on
    tiny-gpt at batch 2, 63 on tiny-llama, all host heap addresses). With the blocks the
    allocator would reuse taken, the temporaries live elsewhere and those words change."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    taken = [libc.malloc(size) for size in HEAP_SIZES for _ in range(HEAP_BLOCKS)]
    taken += [libc.malloc(size) for size in HEAP_LARGE for _ in range(HEAP_LARGE_BLOCKS)]
    try:
        return fn(*args)
    finally:
        for block in taken:
            if block:
                libc.free(block)


def captured_again(
    torch: Any,
    step: Any,
    state: Any,
    read: Callable[[int], nx.DiGraph],
    around: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
    warmup: int | None = 0,
) -> tuple[list[nx.DiGraph], list[nx.DiGraph]]:
    """Further captures with the host's stack and heap laid out otherwise: (the first step
    again, the later step twice again). Bytes no launch fills differ between these and the
    capture of the same step, and are unsteady; a value the graph froze does not. The first
    step is the one ``warmup`` steps after ``state``'s snapshot, as the first capture was;
    None: a graph captured elsewhere, whose step cannot be made again (none then).

    The first step again catches the unfilled words that point at host objects made once
    between the first capture and the later ones: they repeat in every later capture (an H100
    run, after the stack and heap were moved: 2 words on tiny-gpt at batch 2, 28 on
    tiny-llama)."""
    shallow, deep = AGAIN_DEPTHS
    first = []
    if warmup is not None:
        first.append(
            heap_moved(at_depth, shallow, captured_later, torch, step, state, read, around, warmup)
        )
    return first, [
        at_depth(shallow, captured_later, torch, step, state, read, around),
        heap_moved(at_depth, deep, captured_later, torch, step, state, read, around),
    ]


def captured_later(
    torch: Any,
    step: Any,
    state: Any,
    read: Callable[[int], nx.DiGraph],
    around: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
    steps_on: int = 1,
) -> nx.DiGraph:
    """The step captured after ``steps_on`` eager steps from ``state``'s snapshot, read by
    ``read(handle)``: 1 gives a step other than the first capture's (which followed the
    warm-up from the same snapshot), the warm-up's count gives the first capture's step
    again. Called again, it gives further captures of the same step (``frozen_values``'
    ``again`` and ``first_again``).

    ``around()`` is entered around the capture as it was around the first: the unfilled
    slots of a launch's argument structs hold what earlier code left on the host's stack,
    and a capture under other Python hooks (the first one's dispatch mode and labeller) leaves
    other bytes there (an H100 run: 155 to 3,173 such words on a clean model, compared with
    captures made without them)."""
    state.restore()
    for _ in range(steps_on):
        with torch.no_grad():
            step.run()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    generators = [g.clone_state() for g in torch.cuda.default_generators]
    try:
        with around(), torch.cuda.graph(graph):
            step.run()
    except Exception as exc:
        for g, saved in zip(torch.cuda.default_generators, generators, strict=True):
            g.graphsafe_set_state(saved)
        raise CaptureError(f"the step could not be captured again ({exc})") from None
    torch.cuda.synchronize()
    try:
        return read(int(graph.raw_cuda_graph()))
    finally:
        del graph
        state.restore()


#: Bytes of a moved pointer's old buffer compared before and after one more eager step.
PEEK_BYTES = 1 << 16


def mark_unwritten(torch: Any, step: Any, state: Any, rows: list[Frozen], blocks: Any) -> None:
    """Set ``written`` on each moved pointer whose old memory is still allocated: whether one
    more eager step changes its bytes (up to ``PEEK_BYTES`` from where it points, within its
    allocator block). False: nothing the step does writes the buffer the graph reads, so every
    replay reads what it held at capture."""
    spans: list[tuple[Frozen, int, int]] = []
    for row in rows:
        block = blocks.find(row.captured_int) if row.kind == "pointer" else None
        if block is None or not block.active:
            continue
        size = min(PEEK_BYTES, block.start + block.size - row.captured_int)
        if size > 0:
            spans.append((row, row.captured_int, size))
    if not spans:
        return
    state.restore()
    torch.cuda.synchronize()
    before = [_peek(at, size) for _, at, size in spans]
    try:
        with torch.no_grad():
            step.run()
        torch.cuda.synchronize()
        for (row, at, size), was in zip(spans, before, strict=True):
            row.written = _peek(at, size) != was
    finally:
        state.restore()


def _peek(address: int, size: int) -> bytes:
    """``size`` bytes of device memory at ``address``, copied to the host."""
    rt = runtime()
    buffer = ctypes.create_string_buffer(size)
    kind = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
    check(rt.cudaMemcpy(ctypes.addressof(buffer), address, size, kind), "cudaMemcpy")
    return buffer.raw
