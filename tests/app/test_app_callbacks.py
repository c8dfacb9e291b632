"""The dashboard's callbacks called as plain functions on the samples, without Dash's server:
a click selects a node and brings its panel, folds open and shut, search steps say "3 of 17",
the address restores a node; and one call through Dash's endpoint checks the wiring."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

pytest.importorskip("dash")  # the GPU machine has no dash; the test extra brings it elsewhere

import dash
from dash_tree import by_id, ids, text
from graphscope.app.render.pages import address
from graphscope.app.serve.server import create_app
from graphscope.app.view import callbacks, page_callbacks
from graphscope.app.view.state import ViewState

import graphscope
from graphscope.analysis import addresses
from graphscope.analysis.folding import OVERVIEW_NODES
from graphscope.analysis.search import BUFFER_SEARCH
from graphscope.model import display_name

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "samples" / "bundles" / "tiny-llama-b1.json.gz"
DEEP = ROOT / "samples" / "large" / "hf-deep-llama-b1.json.gz"
ALL_TYPES = ROOT / "samples" / "dot" / "explicit-all-types" / "flags-verbose.dot"
# Their source ids, in the order given to ViewState.over.
SMALL, LARGE, DOT = "f0", "f1", "f2"
RUN = "model.layers 1..223 x223"  # the deep sample's fold of its later layers


@pytest.fixture(scope="module")
def view() -> Iterator[ViewState]:
    yield ViewState.over([LLAMA, DEEP, ALL_TYPES])


def _drawn_keys(figure: Any) -> set[str]:
    """The keys of the nodes a DAG figure draws (the ring traces left out)."""
    rings = ("selected", "matches", "added in B", "changed")
    return {
        k
        for t in figure.data
        if t.customdata is not None and not (t.name or "").startswith(rings)
        for k in t.customdata
    }


def _click(key: str) -> dict[str, Any]:
    """What plotly sends for a click on the node ``key``."""
    return {"points": [{"customdata": key, "x": 0, "y": 0}]}


def test_the_view_state_lists_the_files_given_in_order(view: ViewState) -> None:
    assert [o["value"] for o in view.options()] == [SMALL, LARGE, DOT]
    assert [o["label"] for o in view.options()] == [p.name for p in (LLAMA, DEEP, ALL_TYPES)]
    assert view.first == SMALL and view.start == "graph"
    # The buckets files beside the given bundles are offered on the buckets page.
    assert {Path(f["value"]).name for f in view.bucket_files} >= {"tiny-llama.buckets.json"}


def test_a_large_graph_draws_its_overview_with_a_fold_and_kept_views(view: ViewState) -> None:
    drawing = callbacks.draw(view, LARGE, "type", None, None, None)
    keys = _drawn_keys(drawing.figure)
    assert 10 < len(keys) <= OVERVIEW_NODES
    assert "group:" + RUN in keys
    # One module level open: layer 0's attention and MLP are blocks (issue 27).
    assert {"group:model.layers.0.self_attn", "group:model.layers.0.mlp"} <= keys
    assert drawing.figure.data[-1].name == "selected"
    assert drawing.rings == {"dag": len(drawing.figure.data) - 1, "source": LARGE, "colour": "type"}
    assert "collapsed-note" in ids(drawing.status) and drawing.style == {}
    assert drawing.count == ""
    assert "nodes" in text(drawing.cards)
    # The drawn view is kept: a redraw of the same folds places nothing again.
    G = view.graph(LARGE)
    assert G is not None
    expanded = view.open(LARGE).expanded(None)
    assert view.open(LARGE).view(expanded) is view.open(LARGE).view(expanded)


def test_clicking_a_node_selects_it_and_brings_its_panel(view: ViewState) -> None:
    G = graphscope.load(LLAMA)
    key = "graph_1_node_47"
    done = callbacks.interact(view, "dag-pick", source_id=SMALL, dag_click=_click(key))
    assert done.selected == key
    assert done.grouping is dash.no_update  # already in view: the figure is left alone
    assert done.focus_request is None  # a click in the DAG leaves the view where it is
    assert by_id(done.panel, "node-title").children == display_name(G.nodes[key])
    assert f"local id {G.nodes[key]['local_id']}" in text(done.panel)
    # The same node clicked on the timeline is brought into view.
    on_timeline = callbacks.interact(view, "timeline", source_id=SMALL, timeline_click=_click(key))
    assert (on_timeline.selected, on_timeline.focus_request) == (key, key)
    # A click on nothing (plotly's click between points) changes nothing.
    missed = callbacks.interact(view, "dag-pick", source_id=SMALL, dag_click={"points": []})
    assert all(v is dash.no_update for v in missed.outputs().values())
    # A newly picked file clears the selection and the folds.
    picked = callbacks.interact(view, "source", source_id=LARGE, selected=key)
    assert (picked.selected, picked.grouping, picked.focus_request) == (None, None, None)
    assert "Click a node" in text(picked.panel)


def test_the_panels_links_follow_edges(view: ViewState) -> None:
    G = graphscope.load(LLAMA)
    key = "graph_1_node_47"
    [after] = list(G.successors(key))
    done = callbacks.interact(
        view,
        {"type": "nav", "key": after},
        source_id=SMALL,
        nav_clicks=[None, 1],
        selected=key,
    )
    assert done.selected == after and done.focus_request == after
    # Links just drawn (no clicks yet) select nothing.
    drawn = callbacks.interact(
        view, {"type": "nav", "key": after}, source_id=SMALL, nav_clicks=[None, None]
    )
    assert drawn.selected is dash.no_update and drawn.panel is dash.no_update


def test_opening_and_folding_groups_changes_the_drawn_view(view: ViewState) -> None:
    G = view.graph(LARGE)
    assert G is not None
    before = _drawn_keys(callbacks.draw(view, LARGE, "type", None, None, None).figure)
    # A click on the fold of layers 1..223 opens it to one square per layer.
    opened = callbacks.interact(view, "dag-pick", source_id=LARGE, dag_click=_click("group:" + RUN))
    assert opened.selected is dash.no_update and RUN in opened.grouping["toggled"]
    after = _drawn_keys(callbacks.draw(view, LARGE, "type", None, opened.grouping, None).figure)
    assert "group:" + RUN not in after
    layers = {f"group:model.layers.{i}" for i in range(1, 224)}
    assert layers <= after and not layers & before
    # The panel of a node in an open group has a link that folds that group.
    levels = view.open(LARGE).levels
    # A kernel of layer 0 itself (a residual add), drawn between its blocks.
    key = next(k for k in sorted(before) if levels.get(k, [""])[-1] == "model.layers.0")
    group = levels[key][-1]
    panel = callbacks.panel(view, LARGE, key, None)
    assert {"type": "collapse", "group": group} in ids(panel)
    folded = callbacks.interact(
        view,
        {"type": "collapse", "group": group},
        source_id=LARGE,
        collapse_clicks=[1],
        selected=key,
    )
    assert folded.selected is dash.no_update
    assert group not in view.open(LARGE).expanded(folded.grouping)
    fold = "model.layers 0..223 x224"
    assert fold in view.open(LARGE).expanded(folded.grouping)  # only that one shut
    shut = callbacks.draw(view, LARGE, "type", None, folded.grouping, key)
    assert key not in _drawn_keys(shut.figure) and "group:" + group in _drawn_keys(shut.figure)
    # The selection ring sits on the group that now holds the node.
    [ring] = [t for t in shut.figure.data if t.name == "selected"]
    lay = view.open(LARGE).view(view.open(LARGE).expanded(folded.grouping))[1]
    assert (ring.x[0], ring.y[0]) == lay.pos["group:" + group]
    # The panel comes again with the fold: the node's collapse link for that group is gone.
    assert {"type": "collapse", "group": group} not in ids(folded.panel)
    # Collapse all: one square per outermost group.
    collapsed = callbacks.interact(view, "collapse-all", source_id=LARGE)
    assert collapsed.grouping == {"source": LARGE, "default": "collapsed", "toggled": []}
    squares = _drawn_keys(
        callbacks.draw(view, LARGE, "type", None, collapsed.grouping, None).figure
    )
    assert squares and all(k.startswith("group:") for k in squares)


def test_search_steps_through_matches_and_counts_them(view: ViewState) -> None:
    drawn = callbacks.draw(view, LARGE, "type", "sdpa", None, None)
    G = view.graph(LARGE)
    assert G is not None
    found, _ = view.open(LARGE).matches("sdpa")
    assert len(found) == 224 and drawn.count == "224 matches"
    assert all("sdpa" in G.nodes[k]["short_name"] for k in found)
    first = callbacks.interact(view, "next", source_id=LARGE, search="sdpa")
    assert first.selected == found[0] and first.focus_request == found[0]
    assert first.count == "1 of 224"  # the count comes with the selection
    third = found[2]  # in layer 2, folded in the overview: stepping there opens its groups
    step = callbacks.interact(view, "next", source_id=LARGE, search="sdpa", selected=found[1])
    assert step.selected == third and step.count == "3 of 224"
    assert third in _drawn_keys(
        callbacks.draw(view, LARGE, "type", "sdpa", step.grouping, third).figure
    )
    back = callbacks.interact(view, "prev", source_id=LARGE, search="sdpa", selected=found[0])
    assert back.selected == found[-1]  # previous from the first wraps to the last
    # A redraw with the selection on a match counts it; the view is centred on it on request.
    centred = callbacks.draw(
        view, LARGE, "type", "sdpa", step.grouping, third, focus=third
    ).figure.layout
    assert centred.xaxis.range is not None and centred.yaxis.autorange is False
    assert callbacks.draw(view, LARGE, "type", "sdpa", step.grouping, third).count == "3 of 224"
    nothing = callbacks.interact(view, "next", source_id=LARGE)
    assert nothing.selected is dash.no_update
    # "next" clicked straight after typing, before any draw for the text: the text decides.
    typed = callbacks.interact(view, "next", source_id=LARGE, search="q_proj")
    assert typed.selected == view.open(LARGE).matches("q_proj")[0][0] and typed.count.startswith(
        "1 of"
    )


def test_a_search_says_no_match_and_its_legend_counts_what_it_found(view: ViewState) -> None:
    assert callbacks.draw(view, LARGE, "type", "no-such-kernel", None, None).count == "no match"
    assert callbacks.draw(view, LARGE, "type", "  ", None, None).count == ""
    assert callbacks.draw(view, LARGE, "type", None, None, None).count == ""
    # 224 matches, 223 of them folded into one square: the legend says 224, as the count does.
    drawn = callbacks.draw(view, LARGE, "type", "sdpa", None, None)
    [ring] = [t for t in drawn.figure.data if (t.name or "").startswith("matches")]
    assert drawn.count == "224 matches" and ring.name == "matches (224)"
    assert len(ring.customdata) < 224  # the rings themselves are on what is drawn


def test_stepping_through_matches_shuts_what_the_last_step_opened(view: ViewState) -> None:
    G = view.graph(LARGE)
    assert G is not None
    found, _ = view.open(LARGE).matches("sdpa")
    # The user opens the block of later layers by hand: no step shuts it.
    opened = callbacks.interact(view, "dag-pick", source_id=LARGE, dag_click=_click("group:" + RUN))
    grouping, selected = opened.grouping, found[0]
    layers = []
    for _ in range(4):
        step = callbacks.interact(
            view, "next", source_id=LARGE, search="sdpa", selected=selected, grouping=grouping
        )
        selected = step.selected
        grouping = grouping if step.grouping is dash.no_update else step.grouping
        layers.append({g for g in grouping["toggled"] if g.startswith("model.layers.")})
        keys = _drawn_keys(callbacks.draw(view, LARGE, "type", "sdpa", grouping, selected).figure)
        assert selected in keys
    # Each step opened its own layer and shut the last one's: one layer open at a time.
    assert [sorted(layer) for layer in layers] == [
        [f"model.layers.{i}", f"model.layers.{i}.self_attn"] for i in (1, 2, 3, 4)
    ]
    assert RUN in grouping["toggled"]
    back = callbacks.interact(
        view, "prev", source_id=LARGE, search="sdpa", selected=selected, grouping=grouping
    )
    assert {g for g in back.grouping["toggled"] if g.startswith("model.layers.")} == {
        "model.layers.3",
        "model.layers.3.self_attn",
    }


def test_a_buffer_clicked_in_the_panel_searches_the_nodes_that_touch_it(
    view: ViewState,
) -> None:
    name = "param:model.layers.0.self_attn.q_proj.weight"
    # The click itself is answered in the page (clientside.FIND_BUFFER, a browser test).
    drawn = callbacks.draw(view, SMALL, "type", BUFFER_SEARCH + name, None, None)
    G = view.graph(SMALL)
    assert G is not None
    found, _ = view.open(SMALL).matches(BUFFER_SEARCH + name)
    assert found and all(
        any(p.get("buffer") == name for p in G.nodes[k]["pointers"]) for k in found
    )
    assert drawn.count == f"{len(found)} matches"
    ringed = next(t for t in drawn.figure.data if t.name.startswith("matches"))
    assert sorted(ringed.customdata) == sorted(found)


def test_the_ring_moves_to_the_selection_and_the_view_to_a_requested_node(
    view: ViewState,
) -> None:
    G = view.graph(SMALL)
    assert G is not None
    key = "graph_1_node_47"
    drawing = callbacks.draw(view, SMALL, "type", None, None, None)
    state = {"source_id": SMALL, "grouping": None, "rings": drawing.rings}
    moved = callbacks.ring(view, selected=key, timeline_ring_index=7, focus_request=key, **state)
    x, y = view.open(SMALL).view(view.open(SMALL).expanded(None))[1].pos[key]
    patch = moved.dag.to_plotly_json()["operations"]
    assert {"operation": "Assign", "location": ["data", drawing.rings["dag"], "x"]} in [
        {k: op[k] for k in ("operation", "location")} for op in patch
    ]
    assert [op["params"]["value"] for op in patch] == [[x], [y]]
    assert moved.focus["ranges"] == callbacks.focus_ranges(
        view.open(SMALL).view(view.open(SMALL).expanded(None))[1], key
    )
    timeline_ops = moved.timeline.to_plotly_json()["operations"]
    assert {tuple(op["location"]) for op in timeline_ops} == {
        ("data", 7, "y"),
        ("data", 7, "base"),
        ("data", 7, "x"),
    }
    # A click in the DAG itself (no focus request) leaves the view where it is.
    stay = callbacks.ring(view, selected=key, timeline_ring_index=None, focus_request=None, **state)
    assert stay.focus is dash.no_update and stay.timeline is dash.no_update
    none = callbacks.ring(
        view, selected=None, timeline_ring_index=None, focus_request=None, **state
    )
    assert all(v is dash.no_update for v in none.outputs().values())


def test_hover_texts_and_the_timeline_come_after_the_dag(view: ViewState) -> None:
    drawing = callbacks.draw(view, SMALL, "time", None, None, None)
    G = view.graph(SMALL)
    assert G is not None
    addresses._KNOWN.pop(G, None)
    patch = callbacks.hovers(view, drawing.rings, None).to_plotly_json()["operations"]
    texts = [op["params"]["value"] for op in patch if op["location"][-1] == "hovertext"]
    assert sum(len(t) for t in texts) == 212  # every node of the small sample
    assert addresses._KNOWN[G]  # the panel's address look-ups, built after the paint too
    shown = callbacks.timeline(view, drawing.rings, None, None, None)
    assert shown.style == {} and shown.ring == len(shown.figure.data) - 1
    assert shown.figure.data[-1].name == "selected" and shown.merged is False
    # A DOT dump has no timeline: its pane is hidden.
    dot = callbacks.draw(view, DOT, "type", None, None, None)
    assert callbacks.timeline(view, dot.rings, None, None, None).style == {"display": "none"}
    # A zoom of a timeline drawn bar by bar needs no redraw.
    zoom = callbacks.timeline_zoom(
        view,
        {"xaxis.range[0]": 0, "xaxis.range[1]": 50},
        merged=False,
        source_id=SMALL,
        grouping=None,
        selected=None,
    )
    assert zoom.figure is dash.no_update and zoom.window is dash.no_update


def test_the_address_restores_file_node_page_and_colouring(view: ViewState) -> None:
    G = view.graph(LARGE)
    assert G is not None
    key = next(k for k, chain in view.open(LARGE).levels.items() if "model.layers.200" in chain)
    link = address(LARGE, node=key, view="report", colour="time")  # as the pages write them
    asked = callbacks.url_state(
        {k: v[0] for k, v in parse_qs(urlparse(link).query).items()} | {"other": "x"}
    )
    assert asked == {"file": LARGE, "node": key, "view": "report", "colour": "time"}
    page = callbacks.page(view, asked)
    assert by_id(page, "source").value == LARGE
    assert by_id(page, "selected").data == key
    assert by_id(page, "page").value == "report"
    assert by_id(page, "colour").value == "time"
    # The page asked for is shown, drawn for the file, the graph page hidden behind it.
    assert by_id(page, "graph-page").style == {"display": "none"}
    report = by_id(page, "report-page")
    assert report.style == {} and "Speedup" in text(by_id(report, "speedup"))
    # The node's layer, folded in the overview, is open, the node drawn and in view.
    dag = by_id(page, "dag").figure
    assert key in _drawn_keys(dag) and dag.layout.xaxis.range is not None
    assert f"local id {G.nodes[key]['local_id']}" in text(by_id(page, "node-panel"))
    # Nothing asked: the first file, nothing selected; an unknown file or page is ignored.
    plain = callbacks.page(view, callbacks.url_state({"file": "f99", "view": "nowhere"}))
    assert by_id(plain, "source").value == SMALL and by_id(plain, "selected").data is None
    assert by_id(plain, "page").value == "graph" and by_id(plain, "graph-page").style == {}
    assert by_id(plain, "report-page").children is None  # drawn only once it is picked
    buckets = callbacks.page(view, {"view": "buckets"})
    assert "bucket-table" in ids(by_id(buckets, "buckets-wrap"))
    assert "Click a node" in text(by_id(plain, "node-panel"))


def test_the_other_pages_callbacks(view: ViewState) -> None:
    styles = page_callbacks.show_page("compare")
    assert [name for name, style in styles.items() if style == {}] == ["compare"]
    assert page_callbacks.report(view, "graph", SMALL) is dash.no_update  # not drawn hidden
    assert "Speedup" in text(page_callbacks.report(view, "report", SMALL))
    compared = text(page_callbacks.compare(view, "compare", SMALL, LARGE))
    assert "nodes matched" in compared
    assert page_callbacks.compare(view, "compare", SMALL, None) is dash.no_update
    unknown = page_callbacks.buckets(view, "buckets", "/elsewhere.buckets.json", None)
    assert "No buckets file here" in text(unknown)
    listed = next(
        f["value"] for f in view.bucket_files if f["value"].endswith("llama.buckets.json")
    )
    assert "bucket-table" in ids(page_callbacks.buckets(view, "buckets", listed, None))


def test_a_failed_file_is_marked_and_an_upload_is_listed_and_drawn(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(LLAMA.read_bytes()[:3000])
    view = ViewState.over([LLAMA, cut])
    assert page_callbacks.mark_failed(view, "f0") is dash.no_update
    marked = page_callbacks.mark_failed(view, "f1")
    assert [o["label"] for o in marked] == [LLAMA.name, "failed: cut.json.gz"]
    failed = callbacks.draw(view, "f1", "type", None, None, None)
    assert failed.style == {"display": "none"} and failed.rings is None
    assert text(by_id(failed.status, "load-error")).startswith(str(cut))
    contents = "data:;base64," + base64.b64encode(LLAMA.read_bytes()).decode()
    upload = page_callbacks.uploaded(view, contents, "again.json.gz")
    assert upload.options[-1] == {"label": "again.json.gz (uploaded)", "value": upload.value}
    assert (
        len(_drawn_keys(callbacks.draw(view, upload.value, "type", None, None, None).figure)) == 212
    )
    assert page_callbacks.uploaded(view, None, None).value is dash.no_update


def test_dash_wires_a_click_to_the_selection_and_its_panel() -> None:
    """The registered callback, through Dash's own endpoint: its named inputs arrive where
    ``callbacks.interact`` expects them, and its outputs where the page reads them."""
    app = create_app([LLAMA], preload=False)
    key = "graph_1_node_47"
    # The count's output is a duplicate (the search sets it too): Dash names it with a hash.
    [output] = [o for o in app.callback_map if o.startswith("..selected.data...")]
    outputs = output.strip(".").split("...")
    assert [o.split("@")[0] for o in outputs] == [
        "selected.data", "grouping.data", "focus-request.data", "node-panel.children",
        "match-count.children",
    ]  # fmt: skip

    def spec(name: str, value: Any = None) -> dict[str, Any]:
        component, prop = name.split("@")[0].split(".")
        return {"id": component, "property": prop, "value": value}

    inputs = [
        spec("dag-pick.data", _click(key)),
        spec("timeline.clickData"),
        [],  # no nav links drawn yet
        [],  # nor collapse links
        spec("prev.n_clicks", 0),
        spec("next.n_clicks", 0),
        spec("collapse-all.n_clicks", 0),
        spec("expand-all.n_clicks", 0),
        spec("source.value", "f0"),
    ]
    reply = app.server.test_client().post(
        "/_dash-update-component",
        json={
            "output": output,
            "outputs": [spec(o) for o in outputs],
            "inputs": inputs,
            "state": [
                spec("search.value"),
                spec("selected.data"),
                spec("grouping.data"),
            ],
            "changedPropIds": ["dag-pick.data"],
        },
    )
    assert reply.status_code == 200, reply.get_data(as_text=True)
    response = reply.get_json()["response"]
    assert response["selected"]["data"] == key
    assert response["focus-request"]["data"] is None
    assert "grouping" not in response  # left as it was
    assert response["match-count"]["children"] == ""  # no search: no count
    panel = response["node-panel"]["children"]
    title = next(c for c in panel if c["props"].get("id") == "node-title")
    assert title["props"]["children"] == display_name(graphscope.load(LLAMA).nodes[key])
