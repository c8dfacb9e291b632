"""The eager step and the graph replay on one relative time axis, one above the other.

Rows, top to bottom: the eager step's CUDA calls on the CPU (launch calls in their own colour),
its GPU work (the gaps are where the GPU idled), then the graph's one launch call on the CPU and
its nodes as one replay places them (each node's median start and median duration). Times are
in us from the start of each: the eager step from its first CUDA call, the replay from its
first node. Bars that belong to a node carry its key, so a click selects it everywhere.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import plotly.graph_objects as go

from graphscope.analysis.eager import eager_calls, eager_gpu
from graphscope.model import display_name

from .figure import escape, replay_us
from .groups import GROUP

#: Above this many bars in a row, the row is drawn with WebGL.
BAR_LIMIT = 3000
ROWS = ("eager: CPU calls", "eager: GPU", "graph: CPU launch", "graph: GPU (replay)")
_COLOURS = {"launch": "#1f77b4", "call": "#c7c7c7", "gpu": "#ff7f0e", "replay": "#2ca02c"}


def has_timeline(G: nx.DiGraph) -> bool:
    trace = G.graph.get("eager_trace")
    return isinstance(trace, dict) or any(replay_us(d) is not None for _, d in G.nodes(data=True))


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

    def ring(row: str, start: Any, length: Any) -> None:
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


def build_timeline(
    G: nx.DiGraph, selected: str | None = None, shown: nx.DiGraph | None = None
) -> go.Figure:
    """The four rows as horizontal bars; the selected node's bars ringed.

    ``shown`` is the graph as drawn: its collapsed groups are one replay bar each, from their
    first node's start to their last node's end.
    """
    by_index = {
        d["eager"]["index"]: k for k, d in G.nodes(data=True) if isinstance(d.get("eager"), dict)
    }
    traces: list[Any] = []
    trace = G.graph.get("eager_trace")
    if isinstance(trace, dict):
        ops = eager_gpu(trace)
        node_of_call: dict[Any, str] = {}
        gpu: list[tuple[float, float, str | None, str]] = []
        for index, op in enumerate(ops):
            key = by_index.get(index)
            start, end = op["start_ns"] / 1000, op["end_ns"] / 1000
            label = display_name(G.nodes[key]) if key else (op.get("name") or op["type"])
            gpu.append(
                (start, end, key, escape(f"{label}: {end - start:.2f} us at {start:.1f} us"))
            )
            if key is not None:
                node_of_call[op["correlation_id"]] = key
        launches, others = [], []
        for call in eager_calls(trace):
            start, end = call["start_ns"] / 1000, call["end_ns"] / 1000
            key = node_of_call.get(call["correlation_id"])
            text = escape(f"{call['name']}: {end - start:.2f} us at {start:.1f} us")
            (launches if key is not None else others).append((start, end, key, text))
        traces += [
            _bars(ROWS[0], others, _COLOURS["call"], "other CUDA calls"),
            _bars(ROWS[0], launches, _COLOURS["launch"], "launch calls"),
            _bars(ROWS[1], gpu, _COLOURS["gpu"], "eager GPU work"),
        ]
    timing = G.graph.get("timing") if isinstance(G.graph.get("timing"), dict) else {}
    if isinstance(timing.get("cpu_launch_us"), (int, float)):
        launch = timing["cpu_launch_us"]
        text = (
            f"graph launch call: {launch:.1f} us (median of {timing.get('replays', '?')} replays)"
        )
        traces.append(
            _bars(ROWS[2], [(0.0, launch, None, text)], _COLOURS["launch"], "graph launch")
        )
    replay: list[tuple[float, float, str | None, str]] = []
    for key, data in (shown if shown is not None else G).nodes(data=True):
        if data.get("type") == GROUP and "start_us" in data:
            start, end = data["start_us"], data["end_us"]
            text = f"{data['group']}: {data['members']} nodes from {start:.1f} to {end:.1f} us"
            replay.append((start, end, key, escape(text)))
            continue
        stats = data.get("replay")
        if isinstance(stats, dict) and isinstance(stats.get("start_us"), (int, float)):
            start, length = stats["start_us"], stats.get("median_us") or 0.0
            text = escape(f"{display_name(data)}: {length:.2f} us at {start:.1f} us")
            replay.append((start, start + length, key, text))
    if replay:
        traces.append(_bars(ROWS[3], replay, _COLOURS["replay"], "replayed nodes"))
    ys, bases, widths = timeline_ring(G, selected, shown)
    traces.append(
        go.Bar(
            y=ys,
            base=bases,
            x=widths,
            orientation="h",
            marker={"color": "rgba(0,0,0,0)", "line": {"color": "#d62728", "width": 3}},
            hoverinfo="skip",
            name="selected",
        )
    )
    fig = go.Figure(traces)
    fig.update_layout(
        barmode="overlay",
        height=260,
        margin={"l": 10, "r": 10, "t": 30, "b": 30},
        plot_bgcolor="white",
        dragmode="zoom",
        hovermode="closest",
        uirevision="timeline",
        legend={"orientation": "h", "y": 1.15, "x": 0},
        xaxis={
            "title": {"text": "us from the start of each"},
            "showgrid": True,
            "gridcolor": "#eee",
        },
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(ROWS)), "autorange": True},
    )
    return fig
