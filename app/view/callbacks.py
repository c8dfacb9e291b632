"""The graph page's callbacks as plain functions: the page's values in, what it shows out.

Each takes the ``ViewState`` first, then the component properties it reads, named as
``server.register`` names them, and returns the values of its outputs (``dash.no_update``
leaves one as it is); where Dash's ``triggered_id`` matters, it comes in as ``trigger``.
None needs a running Dash server, so tests call them as they are.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dash
from dash import Patch, html

from graphscope.analysis.addresses import prepare
from graphscope.analysis.diff import diff
from graphscope.analysis.folding import GROUP, enclosing
from graphscope.analysis.search import match_count

from ..render import pages
from ..render.cards import card_divs, untimed
from ..render.components import COLOURS, HIDDEN, PAGES, Drawing, Outputs, no_selection, page_layout
from ..render.figure import build_figure, has_timing, minimap, node_hovers, ring_at
from ..render.marks import mark_traces, values_mark
from ..render.panel import node_panel
from ..render.placement import Layout
from ..render.timeline import build_timeline, has_timeline, merges, timeline_ring, zoom_window
from . import page_callbacks
from .state import ViewState, default_grouping, is_open, opened_to

#: How much of the DAG a jump to a node shows around it, in node spacings and rows.
FOCUS_X, FOCUS_Y = 4.0, 5.0
#: What a page's address may ask for (``?file=f2&node=graph_1_node_40&view=report``):
#: ``compare`` names the file whose diff to ``file`` is marked in the DAG.
URL_KEYS = ("file", "node", "view", "colour", "compare")


def url_state(args: Any) -> dict[str, str]:
    """What a page address's query (a mapping) asks for: the ``URL_KEYS`` given as text."""
    return {k: str(args.get(k)) for k in URL_KEYS if isinstance(args.get(k), str) and args.get(k)}


def focus_ranges(lay: Layout, key: str | None) -> dict[str, list[float]] | None:
    """Axis ranges that centre ``key`` and zoom to its neighbourhood (y is drawn reversed)."""
    if key is None or key not in lay.pos:
        return None
    x, y = lay.pos[key]
    return {
        "xaxis.range": [x - FOCUS_X, x + FOCUS_X],
        "yaxis.range": [y + FOCUS_Y, y - FOCUS_Y],
    }


def page(view: ViewState, asked: dict[str, str]) -> html.Div:
    """The whole page, arriving with a graph drawn: the file, node, page, colouring and
    compare that ``asked`` (``url_state``) names, else the first file as it opens.

    Drawing it here rather than in a callback saves the page a round trip after it loads
    (measured: about 0.1 s of a first paint of 1.1 s at 1,000 nodes).
    """
    asked_file = asked.get("file")
    source_id = asked_file if view.registry.get(asked_file) is not None else view.first
    colour = asked.get("colour") or "type"
    colour = colour if colour in COLOURS else "type"
    shown_page = asked.get("view") or view.start
    shown_page = shown_page if shown_page in PAGES else view.start
    node, grouping = None, None
    opened = view.open(source_id) if asked.get("node") else None
    if opened is not None and asked["node"] in opened.graph:
        node = asked["node"]
        state = default_grouping(opened.id)
        grouping = opened_to(state, opened.base(state["default"]), opened.levels.get(node, []))
    if source_id is not None and view.registry.get(asked.get("compare")) is not None:
        # In the grouping state, so that a redraw (a group opened, a search) keeps the marks.
        grouping = {**(grouping or default_grouping(source_id)), "compare": asked["compare"]}
    drawing = draw(
        view, source_id, colour, None, grouping, node, new_source=node is None, focus=node
    )
    # The page asked for comes drawn: its own callback runs only once another page is picked.
    report = page_callbacks.report(view, shown_page, source_id)
    first_buckets = view.bucket_files[0]["value"] if view.bucket_files else None
    buckets = page_callbacks.buckets(view, shown_page, first_buckets, None)
    return page_layout(
        drawing,
        options=view.options(),
        source_id=source_id,
        bucket_files=view.bucket_files,
        catalog=pages.catalog_page(view.runs),
        start=shown_page,
        colour=colour,
        selected=node,
        grouping=grouping,
        panel=panel(view, source_id, node, grouping),
        report=None if report is dash.no_update else report,
        buckets=None if buckets is dash.no_update else buckets,
    )


