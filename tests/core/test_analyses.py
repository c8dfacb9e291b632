"""Step report, critical path, findings, diff and update verdict, buckets: on the real samples."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import networkx as nx
import pytest

import graphscope
from graphscope.analysis.buckets import (
    Bucket,
    best_buckets,
    bucket_report,
    read_buckets,
    read_distribution,
)
from graphscope.analysis.critical_path import critical_path
from graphscope.analysis.diff import diff, match_nodes
from graphscope.analysis.findings import findings
from graphscope.analysis.report import step_report
from graphscope.analysis.update import hazard_groups, update_verdict
from graphscope.errors import InputError

BUNDLES = Path(__file__).resolve().parents[2] / "samples" / "bundles"
DOTS = Path(__file__).resolve().parents[2] / "samples" / "dot"


def _load(name: str) -> nx.DiGraph:
    return graphscope.load(BUNDLES / f"{name}.json.gz")


@pytest.fixture(scope="module")
def llama() -> nx.DiGraph:
    return _load("tiny-llama-b1")


@pytest.fixture(scope="module")
def parallel() -> nx.DiGraph:
    return _load("tiny-gpt-parallel-b1")


def test_step_report_adds_up_from_the_bundle(llama: nx.DiGraph) -> None:
    r = step_report(llama)
    t, eager = llama.graph["timing"], llama.graph["eager_summary"]
    assert r.speedup == pytest.approx(t["eager_step_us"] / t["replay_wall_us"])
    assert r.cpu_overhead_reduction_pct == pytest.approx(
        # the traced launch against the traced eager step (older bundles kept only that one)
        100 * (1 - t.get("cpu_launch_traced_us", t["cpu_launch_us"]) / eager["cpu_launch_us"])
    )
    medians = [d["replay"]["median_us"] for _, d in llama.nodes(data=True)]
    assert r.node_time_us == pytest.approx(sum(medians))
    assert [n["median_us"] for n in r.top_nodes] == sorted(medians, reverse=True)[:10]
    # A one-stream decode step is a chain: its critical path is every node.
    assert len(r.critical_path) == llama.number_of_nodes()
    assert r.parallelism == pytest.approx(1.0)
    assert r.span_over_critical is not None and r.span_over_critical >= 1.0
    layers = [m for m in r.top_modules if m["module"].startswith("model.layers.")]
    assert len(layers) == 4 and all(m["nodes"] == 46 for m in layers)
    assert sum(m["share_pct"] for m in r.top_modules) <= 100.0 + 1e-9


def test_a_multi_stream_step_has_parallelism_left_over(parallel: nx.DiGraph) -> None:
    r = step_report(parallel)
    assert r.critical_path_us is not None and r.node_time_us is not None
    assert r.critical_path_us < r.node_time_us
    assert r.parallelism is not None and r.parallelism > 1.1
    path = r.critical_path
    assert all(path[i + 1] in parallel.succ[path[i]] for i in range(len(path) - 1))


def test_critical_path_weighs_child_graphs_with_their_inside() -> None:
    G = graphscope.load(DOTS / "explicit-all-types" / "flags-verbose.dot")
    path, length = critical_path(G, lambda _key: 1.0)
    roots = [k for k, d in G.nodes(data=True) if d["parent"] is None]
    assert set(path) <= set(roots)
    flat = nx.dag_longest_path_length(G.subgraph(roots)) + 1  # nodes on the longest chain
    assert length > flat  # a child graph on the path counts its own chain, not one node


def test_report_of_a_dot_file_has_counts_and_findings_but_no_times() -> None:
    G = graphscope.load(DOTS / "explicit-all-types" / "flags-verbose.dot")
    r = step_report(G)
    assert r.speedup is None and r.critical_path_us is None and r.timed_nodes == 0
    assert {f["code"] for f in r.findings} == {"host-node", "allocation-node"}


def test_findings_name_host_and_allocation_nodes() -> None:
    G = graphscope.load(DOTS / "stream-capture-misc" / "flags-verbose.dot")
    found = {f.code: f for f in findings(G)}
    host = [k for k, d in G.nodes(data=True) if d["type"] == "HOST"]
    allocs = [k for k, d in G.nodes(data=True) if d["type"] in ("MEM_ALLOC", "MEM_FREE")]
    assert found["host-node"].nodes == host and found["host-node"].severity == "warning"
    assert sorted(found["allocation-node"].nodes) == sorted(allocs)
    assert all(f.why and f.fix for f in found.values())


def test_short_kernels_are_those_under_their_eager_launch(llama: nx.DiGraph) -> None:
    [short] = [f for f in findings(llama) if f.code == "short-kernel"]
    for key in short.nodes:
        data = llama.nodes[key]
        assert data["replay"]["median_us"] < data["eager"]["launch_us"]
    longer = [
        k
        for k, d in llama.nodes(data=True)
        if d["type"] == "KERNEL" and d["replay"]["median_us"] >= d["eager"]["launch_us"]
    ]
    assert set(short.nodes).isdisjoint(longer) and len(short.nodes) + len(longer) == 211
    assert short.details[0].startswith("model.layers.")
    assert "torch.compile" in short.fix


def test_a_compiled_step_is_not_told_to_compile(llama: nx.DiGraph) -> None:
    G = llama.copy()
    [before] = [f for f in findings(G) if f.code == "short-kernel"]
    G.nodes[before.nodes[0]]["name"] = "triton_poi_fused_mul_silu_1"  # as Inductor names them
    [short] = [f for f in findings(G) if f.code == "short-kernel"]
    assert "already compiled" in short.fix and "torch.compile" not in short.fix


def test_qkv_projections_are_found_as_serialised_independent_work(llama: nx.DiGraph) -> None:
    [serial] = [f for f in findings(llama) if f.code == "serialised-independent-work"]
    assert len(serial.details) == 4  # one per layer
    for line in serial.details:
        assert "q_proj, k_proj, v_proj" in line
    # tiny-gpt computes q, k and v with one fused GEMM: nothing to report there.
    assert "serialised-independent-work" not in {f.code for f in findings(_load("tiny-gpt-b1"))}


def test_a_copy_chain_and_a_parity_mismatch_are_findings(llama: nx.DiGraph) -> None:
    G = copy.deepcopy(llama)
    G.graph["parity"] = {
        **G.graph["parity"],
        "ok": False,
        "config": [
            {"node": "graph_1_node_3", "field": "grid", "graph": [1, 1, 1], "eager": [2, 1, 1]}
        ],
    }
    [mismatch] = [f for f in findings(G) if f.code == "parity-mismatch"]
    assert mismatch.nodes == ["graph_1_node_3"] and "grid" in mismatch.details[0]
    chain = nx.DiGraph()
    for i in range(4):
        chain.add_node(f"graph_1_node_{i}", graph_id=1, local_id=i, type="MEMSET", parent=None,
                       width=256, height=1, element_size=4)  # fmt: skip
        if i:
            chain.add_edge(f"graph_1_node_{i - 1}", f"graph_1_node_{i}")
    [tiny] = [f for f in findings(chain) if f.code == "tiny-copy-chain"]
    assert len(tiny.nodes) == 4


def test_a_pageable_copy_is_a_finding_and_a_pinned_one_is_not() -> None:
    G = graphscope.load(DOTS / "torch-ops" / "flags-verbose.dot")
    copies = [d for _, d in G.nodes(data=True) if d["type"] == "MEMCPY" and d["kind"] != "DtoD"]
    assert copies and all("PINNED" in str(d.get("src.memory_type")) + str(
        d.get("dst.memory_type")) for d in copies)  # fmt: skip
    assert "pageable-copy" not in {f.code for f in findings(G)}
    key = next(k for k, d in G.nodes(data=True) if d["type"] == "MEMCPY" and d["kind"] == "HtoD")
    G.nodes[key]["src.memory_type"] = "HOST (HOST PAGEABLE)"
    [pageable] = [f for f in findings(G) if f.code == "pageable-copy"]
    assert pageable.nodes == [key]


def test_two_buckets_match_node_for_node_and_may_update(llama: nx.DiGraph) -> None:
    b8 = _load("tiny-llama-b8")
    d = diff(llama, b8)
    assert d.matched == 212 and not d.added and not d.removed
    config = [c for c in d.changed if c.fields]
    assert config and all(
        set(c.fields) <= {"name", "grid", "block", "shared_mem", "bytes"} for c in config
    )
    grids = [c for c in config if "grid" in c.fields]
    assert any(c.fields["grid"][0] != c.fields["grid"][1] for c in grids)
    assert d.timing[0].delta_us is not None
    assert abs(d.timing[0].delta_us) == max(abs(c.delta_us or 0) for c in d.timing)
    assert d.update is not None and d.update.ok and d.update.paired == 212


def test_a_graph_diffed_with_itself_has_no_changes(llama: nx.DiGraph) -> None:
    d = diff(llama, llama)
    assert d.matched == 212 and not d.changed and not d.edges_added and d.update.ok  # type: ignore[union-attr]
    assert all(c.delta_us == 0 for c in d.timing)


def test_two_models_differ_in_topology_and_cannot_update(parallel: nx.DiGraph) -> None:
    gpt = _load("tiny-gpt-b1")
    d = diff(gpt, parallel)
    assert d.added and d.removed and d.edges_added
    pairs = match_nodes(gpt, parallel)
    assert all(gpt.nodes[a]["type"] == parallel.nodes[b]["type"] for a, b in pairs.items())
    assert d.update is not None and not d.update.ok
    assert d.update.result == "ERROR_TOPOLOGY_CHANGED"


def test_update_rules_name_the_node_that_prevents_the_update(llama: nx.DiGraph) -> None:
    B = copy.deepcopy(llama)
    B.nodes["graph_1_node_7"]["cooperative"] = 1
    memcpy = next(k for k, d in B.nodes(data=True) if d["type"] == "MEMCPY")
    B.nodes[memcpy]["src.memory_type"] = "HOST (HOST PINNED)"
    v = update_verdict(llama, B)
    assert not v.ok
    assert {(o.result, o.node) for o in v.obstacles} == {
        ("ERROR_ATTRIBUTES_CHANGED", "graph_1_node_7"),
        ("ERROR_PARAMETERS_CHANGED", memcpy),
    }
    C = copy.deepcopy(llama)
    C.remove_edge("graph_1_node_3", "graph_1_node_4")
    C.add_edge("graph_1_node_2", "graph_1_node_4")
    [obstacle] = update_verdict(llama, C).obstacles
    assert obstacle.result == "ERROR_TOPOLOGY_CHANGED" and obstacle.node == "graph_1_node_4"


def test_update_rules_for_memsets_and_allocations() -> None:
    A = graphscope.load(DOTS / "explicit-all-types" / "flags-verbose.dot")
    memsets = [k for k, d in A.nodes(data=True) if d["type"] == "MEMSET"]
    one_d = next(k for k in memsets if A.nodes[k]["height"] == 1)
    two_d = next(k for k in memsets if A.nodes[k]["height"] > 1)
    B = copy.deepcopy(A)
    B.nodes[one_d]["value"] = 7
    # The driver on the H200 accepted a new value for 1D and 2D memsets alike.
    B.nodes[two_d]["value"] = 7
    assert update_verdict(A, B).ok
    alloc = next(k for k, d in A.nodes(data=True) if d["type"] == "MEM_ALLOC")
    B.nodes[alloc]["bytes"] *= 2
    results = {(o.result, o.node) for o in update_verdict(A, B).obstacles}
    assert results == {("ERROR_NOT_SUPPORTED", alloc)}


def test_an_accepted_update_names_the_hazards_the_driver_keeps_quiet_about(
    llama: nx.DiGraph,
) -> None:
    # Two buckets of one capture process: the driver accepted b1 -> b8 (buckets.json).
    v = update_verdict(llama, _load("tiny-llama-b8"))
    assert v.ok and not v.safe and v.handles_compared is True
    kinds = {(h.kind, h.node) for h in v.hazards}
    # cuDNN's runtime-compiled SDPA kernel: one name, another function at each of 4 layers
    sdpa = [h for h in v.hazards if h.kind == "same-name-other-function"]
    assert len(sdpa) == 4 and all("cudnn_generated_fort_native_sdpa" in h.why for h in sdpa)
    # cuBLASLt picks another nvjet kernel at batch 8 (the case of sgl-project/sglang#37657)
    nvjet = [h for h in v.hazards if "nvjet" in h.why]
    assert len(nvjet) == 8 and {h.kind for h in nvjet} == {"function-replaced"}
    assert ("function-replaced", "graph_14_node_58") in kinds
    assert v.changes["kernel function"] == len(v.hazards)
    assert {"launch geometry", "argument values", "argument pointers"} <= set(v.changes)
    groups = hazard_groups(v)
    assert sum(len(g.nodes) for g in groups) == len(v.hazards)
    assert len(groups[0].nodes) >= len(groups[-1].nodes)


def test_update_hazards_and_changes_on_planted_edits(llama: nx.DiGraph) -> None:
    assert update_verdict(llama, llama).safe and update_verdict(llama, llama).changes == {}
    kernels = [k for k, d in llama.nodes(data=True) if d["type"] == "KERNEL" and d.get("args")]
    B = copy.deepcopy(llama)
    B.nodes[kernels[0]]["func_handle"] = "1"  # another function, same name, same process
    v = update_verdict(llama, B)
    assert [(h.kind, h.node) for h in v.hazards] == [("same-name-other-function", kernels[0])]
    assert v.changes == {"kernel function": 1}
    # From another process every handle differs: a name can no longer be told from a
    # function, and no same-name hazard is claimed.
    C = copy.deepcopy(llama)
    for k in kernels:
        C.nodes[k]["func_handle"] = str(int(C.nodes[k]["func_handle"]) + 4096)
    v = update_verdict(llama, C)
    assert v.handles_compared is False and v.safe and v.changes == {}
    # The same, on a real second capture from a separate run of the same command
    v = update_verdict(llama, graphscope.load(BUNDLES / "recapture" / "tiny-llama-b1.json.gz"))
    assert v.handles_compared is False and v.safe and "kernel function" not in v.changes
    # A pointer word and a value word of the arguments
    D = copy.deepcopy(llama)
    node = next(k for k in kernels if llama.nodes[k].get("pointers"))
    pointer = llama.nodes[node]["pointers"][0]
    args = copy.deepcopy(llama.nodes[node]["args"])
    arg = args[pointer["arg"]]
    at = 2 * pointer["offset"]
    arg["value"] = arg["value"][:at] + ("ff" * 8) + arg["value"][at + 16 :]
    D.nodes[node]["args"] = args
    assert update_verdict(llama, D).changes == {"argument pointers": 1}
    pointed = {(p["arg"], p["offset"]) for p in llama.nodes[node]["pointers"]}
    value = next(
        (i, o)
        for i, a in enumerate(llama.nodes[node]["args"])
        for o in range(0, a["size"] - a["size"] % 8 or a["size"], 8)
        if (i, o) not in pointed
    )
    args = copy.deepcopy(llama.nodes[node]["args"])
    text = args[value[0]]["value"]
    at = 2 * value[1]
    args[value[0]]["value"] = text[:at] + ("0" if text[at] != "0" else "1") + text[at + 1 :]
    D.nodes[node]["args"] = args
    assert update_verdict(llama, D).changes == {"argument values": 1}
    out: list[str] = []
    diff_text = diff(llama, B)
    from graphscope.text import render_diff

    render_diff("a", "b", diff_text, out.append)
    said = "".join(out)
    assert f"same-name-other-function at 1 ({kernels[0]})" in said
    assert "sgl-project/sglang#37657" in said


def test_bucket_report_of_the_samples() -> None:
    r = bucket_report(BUNDLES / "tiny-llama.buckets.json")
    assert [b.batch_size for b in r.buckets] == [1, 2, 4, 8]
    assert r.distribution == {n: pytest.approx(1 / 8) for n in range(1, 9)}
    # Uniform over 1..8 with buckets 1, 2, 4, 8: padded 0+0+1+0+3+2+1+0 of 36 real sequences.
    assert r.captured.padding_pct == pytest.approx(100 * 7 / 36)
    by_size = {b.batch_size: b for b in r.buckets}
    expected = (by_size[1].replay_us + by_size[2].replay_us + 2 * by_size[4].replay_us) / 8
    expected += 4 * by_size[8].replay_us / 8
    assert r.captured.mean_step_us == pytest.approx(expected)
    assert r.buckets[3].per_sequence_us == pytest.approx(r.buckets[3].replay_us / 8)
    assert json.loads(json.dumps(r.as_dict()))["buckets"][0]["per_sequence_us"] > 0


def test_best_buckets_under_a_budget_drop_what_costs_least() -> None:
    buckets = [
        Bucket(1, 100.0, 10, 10, 1000.0),
        Bucket(2, 110.0, 10, 10, 1100.0),
        Bucket(4, 120.0, 10, 10, 1200.0),
    ]
    dist = {1: 0.1, 2: 0.1, 4: 0.8}
    best = best_buckets(buckets, dist, budget_bytes=20)
    # Dropping 1 pads its batches into 2 (+10 us, 10% of steps); dropping 2 pads into 4 (+10
    # us, 10%); dropping 4 sends 80% of steps eagerly. Ties go to the smaller pool; both use 20.
    assert best is not None and 4 in best.sizes and len(best.sizes) == 2
    assert best.mean_step_us == pytest.approx(0.1 * 110 + 0.1 * 110 + 0.8 * 120)
    assert best_buckets(buckets, dist, budget_bytes=5) is None
    eager = best_buckets(buckets, dist, budget_bytes=10)
    assert eager is not None and eager.sizes == [4] and eager.eager_share_pct == 0.0


def test_histograms_and_bad_bucket_files(tmp_path: Path) -> None:
    csv = tmp_path / "batches.csv"
    csv.write_text("batch,count\n1,30\n4,10  # peak\n4,10\n")
    assert read_distribution(csv) == {1: pytest.approx(0.6), 4: pytest.approx(0.4)}
    (tmp_path / "h.json").write_text('{"2": 1, "8": 3}')
    assert read_distribution(tmp_path / "h.json") == {2: 0.25, 8: 0.75}
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2\nthree,4\n")
    with pytest.raises(InputError, match=r"bad.csv:2: expected"):
        read_distribution(bad)
    (tmp_path / "zero.csv").write_text("1,0\n")
    with pytest.raises(InputError, match="not all 0"):
        read_distribution(tmp_path / "zero.csv")
    other = tmp_path / "x.buckets.json"
    other.write_text('{"nodes": []}')
    with pytest.raises(InputError, match="buckets"):
        read_buckets(other)
    other.write_text('{"buckets": [{"batch_size": 1}]}')
    with pytest.raises(InputError, match="bucket 0"):
        read_buckets(other)
    with pytest.raises(InputError, match="several buckets files"):
        read_buckets(BUNDLES)
    with pytest.raises(InputError, match=r"no \*\.buckets\.json"):
        read_buckets(tmp_path / "..")


def test_graph_against_eager_node_by_node_sorts_the_losses_first() -> None:
    # Issue 28, part 3: which nodes run slower inside the graph than eagerly.
    from graphscope.analysis.node_times import node_times
    from graphscope.analysis.report import step_report

    G = graphscope.load(BUNDLES / "tiny-llama-b1.json.gz")
    times = node_times(G)
    assert times is not None and times.compared == G.number_of_nodes() == len(times.rows)
    deltas = [r["delta_us"] for r in times.rows]
    assert deltas == sorted(deltas, reverse=True)
    assert times.slower == sum(1 for d in deltas if d > 0)
    assert abs(times.graph_us - times.eager_us - (times.slower_us - times.faster_us)) < 1e-6
    first = times.rows[0]
    node = G.nodes[first["node"]]
    assert first["graph_us"] == node["replay"]["median_us"]
    assert first["eager_us"] == node["eager"]["duration_us"]
    report = step_report(G, top=5)
    assert report.graph_vs_eager is not None and len(report.graph_vs_eager["rows"]) == 5
    # A DOT dump, and a recorded graph, have no eager side to compare with.
    assert node_times(graphscope.load(BUNDLES / "tiny-llama-b1.dot")) is None
    recorded = BUNDLES.parent / "recordings" / "gpt-fast" / "pid1355" / "g5.json.gz"
    assert node_times(graphscope.load(recorded)) is None


def test_a_launch_call_slower_than_the_replay_is_a_cpu_bound_finding(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 27: a 10,780-node graph's launch call took more CPU than its replay kept the GPU
    busy, and no finding said so."""
    from graphscope.analysis.findings import launch_figures
    from graphscope.analysis.timing import step_timing
    from graphscope.cli import main

    large = BUNDLES.parent / "large" / "hf-deep-llama-b1.json.gz"
    for path, bound in ((BUNDLES / "tiny-gpt-b1.json.gz", False), (large, True)):
        G = graphscope.load(path)
        launch, _ = launch_figures(G)
        busy = step_timing(G).timing.gpu_busy_us
        assert launch is not None and busy and (launch > busy) is bound
        found = [f for f in findings(G) if f.code == "cpu-bound-launch"]
        assert len(found) == int(bound)
        if bound:
            assert f"takes {launch:,.1f} us of CPU, {launch - busy:,.1f} us" in found[0].title
            assert found[0].cost_us == pytest.approx(launch - busy)
    # The report sums each repeated module over its instances, on the terminal too.
    assert main(["report", str(large)]) == 0
    out = capsys.readouterr().out
    modules = [(d.get("attribution") or {}).get("module") or "" for _, d in G.nodes(data=True)]
    layers = {m.split(".")[2] for m in modules if m.startswith("model.layers.")}
    assert "repeated modules, summed over their instances" in out
    line = next(x for x in out.splitlines() if "  model.layers.*  (" in x)
    assert f"({len(layers)} of them," in line, line
