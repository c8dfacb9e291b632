"""The graph page's figures on the real sample bundles: each says what it measures, shows the
bundle field it names, and adds up with the timeline drawn beside it."""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path

import networkx as nx
import pytest

pytest.importorskip("dash")  # the GPU machine has no dash; the test extra brings it elsewhere

from graphscope.app.render.cards import (
    BUSY_IDLE,
    EAGER_TRACED,
    EAGER_UNTRACED,
    REPLAY_SPAN,
    REPLAY_WALL,
    Card,
    figure,
    summary_cards,
)
from graphscope.app.render.timeline import (
    MAX_BARS,
    ROWS,
    Row,
    _drawn,
    build_timeline,
    timeline_rows,
)

import graphscope

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
BUNDLES = sorted((SAMPLES / "bundles").glob("*.json.gz")) + sorted(
    (SAMPLES / "large").glob("*.json.gz")
)
TINY_GPT = SAMPLES / "bundles" / "tiny-gpt-b1.json.gz"
RECORDED = SAMPLES / "recordings" / "gpt-fast" / "pid1355" / "g5.json.gz"
DOT = SAMPLES / "dot" / "explicit-all-types" / "flags-verbose.dot"

#: For each bundle field a card may show, the words its label must hold: what was timed,
#: whether traced, and which statistic.
NAMED = {
    "timing.eager_step_us": ("eager step", "untraced", "median", "wall"),
    "eager_summary.step_us": ("eager step", "as traced", "one step"),
    "timing.replay_wall_us": ("graph replay", "untraced", "mean", "wall"),
    "timing.replay_us": ("replay", "GPU span", "traced median"),
    "eager_summary.cpu_launch_us": ("CPU", "launch calls", "traced eager step"),
    "eager_summary.gpu_busy_us": ("GPU busy", "idle", "GPU span", "traced eager step"),
    "eager_summary.gpu_idle_pct": ("GPU idle share", "span", "traced eager step"),
    "recording.replays": ("replays in the program", "traced"),
    "recording.cpu_launch_us": ("launch call", "CPU", "untraced median"),
}


@functools.cache
def _load(path: Path) -> nx.DiGraph:
    return graphscope.load(path)


def _bundle(path: Path) -> nx.DiGraph:
    """A copy the test may change."""
    return copy.deepcopy(_load(path))


