"""The DAG as a Plotly figure: nodes coloured by type, replay time or graph against eager;
edges with direction."""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import networkx as nx
import plotly.graph_objects as go

from graphscope.analysis.folding import GROUP, is_block
from graphscope.analysis.node_times import graph_and_eager
from graphscope.model import display_name, origin_of, replay_median
from graphscope.names import kernel_label

from .placement import Layout
from .shared import EDGES, LABEL_LIMIT, RING, DagMeta

#: Above this many nodes the figure is drawn with WebGL and edges lose their arrowheads.
SVG_LIMIT = 3000
# One colour per node type, from Plotly's qualitative palette (colour-blind-safe order first).
TYPE_COLOURS = {
    "KERNEL": "#1f77b4",
    "MEMCPY": "#ff7f0e",
    "MEMSET": "#2ca02c",
    "HOST": "#d62728",
    "GRAPH": "#9467bd",
    "CONDITIONAL": "#8c564b",
    "EMPTY": "#c7c7c7",
    "EVENT_RECORD": "#e377c2",
    "WAIT_EVENT": "#f7b6d2",
    "MEM_ALLOC": "#bcbd22",
    "MEM_FREE": "#dbdb8d",
    "EXT_SEMAS_SIGNAL": "#17becf",
    "EXT_SEMAS_WAIT": "#9edae5",
    "BATCH_MEM_OP": "#7f7f7f",
    GROUP: "#6a3d9a",
}
#: Lines (rows and their lanes) are given at least this many px in the view a graph opens on.
LINE_PX = 24
#: The minimap's size in px, and the most columns and rows of its density grid.
MINIMAP_PX = (220, 150)
#: The DAG's right margin when it has a minimap: the minimap, its border and a gap.
MINIMAP_MARGIN = MINIMAP_PX[0] + 18
MINIMAP_CELLS = 80
#: The minimap's shades of blue, palest for the fewest nodes in a cell.
MINIMAP_SHADES = 8
#: Traces before the node traces: the edges, drawn first so that nodes sit on top.
EDGE_TRACES = 1
# Row labels closer than this (10 px text) overlap; only rows this far apart are labelled.
LABEL_LINE_PX = 13
_HEAD = 0.28  # how far short of its target an edge stops, in node spacings, for the arrowhead


def replay_us(data: dict[str, Any]) -> float | None:
    """A node's replay median, or a collapsed group's total, in us."""
    if data.get("type") == GROUP:
        total = data.get("time_us")
        return float(total) if total else None
    return replay_median(data)


def colour_us(data: dict[str, Any]) -> float | None:
    """The time a node is coloured by: its replay median, or for a collapsed group the mean of
    its members' (a group coloured by its sum, 14 ms for a folded stack of layers, stretched
    the scale until every real kernel had one colour)."""
    if data.get("type") == GROUP:
        total = data.get("time_us")
        return float(total) / max(int(data.get("members") or 1), 1) if total else None
    return replay_median(data)


def has_timing(G: nx.DiGraph) -> bool:
    return any(replay_us(d) is not None for _, d in G.nodes(data=True))


def _hover(key: str, data: dict[str, Any]) -> str:
    if data.get("type") == GROUP:
        total = data.get("time_us")
        timed = f", {total:,.1f} us in replay" if total is not None else ""
        return escape(f"{data['group']}: {data['members']:,} nodes{timed}") + "<br>click to expand"
    # Plotly renders hover text as its own small markup; names are escaped so that a kernel
    # name with <...> template arguments shows as text, not as tags.
    name = display_name(data) if data.get("type") == "KERNEL" else data.get("type", "?")
    time = replay_us(data)
    text = hover_text(f"{name}  ({key})")
    if time is not None:
        text += f"<br>replay {time:.2f} us"
    pair = graph_and_eager(data)
    if pair is not None:
        text += f"; eager {pair[1]:.2f} us ({pair[0] / pair[1]:.2f}x in the graph)"
    module = (data.get("attribution") or {}).get("module")
    if module:
        text += f"<br>{hover_text(module)}"
    return text


def _ticks(low: float, high: float) -> list[float]:
    """1-2-5 steps between 10**low and 10**high us, for a log-scaled colour bar."""
    out = []
    for decade in range(math.floor(low) - 1, math.ceil(high) + 1):
        for step in (1, 2, 5):
            value = step * 10.0**decade
            if 10**low <= value * 1.0001 and value <= 10**high * 1.0001:
                out.append(value)
    return out or [10**low]


