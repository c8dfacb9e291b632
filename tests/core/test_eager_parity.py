"""The eager step beside the graph, on the real bundles from the H200 (samples/bundles)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

import graphscope
from graphscope.analysis.eager import eager_gpu, eager_summary, graph_ops, join_eager

BUNDLES = Path(__file__).resolve().parents[2] / "samples" / "bundles"
SAMPLES = sorted(p.name for p in BUNDLES.glob("*.json.gz"))


@pytest.fixture(scope="module")
def loaded() -> dict[str, nx.DiGraph]:
    return {name: graphscope.load(BUNDLES / name) for name in SAMPLES}


def _kernel_rows(trace: dict[str, Any]) -> list[int]:
    fields = trace["gpu"]["fields"]
    return [
        i for i, row in enumerate(trace["gpu"]["rows"]) if row[fields.index("type")] == "KERNEL"
    ]


@pytest.mark.parametrize("name", SAMPLES)
def test_stored_join_and_summary_are_what_the_trace_gives(
    name: str, loaded: dict[str, nx.DiGraph]
) -> None:
    G = loaded[name]
    trace = G.graph["eager_trace"]
    joined = join_eager(G, trace)
    assert joined.parity == G.graph["parity"]
    assert joined.parity["ok"] and joined.parity["matched"] == len(graph_ops(G))
    for key, entry in joined.nodes.items():
        assert G.nodes[key]["eager"] == entry
    assert eager_summary(trace) == G.graph["eager_summary"]


@pytest.mark.parametrize("name", SAMPLES)
def test_each_node_joins_the_launch_of_the_same_kernel(
    name: str, loaded: dict[str, nx.DiGraph]
) -> None:
    G = loaded[name]
    ops = eager_gpu(G.graph["eager_trace"])
    for key in graph_ops(G):
        data = G.nodes[key]
        op = ops[data["eager"]["index"]]
        assert op["type"] == data["type"]
        if data["type"] == "KERNEL":
            assert op["name"] == data["name"]
            assert (op["grid"], op["block"]) == (data["grid"], data["block"])
            assert op["launch"]["name"].startswith(("cudaLaunch", "cuLaunch"))
            assert data["eager"]["launch_start_us"] <= data["eager"]["start_us"]


@pytest.mark.parametrize("name", SAMPLES)
def test_eager_summary_adds_up(name: str, loaded: dict[str, nx.DiGraph]) -> None:
    G = loaded[name]
    s = G.graph["eager_summary"]
    kernels = sum(1 for _, d in G.nodes(data=True) if d["type"] == "KERNEL")
    assert s["kernels"] == kernels and s["launch_calls"] >= kernels
    assert 0 < s["cpu_launch_us"] <= s["cpu_api_us"] <= s["step_us"]
    assert 0 < s["gpu_busy_us"] <= s["gpu_span_us"] <= s["step_us"]
    assert s["gpu_idle_us"] == pytest.approx(s["gpu_span_us"] - s["gpu_busy_us"])
    # The trace starts after CUPTI's own setup, not 45 ms before the step's first kernel.
    assert s["first_gpu_start_us"] < 1000


def test_eager_launches_of_the_parallel_step_use_two_streams(
    loaded: dict[str, nx.DiGraph],
) -> None:
    G = loaded["tiny-gpt-parallel-b1.json.gz"]
    streams = {d["eager"]["stream"] for _, d in G.nodes(data=True) if "eager" in d}
    assert len(streams) >= 2


def test_a_kernel_missing_from_the_eager_step_is_named(loaded: dict[str, nx.DiGraph]) -> None:
    G = loaded["tiny-llama-b1.json.gz"]
    trace = copy.deepcopy(G.graph["eager_trace"])
    dropped = _kernel_rows(trace)[100]
    del trace["gpu"]["rows"][dropped]
    missing = next(k for k in graph_ops(G) if G.nodes[k]["eager"]["index"] == dropped)
    parity = join_eager(G, trace).parity
    assert not parity["ok"]
    assert [e["node"] for e in parity["only_in_graph"]] == [missing]
    assert parity["only_in_eager"] == [] and parity["config"] == []
    name = G.nodes[missing]["name"]
    [count] = [c for c in parity["counts"] if c["what"] == f"KERNEL {name}"]
    assert count["graph"] == count["eager"] + 1
    assert parity["matched"] == parity["graph_ops"] - 1


def test_a_launch_configuration_change_is_named(loaded: dict[str, nx.DiGraph]) -> None:
    G = loaded["tiny-llama-b1.json.gz"]
    trace = copy.deepcopy(G.graph["eager_trace"])
    fields = trace["gpu"]["fields"]
    changed = _kernel_rows(trace)[7]
    row = trace["gpu"]["rows"][changed]
    grid = row[fields.index("grid")]
    row[fields.index("grid")] = [grid[0] * 2, grid[1], grid[2]]
    node = next(k for k in graph_ops(G) if G.nodes[k]["eager"]["index"] == changed)
    parity = join_eager(G, trace).parity
    assert not parity["ok"] and parity["matched"] == parity["graph_ops"]
    assert parity["config"] == [
        {
            "node": node,
            "name": G.nodes[node]["name"],
            "field": "grid",
            "graph": grid,
            "eager": [grid[0] * 2, grid[1], grid[2]],
        }
    ]


def test_an_extra_eager_launch_is_named(loaded: dict[str, nx.DiGraph]) -> None:
    G = loaded["tiny-gpt-b1.json.gz"]
    trace = copy.deepcopy(G.graph["eager_trace"])
    fields = trace["gpu"]["fields"]
    index = _kernel_rows(trace)[10]
    extra = list(trace["gpu"]["rows"][index])
    trace["gpu"]["rows"].insert(index + 1, extra)
    parity = join_eager(G, trace).parity
    assert not parity["ok"]
    assert len(parity["only_in_eager"]) == 1 and parity["only_in_graph"] == []
    assert parity["only_in_eager"][0]["what"] == f"KERNEL {extra[fields.index('name')]}"
    assert parity["matched"] == parity["graph_ops"]