def draw(
    view: ViewState,
    source_id: str | None,
    colour: str,
    search: str | None,
    grouping: Any,
    selected: str | None,
    *,
    new_source: bool = False,
    focus: str | None = None,
) -> Drawing:
    """The graph page for a file: DAG, notes, cards and search matches.

    ``new_source``: the file has just been picked, so ``selected`` belonged to the last one.
    With ``focus`` equal to the selected node, the view is centred on it. A selection alone
    does not come here: ``ring`` moves the rings.
    """
    source = view.registry.get(source_id)
    if source is None:
        gone = view.registry.gone(source_id)
        if gone is not None:
            return Drawing(status=html.Div(gone, className="error", id="load-error"))
        message = "No graph to show: give files to graphscope serve, or drop one here."
        return Drawing(status=html.Div(message, className="muted"))
    opened = view.open(source.id)
    if opened is None:
        error = view.registry.graph_of(source.id)[1]
        return Drawing(status=html.Div(error, className="error", id="load-error"))
    G = opened.graph
    found, warning = opened.matches(search)
    notes: list[Any] = []
    if not has_timing(G):
        notes.append(html.Div(untimed(G), className="muted", id="no-timing"))
    if warning:
        notes.append(html.Div(f"search: {warning}", className="muted"))
    key = selected if isinstance(selected, str) and selected in G and not new_source else None
    expanded = opened.expanded(grouping)
    shown, lay = opened.view(expanded)

    def drawn(k: str) -> str:
        return k if k in shown else opened.drawn_as(k, expanded)

    ring = None if key is None else drawn(key)
    folded = sum(1 for _, d in shown.nodes(data=True) if d.get("type") == GROUP)
    if folded:
        notes.append(
            html.Div(
                f"{folded} group{'s' if folded != 1 else ''} collapsed "
                f"({G.number_of_nodes()} nodes in all): click a square to expand it.",
                className="muted",
                id="collapsed-note",
            )
        )
    fig = build_figure(
        shown, lay, colour, ring, sorted({drawn(k) for k in found}), hover=False, found=len(found)
    )
    # The node where the graph's values first differ from eager's, and what changed from the
    # file compared with (``?compare=``, kept in the grouping state by ``page``), are ringed
    # before the selection ring, which stays the last trace.
    marks = values_mark(G, lay, drawn)
    against = view.registry.get(grouping.get("compare")) if isinstance(grouping, dict) else None
    if against is not None and grouping.get("source") == source.id:
        against_graph, against_error = view.registry.graph_of(against.id)
        if against_graph is None:
            notes.append(html.Div(f"compare: {against_error}", className="error"))
        else:
            d = diff(against_graph, G)
            changes = mark_traces(lay, d.added, pages.changed_keys(d), drawn)
            marks += changes
            ringed_group = any(str(k).startswith("group:") for t in changes for k in t.customdata)
            notes.insert(0, pages.compare_note(d, against.id, against.label, ringed_group))
    if marks:  # none for a file compared with itself (fig.data[-0:] is all of it)
        # Plotly takes new traces only at the end, then any order of those it holds.
        fig.add_traces(marks)
        ring_trace = fig.data[-len(marks) - 1]
        fig.data = (*fig.data[: -len(marks) - 1], *fig.data[-len(marks) :], ring_trace)
    ranges = focus_ranges(lay, ring) if key is not None and focus == key else None
    if ranges:  # the ring callback's move could come before this figure: both move
        fig.update_layout(
            xaxis_range=ranges["xaxis.range"],
            yaxis_range=ranges["yaxis.range"],
            yaxis_autorange=False,
        )
    return Drawing(
        figure=fig,
        minimap=minimap(lay),
        style={},
        status=notes,
        cards=card_divs(G),
        count=match_count(found, key, searched=bool(search and search.strip())),
        rings={"dag": len(fig.data) - 1, "source": source.id, "colour": colour},
    )


