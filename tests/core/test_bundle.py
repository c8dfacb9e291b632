"""Bundle and DOT writers against the readers, on the real samples."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import networkx as nx
import pytest

import graphscope
from graphscope.analysis.eager import encode_eager_trace
from graphscope.bundle import to_document
from graphscope.errors import BundleFormatError
from graphscope.model import SCHEMA_VERSION

DUMPS = sorted((Path(__file__).resolve().parents[2] / "samples" / "dot").glob("*/flags-*.dot"))


def _same(G: nx.DiGraph, H: nx.DiGraph) -> None:
    assert dict(G.nodes(data=True)) == dict(H.nodes(data=True))
    assert list(G.edges(data=True)) == list(H.edges(data=True))
    assert G.graph == H.graph


def _with_sections(G: nx.DiGraph) -> nx.DiGraph:
    """The sample graph with every per-node and graph section a capture bundle holds."""
    G = G.copy()
    for i, key in enumerate(G):
        G.nodes[key]["replay"] = {
            "count": 100,
            "min_us": 1.0 + i,
            "median_us": 2.0 + i,
            "p90_us": 3.0 + i,
            "max_us": 9.5,
            "start_us": float(i),
        }
        G.nodes[key]["eager"] = {"duration_us": 2.5 + i, "launch_us": 4.0}
        G.nodes[key]["attribution"] = {"module": f"model.layers.{i % 4}.mlp", "op": "aten::mm"}
    G.graph["timing"] = {"eager_step_us": 4800.0, "replay_us": 470.0}
    G.graph["replays"] = [{"cpu_launch_us": 12.0, "gpu_span_us": 470.0, "gpu_busy_us": 400.0}]
    G.graph["eager_trace"] = encode_eager_trace(
        [
            {
                "kind": "runtime",
                "api": "cudaLaunchKernel",
                "start": 10,
                "end": 14,
                "correlation_id": 7,
                "thread_id": 1,
            },
            {
                "kind": "concurrent_kernel",
                "name": "k",
                "start": 20,
                "end": 25,
                "correlation_id": 7,
                "stream_id": 3,
                "grid_x": 1,
                "grid_y": 1,
                "grid_z": 1,
                "block_x": 32,
                "block_y": 1,
                "block_z": 1,
                "dynamic_shared_memory": 0,
            },
        ]
    )
    G.graph["model"] = "tiny-llama"
    return G


@pytest.mark.parametrize("suffix", [".json", ".json.gz", ".dot"])
@pytest.mark.parametrize("dump", DUMPS, ids=[f"{d.parent.name}/{d.name}" for d in DUMPS])
def test_round_trip(dump: Path, suffix: str, tmp_path: Path) -> None:
    G = _with_sections(graphscope.load(dump))
    H = graphscope.load(graphscope.save(G, tmp_path / f"graph{suffix}"))
    _same(G, H)


def test_dot_to_bundle_to_dot_keeps_the_contract(samples: Path, tmp_path: Path) -> None:
    G = graphscope.load(samples / "dot" / "explicit-all-types" / "flags-verbose.dot")
    bundle = graphscope.save(G, tmp_path / "g.json.gz")
    again = graphscope.load(graphscope.save(graphscope.load(bundle), tmp_path / "g.dot"))
    _same(G, again)
    text = (tmp_path / "g.dot").read_text()
    assert "cluster_5" in text and "graphscope_scale<float>" in text  # readable in Graphviz


def test_sections_are_stored_apart_keyed_by_node(samples: Path) -> None:
    G = _with_sections(graphscope.load(samples / "dot" / "torch-ops" / "flags-verbose.dot"))
    doc = to_document(G)
    assert doc["format"] == "graphscope-bundle" and doc["schema_version"] == SCHEMA_VERSION
    # One section row per node row, in node order.
    assert len(doc["timing"]["nodes"]["rows"]) == len(doc["nodes"]["rows"]) == len(G)
    assert all(row is not None for row in doc["attribution"]["nodes"]["rows"])
    node_fields = {f for shape in doc["nodes"]["shapes"] for f in shape}
    assert not node_fields & {"replay", "eager", "attribution"}
    assert doc["timing"]["summary"]["replay_us"] == 470.0
    # Each mangled name is stored once, with its demangled and short forms.
    kernels = [d for _, d in G.nodes(data=True) if d["type"] == "KERNEL"]
    assert len(doc["kernel_names"]) == len({k["name"] for k in kernels})


def test_section_values_stored_wrapped_read_back(samples: Path, tmp_path: Path) -> None:
    G = graphscope.load(samples / "dot" / "torch-ops" / "flags-none.dot")
    first, second = list(G)[:2]
    G.nodes[first]["attribution"] = {"value": 3}
    H = graphscope.load(graphscope.save(G, tmp_path / "g.json"))
    assert H.nodes[first]["attribution"] == {"value": 3}
    # A section that is not an object is stored (wrapped), and refused when read: the
    # contract says what a section holds.
    G.nodes[second]["attribution"] = "model.lm_head"
    with pytest.raises(BundleFormatError, match=rf"node {second}: attribution: .* not an object"):
        graphscope.load(graphscope.save(G, tmp_path / "h.json"))


def test_save_is_atomic_and_leaves_no_temporary_files(samples: Path, tmp_path: Path) -> None:
    G = graphscope.load(samples / "dot" / "torch-ops" / "flags-verbose.dot")
    target = tmp_path / "g.json"
    target.write_text("previous contents")
    G.graph["not_json"] = object()
    with pytest.raises(BundleFormatError):
        graphscope.save(G, target)
    assert target.read_text() == "previous contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]
    del G.graph["not_json"]
    graphscope.save(G, target)
    assert graphscope.load(target).number_of_nodes() == G.number_of_nodes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]


def test_saved_files_get_the_usual_mode(samples: Path, tmp_path: Path) -> None:
    import os

    G = graphscope.load(samples / "dot" / "torch-ops" / "flags-none.dot")
    umask = os.umask(0o022)
    os.umask(umask)
    for name in ("g.json", "g.json.gz", "g.dot"):
        mode = graphscope.save(G, tmp_path / name).stat().st_mode & 0o777
        assert mode == 0o666 & ~umask


def test_format_is_recognised_by_content(samples: Path, tmp_path: Path) -> None:
    G = graphscope.load(samples / "dot" / "torch-ops" / "flags-verbose.dot")
    disguised = tmp_path / "graph.txt"
    disguised.write_bytes(gzip.compress(graphscope.bundle.dumps(G).encode()))
    assert graphscope.load(disguised).number_of_nodes() == 7
    dot_as_json = tmp_path / "graph.json"
    dot_as_json.write_bytes((samples / "dot" / "torch-ops" / "flags-none.dot").read_bytes())
    assert graphscope.load(dot_as_json).number_of_nodes() == 7


def test_gzip_output_is_deterministic(samples: Path, tmp_path: Path) -> None:
    G = graphscope.load(samples / "dot" / "torch-ops" / "flags-verbose.dot")
    a = graphscope.save(G, tmp_path / "a.json.gz").read_bytes()
    b = graphscope.save(G, tmp_path / "b.json.gz").read_bytes()
    assert a == b
    assert json.loads(gzip.decompress(a))["nodes"]["rows"][0][1] == "graph_14_node_0"


def test_format_md_s_bundle_example_reads_as_it_says(tmp_path: Path) -> None:
    """docs/FORMAT.md's bundle example, its sections given as empty placeholders left out,
    is a bundle the reader takes: shapes, constants, @key and @name as the text says."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "FORMAT.md").read_text()
    example = text.split("## Bundles (`.json`, `.json.gz`)")[1].split("```json")[1]
    document = json.loads(example.split("```")[0])
    for placeholder in ("timing", "eager", "attribution"):
        document.pop(placeholder)
    document["metadata"].pop("...")
    path = tmp_path / "example.json"
    path.write_text(json.dumps(document))
    G = graphscope.load(path)
    assert list(G.edges) == [("graph_1_node_0", "graph_1_node_1")]
    node = G.nodes["graph_1_node_1"]
    assert (node["graph_id"], node["type"], node["local_id"], node["grid"]) == (
        1,
        "KERNEL",
        1,
        [16, 1, 1],
    )
    assert node["short_name"] == "graphscope_scale<float>"
