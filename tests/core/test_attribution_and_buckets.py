"""Attribution, phases and buckets of the real bundles from the H200 (samples/bundles)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

import graphscope
from graphscope.analysis.buckets import DEFAULT_BUCKETS, PADDING_RULE, bucket_for, padding

BUNDLES = Path(__file__).resolve().parents[2] / "samples" / "bundles"
LAYER = re.compile(r"^model\.layers\.(\d+)\.")


def _by_creation(G: nx.DiGraph) -> list[dict[str, Any]]:
    return [d for _, d in sorted(G.nodes(data=True), key=lambda kv: kv[1]["local_id"])]


@pytest.mark.parametrize("name", sorted(p.name for p in BUNDLES.glob("*.json.gz")))
def test_every_node_is_attributed_to_an_op_and_a_source_line(name: str) -> None:
    G = graphscope.load(BUNDLES / name)
    assert G.graph["attributed_nodes"] == G.number_of_nodes()
    for _, data in G.nodes(data=True):
        label = data["attribution"]
        assert label["op"].startswith("aten::"), label
        assert label["file"].endswith(".py") and label["line"] > 0, label
        # The user's code: the model's source, never torch or graphscope's own machinery.
        assert "site-packages/torch/" not in label["file"], label
        assert not label["file"].endswith(("capture/session.py", "capture/attribution.py"))


def test_llama_nodes_follow_the_layers_in_order() -> None:
    G = graphscope.load(BUNDLES / "tiny-llama-b1.json.gz")
    nodes = _by_creation(G)
    layers = [
        int(m.group(1)) for d in nodes if (m := LAYER.match(d["attribution"]["module"] or ""))
    ]
    assert layers == sorted(layers) and set(layers) == {0, 1, 2, 3}
    assert nodes[0]["attribution"]["module"] == "model.embed_tokens"
    assert nodes[-2]["attribution"]["module"] == "lm_head"
    for layer in range(4):
        o_proj = [
            d
            for d in nodes
            if d["attribution"]["module"] == f"model.layers.{layer}.self_attn.o_proj"
        ]
        assert [d["attribution"]["op"] for d in o_proj] == ["aten::mm"]
        assert o_proj[0]["attribution"]["file"].endswith(
            "transformers/models/llama/modeling_llama.py"
        )


def test_built_in_model_lines_point_into_our_model_source() -> None:
    G = graphscope.load(BUNDLES / "tiny-gpt-b1.json.gz")
    files = {d["attribution"]["file"] for _, d in G.nodes(data=True)}
    assert files and all(f.endswith("capture/models.py") for f in files)
    modules = {d["attribution"]["module"] for _, d in G.nodes(data=True)}
    assert {"wte", "wpe", "ln_f", "lm_head", "blocks.0.attn", "blocks.3.attn"} <= modules
    # The step's own code around the model (copying the logits out) runs in no module.
    [outside] = [d for _, d in G.nodes(data=True) if d["attribution"]["module"] is None]
    assert outside["type"] == "MEMCPY" and outside["attribution"]["function"] == "run"


def test_prefill_ran_eagerly_and_was_traced() -> None:
    G = graphscope.load(BUNDLES / "tiny-llama-b1.json.gz")
    prefill = G.graph["prefill"]
    assert prefill["kernels"] > 0 and prefill["launch_calls"] >= prefill["kernels"]
    assert 0 < prefill["gpu_busy_us"] <= prefill["gpu_span_us"] <= prefill["step_us"]


def test_buckets_index_matches_its_bundles() -> None:
    index = json.loads((BUNDLES / "tiny-llama.buckets.json").read_text())
    assert index["padding"] == PADDING_RULE
    sizes = [b["batch_size"] for b in index["buckets"]]
    assert sizes == list(DEFAULT_BUCKETS)
    for entry in index["buckets"]:
        G = graphscope.load(BUNDLES / entry["bundle"])
        t = G.graph["timing"]
        assert G.graph["batch_size"] == entry["batch_size"]
        assert G.graph["buckets"] == {"sizes": sizes, "padding": PADDING_RULE}
        assert entry["nodes"] == G.number_of_nodes()
        assert entry["replay_us"] == t["replay_wall_us"]
        assert entry["graph_pool_bytes"] == t["graph_pool_bytes"] > 0


def test_a_batch_pads_up_to_the_next_bucket() -> None:
    buckets = [1, 2, 4, 8]
    assert [bucket_for(n, buckets) for n in range(1, 10)] == [1, 2, 4, 4, 8, 8, 8, 8, None]
    assert [padding(n, buckets) for n in (1, 3, 5, 8, 9)] == [0, 1, 3, 0, None]
    assert bucket_for(3, [8, 4]) == 4  # order of the list does not matter
    with pytest.raises(ValueError, match="at least one"):
        bucket_for(0, buckets)


@pytest.mark.parametrize("kind", ["bundle", "plain bundle", "dot"])
def test_a_graph_given_to_buckets_is_named_for_what_it_is(kind: str, tmp_path: Path) -> None:
    from graphscope.analysis.buckets import read_buckets
    from graphscope.errors import InputError

    bundle = BUNDLES / "tiny-llama-b1"
    path = {"bundle": Path(f"{bundle}.json.gz"), "dot": Path(f"{bundle}.dot")}.get(kind)
    if path is None:
        path = tmp_path / "b1.json"
        path.write_bytes(gzip.decompress(Path(f"{bundle}.json.gz").read_bytes()))
    with pytest.raises(InputError) as caught:
        read_buckets(path)
    said = str(caught.value)
    assert said.startswith(str(path)) and "not a buckets index" in said
    assert "UTF-8" not in said and "invalid buckets index" not in said
