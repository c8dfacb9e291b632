"""The eager step and the graph replay on one relative time axis, one above the other.

Rows, top to bottom: the one eager step traced with CUPTI, its CUDA calls on the CPU (launch
calls in their own colour) and its GPU work (the gaps are where the GPU idled); then the
graph's one launch call on the CPU (its traced median CPU time) and its nodes as one replay
places them (each node's median start and median duration over the traced replays). Times are
in us from the start of each: the eager step from its first CUDA call, the replay from its
first node. Bars that belong to a node carry its key, so a click selects it everywhere. Each
row says in a note what it measures and how its figures relate to the cards' (app/render/cards.py).

A row draws at most ``MAX_BARS`` bars of the visible window. Beyond that, the bars that fall in
one ``1 / MAX_BARS`` slice of the window are drawn as one, saying how many it holds, and
zooming in redraws the window in more detail (the page asks for it): an eager step of a
100,000-kernel graph makes about 1.4 million CUDA calls, far more than a browser can draw.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from typing import Any, Literal

import networkx as nx
import plotly.graph_objects as go

from graphscope.analysis.eager import columns
from graphscope.analysis.folding import GROUP
from graphscope.io import bulk
from graphscope.model import display_name

from .cards import (
    BUSY_IDLE,
    EAGER_TRACED,
    EAGER_UNTRACED,
    LAUNCH_TRACED,
    REPLAY_BUSY,
    REPLAY_SPAN,
    REPLAY_WALL,
    busy_idle,
    figure,
    launch_traced,
)
from .figure import HOVER_LINE, escape, hover_text, replay_us
from .shared import RING

#: Above this many bars in a row, the row is drawn with WebGL.
BAR_LIMIT = 3000
#: The most bars a row draws of the visible window; more are merged (module docstring).
MAX_BARS = 4000
ROWS = (
    "eager, traced: CPU calls",
    "eager, traced: GPU",
    "graph: launch call (CPU)",
    "graph: GPU, one replay",
)
#: Where each row's times are measured from, said in its hovers.
_CLOCKS = (
    "into the traced eager step",
    "into the traced eager step",
    "(drawn from 0: when it starts against the GPU work is not measured)",
    "into the replay",
)
_COLOURS = {"launch": "#1f77b4", "call": "#c7c7c7", "gpu": "#ff7f0e", "replay": "#2ca02c"}


def has_timeline(G: nx.DiGraph) -> bool:
    trace = G.graph.get("eager_trace")
    return isinstance(trace, dict) or any(replay_us(d) is not None for _, d in G.nodes(data=True))


@dataclass
class Row:
    """One row's spans, sorted by start: times in us, the node each belongs to, a label."""

    row: str
    colour: str
    name: str  # the legend's name
    noun: str  # what a merged bar counts ("CUDA calls")
    starts: list[float]
    ends: list[float]
    keys: list[str | None]
    labels: list[str]
    longest: float = 0.0  # the longest span: how far before a window one may start
    clock: str = ""  # where its times are measured from, for the hover: "into the replay"

    @classmethod
    def of(
        cls,
        row: str,
        colour: str,
        name: str,
        noun: str,
        starts: list[float],
        ends: list[float],
        keys: list[str | None],
        labels: list[str],
        clock: str | None = None,
    ) -> Row:
        """A row of these spans (sorted here when they are not in start order already).

        ``clock`` is where its times are measured from; by default, what its row's is.
        """
        if any(a > b for a, b in itertools.pairwise(starts)):
            order = sorted(range(len(starts)), key=starts.__getitem__)
            starts, ends = [starts[i] for i in order], [ends[i] for i in order]
            keys, labels = [keys[i] for i in order], [labels[i] for i in order]
        longest = max((e - s for s, e in zip(starts, ends, strict=True)), default=0.0)
        if clock is None:
            clock = _CLOCKS[ROWS.index(row)] if row in ROWS else ""
        return cls(row, colour, name, noun, starts, ends, keys, labels, longest, clock)


