"""On a GPU: ``graphscope record`` on unchanged programs, and ``record()`` in a process.

The programs are in ``tests/record_programs``. gpt-fast is not part of this repository: its
test runs when ``GPT_FAST_DIR`` names a checkout. With ``GRAPHSCOPE_KEEP_RECORDINGS=DIR`` the
recordings are kept in DIR (that is how ``samples/recordings`` is made, docs/DEVELOPING.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from record_cli import not_recorded, run_record

import graphscope
from graphscope.analysis import coverage
from graphscope.cli import main
from graphscope.recording import Recording, Settings, load_recordings

pytestmark = pytest.mark.gpu
PROGRAMS = Path(__file__).resolve().parents[1] / "record_programs"


def _out(tmp_path: Path, name: str) -> Path:
    keep = os.environ.get("GRAPHSCOPE_KEEP_RECORDINGS")
    if not keep:
        return tmp_path / name
    path = Path(keep) / name
    shutil.rmtree(path, ignore_errors=True)
    return path


def _record(out: Path, program: str, *args: str) -> list[dict[str, Any]]:
    """Run a program under ``graphscope record``; its JSON lines."""
    command = [sys.executable, "-m", "graphscope", "record", "--out", str(out), "--"]
    command += [sys.executable, str(PROGRAMS / program), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "recording stopped" not in done.stderr, done.stderr[-4000:]
    assert json.loads((out / "run.json").read_text())["exit_status"] == 0
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _with_graphs(out: Path) -> Recording:
    """The one process of the run that instantiated graphs."""
    recorded = [r for r in load_recordings(out) if r.graphs]
    assert len(recorded) == 1, [r.folder for r in load_recordings(out)]
    assert recorded[0].process["status"] == "finished"
    return recorded[0]


def _check_bundles(rec: Recording) -> None:
    """Every graph with nodes has a bundle that loads, timed from the program's replays."""
    for g in rec.graphs:
        path = rec.bundle_path(g)
        assert path is not None and path.is_file(), g
        G = graphscope.load(path)
        assert G.number_of_nodes() == g["nodes"]
        assert G.graph["recording"]["id"] == g["id"]
        assert graphscope.load(rec.folder / g["dot"]).number_of_nodes() == g["nodes"]
        if not g["nodes"] or not g["replays"]:
            continue
        timing = G.graph["timing"]
        assert timing["replay_us"] > 0 and timing["unjoined_records"] == 0
        assert timing["replays"] >= 5, timing
        kernels = [d for _, d in G.nodes(data=True) if d["type"] == "KERNEL"]
        assert all(d["replay"]["count"] == timing["replays"] for d in kernels)
        assert all(d["args"] and d["registers"] > 0 for d in kernels)
        # A node lasts no longer than the replay it ran in (issue 25: a stretched last record).
        longest = timing["replay_max_us"]
        assert all(d["replay"]["max_us"] <= longest + 1e-6 for _, d in G.nodes(data=True)), g


