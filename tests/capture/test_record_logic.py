"""The parts of ``graphscope record`` that need no GPU: sampling, joining records, frames."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import Any, ClassVar

import pytest
from graphscope.capture import sites
from graphscope.capture.attribution import make_labels, raw_label
from graphscope.capture.record.lives import Capture, Life, pool_id, rerecord_reason, shape_changes
from graphscope.capture.sampling import Replays, Schedule

from graphscope.recording import Settings

EXEC = 7 << 32  # CUPTI's graph node id: (exec id << 32) | local id


def test_the_first_launches_of_each_graph_then_a_window_every_few_seconds() -> None:
    schedule = Schedule(Settings(first=2, every_s=1.0, window=2), now_s=0.0)
    launches = [(0, 0.0), (1, 0.1), (2, 0.2), (2, 0.9), (2, 1.1), (3, 1.2), (4, 1.3), (4, 1.5)]
    assert [schedule.wants(n, t) for n, t in launches] == [
        True,
        True,
        False,
        False,
        True,
        True,
        False,
        False,
    ]
    assert schedule.windows == 1
    assert schedule.wants(4, 2.2) and schedule.windows == 2
    off = Schedule(Settings(first=1, every_s=0, window=5), now_s=0.0)
    assert [off.wants(n, 100.0 * n) for n in range(3)] == [True, False, False]


def _replay(replays: Replays, correlation: int, start: int, nodes: int = 3) -> None:
    for local in range(nodes):
        replays.add(EXEC | local, start + 10 * local, start + 10 * local + 4, correlation)
    replays.cpu_launch_ns[correlation] = 5000


def test_replays_are_told_apart_by_their_launch_and_partial_ones_are_left_out() -> None:
    replays = Replays()
    for i, correlation in enumerate((11, 12, 13, 14)):
        _replay(replays, correlation, 1000 * i)
    replays.skip.add(11)  # the launch that carried CUPTI's setup
    _replay(replays, 15, 9000, nodes=2)  # cut at a window's edge
    assert replays.count == 4
    timing, summary = replays.copy().timing({0: "a", 1: "b", 2: "c"})
    assert summary["replays"] == 3 and summary["partial_replays"] == 1
    assert summary["replay_us"] == 0.024 and summary["cpu_launch_us"] == 5.0
    assert timing.nodes["a"]["count"] == 3 and timing.nodes["a"]["median_us"] == 0.004
    assert timing.unjoined == 0 and timing.missing == []


def test_without_launch_ids_each_nodes_records_are_taken_in_order() -> None:
    replays = Replays()
    for i in range(3):
        _replay(replays, 0, 1000 * i)  # one correlation id for all: no way to tell launches
    timing, summary = replays.timing({0: "a", 1: "b", 2: "c"})
    assert summary["replays"] == 3 and summary["cpu_launch_us"] is None
    assert all(stats["count"] == 3 for stats in timing.nodes.values())


def _capture(**inputs: list[int]) -> Capture:
    entries = [{"input": int(k[1:]), "shape": v, "dtype": "int64"} for k, v in inputs.items()]
    return Capture(began_ns=0, site=None, capturer="inductor", inputs=entries)


def test_a_graph_recorded_again_says_which_inputs_changed() -> None:
    before, after = _capture(i0=[1, 1], i4=[1]), _capture(i0=[2, 1], i4=[1])
    assert shape_changes(before, after) == [{"input": 0, "from": [1, 1], "to": [2, 1]}]
    life = Life("g5", 5, 1, after, 0, None, shape_changes=shape_changes(before, after))
    assert rerecord_reason(before, after, life) == "new input shapes"
    same = Life("g8", 8, 1, before, 0, None)
    assert rerecord_reason(before, _capture(i0=[1, 1], i4=[1]), same) == "same input shapes"
    recompiled = _capture(i0=[1, 1], i4=[1])
    before.function, recompiled.function = "FunctionID(id=0)", "FunctionID(id=1)"
    assert "compiled the function again" in str(rerecord_reason(before, recompiled, same))
    unknown = Capture(began_ns=0, site=None, capturer="torch.cuda.graph")
    assert rerecord_reason(unknown, after, same) is None


def test_memory_pool_ids_in_every_form_torch_takes_them() -> None:
    assert pool_id((0, 3)) == (0, 3)
    assert pool_id(((0, 3),)) == (0, 3)  # older torch keeps (pool,)
    assert pool_id(SimpleNamespace(id=(1, 2))) == (1, 2)  # torch.cuda.MemPool
    assert pool_id(()) is None and pool_id(None) is None and pool_id("x") is None


def test_tensor_inputs_leave_static_ones_out_and_give_the_batch() -> None:
    def tensor(*shape: int) -> Any:
        return SimpleNamespace(shape=shape, dtype="torch.float16")

    values = [tensor(4096, 512), tensor(8, 1), 3, tensor(1)]
    inputs = sites.tensor_inputs(values, static={0})
    assert inputs == [
        {"input": 1, "shape": [8, 1], "dtype": "float16"},
        {"input": 3, "shape": [1], "dtype": "float16"},
    ]
    assert sites.batch_of(inputs) == 8
    assert sites.batch_of([{"input": 0, "shape": [], "dtype": "int64"}]) is None


def _frame_in(path: Path, source: str, call: str) -> FrameType:
    """The frame of ``call`` run from code whose file is ``path`` (written there)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    namespace: dict[str, Any] = {"grab": lambda: sys._getframe(1)}
    exec(compile(source, str(path), "exec"), namespace)
    frame: FrameType = namespace[call]()
    return frame


