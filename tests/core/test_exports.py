"""Exports checked against their consumers' published format rules, on the real samples."""

from __future__ import annotations

import copy
import dataclasses
import gzip
import itertools
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

import graphscope
from graphscope.analysis.torch_trace import records_from_torch_trace, with_torch_trace
from graphscope.cli import main
from graphscope.errors import InputError
from graphscope.exports import (
    chrome_trace,
    model_explorer_graph,
    model_explorer_node_data,
    node_link,
)

BUNDLES = Path(__file__).resolve().parents[2] / "samples" / "bundles"
DOT = Path(__file__).resolve().parents[2] / "samples" / "dot" / "explicit-all-types"


@pytest.fixture(scope="module", params=["tiny-llama-b1", "tiny-gpt-parallel-b1"])
def bundle(request: pytest.FixtureRequest) -> nx.DiGraph:
    return graphscope.load(BUNDLES / f"{request.param}.json.gz")


def test_chrome_trace_follows_the_trace_event_format(bundle: nx.DiGraph) -> None:
    events = chrome_trace(bundle)["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    for e in complete:
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["name"]
        assert isinstance(e["ts"], float) and isinstance(e["dur"], float) and e["dur"] >= 0
    # Every process and thread that holds events is named by a metadata event.
    named = {
        (e["pid"], e.get("tid")) for e in events if e["ph"] == "M" and e["name"].endswith("_name")
    }
    assert {(e["pid"], e["tid"]) for e in complete} <= named
    assert {(e["pid"], None) for e in complete} <= named
    # Flow arrows come in start/finish pairs sharing an id, bound to the enclosing slice.
    flows = Counter((e["id"], e["ph"]) for e in events if e["ph"] in ("s", "f"))
    ids = {i for i, _ in flows}
    assert ids and all(flows[(i, "s")] == flows[(i, "f")] == 1 for i in ids)
    assert all(e["bp"] == "e" for e in events if e["ph"] == "f")
    # Eager launches: one arrow per GPU op that has its launch call; replay: one.
    eager_gpu = [e for e in complete if e["pid"] == 1 and e["cat"].startswith("gpu_")]
    assert len(eager_gpu) == bundle.graph["eager_summary"]["kernels"] + bundle.graph[
        "eager_summary"]["copies"] + bundle.graph["eager_summary"]["memsets"]  # fmt: skip
    replayed = [e for e in complete if e["pid"] == 2 and e["cat"].startswith("gpu_")]
    assert {e["args"]["node"] for e in replayed} == set(bundle)
    assert all(e["args"]["node"] in bundle for e in eager_gpu if "node" in e["args"])
    # Replayed nodes on one lane never overlap, so Perfetto draws them as a flat track.
    for tid in {e["tid"] for e in replayed}:
        lane = sorted((e["ts"], e["ts"] + e["dur"]) for e in replayed if e["tid"] == tid)
        assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(lane))
    json.dumps(events)  # plain JSON


def test_parallel_branches_get_more_than_one_replay_lane() -> None:
    G = graphscope.load(BUNDLES / "tiny-gpt-parallel-b1.json.gz")
    events = chrome_trace(G)["traceEvents"]
    lanes = {e["tid"] for e in events if e["ph"] == "X" and e["pid"] == 2 and e["tid"] >= 1000}
    assert len(lanes) >= 2


def test_a_dot_file_makes_an_empty_trace() -> None:
    assert chrome_trace(graphscope.load(DOT / "flags-verbose.dot"))["traceEvents"] == []


def test_node_link_round_trips(bundle: nx.DiGraph) -> None:
    data = json.loads(json.dumps(node_link(bundle)))
    H = nx.node_link_graph(data, edges="edges")
    assert set(H) == set(bundle) and set(H.edges) == set(bundle.edges)
    key = next(iter(bundle))
    assert H.nodes[key] == json.loads(json.dumps(bundle.nodes[key]))
    assert H.graph["model"] == bundle.graph["model"]


def _fields(cls: Any) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_model_explorer_graph_follows_its_graph_builder_schema(bundle: nx.DiGraph) -> None:
    # Field names of Model Explorer's graph_builder dataclasses (GraphNode, IncomingEdge,
    # KeyValue), written out here so that a change on either side shows.
    node_fields = {"id", "label", "namespace", "subgraphIds", "attrs", "incomingEdges",
                   "outputsMetadata", "inputsMetadata", "style", "config"}  # fmt: skip
    doc = json.loads(json.dumps(model_explorer_graph(bundle)))
    assert set(doc) == {"label", "graphs"} and doc["label"] == bundle.graph["model"]
    ids = {n["id"] for g in doc["graphs"] for n in g["nodes"]}
    assert ids == set(bundle)
    for graph in doc["graphs"]:
        assert set(graph) == {"id", "nodes"}
        for node in graph["nodes"]:
            assert set(node) <= node_fields and {"id", "label"} <= set(node)
            assert all(
                set(a) == {"key", "value"} and isinstance(a["value"], str) for a in node["attrs"]
            )
            for edge in node["incomingEdges"]:
                assert set(edge) == {"sourceNodeId", "sourceNodeOutputId", "targetNodeInputId"}
                assert edge["sourceNodeId"] in ids
            # Namespaces are "/" paths without the node itself, from attribution.
            assert "." not in node["namespace"]
    layers = {n["namespace"] for g in doc["graphs"] for n in g["nodes"]}
    assert any(ns.count("/") >= 2 for ns in layers)
    data = model_explorer_node_data(bundle)
    [graph_data] = data.values()
    assert set(graph_data["results"]) == set(bundle)
    assert all(set(v) == {"value"} for v in graph_data["results"].values())
    stops = [g["stop"] for g in graph_data["gradient"]]
    assert stops[0] == 0 and stops[-1] == 1


