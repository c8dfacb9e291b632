"""On a GPU: fresh dumps of every scenario, never seen by the repo, read exactly as the driver says.

Run on the device machine (see docs/DEVELOPING.md); skipped without CUDA, torch and cupti.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from driver_truth import FIELDS, flag_set, load_truth, mismatches

import graphscope
from graphscope.model import NODE_TYPES

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def fresh_dumps(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from graphscope.capture import dot_samples

    out = tmp_path_factory.mktemp("fresh-dumps")
    assert dot_samples.main(["--out", str(out)]) == 0
    return sorted(out.glob("*/*.dot"))


def test_fresh_dumps_cover_every_node_type_and_flag_set(fresh_dumps: list[Path]) -> None:
    assert {flag_set(d) for d in fresh_dumps} == set(FIELDS)
    types: Counter[str] = Counter()
    for dump in fresh_dumps:
        truth = load_truth(dump)
        assert truth["build_errors"] == []
        types.update(n["type"] for n in truth["nodes"])
    assert set(types) == set(NODE_TYPES)


def test_reader_matches_driver_on_fresh_dumps(fresh_dumps: list[Path]) -> None:
    checked = 0
    for dump in fresh_dumps:
        G = graphscope.load(dump)
        assert mismatches(G, load_truth(dump), flag_set(dump)) == [], dump
        checked += G.number_of_nodes()
    assert checked > 1000