def test_frames_find_the_users_line_the_programs_line_and_the_capturer(tmp_path: Path) -> None:
    library = tmp_path / "lib" / "torch"
    installed = tmp_path / "site-packages" / "transformers" / "generation.py"
    user = tmp_path / "app" / "serve.py"
    engine = tmp_path / "lib" / "torch" / "_inductor" / "cudagraph_trees.py"
    graphs = tmp_path / "lib" / "torch" / "cuda" / "graphs.py"
    # serve.py calls generate() in transformers, which calls Inductor, which calls the graph
    namespace: dict[str, Any] = {}
    chain = [
        (graphs, "def capture():\n    return grab()\n"),
        (engine, "def _record():\n    return capture()\n"),
        (installed, "def generate():\n    return _record()\n"),
        (user, "def main():\n    return generate()\n"),
    ]
    namespace["grab"] = lambda: sys._getframe(1)
    for path, source in chain:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        exec(compile(source, str(path), "exec"), namespace)
    frame = namespace["main"]()
    frames = sites.Frames((str(library) + "/",))
    assert frames.user_frame(frame).f_code.co_name == "generate"  # outside torch
    assert frames.program_frame(frame).f_code.co_name == "main"  # outside installed packages
    assert sites.capturer(frame) == "inductor"  # though torch.cuda.graph is innermost
    assert sites.site(frames.user_frame(frame)) == {
        "file": str(installed),
        "line": 2,
        "function": "generate",
    }
    assert sites.capturer(
        _frame_in(tmp_path / "plain.py", "def f():\n    return grab()\n", "f")
    ) == ("stream capture")


_GENERATED = """def call():
    buf0 = None
    # Topologically Sorted Source Nodes: [linear, silu], Original ATen: [aten.mm, aten.silu]
    stream0 = buf0
    return grab()
"""


def test_compiled_code_names_what_each_kernel_call_fuses(tmp_path: Path) -> None:
    cache = tmp_path / "torchinductor_root"
    frame = _frame_in(cache / "ab" / "cabc.py", _GENERATED, "call")
    frames = sites.Frames((), lambda: (str(cache) + "/",))

    def label(at: FrameType) -> Any:  # as the node-created callback notes it, made a Label
        return make_labels(frames, [raw_label(frames, EXEC, None, None, at)])[EXEC]

    assert label(frame)["compiled"] == {
        "source_nodes": "linear, silu",
        "aten": "aten.mm, aten.silu",
    }
    assert frames.user_frame(frame) is not frame  # generated code is never the user's line
    plain = _frame_in(tmp_path / "user.py", "def f():\n    return grab()\n", "f")
    assert "compiled" not in label(plain)