def escape(text: str) -> str:
    """Text for Plotly's hover and annotation markup, shown as it is."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


#: The most characters a line of a hover label holds: a cuDNN or Triton kernel's name on one
#: line made a label as wide as a whole row of the DAG, covering the nodes it was about.
HOVER_LINE = 72
_HOVER_BREAK = re.compile(r"(?<=[ ,:<>])")


def hover_text(text: str, width: int = HOVER_LINE) -> str:
    """``text`` escaped for a hover label, wrapped into lines of at most ``width`` characters,
    after a space or punctuation where it can (a template's ``, `` or ``::``)."""
    if len(text) <= width:
        return escape(text)
    lines: list[str] = []
    line = ""
    for part in _HOVER_BREAK.split(text):
        while len(part) > width:  # no break in it: cut it
            room = width - len(line)
            lines.append(line + part[:room])
            line, part = "", part[room:]
        if len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    lines.append(line)
    return "<br>".join(escape(x) for x in lines if x)


def _edges(
    G: nx.DiGraph, lay: Layout, arrows: bool, page_arrows: bool = False
) -> list[go.Scatter | go.Scattergl]:
    """The edges as one trace. With ``arrows``, each edge is its own segment stopping short
    of its target; with ``page_arrows`` too, the page draws the arrowheads at those ends (in
    its layer over the plot, assets/gs-1-labels.js), else Plotly does, as markers."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for a, b in G.edges():
        (x0, y0), (x1, y1) = lay.pos[a], lay.pos[b]
        if arrows:
            length = math.hypot(x1 - x0, y1 - y0) or 1.0
            x1, y1 = x1 - (x1 - x0) / length * _HEAD, y1 - (y1 - y0) / length * _HEAD
        if not arrows and xs and xs[-1] == x0 and ys[-1] == y0:
            # An edge that starts where the last one ended continues its line: a chain of
            # 10,000 nodes is then one polyline per row, not 10,000 separate segments.
            xs.append(x1)
            ys.append(y1)
            continue
        if xs and not arrows:
            xs.append(None)
            ys.append(None)
        xs += [x0, x1] if not arrows else [x0, x1, None]
        ys += [y0, y1] if not arrows else [y0, y1, None]
    line = {"color": "#9a9a9a", "width": 1}
    if not arrows or page_arrows:
        # A plain line. Without arrows (over SVG_LIMIT nodes) it is SVG, not WebGL, although
        # the nodes are WebGL there: Plotly draws only the part of an SVG line in view, and
        # WebGL has no GPU in headless Chromium. Measured on the 10,780-node sample expanded:
        # a pan took 170 to 250 ms to its second frame with WebGL edges, 104 to 142 ms with
        # this. With ``page_arrows`` the page draws the heads as one path: Plotly's arrow
        # markers (below) are placed on every redraw, and on tiny-llama's 211 edges they were
        # most of a zoom's 157 ms (84 ms without them).
        plain = {"mode": "lines", "line": line, "hoverinfo": "skip", "showlegend": False}
        return [go.Scatter(x=xs, y=ys, name=EDGES, **plain)]
    sizes = [0 if i % 3 == 0 else 9 for i in range(len(xs))]
    marker = {"symbol": "arrow", "angleref": "previous", "size": sizes, "color": "#9a9a9a"}
    return [
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines+markers",
            line=line,
            marker=marker,
            hoverinfo="skip",
            name=EDGES,
            showlegend=False,
        )
    ]


def _nodes(
    Scatter: Any,
    G: nx.DiGraph,
    lay: Layout,
    keys: list[str],
    name: str,
    marker: dict[str, Any],
    hover: bool,
    showlegend: bool = True,
    in_page: bool = True,
) -> Any:
    """One clickable trace of nodes: their keys as customdata, names and times on hover.

    With ``in_page`` the labels are carried in ``meta`` and drawn by the page, in a layer
    of its own over the plot (assets/gs-1-labels.js); else (a file with no page script, the
    HTML export) Plotly draws them, for a graph of at most ``LABEL_LIMIT`` nodes.
    """
    drawn = not in_page and G.number_of_nodes() <= LABEL_LIMIT
    labels = [node_label(G.nodes[k]) for k in keys] if in_page or drawn else None
    return Scatter(
        meta=labels if in_page else None,
        x=[lay.pos[k][0] for k in keys],
        y=[lay.pos[k][1] for k in keys],
        mode="markers+text" if drawn else "markers",
        # Below and above by turns along a row, so that neighbours' labels do not meet.
        text=labels if drawn else None,
        textposition=(
            ("middle right" if lay.vertical else [_above_or_below(lay.pos[k]) for k in keys])
            if drawn
            else None
        ),
        textfont={"size": 9, "color": "#333333"},
        customdata=keys,
        # "none", not "skip": a trace that skips hover gets no clicks either.
        hovertext=[_hover(k, G.nodes[k]) for k in keys] if hover else None,
        hoverinfo="text" if hover else "none",
        name=name,
        showlegend=showlegend,
        marker=marker,
    )


def node_label(data: dict[str, Any]) -> str:
    """The few characters drawn by a node: a kernel's name without its template arguments,
    a group's own part of its name, else the node type."""
    if data.get("type") == GROUP:
        text, limit = group_label(str(data.get("group", ""))), 20
    elif data.get("type") == "KERNEL":
        op = origin_of(data).get("op")
        text, limit = kernel_label(display_name(data), op if isinstance(op, str) else None), 16
    else:
        text, limit = str(data.get("type", "?")), 16
    return text if len(text) <= limit else text[: limit - 1] + "…"


def group_label(group: str) -> str:
    """``layers 0..223 x224`` for ``model.layers 0..223 x224``, ``224 x 48 nodes`` for a run
    in a DOT file, ``nodes 18..65`` for a span, ``self_attn`` for ``model.layers.0.self_attn``."""
    where, _, what = group.rpartition(": ")
    if where:  # a DOT file's span or run: "graph 1: nodes 18..10769, 224 x 48"
        return what.rsplit(", ", 1)[-1] + (" nodes" if " x " in what else "")
    if is_block(group):  # a run of layers: "model.layers 0..223 x224"
        path, _, span = group.partition(" ")
        return f"{path.rsplit('.', 1)[-1]} {span}"
    if group.startswith("("):
        return group
    parts = group.split(".")
    # A layer by its list and index ("layers.0"), not by the bare index.
    return ".".join(parts[-2:]) if parts[-1].isdigit() and len(parts) > 1 else parts[-1]


def _above_or_below(pos: tuple[float, float]) -> str:
    return "bottom center" if int(pos[0]) % 2 == 0 else "top center"


def _coloured_by_time(G: nx.DiGraph, colour: str) -> bool:
    """Whether the nodes are coloured by replay time: asked for, and some node took time (a
    log scale needs a time above 0 us)."""
    if colour != "time" or not has_timing(G):
        return False
    return any((replay_us(d) or 0.0) > 0 for _, d in G.nodes(data=True))


#: The ratio the "graph against eager" colouring saturates at: 4x slower or faster.
EAGER_RATIO_SPAN = 4.0


def _eager_split(G: nx.DiGraph, colour: str) -> tuple[list[str], list[str]] | None:
    """For the "graph against eager" colouring: the nodes paired with an eager launch and the
    rest (collapsed groups among them), or None where none is paired (then coloured by type)."""
    if colour != "eager":
        return None
    paired: list[str] = []
    rest: list[str] = []
    for key, data in G.nodes(data=True):
        (paired if graph_and_eager(data) is not None else rest).append(key)
    return (paired, rest) if paired else None


def _by_type(G: nx.DiGraph) -> dict[str, list[str]]:
    """Node keys by type, the most common type first (one trace each)."""
    by_type: dict[str, list[str]] = {}
    for k in G.nodes:
        by_type.setdefault(G.nodes[k].get("type", "?"), []).append(k)
    return dict(sorted(by_type.items(), key=lambda item: -len(item[1])))


def node_hovers(G: nx.DiGraph, colour: str = "type") -> dict[int, list[str]]:
    """Hover texts of a figure drawn with ``hover=False``, by the index of their trace."""
    split = _eager_split(G, colour)
    if split is not None:
        groups = [keys for keys in split if keys]
    elif _coloured_by_time(G, colour):
        groups = [list(G.nodes)]
    else:
        groups = list(_by_type(G).values())
    return {EDGE_TRACES + i: [_hover(k, G.nodes[k]) for k in keys] for i, keys in enumerate(groups)}


def _eager_traces(
    Scatter: Any,
    G: nx.DiGraph,
    lay: Layout,
    split: tuple[list[str], list[str]],
    hover: bool,
    in_page: bool,
) -> list[Any]:
    """The nodes paired with an eager launch, coloured by log2(replay / eager) on a diverging
    scale centred on 1x; the others in grey, as a trace of their own."""
    paired, rest = split
    span = math.log2(EAGER_RATIO_SPAN)
    ratios = []
    for key in paired:
        graph, eager = graph_and_eager(G.nodes[key]) or (1.0, 1.0)
        ratios.append(round(max(-span, min(span, math.log2(graph / eager))), 4))
    ticks = [1 / EAGER_RATIO_SPAN, 0.5, 1.0, 2.0, EAGER_RATIO_SPAN]
    marker = {
        "size": 11,
        "color": ratios,
        "colorscale": "RdBu",
        "reversescale": True,  # red: slower in the graph
        "cmin": -span,
        "cmax": span,
        "colorbar": {
            "title": {"text": "replay / eager"},
            "tickvals": [math.log2(t) for t in ticks],
            "ticktext": [f"{t:g}x" for t in ticks],
        },
        "line": {"width": 0.5, "color": "#888888"},
    }
    name = f"paired with an eager launch ({len(paired)})"
    traces = [_nodes(Scatter, G, lay, paired, name, marker, hover, False, in_page)]
    if rest:
        folded = [G.nodes[k].get("type") == GROUP for k in rest]
        grey = {
            "size": [16 if g else 11 for g in folded],
            "symbol": ["square" if g else "circle" for g in folded],
            "color": "#cccccc",
        }
        name = f"no eager launch to compare ({len(rest)})"
        traces.append(_nodes(Scatter, G, lay, rest, name, grey, hover, True, in_page))
    return traces


def ring_trace(
    Scatter: Any,
    lay: Layout,
    keys: list[str],
    name: str,
    colour: str,
    size: float,
    width: float = 3.0,
) -> Any:
    """Hollow rings of ``colour`` around the drawn nodes ``keys`` (search matches, the
    selection, compare marks). "skip": the node under a ring keeps its hover and clicks."""
    return Scatter(
        x=[lay.pos[k][0] for k in keys],
        y=[lay.pos[k][1] for k in keys],
        mode="markers",
        customdata=keys,
        hoverinfo="skip",
        name=name,
        marker={"size": size, "color": "rgba(0,0,0,0)", "line": {"color": colour, "width": width}},
    )


def ring_at(lay: Layout, key: str | None) -> tuple[list[float], list[float]]:
    """Where the selection ring goes: the last trace of every figure (patched on a click)."""
    if key is None or key not in lay.pos:
        return [], []
    x, y = lay.pos[key]
    return [x], [y]


def build_figure(
    G: nx.DiGraph,
    lay: Layout,
    colour: str = "type",
    selected: str | None = None,
    matches: Collection[str] = (),
    hover: bool = True,
    in_page: bool = True,
    found: int | None = None,
) -> go.Figure:
    """The figure; ``colour`` is ``type``, ``time`` (log-scaled replay median) or ``eager``
    (each node's replay median over its eager launch's duration, log-scaled: red slower in
    the graph, blue faster; nodes without an eager pair grey).

    ``matches`` are the drawn nodes a search ringed; ``found``, how many nodes it found (more
    than ``matches`` where a collapsed group holds several), is what the legend counts.

    Without ``hover`` the nodes have no hover text yet: ``node_hovers`` gives it, to patch in
    after the first paint (hover text is most of a large figure's bytes). ``in_page``: the
    figure is drawn in the dashboard's page, whose script (assets/gs-*.js) draws the
    node labels and arrowheads and finds the node a click is on; else (the HTML export)
    Plotly does all three.
    """
    svg = G.number_of_nodes() <= SVG_LIMIT
    Scatter = go.Scatter if svg else go.Scattergl
    traces: list[Any] = list(_edges(G, lay, arrows=svg, page_arrows=in_page))
    assert len(traces) == EDGE_TRACES
    keys = list(G.nodes)
    split = _eager_split(G, colour)
    times = (
        [colour_us(G.nodes[k]) for k in keys]
        if split is None and _coloured_by_time(G, colour)
        else []
    )
    logs = [math.log10(t) if t and t > 0 else None for t in times]
    known = [v for v in logs if v is not None]
    if known:
        low, high = min(known), max(known)
        ticks = _ticks(low, high)
        groups = [G.nodes[k].get("type") == GROUP for k in keys]
        mixed = any(groups)
        marker = {
            # One value for all where all nodes are alike, and colours to 4 places: this
            # trace was 1.0 MB of a 10,000-node page with a list each and 17-digit floats.
            "size": [16 if g else 11 for g in groups] if mixed else 11,
            "symbol": ["square" if g else "circle" for g in groups] if mixed else "circle",
            "color": [round(v if v is not None else low, 4) for v in logs],
            "colorscale": "Viridis",
            "cmin": low,
            "cmax": high,
            "colorbar": {
                "title": {"text": "replay (us)" + ("<br>groups: mean" if mixed else "")},
                "tickvals": [math.log10(t) for t in ticks],
                "ticktext": [f"{t:g}" for t in ticks],
            },
            "line": {"width": 0},
        }
        traces.append(_nodes(Scatter, G, lay, keys, "nodes", marker, hover, False, in_page))
    elif split is not None:
        traces += _eager_traces(Scatter, G, lay, split, hover, in_page)
    else:
        for kind, members in _by_type(G).items():
            name = f"{'collapsed groups' if kind == GROUP else kind} ({len(members)})"
            marker = {
                "size": 16 if kind == GROUP else 11,
                "symbol": "square" if kind == GROUP else "circle",
                "color": TYPE_COLOURS.get(kind, "#444444"),
            }
            traces.append(_nodes(Scatter, G, lay, members, name, marker, hover, True, in_page))
    # Each child or body graph joined to the node that owns it, dotted; after the node
    # traces, whose indices node_hovers counts from EDGE_TRACES.
    if lay.nests:
        xs: list[float | None] = []
        ys: list[float | None] = []
        for owner, head in lay.nests:
            if owner in lay.pos and head in lay.pos:
                xs += [lay.pos[owner][0], lay.pos[head][0], None]
                ys += [lay.pos[owner][1], lay.pos[head][1], None]
        traces.append(
            Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line={"color": "#9467bd", "width": 1, "dash": "dot"},
                hoverinfo="skip",
                name="child graph of",
            )
        )
    if matches:
        ringed = [k for k in matches if k in lay.pos]
        count = len(ringed) if found is None else found
        traces.append(ring_trace(Scatter, lay, ringed, f"matches ({count})", "#ff9900", 17))
    x, y = ring_at(lay, selected)
    selection = ring_trace(Scatter, lay, [], RING, "#d62728", 21)
    selection.update(x=x, y=y, customdata=None)  # moved by a patch on each selection
    traces.append(selection)
    fig = go.Figure(traces)
    lines = len({y for _, y in lay.pos.values()})
    height = (
        max(360, min(760, 36 * (lines + 1)))
        if lay.vertical
        else max(360, min(760, 70 * (len(lay.rows) + 1)))
    )
    yaxis: dict[str, Any] = {"visible": False, "autorange": "reversed"}
    top = first_lines(lay, height)
    if top is not None:
        # Drawn whole, a graph of hundreds of rows is columns of merged dots (every row a few
        # px high): it opens on its first rows at a size where nodes stand apart, and the
        # minimap shows the rest. Plotly's "reset axes" comes back here; "autoscale" shows all.
        yaxis = {"visible": False, "autorange": False, "range": [top, -1.0]}
    # The minimap, for a graph that opens in part, sits in a margin of its own right of the
    # plot: over the plot it hid nodes, and a click on one of them moved the view instead.
    # A graph that opens whole has none (gs-3-minimap.js hides it).
    mapped = top is not None and in_page
    fig.update_layout(
        # The legend sits above the plot, in its own margin: over the plot it hid nodes.
        margin={"l": 10, "r": MINIMAP_MARGIN if mapped else 10, "t": 34, "b": 10},
        plot_bgcolor="white",
        dragmode="pan",
        # In the page, a click is answered by the page's script, which finds the node under
        # the pointer itself: Plotly's click searched for it again (a hover pass and its
        # label) before it said which, 23 to 42 ms of each click on tiny-llama in Chromium.
        clickmode="none" if in_page else "event",
        hovermode="closest",
        uirevision="graph",  # keep zoom and pan when the figure is redrawn for a selection
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
        annotations=row_labels(lay, height) + box_labels(lay),
        shapes=box_shapes(lay),
        # How the page draws the labels: of every node in view (a graph of at most LABEL_LIMIT
        # nodes), or once a zoom leaves each node room for its own.
        meta=DagMeta(
            labels="always" if G.number_of_nodes() <= LABEL_LIMIT else "zoomed",
            arrows=svg and in_page,
            # WebGL has no GPU in headless Chromium (assets/gs-4-cull.js)
            cull=not svg and in_page,
            minimap=mapped,
            side="right" if lay.vertical else "alternate",
        ),
        xaxis={"visible": False, "range": list(x_range(lay))},
        yaxis=yaxis,
        height=height,
    )
    return fig