def panel(view: ViewState, source_id: str | None, selected: Any, grouping: Any) -> Any:
    """The node panel for the selected node, with a collapse link for each open group."""
    opened = view.open(source_id)
    if opened is None or not isinstance(selected, str) or selected not in opened.graph:
        return no_selection()
    expanded = opened.expanded(grouping)
    return node_panel(opened.graph, selected, enclosing(opened.levels, selected, expanded))


@dataclass
class Interaction(Outputs):
    """What a click, a step through the matches or a fold changes."""

    selected: Any  # the node now selected (None: none), or no_update
    grouping: Any  # the grouping state after it, or no_update
    focus_request: Any  # the node to bring into view (None: leave the view), or no_update
    panel: Any  # the node panel, in the same round trip, or no_update
    count: Any = dash.no_update  # the match count for the new selection ("3 of 17")


_NOTHING = (dash.no_update, dash.no_update, dash.no_update)


def interact(
    view: ViewState,
    trigger: Any,
    *,
    source_id: str | None,
    dag_click: Any = None,
    timeline_click: Any = None,
    nav_clicks: Sequence[Any] = (),
    collapse_clicks: Sequence[Any] = (),
    selected: str | None = None,
    grouping: Any = None,
    search: Any = None,
) -> Interaction:
    """What a click chose (``_choose``) and the panel for it, in one round trip (a panel of
    its own waited for this callback's answer: two round trips per click).

    ``trigger`` is the id of what was used: ``dag-pick`` (the node a click in the DAG is on,
    shaped as Plotly's click data) or ``timeline`` (with its click data),
    ``prev``, ``next``, ``collapse-all``, ``expand-all``, ``source``, or a ``nav`` or
    ``collapse`` link's id (with the clicks of all such links).

    ``search``: the search box's text; its matches come from the search cache the draw
    fills (``OpenFile.matches``). The page kept them in a store once, and a search typed
    and then "next" clicked at once (the box commits its text as it loses focus to the
    button) found the store not yet redrawn; each click also sent the store's keys.
    """
    open_file = view.open(source_id)
    text = search if isinstance(search, str) else None
    found = open_file.matches(text)[0] if open_file is not None else []
    chosen, grouping_after, focus = _choose(
        view,
        trigger,
        source_id=source_id,
        dag_click=dag_click,
        timeline_click=timeline_click,
        nav_clicks=nav_clicks,
        collapse_clicks=collapse_clicks,
        matches=found,
        selected=selected,
        grouping=grouping,
    )
    if chosen is dash.no_update and grouping_after is dash.no_update:
        return Interaction(chosen, grouping_after, focus, dash.no_update)
    key = selected if chosen is dash.no_update else chosen
    state = grouping if grouping_after is dash.no_update else grouping_after
    # The count in the same answer: a callback of its own on the selection was one more
    # round trip, and more work for the page, on every click.
    count = match_count(found, key) if chosen is not dash.no_update else dash.no_update
    return Interaction(chosen, grouping_after, focus, panel(view, source_id, key, state), count)