def test_model_explorer_child_graphs_are_subgraphs() -> None:
    G = graphscope.load(DOT / "flags-verbose.dot")
    doc = model_explorer_graph(G)
    graph_ids = {g["id"] for g in doc["graphs"]}
    owners = [n for g in doc["graphs"] for n in g["nodes"] if n["subgraphIds"]]
    assert owners and all(set(n["subgraphIds"]) <= graph_ids for n in owners)
    kinds = {dict((a["key"], a["value"]) for a in n["attrs"])["type"] for n in owners}
    assert kinds == {"GRAPH", "CONDITIONAL"}


def test_html_report_is_one_offline_file_with_names_as_text(tmp_path: Path) -> None:
    pytest.importorskip("dash")
    G = graphscope.load(BUNDLES / "tiny-gpt-b1.json.gz")
    hostile = copy.deepcopy(G)
    # The slowest node, so that the name is in the report's table as well as in the figures.
    key = max(G, key=lambda k: G.nodes[k]["replay"]["median_us"])
    hostile.nodes[key]["short_name"] = "<script>alert(1)</script>"
    graphscope.save(hostile, tmp_path / "hostile.json.gz")
    out = tmp_path / "report.html"
    assert (
        main(["export", str(tmp_path / "hostile.json.gz"), "--format", "html", "-o", str(out)]) == 0
    )
    page = out.read_text()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # Nothing is fetched: no element loads a script, style, image or frame from anywhere.
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=", page)
    assert page.count("<script") >= 3  # plotly.js inline, then one per figure
    assert page.count('class="plotly-graph-div"') == 2  # the DAG and the timeline
    assert "Findings (" in page and "Slowest nodes" in page


def test_the_html_report_of_a_dot_dump_draws_its_first_repeat_as_a_layer(tmp_path: Path) -> None:
    """The 224-layer dump, no module paths: its first repeated span is a labelled section, as
    the dashboard draws it."""
    pytest.importorskip("dash")
    dump = BUNDLES.parent / "large" / "hf-deep-llama-b1.dot"
    out = tmp_path / "report.html"
    assert main(["export", str(dump), "--format", "html", "-o", str(out)]) == 0
    assert re.search(r"nodes \d+\.\.\d+, 1 of 224", out.read_text())


def _kineto_events(G: nx.DiGraph) -> list[dict[str, Any]]:
    """The bundle's own CUPTI trace, spelt as torch.profiler's Chrome trace spells it."""
    from graphscope.analysis.eager import eager_calls, eager_gpu

    names = {d["name"]: d["demangled"] for _, d in G.nodes(data=True) if d.get("demangled")}
    statics = {
        d["name"]: d.get("static_shared_mem", 0) for _, d in G.nodes(data=True) if "name" in d
    }
    trace = G.graph["eager_trace"]
    events: list[dict[str, Any]] = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::mm",
            "ts": 1.0,
            "dur": 2.0,
            "tid": 5,
            "args": {},
        }
    ]
    for c in eager_calls(trace):
        events.append({"ph": "X", "cat": f"cuda_{c['domain']}", "name": c["name"], "tid": 5,
                       "ts": c["start_ns"] / 1000, "dur": (c["end_ns"] - c["start_ns"]) / 1000,
                       "args": {"correlation": c["correlation_id"]}})  # fmt: skip
    for op in eager_gpu(trace):
        args: dict[str, Any] = {"correlation": op["correlation_id"], "stream": op["stream_id"]}
        if op["type"] == "KERNEL":
            cat, name = "kernel", names.get(op["name"], op["name"])
            # Kineto's "shared memory" is dynamic plus static, as in the real trace.
            shared = op["shared_mem"] + statics.get(op["name"], 0)
            args.update(grid=op["grid"], block=op["block"], **{"shared memory": shared})
        elif op["type"] == "MEMCPY":
            cat, name = "gpu_memcpy", f"Memcpy {op['copy_kind']} (Device -> Device)"
            args["bytes"] = op["bytes"]
        else:
            cat, name = "gpu_memset", "Memset (Device)"
            args["bytes"] = op["bytes"]
        start, dur = op["start_ns"] / 1000, (op["end_ns"] - op["start_ns"]) / 1000
        events.append(
            {"ph": "X", "cat": cat, "name": name, "tid": 7, "args": args, "ts": start, "dur": dur}
        )
    return events


