"""The DAG figure's view of graphs too large to label whole: where it opens, the labels it
carries for a zoom, and the minimap's bounded density grid."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from graphscope.app.render import figure, placement

import graphscope
from graphscope.analysis import folding as groups

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
DEEP = SAMPLES / "large" / "hf-deep-llama-b1.json.gz"
LLAMA = SAMPLES / "bundles" / "tiny-llama-b1.json.gz"


@pytest.fixture(scope="module")
def deep_expanded() -> tuple[object, placement.Layout]:
    G = graphscope.load(DEEP)
    levels = groups.group_levels(G)
    view = groups.collapsed(G, levels, groups.all_groups(levels))  # "expand all"
    assert view.number_of_nodes() == G.number_of_nodes() == 10_780
    return view, placement.layout(view)


def test_a_small_graph_opens_whole_and_labelled() -> None:
    G = graphscope.load(LLAMA)
    lay = placement.layout(G)
    fig = figure.build_figure(G, lay)
    assert fig.layout.yaxis.autorange == "reversed"  # the whole graph in view
    assert fig.layout.meta["labels"] == "always"  # the page labels every node in view
    # Each edge a segment [start, end short of its target, None], its head drawn by the page.
    edges = fig.data[figure.EDGE_TRACES - 1]
    assert fig.layout.meta["arrows"] and edges.mode == "lines"
    assert (
        len(edges.x) == 3 * G.number_of_edges() and edges.x[2::3] == (None,) * G.number_of_edges()
    )
    nodes = [t for t in fig.data if t.customdata is not None and len(t.customdata)]
    assert all(t.mode == "markers" and len(t.meta) == len(t.customdata) for t in nodes)
    # A file with no page script (the HTML export) has Plotly draw them.
    exported = figure.build_figure(G, lay, in_page=False)
    nodes = [t for t in exported.data if t.customdata is not None and len(t.customdata)]
    assert all(t.mode == "markers+text" and t.meta is None for t in nodes)
    assert [len(t.text) for t in nodes] == [len(t.customdata) for t in nodes]
    assert not exported.layout.meta["arrows"] and exported.data[0].marker.symbol == "arrow"


def test_a_large_view_opens_on_its_first_lines_with_labels_for_zoom(deep_expanded) -> None:
    view, lay = deep_expanded
    fig = figure.build_figure(view, lay, hover=False)
    low, high = fig.layout.yaxis.range
    assert fig.layout.yaxis.autorange is False and high == -1.0
    lines = sorted({y for _, y in lay.pos.values()})
    shown = [y for y in lines if high <= y <= low]
    # Each line shown gets LINE_PX, and the view holds a small part of the graph.
    assert len(shown) == (int(fig.layout.height) - 40) // figure.LINE_PX
    assert len(shown) < len(lines) / 5
    nodes = [t for t in fig.data if t.customdata is not None and len(t.customdata)]
    assert sum(len(t.customdata) for t in nodes) == 10_780
    for trace in nodes:  # not drawn, but carried for the page to draw in a zoomed view
        assert trace.mode == "markers"
        assert len(trace.meta) == len(trace.customdata)
        key = trace.customdata[0]
        assert trace.meta[0] == figure.node_label(view.nodes[key])
    assert fig.layout.meta["labels"] == "zoomed"  # once a zoom leaves room for them
    assert fig.data[-1].name == "selected"  # the selection ring stays the last trace


def test_minimap_counts_every_node_on_a_bounded_grid(deep_expanded) -> None:
    _, lay = deep_expanded
    d = figure.density(lay)
    assert d.cols <= figure.MINIMAP_CELLS and d.rows <= figure.MINIMAP_CELLS
    assert len(d.counts) > 100 and sum(d.counts.values()) == len(lay.pos)
    assert d.x0 < min(x for x, _ in lay.pos.values()) and d.y1 > max(y for _, y in lay.pos.values())
    fig = figure.minimap(lay)
    assert len(fig.data) == 0  # no markers: a path per shade
    shapes = fig.layout.shapes
    assert 1 < len(shapes) <= figure.MINIMAP_SHADES
    assert len({s.fillcolor for s in shapes}) == len(shapes)
    # Every cell's square lies inside the fixed ranges, over the whole drawn graph.
    (x0, x1), (y1, y0) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert (x0, x1, y0, y1) == (d.x0, d.x1, d.y0, d.y1)
    corners = [
        tuple(float(v) for v in point.split(","))
        for s in shapes
        for point in re.findall(r"M([-\d.e+]+,[-\d.e+]+)", s.path)
    ]
    assert all(x0 <= x < x1 and y0 <= y < y1 for x, y in corners)
    # The squares cover the cells with nodes, no more: their area against the cells'.
    dx, dy = (d.x1 - d.x0) / d.cols, (d.y1 - d.y0) / d.rows
    area = 0.0
    for s in shapes:
        for a, top, b, bottom in re.findall(
            r"M([-\d.e+]+),([-\d.e+]+)H([-\d.e+]+)V([-\d.e+]+)H", s.path
        ):
            area += (float(b) - float(a)) * (float(bottom) - float(top))
    assert area == pytest.approx(len(d.counts) * dx * dy, rel=1e-3)
    assert (fig.layout.width, fig.layout.height) == figure.MINIMAP_PX


def test_minimap_shades_go_from_pale_to_dark() -> None:
    assert figure.shade(0) == "#c6dbef" and figure.shade(1) == "#08306b"


def test_minimap_of_an_empty_view_is_empty() -> None:
    fig = figure.minimap(placement.Layout())
    assert len(fig.data) == 0 and not fig.layout.shapes


def test_replay_times_of_zero_colour_by_type_not_a_log_scale_of_nothing() -> None:
    """A fuzzed bundle whose replay medians were all 0 made the HTML export raise."""
    G = graphscope.load(LLAMA)
    for key in G:
        if isinstance(G.nodes[key].get("replay"), dict):
            G.nodes[key]["replay"]["median_us"] = 0.0
    fig = figure.build_figure(G, placement.layout(G), colour="time")
    names = [t.name for t in fig.data]
    assert "KERNEL (211)" in names  # by type: no time above 0 us to scale colours by
    assert sorted(figure.node_hovers(G, "time")) == [1, 2]  # the hover patch agrees


def test_a_folded_graph_is_coloured_on_its_nodes_scale_not_its_groups_sums() -> None:
    # Issue 27: a folded block counted as one 14 ms node, and every real kernel got one colour.
    import math

    G = graphscope.load(DEEP)
    levels = groups.group_levels(G)
    shown = groups.collapsed(G, levels, groups.overview(levels))
    folded = [d for _, d in shown.nodes(data=True) if d.get("type") == groups.GROUP]
    assert folded and max(d["time_us"] for d in folded) > 1000  # sums of milliseconds
    fig = figure.build_figure(shown, placement.layout(shown), "time", in_page=False)
    [nodes] = [t for t in fig.data if t.name == "nodes"]
    medians = [m for _, d in G.nodes(data=True) if (m := figure.replay_median(d))]
    assert nodes.marker.cmax <= math.log10(max(medians)) + 1e-3
    assert nodes.marker.cmin >= math.log10(min(medians)) - 1e-3
    # A group takes its members' mean: within the nodes' own range.
    means = [d["time_us"] / d["members"] for d in folded if d["time_us"]]
    assert all(min(medians) <= m <= max(medians) for m in means)


def test_graph_against_eager_colours_each_node_by_its_replay_over_its_eager_launch() -> None:
    import math

    from graphscope.analysis.node_times import graph_and_eager

    G = graphscope.load(LLAMA)
    unpaired = next(iter(G.nodes))
    del G.nodes[unpaired]["eager"]  # a node the parity join left alone
    lay = placement.layout(G)
    fig = figure.build_figure(G, lay, "eager")
    paired, rest = fig.data[figure.EDGE_TRACES], fig.data[figure.EDGE_TRACES + 1]
    assert rest.customdata == (unpaired,) and rest.marker.color == "#cccccc"
    assert len(paired.customdata) == G.number_of_nodes() - 1
    span = math.log2(figure.EAGER_RATIO_SPAN)
    assert (paired.marker.cmin, paired.marker.cmax) == (-span, span)
    for key, value in zip(paired.customdata, paired.marker.color, strict=True):
        graph, eager = graph_and_eager(G.nodes[key]) or (0.0, 0.0)
        expected = max(-span, min(span, math.log2(graph / eager)))
        assert value == pytest.approx(expected, abs=1e-4)
    slower = [v for v in paired.marker.color if v > 0]
    assert slower and len(slower) < len(paired.marker.color)  # both sides occur in this sample
    # The hover texts patched in later follow the same two traces.
    hovers = figure.node_hovers(G, "eager")
    assert [len(t) for t in hovers.values()] == [G.number_of_nodes() - 1, 1]
    assert "x in the graph" in hovers[figure.EDGE_TRACES][0]
    # A DOT dump has no eager launches: coloured by type instead.
    dot = graphscope.load(SAMPLES / "bundles" / "tiny-llama-b1.dot")
    traces = figure.build_figure(dot, placement.layout(dot), "eager").data
    assert all("eager" not in (t.name or "") for t in traces)


def _inside(box: placement.Box, pos: tuple[float, float]) -> bool:
    return box["x0"] <= pos[0] <= box["x1"] and box["y0"] <= pos[1] <= box["y1"]


def test_each_layer_is_one_box_holding_its_nodes_and_nothing_else() -> None:
    """A wrapped drawing (tiny-llama's 212 kernels) boxes each layer's rows, and the layer is
    named once, on its box's first row (issue 27: six rows all labelled ``layers.0``)."""
    from graphscope.model import layer_of

    G = graphscope.load(LLAMA)
    lay = placement.layout(G)
    layers = {layer_of(d) for _, d in G.nodes(data=True)} - {None}
    assert sorted(b["module"] for b in lay.boxes) == sorted(layers)
    assert all(b["depth"] == 0 for b in lay.boxes)
    for box in lay.boxes:
        held = {k for k, pos in lay.pos.items() if _inside(box, pos)}
        assert held == {k for k in G if layer_of(G.nodes[k]) == box["module"]}
    fig = figure.build_figure(G, lay)
    assert len(fig.layout.shapes) == len(lay.boxes)
    named = [a.text for a in fig.layout.annotations]
    assert all(named.count(layer) == 1 for layer in layers)


def test_a_module_opened_inside_a_layer_is_a_box_inside_the_layers() -> None:
    """The overview with layer 0's attention opened: its nodes in a box of their own, inside
    layer 0's, named at its corner."""
    G = graphscope.load(DEEP)
    levels = groups.group_levels(G)
    opened = set(groups.overview(levels)) | {"model.layers.0.self_attn"}
    view = groups.collapsed(G, levels, opened)
    lay = placement.layout(view)
    assert lay.vertical
    boxes = {b["module"]: b for b in lay.boxes}
    layer, attention = boxes["model.layers.0"], boxes["model.layers.0.self_attn"]
    assert (layer["depth"], attention["depth"]) == (0, 1)
    assert layer["y0"] < attention["y0"] and attention["y1"] < layer["y1"]
    assert layer["x0"] < attention["x0"] and attention["x1"] < layer["x1"]
    in_attention = {k for k, pos in lay.pos.items() if _inside(attention, pos)}
    assert len(in_attention) > 1
    assert all(
        str(view.nodes[k]["attribution"]["module"]).startswith("model.layers.0.self_attn")
        for k in in_attention
    )
    fig = figure.build_figure(view, lay)
    assert "self_attn" in [a.text for a in fig.layout.annotations]


def test_a_module_whose_nodes_interleave_with_anothers_gets_no_box() -> None:
    """Two modules of one layer taking turns in a chain: a box around either would hold the
    other's nodes, so neither gets one; the layer does."""
    import networkx as nx

    G = nx.DiGraph()
    modules = ["m.layers.0.a", "m.layers.0.b", "m.layers.0.a", "m.layers.0.b"]
    for i, module in enumerate(modules):
        G.add_node(f"n{i}", type="KERNEL", graph_id=1, local_id=i, attribution={"module": module})
        if i:
            G.add_edge(f"n{i - 1}", f"n{i}")
    lay = placement.layout(G)
    assert [b["module"] for b in lay.boxes] == ["m.layers.0"]


def test_a_column_of_blocks_maps_as_a_column() -> None:
    """The overview (one column of blocks): the minimap spans the DAG's own x axis, so its
    cells with nodes are one column of the map, not the map's whole width (a solid block)."""
    G = graphscope.load(DEEP)
    levels = groups.group_levels(G)
    view = groups.collapsed(G, levels, set(groups.overview(levels)) | {"model.layers.0.self_attn"})
    lay = placement.layout(view)
    assert lay.vertical
    d = figure.density(lay)
    assert (d.x0, d.x1) == figure.x_range(lay)
    assert d.cols > 3 and len({col for col, _ in d.counts}) == 1
    fig = figure.build_figure(view, lay)
    assert tuple(fig.layout.xaxis.range) == figure.x_range(lay)
