"""The real bundles made by `graphscope capture` on the H200 (samples/bundles)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import graphscope

BUNDLES = Path(__file__).resolve().parents[2] / "samples" / "bundles"
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


INDEXES = sorted(BUNDLES.glob("*.buckets.json"))


@pytest.mark.parametrize("path", INDEXES, ids=[p.name for p in INDEXES])
def test_predicted_update_verdicts_agree_with_the_driver_on_the_samples(path: Path) -> None:
    """Each capture run asked the H200's driver whether bucket a's executable graph takes
    bucket b's (``updates``); the prediction from the two bundles must give the same answer."""
    from graphscope.analysis.update import update_verdict

    index = json.loads(path.read_text())
    sizes = [b["batch_size"] for b in index["buckets"]]
    assert "updates" in index, f"{path.name} predates the driver's verdicts"
    assert [(u["from"], u["to"]) for u in index["updates"]] == list(itertools.pairwise(sizes))
    bundles = {b["batch_size"]: BUNDLES / b["bundle"] for b in index["buckets"]}
    for update in index["updates"]:
        assert "error" not in update, update
        A, B = graphscope.load(bundles[update["from"]]), graphscope.load(bundles[update["to"]])
        predicted = update_verdict(A, B)
        assert predicted.ok == update["ok"], (update, predicted.result)
        if not update["ok"]:
            assert update["result"] in {o.result for o in predicted.obstacles}, update


def test_two_captures_of_one_bucket_differ_only_in_arguments_and_timing() -> None:
    """samples/bundles/recapture holds a second capture of tiny-llama b1, made by the same
    command in a later run: the diff pairs every node, no launch configuration or copy changes
    (argument bytes do: the buffers live elsewhere), and the update verdict is SUCCESS, as the
    driver said of two such captures in tests/capture/test_gpu_update.py."""
    from graphscope.analysis.diff import diff

    A = graphscope.load(BUNDLES / "tiny-llama-b1.json.gz")
    B = graphscope.load(BUNDLES / "recapture" / "tiny-llama-b1.json.gz")
    result = diff(A, B)
    assert not result.added and not result.removed
    assert result.update is not None and result.update.ok
    assert all(not change.fields for change in result.changed), result.changed[:3]
    assert any(change.args_changed for change in result.changed)