def test_inductor_s_cache_folder_is_asked_only_once_the_program_imports_inductor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asking Inductor where its cache is imports Inductor and torch._dynamo: seconds added to
    every recorded process. The recorder asks once the program has imported Inductor itself,
    and frames of the cache folder count as library from then on."""
    import types

    from graphscope.capture import attribution

    monkeypatch.setattr(attribution, "_generated", None)
    for name in ("torch", "torch._inductor", "torch._inductor.runtime"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    imported: list[str] = []

    class Finder:  # stands for torch: any import of it is seen, and refused
        def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
            if name.split(".")[0] == "torch":
                imported.append(name)
                raise ImportError(name)

    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    cache = tmp_path / "torchinductor_me"
    generated = _frame_in(cache / "xy" / "cxy.py", "def call():\n    return grab()\n", "call")
    frames = sites.Frames((), attribution.generated_code_dirs)
    assert attribution.generated_code_dirs() == () and imported == []
    assert frames.user_frame(generated) is generated

    utils = types.ModuleType("torch._inductor.runtime.cache_dir_utils")
    utils.cache_dir = lambda: str(cache)  # type: ignore[attr-defined]
    for name in ("torch", "torch._inductor", "torch._inductor.runtime"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, utils.__name__, utils)
    assert attribution.generated_code_dirs() == (str(cache) + "/",)
    later = _frame_in(cache / "zw" / "czw.py", "def call():\n    return grab()\n", "call")
    assert frames.user_frame(later) is not later


def test_the_gpu_and_driver_are_read_from_the_driver_s_files_without_nvidia_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphscope.capture import environment

    (tmp_path / "gpus" / "0000:1a:00.0").mkdir(parents=True)
    (tmp_path / "gpus" / "0000:09:00.0").mkdir(parents=True)
    (tmp_path / "version").write_text(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
        "(dvs-builder@U22-I3-AM02-24-3)  Wed Nov 19 02:08:26 UTC 2025\nGCC version:  gcc 12.3\n"
    )
    (tmp_path / "gpus" / "0000:09:00.0" / "information").write_text(
        "Model: \t\t NVIDIA H200\nIRQ:   \t\t 123\nBus Location: \t 0000:09:00.0\n"
    )
    (tmp_path / "gpus" / "0000:1a:00.0" / "information").write_text("Model: \t\t NVIDIA H100\n")
    monkeypatch.setattr(environment, "_PROC", tmp_path)
    assert environment._from_proc() == {"device": "NVIDIA H200", "driver": "580.159.04"}
    (tmp_path / "version").write_text("something else\n")
    assert environment._from_proc() is None  # then nvidia-smi is asked
    monkeypatch.setattr(environment, "_PROC", tmp_path / "absent")
    assert environment._from_proc() is None


def _dtype(fields: dict[str, tuple[str, int, int]], itemsize: int) -> SimpleNamespace:
    """A stand-in for one of cupti-python's numpy record dtypes: name -> (kind, size, offset)."""
    return SimpleNamespace(
        fields={
            name: (SimpleNamespace(kind=kind, itemsize=size), offset)
            for name, (kind, size, offset) in fields.items()
        },
        itemsize=itemsize,
    )


def test_activity_records_are_read_in_place_at_their_layout_s_offsets() -> None:
    import ctypes
    import struct

    from graphscope.capture.activities import Reader, layout

    kernel = _dtype(
        {
            "kind": ("i", 4, 0),
            "cache_config": ("V", 1, 4),  # a nested field: not read
            "start": ("u", 8, 16),
            "end": ("u", 8, 24),
            "correlation_id": ("u", 4, 92),
            "name": ("i", 8, 104),
            "graph_node_id": ("u", 8, 144),
            "padding3": ("V", 7, 209),
        },
        216,
    )
    memset = _dtype({"kind": ("i", 4, 0), "value": ("u", 4, 4), "start": ("u", 8, 16)}, 88)
    reader = Reader({10: layout("CONCURRENT_KERNEL", kernel), 2: layout("MEMSET", memset)})
    name = ctypes.create_string_buffer(b"void gemm<float>(float*)")
    buffer = bytearray(216 + 88 + 88 + 216)
    struct.pack_into("<i", buffer, 0, 10)
    struct.pack_into("<QQ", buffer, 16, 1000, 1500)
    struct.pack_into("<I", buffer, 92, 77)
    struct.pack_into("<q", buffer, 104, ctypes.addressof(name))
    struct.pack_into("<Q", buffer, 144, (5 << 32) | 3)
    struct.pack_into("<iI", buffer, 216, 2, 0xAB)
    struct.pack_into("<Q", buffer, 216 + 16, 2000)
    struct.pack_into("<i", buffer, 304, 99)  # a kind without a layout: left out
    struct.pack_into("<i", buffer, 392, 10)  # a kernel with no name pointer
    records = reader.records(memoryview(buffer), iter([0, 216, 304, 392]))
    assert records == [
        {
            "kind": "concurrent_kernel",
            "start": 1000,
            "end": 1500,
            "correlation_id": 77,
            "name": "void gemm<float>(float*)",
            "graph_node_id": (5 << 32) | 3,
        },
        {"kind": "memset", "value": 0xAB, "start": 2000},
        {"kind": "concurrent_kernel", "start": 0, "end": 0, "correlation_id": 0}
        | {"graph_node_id": 0},
    ]


