"""Diff on the real samples: every edge counted, and a changed kernel named on both sides."""

from __future__ import annotations

import copy
from pathlib import Path

import networkx as nx
import pytest
from dash_tree import text as shown_text
from graphscope.app.render.pages import compare_page

import graphscope
from graphscope.analysis.diff import diff, kernel_names, match_nodes
from graphscope.cli import main
from graphscope.text import render_diff

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
GPT, LLAMA = "bundles/tiny-gpt-b1.json.gz", "bundles/tiny-llama-b1.json.gz"
#: A kernel of tiny-llama whose short name another, different kernel of it shares.
TWIN = "elementwise_kernel<gpu_kernel_impl_nocast>"


def _load(name: str) -> nx.DiGraph:
    return graphscope.load(SAMPLES / name)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (GPT, LLAMA),
        (LLAMA, GPT),
        (GPT, "bundles/tiny-gpt-parallel-b1.json.gz"),
        ("dot/torch-ops/flags-verbose.dot", "dot/torch-llama-decode/flags-verbose.dot"),
        ("dot/explicit-all-types/flags-verbose.dot", "dot/stream-capture-misc/flags-verbose.dot"),
        ("dot/torch-multistream/flags-verbose.dot", "dot/torch-ops/flags-verbose.dot"),
    ],
)
def test_every_edge_of_an_unpaired_node_is_added_or_removed(a: str, b: str) -> None:
    A, B = _load(a), _load(b)
    d = diff(A, B)
    pairs = match_nodes(A, B)
    added, removed = set(d.added), set(d.removed)
    assert added or removed  # two different graphs
    edges_added = {tuple(e) for e in d.edges_added}
    edges_removed = {tuple(e) for e in d.edges_removed}
    assert {(u, v) for u, v in B.edges if u in added or v in added} <= edges_added
    assert {(u, v) for u, v in A.edges if u in removed or v in removed} <= edges_removed
    # The edges neither added nor removed are the same ones seen from each side.
    kept = {(pairs[u], pairs[v]) for u, v in A.edges if (u, v) not in edges_removed}
    assert kept == set(B.edges) - edges_added
    assert len(kept) == A.number_of_edges() - len(d.edges_removed)


@pytest.mark.parametrize(
    "b", ["bundles/recapture/tiny-llama-b1.json.gz", LLAMA, "bundles/tiny-llama-b8.json.gz"]
)
def test_one_topology_has_no_edge_added_or_removed(b: str) -> None:
    d = diff(_load(LLAMA), _load(b))
    assert d.matched == 212 and not d.added and not d.removed
    assert not d.edges_added and not d.edges_removed


def test_the_cli_counts_the_edges_of_two_models(capsys: pytest.CaptureFixture[str]) -> None:
    gpt, llama = _load(GPT), _load(LLAMA)
    assert main(["diff", str(SAMPLES / GPT), str(SAMPLES / LLAMA)]) == 0
    out = capsys.readouterr().out
    # Only the two last nodes (a GEMM, then a copy) pair: one edge of each is kept.
    assert match_nodes(gpt, llama) == {"graph_1_node_65": "graph_1_node_210",
        "graph_1_node_66": "graph_1_node_211"}  # fmt: skip
    assert gpt.has_edge("graph_1_node_65", "graph_1_node_66")
    assert llama.has_edge("graph_1_node_210", "graph_1_node_211")
    assert "2 nodes matched, 210 added in B, 65 removed from A" in out
    assert (
        f"{llama.number_of_edges() - 1} edges added, {gpt.number_of_edges() - 1} removed\n" in out
    )


def test_a_changed_kernel_is_named_in_a_and_in_b(capsys: pytest.CaptureFixture[str]) -> None:
    A, B = _load(LLAMA), _load("bundles/tiny-llama-b8.json.gz")
    renamed = [c for c in diff(A, B).changed if "name" in c.fields]
    assert renamed
    for c in renamed:
        assert c.kernels == [A.nodes[c.a]["short_name"], B.nodes[c.b]["short_name"]]
    old, new = A.nodes["graph_1_node_8"]["short_name"], B.nodes["graph_14_node_8"]["short_name"]
    assert old != new
    assert main(["diff", str(SAMPLES / LLAMA), str(SAMPLES / "bundles/tiny-llama-b8.json.gz")]) == 0
    assert f"graph_1_node_8 -> graph_14_node_8  kernel {old} -> {new}\n" in capsys.readouterr().out
    assert f"kernel: {old} -> {new}" in shown_text(compare_page(A, B))


def test_kernels_of_one_short_name_are_told_apart() -> None:
    A = _load(LLAMA)
    twins: dict[str, str] = {}
    for key, data in A.nodes(data=True):
        if data.get("short_name") == TWIN:
            twins.setdefault(data["name"], key)
    assert len(twins) == 2
    ka, kb = twins.values()
    labels = kernel_names(A.nodes[ka], A.nodes[kb])
    assert labels[0] != labels[1] and all(x.startswith(TWIN + " [") for x in labels)
    assert "where_kernel_impl" in " ".join(labels) and "neg_kernel_cuda" in " ".join(labels)
    assert kernel_names(A.nodes[ka], A.nodes[ka]) == [TWIN, TWIN]
    # B: A with ka launching kb's kernel, so that the diff pairs two kernels of one short name.
    B = copy.deepcopy(A)
    for field in ("name", "demangled", "short_name"):
        B.nodes[ka][field] = A.nodes[kb][field]
    d = diff(A, B)
    [change] = [c for c in d.changed if c.fields]
    assert change.kernels == labels
    lines: list[str] = []
    render_diff("A", "B", d, lines.append)
    assert f"    {ka} -> {ka}  kernel {labels[0]} -> {labels[1]}\n" in lines
    assert f"kernel: {labels[0]} -> {labels[1]}" in shown_text(compare_page(A, B))
