"""The graphscope command as a person and a script use it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import graphscope
from graphscope.cli import main

DOT = Path(__file__).resolve().parents[2] / "samples" / "dot"


def test_inspect_prints_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(DOT / "explicit-all-types" / "flags-verbose.dot")]) == 0
    out = capsys.readouterr().out
    assert "nodes 33   edges 25   graphs 9" in out
    assert "graph_6  in graph_5_node_2  2 nodes" in out
    assert "graphscope_fill2d" in out and "4x16x1" in out and "16x4x1" in out


def test_large_figures_have_thousands_separators(capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 27: `inspect` printed "types  KERNEL 10779" and `diff` "+21029.5 us".
    large = DOT.parent / "large" / "hf-deep-llama-b1.json.gz"
    assert main(["inspect", str(large)]) == 0
    assert "types  KERNEL 10,779  MEMCPY 1" in capsys.readouterr().out
    main(["diff", str(DOT.parent / "bundles" / "tiny-llama-b1.json.gz"), str(large)])
    out = capsys.readouterr().out
    assert "replay: 394.7 us -> 21.42 ms (+21,029.5 us, +5,327.4%)" in out, out


def test_inspect_says_how_many_labels_name_a_module_and_an_op(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # tiny-gpt: two nodes of the model's own forward (module ""), one copy outside it (None).
    assert main(["inspect", str(DOT.parent / "bundles" / "tiny-gpt-b1.json.gz")]) == 0
    out = capsys.readouterr().out
    assert "attribution: 67 of 67 nodes labelled, 66 inside a module, 67 with an aten op" in out


def test_inspect_json_for_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    llama = DOT / "torch-llama-decode" / "flags-verbose.dot"
    assert main(["inspect", "--json", str(llama)]) == 0
    [summary] = json.loads(capsys.readouterr().out)
    assert summary["file"] == str(llama)
    assert summary["nodes"] == 211 and summary["types"] == {"KERNEL": 211}
    assert summary["depth"] == 211 and summary["widest_level"] == 1
    assert sum(k["count"] for k in summary["kernels"]) == 211
    norm = [
        k
        for k in summary["kernels"]
        if k["short_name"].startswith("rsqrt") or "rsqrt" in k["short_name"]
    ]
    assert norm and norm[0]["launch_configs"][0]["grid"] == [1, 1, 1]


def test_bad_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.dot"
    bad.write_text("digraph G { a -> b; }\n")
    result = subprocess.run(
        [sys.executable, "-m", "graphscope.cli", "inspect", str(bad)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"graphscope: error: {bad}:1: ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_inspect_goes_on_past_a_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "cut.dot"
    bad.write_text((DOT / "torch-ops" / "flags-verbose.dot").read_text()[:900])
    good = DOT / "torch-ops" / "flags-none.dot"
    assert main(["inspect", str(bad), str(good)]) == 2
    captured = capsys.readouterr()
    assert "truncated" in captured.err and str(good) in captured.out


def test_convert_dot_to_bundle_and_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = DOT / "stream-capture-misc" / "flags-verbose.dot"
    bundle, dot = tmp_path / "g.json.gz", tmp_path / "g.dot"
    assert main(["convert", str(source), str(bundle)]) == 0
    assert main(["convert", str(bundle), str(dot)]) == 0
    assert "12 nodes, 12 edges" in capsys.readouterr().out
    assert main(["inspect", "--json", str(dot)]) == 0
    assert json.loads(capsys.readouterr().out)[0]["types"]["MEM_ALLOC"] == 1


def test_convert_refuses_unknown_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["convert", str(DOT / "torch-ops" / "flags-none.dot"), str(tmp_path / "g.png")]) == 2
    )
    assert "unknown output format" in capsys.readouterr().err


def test_inspect_shows_times_from_a_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import graphscope

    G = graphscope.load(DOT / "torch-ops" / "flags-verbose.dot")
    slow = "graph_14_node_2"  # the cuBLAS GEMM
    for i, key in enumerate(G):
        G.nodes[key]["replay"] = {"count": 10, "median_us": 50.0 if key == slow else 1.0 + i}
    G.graph["timing"] = {"eager_step_us": 4800.0, "replay_us": 470.0}
    bundle = graphscope.save(G, tmp_path / "timed.json.gz")
    assert main(["inspect", str(bundle)]) == 0
    out = capsys.readouterr().out
    assert "(graphscope bundle)" in out
    assert "replay: 7 nodes timed" in out
    assert "eager step: 4.80 ms" in out and "graph replay: 470.0 us" in out
    kernel_lines = [line for line in out.splitlines() if line.strip().startswith("1 ")]
    assert "nvjet" in kernel_lines[0] and "50.0 us" in kernel_lines[0]  # slowest first


def test_serve_refuses_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(tmp_path / "gone.dot")]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"graphscope: error: {tmp_path / 'gone.dot'}: no such file"
    )


BUNDLES = Path(__file__).resolve().parents[2] / "samples" / "bundles"


def test_report_says_what_the_graph_saved(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(BUNDLES / "tiny-llama-b1.json.gz")]) == 0
    out = capsys.readouterr().out
    # The figures are the bundle's own (eager step over replay, eager launch CPU over replay's).
    t = graphscope.load(BUNDLES / "tiny-llama-b1.json.gz").graph
    speedup = t["timing"]["eager_step_us"] / t["timing"]["replay_wall_us"]
    saved = 100 * (1 - t["timing"]["cpu_launch_us"] / t["eager_summary"]["cpu_launch_us"])
    assert f"speedup {speedup:.1f}x; CPU launch overhead down {saved:.0f}%" in out
    assert "critical path: 212 nodes" in out and "a chain" in out
    assert "serialised-independent-work" in out and "q_proj, k_proj, v_proj" in out
    assert main(["report", "--json", str(BUNDLES / "tiny-gpt-parallel-b1.json.gz")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["parallelism"] > 1.1 and report["findings"]


def test_inspect_lists_findings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(DOT / "stream-capture-misc" / "flags-verbose.dot")]) == 0
    out = capsys.readouterr().out
    assert "[warning] host-node" in out and "[warning] allocation-node" in out


def test_diff_between_buckets_and_between_models(capsys: pytest.CaptureFixture[str]) -> None:
    b1, b8 = str(BUNDLES / "tiny-llama-b1.json.gz"), str(BUNDLES / "tiny-llama-b8.json.gz")
    assert main(["diff", b1, b8]) == 0
    out = capsys.readouterr().out
    assert "212 nodes matched, 0 added in B, 0 removed" in out
    assert "grid 1x1x1 -> 8x1x1" in out
    assert "B can update an executable graph of A in place" in out
    gpt, parallel = (str(BUNDLES / f"{m}-b1.json.gz") for m in ("tiny-gpt", "tiny-gpt-parallel"))
    assert main(["diff", "--json", gpt, parallel]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["update"]["ok"] is False and result["update"]["safe"] is False
    assert result["update"]["obstacles"][0]["result"] == "ERROR_TOPOLOGY_CHANGED"
    assert main(["diff", "--json", b1, b8]) == 0  # accepted; safe says whether hazards stand
    update = json.loads(capsys.readouterr().out)["update"]
    assert update["ok"] is True and update["safe"] is (not update["hazards"])


@pytest.mark.parametrize("budget", ["inf", "nan", "-3", "0", "1e400"])
def test_a_budget_that_is_no_size_is_refused_in_one_line(
    budget: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["buckets", str(BUNDLES / "tiny-llama.buckets.json"), "--budget-mib", budget]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--budget-mib" in err[0] and "is not a size in MiB" in err[0]


def test_buckets_with_a_budget_and_a_histogram(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(BUNDLES / "tiny-llama.buckets.json")
    assert main(["buckets", index, "--budget-mib", "8"]) == 0
    out = capsys.readouterr().out
    assert "best within 8.0 MiB: buckets 2 4 8" in out and "padding 19.4%" in out
    histogram = tmp_path / "traffic.csv"
    histogram.write_text("batch,count\n1,90\n8,10\n")
    assert main(["buckets", index, "--histogram", str(histogram), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["captured"]["padding_pct"] == 0.0
    assert main(["buckets", str(BUNDLES)]) == 2
    assert "several buckets files" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["perfetto", "model-explorer", "node-link"])
def test_export_writes_json(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"out.{fmt}.json"
    assert (
        main(["export", str(BUNDLES / "tiny-gpt-b1.json.gz"), "--format", fmt, "-o", str(out)]) == 0
    )
    assert json.loads(out.read_text())
    written = capsys.readouterr().out
    assert f"wrote {out}" in written
    if fmt == "model-explorer":
        overlay = tmp_path / f"out.{fmt}.node-data.json"
        assert f"wrote {overlay}" in written and json.loads(overlay.read_text())


def test_export_to_a_missing_folder_fails_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "nowhere" / "x.json"
    args = ["export", str(BUNDLES / "tiny-gpt-b1.json.gz"), "--format", "perfetto", "-o", str(out)]
    assert main(args) == 2
    assert "does not exist" in capsys.readouterr().err and not out.exists()