def test_a_clones_dump_is_renamed_as_the_graph_it_copies(tmp_path: Path) -> None:
    from graphscope.capture.grab import _rename_graph

    dot = tmp_path / "clone.dot"
    dot.write_text(
        'digraph dot {\nsubgraph cluster_12 {\nlabel="graph_12" graph[style="dashed"];\n'
        '"graph_12_node_0"[label="{KERNEL}"];\n"graph_12_node_1"[label="{KERNEL}"];\n'
        '"graph_12_node_0" -> "graph_12_node_1";\n'
        '"graph_120_node_0"[label="{KERNEL}"];\n}\n}\n'
    )
    _rename_graph(dot, 12, 3)
    text = dot.read_text()
    assert "subgraph cluster_3 {" in text and 'label="graph_3"' in text
    assert '"graph_3_node_0" -> "graph_3_node_1"' in text
    assert "graph_12_" not in text and "cluster_12" not in text and 'label="graph_12"' not in text
    assert '"graph_120_node_0"' in text  # another graph's id that begins with the same digits


def test_callback_data_is_read_at_cupti_pythons_own_offsets() -> None:
    # The recorder reads CUPTI's callback structs in place (capture/callbacks.py); the
    # offsets must be those of the CUPTI cupti-python was built for.
    cupti = pytest.importorskip("cupti.cupti")
    from graphscope.capture import callbacks

    api = cupti.callback_data_dtype.fields
    assert api["callback_site"][1] == callbacks._SITE_OFFSET
    assert api["function_name"][1] == callbacks._NAME_OFFSET
    assert api["function_params"][1] == callbacks._PARAMS_OFFSET
    assert api["function_return_value"][1] == callbacks._RETURN_OFFSET
    assert api["correlation_id"][1] == callbacks._CORRELATION_OFFSET
    assert (
        cupti.resource_data_dtype.fields["resource_descriptor"][1] == callbacks._DESCRIPTOR_OFFSET
    )
    graph = cupti.graph_data_dtype.fields
    assert graph["graph"][1] == callbacks._GRAPH_OFFSET
    assert graph["node"][1] == callbacks._NODE_OFFSET
    assert graph["graph_exec"][1] == callbacks._EXEC_OFFSET
    assert int(cupti.ApiCallbackSite.API_EXIT) == 1  # what callbacks.is_exit compares with


def test_graph_callback_data_read_in_place() -> None:
    import ctypes

    from graphscope.capture import callbacks

    graph_data = (ctypes.c_uint64 * 7)(0x1000, 0, 0x2000, 0, 0, 0, 0x3000)
    resource = (ctypes.c_uint64 * 3)(0, 0, ctypes.addressof(graph_data))
    data = callbacks.CallbackData(ctypes.addressof(resource))
    assert callbacks.graph_data(data) == (0x1000, 0x2000, 0x3000)
    api = (ctypes.c_uint32 * 18)()
    api[0], api[16] = 1, 4242  # callbackSite: API_EXIT; correlationId
    call = callbacks.CallbackData(ctypes.addressof(api))
    assert callbacks.is_exit(call) and callbacks.correlation_id(call) == 4242
    api[0] = 0
    assert not callbacks.is_exit(call)


def test_a_life_reads_its_graph_or_says_why_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphscope.capture import grab

    def snapshot(handle: int, dot: Path, kernels: Any, as_graph: int | None = None) -> Any:
        if handle == 0:
            raise RuntimeError("CUDA_ERROR_INVALID_VALUE")
        dot.write_text("digraph dot {}\n")
        return grab.Snapshot(as_graph or 5, {0: "KERNEL", 1: "MEMSET"}, {0: ({}, [])}, 0.2, 0.1)

    monkeypatch.setattr(grab, "snapshot", snapshot)
    life = Life(
        id="g9", exec_id=9, graph_id=3, capture=None, instantiated_ns=0, instantiate_ns=None
    )
    life.read(7, tmp_path, kernels=None, as_graph=3)  # a clone of graph 3
    assert (life.graph_id, life.nodes, life.kernels, life.read_s, life.dump_s) == (
        3,
        2,
        1,
        0.2,
        0.1,
    )
    assert life.dot_tmp == tmp_path / ".g9.dot.tmp" and life.unread and life.error is None
    failed = Life(
        id="g4", exec_id=4, graph_id=None, capture=None, instantiated_ns=0, instantiate_ns=None
    )
    failed.read(0, tmp_path, kernels=None)
    assert failed.error == "could not read the graph: CUDA_ERROR_INVALID_VALUE"
    assert failed.snapshot is None and not (tmp_path / ".g4.dot.tmp").exists() and not failed.unread