def first_lines(lay: Layout, height: int) -> float | None:
    """The lowest y of the view a figure ``height`` px high opens on: None to show it whole,
    else the y below its first lines, each given ``LINE_PX`` px."""
    lines = sorted({y for _, y in lay.pos.values()})
    fit = max(1, (height - 40) // LINE_PX)
    if len(lines) <= fit:
        return None
    return lines[fit - 1] + 1.0


@dataclass
class Density:
    """Nodes counted on a grid of at most ``MINIMAP_CELLS`` columns and rows over a drawn
    graph: its extent, the grid's size and the count in each cell that holds nodes."""

    x0: float
    x1: float
    y0: float
    y1: float
    cols: int
    rows: int
    counts: dict[tuple[int, int], int]  # (column, row): nodes

    @property
    def cell(self) -> tuple[float, float]:
        """A cell's width and height, in the graph's units."""
        return (self.x1 - self.x0) / self.cols, (self.y1 - self.y0) / self.rows


def density(lay: Layout) -> Density:
    """How a drawn graph's nodes fill a bounded grid (``Density``)."""
    if not lay.pos:
        return Density(0.0, 1.0, 0.0, 1.0, 1, 1, {})
    xs = [x for x, _ in lay.pos.values()]
    ys = [y for _, y in lay.pos.values()]
    x0, x1, y0, y1 = min(xs) - 0.5, max(xs) + 0.5, min(ys) - 0.5, max(ys) + 0.5
    if lay.vertical:
        # A column of blocks: the map spans what the DAG's axis spans, labels and all, so
        # that the column reads as a column (spread over the map's width, it was one block).
        x0, x1 = x_range(lay)
    cols = min(MINIMAP_CELLS, max(1, math.ceil(x1 - x0)))
    rows = min(MINIMAP_CELLS, max(1, math.ceil(y1 - y0)))
    d = Density(x0, x1, y0, y1, cols, rows, {})
    dx, dy = d.cell
    for x, y in lay.pos.values():
        cell = (min(cols - 1, int((x - x0) / dx)), min(rows - 1, int((y - y0) / dy)))
        d.counts[cell] = d.counts.get(cell, 0) + 1
    return d


def shade(level: float) -> str:
    """The minimap's colour for a cell ``level`` (0 to 1) of the fullest cell's count."""
    low, high = (0xC6, 0xDB, 0xEF), (0x08, 0x30, 0x6B)
    return "#" + "".join(
        f"{round(a + (b - a) * level):02x}" for a, b in zip(low, high, strict=True)
    )


def minimap(lay: Layout) -> go.Figure:
    """The whole drawn graph as a small density map, to show where the DAG's view is.

    The cells of ``density`` that hold nodes, darker for more, in ``MINIMAP_SHADES`` shades:
    one SVG path per shade (a Plotly shape), each joining its cells along the rows. Its size
    is bounded whatever the graph's. It was one square marker per cell, up to 6,400 SVG
    elements, and each frame of a click repainted them: on the 10,780-node sample expanded,
    a click took a median 82 ms to the panel with them (11 clicks, a probe), 62 ms with the
    minimap hidden (13) and 73 ms with the paths (11). The page draws the view's rectangle
    on it and moves the DAG's view to a clicked point (assets/gs-3-minimap.js).
    """
    d = density(lay)
    fig = go.Figure()
    dx, dy = d.cell
    most = max(d.counts.values(), default=1)
    by_row: dict[int, list[tuple[int, int]]] = {}  # row: (column, shade level) of its cells
    for (col, row), n in d.counts.items():
        by_row.setdefault(row, []).append((col, math.ceil(n / most * MINIMAP_SHADES)))
    paths: dict[int, list[str]] = {}
    for row, cells in by_row.items():
        cells.sort()
        start = 0
        for i, (col, level) in enumerate(cells):
            last = i + 1 == len(cells)
            if last or cells[i + 1] != (col + 1, level):  # the end of a run of one shade
                a, b = d.x0 + cells[start][0] * dx, d.x0 + (col + 1) * dx
                top, bottom = d.y0 + row * dy, d.y0 + (row + 1) * dy
                paths.setdefault(level, []).append(
                    f"M{a:.6g},{top:.6g}H{b:.6g}V{bottom:.6g}H{a:.6g}Z"
                )
                start = i + 1
    fig.update_layout(
        shapes=[
            {
                "type": "path",
                "path": "".join(parts),
                "fillcolor": shade(level / MINIMAP_SHADES),
                "line": {"width": 0},
                "layer": "below",
            }
            for level, parts in sorted(paths.items())
        ],
        margin={"l": 2, "r": 2, "t": 2, "b": 2},
        plot_bgcolor="white",
        dragmode=False,
        # Fixed ranges: the page draws the rectangle of the DAG's view over them (a div,
        # assets/gs-3-minimap.js), in these axes' units.
        hovermode=False,
        showlegend=False,
        xaxis={"visible": False, "fixedrange": True, "range": [d.x0, d.x1]},
        yaxis={"visible": False, "fixedrange": True, "range": [d.y1, d.y0]},
        height=MINIMAP_PX[1],
        width=MINIMAP_PX[0],
    )
    return fig


def x_range(lay: Layout) -> tuple[float, float]:
    """The DAG's x axis: room on the left for the row labels, which the axis range would
    otherwise clip, and in a column on the right for the node labels beside it."""
    width = max((x for x, _ in lay.pos.values()), default=0.0)
    return -max(3.0, 0.28 * (width + 1)), width + (4 if lay.vertical else 1)


def row_labels(lay: Layout, height: int) -> list[dict[str, Any]]:
    """A label for each row, but none closer than a line of text below the last one drawn.

    The figure is at most 760 px high; at 10,000 nodes a hundred rows share it, and every label
    drawn would overlap its neighbours. The rows left out still say what they are on hover.
    """
    span = max((y for _, y in lay.pos.values()), default=0.0) + 1
    gap = span * LABEL_LINE_PX / max(height - 40, 1)  # y units per line of label text
    out: list[dict[str, Any]] = []
    last = -math.inf
    previous = None
    for row in lay.rows:
        # A layer's rows after its first are inside its box, which the first names.
        repeated, previous = row["label"] == previous, row["label"]
        if row["y"] - last < gap or not row["label"] or repeated:
            continue
        last = row["y"]
        label = row["label"] if len(row["label"]) <= 28 else row["label"][:27] + "…"
        out.append(
            {
                "x": -0.8,
                "y": row["y"],
                "text": escape(label),
                "showarrow": False,
                "xanchor": "right",
                "font": {"size": 10, "color": "#555555"},
            }
        )
    return out


#: A module box's outline and fill, darker the deeper it is nested.
BOX_LINE = "#b9b9cf"
BOX_FILL = ("rgba(110,110,170,0.05)", "rgba(110,110,170,0.08)", "rgba(110,110,170,0.11)")


def box_shapes(lay: Layout) -> list[dict[str, Any]]:
    """The layout's module boxes (``placement.module_boxes``), behind the nodes and edges."""
    return [
        {
            "type": "rect",
            "layer": "below",
            "x0": b["x0"],
            "x1": b["x1"],
            "y0": b["y0"],
            "y1": b["y1"],
            "line": {"color": BOX_LINE, "width": 1},
            "fillcolor": BOX_FILL[min(b["depth"], len(BOX_FILL) - 1)],
        }
        for b in lay.boxes
    ]


def box_labels(lay: Layout) -> list[dict[str, Any]]:
    """A name at the top right of each box inside another (a layer's box is named by its row
    label, on the left)."""
    return [
        {
            "x": b["x1"] - 0.08,
            "y": b["y0"] + 0.04,
            "text": escape(b["label"]),
            "showarrow": False,
            "xanchor": "right",
            "yanchor": "top",
            "font": {"size": 9, "color": "#77778f"},
        }
        for b in lay.boxes
        if b["depth"] > 0
    ]
