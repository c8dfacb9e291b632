"""The Dash app: pick a graph, see its DAG, click a node for its details.

``create_app(paths)`` builds it; ``graphscope serve`` runs it on 127.0.0.1:8050 and
``graphscope.app.wsgi:server`` serves it from a WSGI server.
"""

from __future__ import annotations

import atexit
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import dash
import networkx as nx
from dash import ALL, Input, Output, Patch, State, dcc, html

from graphscope.analysis.buckets import bucket_report
from graphscope.analysis.diff import diff
from graphscope.errors import GraphscopeError
from graphscope.recording import is_recording

from . import pages
from .cards import card_divs as _cards
from .cards import untimed as _untimed
from .figure import build_figure, has_timing, node_hovers, ring_at
from .groups import GROUP, all_groups, collapsed, enclosing, group_levels, overview
from .layout import Layout, layout
from .marks import mark_traces
from .panel import memory_names, node_panel
from .sources import SUFFIXES, RecordedRun, Registry, sample_files, sample_recordings
from .timeline import (
    Row,
    build_timeline,
    has_timeline,
    merges,
    timeline_ring,
    timeline_rows,
    zoom_window,
)

_CSS = """
body { font-family: system-ui, sans-serif; margin: 0; color: #222; }
header { padding: 8px 16px; border-bottom: 1px solid #ddd; display: flex; gap: 12px;
         align-items: center; flex-wrap: wrap; }
header h1 { font-size: 18px; margin: 0 12px 0 0; }
main { display: flex; gap: 0; }
#graph-pane { flex: 3; min-width: 0; }
#node-panel { flex: 2; max-width: 620px; padding: 8px 16px; border-left: 1px solid #ddd;
              overflow: auto; max-height: calc(100vh - 140px); font-size: 13px; }
table.kv th { text-align: left; padding-right: 12px; font-weight: 500; color: #555;
              vertical-align: top; white-space: nowrap; }
table.kv td, table.args td { font-family: ui-monospace, monospace; word-break: break-all; }
table.args th, table.args td { padding: 1px 6px; text-align: left; }
.muted { color: #777; }
.error { color: #b00020; font-weight: 500; }
button.link { border: none; background: none; color: #1a5fb4; cursor: pointer; padding: 0 6px 0 0;
              text-decoration: underline; font-size: 13px; }
.cards { display: flex; gap: 10px; padding: 6px 16px; flex-wrap: wrap; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 4px 10px; font-size: 13px; }
.card b { display: block; font-size: 16px; }
.page { padding: 8px 16px; font-size: 13px; }
.pages { padding: 4px 16px; border-bottom: 1px solid #ddd; font-weight: 500; }
.pages label { margin-right: 18px; cursor: pointer; }
.pickers { display: flex; gap: 12px; margin-bottom: 8px; }
.pickers > * { width: 420px; }
table.data { border-collapse: collapse; }
table.data th, table.data td { padding: 2px 10px; text-align: left; border-bottom: 1px solid #eee; }
table.catalog td:nth-child(n+4):nth-child(-n+9) { white-space: nowrap; }
.process { font-weight: 500; margin: 10px 0 4px; }
.finding { border-left: 4px solid #999; padding: 4px 12px; margin: 8px 0; }
.finding.warning { border-color: #d62728; } .finding.info { border-color: #1f77b4; }
#upload { border: 1px dashed #999; border-radius: 6px; padding: 4px 10px; cursor: pointer; }
"""


#: The plots' mode bar with nothing that leaves the machine: plotly.js 4 shows a "Share chart..."
#: button (sendChartToCloud, to cloud.plotly.com) unless told not to, and its logo links out.
OFFLINE = {"displaylogo": False, "showSendToCloud": False, "plotlyServerURL": ""}

#: A search for the nodes that touch one buffer or segment (a click in the buffers table).
BUFFER_SEARCH = "buffer:"


def _matches(G: nx.DiGraph, text: str) -> tuple[list[str], str | None]:
    """Nodes whose kernel name, module, op or type matches ``text`` (a regex, else a
    substring); ``buffer:NAME`` finds the nodes that touch that buffer or segment."""
    text = (text or "").strip()
    if not text:
        return [], None
    if text.startswith(BUFFER_SEARCH):
        name = text[len(BUFFER_SEARCH) :].strip()
        found = [k for k, d in G.nodes(data=True) if name in memory_names(G, d)]
        found.sort(key=lambda k: (G.nodes[k].get("graph_id", 0), G.nodes[k].get("local_id", 0)))
        return found, None if found else f"no node touches {name!r}"
    try:
        pattern = re.compile(text, re.IGNORECASE)
        warning = None
    except re.error as exc:
        pattern = re.compile(re.escape(text), re.IGNORECASE)
        warning = f"not a regular expression ({exc}); searched for the text as it is"
    found = []
    for key, data in G.nodes(data=True):
        origin = data.get("attribution") if isinstance(data.get("attribution"), dict) else {}
        fields = (
            data.get("name"),
            data.get("short_name"),
            data.get("demangled"),
            data.get("type"),
            origin.get("module"),
            origin.get("op"),
            key,
        )
        if any(isinstance(f, str) and pattern.search(f) for f in fields):
            found.append(key)
    found.sort(key=lambda k: (G.nodes[k].get("graph_id", 0), G.nodes[k].get("local_id", 0)))
    return found, warning


def _drawn_as(levels: dict[str, list[str]], key: str, expanded: set[str]) -> str:
    """The drawn node that holds ``key``: its outermost collapsed group, or itself."""
    for group in levels.get(key, []):
        if group not in expanded:
            return "group:" + group
    return key


