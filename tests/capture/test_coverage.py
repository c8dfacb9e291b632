"""Coverage over a recorded run, without a GPU: the recorder's bins of graph launches, and
what ``check`` and the catalog say when the graphs stop being launched (issue 26, part 1)."""

from __future__ import annotations

import json
import sys
import threading
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
    from graphscope.app.render.pages import launches_chart

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


def _probed(
    launches: list[dict[str, int]], probes: dict[int, tuple[float, int, float]]
) -> dict[str, Any]:
    """Bins as _bins, with what the recorder's probes saw in some: bin -> (ms, kernels, us)."""
    out = _bins(launches)
    for i, (ms, kernels, us) in probes.items():
        out["bins"][i].update(probe_ms=ms, probe_kernels=kernels, probe_kernel_us=us)
    return out


def test_probes_are_binned_as_they_arrive_and_summed_when_bins_merge() -> None:
    cov, g = Coverage(bin_s=1.0, max_bins=4), Life("g2")
    g.replays = 10
    assert cov.tick(1.0, [g], 0)
    # a probe of 50 ms in the second second saw 400 kernels, 30 ms of GPU time
    assert cov.tick(2.0, [g], 0, probed=(50_000_000, 400, 30_000_000))
    assert cov.tick(3.0, [g], 0, probed=(50_000_000, 400, 30_000_000))  # nothing new
    bins = cov.as_dict()["bins"]
    assert "probe_ms" not in bins[0] and "probe_ms" not in bins[2]
    assert (bins[1]["probe_ms"], bins[1]["probe_kernels"], bins[1]["probe_kernel_us"]) == (
        50.0,
        400,
        30_000.0,
    )
    # records that arrive at exit, after the last bin closed, still close one
    assert cov.tick(3.0, [g], 0, final=True, probed=(100_000_000, 900, 60_000_000))
    assert cov.as_dict()["bins"][-1]["probe_kernels"] == 500
    assert cov.tick(5.0, [g], 0, probed=(100_000_000, 900, 60_000_000))  # five: merged
    merged = cov.as_dict()["bins"]
    assert cov.bin_s == 2.0
    assert sum(b.get("probe_kernels", 0) for b in merged) == 900
    assert sum(b.get("probe_ms", 0) for b in merged) == 100.0