def _choose(
    view: ViewState,
    trigger: Any,
    *,
    source_id: str | None,
    dag_click: Any,
    timeline_click: Any,
    nav_clicks: Sequence[Any],
    collapse_clicks: Sequence[Any],
    matches: list[str],
    selected: str | None,
    grouping: Any,
) -> tuple[Any, Any, Any]:
    """What a click does: select a node (opening the groups it is in) or fold groups; as
    (selected, grouping, focus request).

    The focus request asks for the view to move to the node: on a search step, a link, or a
    timeline click, not on a click in the DAG itself.
    """
    open_file = view.open(source_id)
    if trigger == "source" or open_file is None:
        return None, None, None
    state = dict(open_file.grouping_of(grouping))
    levels = open_file.levels
    base = open_file.base(state["default"])

    def show(key: str) -> tuple[Any, Any, Any]:
        after = opened_to(state, base, levels.get(key, []))
        # Already in view: leave the grouping, and the figure, alone.
        return key, (dash.no_update if after is state else after), key

    def step_to(key: str) -> tuple[Any, Any, Any]:
        # The groups the last step opened shut again, those the user opened left open: a
        # walk through 38 matches opened every group it passed, until the overview was
        # cluttered with overlapping labels.
        undone = opened_to(state, base, state.get("stepped", []), want=False)
        chain = levels.get(key, [])
        after = opened_to(undone, base, chain)
        opened = [g for g in chain if is_open(after, base, g) and not is_open(undone, base, g)]
        after = {**after, "stepped": opened}
        if not opened:
            del after["stepped"]
        return key, (dash.no_update if after == state else after), key

    if trigger in ("collapse-all", "expand-all"):
        mode = "collapsed" if trigger == "collapse-all" else "expanded"
        return dash.no_update, {"source": open_file.id, "default": mode, "toggled": []}, None
    if trigger in ("prev", "next"):
        if not matches:
            return _NOTHING
        step = 1 if trigger == "next" else -1
        index = matches.index(selected) + step if selected in matches else (0 if step > 0 else -1)
        return step_to(matches[index % len(matches)])
    if isinstance(trigger, dict) and trigger.get("type") in ("nav", "collapse"):
        pressed = nav_clicks if trigger["type"] == "nav" else collapse_clicks
        if not any(pressed):  # the links were just drawn, not clicked
            return _NOTHING
        if trigger["type"] == "collapse":
            return dash.no_update, opened_to(state, base, [trigger["group"]], want=False), None
        return show(trigger["key"])
    clicked = timeline_click if trigger == "timeline" else dag_click
    if not (isinstance(clicked, dict) and clicked.get("points")):
        return _NOTHING
    key = clicked["points"][0].get("customdata")
    if not isinstance(key, str):
        return _NOTHING
    if key.startswith("group:"):
        return dash.no_update, opened_to(state, base, [key[len("group:") :]]), None
    if key not in open_file.graph:
        return _NOTHING
    chosen, grouping_after, _ = show(key)
    # A click on the DAG leaves the view where it is; one on the timeline brings the node
    # into view.
    return chosen, grouping_after, (None if trigger == "dag-pick" else key)


@dataclass
class Rings(Outputs):
    """The selection's rings moved, as patches of the drawn figures, and where to look."""

    dag: Any  # a Patch of the DAG's ring trace, or no_update
    timeline: Any  # a Patch of the timeline's ring trace, or no_update
    focus: Any  # {"ranges": axis ranges, "at": time} for clientside.FOCUS, or no_update


def ring(
    view: ViewState,
    *,
    selected: str | None,
    source_id: str | None,
    grouping: Any,
    rings: Any,
    timeline_ring_index: Any,
    focus_request: Any,
) -> Rings:
    """Move the selection rings once the node panel is shown.

    Re-rendering a figure of thousands of nodes blocks the page, so this comes after the
    panel (it waits for it) and patches only the ring traces.
    """
    open_file = view.open(source_id)
    if open_file is None or not isinstance(rings, dict) or selected is None:
        # Nothing selected (the page has just loaded, or a new file is drawn without one).
        return Rings(dash.no_update, dash.no_update, dash.no_update)
    G = open_file.graph
    expanded = open_file.expanded(grouping)
    shown, lay = open_file.view(expanded)
    key = selected if isinstance(selected, str) and selected in G else None
    drawn = key if key is None or key in shown else open_file.drawn_as(key, expanded)
    dag = Patch()
    x, y = ring_at(lay, drawn)
    dag["data"][rings["dag"]]["x"] = x
    dag["data"][rings["dag"]]["y"] = y
    ranges = focus_ranges(lay, drawn) if focus_request == selected else None
    # Moved by the browser (Plotly.relayout, in clientside.FOCUS) once this figure is drawn: a
    # range set here would be lost to a redraw of the DAG still on its way.
    focus = {"ranges": ranges, "at": time.time()} if ranges else dash.no_update
    if not isinstance(timeline_ring_index, int):
        return Rings(dag, dash.no_update, focus)
    timeline = Patch()
    ys, bases, widths = timeline_ring(G, drawn, shown)
    timeline["data"][timeline_ring_index]["y"] = ys
    timeline["data"][timeline_ring_index]["base"] = bases
    timeline["data"][timeline_ring_index]["x"] = widths
    return Rings(dag, timeline, focus)