def test_the_subscriber_hands_each_callback_to_its_handlers_and_keeps_their_errors() -> None:
    from graphscope.capture.callbacks import Subscriber

    sub = Subscriber()
    seen: list[object] = []
    errors: list[BaseException] = []

    def broken(data: Any) -> None:
        raise RuntimeError("planted")

    sub._handlers[(3, 7)] = [(broken, errors.append), (lambda d: seen.append(d.ptr), errors.append)]
    sub._dispatch_raw(None, 3, 7, 0x1234)  # as CUPTI calls the ctypes trampoline
    sub._dispatch_raw(None, 3, 8, 0x1234)  # a callback no handler asked for
    assert seen == [0x1234] and [str(e) for e in errors] == ["planted"]
    sub._dispatch(None, 3, 7, SimpleNamespace(ptr=5))  # cupti-python's own delivery
    assert seen == [0x1234, 5] and len(errors) == 2


def test_a_skip_message_keeps_the_line_torch_says_caused_it() -> None:
    """torch.compile's skip messages, as cudagraph_utils formats them: the first line alone
    said 'mutated inputs (1 instances)' and not where (issue 26)."""
    from graphscope.capture.record.skips import reason_text

    mutated = (
        "skipping cudagraphs due to mutated inputs (1 instances). Found from : \n"
        '   File "/srv/app/serve.py", line 40, in step\n'
        "    out = model(x)\n"
        '  File "/srv/app/model.py", line 31, in forward\n'
        "    self.cache.add_(x)\n"
    )
    assert reason_text(mutated) == (
        "skipping cudagraphs due to mutated inputs (1 instances): model.py:31 in forward: "
        "self.cache.add_(x)"
    )
    storage = (
        "skipping cudagraphs due to mutated input storage. Found from:\n"
        ' File "/a/b.py", line 3, in f\n'
    )
    assert reason_text(storage) == "skipping cudagraphs due to mutated input storage: b.py:3 in f"
    long = mutated.replace("self.cache.add_(x)", "self.cache.add_(" + "x" * 500 + ")")
    assert len(reason_text(long)) == 300  # REASON_CHARS, the whole reason
    assert reason_text("skipping cudagraphs due to cpu device (arange)") == (
        "skipping cudagraphs due to cpu device (arange)"
    )


class _Event:
    """A CUDA event's stand-in: done when the test says, 25 us after its start."""

    made: ClassVar[list[_Event]] = []

    def __init__(self) -> None:
        self.done = False
        self.recorded = False
        _Event.made.append(self)

    def record(self) -> None:
        self.recorded = True

    def query(self) -> bool:
        return self.done

    def elapsed_time(self, end: _Event) -> float:
        assert self.recorded and end.recorded
        return 0.025  # milliseconds, as torch's


def cudagraph_post_compile(compiled_graph: Any, message: str) -> None:
    """Where Inductor logs a skip, holding the graph it decided for (output_code.py)."""
    import logging

    logging.getLogger("torch._inductor.cudagraph_utils.__cudagraphs").warning(message)


def test_a_skipped_function_s_calls_are_counted_and_timed_where_torch_decided() -> None:
    """Issue 26: for each skip, the eager GPU time it cost. The compiled graph Inductor logs a
    skip for is wrapped; its calls are counted and timed by events read back without a wait."""
    from graphscope.capture.record import skips

    _Event.made = []
    listener = skips.SkipListener(event=_Event)
    listener.start()
    graph = SimpleNamespace(current_callable=lambda inputs: sum(inputs))
    graph.current_callable._boxed_call = True
    message = "skipping cudagraphs due to mutated inputs (1 instances)"
    try:
        cudagraph_post_compile(graph, message)
        cudagraph_post_compile(graph, message)  # heard twice (a cache hit): wrapped once
    finally:
        listener.stop()
    assert graph.current_callable._boxed_call  # torch's calling convention, kept
    assert [graph.current_callable([1, 2, 3]) for _ in range(5)] == [6] * 5
    assert len(_Event.made) == 8  # the first call (compiling, autotuning) is not timed
    (entry,) = listener.fallbacks()["skipped"]
    assert entry == {"reason": message, "calls": 5, "timed": 0}  # none done on the GPU yet
    for event in _Event.made[:4]:
        event.done = True
    (entry,) = listener.fallbacks()["skipped"]
    assert entry["timed"] == 2 and entry["gpu_us_median"] == 25.0
    assert entry["gpu_ms_est"] == 0.125  # 5 calls at the median
    (entry,) = listener.fallbacks(final=True)["skipped"]  # the end: the rest never came back
    assert entry["timed"] == 2 and entry["calls"] == 5
    # A skip heard from anywhere else (CUDA graph trees, at run time) is only a reason.
    other = skips.SkipListener(event=_Event)
    other.start()
    try:
        import logging

        logging.getLogger("torch._inductor.cudagraph_trees.__cudagraphs").warning("skipping x")
    finally:
        other.stop()
    assert other.fallbacks() == {"reasons": ["skipping x"]}


