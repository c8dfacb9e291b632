"""On a GPU: the whole capture path, from a model to a bundle that inspect reads."""

from __future__ import annotations

from pathlib import Path

import pytest

import graphscope
from graphscope.cli import main

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("model", ["tiny-gpt", "tiny-llama"])
def test_capture_writes_a_timed_bundle(model: str, tmp_path: Path) -> None:
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
    named = {p["buffer"] for d in kernels for p in d.get("pointers", []) if "buffer" in p}
    assert any(name.startswith("param:") for name in named)
    assert any(name.startswith("input:") for name in named)
    timing = G.graph["timing"]
    assert timing["replay_us"] > 0 and timing["cpu_launch_us"] > 0
    assert timing["unjoined_records"] == 0
    assert G.graph["batch_size"] == 2 and G.graph["device"]
    assert main(["inspect", str(bundle)]) == 0