def opened(trigger: Any, clicks: list[Any]) -> tuple[Any, Any]:
    """The source and page a click on a catalog link opens (nothing when none was clicked)."""
    if not isinstance(trigger, dict) or not any(clicks or []):
        return dash.no_update, dash.no_update  # the links were just drawn, not clicked
    return trigger.get("source"), "graph"


def default_grouping(source_id: str) -> dict[str, Any]:
    """How a graph opens: its overview (groups.overview), nothing toggled from it.

    ``default`` names the groups open before any toggle: ``overview``, ``expanded`` (all)
    or ``collapsed`` (none); ``toggled`` are the groups opened or closed from there.
    """
    return {"source": source_id, "default": "overview", "toggled": []}


def opened_to(
    state: dict[str, Any], base: set[str], chain: list[str], want: bool = True
) -> dict[str, Any]:
    """``state`` with every group of ``chain`` open (or shut, with ``want`` False); ``base``
    is what its default opens. The same state comes back when nothing changes."""
    toggled = set(state["toggled"])
    for group in chain:
        if ((group in base) != (group in toggled)) != want:
            toggled.symmetric_difference_update({group})
    if toggled == set(state["toggled"]):
        return state
    return {**state, "toggled": sorted(toggled)}


#: How much of the DAG a jump to a node shows around it, in node spacings and rows.
FOCUS_X, FOCUS_Y = 4.0, 5.0


def focus_ranges(lay: Layout, key: str | None) -> dict[str, list[float]] | None:
    """Axis ranges that centre ``key`` and zoom to its neighbourhood (y is drawn reversed)."""
    if key is None or key not in lay.pos:
        return None
    x, y = lay.pos[key]
    return {
        "xaxis.range": [x - FOCUS_X, x + FOCUS_X],
        "yaxis.range": [y + FOCUS_Y, y - FOCUS_Y],
    }


def match_count(matches: Any, selected: Any) -> str:
    """``3 of 17`` when the selected node is a match, else ``17 matches``."""
    if not isinstance(matches, list) or not matches:
        return ""
    if selected in matches:
        return f"{matches.index(selected) + 1} of {len(matches)}"
    return f"{len(matches)} matches"


def _query() -> Any:
    """The page address's query: Dash asks for the layout from ``/_dash-layout``, so the
    address the user opened is the request's referrer."""
    import flask

    if flask.request.args:
        return flask.request.args
    referrer = flask.request.referrer or ""
    return {k: v[0] for k, v in parse_qs(urlparse(referrer).query).items() if v}


def url_state(args: Any) -> dict[str, str]:
    """What a page URL's query asks for (``file``, ``node``, ``view``, ``colour``, and
    ``compare``: the file whose diff to ``file`` is marked in the DAG), as text."""
    keys = ("file", "node", "view", "colour", "compare")
    return {k: str(args.get(k)) for k in keys if isinstance(args.get(k), str) and args.get(k)}


_HIDDEN = {"display": "none"}
PAGES = ("graph", "report", "compare", "buckets", "catalog")

# ``rings`` once the DAG holding it (its ring trace last) is drawn in the page.
_WHEN_PAINTED = """
function(rings) {
  if (!rings) { return rings; }
  const begun = Date.now();
  return new Promise(resolve => {
    const check = () => {
      const gd = document.querySelector('#dag .js-plotly-plot');
      const drawn = gd && gd._fullData && gd.data && gd.data.length === rings.dag + 1
        && gd.querySelector('.scatterlayer .trace, canvas.gl-canvas');
      if (drawn || Date.now() - begun > 30000) {
        requestAnimationFrame(() => setTimeout(() => resolve(rings), 0));
      } else {
        setTimeout(check, 20);
      }
    };
    check();
  });
}
"""


# Move the DAG's view to a node (``focus`` from the ring callback). Through relayout, as a
# user's zoom would be, so that the next redraw (same uirevision) keeps it.
_FOCUS = """
function(focus) {
  if (!focus || !focus.ranges) { return window.dash_clientside.no_update; }
  const begun = Date.now();
  return new Promise(resolve => {
    const move = () => {
      const gd = document.querySelector('#dag .js-plotly-plot');
      if (gd && gd._fullLayout && window.Plotly) {
        window.Plotly.relayout(gd, focus.ranges).then(() => resolve(focus.at));
      } else if (Date.now() - begun < 10000) {
        setTimeout(move, 50);
      } else {
        resolve(window.dash_clientside.no_update);
      }
    };
    move();
  });
}
"""

# A new node in the panel is read from its top.
_PANEL_TOP = """
function(children) {
  const panel = document.getElementById('node-panel');
  if (panel) { panel.scrollTop = 0; }
  return window.dash_clientside.no_update;
}
"""

# The page's state in its address, so that a reload or a shared link restores it.
_TO_URL = """
function(source, selected, page, colour, grouping) {
  const params = new URLSearchParams();
  if (source) { params.set('file', source); }
  if (selected) { params.set('node', selected); }
  if (grouping && grouping.compare && grouping.source === source) {
    params.set('compare', grouping.compare);
  }
  if (page && page !== 'graph') { params.set('view', page); }
  if (colour && colour !== 'type') { params.set('colour', colour); }
  const search = params.toString() ? '?' + params.toString() : '';
  return search === window.location.search ? window.dash_clientside.no_update : search;
}
"""