def _drawn(
    row: Row, window: tuple[float, float] | None, extent: tuple[float, float]
) -> tuple[list[tuple[float, float, str | None, str]], bool]:
    """The bars to draw of ``row`` in ``window`` (all of it when None), and whether any merged.

    Each bar is (start, end, node key, hover text).
    """
    lo, hi = 0, len(row.starts)
    x0, x1 = window if window is not None else extent
    if window is not None:
        # Spans are sorted by start; one that starts before x0 may still reach into the window.
        lo = bisect.bisect_left(row.starts, x0 - row.longest)
        hi = bisect.bisect_right(row.starts, x1)
    starts, ends, keys, labels = row.starts, row.ends, row.keys, row.labels
    clock = f" {row.clock}" if row.clock else ""

    def one(i: int) -> tuple[float, float, str | None, str]:
        # A long kernel name wraps (hover_text); its time stays whole on a line of its own.
        when = f"{ends[i] - starts[i]:.2f} us at {starts[i]:.1f} us{clock}"
        if len(labels[i]) + len(when) + 2 <= HOVER_LINE:
            return starts[i], ends[i], keys[i], escape(f"{labels[i]}: {when}")
        return starts[i], ends[i], keys[i], f"{hover_text(labels[i])}:<br>{escape(when)}"

    if hi - lo <= MAX_BARS:
        return [one(i) for i in range(lo, hi) if ends[i] >= x0], False
    width = (x1 - x0) / MAX_BARS or 1.0
    bars: list[tuple[float, float, str | None, str]] = []
    i = lo
    while i < hi:
        if ends[i] < x0:
            i += 1
            continue
        start, end, first = starts[i], starts[i], i
        limit = start + width
        busy = 0.0  # the union of the spans, not their sum: GPU ops on two streams overlap
        while i < hi and starts[i] < limit:
            busy += max(ends[i] - max(starts[i], end), 0.0)
            end = max(end, ends[i])
            i += 1
        count = i - first
        if count == 1:
            bars.append(one(first))
        else:
            text = (
                f"{count} {row.noun} from {start:.1f} to {end:.1f} us{clock}, busy "
                f"{busy:.1f} us of it; zoom in to see each"
            )
            bars.append((start, end, None, escape(text)))
    return bars, True


def _bars(
    row: str, spans: list[tuple[float, float, str | None, str]], colour: str, name: str
) -> go.Bar | go.Scattergl:
    if len(spans) > BAR_LIMIT:
        # Thousands of SVG bars stall the browser: draw them as thick WebGL line segments.
        xs: list[float | None] = []
        ys: list[str | None] = []
        keys: list[str | None] = []
        texts: list[str | None] = []
        for start, end, key, text in spans:
            xs += [start, max(end, start + 0.05), None]
            ys += [row, row, None]
            keys += [key, key, None]
            texts += [text, text, None]
        return go.Scattergl(
            x=xs,
            y=ys,
            customdata=keys,
            hovertext=texts,
            hoverinfo="text",
            mode="lines",
            line={"color": colour, "width": 14},
            name=name,
        )
    return go.Bar(
        y=[row] * len(spans),
        base=[start for start, _, _, _ in spans],
        x=[max(end - start, 0.05) for start, end, _, _ in spans],  # at least visible when zoomed
        customdata=[key for _, _, key, _ in spans],
        hovertext=[text for _, _, _, text in spans],
        hoverinfo="text",
        orientation="h",
        marker={"color": colour, "line": {"width": 0}},
        name=name,
    )