def test_a_stop_while_the_gpu_ran_eager_kernels_is_a_fallback(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    used = [{"g8": 30}] * 4
    probes = {i: (50.0, 1200, 35_000.0) for i in range(5, 12)}
    rec = recording_with(graphs=graphs, coverage=_probed(used + [{}] * 8, probes))
    found = coverage.stop(rec)
    assert found is not None and found.eager is True
    assert found.probe_kernels == 8400 and found.probe_s == pytest.approx(0.35)
    (violation,) = [v for v in check([rec]).violations if v.rule == "graphs-stopped"]
    assert "The program ran on eagerly: 8,400 kernels outside graphs in 350 ms" in (
        violation.message
    )
    assert (
        "(about 24,000/s, 245.0 ms of GPU time; about 5.60 s of eager GPU time over the 8 s, "
        "at that rate)" in violation.message
    )
    assert violation.message.endswith("largest graph is for batch 4: a larger batch runs eagerly")
    (note,) = [n for n in notes(rec) if n.code == "graphs-stopped"]
    assert note.severity == "warning"


def test_a_stop_while_the_gpu_sat_idle_is_a_note_and_passes_check(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    """A compiled program that launched its graphs, then compiled another function (CPU
    only) for the rest of the run: the probes saw no kernel."""
    used = [{"g8": 30}] * 4
    probes = {i: (50.0, 0, 0.0) for i in range(5, 12)}
    rec = recording_with(graphs=graphs, coverage=_probed(used + [{}] * 8, probes))
    found = coverage.stop(rec)
    assert found is not None and found.eager is False
    assert not [v for v in check([rec]).violations if v.rule == "graphs-stopped"]
    (note,) = [n for n in notes(rec) if n.code == "graphs-stopped"]
    assert note.severity == "info"
    assert "No kernel ran in 350 ms of kernel tracing after the stop: the GPU sat idle" in (
        note.title
    )
    assert "larger batch" not in note.title  # no guess at a batch past the largest graph


def test_a_stop_without_probes_says_it_cannot_tell_eager_from_idle(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    rec = recording_with(graphs=graphs, coverage=_bins([{"g8": 30}] * 4 + [{}] * 8))
    found = coverage.stop(rec)
    assert found is not None and found.eager is None
    (violation,) = [v for v in check([rec]).violations if v.rule == "graphs-stopped"]
    assert "no probe of the GPU after the stop to tell which" in violation.message


def test_the_launch_chart_draws_the_probes_eager_kernel_rate(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    from graphscope.app.render.pages import launches_chart

    probes = {4: (50.0, 1000, 40_000.0), 5: (25.0, 0, 0.0)}
    rec = recording_with(graphs=graphs, coverage=_probed([{"g8": 30}] * 4 + [{}] * 2, probes))
    fig = launches_chart(rec)
    assert fig is not None
    (rate,) = [t for t in fig.data if t.name == "eager kernels/s (probed)"]
    assert list(rate.x) == [4.5, 5.5] and list(rate.y) == [20_000.0, 0.0]
    assert rate.yaxis == "y2"


def test_a_few_stray_kernels_after_a_stop_are_not_an_eager_fallback(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    """The next function compiling, with a kernel now and then: 4 kernels in 350 ms."""
    probes = {i: (50.0, 1 if i % 2 else 0, 3.0) for i in range(5, 12)}
    rec = recording_with(graphs=graphs, coverage=_probed([{"g8": 30}] * 4 + [{}] * 8, probes))
    found = coverage.stop(rec)
    assert found is not None and found.eager is False and found.probe_kernels == 4
    assert not [v for v in check([rec]).violations if v.rule == "graphs-stopped"]
    (note,) = [n for n in notes(rec) if n.code == "graphs-stopped"]
    assert "Only 4 kernels ran in 350 ms of kernel tracing after the stop (about 11/s)" in (
        note.title
    )


class _Module:
    """Stands in for ``torch.nn.Module``: step_batch asks only isinstance."""


class _Tensor:
    def __init__(self, *shape: int) -> None:
        self.shape, self.dtype = shape, "int64"


class _Model(_Module):
    def __init__(self) -> None:
        self.layer = _Layer()

    def forward(self, tokens: _Tensor, pos: _Tensor) -> None:
        self.layer.forward(_Tensor(tokens.shape[0] * 3, 8))  # an inner module: not the step


class _Layer(_Module):
    inside = threading.Event()
    release = threading.Event()

    def forward(self, hidden: _Tensor) -> None:
        _Layer.inside.set()
        _Layer.release.wait(10)


def test_a_probe_reads_the_eager_step_s_batch_from_the_outermost_forward_on_a_stack() -> None:
    from collections import Counter

    from graphscope.capture.record.batches import sample, step_batch

    _Layer.inside.clear()
    _Layer.release.clear()
    model = _Model()
    worker = threading.Thread(target=model.forward, args=(_Tensor(6, 1), _Tensor(1)))
    worker.start()
    try:
        assert _Layer.inside.wait(10)
        counts: Counter[int] = Counter()
        sample(counts, _Module)
        sample(counts, _Module)
        assert counts == Counter({6: 2})  # dim 0 of the model's tokens, not the layer's 18
        assert step_batch(sys._getframe(), _Module) is None  # this thread runs no module
    finally:
        _Layer.release.set()
        worker.join()


def test_the_probes_batches_are_binned_as_deltas_and_merged() -> None:
    from collections import Counter

    cov, g = Coverage(bin_s=1.0, max_bins=2), Life("g2")
    assert cov.tick(1.0, [g], 0, batches=Counter({6: 2}))
    assert cov.tick(2.0, [g], 0, batches=Counter({6: 3, 8: 1}))
    bins = cov.as_dict()["bins"]
    assert bins[0]["probe_batches"] == {"6": 2} and bins[1]["probe_batches"] == {"6": 1, "8": 1}
    assert cov.tick(3.0, [g], 0, batches=Counter({6: 3, 8: 1}))  # three bins: merged
    (merged, last) = cov.as_dict()["bins"]
    assert merged["probe_batches"] == {"6": 3, "8": 1} and "probe_batches" not in last


def test_a_stop_names_the_eager_batches_past_the_largest_graph(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    bins = _probed([{"g8": 30}] * 4 + [{}] * 8, {i: (50.0, 1200, 35_000.0) for i in range(5, 12)})
    bins["bins"][6]["probe_batches"] = {"5": 3, "8": 2}
    bins["bins"][9]["probe_batches"] = {"5": 1}
    rec = recording_with(graphs=graphs, coverage=bins)
    found = coverage.stop(rec)
    assert found is not None and found.batches == {5: 4, 8: 2}
    (violation,) = [v for v in check([rec]).violations if v.rule == "graphs-stopped"]
    assert violation.message.endswith(
        "eager steps' batches on the program's stack (samples): 5 (4), 8 (2): all larger than "
        "its largest graph, batch 4. A graph for batch 8 would serve every sampled eager step "
        "(one for batch 5, 67% of the samples); its memory is known once captured (graphscope "
        "capture --batch-sizes ... measures each graph's pool)"
    )
    bins["bins"][9]["probe_batches"] = {"2": 1}  # a batch that has a graph ran eagerly too
    rec = recording_with(graphs=graphs, coverage=bins)
    (violation,) = [v for v in check([rec]).violations if v.rule == "graphs-stopped"]
    assert violation.message.endswith(
        "2 (1), 5 (3), 8 (2): batch 2 has a graph, so batch size is not the whole reason"
    )
    bins["bins"][9]["probe_batches"] = {"0x5": 1}
    with pytest.raises(InputError, match=r"coverage\.bins\[9\]\.probe_batches: no batch size"):
        recording_with(graphs=graphs, coverage=bins)


def test_a_stretch_of_eager_steps_between_graph_launches_is_a_lapse(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    """Graphs for 3 s, 5 s of eager steps at batch 6 (a batch past the largest graph), graphs
    again; then a quiet 4 s with the GPU idle (a server between requests), graphs again."""
    used = [{"g8": 30}] * 3 + [{}] * 5 + [{"g2": 20}] * 2 + [{}] * 4 + [{"g2": 20}] * 2
    probes = {i: (50.0, 1000, 30_000.0) for i in range(4, 8)}
    probes.update({i: (50.0, 0, 0.0) for i in range(11, 14)})
    bins = _probed(used, probes)
    bins["bins"][5]["probe_batches"] = {"6": 4}
    rec = recording_with(graphs=graphs, coverage=bins)
    assert coverage.stop(rec) is None
    (lapse,) = coverage.lapses(rec)  # the idle stretch is none
    assert (lapse.at_s, lapse.until_s, lapse.launches_before) == (3.0, 8.0, 90)
    (violation,) = [v for v in check([rec]).violations if v.rule == "graphs-stopped"]
    assert violation.graph == "g8"
    assert violation.message == (
        "pid 42 (serve.py): no graph was launched from 3 s to 8 s (5 s, after 90 launches; the "
        "last: g8 (batch 1)) while the program ran on eagerly: 4,000 kernels outside graphs in "
        "200 ms of kernel tracing (about 20,000/s); eager steps' batches on the program's stack "
        "(samples): 6 (4): all larger than its largest graph, batch 4; then graphs were launched "
        "again. A graph for batch 6 would serve every sampled eager step; its memory is known "
        "once captured (graphscope capture --batch-sizes ... measures each graph's pool)"
    )
    (note,) = [n for n in notes(rec) if n.code == "graphs-lapsed"]
    assert note.severity == "warning" and note.details == [violation.message.split(": ", 1)[1]]
    from graphscope.app.render.pages import launches_chart

    fig = launches_chart(rec)
    assert fig is not None
    assert [(s.x0, s.x1) for s in fig.layout.shapes] == [(3.0, 8.0)]


def test_a_stretch_that_ends_in_a_new_graph_s_capture_is_no_lapse(
    recording_with: Any, graphs: list[dict[str, Any]]
) -> None:
    """torch.compile meeting a new batch: compiling, warming up eagerly, recording the graph
    that then serves. hf-generate's second batch does this between its graphs."""
    used = [{"g8": 30}] * 3 + [{}] * 5 + [{"g2": 20}] * 2
    bins = _probed(used, {i: (50.0, 1000, 30_000.0) for i in range(4, 8)})
    assert len(coverage.lapses(recording_with(graphs=graphs, coverage=bins))) == 1
    late = [{**g, "captured_at_s": 8.4} if g["id"] == "g2" else g for g in graphs]
    assert coverage.lapses(recording_with(graphs=late, coverage=bins)) == []


def test_hf_generate_s_compile_of_its_second_batch_is_no_lapse(samples: Path) -> None:
    from graphscope.recording import load_recordings

    (rec,) = [r for r in load_recordings(samples / "recordings" / "hf-generate") if r.graphs]
    assert coverage.lapses(rec) == [] and coverage.stop(rec) is None


def test_a_stack_that_cannot_be_read_gives_no_sample() -> None:
    from collections import Counter

    from graphscope.capture.record.batches import sample

    class Odd(_Module):
        def forward(self, x: Any) -> None:
            _Layer.inside.set()
            _Layer.release.wait(10)

    class Shape:
        shape = ("not", "a", "number")
        dtype = "?"

    _Layer.inside.clear()
    _Layer.release.clear()
    worker = threading.Thread(target=Odd().forward, args=(Shape(),))
    worker.start()
    try:
        assert _Layer.inside.wait(10)
        counts: Counter[int] = Counter()
        sample(counts, _Module)  # int("not") raises inside: skipped, nothing counted
        assert counts == Counter()
    finally:
        _Layer.release.set()
        worker.join()