# Keys: n and p step through search matches; the arrows follow the selected node's edges
# (left and up: what it depends on; right and down: what follows it).
_KEYS = """
function(id) {
  if (window._graphscopeKeys) { return window.dash_clientside.no_update; }
  window._graphscopeKeys = true;
  document.addEventListener('keydown', event => {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (target && (target.tagName === 'INPUT' || target.tagName === 'TEXTAREA'
                   || target.isContentEditable)) { return; }
    const click = selector => {
      const button = document.querySelector(selector);
      if (button) { button.click(); event.preventDefault(); }
    };
    if (event.key === 'n') { click('#next'); }
    else if (event.key === 'p') { click('#prev'); }
    else if (event.key === 'ArrowRight' || event.key === 'ArrowDown') {
      click('#node-successors button.link');
    } else if (event.key === 'ArrowLeft' || event.key === 'ArrowUp') {
      click('#node-predecessors button.link');
    }
  });
  return window.dash_clientside.no_update;
}
"""

_X_CHANGES = """
function(relayout) {
  const moved = relayout && Object.keys(relayout).some(k => k.startsWith('xaxis.'));
  return moved ? relayout : window.dash_clientside.no_update;
}
"""


def _zoom_of(zoom: Any, source_id: str) -> tuple[float, float] | None:
    """The timeline window the user zoomed to on this source (``timeline-window``), if any."""
    if not isinstance(zoom, dict) or zoom.get("source") != source_id:
        return None
    window = zoom.get("window")
    if isinstance(window, list) and len(window) == 2:
        return float(window[0]), float(window[1])
    return None


def _page(
    options: list[dict[str, str]],
    first: str | None,
    fig: Any,
    style: Any,
    status: Any,
    cards: Any,
    found: list[str],
    count: str,
    rings: Any,
    bucket_files: list[dict[str, str]],
    catalog: list[Any],
    start: str,
    *,
    colour: str = "type",
    selected: str | None = None,
    grouping: Any = None,
    panel: Any = None,
) -> html.Div:
    """The page's components, holding the first graph as ``draw`` would have drawn it."""
    return html.Div(
        [
            html.Header(
                [
                    html.H1("graphscope"),
                    dcc.Dropdown(
                        id="source",
                        options=options,
                        value=first,
                        clearable=False,
                        style={"width": "420px"},
                    ),
                    dcc.Upload(
                        html.Div("Drop or pick a .dot / .json / .json.gz"),
                        id="upload",
                        # No limit in the browser: it would drop a large file without a word.
                        # The server refuses one over UPLOAD_LIMIT and says so in the page.
                        max_size=-1,
                        accept=",".join(SUFFIXES),
                    ),
                    dcc.RadioItems(
                        id="colour",
                        options=[
                            {"label": " by type", "value": "type"},
                            {"label": " by replay time", "value": "time"},
                        ],
                        value=colour,
                        inline=True,
                    ),
                    dcc.Input(
                        id="search",
                        type="text",
                        placeholder="search: kernel, module, op (regex)",
                        debounce=True,
                    ),
                    html.Button("previous", id="prev", n_clicks=0),
                    html.Button("next", id="next", n_clicks=0),
                    html.Span(count, id="match-count", className="muted"),
                    html.Button("collapse all", id="collapse-all", n_clicks=0),
                    html.Button("expand all", id="expand-all", n_clicks=0),
                ]
            ),
            # The page picker; the pages below all stay mounted, shown or hidden.
            dcc.RadioItems(
                id="page",
                options=[{"label": f" {name}", "value": name} for name in PAGES],
                value=start,
                inline=True,
                className="pages",
            ),
            # Every page stays in the page, shown or hidden: the DAG is not redrawn on return.
            html.Div(
                [
                    html.Div(status, id="status", style={"padding": "4px 16px"}),
                    html.Div(cards, id="cards", className="cards"),
                    html.Main(
                        [
                            html.Div(
                                [
                                    dcc.Graph(
                                        id="dag",
                                        figure=fig,
                                        style=style,
                                        config={"scrollZoom": True, **OFFLINE},
                                    ),
                                    # Below the DAG: the node panel beside them stays in view.
                                    html.Div(
                                        dcc.Graph(id="timeline", config=OFFLINE),
                                        id="timeline-pane",
                                    ),
                                ],
                                id="graph-pane",
                            ),
                            html.Div(
                                panel
                                or html.P("Click a node to see its details.", className="muted"),
                                id="node-panel",
                            ),
                        ]
                    ),
                ],
                id="graph-page",
                style=_HIDDEN if start != "graph" else {},
            ),
            html.Div(
                catalog,
                id="catalog-page",
                className="page",
                style=_HIDDEN if start != "catalog" else {},
            ),
            html.Div(id="report-page", className="page", style=_HIDDEN),
            html.Div(
                [
                    html.Div(
                        [
                            dcc.Dropdown(id="compare-a", options=options, placeholder="A"),
                            dcc.Dropdown(id="compare-b", options=options, placeholder="B"),
                        ],
                        className="pickers",
                    ),
                    html.Div(
                        html.P("Pick two graphs: what changed from A to B.", className="muted"),
                        id="compare-page",
                    ),
                ],
                id="compare-wrap",
                className="page",
                style=_HIDDEN,
            ),
            html.Div(
                [
                    html.Div(
                        [
                            dcc.Dropdown(
                                id="buckets-file",
                                options=bucket_files,
                                value=bucket_files[0]["value"] if bucket_files else None,
                                placeholder="a <model>.buckets.json",
                            ),
                            dcc.Input(
                                id="budget",
                                type="number",
                                min=0,
                                placeholder="memory budget, MiB",
                                debounce=True,
                            ),
                        ],
                        className="pickers",
                    ),
                    html.Div(id="buckets-page"),
                ],
                id="buckets-wrap",
                className="page",
                style=_HIDDEN,
            ),
            dcc.Store(id="selected", data=selected),
            dcc.Store(id="grouping", data=grouping),
            dcc.Store(id="rings", data=rings),
            dcc.Store(id="painted"),
            dcc.Store(id="timeline-ring"),
            dcc.Store(id="timeline-merged"),
            dcc.Store(id="timeline-window"),
            dcc.Store(id="timeline-zoom"),
            dcc.Store(id="matches", data=found),
            dcc.Store(id="focus-request"),
            dcc.Store(id="focus"),
            dcc.Store(id="focused"),
            dcc.Store(id="panel-top"),
            dcc.Store(id="keys"),
            dcc.Location(id="url", refresh=False),
        ]
    )


