"""The real bundles made by `graphscope capture` on the H200 (samples/bundles)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import graphscope

BUNDLES = Path(__file__).resolve().parent.parent / "samples" / "bundles"
MANIFEST = [json.loads(line) for line in (BUNDLES / "manifest.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("entry", MANIFEST, ids=[m["file"] for m in MANIFEST])
def test_sample_bundle_is_timed_and_matches_its_dump(entry: dict[str, object]) -> None:
    G = graphscope.load(BUNDLES / str(entry["file"]))
    dump = graphscope.load(BUNDLES / str(entry["dot"]))
    assert set(G) == set(dump)
    assert G.graph["batch_size"] == entry["batch_size"] and G.graph["device"] == "NVIDIA H200"
    timing = G.graph["timing"]
    assert timing["unjoined_records"] == 0
    assert timing["eager_step_us"] > timing["replay_wall_us"] > 0
    for _, data in G.nodes(data=True):
        if data["type"] == "KERNEL":
            assert data["replay"]["count"] == timing["replays"]
            assert data["registers"] > 0 and data["args"]
