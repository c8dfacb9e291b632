"""The dashboard's parts without a browser: layout, figure, node panel, sources, search."""

from __future__ import annotations

import base64
import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

pytest.importorskip("dash")  # the GPU machine has no dash; the test extra brings it elsewhere

from dash_tree import text as shown_text
from dash_tree import walk
from graphscope.app.files.sources import UPLOAD_LIMIT, Registry, sample_files, sample_recordings
from graphscope.app.render.cards import card_divs
from graphscope.app.render.figure import build_figure, has_timing, node_hovers
from graphscope.app.render.panel import node_panel
from graphscope.app.render.placement import layout
from graphscope.app.serve import server
from graphscope.app.view import page_callbacks
from graphscope.app.view.callbacks import focus_ranges, url_state
from graphscope.app.view.state import default_grouping, opened_to

import graphscope
from graphscope.analysis.search import BUFFER_SEARCH, match_count, search_nodes
from graphscope.model import layer_of
from graphscope.recording import load_recordings

ROOT = Path(__file__).resolve().parents[2]
DEEP = ROOT / "samples" / "large" / "hf-deep-llama-b1.json.gz"
LLAMA = ROOT / "samples" / "bundles" / "tiny-llama-b1.json.gz"
PARALLEL = ROOT / "samples" / "bundles" / "tiny-gpt-parallel-b1.json.gz"
ALL_TYPES = ROOT / "samples" / "dot" / "explicit-all-types" / "flags-verbose.dot"


def test_a_decode_chain_wraps_into_one_row_per_layer() -> None:
    from graphscope.app.render.placement import LABELLED_ROW, ROW_LEVELS

    G = graphscope.load(LLAMA)
    # Labelled (a small graph): shorter rows, but a row never holds two layers.
    labelled = layout(G)
    assert max(x for x, _ in labelled.pos.values()) == LABELLED_ROW - 1
    layers = [row["label"] for row in labelled.rows if row["label"].startswith("model.layers.")]
    assert sorted(set(layers)) == [f"model.layers.{i}" for i in range(4)]
    assert layers == sorted(layers)  # each layer's rows together, in order
    lay = layout(G, ROW_LEVELS)
    assert set(lay.pos) == set(G)
    labels = [row["label"] for row in lay.rows]
    assert labels[1:5] == [f"model.layers.{i}" for i in range(4)]
    assert labels[0].startswith("model.embed_tokens") and "lm_head" in labels[5]
    assert len(labels) == 6
    assert sum(row["nodes"] for row in lay.rows) == G.number_of_nodes()
    # Every edge goes forwards: along its row, or from the end of one row to the next.
    for a, b in G.edges():
        (xa, ya), (xb, yb) = lay.pos[a], lay.pos[b]
        assert yb > ya or (yb == ya and xb > xa)
    assert max(x for x, _ in lay.pos.values()) < 60  # no 212-step ladder


def test_parallel_branches_get_lanes_side_by_side() -> None:
    G = graphscope.load(PARALLEL)
    lay = layout(G)
    levels: dict[tuple[float, float], int] = {}
    for x, y in lay.pos.values():
        levels[(x, y)] = levels.get((x, y), 0) + 1
    assert max(levels.values()) == 1  # no two nodes on one spot
    spots = set(lay.pos.values())
    rows_with_two_lanes = {y for x, y in spots if (x, y + 1) in spots}
    assert rows_with_two_lanes  # attention and MLP drawn beside each other


def test_child_graphs_are_laid_out_below_their_parent() -> None:
    G = graphscope.load(ALL_TYPES)
    lay = layout(G)
    root = G.graph["root_graph_ids"][0]
    root_rows = [r for r in lay.rows if r["graph_id"] == root]
    others = [r for r in lay.rows if r["graph_id"] != root]
    assert root_rows and others and max(r["y"] for r in root_rows) < min(r["y"] for r in others)
    assert set(lay.pos) == set(G)


def test_layer_of_reads_the_module_path() -> None:
    assert (
        layer_of({"attribution": {"module": "model.layers.3.self_attn.o_proj"}}) == "model.layers.3"
    )
    assert layer_of({"attribution": {"module": "blocks.0"}}) == "blocks.0"
    assert layer_of({"attribution": {"module": "lm_head"}}) is None
    assert layer_of({}) is None


def test_figure_colours_by_type_or_by_replay_time() -> None:
    G = graphscope.load(LLAMA)
    lay = layout(G)
    by_type = build_figure(G, lay, "type")
    names = [t.name for t in by_type.data]
    assert "KERNEL (211)" in names and "MEMCPY (1)" in names
    by_time = build_figure(G, lay, "time", selected="graph_1_node_3", matches=["graph_1_node_4"])
    [nodes] = [t for t in by_time.data if t.name == "nodes"]
    assert len(nodes.customdata) == G.number_of_nodes()
    assert nodes.marker.colorbar.title.text == "replay (us)"
    assert {t.name for t in by_time.data} >= {"selected", "matches (1)"}
    # Hover text is escaped: template arguments show as text, not as tags.
    assert any("&lt;" in h for h in nodes.hovertext) and not any(
        "<Half" in h for h in nodes.hovertext
    )


