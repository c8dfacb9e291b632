"""The fuzz campaign (benchmarks/fuzz.py) in CI: mutated real files through every reader and
every command find nothing but clean results and one-line errors naming the file.

The bounded run takes two to three minutes on two cores. ``GRAPHSCOPE_FUZZ_SCALE=10`` runs
ten times as many inputs, ``GRAPHSCOPE_FUZZ_SEED`` other ones; a failure prints each defect
class with the folder that reproduces it (``repro.sh``). The other tests check that the
campaign sees what it is for: a traceback, a hang, an error that does not name the file.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import fuzz

import graphscope
from graphscope.analysis import findings

SCALE = float(os.environ.get("GRAPHSCOPE_FUZZ_SCALE", "1"))
SEED = int(os.environ.get("GRAPHSCOPE_FUZZ_SEED", "0"))
# Inputs per family: a few hundred of the cheap ones, fewer where each input runs every
# command (about 1 s each).
COUNTS = {"dot": 300, "bundle": 300, "buckets": 300, "trace": 150, "recording": 150, "commands": 60}
COUNTS.update(demangle=40, json=120)  # _fuzz_readers.py: about 30 s each on two cores
COUNTS.update(callbacks=800, http=2000)  # _fuzz_server.py: about 35 s together on two cores
COUNTS.update(outputs=400, amplify=20)  # _fuzz_outputs.py: about 50 s together on two cores


def test_mutated_inputs_find_no_defects(tmp_path: Path) -> None:
    counts = {family: max(1, round(n * SCALE)) for family, n in COUNTS.items()}
    summary = fuzz.campaign(
        list(fuzz.FAMILIES),
        counts,
        seed=SEED,
        out=tmp_path,
        jobs=2,
        large=SCALE > 1,  # the 10,780-node sample: seconds an input
        upload=True,  # the dashboard's upload, its recording catalog and its cards
        app=True,
    )
    assert sum(summary.inputs.values()) == sum(counts.values())
    assert summary.defects == 0, f"reproducers under {tmp_path}\n{summary.table()}"
    assert not summary.skipped, "the app's hooks are gone: follow them (benchmarks/fuzz.py)"
    # Not every input refused: the campaign reaches the analyses behind the readers.
    assert summary.loaded["commands"] > counts["commands"] // 2
    assert summary.loaded["dot"] and summary.loaded["bundle"] and summary.loaded["trace"]
    # The server answers the page's callbacks and refuses what is malformed (in one line).
    assert summary.loaded["callbacks"] > counts["callbacks"] // 2
    assert summary.outcomes["http"]["refused"] > counts["http"] // 2


@pytest.fixture
def planted() -> Iterator[list[Any]]:
    """A findings rule the test sets; the campaign's workers fork with it in place."""
    rules: list[Any] = []
    saved = findings.RULES
    findings.RULES = (*saved, lambda G, index: [f for rule in rules for f in rule(G)])
    yield rules
    findings.RULES = saved


def _run(tmp_path: Path, count: int = 2, timeout: float = 10.0) -> fuzz.Summary:
    return fuzz.campaign(
        ["commands"], count, seed=1, timeout=timeout, out=tmp_path, jobs=1, large=False
    )


def test_a_traceback_after_a_good_load_is_a_defect_of_the_analysis(
    tmp_path: Path, planted: list[Any]
) -> None:
    def broken(G: nx.DiGraph) -> list[Any]:
        return [{}["missing"]]

    planted.append(broken)
    summary = _run(tmp_path)
    assert summary.defects == 2
    found = [c for c in summary.classes if c[2] == "KeyError"]
    assert found == [
        ("analyses", "traceback", "KeyError", "graphscope/analysis/findings.py:findings")
    ]
    kept = tmp_path / summary.examples[found[0]]
    script = (kept / "repro.sh").read_text()
    assert "graphscope inspect input" in script and "# DEFECT traceback KeyError" in script
    assert any(kept.glob("input.*"))
    record = json.loads((kept / "defects.json").read_text())
    assert any("KeyError" in d["detail"] for d in record["defects"])


def test_an_error_that_does_not_name_the_file_is_a_defect(
    tmp_path: Path, planted: list[Any]
) -> None:
    def refuses(G: nx.DiGraph) -> list[Any]:
        raise graphscope.GraphscopeError("something is wrong")

    planted.append(refuses)
    summary = _run(tmp_path, count=1)
    assert ("cli", "message", "does not name the file", "?") in summary.classes


def test_a_step_past_its_time_is_killed_and_counted(tmp_path: Path, planted: list[Any]) -> None:
    def hangs(G: nx.DiGraph) -> list[Any]:
        time.sleep(600)
        return []

    planted.append(hangs)
    started = time.monotonic()
    summary = _run(tmp_path, count=1, timeout=2.0)
    assert time.monotonic() - started < 60
    assert ("after load", "hang", "past its time limit", "?") in summary.classes


def test_the_same_seed_makes_the_same_inputs(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        fuzz.campaign(["buckets", "bundle"], 15, seed=7, out=tmp_path / name, large=False)
        lines = (tmp_path / name / "results.jsonl").read_text().splitlines()
        runs.append(
            sorted((r["family"], r["index"], r["mutations"]) for r in map(json.loads, lines))
        )
    assert runs[0] == runs[1]
    assert len({tuple(m) for _, _, m in runs[0]}) > 20  # and the inputs differ


def test_graphs_differ_sees_a_changed_type() -> None:
    G = graphscope.load(fuzz.SAMPLES / "dot" / "torch-ops" / "flags-verbose.dot")
    H = G.copy()
    assert fuzz.graphs_differ(G, H) is None
    key = next(iter(H))
    H.nodes[key]["local_id"] = float(H.nodes[key]["local_id"])
    assert fuzz.graphs_differ(G, H) == (
        f"{key}.local_id: int {G.nodes[key]['local_id']} became float "
        f"{float(G.nodes[key]['local_id'])}"
    )