def timeline_ring(
    G: nx.DiGraph, key: str | None, shown: nx.DiGraph | None = None
) -> tuple[list[str], list[float], list[float]]:
    """Rows, starts and widths of the bars that ring ``key``: its launch call, its eager
    kernel and its replayed kernel (or a collapsed group's replay span)."""
    ys: list[str] = []
    bases: list[float] = []
    widths: list[float] = []

    def ring(row: str, start: object, length: object) -> None:
        if isinstance(start, (int, float)) and isinstance(length, (int, float)):
            ys.append(row)
            bases.append(float(start))
            widths.append(max(float(length), 0.05))

    if key is not None and shown is not None and key in shown:
        data = shown.nodes[key]
        if data.get("type") == GROUP and "start_us" in data:
            ring(ROWS[3], data["start_us"], data["end_us"] - data["start_us"])
            return ys, bases, widths
    if key is None or key not in G:
        return ys, bases, widths
    data = G.nodes[key]
    eager = data.get("eager") if isinstance(data.get("eager"), dict) else {}
    ring(ROWS[0], eager.get("launch_start_us"), eager.get("launch_us"))
    ring(ROWS[1], eager.get("start_us"), eager.get("duration_us"))
    replay = data.get("replay") if isinstance(data.get("replay"), dict) else {}
    ring(ROWS[3], replay.get("start_us"), replay.get("median_us"))
    return ys, bases, widths


def zoom_window(relayout: dict[str, Any]) -> tuple[float, float] | Literal[False] | None:
    """The x range a plotly ``relayoutData`` zoomed to; None for a reset; False if no x change."""
    if relayout.get("xaxis.autorange"):
        return None
    x0, x1 = relayout.get("xaxis.range[0]"), relayout.get("xaxis.range[1]")
    if x0 is None and isinstance(relayout.get("xaxis.range"), list):
        x0, x1 = relayout["xaxis.range"][:2]
    if isinstance(x0, (int, float)) and isinstance(x1, (int, float)) and x1 > max(x0, 0):
        return max(float(x0), 0.0), float(x1)  # nothing happens before 0
    return False


def merges(rows: list[Row]) -> bool:
    """Whether the whole step, drawn, merges bars: only then does a zoom need a redraw."""
    return any(len(row.starts) > MAX_BARS for row in rows)


def timeline_rows(G: nx.DiGraph, shown: nx.DiGraph | None = None) -> list[Row]:
    """The timeline's rows of spans (``shown``: the graph as drawn, for its groups' bars).

    Column by column rather than a tuple per span: 1.4 million calls took 2.7 s as tuples,
    1.0 s so (with the garbage collector paused, as ``bulk`` does).
    """
    with bulk():
        return _timeline_rows(G, shown)


def _timeline_rows(G: nx.DiGraph, shown: nx.DiGraph | None) -> list[Row]:
    rows: list[Row] = []
    trace = G.graph.get("eager_trace")
    if isinstance(trace, dict):
        node_of_op = {
            d["eager"]["index"]: k
            for k, d in G.nodes(data=True)
            # ``index`` is optional in the contract: a node without it has no GPU op here.
            if isinstance(d.get("eager"), dict) and "index" in d["eager"]
        }
        kinds, names, starts, ends, ids = columns(
            trace["gpu"], "type", "name", "start_ns", "end_ns", "correlation_id"
        )
        keys = [node_of_op.get(i) for i in range(len(kinds))]
        labels = [
            display_name(G.nodes[key]) if key else (names[i] or kinds[i])
            for i, key in enumerate(keys)
        ]
        node_of_call = {ids[i]: key for i, key in enumerate(keys) if key is not None}
        launched = set(ids)  # a launch call is one that put GPU work on, as eager_summary says
        gpu = Row.of(
            ROWS[1],
            _COLOURS["gpu"],
            "eager GPU work",
            "GPU ops",
            [t / 1000 for t in starts],
            [t / 1000 for t in ends],
            keys,
            labels,
        )
        names, starts, ends, ids = columns(
            trace["api"], "name", "start_ns", "end_ns", "correlation_id"
        )
        call_keys = [node_of_call.get(c) for c in ids]
        for launches, name, noun in (
            (False, "other CUDA calls", "CUDA calls"),
            (True, "launch calls", "launch calls"),
        ):
            picked = [i for i, c in enumerate(ids) if (c in launched) == launches]
            rows.append(
                Row.of(
                    ROWS[0],
                    _COLOURS["launch" if launches else "call"],
                    name,
                    noun,
                    [starts[i] / 1000 for i in picked],
                    [ends[i] / 1000 for i in picked],
                    [call_keys[i] for i in picked],
                    [names[i] for i in picked],
                )
            )
        rows.append(gpu)
    replays = figure(G, "timing.replays")
    of = f" of {replays:.0f}" if replays is not None else ""
    launch = launch_traced(G)
    if launch is not None:
        label = f"graph launch call, CPU time, median{of} traced replays"
        launch_us = launch[1]
        rows.append(
            Row.of(
                ROWS[2],
                _COLOURS["launch"],
                "graph launch",
                "launches",
                [0.0],
                [launch_us],
                [None],
                [label],
            )
        )
    starts_us: list[float] = []
    ends_us: list[float] = []
    replay_keys: list[str | None] = []
    replay_labels: list[str] = []
    for key, data in (shown if shown is not None else G).nodes(data=True):
        if data.get("type") == GROUP and "start_us" in data:
            start, end = data["start_us"], data["end_us"]
            label = f"{data['group']}: {data['members']} nodes, from {start:.1f} us"
        else:
            stats = data.get("replay")
            if not (isinstance(stats, dict) and isinstance(stats.get("start_us"), (int, float))):
                continue
            start = stats["start_us"]
            end = start + (stats.get("median_us") or 0.0)
            label = display_name(data)
        starts_us.append(start)
        ends_us.append(end)
        replay_keys.append(key)
        replay_labels.append(label)
    if starts_us:
        rows.append(
            Row.of(
                ROWS[3],
                _COLOURS["replay"],
                "replayed nodes",
                "nodes",
                starts_us,
                ends_us,
                replay_keys,
                replay_labels,
                clock=f"into the replay (medians{of} traced replays)",
            )
        )
    return rows


