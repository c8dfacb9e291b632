"""On a GPU: the whole capture path, from a model to a bundle that inspect reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import graphscope
from graphscope.analysis.summary import summarize
from graphscope.cli import main

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("model", ["tiny-gpt", "tiny-llama"])
def test_capture_writes_a_timed_attributed_bundle(model: str, tmp_path: Path) -> None:
    from graphscope.capture import session

    bundle = session.capture_to_bundle(model, 2, tmp_path, replays=60)
    assert bundle.name == f"{model}-b2.json.gz"
    G = graphscope.load(bundle)
    dump = graphscope.load(tmp_path / f"{model}-b2.dot")
    assert set(G) == set(dump)  # node keys (graph and local ids) agree with the driver's dump
    kernels = [d for _, d in G.nodes(data=True) if d["type"] == "KERNEL"]
    assert len(kernels) > 20
    for data in kernels:
        assert data["replay"]["count"] == 60
        assert 0 < data["replay"]["min_us"] <= data["replay"]["median_us"]
        assert data["registers"] > 0 and data["max_threads_per_block"] > 0
        assert all("value" in arg for arg in data["args"])
        assert data["attribution"]["op"].startswith("aten::")
        assert data["attribution"]["file"] and data["attribution"]["line"] > 0
        assert data["eager"]["duration_us"] > 0 and data["eager"]["launch_api"]
    in_modules = [d for d in kernels if d["attribution"]["module"] is not None]
    assert len(in_modules) >= 0.9 * len(kernels)
    # A clean model: its graph computes what eager computes at the next step, op by op, and
    # no argument changes between two captures a step apart (no false alarm on a real model)
    numerics = G.graph["numerics"]
    assert not numerics.get("error"), numerics
    assert numerics["first"] is None and numerics["compared"] > 20, numerics
    assert not any(o["difference"] for o in numerics["outputs"]), numerics["outputs"]
    assert numerics["nodes_per_op_known"], numerics["notes"]
    assert G.graph["frozen"]["frozen"] == [], G.graph["frozen"]["frozen"][:3]
    assert G.graph["frozen"]["compared"] >= 0.9 * len(kernels)
    named = {p["buffer"] for d in kernels for p in d.get("pointers", []) if "buffer" in p}
    assert any(name.startswith("param:") for name in named)
    assert any(name.startswith("input:") for name in named)
    timing = G.graph["timing"]
    assert timing["replay_us"] > 0 and timing["cpu_launch_us"] > 0
    assert timing["unjoined_records"] == 0
    assert timing["graph_pool_bytes"] > 0
    assert G.graph["parity"]["ok"], summarize(G)["parity"]
    assert G.graph["eager_summary"]["kernels"] == len(kernels)
    prefill = G.graph["prefill"]
    assert prefill["kernels"] > 0 and 0 < prefill["gpu_busy_us"] <= prefill["gpu_span_us"]
    assert G.graph["batch_size"] == 2 and G.graph["device"]
    assert main(["inspect", str(bundle)]) == 0


def test_capture_command_writes_buckets_of_a_multi_stream_model(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["--model", "tiny-gpt-parallel", "--batch-sizes", "2", "1", "--out", str(out)]
    assert main(["capture", *args, "--replays", "30"]) == 0
    index = json.loads((out / "tiny-gpt-parallel.buckets.json").read_text())
    assert [b["batch_size"] for b in index["buckets"]] == [1, 2]
    for entry in index["buckets"]:
        G = graphscope.load(out / entry["bundle"])
        assert G.number_of_nodes() == entry["nodes"]
        assert G.graph["buckets"]["sizes"] == [1, 2]
        assert summarize(G)["widest_level"] >= 2  # attention and MLP branches side by side
        streams = {e["stream"] for _, d in G.nodes(data=True) if (e := d.get("eager"))}
        assert len(streams) >= 2
        assert G.graph["parity"]["ok"]
    lines = (out / "manifest.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["command"] for line in lines)


@pytest.mark.parametrize(
    ("factory", "op"),
    [
        ("breaks_item", "aten::_local_scalar_dense"),
        ("breaks_sync", None),
        ("breaks_cpu_tensor", "aten::"),
    ],
)
def test_a_capture_that_breaks_names_op_module_and_line(
    factory: str, op: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gpu_models
    import torch

    line = gpu_models.breaking_line(factory)
    out = tmp_path / "out"
    status = main(
        ["capture", "--model", f"gpu_models:{factory}", "--batch-sizes", "1", "--out", str(out)]
    )
    assert status == 1
    message = capsys.readouterr().err.strip()
    assert message.count("\n") == 0, message
    assert f"gpu_models.py:{line}" in message
    assert "in layer" in message
    if op is not None:
        assert op in message
    assert "still usable" in message
    assert not list(out.glob("*.json.gz")) and not list(out.glob("*.dot"))
    assert not (out / "manifest.jsonl").exists()
    assert torch.ones(3, device="cuda").sum().item() == 3.0  # the context still works
    assert torch.rand(3, device="cuda").lt(1).all()  # and so does the RNG the capture held


def test_inspect_graph_reads_a_graph_the_user_captured(tmp_path: Path) -> None:
    import torch
    from graphscope.capture import session

    x = torch.randn(256, 256, device="cuda")
    y = torch.empty_like(x)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        for _ in range(2):
            y.copy_(torch.relu(x @ x))
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph):
        y.copy_(torch.relu(x @ x))
    graph.replay()
    for target, name in ((graph, "engine"), (int(graph.raw_cuda_graph()), "raw")):
        bundle = session.inspect_graph(
            target, tmp_path, name=name, replays=20, buffers={"input:x": x, "output:y": y}
        )
        G = graphscope.load(bundle)
        kernels = [d for _, d in G.nodes(data=True) if d["type"] == "KERNEL"]
        assert kernels and all(d["replay"]["count"] == 20 for d in kernels)
        named = {p["buffer"] for d in kernels for p in d.get("pointers", []) if "buffer" in p}
        assert "input:x" in named
        assert (tmp_path / f"{name}.dot").exists()


def _python_blocks(doc: Path) -> list[str]:
    text = doc.read_text()
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


def test_the_capture_docs_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "CAPTURE.md"
    blocks = _python_blocks(doc)
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(doc), "exec"), {"__name__": "capture_docs"})
    index = json.loads((tmp_path / "bundles" / "capture_docs-my_step.buckets.json").read_text())
    assert [b["batch_size"] for b in index["buckets"]] == [1, 2, 4]
    G = graphscope.load(tmp_path / "bundles" / "capture_docs-my_step-b1.json.gz")
    kernels = [d for _, d in G.nodes(data=True) if d["type"] == "KERNEL"]
    assert kernels and all(d["attribution"]["op"].startswith("aten::") for d in kernels)
    assert {d["attribution"]["module"] for d in kernels} >= {"0", "1", "2"}
    assert G.graph["parity"]["ok"]
    assert (tmp_path / "bundles" / "engine.json.gz").exists()


def test_a_compiled_model_is_captured_as_it_runs_compiled(tmp_path: Path) -> None:
    """Attribution must not make torch.compile fall back to eager kernels during capture."""
    pytest.importorskip("triton")
    import gpu_models
    import torch
    from graphscope.capture import session

    def kernel_names(G: Any) -> list[str]:
        return sorted(d["name"] for _, d in G.nodes(data=True) if d["type"] == "KERNEL")

    G = graphscope.load(session.capture_to_bundle(gpu_models.compiled, 1, tmp_path, replays=20))
    # The same compiled model captured by hand, without graphscope's hooks, is the truth.
    _, _, run = gpu_models.compiled_parts(1)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph):
        run()
    truth = graphscope.load(session.inspect_graph(graph, tmp_path, name="by-hand", replays=5))
    assert kernel_names(G) == kernel_names(truth)
    assert any("triton" in name for name in kernel_names(G))
    kernels = [d for _, d in G.nodes(data=True) if d["type"] == "KERNEL"]
    assert all(d["replay"]["count"] == 20 for d in kernels)
    for data in kernels:
        label = data["attribution"]
        assert label["module"] == ""  # compiled code runs no module hooks: the model itself
        assert label["file"].endswith("gpu_models.py")
    assert any((d["attribution"]["op"] or "").startswith("aten::mm") for d in kernels)
    named = {p["buffer"] for d in kernels for p in d.get("pointers", []) if "buffer" in p}
    assert any(name.startswith("param:0.") for name in named)  # not param:_orig_mod.0.


def test_a_hugging_face_folder_is_captured_with_and_without_weights(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    config = transformers.Qwen3Config(
        vocab_size=2048,
        hidden_size=256,
        intermediate_size=768,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=512,
    )
    transformers.Qwen3ForCausalLM(config).save_pretrained(tmp_path / "with-weights")
    config.save_pretrained(tmp_path / "config-only")
    for folder in ("with-weights", "config-only"):
        out = tmp_path / f"out-{folder}"
        spec = f"hf:{tmp_path / folder}"
        args = ["capture", "--model", spec, "--batch-sizes", "2", "--out", str(out)]
        assert main([*args, "--replays", "30"]) == 0
        G = graphscope.load(out / f"hf-{folder}-b2.json.gz")
        kernels = [d for _, d in G.nodes(data=True) if d["type"] == "KERNEL"]
        assert len(kernels) > 50
        assert all(d["replay"]["count"] == 30 for d in kernels)
        assert all(d["attribution"]["op"].startswith("aten::") for d in kernels)
        modules = {d["attribution"]["module"] for d in kernels}
        assert "model.layers.1.self_attn.o_proj" in modules
        assert G.graph["parity"]["ok"]
        assert ("its weights" in G.graph["model_description"]) == (folder == "with-weights")
        assert "Qwen3ForCausalLM" in G.graph["model_description"]


@pytest.mark.parametrize(
    ("factory", "op", "finding"),
    [
        ("python_scalar", "aten::mul", "frozen-value"),
        ("rng_offset", "aten::add", "frozen-value"),
        ("feeds_by_rebinding", "aten::addmm", "rebound-input"),
        # the freed tensor's block may be handed to the tensor read a step later, so that
        # the two captures read one address: only the values can tell then
        ("reads_freed", "aten::add", "values-differ"),
    ],
)
def test_a_planted_fault_is_found_at_its_op_and_line(
    factory: str, op: str, finding: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gpu_models

    line = gpu_models.planted_line(factory)
    out = tmp_path / "out"
    assert (
        main(
            ["capture", "--model", f"gpu_models:{factory}", "--batch-sizes", "1", "--out", str(out)]
        )
        == 0
    )
    [bundle] = out.glob("*.json.gz")
    G = graphscope.load(bundle)
    first = G.graph["numerics"]["first"]
    assert first is not None, G.graph["numerics"]
    assert first["op"] == op and first["site"].startswith(f"gpu_models.py:{line} "), first
    assert first["nodes"] and all(G.nodes[k]["attribution"]["op"] == op for k in first["nodes"])
    frozen = G.graph["frozen"]["frozen"]
    assert {f["node"] for f in frozen} <= set(G), G.graph["frozen"]
    if finding != "values-differ":
        assert frozen and any(f["node"] in first["nodes"] for f in frozen), (frozen, first)
    capsys.readouterr()
    assert main(["report", str(bundle)]) == 0
    said = capsys.readouterr().out
    assert "[warning] values-differ" in said, said
    assert finding in said and f"gpu_models.py:{line}" in said, said
    if factory == "feeds_by_rebinding":
        # The graph reads the input it was captured with: freed since (an H100 run: the
        # warm-up steps' input), or kept and no longer written by the step.
        moved = [f for f in frozen if f["kind"] == "pointer"]
        assert moved and all(f["freed"] or f["written"] is False for f in moved), moved
        kept = [f for f in moved if not f["freed"]]
        assert ("which nothing the step does writes" in said) == bool(kept), said


def test_a_clean_step_raises_no_alarm(tmp_path: Path) -> None:
    from graphscope.capture import session

    from graphscope.analysis.findings import findings

    G = graphscope.load(session.capture_to_bundle("gpu_models:clean", 1, tmp_path, replays=20))
    assert G.graph["numerics"]["first"] is None, G.graph["numerics"]
    assert G.graph["frozen"]["frozen"] == [], G.graph["frozen"]
    codes = {f.code for f in findings(G)}
    assert not codes & {"values-differ", "frozen-value", "rebound-input", "values-not-compared"}


@pytest.mark.parametrize("factory", ["python_scalar", "clean"])
def test_inspect_graph_given_the_step_compares_the_users_graph_with_eager(
    factory: str, tmp_path: Path
) -> None:
    """A graph the user captured with torch.cuda.graph, given to inspect_graph with the step
    it was captured from: the planted scalar is found at its op and line, as capture finds
    it, and the clean step raises nothing."""
    import gpu_models
    import torch
    from graphscope.capture import session

    from graphscope.analysis.findings import findings

    step = getattr(gpu_models, factory)(1)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):  # the graph holds the third step's counter
            step.run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph):
        step.run()
    torch.cuda.synchronize()
    G = graphscope.load(session.inspect_graph(graph, tmp_path, name=factory, step=step))
    first, frozen = G.graph["numerics"]["first"], G.graph["frozen"]["frozen"]
    codes = {f.code for f in findings(G)}
    if factory == "clean":
        assert first is None and frozen == [], (G.graph["numerics"], frozen)
        assert not codes & {"values-differ", "frozen-value", "rebound-input"}
        return
    line = gpu_models.planted_line(factory)
    assert first is not None and first["op"] == "aten::mul", G.graph["numerics"]
    assert first["site"].startswith(f"gpu_models.py:{line} "), first
    assert any(f["node"] in first["nodes"] and f["kind"] == "value" for f in frozen), frozen
    assert {"values-differ", "frozen-value"} <= codes