@dataclasses.dataclass(frozen=True, slots=True)
class _Wrapped:
    """CUDA graph trees' WrappedFunction (cudagraph_utils.py): frozen, with slots."""

    model: Any


class _Manager:
    """The parts of CUDAGraphTreeManager that decide a mutation skip and then run eagerly."""

    def __init__(self) -> None:
        self.ids_to_funcs = {3: _Wrapped(lambda inputs: len(inputs))}

    def _update_non_cudagraph_managed_mutation(self, function_id: int, inputs: Any) -> None:
        import logging

        logging.getLogger("torch._inductor.cudagraph_trees.__cudagraphs").warning(
            "skipping cudagraphs due to mutated inputs (1 instances)"
        )

    def _run(self, inputs: Any, function_id: int) -> Any:
        return self.ids_to_funcs[function_id].model(inputs)  # the eager fallback

    def run_eager(self, inputs: Any, function_id: int) -> Any:
        return self.ids_to_funcs[function_id].model(inputs)  # a warm-up: not a skip's call


def test_a_mutation_skip_decided_at_run_time_counts_the_eager_fallback_s_calls() -> None:
    """torch 2.11 decides a mutated input's skip in CUDA graph trees at the first call (an H100
    run found no compiled graph at hand there): its function's eager fallback is counted."""
    from graphscope.capture.record import skips

    _Event.made = []
    capturing = [False]
    listener = skips.SkipListener(event=_Event, capturing=lambda: capturing[0])
    listener.start()
    manager = _Manager()
    try:
        manager._update_non_cudagraph_managed_mutation(3, [])
    finally:
        listener.stop()
    assert [manager._run([1, 2], 3) for _ in range(3)] == [2, 2, 2]
    assert manager.run_eager([1], 3) == 1
    capturing[0] = True
    assert manager._run([1, 2], 3) == 2  # counted, but no event goes into a capture
    (entry,) = listener.fallbacks()["skipped"]
    assert entry["calls"] == 4 and len(_Event.made) == 4  # the 2nd and 3rd calls timed


def test_a_skipped_function_that_raises_still_raises_and_is_counted() -> None:
    from graphscope.capture.record.skips import SkippedCalls

    def broken(inputs: Any) -> Any:
        raise ValueError("the user's own error")

    calls = SkippedCalls("why", _Event)
    wrapped = calls.wrap(broken)
    for _ in range(2):
        with pytest.raises(ValueError, match="the user's own error"):
            wrapped([])
    assert calls.calls == 2 and calls.as_dict()["timed"] == 0


# What torch's log_data_ptr_mismatch returns (torch/_inductor/cudagraph_utils.py, 2.11).
_MISMATCH = (
    "static input data pointer changed.\n"
    "input name: primals_2. data pointer changed from 139872000 to 139874048. "
    'input stack trace:   File "/srv/app/model.py", line 12, in forward\n'
    "    return x @ self.weight\n\n"
    "input name: primals_5. data pointer changed from 4096 to 8192. input stack trace: None\n"
)


def test_torch_s_rerecord_reason_names_each_moved_input_and_its_line() -> None:
    from graphscope.capture.record.skips import rerecord_text

    assert rerecord_text(_MISMATCH) == (
        "static input data pointer changed: primals_2 moved 0x8564700 -> 0x8564f00 "
        "(model.py:12 in forward: return x @ self.weight); primals_5 moved 0x1000 -> 0x2000"
    )
    assert rerecord_text("expected dead indices\nbefore graph are live") == (
        "expected dead indices before graph are live"
    )