@pytest.mark.parametrize("colour", ["type", "time"])
def test_hover_texts_patched_in_later_are_those_of_the_full_figure(colour: str) -> None:
    G = graphscope.load(PARALLEL)
    lay = layout(G)
    full = build_figure(G, lay, colour)
    light = build_figure(G, lay, colour, hover=False)
    assert all(t.hovertext is None for t in light.data)
    hovers = node_hovers(G, colour)
    assert hovers and all(light.data[i].hoverinfo == "none" for i in hovers)
    for index, texts in hovers.items():
        assert list(light.data[index].customdata) == list(full.data[index].customdata)
        assert texts == list(full.data[index].hovertext)
    with_text = {i for i, t in enumerate(full.data) if t.hovertext is not None}
    assert with_text == set(hovers)


def test_a_dot_file_has_no_timing_and_colours_by_type() -> None:
    G = graphscope.load(ALL_TYPES)
    assert not has_timing(G)
    fig = build_figure(G, layout(G), "time")
    assert any(t.name and t.name.startswith("CONDITIONAL") for t in fig.data)


def test_node_panel_shows_launch_timing_origin_arguments_and_neighbours() -> None:
    G = graphscope.load(LLAMA)
    key = next(
        k
        for k, d in G.nodes(data=True)
        if (d.get("attribution") or {}).get("module") == "model.layers.3.self_attn.o_proj"
    )
    data = G.nodes[key]
    text = shown_text(node_panel(G, key))
    for expected in (
        data["short_name"],
        data["name"],
        str(data["grid"]),
        "registers per thread",
        f"{data['replay']['median_us']:.2f} us",
        f"{data['replay']['p90_us']:.2f} us",
        f"{data['eager']['duration_us']:.2f} us",
        "replay - eager",
        "model.layers.3.self_attn.o_proj",
        "aten::mm",
        "modeling_llama.py",
        f"Arguments ({len(data['args'])})",
        "depends on",
        "followed by",
    ):
        assert expected in text, expected
    [before] = list(G.predecessors(key))
    assert before in text


def test_node_panel_says_in_words_when_the_model_itself_or_no_module_made_a_node() -> None:
    G = graphscope.load(LLAMA.parent / "tiny-gpt-b1.json.gz")
    by_module = {d["attribution"]["module"]: k for k, d in G.nodes(data=True)}
    assert "(the model itself)" in shown_text(node_panel(G, by_module[""]))  # TinyGPT.forward's own
    assert "(outside any module)" in shown_text(node_panel(G, by_module[None]))  # the step's copy


def test_search_takes_a_regex_or_plaintext() -> None:
    G = graphscope.load(LLAMA)
    found, warning = search_nodes(G, r"o_proj$")
    assert warning is None and len(found) == 4
    found, warning = search_nodes(G, "(anonymous")  # not a regex: searched as text
    assert warning and "regular expression" in warning and found
    assert search_nodes(G, "") == ([], None)


def test_a_bad_file_keeps_its_one_line_error(tmp_path: Path) -> None:
    registry = Registry()
    bad = tmp_path / "other.json"
    bad.write_text(json.dumps({"directed": True, "nodes": [], "links": []}))
    source = registry.load(registry.add_path(bad).id)
    assert source.graph is None and source.error and "other.json" in source.error
    assert "\n" not in source.error
    missing = registry.load(registry.add_path(tmp_path / "gone.dot").id)
    assert missing.error and "gone.dot" in missing.error