def test_torch_cuda_graph_buckets_in_one_pool(tmp_path: Path) -> None:
    out = _out(tmp_path, "torch-buckets")
    (line,) = _record(out, "torch_buckets.py", "--buckets", "1", "2", "4", "--steps", "400")
    rec = _with_graphs(out)
    graphs = {g["batch"]: g for g in rec.graphs}
    assert sorted(graphs) == [1, 2, 4]
    for batch, g in graphs.items():
        assert g["capturer"] == "torch.cuda.graph"
        assert g["site"]["file"].endswith("torch_buckets.py") and g["site"]["line"] > 0
        # every replay of the program counted, once
        assert g["replays"] == line["replays_per_bucket"][str(batch)]
        first = min(g["replays"], rec.settings["first"])  # and a window if one opened
        assert first <= g["traced_replays"] <= first + rec.settings["window"]
        assert g["cpu_launch_us"] > 0 and g["replay_us"] > 0
        assert g["attributed_nodes"] == g["nodes"]
    pools = {tuple(g["pool"]["id"]) for g in rec.graphs}
    assert len(pools) == 1  # SGLang's discipline: one pool for every bucket
    assert all(len(g["pool"]["shared_with"]) == 2 and g["pool"]["bytes"] > 0 for g in rec.graphs)
    # captured largest first: each smaller bucket is the same site with a new input shape
    assert graphs[2]["rerecord_of"] == graphs[4]["id"]
    assert graphs[2]["shape_changes"] == [{"input": 0, "from": [4, 1], "to": [2, 1]}]
    _check_bundles(rec)
    G = graphscope.load(rec.bundle_path(graphs[1]))
    labels = [d["attribution"] for _, d in G.nodes(data=True) if d["type"] == "KERNEL"]
    assert any(str(a["module"]).startswith("layers.0.attn") for a in labels)
    # The aten op is named only with --ops (its dispatch mode is most of attribution's cost).
    assert all(a["op"] is None and a["line"] for a in labels)
    named = {p.get("buffer") for _, d in G.nodes(data=True) for p in d.get("pointers", [])}
    assert "param:layers.0.attn.qkv.weight" in named
    assert main(["inspect", str(out)]) == 0 and main(["report", str(out)]) == 0


def test_a_capture_broken_by_a_read_back_names_the_call_its_line_and_its_module(
    tmp_path: Path,
) -> None:
    """A layer's .item() inside the captured region: torch raises as the capture ends; the
    recording names the copy that broke it, the line, the module and the capture."""
    out = _out(tmp_path, "capture-fails")
    (line,) = _record(out, "capture_fails.py", "--steps", "30")
    assert line["capture_failed"]  # the program saw it fail, and ran eagerly
    rec = _with_graphs(out)
    source = (PROGRAMS / "capture_fails.py").read_text().splitlines()
    fault = 1 + next(i for i, text in enumerate(source) if ".item()" in text and "scale =" in text)
    began = 1 + next(i for i, text in enumerate(source) if "with torch.cuda.graph(graph)" in text)
    (failure,) = rec.capture_failures
    # .item() copies asynchronously, then synchronizes the capturing stream: that fails
    assert failure["call"] == "cudaStreamSynchronize", failure
    assert failure["error"] == "cudaErrorStreamCaptureUnsupported (900)", failure
    assert failure["stream"] == failure["capture"]["stream"], failure
    assert failure["site"]["file"].endswith("capture_fails.py"), failure
    assert failure["site"]["line"] == fault and failure["module"] == "layers.0", failure
    assert failure["thread"] == "MainThread"
    assert failure["capture"]["capturer"] == "torch.cuda.graph"
    assert failure["capture"]["site"]["line"] == began
    assert failure["ended"].startswith("cudaStreamEndCapture returned cudaErrorStream"), failure
    assert any(f"capture_fails.py:{fault} in forward" in s for s in failure["stack"])
    # the capture that followed is recorded as any other
    (graph,) = rec.graphs
    assert graph["replays"] == line["replays"] and graph["site"]["line"] == began
    _check_bundles(rec)
    assert main(["check", str(out), "--no-failed-captures"]) == 1


def test_a_weight_reload_that_rebinds_parameters_under_a_live_graph_is_named(
    tmp_path: Path,
) -> None:
    """Parameters rebound to new memory while the graph keeps replaying: the recording names
    the graph, each parameter, where it was and is, the nodes reading it, and the replays."""
    out = _out(tmp_path, "weight-reload")
    (line,) = _record(out, "weight_reload.py", "--seconds", "4")
    assert line["graph_against_eager_max_abs"] > 0  # the graph no longer computes as eager
    rec = _with_graphs(out)
    (graph,) = rec.graphs
    stale = {s["buffer"]: s for s in rec.stale_pointers}
    qkv = stale["param:layers.0.attn.qkv.weight"]
    assert qkv["graph"] == graph["id"] and qkv["now"] is not None and qkv["now"] != qkv["was"]
    assert qkv["nodes"] and qkv["pointers"] >= 1 and 0 < qkv["replays_since"] <= line["replays"]
    # every parameter was rebound; each one a kernel reads is named
    assert "param:lm_head.weight" in stale and "param:layers.1.down.weight" in stale
    assert main(["check", str(out), "--no-stale-pointers"]) == 1