def _union(spans: list[tuple[float, float]]) -> float:
    """Length of the union of the spans (written here again, not taken from graphscope)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        total += max(end - max(start, reach), 0.0)
        reach = max(reach, end)
    return total


def _row(rows: list[Row], row: str, name: str | None = None) -> list[tuple[float, float]]:
    return [
        (s, e)
        for r in rows
        if r.row == row and (name is None or r.name == name)
        for s, e in zip(r.starts, r.ends, strict=True)
    ]


def _card(cards: list[Card], field: str) -> Card:
    [card] = [c for c in cards if c.fields[:1] == (field,) and not c.label.startswith("speedup")]
    return card


def _ints(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)]


@pytest.mark.parametrize("path", [*BUNDLES, RECORDED], ids=lambda p: p.name)
def test_each_card_names_what_it_measures(path: Path) -> None:
    G = _load(path)
    cards = summary_cards(G)
    ratios = [c for c in cards if c.label.startswith("speedup")]
    assert all(c.label == "speedup: untraced eager step / untraced replay wall" for c in ratios)
    cards = [c for c in cards if c not in ratios]
    shown = [c.fields[0] for c in cards if c.fields]
    assert shown and len(shown) == len(set(shown))  # one card per figure
    for card in cards:
        if not card.fields:
            continue
        assert card.fields[0] in NAMED, f"{card.label!r} shows {card.fields[0]}: name it"
        for words in NAMED[card.fields[0]]:
            assert words in card.label, f"{card.label!r} does not say {words!r}"
        for field in card.fields:  # it shows figures the bundle has
            assert figure(G, field) is not None, field
    # The same step timed two ways gets two cards, each saying which.
    if "eager_summary.step_us" in shown and "timing.eager_step_us" in shown:
        eager = _card(cards, "timing.eager_step_us")
        traced = _card(cards, "eager_summary.step_us")
        assert eager.label == EAGER_UNTRACED and traced.label.startswith(EAGER_TRACED)
        change = (figure(G, "eager_summary.step_us") or 0) / (
            figure(G, "timing.eager_step_us") or 1
        ) - 1
        assert f"{change:+.0%} on untraced" in traced.label


@pytest.mark.parametrize("path", BUNDLES, ids=lambda p: p.name)
def test_cards_show_the_bundle_fields_they_name(path: Path) -> None:
    G = _load(path)
    t, e = G.graph["timing"], G.graph["eager_summary"]
    values = {
        c.fields[0]: c.value
        for c in summary_cards(G)
        if c.fields and not c.label.startswith("speedup")
    }
    assert values == {
        "timing.eager_step_us": f"{t['eager_step_us']:,.0f} us",
        "eager_summary.step_us": f"{e['step_us']:,.0f} us",
        "timing.replay_wall_us": f"{t['replay_wall_us']:,.0f} us",
        "timing.replay_us": f"{t['replay_us']:,.0f} us",
        "eager_summary.cpu_launch_us": (
            f"{e['cpu_launch_us']:,.0f} us, {e['cpu_launch_us'] / e['step_us']:.0%}"
        ),
        "eager_summary.gpu_busy_us": (
            f"{e['gpu_busy_us']:,.0f} + {round(e['gpu_span_us']) - round(e['gpu_busy_us']):,} = "
            f"{e['gpu_span_us']:,.0f} us"
        ),
        "eager_summary.gpu_idle_pct": f"{e['gpu_idle_pct']:.0f}%",
    }
    speedup = [c for c in summary_cards(G) if c.label.startswith("speedup")]
    assert [c.value for c in speedup] == [f"{t['eager_step_us'] / t['replay_wall_us']:.1f}x"]
    assert "untraced eager step / untraced replay wall" in speedup[0].label
    # The idle shown is within 1 us of the bundle's own, and the three add up as shown.
    busy, idle, span = _ints(values["eager_summary.gpu_busy_us"])
    assert busy + idle == span and abs(idle - e["gpu_idle_us"]) <= 1


def test_tiny_gpt_b1_shows_the_figures_of_the_worked_example() -> None:
    """The numbers docs/DASHBOARD.md works through are the ones the page shows."""
    cards = summary_cards(_load(TINY_GPT))
    assert [(c.value, c.label) for c in cards] == [
        ("67", "nodes"),
        ("1,645 us", EAGER_UNTRACED),
        ("1,942 us", f"{EAGER_TRACED}, +18% on untraced"),
        ("156 us", REPLAY_WALL),
        ("10.5x", "speedup: untraced eager step / untraced replay wall"),
        ("164 us", REPLAY_SPAN),
        ("381 us, 20%", "CPU in launch calls, traced eager step (share of it)"),
        ("141 + 1,724 = 1,865 us", BUSY_IDLE),
        ("92%", "GPU idle share of that span (traced eager step)"),
    ]
    doc = (ROOT / "docs" / "DASHBOARD.md").read_text()
    for card in cards[1:]:
        assert card.value in doc, f"docs/DASHBOARD.md's worked example lacks {card.value}"


@pytest.mark.parametrize("path", BUNDLES, ids=lambda p: p.name)
def test_the_timelines_traced_eager_step_is_what_the_figures_add_up_to(path: Path) -> None:
    G = _load(path)
    e = G.graph["eager_summary"]
    rows = timeline_rows(G)
    gpu = _row(rows, ROWS[1])
    first, last = min(s for s, _ in gpu), max(end for _, end in gpu)
    # The GPU row spans what the bundle calls the GPU span; its bars are the busy time and its
    # gaps the idle time.
    assert first == pytest.approx(e["first_gpu_start_us"], abs=1e-6)
    assert last - first == pytest.approx(e["gpu_span_us"], abs=1e-6)
    assert _union(gpu) == pytest.approx(e["gpu_busy_us"], abs=1e-6)
    assert last - first - _union(gpu) == pytest.approx(e["gpu_idle_us"], abs=1e-6)
    assert e["gpu_busy_us"] + e["gpu_idle_us"] == pytest.approx(e["gpu_span_us"], abs=1e-6)
    # The card's busy + idle = span are the row's, rounded.
    busy, idle, span = _ints(_card(summary_cards(G), "eager_summary.gpu_busy_us").value)
    assert (busy, span) == (round(_union(gpu)), round(last - first)) and busy + idle == span
    # The CPU row holds the step's CUDA calls: the traced step ends with the last of them,
    # and its launch calls are the CPU time the launch-call card shows.
    calls = _row(rows, ROWS[0])
    assert max(end for _, end in calls + gpu) == pytest.approx(e["step_us"], abs=1e-6)
    assert min(s for s, _ in calls) == 0.0
    assert _union(calls) == pytest.approx(e["cpu_api_us"], abs=1e-6)
    assert _union(_row(rows, ROWS[0], "launch calls")) == pytest.approx(
        e["cpu_launch_us"], abs=1e-6
    )
    # The notes on the rows say the same figures.
    notes = {a.y: a.text for a in build_timeline(G, rows=rows).layout.annotations}
    assert f"0 to {e['step_us']:.0f} us" in notes[ROWS[0]]
    assert f"{EAGER_UNTRACED}: {G.graph['timing']['eager_step_us']:.0f} us" in notes[ROWS[0]]
    assert f"busy {busy} + idle {idle} = {span} us" in notes[ROWS[1]]
    assert f"{first:.0f} to {first + span:.0f} us" in notes[ROWS[1]]


@pytest.mark.parametrize("path", [*BUNDLES, RECORDED], ids=lambda p: p.name)
def test_the_timelines_replay_rows_show_the_traced_medians(path: Path) -> None:
    G = _load(path)
    t = G.graph["timing"]
    fig = build_timeline(G)
    [launch] = [trace for trace in fig.data if trace.name == "graph launch"]
    traced = t.get("cpu_launch_traced_us", t["cpu_launch_us"])
    assert (
        launch.x[0] == traced
        and f"median of {t['replays']} traced replays" in (launch.hovertext[0])
    )
    notes = {a.y: a.text for a in fig.layout.annotations}
    assert f"traced median: {traced:.1f} us" in notes[ROWS[2]]
    assert (
        f"{REPLAY_SPAN}: {t['replay_us']:.1f} us; busy {t['gpu_busy_us']:.1f} us"
        in (notes[ROWS[3]])
    )
    [replayed] = [trace for trace in fig.data if trace.name == "replayed nodes"]
    assert all("into the replay (medians of" in text for text in replayed.hovertext)


def test_a_recorded_graph_draws_the_traced_launch_and_shows_the_untraced_one() -> None:
    G = _bundle(RECORDED)
    life = G.graph["recording"]
    cards = summary_cards(G)
    assert _card(cards, "recording.cpu_launch_us").value == f"{life['cpu_launch_us']:.0f} us"
    replays = _card(cards, "recording.replays")
    assert replays.value == f"{life['replays']:,}"
    assert replays.label == (
        f"replays in the program ({life['traced_replays']} traced, "
        f"{G.graph['timing']['replays']} of them timed)"
    )
    # graphscope record now keeps the untraced median in timing.cpu_launch_us and the traced
    # one beside it: the timeline, all traced, draws the traced one.
    G.graph["timing"]["cpu_launch_traced_us"] = 250.0
    G.graph["timing"]["cpu_launch_us"] = 100.0
    [launch] = [t for t in build_timeline(G).data if t.name == "graph launch"]
    assert launch.x[0] == 250.0


def test_a_launch_call_whose_gpu_op_joined_no_node_is_still_a_launch_call() -> None:
    G = _bundle(TINY_GPT)
    key = next(k for k, d in G.nodes(data=True) if isinstance(d.get("eager"), dict))
    del G.nodes[key]["eager"]
    rows = timeline_rows(G)
    assert _union(_row(rows, ROWS[0], "launch calls")) == pytest.approx(
        G.graph["eager_summary"]["cpu_launch_us"], abs=1e-6
    )
    assert None in next(r.keys for r in rows if r.name == "launch calls")


def test_a_merged_bar_counts_overlapping_spans_once() -> None:
    # Two streams running the same 1-us ops at once: busy 1 us per pair, not 2.
    pairs = MAX_BARS + 1
    starts = [float(2 * (i // 2)) for i in range(2 * pairs)]
    ends = [s + 1.0 for s in starts]
    keys: list[str | None] = [None] * len(starts)
    row = Row.of(ROWS[1], "#000", "gpu", "GPU ops", starts, ends, keys, ["op"] * len(starts))
    bars, merged = _drawn(row, None, (0.0, ends[-1]))
    assert merged and all("busy" in text for *_, text in bars)
    busy = [float(x) for *_, text in bars for x in re.findall(r"busy ([\d.]+) us", text)]
    assert sum(busy) == pytest.approx(pairs)
    assert "into the traced eager step" in bars[0][3]


def test_a_dot_file_has_one_card_and_no_timing_figures() -> None:
    assert summary_cards(_load(DOT)) == [Card(f"{_load(DOT).number_of_nodes()}", "nodes")]