def _upload(payload: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(payload).decode()


def test_uploads_are_loaded_checked_and_limited(tmp_path: Path) -> None:
    registry = Registry()
    good = registry.add_upload("tiny.json.gz", _upload(LLAMA.read_bytes()), tmp_path)
    assert good.error is None and good.graph is not None and good.graph.number_of_nodes() == 212
    truncated = registry.add_upload("cut.json.gz", _upload(LLAMA.read_bytes()[:5000]), tmp_path)
    assert (
        truncated.error
        and "cut.json.gz" in truncated.error
        and str(tmp_path) not in truncated.error
    )
    wrong = registry.add_upload("notes.txt", _upload(b"hello"), tmp_path)
    assert wrong.error and "not a graph file" in wrong.error
    big = registry.add_upload("big.json", _upload(b" " * (UPLOAD_LIMIT + 1)), tmp_path)
    assert big.error and "upload limit" in big.error


def test_the_app_opens_the_samples_when_given_no_files() -> None:
    assert any(p.name == "tiny-llama-b1.json.gz" for p in sample_files())
    app = server.create_app()
    dropdown = app.layout().children[0].children[1]
    recorded = [
        g
        for folder in sample_recordings()
        for rec in load_recordings(folder)
        for g in rec.graphs
        if g.get("bundle")
    ]
    assert recorded  # the recordings' graphs are offered too, after the sample files
    assert len(dropdown.options) == len(sample_files()) + len(recorded)
    assert dropdown.value == dropdown.options[0]["value"]
    assert dropdown.options[0]["label"] == f"sample: {sample_files()[0].name}"


def test_cards_come_from_the_bundle() -> None:
    G = graphscope.load(LLAMA)
    text = shown_text(card_divs(G))
    t = G.graph["timing"]
    assert f"{t['eager_step_us']:,.0f} us" in text and f"{t['replay_wall_us']:,.0f} us" in text
    assert f"{t['eager_step_us'] / t['replay_wall_us']:.1f}x" in text
    assert "GPU idle share" in text
    dot_text = shown_text(card_divs(graphscope.load(ALL_TYPES)))
    assert "speedup" not in dot_text


def test_timeline_puts_eager_and_replay_on_one_axis() -> None:
    from graphscope.app.render.timeline import ROWS, build_timeline

    G = graphscope.load(LLAMA)
    key = "graph_1_node_47"
    fig = build_timeline(G, key)
    by_name = {t.name: t for t in fig.data}
    launches, gpu, replay = (
        by_name["launch calls"],
        by_name["eager GPU work"],
        by_name["replayed nodes"],
    )
    assert set(launches.y) == {ROWS[0]} and set(gpu.y) == {ROWS[1]} and set(replay.y) == {ROWS[3]}
    # Every node with GPU work has one bar in each of the three rows, keyed by the node.
    assert sorted(launches.customdata) == sorted(gpu.customdata) == sorted(replay.customdata)
    assert len(replay.customdata) == G.number_of_nodes()
    data = G.nodes[key]
    i = list(replay.customdata).index(key)
    assert replay.base[i] == data["replay"]["start_us"]
    assert replay.x[i] == pytest.approx(data["replay"]["median_us"])
    j = list(gpu.customdata).index(key)
    assert gpu.base[j] == data["eager"]["start_us"]
    assert by_name["graph launch"].x[0] == G.graph["timing"]["cpu_launch_us"]
    assert sorted(by_name["selected"].y) == sorted([ROWS[0], ROWS[1], ROWS[3]])
    # The eager step's gaps are visible: its GPU bars cover under a tenth of its span.
    busy = sum(gpu.x)
    assert busy < 0.1 * (max(b + x for b, x in zip(gpu.base, gpu.x, strict=True)) - min(gpu.base))


def test_groups_follow_the_module_path_and_collapse_into_one_node_each() -> None:
    from graphscope.analysis.folding import GROUP, all_groups, collapsed, enclosing, group_levels

    G = graphscope.load(LLAMA)
    levels = group_levels(G)
    key = next(
        k
        for k, d in G.nodes(data=True)
        if (d.get("attribution") or {}).get("module") == "model.layers.3.self_attn.o_proj"
    )
    # The four layers launch the same kernels: one run, whose later layers fold together.
    assert levels[key] == [
        "model.layers 0..3 x4",
        "model.layers 1..3 x3",
        "model.layers.3",
        "model.layers.3.self_attn",
        "model.layers.3.self_attn.o_proj",
    ]
    first = next(k for k, chain in levels.items() if "model.layers.0" in chain)
    assert levels[first][:2] == ["model.layers 0..3 x4", "model.layers.0"]
    assert collapsed(G, levels, all_groups(levels)) is G  # all open: the graph itself
    shut = collapsed(G, levels, set())
    groups = {k: d for k, d in shut.nodes(data=True) if d["type"] == GROUP}
    assert "group:model.layers 0..3 x4" in groups and len(shut) == len(groups)
    run = [k for k, chain in levels.items() if chain[0] == "model.layers 0..3 x4"]
    assert groups["group:model.layers 0..3 x4"]["members"] == len(run)
    # Opening the run and the rest shows each layer as one group.
    blocks = {"model.layers 0..3 x4", "model.layers 1..3 x3"}
    layers = collapsed(G, levels, blocks)
    layer = layers.nodes["group:model.layers.3"]
    members = [k for k, chain in levels.items() if "model.layers.3" in chain]
    assert layer["members"] == len(members)
    assert layer["time_us"] == pytest.approx(
        sum(G.nodes[k]["replay"]["median_us"] for k in members)
    )
    # Opening layer 3 shows its attention and MLP as groups, the rest of the model still shut.
    opened = collapsed(G, levels, blocks | {"model.layers.3"})
    assert "group:model.layers.3.self_attn" in opened and "group:model.layers.2" in opened
    assert enclosing(levels, key, blocks | {"model.layers.3", "model.layers.3.self_attn"})[:2] == [
        "model.layers.3.self_attn",
        "model.layers.3",
    ]
    # Edges between groups keep the order the work runs in.
    assert layers.has_edge("group:model.layers.2", "group:model.layers.3")


def test_repeated_layers_are_found_by_module_path_and_by_kernel_sequence() -> None:
    from graphscope.analysis.repeats import layer_repeats, sequence_repeats

    G = graphscope.load(DEEP)
    [run] = layer_repeats(G)
    assert (run.name, run.count, run.per_instance) == ("model.layers 0..223 x224", 224, 48)
    kinds = [[G.nodes[k]["short_name"] for k in layer] for layer in run.instances]
    assert all(k == kinds[0] for k in kinds)
    # The same graph's DOT dump has no module paths: the period is found from the kernels.
    D = graphscope.load(DEEP.with_suffix("").with_suffix(".dot"))
    keys = sorted(D, key=lambda k: D.nodes[k]["local_id"])
    [found] = sequence_repeats(D, keys, "graph 1")
    assert (found.count, found.per_instance) == (224, 48)
    assert found.name == "graph 1: nodes 18..10769, 224 x 48"
    # A graph without repeats has none.
    assert layer_repeats(graphscope.load(ALL_TYPES)) == []


def test_a_layer_of_kernels_repeated_within_it_still_folds_by_its_period() -> None:
    # Issue 27: gpt-fast's 32-layer dump, 53 nodes a layer, was not folded: the GEMVs and
    # copies launched many times a layer made small gaps outnumber the layer's period.
    import networkx as nx

    from graphscope.analysis.repeats import sequence_repeats

    layer = (["gemv", "copy", "gemv", "gemv", "mul", "copy", "gemv", "rms"] * 7)[:51]
    layer[10:10] = ["sdpa"]  # once a layer
    layer[30:30] = ["rope"]
    assert len(layer) == 53
    names = ["embed", "copy", "arange", *layer * 32, "norm", "lm_head", "argmax"]
    D = nx.DiGraph()
    for i, name in enumerate(names):
        D.add_node(f"graph_1_node_{i}", type="KERNEL", short_name=name, local_id=i, graph_id=1)
    [found] = sequence_repeats(D, list(D), "graph 1")
    assert (found.count, found.per_instance) == (32, 53)
    assert found.name == "graph 1: nodes 3..1698, 32 x 53"
    # Opened, the first layer is a section of the drawing: rows of its own, labelled, boxed.
    from graphscope.app.render.placement import layout

    nx.add_path(D, list(D))  # a DOT dump's chain of kernels

    from graphscope.analysis.folding import collapsed, group_levels, overview, repeat_sections

    levels = group_levels(D)
    opened = overview(levels)
    shown = collapsed(D, levels, opened)
    sections = repeat_sections(shown, levels, opened)
    first = {f"graph_1_node_{i}" for i in range(3, 56)}
    assert set(sections) == first and set(sections.values()) == {"graph 1: nodes 3..55, 1 of 32"}
    lay = layout(shown, sections=sections)
    ys = {lay.pos[k][1] for k in first}
    assert not ys & {lay.pos[k][1] for k in shown if k not in first}  # no row shared
    labels = [r["label"] for r in lay.rows]
    assert labels[0] == "graph 1: nodes 0..2" and labels[1] == "nodes 3..55, 1 of 32"
    [box] = lay.boxes
    assert box["module"] == "graph 1: nodes 3..55, 1 of 32"
    assert box["y0"] < min(ys) and box["y1"] > max(ys)
    assert layout(shown).boxes == []  # without sections, as before: no box


@pytest.mark.parametrize("name", ["hf-deep-llama-b1.json.gz", "hf-deep-llama-b1.dot"])
def test_a_fold_says_its_replay_time_only_where_the_file_has_timing(name: str) -> None:
    # Issue 27: a DOT dump's folded squares said "0.0 us in replay", on a file with no timing.
    from graphscope.app.render.figure import _hover

    from graphscope.analysis.folding import collapsed, group_levels, overview

    G = graphscope.load(DEEP.parent / name)
    levels = group_levels(G)
    shown = collapsed(G, levels, overview(levels))
    folds = {k: d for k, d in shown.nodes(data=True) if d["type"] == "GROUP"}
    assert folds
    for key, data in folds.items():
        said = _hover(key, data)
        if name.endswith(".dot"):
            assert data["time_us"] is None and "us in replay" not in said, said
        else:
            assert data["time_us"] > 0 and f"{data['time_us']:,.1f} us in replay" in said


@pytest.mark.parametrize("name", ["hf-deep-llama-b1.json.gz", "hf-deep-llama-b1.dot"])
def test_a_large_graph_opens_to_one_layer_and_a_fold_of_the_rest(name: str) -> None:
    from graphscope.app.render.figure import node_label

    from graphscope.analysis.folding import OVERVIEW_NODES, collapsed, group_levels, overview

    G = graphscope.load(DEEP.parent / name)
    levels = group_levels(G)
    shown = collapsed(G, levels, overview(levels))
    assert 10 < shown.number_of_nodes() <= OVERVIEW_NODES
    kernels = [d for _, d in shown.nodes(data=True) if d["type"] == "KERNEL"]
    folds = [d for _, d in shown.nodes(data=True) if d["type"] == "GROUP"]
    if name.endswith(".dot"):
        assert len(kernels) >= 48  # no module paths: the first layer, kernel by kernel
    else:
        # One module level at a time, as Model Explorer folds namespaces (issue 27): the
        # first layer's norms, attention and MLP are blocks, in one row of their own.
        blocks = {d["group"] for d in folds}
        assert {"model.layers.0.self_attn", "model.layers.0.mlp"} <= blocks
        assert {"model.layers.0.input_layernorm", "model.embed_tokens", "lm_head"} <= blocks
        assert len(kernels) <= 4  # the layer's own residual adds, between its blocks
        lay = layout(shown)
        assert [r["label"] for r in lay.rows].count("model.layers.0") == 1
        # A column read top to bottom, as Model Explorer stacks its boxes: every edge goes
        # down, none wraps back across the page; labels beside the nodes.
        assert lay.vertical
        for a, b in shown.edges():
            (xa, ya), (xb, yb) = lay.pos[a], lay.pos[b]
            assert yb > ya and abs(xb - xa) <= 1, (a, b)
        assert build_figure(shown, lay).layout.meta["side"] == "right"
    rest = next(d for d in folds if d["members"] == 223 * 48)
    assert node_label(rest) in ("layers 1..223 x223", "repeats 2..224")
    # Every drawn node is labelled: the overview is small enough for that.
    fig = build_figure(shown, layout(shown))
    texts = [t for trace in fig.data if isinstance(trace.meta, tuple) for t in trace.meta]
    assert fig.layout.meta["labels"] == "always"  # the page draws each one in view
    assert len(texts) == shown.number_of_nodes() and all(texts)


def test_small_graphs_open_whole_and_the_state_toggles_from_the_overview() -> None:
    from graphscope.analysis.folding import all_groups, group_levels, overview

    G = graphscope.load(LLAMA)  # 212 nodes: all of it fits
    levels = group_levels(G)
    assert overview(levels) == all_groups(levels)
    assert default_grouping("f0") == {"source": "f0", "default": "overview", "toggled": []}


def _long_row(spans: int) -> Any:
    """A row of ``spans`` 1-us calls 2 us apart, with one 5,000-us call at the start."""
    from graphscope.app.render.timeline import ROWS, Row

    starts = [0.0] + [10.0 + 2 * i for i in range(spans - 1)]
    ends = [5000.0] + [s + 1.0 for s in starts[1:]]
    keys = ["long"] + [f"k{i}" for i in range(spans - 1)]
    return Row.of(ROWS[0], "#000", "calls", "CUDA calls", starts, ends, keys, ["call"] * spans)


def test_a_dot_file_folds_repeated_spans_and_groups_the_rest_in_runs() -> None:
    from graphscope.analysis.folding import CHUNK, collapsed, group_levels

    G = graphscope.load(ROOT / "samples" / "dot" / "torch-llama-decode" / "flags-verbose.dot")
    levels = group_levels(G)
    names = {chain[0] for chain in levels.values()}
    # The four layers repeat 46 node kinds: one fold; the nodes around it in runs.
    assert names == {
        "graph 16: nodes 0..17",
        "graph 16: nodes 18..201, 4 x 46",
        "graph 16: nodes 202..210",
    }
    shut = collapsed(G, levels, set())
    assert shut.number_of_nodes() == len(names) and shut.number_of_edges() == len(names) - 1
    lay = layout(shut)
    assert set(lay.pos) == set(shut)
    E = graphscope.load(ALL_TYPES)  # no repeats: runs of CHUNK nodes per graph
    chunks = {chain[0] for chain in group_levels(E).values()}
    per_graph: dict[int, int] = {}
    for _, d in E.nodes(data=True):
        per_graph[d["graph_id"]] = per_graph.get(d["graph_id"], 0) + 1
    assert len(chunks) == sum(-(-n // CHUNK) for n in per_graph.values())


def test_a_long_timeline_row_is_merged_and_a_zoom_shows_each_bar() -> None:
    from graphscope.app.render.timeline import MAX_BARS, _drawn, build_timeline, merges, zoom_window

    row = _long_row(100_000)
    extent = (0.0, row.ends[-1])
    bars, merged = _drawn(row, None, extent)
    assert merged and len(bars) <= MAX_BARS + 1
    # Every span is in exactly one bar, and a merged bar says how many it holds.
    counts = [int(text.split(" ")[0]) if " CUDA calls from " in text else 1 for *_, text in bars]
    assert sum(counts) == 100_000
    assert all(key is None for _, _, key, text in bars if " CUDA calls from " in text)
    # Zoomed in, each call is its own bar with its node's key, the long call that began before
    # the window included.
    bars, merged = _drawn(row, (1000.0, 1100.0), extent)
    assert not merged
    keys = {key for _, _, key, _ in bars}
    assert "long" in keys and {"k495", "k544"} <= keys and "k600" not in keys
    fig = build_timeline(nx.DiGraph(), rows=[row], window=(1000.0, 1100.0))
    assert list(fig.layout.xaxis.range) == [1000.0, 1100.0] and fig.layout.meta["merged"] is False
    assert build_timeline(nx.DiGraph(), rows=[row]).layout.meta["merged"] is True
    assert merges([row]) and not merges([_long_row(MAX_BARS)])
    # What plotly sends on a zoom, a pan, a reset and a resize.
    assert zoom_window({"xaxis.range[0]": 5, "xaxis.range[1]": 9.5}) == (5.0, 9.5)
    assert zoom_window({"xaxis.range": [1, 2]}) == (1.0, 2.0)
    assert zoom_window({"xaxis.autorange": True}) is None
    assert zoom_window({"autosize": True}) is False


def test_a_short_timeline_row_is_drawn_bar_by_bar() -> None:
    from graphscope.app.render.timeline import _drawn, timeline_rows

    G = graphscope.load(LLAMA)
    for row in timeline_rows(G):
        bars, merged = _drawn(row, None, (0.0, max(row.ends)))
        assert not merged and len(bars) == len(row.starts)


def test_webgl_edges_join_chains_and_draw_every_edge_once() -> None:
    from graphscope.app.render.figure import _edges

    for path in (LLAMA, LLAMA.parent / "tiny-gpt-parallel-b1.json.gz"):
        G = graphscope.load(path)
        lay = layout(G)
        [trace] = _edges(G, lay, arrows=False)
        segments = [
            ((x0, y0), (x1, y1))
            for (x0, y0), (x1, y1) in zip(
                zip(trace.x, trace.y, strict=True),
                zip(trace.x[1:], trace.y[1:], strict=True),
                strict=False,
            )
            if x0 is not None and x1 is not None
        ]
        expected = [(lay.pos[a], lay.pos[b]) for a, b in G.edges()]
        assert sorted(segments) == sorted(expected)
        # A chain is one line: far fewer points than three per edge.
        assert len(trace.x) < 2 * G.number_of_edges()


def test_row_labels_never_overlap_and_a_small_graph_labels_every_row() -> None:
    from graphscope.app.render.figure import LABEL_LINE_PX, row_labels

    small = layout(graphscope.load(LLAMA))
    # Every row is labelled, but a layer's rows after its first: its box holds them.
    firsts = [
        r for i, r in enumerate(small.rows) if i == 0 or small.rows[i - 1]["label"] != r["label"]
    ]
    assert [a["text"] for a in row_labels(small, 760)] == [
        r["label"] if len(r["label"]) <= 28 else r["label"][:27] + "…" for r in firsts
    ]
    assert len(firsts) < len(small.rows)
    chain = nx.path_graph(12_000, create_using=nx.DiGraph)
    for i, data in chain.nodes(data=True):
        data.update(graph_id=1, local_id=i, type="KERNEL")
    big = layout(chain, row_levels=40)
    labels = row_labels(big, 760)
    assert 10 < len(labels) < len(big.rows)
    span = max(y for _, y in big.pos.values()) + 1
    gaps = [(b["y"] - a["y"]) * (760 - 40) / span for a, b in itertools.pairwise(labels)]
    assert min(gaps) >= LABEL_LINE_PX  # pixels between neighbouring labels at first paint


def _buttons(component: Any) -> list[Any]:
    if isinstance(component, (list, tuple)):
        return [b for c in component for b in _buttons(c)]
    found = [component] if type(component).__name__ == "Button" else []
    children = getattr(component, "children", None)
    return found + (_buttons(children) if children is not None else [])


def test_the_catalog_lists_every_graph_and_links_each_to_its_graph(tmp_path: Path) -> None:
    import dash
    from graphscope.app.render import pages

    recordings = ROOT / "samples" / "recordings"
    registry = Registry()
    run = registry.add_recording(recordings / "torch-buckets", "buckets")
    page = pages.catalog_page([run])
    text = shown_text(page)
    assert "torch_buckets.py:102 in capture" in text and "400 replays" in text
    assert "recorded again after g2: input 0: [4, 1] -> [2, 1]" in text
    assert "pool shared with 2 graphs" in text and "graph-per-size" in text
    assert "memory: 1 pool(s), 34.0 MiB in all" in text  # the ledger graphscope inspect prints
    assert "no batch size holds memory of its own: dropping one frees nothing" in text
    links = _buttons(page)
    assert [b.children for b in links] == ["g2", "g5", "g8"]
    source = links[1].id["source"]
    assert registry.load(source).graph.graph["recording"]["id"] == "g5"
    opened = page_callbacks.open_graph({"type": "open-graph", "source": source}, [None, 1, None])
    assert (opened.source, opened.page) == (source, "graph")
    drawn = page_callbacks.open_graph({"type": "open-graph", "source": source}, [None] * 3)
    assert drawn.source is dash.no_update and drawn.page is dash.no_update
    broken = tmp_path / "broken" / "pid1"
    broken.mkdir(parents=True)
    (broken / "recording.json").write_text("{")
    bad = registry.add_recording(broken.parent, "broken")
    assert bad.error and "recording.json" in shown_text(pages.catalog_page([bad]))
    assert "No recording here" in shown_text(pages.catalog_page([]))


def test_the_catalog_names_the_run_s_processes_that_used_cuda_unrecorded(tmp_path: Path) -> None:
    from graphscope.app.render import pages

    run_dir = tmp_path / "rec"
    shutil.copytree(ROOT / "samples" / "recordings" / "torch-buckets", run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    why = "pid 4242 (llama-server) loaded the CUDA driver but is not a Python process"
    run["unrecorded_processes"] = [{"pid": 4242, "name": "llama-server", "why": why}]
    (run_dir / "run.json").write_text(json.dumps(run))
    text = shown_text(pages.catalog_page([Registry().add_recording(run_dir, "rec")]))
    assert "Not recorded:" in text and "processes of the program that used CUDA" in text
    assert why in text
    assert text.index(why) < text.index("torch_buckets.py:102 in capture")  # before the graphs
    clean = Registry().add_recording(ROOT / "samples" / "recordings" / "torch-buckets", "b")
    assert "Not recorded" not in shown_text(pages.catalog_page([clean]))


def test_navigation_helpers_open_groups_focus_count_and_read_the_address() -> None:
    from graphscope.analysis.folding import group_levels, overview

    G = graphscope.load(DEEP)
    levels = group_levels(G)
    base = overview(levels)
    state = default_grouping("f0")
    deep = next(k for k, chain in levels.items() if "model.layers.200" in chain)
    opened = opened_to(state, base, levels[deep])
    assert set(levels[deep]) - base <= set(opened["toggled"])  # each shut group toggled open
    assert opened_to(opened, base, levels[deep]) is opened  # nothing more to open
    shut = opened_to(opened, base, ["model.layers.200"], want=False)
    assert "model.layers.200" not in shut["toggled"]
    lay = layout(G)
    x, y = lay.pos[deep]
    ranges = focus_ranges(lay, deep)
    assert ranges is not None and sum(ranges["xaxis.range"]) / 2 == x
    assert ranges["yaxis.range"][0] > y > ranges["yaxis.range"][1]  # y is drawn reversed
    assert focus_ranges(lay, "no such node") is None
    assert match_count(["a", "b", "c"], "b") == "2 of 3"
    assert match_count(["a", "b", "c"], "z") == "3 matches"
    assert match_count([], None) == ""
    assert url_state({"file": "f2", "node": "graph_1_node_4", "view": "", "x": "1"}) == {
        "file": "f2",
        "node": "graph_1_node_4",
    }


def test_a_buffer_search_finds_every_node_touching_it() -> None:
    from graphscope.analysis.addresses import memory_names

    G = graphscope.load(LLAMA)
    weight = "param:model.layers.0.self_attn.q_proj.weight"
    found, warning = search_nodes(G, BUFFER_SEARCH + weight)
    assert found and warning is None
    assert found == [k for k, d in G.nodes(data=True) if weight in memory_names(G, d)]
    assert all(
        any(p.get("buffer") == weight for p in G.nodes[k]["pointers"]) for k in found
    )  # each one has a pointer into the weight
    # The panel's buffer cells are the links that start this search.
    panel = node_panel(G, found[0])
    ids = [getattr(c, "id", None) for c in walk(panel)]
    assert any(isinstance(i, dict) and i["type"] == "buffer" and i["name"] == weight for i in ids)
    assert search_nodes(G, BUFFER_SEARCH + "no such buffer") == (
        [],
        "no node touches 'no such buffer'",
    )


def test_no_plot_offers_to_send_anything_off_the_machine() -> None:
    app = server.create_app([LLAMA])
    graphs = [c for c in walk(app.layout()) if type(c).__name__ == "Graph"]
    assert {g.id for g in graphs} == {"dag", "minimap", "timeline"}
    for graph in graphs:
        assert graph.config["showSendToCloud"] is False and graph.config["displaylogo"] is False


def test_child_graphs_and_bodies_are_joined_to_their_owner_and_named_by_it() -> None:
    G = graphscope.load(ALL_TYPES)
    lay = layout(G)
    labels = {row["label"] for row in lay.rows}
    assert any(label.startswith("IF body 'True' of graph_1_node_") for label in labels)
    conditional = [k for k, d in G.nodes(data=True) if d["type"] == "CONDITIONAL"]
    owners = {owner for owner, _ in lay.nests}
    assert set(conditional) <= owners  # every body joined to its conditional node
    for owner, head in lay.nests:
        assert G.nodes[head]["parent"] == owner
    fig = build_figure(G, lay)
    [joins] = [t for t in fig.data if t.name == "child graph of"]
    assert len([x for x in joins.x if x is None]) == len(lay.nests)


def test_the_catalog_opens_with_what_graphscope_check_says_each_finding_linked() -> None:
    from graphscope.app.render import pages

    recordings = ROOT / "samples" / "recordings"
    registry = Registry()
    clean = pages.catalog_page([registry.add_recording(recordings / "torch-buckets", "b")])
    assert "Diagnosis (graphscope check)" in shown_text(clean)
    assert (
        "passed: complete, no failed stream capture, no graph replayed after memory it reads "
        "moved or was freed, eager share <= 50%"
    ) in shown_text(clean)
    run = registry.add_recording(recordings / "hf-generate", "hf")
    page = pages.catalog_page([run])
    (diagnosis,) = [c for c in page if getattr(c, "className", None) == "diagnosis"]
    text = shown_text([diagnosis])
    assert "1 rule broken (checked: complete, " in text and "rerecord: " in text
    assert "g10 was recorded again after g6 with the same input shapes" in text
    assert "static input data pointer changed: 4 inputs moved" in text
    (link,) = _buttons([diagnosis])
    assert link.children == "g10"
    assert registry.load(link.id["source"]).graph.graph["recording"]["id"] == "g10"


def test_two_findings_on_one_graph_each_get_a_link_of_their_own(tmp_path: Path) -> None:
    """hf-generate's g10, recorded again, planted with a stale pointer too: two findings
    name g10, and the page's ids stay unique (Dash refuses a layout that repeats one)."""
    import shutil

    from graphscope.app.render import pages

    run_dir = tmp_path / "hf-generate"
    shutil.copytree(ROOT / "samples" / "recordings" / "hf-generate", run_dir)
    index = run_dir / "pid942" / "recording.json"
    doc = json.loads(index.read_text())
    doc["stale_pointers"] = [
        {
            "graph": "g10",
            "buffer": "block 0x9000 (512 bytes)",
            "was": 0x9000,
            "now": None,
            "nodes": [],
            "pointers": 1,
            "at_s": 12.0,
            "replays_since": 5,
            "why": "was freed",
        }
    ]
    index.write_text(json.dumps(doc))
    run = Registry().add_recording(run_dir, "hf")
    (diagnosis,) = [
        c for c in pages.catalog_page([run]) if getattr(c, "className", None) == "diagnosis"
    ]
    links = _buttons([diagnosis])
    assert [b.children for b in links] == ["g10", "g10"]
    assert len({json.dumps(b.id, sort_keys=True) for b in links}) == 2


def test_hover_labels_wrap_long_kernel_names() -> None:
    from graphscope.app.render.figure import HOVER_LINE

    G = graphscope.load(ROOT / "samples" / "recordings" / "gpt-fast" / "pid1355" / "g8.json.gz")
    hovers = [h for texts in node_hovers(G).values() for h in texts]
    name = G.nodes["graph_7_node_65"]["short_name"]
    assert len(name) > 300
    [long] = [h for h in hovers if "graph_7_node_65" in h]
    lines = long.split("<br>")
    unescaped = [x.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&") for x in lines]
    assert len(lines) > 3 and all(len(x) <= HOVER_LINE for x in unescaped)
    assert "".join(unescaped).startswith(name)  # the whole name, cut into lines
    assert all(len(x) <= HOVER_LINE for h in hovers for x in h.split("<br>") if "&" not in x)


def test_the_compare_tables_say_when_they_show_the_first_rows_only() -> None:
    from graphscope.app.render.pages import compare_page

    A = graphscope.load(ROOT / "samples" / "bundles" / "tiny-llama-b1.json.gz")
    B = graphscope.load(ROOT / "samples" / "bundles" / "tiny-llama-b8.json.gz")
    page = compare_page(A, B)
    shown = shown_text(page)
    assert "Changed parameters (130 nodes) The first 30 of 130 nodes." in shown
    assert "The first 30 of 200 timed nodes, largest change first." in shown
    assert "The first" not in shown_text(compare_page(A, B, top=500))


def test_serve_prints_no_development_server_warning(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from werkzeug.serving import make_server

    app = server.create_app([LLAMA], preload=False)
    srv = make_server("127.0.0.1", 0, app.server)
    try:
        with caplog.at_level(logging.INFO, logger="werkzeug"):
            srv.log_startup()
            logging.getLogger("werkzeug").error("a real error")
    finally:
        srv.server_close()
    assert "development server" not in caplog.text
    assert f"Running on http://127.0.0.1:{srv.port}" in caplog.text
    assert "a real error" in caplog.text


def test_the_timeline_never_goes_before_zero() -> None:
    from graphscope.app.render.timeline import build_timeline, zoom_window

    G = graphscope.load(LLAMA)
    assert build_timeline(G).layout.xaxis.minallowed == 0
    assert zoom_window({"xaxis.range": [-300.0, 200.0]}) == (0.0, 200.0)
    assert zoom_window({"xaxis.range[0]": -5.0, "xaxis.range[1]": -1.0}) is False


def test_the_report_page_of_a_recorded_graph_shows_its_replay_timing_not_no_timing() -> None:
    # Issue 27, item 1: a recorded graph's report said "no timing (a DOT dump has none)" under
    # "65 nodes, 65 timed in replay".
    from graphscope.app.render.pages import report_page

    G = graphscope.load(ROOT / "samples" / "recordings" / "gpt-fast" / "pid1355" / "g5.json.gz")
    page = report_page(G, "f0")
    shown = shown_text(page)
    assert "no timing" not in shown.lower() and "Eager step against graph replay" in shown
    assert "No eager step in this file" in shown
    assert "Timed from the program's own replays, sampled by graphscope record." in shown
    empty = graphscope.load(ROOT / "samples" / "recordings" / "gpt-fast" / "pid1355" / "g2.json.gz")
    assert "An empty graph: no nodes" in shown_text(report_page(empty))
    # A model of repeated layers: each layer stack summed over its instances.
    llama = report_page(graphscope.load(LLAMA))
    assert "Repeated modules, summed over their instances" in shown_text(llama)
    assert "model.layers.*.self_attn" in shown_text(llama)
    assert "Graph against eager, node by node" in shown_text(llama)
    assert "Graph against eager" not in shown  # a recording has no eager side
    assert "Values:" not in shown and "Values:" not in shown_text(llama)  # none compared
    # capture compared the planted clean model's values with eager's: the page says they agree
    planted = ROOT / "samples" / "bundles" / "planted"
    clean = shown_text(report_page(graphscope.load(planted / "gpu_models-clean-b1.json.gz")))
    assert "Values: equal to eager's at the step after the capture's (" in clean
    assert "kernel arguments: none of " in clean
    scalar = graphscope.load(planted / "gpu_models-python_scalar-b1.json.gz")
    assert "Values: differ from eager's at the step after the capture's, first at aten::mul" in (
        shown_text(report_page(scalar))
    )


def test_the_page_gets_what_its_script_shares_with_the_figures_once_from_python() -> None:
    import re

    from graphscope.app.render import shared

    app = server.create_app([LLAMA], preload=False)
    html_page = app.server.test_client().get("/").get_data(as_text=True)
    head = html_page.split("</head>", 1)[0]
    [given] = re.findall(r"window\.graphscopeShared = (\{.*?\});</script>", head)
    assert json.loads(given) == shared.for_page()
    # the script keeps no copies of its own of the ids, trace names and limits
    script = "".join(p.read_text() for p in (ROOT / "app" / "assets").glob("gs-*.js"))
    for literal in ("'dag'", "'minimap'", "'timeline'", "'edges'", "'selected'", "#dag", "= 400"):
        assert literal not in script, literal
    G = graphscope.load(LLAMA)
    names = {t.name for t in build_figure(G, layout(G)).data}
    assert {shared.EDGES, shared.RING} <= names