def test_a_weight_reload_that_copies_in_place_leaves_the_graph_sound(tmp_path: Path) -> None:
    out = tmp_path / "weight-copy"
    (line,) = _record(out, "weight_reload.py", "--seconds", "3", "--copy")
    assert line["graph_against_eager_max_abs"] < 1e-2
    rec = _with_graphs(out)
    assert rec.stale_pointers == []
    assert main(["check", str(out), "--no-stale-pointers"]) == 0


def test_a_static_input_made_anew_under_a_live_graph_is_named(tmp_path: Path) -> None:
    """The graph's token buffer freed after the program rested (the recorder read the graph
    then) and replayed on for 12 s: the next read of the allocator's map finds the block
    free, and the replays after it are counted."""
    out = _out(tmp_path, "freed-input")
    (line,) = _record(out, "freed_input.py", "--seconds", "12")
    assert line["graph_against_eager_max_abs"] > 0  # the graph reads the old tokens
    rec = _with_graphs(out)
    (graph,) = rec.graphs
    (block,) = [s for s in rec.stale_pointers if s["buffer"].startswith("block ")]
    assert block["graph"] == graph["id"] and block["why"].startswith("was freed"), block
    assert block["nodes"] and 0 < block["replays_since"] <= line["replays"]
    # the embedding's gather reads the tokens
    G = graphscope.load(rec.bundle_path(graph))
    names = {str(G.nodes[n].get("short_name")) for n in block["nodes"]}
    assert any("index" in n or "embedding" in n.lower() for n in names), names
    assert not [s for s in rec.stale_pointers if s["buffer"].startswith("param:")]
    lines = _check_lines(out)
    stale = next(x for x in lines if x.startswith(f"{out}: stale-pointer: "))
    assert f"{graph['id']} points into block 0x" in stale and "was freed" in stale, stale


def test_a_static_input_copied_into_leaves_the_graph_sound(tmp_path: Path) -> None:
    out = tmp_path / "freed-input-copy"
    (line,) = _record(out, "freed_input.py", "--seconds", "3", "--copy")
    assert line["graph_against_eager_max_abs"] < 1e-2
    rec = _with_graphs(out)
    assert rec.stale_pointers == []
    assert main(["check", str(out), "--no-stale-pointers"]) == 0


def test_a_static_input_the_step_never_feeds_is_named_with_the_nodes_that_read_it(
    tmp_path: Path,
) -> None:
    """The step binds ``tokens`` to each step's slice of the text where it should copy into
    the captured buffer, which is still held: the input observer's samples of the buffer, read
    before sampled replays, never change, while the position the step copies in does. (The
    logits the graph writes are alike too: the same token at every position, and the decoder
    has no positional encoding.)"""
    out = _out(tmp_path, "unfed-input")
    (line,) = _record(out, "unfed_input.py", "--seconds", "5")
    assert line["graph_against_eager_max_abs"] > 0  # the graph reads the first tokens
    rec = _with_graphs(out)
    (graph,) = rec.graphs
    assert rec.input_checks["blocks"] >= 2 and rec.input_checks.get("stopped") is None
    G = graphscope.load(rec.bundle_path(graph))
    # the tokens, read by the embedding's gather; not the position, which changed every step
    (unfed,) = [
        u
        for u in rec.unchanged_inputs
        if any("index" in str(G.nodes[n].get("short_name")) for n in u["nodes"])
    ]
    assert unfed["graph"] == graph["id"] and unfed["bytes"] == 512  # 4 tokens, in a 512 B block
    assert len(rec.unchanged_inputs) < rec.input_checks["blocks"]
    assert unfed["samples"] >= 4 and unfed["last_replay"] > unfed["first_replay"]
    assert unfed["last_replay"] <= line["replays"]
    assert rec.stale_pointers == []  # nothing was freed
    lines = _check_lines(out, "--no-unchanged-inputs")
    (found,) = [x for x in lines if ": unchanged-input: " in x]
    assert f"{graph['id']} points into block 0x" in found and "held the same bytes" in found