@pytest.mark.parametrize("debug", [False, True])
def test_the_reason_is_read_from_the_frame_where_torch_decided_to_record_again(
    debug: bool,
) -> None:
    """CUDAGraphTreeManager._run holds the reason as a string when its logger is at DEBUG,
    else as the function that makes it; a first recording holds none."""
    from graphscope.capture.record.skips import torch_rerecord_reason

    def record_function() -> Any:  # stands for record_function -> CUDAGraphNode._record
        return torch_rerecord_reason(sys._getframe())

    def _run(held: bool) -> Any:
        unexpected_rerecord_reason = (lambda: _MISMATCH) if not debug else _MISMATCH
        if not held:  # a first recording: no graph of this function to reuse
            unexpected_rerecord_reason = None
        assert held or unexpected_rerecord_reason is None  # a local of torch's frame
        return record_function()

    assert str(_run(True)).startswith("static input data pointer changed: primals_2 moved")
    assert _run(False) is None
    assert record_function() is None  # no torch frame below: torch.cuda.graph, CuPy, ...

    def _run_failing() -> Any:
        def unexpected_rerecord_reason() -> str:
            raise AssertionError("length mismatch")

        return record_function()

    _run_failing.__code__ = _run_failing.__code__.replace(co_name="_run")
    assert _run_failing() is None  # torch's helper failed: no reason, never a guess


def test_a_rerecord_with_the_engine_s_reason_says_it_first() -> None:
    before, after = _capture(i0=[1, 1]), _capture(i0=[1, 1])
    after.engine_reason = "static input data pointer changed: primals_2 moved 0x1 -> 0x2"
    same = Life("g8", 8, 1, after, 0, None)
    assert rerecord_reason(before, after, same) == after.engine_reason


def test_the_reason_is_made_with_the_recording_s_inputs_once_torch_emptied_its_list() -> None:
    """On the H100 (torch 2.11) the list ``_run`` was given is empty by the time the capture
    begins (CUDAGraphNode took the inputs over), and torch's helper asserts on its length:
    the recording's own list, which holds the same static tensors, stands in."""
    import functools

    from graphscope.capture.record.skips import torch_rerecord_reason

    class Tensor:
        def __init__(self, ptr: int) -> None:
            self.ptr = ptr

        def data_ptr(self) -> int:
            return self.ptr

    def log_data_ptr_mismatch(
        placeholders: list[str], inputs: list[Any], recorded: list[int], idxs: list[int], st: str
    ) -> str:  # as torch's: the same lengths, or an assertion
        assert len(inputs) == len(recorded) == len(placeholders)
        return f"{st}.\n" + "".join(
            f"input name: {placeholders[i]}. data pointer changed from {recorded[i]} to "
            f"{inputs[i].data_ptr()}. input stack trace: None\n"
            for i in idxs
            if inputs[i].data_ptr() != recorded[i]
        )

    given: list[Any] = []  # emptied by torch
    held = functools.partial(log_data_ptr_mismatch, ["arg0_1", "x"], given, [16, 32], [0])

    def _run() -> Any:
        unexpected_rerecord_reason = functools.partial(held, "static input data pointer changed")
        assert unexpected_rerecord_reason.args[1] == []
        return torch_rerecord_reason(sys._getframe(), recording)

    recording = [Tensor(48), Tensor(64)]
    assert _run() == "static input data pointer changed: arg0_1 moved 0x10 -> 0x30"
    recording = []
    assert _run() is None  # nothing to stand in: torch's helper refuses, and so no reason


def test_a_re_record_s_inputs_made_by_one_line_are_one_entry_and_none_is_cut() -> None:
    """A static KV cache moved: 2 lines made 24 inputs; torch names each (transformers 5)."""
    from graphscope.capture.record.skips import REASON_CHARS, rerecord_text

    def moved(name: str, at: int, line: int, code: str) -> str:
        return (
            f"input name: {name}. data pointer changed from {at} to {at + 4096}. input stack "
            f'trace:   File "/venv/transformers/cache_utils.py", line {line}, in update\n'
            f"    {code}\n\n"
        )

    keys = "self.keys.index_copy_(2, cache_position, key_states)"
    values = "self.values.index_copy_(2, cache_position, value_states)"
    message = "static input data pointer changed.\n" + "".join(
        moved(f"arg{2 * i}_1", 1 << 20 + i, 482, keys)
        + moved(f"arg{2 * i + 1}_1", 1 << 30 + i, 483, values)
        for i in range(12)
    )
    assert rerecord_text(message) == (
        "static input data pointer changed: 12 inputs moved, as arg0_1 moved 0x100000 -> "
        f"0x101000 (cache_utils.py:482 in update: {keys}); 12 inputs moved, as arg1_1 moved "
        f"0x40000000 -> 0x40001000 (cache_utils.py:483 in update: {values})"
    )
    # 30 inputs each from a line of its own: whole entries, then a count of the rest
    many = "static input data pointer changed.\n" + "".join(
        moved(f"p{i}", 1 << 20 + i, 100 + i, keys) for i in range(30)
    )
    text = rerecord_text(many)
    assert len(text) <= REASON_CHARS * 2
    kept = text.count(" moved ")
    assert text.endswith(f"; and {30 - kept} more inputs") and 1 < kept < 30
    assert text.split("; and ")[0].endswith(f"in update: {keys})")