def test_a_profiler_trace_becomes_the_eager_trace(tmp_path: Path) -> None:
    G = graphscope.load(BUNDLES / "tiny-llama-b1.json.gz")
    path = tmp_path / "trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": _kineto_events(G)}).encode()))
    H = with_torch_trace(G, path)
    assert H.graph["parity"]["ok"] and H.graph["parity"]["matched"] == 212
    assert H.graph["eager_source"] == {"format": "torch-profiler", "file": "trace.json.gz"}
    assert H.graph["eager_summary"]["kernels"] == 211
    assert H.graph["eager_summary"]["cpu_launch_us"] == pytest.approx(
        G.graph["eager_summary"]["cpu_launch_us"], rel=1e-3
    )
    key = "graph_1_node_5"
    assert H.nodes[key]["eager"]["duration_us"] == pytest.approx(
        G.nodes[key]["eager"]["duration_us"], abs=1e-3
    )
    assert "eager_source" not in G.graph  # the loaded graph is left alone
    out = tmp_path / "joined.json.gz"
    assert (
        main(["import-trace", str(BUNDLES / "tiny-llama-b1.json.gz"), str(path), "-o", str(out)])
        == 0
    )
    assert graphscope.load(out).graph["eager_source"]["format"] == "torch-profiler"
    records = records_from_torch_trace(_kineto_events(G))
    assert sum(1 for r in records if r["kind"] == "kernel") == 211


def test_a_real_profiler_trace_joins_every_op() -> None:
    trace = Path(__file__).resolve().parents[2] / "samples" / "traces"
    G = graphscope.load(BUNDLES / "tiny-llama-b1.json.gz")
    H = with_torch_trace(G, trace / "tiny-llama-b1.torch-trace.json.gz")
    parity = H.graph["parity"]
    assert parity["ok"], parity  # same kernels, configurations and shared memory
    assert parity["matched"] == parity["graph_ops"] == parity["eager_ops"] == 212
    assert all("launch_api" in H.nodes[k]["eager"] for k in H)


def test_a_trace_of_another_model_is_refused_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 27: tiny-llama's trace joined 43 of tiny-gpt's 212 ops, "they differ", and the
    bundle was written with exit 0. Now nothing is written unless --force."""
    trace = Path(__file__).resolve().parents[2] / "samples" / "traces"
    args = [str(BUNDLES / "tiny-gpt-b1.json.gz"), str(trace / "tiny-llama-b1.torch-trace.json.gz")]
    out = tmp_path / "joined.json.gz"
    assert main(["import-trace", *args, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "under the 90% needed" in err and "Nothing written; --force writes" in err, err
    assert not out.exists() and not list(tmp_path.iterdir())
    assert main(["import-trace", *args, "-o", str(out), "--force"]) == 0
    assert "they differ" in capsys.readouterr().out
    assert graphscope.load(out).graph["eager_source"]["format"] == "torch-profiler"


def test_a_trace_without_gpu_work_or_of_another_kind_is_refused(tmp_path: Path) -> None:
    G = graphscope.load(BUNDLES / "tiny-gpt-b1.json.gz")
    cpu_only = tmp_path / "cpu.json"
    cpu_only.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 0}]}))
    with pytest.raises(InputError, match=r"ProfilerActivity\.CUDA"):
        with_torch_trace(G, cpu_only)
    (tmp_path / "x.json").write_text('{"nodes": []}')
    with pytest.raises(InputError, match="traceEvents"):
        with_torch_trace(G, tmp_path / "x.json")
    (tmp_path / "cut.json").write_text('{"traceEvents": [')
    with pytest.raises(InputError, match="not a Chrome trace JSON"):
        with_torch_trace(G, tmp_path / "cut.json")


def test_the_html_report_says_whether_the_graph_s_values_matched_eager_s(tmp_path: Path) -> None:
    pytest.importorskip("dash")
    planted = BUNDLES / "planted"
    out = tmp_path / "clean.html"
    clean = planted / "gpu_models-clean-b1.json.gz"
    assert main(["export", str(clean), "--format", "html", "-o", str(out)]) == 0
    page = out.read_text()
    assert (
        '<p id="values">Values: equal to eager&#x27;s at the step after the capture&#x27;s ('
        in (page)
    )
    out = tmp_path / "tiny.html"
    assert (
        main(["export", str(BUNDLES / "tiny-gpt-b1.json.gz"), "--format", "html", "-o", str(out)])
        == 0
    )
    assert 'id="values"' not in out.read_text()  # captured before values were compared