def test_a_static_input_copied_into_each_step_is_not_named(tmp_path: Path) -> None:
    out = _out(tmp_path, "unfed-input-copy")
    (line,) = _record(out, "unfed_input.py", "--seconds", "4", "--copy")
    assert line["graph_against_eager_max_abs"] < 1e-2
    rec = _with_graphs(out)
    assert rec.input_checks["blocks"] >= 2 and rec.input_checks["samples"] >= 4
    assert rec.unchanged_inputs == []
    assert main(["check", str(out), "--no-unchanged-inputs", "--no-stale-pointers"]) == 0


def test_every_call_watched_for_failed_captures_is_one_cupti_knows() -> None:
    from graphscope.capture.record import failures

    found = {failures.call_name(name) for name in failures.api_names()}
    assert set(failures.UNSAFE_CALLS) <= found, sorted(set(failures.UNSAFE_CALLS) - found)


def test_a_spawned_worker_is_recorded_and_its_parent_is_not(tmp_path: Path) -> None:
    out = _out(tmp_path, "spawn-worker")
    (line,) = _record(out, "spawn_worker.py", "--buckets", "1", "2", "--steps", "200")
    processes = load_recordings(out)
    assert len(processes) == 1  # the parent never initialised CUDA
    rec = _with_graphs(out)
    assert sorted(g["batch"] for g in rec.graphs) == [1, 2]
    assert sum(g["replays"] for g in rec.graphs) == line["steps"]
    _check_bundles(rec)


def test_transformers_generate_with_a_static_cache(tmp_path: Path) -> None:
    out = _out(tmp_path, "hf-generate")
    _record(out, "hf_generate.py", "--batches", "1", "1", "2", "--new-tokens", "40")
    rec = _with_graphs(out)
    real = [g for g in rec.graphs if g["nodes"]]
    assert {g["batch"] for g in real} >= {1, 2}
    for g in real:
        assert g["capturer"] == "inductor"
        assert g["program_site"]["file"].endswith("hf_generate.py")
    assert sum(g["replays"] for g in real) > 0
    _check_bundles(rec)
    G = graphscope.load(rec.bundle_path(real[0]))
    compiled = [d for _, d in G.nodes(data=True) if "compiled" in d.get("attribution", {})]
    assert len(compiled) >= G.number_of_nodes() // 2  # Inductor's generated code names them


def test_gpt_fast_generate_under_reduce_overhead(tmp_path: Path) -> None:
    gpt_fast = os.environ.get("GPT_FAST_DIR")
    if not gpt_fast:
        pytest.skip("GPT_FAST_DIR names no gpt-fast checkout")
    out = _out(tmp_path, "gpt-fast")
    lines = _record(
        out,
        "gpt_fast_driver.py",
        "--gpt-fast",
        gpt_fast,
        "--batch-sizes",
        "1",
        "1",
        "2",
        "--new-tokens",
        "60",
    )
    assert [line["batch"] for line in lines] == [1, 1, 2]
    rec = _with_graphs(out)
    empty = [g for g in rec.graphs if g["nodes"] == 0]
    assert empty, "CUDA graph trees instantiate an empty graph first"
    assert graphscope.load(rec.bundle_path(empty[0])).number_of_nodes() == 0
    real = {g["batch"]: g for g in rec.graphs if g["nodes"]}
    assert sorted(real) == [1, 2]
    for g in real.values():
        assert g["capturer"] == "inductor"
        assert g["site"]["function"] == "decode_one_token"
    assert real[1]["replays"] >= 100  # two calls of 59 decode steps, less warm-up and record
    assert real[2]["rerecord_of"] == real[1]["id"]
    _check_bundles(rec)