def hovers(view: ViewState, rings: Any, grouping: Any) -> Any:
    """The nodes' hover texts, patched in once the DAG is drawn (they are most of its bytes:
    1.5 of 2.3 MB at 10,000 nodes, and first paint there took 3.4 s with them, 2.0 without);
    and what the node panel looks up across the graph is built then too
    (``analysis.addresses.prepare``).
    """
    source_id = rings.get("source") if isinstance(rings, dict) else None
    open_file = view.open(source_id)
    if open_file is None:
        return dash.no_update
    G = open_file.graph
    shown, _ = open_file.view(open_file.expanded(grouping))
    prepare(G)  # the panel's look-ups too, once the page is drawn
    dag = Patch()
    for index, texts in node_hovers(shown, rings.get("colour", "type")).items():
        dag["data"][index]["hovertext"] = texts
        dag["data"][index]["hoverinfo"] = "text"
    return dag


@dataclass
class Timeline(Outputs):
    """The timeline drawn for the graph on the page."""

    figure: Any  # the timeline's figure ({} when the file has none)
    style: dict[str, str]  # its pane's style: hidden when there is none
    ring: int | None  # the index of its selection ring trace, for ``ring``
    merged: bool  # whether some row's bars were merged (a zoom then redraws)


def _zoom_of(zoom: Any, source_id: str) -> tuple[float, float] | None:
    """The timeline window the user zoomed to on this source (``timeline-window``), if any."""
    if not isinstance(zoom, dict) or zoom.get("source") != source_id:
        return None
    window = zoom.get("window")
    if isinstance(window, list) and len(window) == 2:
        return float(window[0]), float(window[1])
    return None


def timeline(view: ViewState, rings: Any, grouping: Any, selected: Any, zoom: Any) -> Timeline:
    """The timeline, drawn once the DAG is (``rings`` as ``clientside.WHEN_PAINTED`` passes
    it on): the page is usable before it arrives."""
    source_id = rings.get("source") if isinstance(rings, dict) else None
    open_file = view.open(source_id)
    G = None if open_file is None else open_file.graph
    if open_file is None or G is None or not has_timeline(G):
        return Timeline({}, dict(HIDDEN), None, False)
    expanded = open_file.expanded(grouping)
    shown, _ = open_file.view(expanded)
    key = selected if isinstance(selected, str) and selected in G else None
    rows = open_file.rows(expanded)
    # A redraw of the graph the user has zoomed into keeps the zoom's detail.
    figure = build_timeline(G, key, shown, _zoom_of(zoom, open_file.id), rows)
    return Timeline(figure, {}, len(figure.data) - 1, merges(rows))


@dataclass
class TimelineZoom(Outputs):
    """The timeline redrawn for a zoom, and the window kept for later redraws."""

    figure: Any  # the figure, or no_update
    window: Any  # {"source": id, "window": [start, end] or None}, or no_update


def timeline_zoom(
    view: ViewState,
    relayout: Any,
    *,
    merged: Any,
    source_id: str | None,
    grouping: Any,
    selected: Any,
) -> TimelineZoom:
    """Redraw the zoomed window in more detail, where the whole step had bars merged."""
    window = zoom_window(relayout) if isinstance(relayout, dict) else False
    if window is False or not merged:
        return TimelineZoom(dash.no_update, dash.no_update)  # plotly zooms what it has
    open_file = view.open(source_id)
    if open_file is None:
        return TimelineZoom(dash.no_update, dash.no_update)
    G = open_file.graph
    expanded = open_file.expanded(grouping)
    shown, _ = open_file.view(expanded)
    drawn = selected if isinstance(selected, str) and selected in G else None
    figure = build_timeline(G, drawn, shown, window, open_file.rows(expanded))
    return TimelineZoom(figure, {"source": source_id, "window": list(window) if window else None})
