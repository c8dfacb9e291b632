"""Coverage over a recorded run, without a GPU: the recorder's bins of graph launches, and
what ``check`` and the catalog say when the graphs stop being launched (issue 26, part 1)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from graphscope.capture.record.coverage import Coverage

from graphscope.analysis import coverage
from graphscope.analysis.check import check
from graphscope.analysis.lifecycle import notes
from graphscope.errors import InputError


@dataclass
class Life:
    id: str
    replays: int = 0


def test_bins_count_each_graph_s_launches_between_ticks() -> None:
    cov, g2, g5 = Coverage(bin_s=1.0), Life("g2"), Life("g5")
    assert not cov.tick(0.2, [g2], 0)  # the first bin is still open
    g2.replays = 40
    assert cov.tick(1.0, [g2], 0)
    g2.replays, g5.replays = 70, 5
    assert not cov.tick(1.5, [g2, g5], 3)
    assert cov.tick(2.1, [g2, g5], 3)
    assert cov.tick(5.4, [g2, g5], 3)  # a late tick: the quiet seconds are one bin, no gap
    g5.replays = 9
    assert cov.tick(5.6, [g2, g5], 3, final=True)
    assert cov.as_dict() == {
        "bin_s": 1.0,
        "bins": [
            {"at_s": 0.0, "launches": {"g2": 40}, "unknown_launches": 0},
            {"at_s": 1.0, "launches": {"g2": 30, "g5": 5}, "unknown_launches": 3},
            {"at_s": 2.0, "launches": {}, "unknown_launches": 0},
            {"at_s": 5.0, "launches": {"g5": 4}, "unknown_launches": 0},
        ],
    }
    assert not cov.tick(5.7, [g2, g5], 3, final=True)  # nothing new to close


def test_a_long_run_keeps_its_bins_bounded_by_merging_pairs() -> None:
    cov, g = Coverage(bin_s=1.0, max_bins=4), Life("g2")
    for second in range(1, 6):
        g.replays += second
        cov.tick(float(second), [g], 0)
    out = cov.as_dict()
    assert out["bin_s"] == 2.0 and len(out["bins"]) <= 4
    assert [b["at_s"] for b in out["bins"]] == [0.0, 2.0, 4.0][: len(out["bins"])]
    assert sum(b["launches"].get("g2", 0) for b in out["bins"]) == 15  # nothing lost


@pytest.fixture
def graphs(samples: Path) -> list[dict[str, Any]]:
    """The torch-buckets sample's three graphs (batches 1, 2 and 4), as its index has them."""
    path = samples / "recordings" / "torch-buckets"
    doc = json.loads(next(path.glob("*/recording.json")).read_text())
    return doc["graphs"]


def _bins(launches: list[dict[str, int]]) -> dict[str, Any]:
    return {
        "bin_s": 1.0,
        "bins": [{"at_s": float(i), "launches": n} for i, n in enumerate(launches)],
    }


def test_a_run_that_goes_on_without_its_graphs_fails_check_and_is_noted(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    """The graphs of batch 4, 2 and 1 serve in turn, then none from 6 s: the program runs
    8 s more (a batch larger than 4, say)."""
    used = [{"g2": 30}, {"g2": 20, "g5": 10}, {"g5": 30}, {"g8": 30}, {"g8": 30}, {"g8": 25}]
    rec = recording_with(graphs=graphs, coverage=_bins(used + [{}] * 8))
    found = coverage.stop(rec)
    assert found is not None and (found.at_s, found.until_s) == (6.0, 14.0)
    assert found.launches_before == 175 and found.last_graphs == ["g8"]
    (violation,) = [v for v in check([rec]).violations if v.rule == "graphs-stopped"]
    assert violation.graph == "g8"
    assert "launched 175 times until 6 s, then none in the last 8 s" in violation.message
    assert "the last launched: g8 (batch 1). The program ran on" in violation.message
    assert violation.message.endswith("largest graph is for batch 4: a larger batch runs eagerly")
    assert any(n.code == "graphs-stopped" for n in notes(rec))
    spans = coverage.spans(rec)
    assert [(s.graph, s.first_s, s.last_s, s.launches) for s in spans] == [
        ("g2", 0.0, 2.0, 50),
        ("g5", 1.0, 3.0, 40),
        ("g8", 3.0, 6.0, 85),
    ]


@pytest.mark.parametrize(
    "launches",
    [
        [{"g2": 5}] * 10 + [{}] * 2,  # a short quiet end: shutting down
        [{}] * 3,  # no graph ever launched: the eager share says that
    ],
)
def test_a_short_quiet_end_or_no_graph_at_all_is_no_stop(
    recording_with: Any, graphs: list[dict[str, Any]], launches: list[dict[str, int]]
) -> None:
    rec = recording_with(graphs=graphs, coverage=_bins(launches))
    assert coverage.stop(rec) is None
    assert not [v for v in check([rec]).violations if v.rule == "graphs-stopped"]


def test_the_quiet_share_counts_from_the_first_launch_not_the_start(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    """Twenty seconds of loading, two of decoding, then five with no graph: a stop."""
    launches = [{}] * 20 + [{"g2": 5}] * 2 + [{}] * 5
    found = coverage.stop(recording_with(graphs=graphs, coverage=_bins(launches)))
    assert found is not None and found.seconds == 5.0


def test_bins_naming_no_graph_or_of_the_wrong_type_are_refused(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    with pytest.raises(InputError, match=r"coverage\.bins\[0\]\.launches: names no graph: g99"):
        recording_with(graphs=graphs, coverage=_bins([{"g99": 1}]))
    with pytest.raises(InputError, match="coverage"):
        recording_with(graphs=graphs, coverage={"bin_s": 1.0, "bins": [{"at_s": "soon"}]})
    for wrong in ([], "", 0):
        with pytest.raises(InputError, match="coverage"):
            recording_with(graphs=graphs, coverage=wrong)
    older = recording_with(graphs=graphs)  # recordings made before coverage: nothing to say
    assert older.coverage == {} and coverage.stop(older) is None and coverage.spans(older) == []


def test_the_catalog_says_which_graph_served_which_seconds(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    from graphscope.analysis.lifecycle import process_report
    from graphscope.text import render_recording

    rec = recording_with(graphs=graphs, coverage=_bins([{"g2": 3}, {"g2": 1, "g8": 1200}]))
    lines: list[str] = []
    render_recording("run", [process_report(rec)], lines.append)
    (said,) = [x for x in "".join(lines).splitlines() if "launched over the run" in x]
    assert said.endswith("g2 (batch 4) 0-2 s (4); g8 (batch 1) 1-2 s (1,200)")


def test_the_catalog_page_charts_launches_per_second_and_shades_the_stop(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    from graphscope.app.pages import launches_chart

    used = [{"g8": 120}, {"g8": 100, "g5": 40}, {"g2": 30}]
    rec = recording_with(graphs=graphs, coverage=_bins(used + [{}] * 6))
    fig = launches_chart(rec)
    assert fig is not None
    traces = {t.name: list(t.y) for t in fig.data}
    assert traces == {
        "g8 (batch 1)": [120, 100, 0, 0, 0, 0, 0, 0, 0],
        "g5 (batch 2)": [0, 40, 0, 0, 0, 0, 0, 0, 0],
        "g2 (batch 4)": [0, 0, 30, 0, 0, 0, 0, 0, 0],
    }
    (shade,) = fig.layout.shapes
    assert (shade.x0, shade.x1) == (3.0, 9.0)
    assert launches_chart(recording_with(graphs=graphs)) is None  # an older recording