def test_record_in_a_process_sees_updates_and_explicit_launches(tmp_path: Path) -> None:
    import torch
    from graphscope.capture import record
    from graphscope.capture._cuda import check, driver
    from graphscope.capture.update import driver_update

    x = torch.zeros(1 << 16, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x.add_(1)
        x.mul_(2)
    torch.cuda.synchronize()
    with record.record(tmp_path, Settings(ops=True)) as recorder:
        assert recorder is not None
        a = torch.cuda.CUDAGraph(keep_graph=True)
        with torch.cuda.graph(a):
            x.add_(1)
        b = torch.cuda.CUDAGraph(keep_graph=True)
        with torch.cuda.graph(b):
            x.mul_(2)
        verdict = driver_update(a, b)  # instantiates A and updates it with B, through the driver
        drv = driver()
        exe = check(drv.cuGraphInstantiate(drv.CUgraph(init_value=int(b.raw_cuda_graph())), 0))
        stream = check(drv.cuStreamCreate(0))
        for _ in range(8):
            check(drv.cuGraphLaunch(exe, stream))
        check(drv.cuStreamSynchronize(stream))
        check(drv.cuGraphExecDestroy(exe))
        check(drv.cuStreamDestroy(stream))
    rec = load_recordings(tmp_path)[0]
    updated = [g for g in rec.graphs if g["updates"]]
    assert len(updated) == 1
    (update,) = updated[0]["updates"]
    assert update["ok"] == verdict["ok"] and update["result"] == verdict["result"]
    launched = [g for g in rec.graphs if g["replays"]]
    assert len(launched) == 1 and launched[0]["replays"] == 8
    ops = {
        d["attribution"]["op"]
        for g in rec.graphs
        for _, d in graphscope.load(rec.bundle_path(g)).nodes(data=True)
        if d["type"] == "KERNEL"
    }
    assert ops == {"aten::add_", "aten::mul_"}, ops  # asked for with Settings(ops=True)
    assert launched[0]["destroyed_at_s"] is not None
    # Timed from records read in place (activities.Buffers), not cupti-python's objects.
    from graphscope.capture import activities

    assert activities._buffers is not None
    assert launched[0]["replay_us"] is not None and launched[0]["replay_us"] > 0
    _check_bundles(rec)


def test_a_failing_callback_stops_recording_once_and_the_program_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from graphscope.capture import record
    from graphscope.capture.record.graphs import GraphWatch

    def broken(self: Any, cbdata: Any) -> None:
        raise RuntimeError("a planted failure")

    monkeypatch.setattr(GraphWatch, "_exec_created", broken)
    x = torch.zeros(16, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x.add_(1)
    torch.cuda.synchronize()
    with record.record(tmp_path) as recorder:
        assert recorder is not None
        for _ in range(2):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                x.add_(1)
            graph.replay()
    torch.cuda.synchronize()
    assert x.sum().item() == 16 * (1 + 2)  # the program's work was done
    said = [line for line in capsys.readouterr().err.splitlines() if "graphscope record" in line]
    assert len(said) == 1 and "a planted failure" in said[0], said
    (rec,) = load_recordings(tmp_path)
    assert rec.process["status"] == "stopped"


@pytest.mark.parametrize(
    ("name", "program", "args", "needs"),
    [
        ("jax-decode", "jax_decode.py", ("--steps", "200"), "jax"),
        ("cupy-graph", "cupy_graph.py", ("--replays", "100"), "cupy"),
        ("cuda-python-graph", "cuda_python_graph.py", ("--launches", "50"), "cuda.bindings"),
    ],
)
def test_a_program_without_torch_is_recorded(
    tmp_path: Path, name: str, program: str, args: tuple[str, ...], needs: str
) -> None:
    # Issue 25: only processes where torch initialised CUDA were recorded.
    import importlib.util

    if importlib.util.find_spec(needs.split(".")[0]) is None:
        pytest.skip(f"{needs} is not installed")
    out = _out(tmp_path, name)
    (line,) = _record(out, program, *args)
    rec = _with_graphs(out)
    real = [g for g in rec.graphs if g["nodes"]]
    assert real, rec.graphs
    launched = sum(g["replays"] for g in real)
    if name == "jax-decode":
        assert launched >= line["steps"] // 2  # XLA runs the step as command buffers
        # XLA builds its command buffers node by node: the jitted call that instantiated
        # one is its site.
        assert all(g["site"]["file"].endswith("jax_decode.py") for g in real), real
        # XLA's optimized HLO, dumped into the process's folder, names each kernel's op and
        # the line of the jitted function that made it.
        assert (rec.folder / "xla").is_dir()
        for g in real:
            G = graphscope.load(rec.bundle_path(g))
            labels = [d["attribution"] for _, d in G.nodes(data=True) if d.get("attribution")]
            assert g["attributed_nodes"] == len(labels) > 0, g
            for label in labels:
                assert label["hlo"]["instruction"] and label["op"], label
                assert label["file"].endswith("jax_decode.py"), label
    else:
        assert launched == line.get("replays", line.get("launches"))
    _check_bundles(rec)
    assert main(["inspect", str(out)]) == 0
    if name != "jax-decode":
        assert all(g["site"]["file"].endswith(program) for g in real), real


_PROFILER_HOLDS_CUPTI = """
import sys
import torch
from graphscope.capture import record

x = torch.zeros(16, device="cuda")
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
    x.add_(1)
    with record.record(sys.argv[1]) as recorder:
        assert recorder is None
        x.add_(1)  # the program goes on
torch.cuda.synchronize()
assert x.sum().item() == 32
"""


def test_a_profiler_holding_cupti_leaves_the_program_unrecorded(tmp_path: Path) -> None:
    # In a process of its own: once torch.profiler has run, Kineto keeps the process's CUPTI
    # subscriber, and every CUPTI test after it in the same pytest process failed.
    done = subprocess.run(
        [sys.executable, "-c", _PROFILER_HOLDS_CUPTI, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    said = [line for line in done.stderr.splitlines() if "graphscope record" in line]
    assert len(said) == 1 and "runs unrecorded" in said[0], said
    (rec,) = load_recordings(tmp_path)
    assert rec.process["status"] == "stopped" and "profiler" in rec.process["stop_reason"]


def test_a_native_process_that_uses_cuda_is_named_as_not_recorded(tmp_path: Path) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the native program")
    binary = tmp_path / "native-cuda"
    source = PROGRAMS / "native_cuda.c"
    subprocess.run([compiler, "-O1", "-o", str(binary), str(source), "-ldl"], check=True)
    out = tmp_path / "rec"
    done = run_record(out, [str(binary)])
    assert done.returncode == 0, done.stderr[-4000:]
    said = not_recorded(done.stderr)
    assert len(said) == 1 and "(native-cuda)" in said[0] and "not a Python process" in said[0]
    (entry,) = json.loads((out / "run.json").read_text())["unrecorded_processes"]
    assert entry["name"] == "native-cuda" and entry["pid"] > 0


def test_torch_compile_s_own_reason_for_recording_again_and_for_skipping(tmp_path: Path) -> None:
    """A compiled model whose weight is rebound: torch records it again and says why only in
    a debug log; the recording names the moved input and the line that reads it. A compiled
    function that mutates its input runs without graphs: the line that mutates it."""
    out = _out(tmp_path, "compile-rerecord")
    (line,) = _record(out, "compile_rerecord.py", "--steps", "5")
    assert line["graph_follows_the_new_weight"]  # torch's re-record is right, and costs
    rec = _with_graphs(out)
    source = (PROGRAMS / "compile_rerecord.py").read_text().splitlines()
    reads = 1 + next(i for i, text in enumerate(source) if "torch.relu(self.proj(x))" in text)
    mutates = 1 + next(i for i, text in enumerate(source) if "total.add_(x)" in text)
    again = [g for g in rec.graphs if g.get("rerecord_of")]
    assert again, [(g["id"], g.get("site")) for g in rec.graphs]
    reason = str(again[0]["rerecord_reason"])
    assert reason.startswith("static input data pointer changed: "), reason
    assert f"compile_rerecord.py:{reads} in forward" in reason, reason
    reasons = [str(r) for r in rec.fallbacks.get("reasons") or []]
    assert any("mutated inputs" in r and f"compile_rerecord.py:{mutates}" in r for r in reasons)
    # What the skip cost: each of the 5 calls of `accumulate` ran eagerly; the first (which
    # may autotune) is not timed, the other 4 are.
    (skipped,) = rec.fallbacks["skipped"]
    assert skipped["reason"] in reasons and skipped["calls"] == 5, skipped
    assert skipped["timed"] == 4 and 0 < skipped["gpu_us_median"] < 10_000, skipped
    lines = _check_lines(out)
    rerecord = next(x for x in lines if x.startswith(f"{out}: rerecord: "))
    assert "static input data pointer changed" in rerecord and f":{reads} in forward" in rerecord
    skips = next(x for x in lines if x.startswith(f"{out}: skips: "))
    assert f"compile_rerecord.py:{mutates}" in skips, skips
    assert "5 calls ran eagerly" in skips and "us of GPU time each (median of 4 timed)" in skips
    # After its graphs the program compiles `accumulate` (CPU work) and runs it a few times:
    # no fallback to eager, whatever the launch counts alone would suggest.
    assert not [x for x in lines if x.startswith(f"{out}: graphs-stopped: ")], lines


def _check_lines(out: Path, *rules: str) -> list[str]:
    """The lines ``graphscope check`` prints for ``out`` (under ``rules``, else the default
    ones), which must fail it."""
    command = [sys.executable, "-m", "graphscope", "check", str(out), *rules]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    return done.stdout.splitlines()


def test_batches_past_the_largest_graph_are_named_as_the_graphs_stopping(tmp_path: Path) -> None:
    """Graphs for batches 1, 2 and 4 serve for 3 s; then batches of 5 to 8 run eagerly for
    6 s. No sampled window opens without a graph launch: the coverage bins say it."""
    out = _out(tmp_path, "outgrow")
    (line,) = _record(out, "outgrow.py", "--graphed-seconds", "3", "--eager-seconds", "6")
    assert line["replays"] > 0 and line["eager_steps"] > 0
    rec = _with_graphs(out)
    assert sum(sum(b["launches"].values()) for b in rec.coverage["bins"]) == line["replays"]
    lines = _check_lines(out)
    stopped = next(x for x in lines if x.startswith(f"{out}: graphs-stopped: "))
    # the recorder's probes saw the eager steps: kernels outside graphs after the stop
    assert "The program ran on eagerly: " in stopped, stopped
    found = coverage.stop(rec)
    assert found is not None and found.eager and found.probe_kernels > 0, found
    assert rec.sampling["probe_kernels"] >= found.probe_kernels
    # and caught the eager steps on the program's stack: batches 5 to 8, past the largest graph
    assert found.batches and set(found.batches) <= {5, 6, 7, 8}, found.batches
    assert "all larger than its largest graph, batch 4" in stopped, stopped


def test_a_stretch_of_batches_past_the_largest_graph_inside_the_run_is_a_lapse(
    tmp_path: Path,
) -> None:
    """Graphs for 2 s, batches of 5 to 8 eagerly for 5 s, graphs again for 2 s."""
    out = tmp_path / "outgrow-lapse"
    args = ["--graphed-seconds", "2", "--eager-seconds", "5", "--graphed-again-seconds", "2"]
    (line,) = _record(out, "outgrow.py", *args)
    assert line["replays"] > 0 and line["eager_steps"] > 0
    rec = _with_graphs(out)
    assert coverage.stop(rec) is None
    (lapse,) = coverage.lapses(rec)
    assert 3.0 <= lapse.seconds <= 6.0 and lapse.probe_kernels > 0, lapse
    lines = _check_lines(out)
    said = next(x for x in lines if x.startswith(f"{out}: graphs-stopped: "))
    assert "while the program ran on eagerly" in said and "launched again" in said, said
