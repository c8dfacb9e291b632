"""Mutated real recordings: every command that reads one answers, or says in one line why not.

Structure-aware: a value anywhere in a sample's ``recording.json`` (or a bundle's
``recording`` section) is swapped for one of another type, deleted, or a graph entry is
duplicated, then ``inspect``, ``report``, ``diff`` and ``export`` read it, and so do the
analyses and the dashboard's catalog and cards behind ``serve``.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphscope
from graphscope import text
from graphscope.analysis.lifecycle import pair_graphs, process_report
from graphscope.cli import main
from graphscope.recording import load_recordings

pytest.importorskip("dash")  # the catalog and cards come from the app
from graphscope.app import pages, server
from graphscope.app.sources import Registry

RECORDINGS = Path(__file__).resolve().parent.parent / "samples" / "recordings"
INDEXES = sorted(RECORDINGS.glob("*/pid*/recording.json"))
BUNDLES = sorted(RECORDINGS.glob("*/pid*/g*.json.gz"))
VALUES: list[Any] = [
    "x", "", "../x", -1, 0, 10**30, 1.5, float("inf"), None, True, [], {}, [1, "a"], [{}],
    [{"input": "x"}], {"a": 1},
]  # fmt: skip


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated(draw: st.DrawFn, doc: Any) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(_paths(doc)))
        op = draw(st.sampled_from(["swap", "swap", "delete", "duplicate"]))
        if op == "duplicate" and isinstance(doc.get("graphs"), list) and doc["graphs"]:
            doc["graphs"].append(copy.deepcopy(doc["graphs"][0]))
            continue
        if not path:
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if op == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(draw(st.sampled_from(VALUES)))
    return doc


def _commands(*argvs: list[str]) -> None:
    """Each command exits 0, 1 or 2 and says what went wrong in one line, no traceback."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        codes = [main(argv) for argv in argvs]
    assert all(code in (0, 1, 2) for code in codes), codes
    for line in err.getvalue().splitlines():
        assert line.startswith("graphscope: error: "), line


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(data=st.data())
def test_mutated_recordings_are_read_or_refused_in_one_line(tmp_path: Path, data: Any) -> None:
    seed = data.draw(st.sampled_from(INDEXES))
    folder = tmp_path / "rec"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(seed.parent, folder / seed.parent.name)
    doc = data.draw(mutated(json.loads(seed.read_text())))
    (folder / seed.parent.name / "recording.json").write_text(json.dumps(doc))
    _commands(
        ["inspect", str(folder)],
        ["inspect", "--json", str(folder)],
        ["report", str(folder)],
        ["diff", str(folder), str(folder)],
    )
    try:
        recordings = load_recordings(folder)
    except graphscope.GraphscopeError as exc:
        assert str(exc).startswith(str(folder))
        return
    for rec in recordings:
        report = process_report(rec)
        report.as_dict()
        text.render_recording("rec", [report], lambda _: None)
        text.render_lifecycle(rec.graphs, lambda _: None)
        pair_graphs(rec, rec)
    pages.catalog_page([Registry().add_recording(folder, "rec")])


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(data=st.data())
def test_mutated_recording_sections_of_bundles_load_or_are_refused(
    tmp_path: Path, data: Any
) -> None:
    seed = data.draw(st.sampled_from(BUNDLES))
    doc = json.loads(gzip.decompress(seed.read_bytes()))
    doc["recording"]["graph"] = data.draw(mutated(doc["recording"]["graph"]))
    path = tmp_path / "bundle.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    out = tmp_path / "out.html"
    _commands(
        ["inspect", str(path)],
        ["report", str(path)],
        ["export", str(path), "--format", "html", "-o", str(out)],
    )
    try:
        G = graphscope.load(path)
    except graphscope.GraphscopeError as exc:
        assert str(exc).startswith(str(path))
        return
    server._cards(G)
    server._untimed(G)