def test_a_probe_opens_once_graphs_stop_closes_the_window_left_open_and_counts_its_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The launch sampler's probe, its CUPTI calls stood in for: tracing switched on and off
    in the right order, a probe's eager kernels told from a window's by when tracing went
    on, and a launch during a probe closing it."""
    import threading

    from graphscope.capture.record import launches as mod

    switched: list[bool] = []
    clock = iter(range(100, 10_000, 100))  # CUPTI's timestamps where tracing goes on
    monkeypatch.setattr(mod, "enable_kinds", lambda kinds, enable=True: switched.append(enable))
    monkeypatch.setattr(mod, "cupti", lambda: SimpleNamespace(get_timestamp=lambda: next(clock)))
    monkeypatch.setattr(
        mod,
        "callbacks",
        SimpleNamespace(param_words=lambda cb, n: (cb[0],), correlation_id=lambda cb: cb[1]),
    )
    life = Life("g2", 7, 1, Capture(0, None, "torch"), 0, 0)
    rec = SimpleNamespace(
        settings=Settings(first=1, every_s=5.0, window=2),
        by_exec={0xE: life},
        by_exec_id={7: life},
        records_lock=threading.Lock(),
        stopped=False,
        dirty=False,
        since_s=lambda ns: 0.0,
    )
    sampler = mod.LaunchSampler(rec)  # type: ignore[arg-type]
    sampler._launch((0xE, 1), exiting=False)  # the first launch: traced, tracing on at 100
    sampler._launch((0xE, 1), exiting=True)
    assert switched == [True] and sampler.tracing
    now = sampler.last_launch_ns
    assert not sampler.probe(now + 500_000_000, capturing=False)  # half a second: too soon
    assert not sampler.probe(now + 2_000_000_000, capturing=True)  # nor while capturing
    # two seconds with no launch: the window left open closes, and a probe opens at 200
    sampler.last_launch_ns -= 2_000_000_000
    assert sampler.probe(time.perf_counter_ns(), capturing=False)
    assert switched == [True, False, True] and sampler.probing and not sampler.tracing
    sampler.end_probe()
    assert switched == [True, False, True, False] and not sampler.probing
    assert sampler.probe_ns > 0
    assert not sampler.probe(time.perf_counter_ns(), capturing=False)  # one a second
    sampler.consume(
        [
            {"graph_node_id": EXEC | 1, "start": 120, "end": 130, "correlation_id": 1},
            {"graph_node_id": 0, "start": 150, "end": 160, "correlation_id": 2},  # window's
            {"graph_node_id": 0, "start": 210, "end": 240, "correlation_id": 3},  # probe's
            {"graph_node_id": 0, "start": 260, "end": 300, "correlation_id": 4},  # probe's
        ]
    )
    assert (sampler.eager_kernels, sampler.eager_kernel_ns) == (1, 10)
    assert (sampler.probe_kernels, sampler.probe_kernel_ns) == (2, 70)
    assert life.timed.records[1] == [(EXEC | 1, 120, 130)]
    # a probe open when the program launches again: the launch closes it, untraced
    sampler._probed_ns = 0
    sampler.last_launch_ns -= 2_000_000_000
    assert sampler.probe(time.perf_counter_ns(), capturing=False)
    sampler._launch((0xE, 9), exiting=False)
    assert not sampler.probing and switched[-1] is False and not sampler.tracing
    sampler.end_probe()  # the worker's close finds it closed: nothing switched
    assert switched[-1] is False and len(switched) == 6
    summary = sampler.summary([life])
    assert summary["probe_kernels"] == 2 and summary["probe_s"] > 0


def test_no_probe_opens_with_periodic_sampling_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from graphscope.capture.record import launches as mod

    switched: list[bool] = []
    monkeypatch.setattr(mod, "enable_kinds", lambda kinds, enable=True: switched.append(enable))
    rec = SimpleNamespace(
        settings=Settings(first=0, every_s=0, window=0),
        by_exec={},
        by_exec_id={},
        records_lock=threading.Lock(),
        stopped=False,
        since_s=lambda ns: 0.0,
    )
    sampler = mod.LaunchSampler(rec)  # type: ignore[arg-type]
    sampler.last_launch_ns = time.perf_counter_ns() - 5_000_000_000
    assert not sampler.probe(time.perf_counter_ns(), capturing=False) and switched == []