def _notes(G: nx.DiGraph, rows: list[Row]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What each row measures, and how its figures add up: (annotations, shapes).

    The figures are the bundle's own, named as the cards name them; tests/app/test_cards.py checks
    them against the rows drawn.
    """
    drawn = {row.row for row in rows}
    notes: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    style = {
        "showarrow": False,
        "font": {"size": 11, "color": "#333"},
        "bgcolor": "rgba(255,255,255,0.85)",
        "xref": "x",
        "yref": "y",
    }
    # Above a bar of its row (bars fill half a row: 38 px of 75), or beside a short one.
    above = {"yanchor": "bottom", "yshift": 19}
    beside = {"yanchor": "middle", "xanchor": "left", "xshift": 6}
    step = figure(G, "eager_summary.step_us")
    untraced = figure(G, "timing.eager_step_us")
    if ROWS[0] in drawn and step is not None:
        text = f"{EAGER_TRACED}: 0 to {step:.0f} us"
        if untraced is not None:
            text += f"; {EAGER_UNTRACED}: {untraced:.0f} us (dotted)"
            shapes.append(
                {
                    "type": "line",
                    "xref": "x",
                    "yref": "y",
                    "x0": untraced,
                    "x1": untraced,
                    "y0": ROWS[1],
                    "y1": ROWS[0],
                    "y0shift": -0.4,
                    "y1shift": 0.4,
                    "line": {"color": "#555", "width": 1.5, "dash": "dot"},
                }
            )
        api, launch = (
            figure(G, "eager_summary.cpu_api_us"),
            figure(G, "eager_summary.cpu_launch_us"),
        )
        hover = (
            f"CPU in CUDA calls {api:.0f} us, {launch:.0f} us of it in launch calls (blue)"
            if api is not None and launch is not None
            else None
        )
        notes.append(
            {"x": 0, "y": ROWS[0], "xanchor": "left", "text": escape(text), "hovertext": hover}
            | above
        )
    shares = busy_idle(G)
    first = figure(G, "eager_summary.first_gpu_start_us")
    if ROWS[1] in drawn and shares is not None and first is not None:
        busy, idle, span = shares
        idle_pct = figure(G, "eager_summary.gpu_idle_pct")
        pct = f" ({idle_pct:.0f}% idle)" if idle_pct is not None else ""
        text = (
            f"GPU span {first:.0f} to {first + span:.0f} us: busy {busy} + idle {idle} "
            f"= {span} us{pct}"
        )
        notes.append(
            {
                "x": first,
                "y": ROWS[1],
                "xanchor": "left",
                "text": escape(text),
                "hovertext": BUSY_IDLE,
            }
            | above
        )
    launch_us = launch_traced(G)
    if ROWS[2] in drawn and launch_us is not None:
        text = f"{LAUNCH_TRACED}: {launch_us[1]:.1f} us"
        notes.append({"x": launch_us[1], "y": ROWS[2], "text": escape(text)} | beside)
    replay_row = next((row for row in rows if row.row == ROWS[3]), None)
    span_us = figure(G, "timing.replay_us")
    if replay_row is not None and span_us is not None:
        parts = [f"{REPLAY_SPAN}: {span_us:.1f} us"]
        said = [REPLAY_SPAN]
        busy_us, wall_us = figure(G, "timing.gpu_busy_us"), figure(G, "timing.replay_wall_us")
        if busy_us is not None:
            parts.append(f"busy {busy_us:.1f} us")
            said.append(f"{REPLAY_BUSY} (a median of its own: span - busy is no replay's idle)")
        if wall_us is not None:
            parts.append(f"untraced mean wall {wall_us:.1f} us")
            said.append(REPLAY_WALL)
        hover = "; ".join(said) + ". Each bar is a node at its median start and duration."
        notes.append(
            {"x": max(replay_row.ends), "y": ROWS[3], "text": escape("; ".join(parts))}
            | beside
            | {"hovertext": hover}
        )
    return [style | note for note in notes], shapes


def build_timeline(
    G: nx.DiGraph,
    selected: str | None = None,
    shown: nx.DiGraph | None = None,
    window: tuple[float, float] | None = None,
    rows: list[Row] | None = None,
) -> go.Figure:
    """The four rows as horizontal bars; the selected node's bars ringed.

    ``shown`` is the graph as drawn: its collapsed groups are one replay bar each, from their
    first node's start to their last node's end. ``window`` is the visible x range in us (all
    when None); ``rows`` are ``timeline_rows(G, shown)`` when the caller keeps them. The
    figure's ``layout.meta`` says whether any bars were merged (``{"merged": bool}``): only then
    does zooming in need a new figure.
    """
    rows = timeline_rows(G, shown) if rows is None else rows
    extent = (0.0, max((max(r.ends) for r in rows if r.ends), default=1.0))
    traces: list[Any] = []
    merged = False
    for row in rows:
        bars, reduced = _drawn(row, window, extent)
        merged |= reduced
        traces.append(_bars(row.row, bars, row.colour, row.name))
    ys, bases, widths = timeline_ring(G, selected, shown)
    traces.append(
        go.Bar(
            y=ys,
            base=bases,
            x=widths,
            orientation="h",
            marker={"color": "rgba(0,0,0,0)", "line": {"color": "#d62728", "width": 3}},
            hoverinfo="skip",
            name=RING,
        )
    )
    fig = go.Figure(traces)
    notes, shapes = _notes(G, rows)
    fig.update_layout(
        barmode="overlay",
        bargap=0.5,
        height=360,
        annotations=notes,
        shapes=shapes,
        margin={"l": 10, "r": 10, "t": 30, "b": 30},
        plot_bgcolor="white",
        dragmode="zoom",
        hovermode="closest",
        uirevision="timeline",
        meta={"merged": merged},
        legend={"orientation": "h", "y": 1.15, "x": 0},
        xaxis={
            "title": {
                "text": "us from the start of each: the traced eager step from its first CUDA "
                "call, the replay from its first node"
            },
            **({"range": list(window)} if window is not None else {}),
            # Every row is measured from its own start: no zoom or pan goes before 0.
            "minallowed": 0,
            "showgrid": True,
            "gridcolor": "#eee",
        },
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(ROWS)), "autorange": True},
    )
    return fig