def create_app(paths: Iterable[str | Path] = (), preload: bool = True) -> dash.Dash:
    """The app over ``paths`` (the bundled samples when there are none).

    With ``preload`` the first file is read and laid out before this returns, so that the
    page is quick from its first request (``graphscope serve`` prints the address after).
    """
    registry = Registry()
    given = [Path(p) for p in paths]
    runs: list[RecordedRun] = []
    if given:
        files = [p for p in given if not is_recording(p)]
        for path in given:
            if is_recording(path):
                runs.append(registry.add_recording(path, str(path)))
    else:
        files = sample_files()
        runs = [registry.add_recording(p, f"sample: {p.name}") for p in sample_recordings()]
    for path in files:
        registry.add_path(path, str(path) if given else f"sample: {path.name}")
    # Graphs given as files come first in the picker; a recording alone opens on its catalog.
    order = list(registry.sources)
    if files:
        order = order[-len(files) :] + order[: -len(files)]
    elif runs:  # open on the graph replayed most: an engine's first graph may be empty
        used = [
            (g["replays"], run.sources[(rec.name, g["id"])])
            for run in runs
            for rec in run.recordings
            for g in rec.graphs
            if (rec.name, g["id"]) in run.sources
        ]
        if used:
            busiest = max(used)[1]
            order.remove(busiest)
            order.insert(0, busiest)
    registry.sources = {k: registry.sources[k] for k in order}
    start = "catalog" if runs and not files else "graph"
    folders = sorted({p.resolve().parent for p in files})
    bucket_files = [
        {"label": str(f) if given else f"sample: {f.name}", "value": str(f)}
        for folder in folders
        for f in sorted(folder.glob("*.buckets.json"))
    ]
    uploads = Path(tempfile.mkdtemp(prefix="graphscope-uploads-"))
    atexit.register(shutil.rmtree, uploads, ignore_errors=True)  # dropped files go with the app
    levels_cache: dict[str, dict[str, list[str]]] = {}
    overviews: dict[str, set[str]] = {}  # the groups each graph opens with
    # The last few drawn views (collapsed graph and layout) by source and expanded groups.
    views: dict[tuple[str, frozenset[str]], tuple[nx.DiGraph, Layout]] = {}
    timelines: dict[tuple[str, frozenset[str]], list[Row]] = {}

    def graph_of(source_id: str | None) -> nx.DiGraph | None:
        if registry.get(source_id) is None:
            return None
        return registry.load(source_id or "").graph

    def levels_of(source_id: str, G: nx.DiGraph) -> dict[str, list[str]]:
        if source_id not in levels_cache:
            levels_cache[source_id] = group_levels(G)
        return levels_cache[source_id]

    def base_of(source_id: str, G: nx.DiGraph, default: str) -> set[str]:
        """The groups open before any toggle, for a state's ``default``."""
        if default == "collapsed":
            return set()
        if default == "expanded":
            return all_groups(levels_of(source_id, G))
        if source_id not in overviews:
            overviews[source_id] = overview(levels_of(source_id, G))
        return overviews[source_id]

    def expanded_of(source_id: str, G: nx.DiGraph, state: Any) -> set[str]:
        """Expanded groups from the page's state: a default and the groups toggled from it."""
        groups = all_groups(levels_of(source_id, G))
        state = state if isinstance(state, dict) and state.get("source") == source_id else None
        if state is None:
            state = default_grouping(source_id)
        return (base_of(source_id, G, state["default"]) ^ set(state["toggled"])) & groups

    def view_of(source_id: str, G: nx.DiGraph, expanded: set[str]) -> tuple[nx.DiGraph, Layout]:
        key = (source_id, frozenset(expanded))
        if key not in views:
            if len(views) > 8:
                views.pop(next(iter(views)))
            shown = collapsed(G, levels_of(source_id, G), expanded)
            views[key] = (shown, layout(shown))
        return views[key]

    def rows_of(source_id: str, G: nx.DiGraph, expanded: set[str]) -> list[Row]:
        """The timeline's rows, kept: a zoom redraws from them (1.4 million calls at 100k)."""
        key = (source_id, frozenset(expanded))
        if key not in timelines:
            if len(timelines) > 4:
                timelines.pop(next(iter(timelines)))
            shown, _ = view_of(source_id, G, expanded)
            timelines[key] = timeline_rows(G, shown)
        return timelines[key]

    def options() -> list[dict[str, str]]:
        return [{"label": s.label, "value": s.id} for s in registry.sources.values()]

    def render(
        source_id: str | None,
        colour: str,
        search: str | None,
        grouping: Any,
        selected: str | None,
        new_source: bool,
        focus: str | None = None,
    ) -> tuple[Any, ...]:
        """The whole page for a graph; a selection alone only moves the rings (``rings``).

        With ``focus`` equal to the selected node, the view is centred on it.
        """
        hidden = {"display": "none"}
        source = registry.get(source_id)
        if source is None:
            message = html.Div(
                "No graph to show: give files to graphscope serve, or drop one here.",
                className="muted",
            )
            return {}, hidden, message, [], [], "", None
        registry.load(source.id)
        if source.error is not None:
            return (
                {},
                hidden,
                html.Div(source.error, className="error", id="load-error"),
                [],
                [],
                "",
                None,
            )
        G = source.graph
        assert G is not None
        found, warning = _matches(G, search or "")
        notes: list[Any] = []
        if not has_timing(G):
            notes.append(html.Div(_untimed(G), className="muted", id="no-timing"))
        if warning:
            notes.append(html.Div(f"search: {warning}", className="muted"))
        key = selected if isinstance(selected, str) and selected in G else None
        if new_source:
            key = None  # a new file: what was selected belonged to the last one
        expanded = expanded_of(source.id, G, grouping)
        shown, lay = view_of(source.id, G, expanded)
        drawn = {
            k: k if k in shown else _drawn_as(levels_of(source.id, G), k, expanded) for k in found
        }
        ring = (
            key
            if key is None or key in shown
            else _drawn_as(levels_of(source.id, G), key, expanded)
        )
        collapsed_groups = sum(1 for _, d in shown.nodes(data=True) if d.get("type") == GROUP)
        if collapsed_groups:
            notes.append(
                html.Div(
                    f"{collapsed_groups} group{'s' if collapsed_groups != 1 else ''} collapsed "
                    f"({G.number_of_nodes()} nodes in all): click a square to expand it.",
                    className="muted",
                    id="collapsed-note",
                )
            )
        fig = build_figure(shown, lay, colour, ring, sorted(set(drawn.values())), hover=False)
        # The file compared with (``?compare=``, kept in the grouping state by ``page``): what
        # changed from it is ringed, before the selection ring, which stays the last trace.
        against = registry.get(grouping.get("compare")) if isinstance(grouping, dict) else None
        if against is not None and grouping.get("source") == source.id:
            registry.load(against.id)
            if against.graph is None:
                notes.append(html.Div(f"compare: {against.error}", className="error"))
            else:
                d = diff(against.graph, G)
                levels = levels_of(source.id, G)
                marks = mark_traces(
                    lay,
                    d.added,
                    pages.changed_keys(d),
                    lambda k: k if k in shown else _drawn_as(levels, k, expanded),
                )
                # Plotly takes new traces only at the end, then any order of those it holds.
                fig.add_traces(marks)
                ring_trace = fig.data[-len(marks) - 1]
                fig.data = (*fig.data[: -len(marks) - 1], *fig.data[-len(marks) :], ring_trace)
                folded = any(str(k).startswith("group:") for t in marks for k in t.customdata)
                notes.insert(0, pages.compare_note(d, against.id, against.label, folded))
        ranges = focus_ranges(lay, ring) if key is not None and focus == key else None
        if ranges:  # the ring callback's move could come before this figure: both move
            fig.update_layout(
                xaxis_range=ranges["xaxis.range"],
                yaxis_range=ranges["yaxis.range"],
                yaxis_autorange=False,
            )
        count = match_count(found, key) if search else ""
        rings = {"dag": len(fig.data) - 1, "source": source.id, "colour": colour}
        return fig, {}, notes, _cards(G), found, count, rings

    # None turns the "Updating..." tab title off; Dash's annotation says str only.
    app = dash.Dash(__name__, title="graphscope", update_title=None)  # type: ignore[arg-type]
    app.index_string = app.index_string.replace("{%css%}", "{%css%}<style>" + _CSS + "</style>")
    first = next(iter(registry.sources), None)

    def panel_of(source_id: str | None, selected: Any, grouping: Any) -> Any:
        """The node panel for the selected node, with collapse links for its open groups."""
        G = graph_of(source_id)
        if G is None or source_id is None or not isinstance(selected, str) or selected not in G:
            return html.P("Click a node to see its details.", className="muted")
        expanded = expanded_of(source_id, G, grouping)
        return node_panel(G, selected, enclosing(levels_of(source_id, G), selected, expanded))

    def page() -> html.Div:
        """The page, arriving with the first graph drawn, or with the file, node, page and
        colouring its address asks for (``?file=f2&node=graph_1_node_40&view=graph``).

        Drawing it here rather than in a callback saves the page a round trip after it loads
        (measured: about 0.1 s of a first paint of 1.1 s at 1,000 nodes).
        """
        import flask

        asked = url_state(_query()) if flask.has_request_context() else {}
        source_id = asked["file"] if registry.get(asked.get("file")) is not None else first
        colour = asked.get("colour") if asked.get("colour") in ("type", "time") else "type"
        view = asked["view"] if asked.get("view") in PAGES else start
        node, grouping = None, None
        G = graph_of(source_id) if asked.get("node") else None
        if G is not None and source_id is not None and asked["node"] in G:
            node = asked["node"]
            state = default_grouping(source_id)
            base = base_of(source_id, G, state["default"])
            grouping = opened_to(state, base, levels_of(source_id, G).get(node, []))
        if source_id is not None and registry.get(asked.get("compare")) is not None:
            # In the grouping state, so that a redraw (a group opened, a search) keeps the marks.
            grouping = {**(grouping or default_grouping(source_id)), "compare": asked["compare"]}
        fig, style, status, cards, found, count, rings = render(
            source_id, colour, None, grouping, node, node is None, node
        )
        return _page(
            options(),
            source_id,
            fig,
            style,
            status,
            cards,
            found,
            count,
            rings,
            bucket_files,
            pages.catalog_page(runs),
            view,
            colour=colour,
            selected=node,
            grouping=grouping,
            panel=panel_of(source_id, node, grouping),
        )

    app.layout = page

    @app.callback(
        Output("graph-page", "style"),
        Output("report-page", "style"),
        Output("compare-wrap", "style"),
        Output("buckets-wrap", "style"),
        Output("catalog-page", "style"),
        Input("page", "value"),
        prevent_initial_call=True,
    )
    def show_page(page: str) -> tuple[Any, ...]:
        return tuple({} if page == name else _HIDDEN for name in PAGES)

    @app.callback(
        Output("source", "value", allow_duplicate=True),
        Output("page", "value"),
        Input({"type": "open-graph", "source": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def open_graph(clicks: list[Any]) -> tuple[Any, Any]:
        """A graph id clicked in the catalog: show that graph."""
        return opened(dash.ctx.triggered_id, clicks)

    @app.callback(
        Output("report-page", "children"),
        Input("page", "value"),
        Input("source", "value"),
        prevent_initial_call=True,
    )
    def report_view(page: str, source_id: str | None) -> Any:
        if page != "report":
            return dash.no_update
        return _analysis(source_id, lambda G: pages.report_page(G, source_id))

    @app.callback(
        Output("compare-a", "options"),
        Output("compare-b", "options"),
        Input("source", "options"),
        prevent_initial_call=True,
    )
    def compare_options(choices: Any) -> tuple[Any, Any]:
        return choices, choices

    @app.callback(
        Output("compare-page", "children"),
        Input("page", "value"),
        Input("compare-a", "value"),
        Input("compare-b", "value"),
        prevent_initial_call=True,
    )
    def compare_view(page: str, a: str | None, b: str | None) -> Any:
        if page != "compare" or not a or not b:
            return dash.no_update
        A = _analysis(a, lambda G: G)
        if not isinstance(A, nx.DiGraph):
            return A
        return _analysis(b, lambda B: pages.compare_page(A, B, a=a, b=b))

    @app.callback(
        Output("buckets-page", "children"),
        Input("page", "value"),
        Input("buckets-file", "value"),
        Input("budget", "value"),
        prevent_initial_call=True,
    )
    def buckets_view(page: str, path: str | None, budget: Any) -> Any:
        if page != "buckets":
            return dash.no_update
        if not path or path not in {f["value"] for f in bucket_files}:
            return html.P(
                "No buckets file here: graphscope capture writes <model>.buckets.json beside "
                "the bundles it makes; give a bundle in that folder to graphscope serve.",
                className="muted",
            )
        limit = int(float(budget) * 2**20) if isinstance(budget, (int, float)) else None
        try:
            report = bucket_report(path, budget_bytes=limit)
        except GraphscopeError as exc:
            return html.Div(str(exc), className="error")
        # A bucket's bundle links to its graph where the app has that file.
        ids = {s.path.resolve(): s.id for s in registry.sources.values() if not s.uploaded}
        folder = Path(path).resolve().parent
        bundles = {b.batch_size: folder / b.bundle for b in report.buckets if b.bundle}
        found = {size: ids[f] for size, f in bundles.items() if f in ids}
        return pages.buckets_page(report, found)

    def _analysis(source_id: str | None, make: Callable[[nx.DiGraph], Any]) -> Any:
        """``make(G)`` for a source, or the source's one-line error as the page shows it."""
        source = registry.get(source_id)
        if source is None:
            return html.P("Pick a graph.", className="muted")
        registry.load(source.id)
        if source.error is not None or source.graph is None:
            return html.Div(source.error, className="error")
        return make(source.graph)

    @app.callback(
        Output("source", "options", allow_duplicate=True),
        Input("source", "value"),
        prevent_initial_call=True,
    )
    def mark_failed(source_id: str | None) -> Any:
        """A file is read when first shown: one that fails is marked in the list then."""
        source = registry.get(source_id)
        if source is None or registry.load(source.id).error is None:
            return dash.no_update
        return options()

    @app.callback(
        Output("source", "options"),
        Output("source", "value"),
        Input("upload", "contents"),
        State("upload", "filename"),
        prevent_initial_call=True,
    )
    def uploaded(contents: str | None, filename: str | None) -> tuple[Any, Any]:
        if not contents:
            return dash.no_update, dash.no_update
        source = registry.add_upload(filename or "upload", contents, uploads)
        return options(), source.id

    @app.callback(
        Output("dag", "figure"),
        Output("dag", "style"),
        Output("status", "children"),
        Output("cards", "children"),
        Output("matches", "data"),
        Output("match-count", "children"),
        Output("rings", "data"),
        Input("source", "value"),
        Input("colour", "value"),
        Input("search", "value"),
        Input("grouping", "data"),
        State("selected", "data"),
        State("focus-request", "data"),
        # The page arrives with the first graph drawn (see ``page``).
        prevent_initial_call=True,
    )
    def draw(
        source_id: str | None,
        colour: str,
        search: str | None,
        grouping: Any,
        selected: str | None,
        focus: str | None,
    ) -> tuple[Any, ...]:
        return render(
            source_id,
            colour,
            search,
            grouping,
            selected,
            dash.ctx.triggered_id == "source",
            focus if dash.ctx.triggered_id == "grouping" else None,
        )

    app.clientside_callback(  # type: ignore[no-untyped-call]
        _FOCUS, Output("focused", "data"), Input("focus", "data"), prevent_initial_call=True
    )
    app.clientside_callback(  # type: ignore[no-untyped-call]
        _PANEL_TOP,
        Output("panel-top", "data"),
        Input("node-panel", "children"),
        prevent_initial_call=True,
    )
    app.clientside_callback(  # type: ignore[no-untyped-call]
        _TO_URL,
        Output("url", "search"),
        Input("source", "value"),
        Input("selected", "data"),
        Input("page", "value"),
        Input("colour", "value"),
        Input("grouping", "data"),
    )
    app.clientside_callback(  # type: ignore[no-untyped-call]
        _KEYS, Output("keys", "data"), Input("keys", "id")
    )

    @app.callback(
        Output("search", "value"),
        Input({"type": "buffer", "name": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def find_buffer(clicks: list[Any]) -> Any:
        """A buffer or segment clicked in the panel: every node that touches it, as matches."""
        trigger = dash.ctx.triggered_id
        if not isinstance(trigger, dict) or not any(clicks or []):
            return dash.no_update  # the buttons were just drawn, not clicked
        return BUFFER_SEARCH + str(trigger.get("name"))

    @app.callback(
        Output("match-count", "children", allow_duplicate=True),
        Input("selected", "data"),
        State("matches", "data"),
        prevent_initial_call=True,
    )
    def counted(selected: Any, matches: Any) -> str:
        return match_count(matches, selected)

    # What is drawn after the DAG (hover texts, the timeline) waits until the browser has
    # painted it: fetched at once, it arrived first and held up the first paint.
    app.clientside_callback(  # type: ignore[no-untyped-call]
        _WHEN_PAINTED, Output("painted", "data"), Input("rings", "data")
    )

    @app.callback(
        Output("timeline", "figure"),
        Output("timeline-pane", "style"),
        Output("timeline-ring", "data"),
        Output("timeline-merged", "data"),
        Input("painted", "data"),
        State("grouping", "data"),
        State("selected", "data"),
        State("timeline-window", "data"),
    )
    def timeline_view(
        rings: Any, grouping: Any, selected: str | None, zoom: Any
    ) -> tuple[Any, Any, Any, bool]:
        """The timeline, drawn once the DAG is: the page is usable before it arrives."""
        hidden = {"display": "none"}
        source_id = rings.get("source") if isinstance(rings, dict) else None
        G = graph_of(source_id)
        if G is None or source_id is None or not has_timeline(G):
            return {}, hidden, None, False
        expanded = expanded_of(source_id, G, grouping)
        shown, _ = view_of(source_id, G, expanded)
        key = selected if isinstance(selected, str) and selected in G else None
        rows = rows_of(source_id, G, expanded)
        # A redraw of the graph the user has zoomed into keeps the zoom's detail.
        window = _zoom_of(zoom, source_id)
        timeline = build_timeline(G, key, shown, window, rows)
        return timeline, {}, len(timeline.data) - 1, merges(rows)

    # Only relayouts that move the x axis go to the server: plotly also reports resizes, and a
    # request for one sent while a zoom's redraw is on its way makes Dash drop that redraw.
    app.clientside_callback(  # type: ignore[no-untyped-call]
        _X_CHANGES, Output("timeline-zoom", "data"), Input("timeline", "relayoutData")
    )

    @app.callback(
        Output("timeline", "figure", allow_duplicate=True),
        Output("timeline-window", "data"),
        Input("timeline-zoom", "data"),
        State("timeline-merged", "data"),
        State("source", "value"),
        State("grouping", "data"),
        State("selected", "data"),
        prevent_initial_call=True,
    )
    def timeline_zoom(
        relayout: Any, merged: Any, source_id: str | None, grouping: Any, selected: str | None
    ) -> Any:
        """Redraw the zoomed window in more detail, where the whole step had bars merged."""
        window = zoom_window(relayout) if isinstance(relayout, dict) else False
        if window is False or not merged:
            return dash.no_update, dash.no_update  # plotly zooms what it has: all bars are drawn
        G = graph_of(source_id)
        if G is None or source_id is None:
            return dash.no_update, dash.no_update
        expanded = expanded_of(source_id, G, grouping)
        shown, _ = view_of(source_id, G, expanded)
        drawn = selected if isinstance(selected, str) and selected in G else None
        figure = build_timeline(G, drawn, shown, window, rows_of(source_id, G, expanded))
        return figure, {"source": source_id, "window": list(window) if window else None}

    @app.callback(
        Output("dag", "figure", allow_duplicate=True),
        Input("painted", "data"),
        State("grouping", "data"),
        prevent_initial_call="initial_duplicate",
    )
    def hovers(rings: Any, grouping: Any) -> Any:
        """The nodes' hover texts, patched in once the DAG is drawn (they are most of its bytes:
        1.5 of 2.3 MB at 10,000 nodes, and first paint there took 3.4 s with them, 2.0 without).
        """
        source_id = rings.get("source") if isinstance(rings, dict) else None
        G = graph_of(source_id)
        if G is None or source_id is None:
            return dash.no_update
        shown, _ = view_of(source_id, G, expanded_of(source_id, G, grouping))
        dag = Patch()
        for index, texts in node_hovers(shown, rings.get("colour", "type")).items():
            dag["data"][index]["hovertext"] = texts
            dag["data"][index]["hoverinfo"] = "text"
        return dag

    @app.callback(
        Output("dag", "figure", allow_duplicate=True),
        Output("timeline", "figure", allow_duplicate=True),
        Output("focus", "data"),
        Input("node-panel", "children"),
        State("selected", "data"),
        State("source", "value"),
        State("grouping", "data"),
        State("rings", "data"),
        State("timeline-ring", "data"),
        State("focus-request", "data"),
        prevent_initial_call=True,
    )
    def ring(
        _panel: Any,
        selected: str | None,
        source_id: str | None,
        grouping: Any,
        rings: Any,
        timeline_ring_index: Any,
        focus_request: Any,
    ) -> Any:
        """Move the selection rings once the node panel is shown.

        Re-rendering a figure of thousands of nodes blocks the page, so it comes after the
        panel (this callback waits for it) and patches only the ring traces.
        """
        G = graph_of(source_id)
        if G is None or source_id is None or not isinstance(rings, dict) or selected is None:
            # Nothing selected (the page has just loaded, or a new file is drawn without one).
            return dash.no_update, dash.no_update, dash.no_update
        expanded = expanded_of(source_id, G, grouping)
        shown, lay = view_of(source_id, G, expanded)
        key = selected if isinstance(selected, str) and selected in G else None
        drawn = (
            key
            if key is None or key in shown
            else _drawn_as(levels_of(source_id, G), key, expanded)
        )
        dag = Patch()
        x, y = ring_at(lay, drawn)
        dag["data"][rings["dag"]]["x"] = x
        dag["data"][rings["dag"]]["y"] = y
        ranges = focus_ranges(lay, drawn) if focus_request == selected else None
        # Moved by the browser (Plotly.relayout, in _FOCUS) once this figure is drawn: a
        # range set here would be lost to a redraw of the DAG still on its way.
        focus = {"ranges": ranges, "at": time.time()} if ranges else dash.no_update
        if not isinstance(timeline_ring_index, int):
            return dag, dash.no_update, focus
        timeline = Patch()
        ys, bases, widths = timeline_ring(G, drawn, shown)
        timeline["data"][timeline_ring_index]["y"] = ys
        timeline["data"][timeline_ring_index]["base"] = bases
        timeline["data"][timeline_ring_index]["x"] = widths
        return dag, timeline, focus

    @app.callback(
        Output("selected", "data"),
        Output("grouping", "data"),
        Output("focus-request", "data"),
        Output("node-panel", "children"),
        Input("dag", "clickData"),
        Input("timeline", "clickData"),
        Input({"type": "nav", "key": ALL}, "n_clicks"),
        Input({"type": "collapse", "group": ALL}, "n_clicks"),
        Input("prev", "n_clicks"),
        Input("next", "n_clicks"),
        Input("collapse-all", "n_clicks"),
        Input("expand-all", "n_clicks"),
        Input("source", "value"),
        State("matches", "data"),
        State("selected", "data"),
        State("grouping", "data"),
        prevent_initial_call=True,
    )
    def interact(*args: Any) -> tuple[Any, Any, Any, Any]:
        """``choose``, and the panel for what it chose, in the same round trip (a panel of
        its own waited for this callback's answer: two round trips per click)."""
        source_id, current, grouping = args[8], args[10], args[11]
        selected, grouping_after, focus = choose(*args)
        if selected is dash.no_update and grouping_after is dash.no_update:
            return selected, grouping_after, focus, dash.no_update
        key = current if selected is dash.no_update else selected
        state = grouping if grouping_after is dash.no_update else grouping_after
        return selected, grouping_after, focus, panel_of(source_id, key, state)

    def choose(
        click: Any,
        timeline_click: Any,
        nav: Any,
        collapse: Any,
        prev: int,
        nxt: int,
        collapse_all: int,
        expand_all: int,
        source_id: str,
        matches: list[str],
        current: str | None,
        grouping: Any,
    ) -> tuple[Any, Any, Any]:
        """What a click does: select a node (opening the groups it is in) or fold groups.

        The third output asks for the view to move to the node (``focus-request``): on a
        search step, a link, or a timeline click, not on a click in the DAG itself.
        """
        trigger = dash.ctx.triggered_id
        G = graph_of(source_id)
        if trigger == "source" or G is None:
            return None, None, None
        state = (
            grouping if isinstance(grouping, dict) and grouping.get("source") == source_id else None
        )
        state = dict(state or default_grouping(source_id))
        levels = levels_of(source_id, G)
        base = base_of(source_id, G, state["default"])

        def show(key: str) -> tuple[Any, Any, Any]:
            after = opened_to(state, base, levels.get(key, []))
            # Already in view: leave the grouping, and the figure, alone.
            return key, (dash.no_update if after is state else after), key

        def fold(group: str) -> tuple[Any, Any, Any]:
            return dash.no_update, opened_to(state, base, [group], want=False), None

        nothing = (dash.no_update, dash.no_update, dash.no_update)
        if trigger in ("collapse-all", "expand-all"):
            mode = "collapsed" if trigger == "collapse-all" else "expanded"
            return dash.no_update, {"source": source_id, "default": mode, "toggled": []}, None
        if trigger in ("prev", "next"):
            if not matches:
                return nothing
            step = 1 if trigger == "next" else -1
            index = matches.index(current) + step if current in matches else (0 if step > 0 else -1)
            return show(matches[index % len(matches)])
        if isinstance(trigger, dict) and trigger.get("type") in ("nav", "collapse"):
            pressed = nav if trigger["type"] == "nav" else collapse
            if not any(pressed):  # the buttons were just drawn, not clicked
                return nothing
            if trigger["type"] == "collapse":
                return fold(trigger["group"])
            return show(trigger["key"])
        clicked = timeline_click if trigger == "timeline" else click
        if not (clicked and clicked.get("points")):
            return nothing
        key = clicked["points"][0].get("customdata")
        if not isinstance(key, str):
            return nothing
        if key.startswith("group:"):
            return dash.no_update, opened_to(state, base, [key[len("group:") :]]), None
        if key not in G:
            return nothing
        selected, grouping_after, _ = show(key)
        # A click on the DAG leaves the view where it is; one on the timeline brings the
        # node into view.
        return selected, grouping_after, (None if trigger == "dag" else key)

    if preload and first is not None:
        source = registry.load(first)
        if source.graph is not None:
            G = source.graph
            view_of(first, G, expanded_of(first, G, None))
    return app
