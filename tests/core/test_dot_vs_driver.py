"""The DOT reader against the driver's own record of the same graphs (samples/dot)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from driver_truth import FIELDS, flag_set, load_truth, mismatches

import graphscope
from graphscope.model import NODE_TYPES

DUMPS = sorted((Path(__file__).resolve().parents[2] / "samples" / "dot").glob("*/*.dot"))


def test_samples_cover_every_node_type_and_flag_set() -> None:
    seen_types: Counter[str] = Counter()
    seen_flags = set()
    for dump in DUMPS:
        seen_flags.add(flag_set(dump))
        seen_types.update(n["type"] for n in load_truth(dump)["nodes"])
    assert seen_flags == set(FIELDS)
    assert set(seen_types) == set(NODE_TYPES)


@pytest.mark.parametrize("dump", DUMPS, ids=[f"{d.parent.name}/{d.name}" for d in DUMPS])
def test_reader_matches_driver(dump: Path) -> None:
    G = graphscope.load(dump)
    assert mismatches(G, load_truth(dump), flag_set(dump)) == []


def test_child_and_conditional_graphs_have_their_own_ids(samples: Path) -> None:
    G = graphscope.load(samples / "dot" / "explicit-all-types" / "flags-verbose.dot")
    conditional = G.nodes["graph_1_node_20"]
    assert conditional["conditional_type"] == "SWITCH"
    assert conditional["bodies"] == [10, 11, 12]
    assert conditional["body_labels"] == ["0", "1", "2"]
    nested = G.nodes["graph_6_node_1"]
    assert nested["graph_id"] == 6
    assert nested["parent"] == "graph_5_node_2"
    assert G.nodes["graph_5_node_2"]["parent"] == "graph_1_node_17"


def test_verbose_labels_keep_everything_they_carry(samples: Path) -> None:
    G = graphscope.load(samples / "dot" / "explicit-all-types" / "flags-verbose.dot")
    kernel = G.nodes["graph_1_node_2"]
    assert kernel["topo_id"] == 18
    scale, child_scale = G.nodes["graph_1_node_1"], G.nodes["graph_5_node_0"]
    assert scale["func_handle"] == child_scale["func_handle"] != kernel["func_handle"]
    assert len({scale["node_handle"], child_scale["node_handle"], kernel["node_handle"]}) == 3
    assert kernel["access_policy_window.hit_prop"] == "N"
    assert kernel["cooperative"] == 0 and kernel["priority"] == 0
    copy = G.nodes["graph_1_node_0"]
    assert copy["src.memory_type"] == "HOST (HOST PINNED)"
    assert copy["dst.device"] == G.nodes["graph_1_node_5"]["src.device"]  # both on `dev`
    host = G.nodes["graph_1_node_8"]
    assert host["fn"] > 0 and host["user_data"] == 0
    assert G.nodes["graph_1_node_9"]["event"] == G.nodes["graph_1_node_10"]["event"]
    alloc = G.nodes["graph_1_node_13"]
    assert alloc["pool_props.location.type"] == "DEVICE"
    assert alloc["dptr"] == G.nodes["graph_1_node_15"]["dptr"]
    batch = G.nodes["graph_1_node_16"]
    assert batch["param_array[0].op"] == "WRITE_VALUE_32" and batch["param_array[0].val"] == 7
    assert G.nodes["graph_1_node_18"]["conditional_handle"] == 1


def test_kernel_names_are_demangled_and_shortened(samples: Path) -> None:
    G = graphscope.load(samples / "dot" / "torch-ops" / "flags-verbose.dot")
    norm = G.nodes["graph_14_node_1"]
    assert norm["name"].startswith("_ZN2at6native")
    assert norm["demangled"].startswith("void at::native::")
    assert norm["short_name"] == "vectorized_layer_norm_kernel<Half, float>"
    gemm = G.nodes["graph_14_node_2"]
    assert gemm["name"] == gemm["demangled"] == gemm["short_name"]  # cuBLAS: not mangled


def test_multistream_fork_join_is_a_dag_with_parallel_branches(samples: Path) -> None:
    G = graphscope.load(samples / "dot" / "torch-multistream" / "flags-verbose.dot")
    widths = [len(level) for level in __import__("networkx").topological_generations(G)]
    assert max(widths) >= 2
