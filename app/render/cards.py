"""The graph page's summary cards: the bundle's timing, each figure named by what it measures.

A captured bundle times the step several ways (docs/CAPTURE.md), and the figures differ because
the measurements do, not because one is wrong:

- the eager step untraced: the median wall time of up to 50 steps (``timing.eager_step_us``);
- the eager step traced: one step under CUPTI, from its first CUDA call to its last
  (``eager_summary.step_us``), which the timeline draws; tracing makes it longer;
- the graph replay untraced: the wall time of back-to-back replays divided by their number, a
  mean (``timing.replay_wall_us``);
- the replay traced: medians over the traced replays of the GPU span and busy time
  (``timing.replay_us``, ``timing.gpu_busy_us``) and of the launch call's CPU time.

GPU busy and idle of the eager step are shares of its GPU span (first GPU op to last), not of
the step: ``gpu_busy_us + gpu_idle_us == gpu_span_us``. docs/DASHBOARD.md works the arithmetic
through on tiny-gpt-b1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import networkx as nx
from dash import html

from graphscope.analysis.timing import step_timing

#: What each figure measures, in the words the cards and the timeline both use.
EAGER_UNTRACED = "eager step, untraced median wall"
EAGER_TRACED = "eager step as traced (one step)"
REPLAY_WALL = "graph replay, untraced mean wall"
REPLAY_SPAN = "replay GPU span, traced median"
REPLAY_BUSY = "replay GPU busy, traced median"
LAUNCH_TRACED = "graph launch call, CPU, traced median"
LAUNCH_UNTRACED = "graph launch call, CPU, untraced median"
BUSY_IDLE = "GPU busy + idle = GPU span of the traced eager step"


@dataclass(frozen=True)
class Card:
    """One summary card."""

    value: str  # the figure as shown: "1645 us"
    label: str  # what it measures, in a few words: "eager step, untraced median wall"
    fields: tuple[str, ...] = ()  # the bundle fields it shows: "timing.eager_step_us"
    note: str = ""  # how it was measured and how it relates to the others (the card's hover)


def figure(G: nx.DiGraph, field: str) -> float | None:
    """The number a bundle field holds (``"timing.eager_step_us"``), None if it has none."""
    return step_timing(G).figure(field)


def busy_idle(G: nx.DiGraph) -> tuple[int, int, int] | None:
    """GPU busy, idle and span of the traced eager step in whole us, as the page shows them.

    The idle time shown is span minus busy of the rounded figures, so that the three add up on
    the page too (the bundle's own ``gpu_idle_us`` is within 1 us of it).
    """
    busy = figure(G, "eager_summary.gpu_busy_us")
    span = figure(G, "eager_summary.gpu_span_us")
    if busy is None or span is None:
        return None
    return round(busy), round(span) - round(busy), round(span)


def launch_traced(G: nx.DiGraph) -> tuple[str, float] | None:
    """The traced median CPU time of the graph's launch call: (its bundle field, us).

    Both ``capture`` and ``record`` keep the untraced median as ``timing.cpu_launch_us`` and
    the traced one as ``timing.cpu_launch_traced_us``; bundles written before that keep only
    the traced median, as ``timing.cpu_launch_us``.
    """
    for field in ("timing.cpu_launch_traced_us", "timing.cpu_launch_us"):
        value = figure(G, field)
        if value is not None:
            return field, value
    return None


def summary_cards(G: nx.DiGraph) -> list[Card]:
    """The cards of a graph: its size, then each timing figure its bundle has (none for DOT)."""
    cards = [Card(f"{G.number_of_nodes():,}", "nodes")]
    eager = figure(G, "timing.eager_step_us")
    traced = figure(G, "eager_summary.step_us")
    wall = figure(G, "timing.replay_wall_us")
    wall_traced = figure(G, "timing.replay_wall_traced_us")
    span = figure(G, "timing.replay_us")
    busy = figure(G, "timing.gpu_busy_us")
    replays = figure(G, "timing.replays")
    of = f" of {replays:,.0f}" if replays is not None else ""
    if eager is not None:
        cards.append(
            Card(
                f"{eager:,.0f} us",
                EAGER_UNTRACED,
                ("timing.eager_step_us",),
                "Median wall time of up to 50 eager steps run without tracing, each from its "
                "start to the GPU's sync. The speedup is taken from this figure.",
            )
        )
    if traced is not None:
        label = EAGER_TRACED
        if eager:
            label += f", {(traced - eager) / eager:+.0%} on untraced"
        first = figure(G, "eager_summary.first_gpu_start_us") or 0.0
        gpu_span = figure(G, "eager_summary.gpu_span_us") or 0.0
        cards.append(
            Card(
                f"{traced:,.0f} us",
                label,
                ("eager_summary.step_us",),
                "One eager step traced with CUPTI, from its first CUDA call to the end of its "
                "last; the timeline's eager rows are this step. It is "
                f"{first:,.0f} us before the first GPU op + {gpu_span:,.0f} us of GPU span + "
                f"{traced - first - gpu_span:,.0f} us after the last GPU op. Tracing every CUDA "
                "call slows the CPU that issues the step, so it runs longer than the untraced "
                "median.",
            )
        )
    if wall is not None:
        traced_wall = (
            f"; traced, {wall_traced:,.0f} us ({(wall_traced - wall) / wall:+.1%})"
            if wall_traced is not None and wall
            else ""
        )
        cards.append(
            Card(
                f"{wall:,.0f} us",
                REPLAY_WALL,
                ("timing.replay_wall_us",),
                f"Wall time of{of or ' the'} untraced replays run back to back, divided by "
                f"their number{traced_wall}.",
            )
        )
        if eager is not None and wall > 0:
            cards.append(
                Card(
                    f"{eager / wall:.1f}x",
                    "speedup: untraced eager step / untraced replay wall",
                    ("timing.eager_step_us", "timing.replay_wall_us"),
                    f"{eager:,.0f} us / {wall:,.0f} us: both untraced.",
                )
            )
    if span is not None:
        cards.append(
            Card(
                f"{span:,.0f} us",
                REPLAY_SPAN,
                ("timing.replay_us",),
                f"First node's start to last node's end of one replay, median{of} traced "
                "replays"
                + (f"; GPU busy in it, median apart: {busy:,.0f} us" if busy is not None else "")
                + ". The timeline's replay row draws one replay from each node's medians.",
            )
        )
    launch = figure(G, "eager_summary.cpu_launch_us")
    if launch is not None and traced:
        cards.append(
            Card(
                f"{launch:,.0f} us, {launch / traced:.0%}",
                "CPU in launch calls, traced eager step (share of it)",
                ("eager_summary.cpu_launch_us", "eager_summary.step_us"),
                f"CPU time in the calls that launched GPU work, of the {traced:,.0f} us traced "
                "eager step: the blue bars of the timeline's first row.",
            )
        )
    shares = busy_idle(G)
    idle_pct = figure(G, "eager_summary.gpu_idle_pct")
    if shares is not None:
        b, i, s = shares
        cards.append(
            Card(
                f"{b:,} + {i:,} = {s:,} us",
                BUSY_IDLE,
                ("eager_summary.gpu_busy_us", "eager_summary.gpu_idle_us"),
                "Within the traced eager step, from its first GPU op to the end of its last: "
                "time some GPU op ran, and the gaps between them (the timeline's second row).",
            )
        )
    if idle_pct is not None:
        cards.append(
            Card(
                f"{idle_pct:.0f}%",
                "GPU idle share of that span (traced eager step)",
                ("eager_summary.gpu_idle_pct",),
                "GPU idle / GPU span of the traced eager step.",
            )
        )
    life = G.graph.get("recording") if isinstance(G.graph.get("recording"), dict) else None
    if life is not None:  # a graph recorded in its own program (graphscope record)
        traced_replays = life.get("traced_replays")
        label = "replays in the program"
        if isinstance(traced_replays, int):
            label += f" ({traced_replays:,} traced"
            if replays is not None and replays != traced_replays:
                label += f", {replays:,.0f} of them timed"
            label += ")"
        cards.append(
            Card(
                f"{life['replays']:,}",
                label,
                ("recording.replays",),
                "Launches of this graph while the program was recorded. The first launch "
                "traced carries CUPTI's setup and is not timed, nor is one that lost records "
                "at the edge of a sampling window: the replay figures are medians of the "
                "timed ones.",
            )
        )
        if isinstance(life.get("cpu_launch_us"), (int, float)):
            cards.append(
                Card(
                    f"{life['cpu_launch_us']:,.0f} us",
                    LAUNCH_UNTRACED,
                    ("recording.cpu_launch_us",),
                    "The program's own launch calls, timed without tracing; the timeline draws "
                    "the traced median.",
                )
            )
        if life.get("batch") is not None:
            cards.append(Card(str(life["batch"]), "batch"))
        cards.append(Card(str(life.get("capturer") or "?"), "captured by"))
    return cards


def card_divs(G: nx.DiGraph) -> list[html.Div]:
    """The cards as page components, each with its note as the hover."""
    divs = []
    for c in summary_cards(G):
        hover: dict[str, Any] = {"title": c.note} if c.note else {}  # no title, not a null one
        divs.append(html.Div([html.B(c.value), c.label], className="card", **hover))
    return divs


def untimed(G: nx.DiGraph) -> str:
    """Why a graph shows no timing, in the words that fit where it came from."""
    if G.number_of_nodes() == 0:
        return (
            "This graph has no nodes (torch.compile's CUDA graph trees instantiate an empty "
            "graph before the first real one)."
        )
    if isinstance(G.graph.get("recording"), dict):
        return (
            "This graph was never replayed while recorded, so it has no timing: nodes are "
            "coloured by type."
        )
    return (
        "This file has no timing (a DOT dump carries none): nodes are coloured by type. "
        "Capture with graphscope capture, or record the program with graphscope record, to "
        "time every node."
    )
