"""The Dash app: pick a graph, see its DAG, click a node for its details.

``create_app(paths)`` builds it; ``graphscope serve`` runs it on 127.0.0.1:8050 and
``graphscope.app.wsgi:server`` serves it from a WSGI server.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import dash
import networkx as nx
from dash import ALL, Input, Output, State, dcc, html

from .figure import build_figure, has_timing
from .layout import Layout, layout
from .panel import node_panel
from .sources import SUFFIXES, UPLOAD_LIMIT, Registry, sample_files
from .timeline import build_timeline, has_timeline

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
#upload { border: 1px dashed #999; border-radius: 6px; padding: 4px 10px; cursor: pointer; }
"""


def _cards(G: nx.DiGraph) -> list[Any]:
    """Summary cards from the bundle's own figures (none for a DOT file)."""
    t = G.graph.get("timing") if isinstance(G.graph.get("timing"), dict) else {}
    eager = G.graph.get("eager_summary") if isinstance(G.graph.get("eager_summary"), dict) else {}
    cards: list[tuple[str, str]] = [("nodes", f"{G.number_of_nodes()}")]
    if isinstance(t.get("eager_step_us"), (int, float)):
        cards.append(("eager step", f"{t['eager_step_us']:.0f} us"))
    if isinstance(t.get("replay_wall_us"), (int, float)):
        cards.append(("graph replay", f"{t['replay_wall_us']:.0f} us"))
        if isinstance(t.get("eager_step_us"), (int, float)) and t["replay_wall_us"] > 0:
            cards.append(("speedup", f"{t['eager_step_us'] / t['replay_wall_us']:.1f}x"))
    if isinstance(eager.get("cpu_launch_us"), (int, float)) and eager.get("step_us"):
        cards.append(
            ("CPU launch share (eager)", f"{eager['cpu_launch_us'] / eager['step_us']:.0%}")
        )
    if isinstance(eager.get("gpu_idle_pct"), (int, float)):
        cards.append(("GPU idle share (eager)", f"{eager['gpu_idle_pct']:.0f}%"))
    return [html.Div([html.B(value), label], className="card") for label, value in cards]


def _matches(G: nx.DiGraph, text: str) -> tuple[list[str], str | None]:
    """Nodes whose kernel name, module, op or type matches ``text`` (a regex, else a substring)."""
    text = (text or "").strip()
    if not text:
        return [], None
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


def create_app(paths: Iterable[str | Path] = ()) -> dash.Dash:
    """The app over ``paths`` (the bundled samples when there are none)."""
    registry = Registry()
    given = [Path(p) for p in paths]
    for path in given or sample_files():
        registry.add_path(path, str(path) if given else f"sample: {path.name}")
    uploads = Path(tempfile.mkdtemp(prefix="graphscope-uploads-"))
    layouts: dict[str, Layout] = {}

    def graph_of(source_id: str | None) -> nx.DiGraph | None:
        if registry.get(source_id) is None:
            return None
        return registry.load(source_id or "").graph

    def layout_of(source_id: str, G: nx.DiGraph) -> Layout:
        if source_id not in layouts:
            layouts[source_id] = layout(G)
        return layouts[source_id]

    def options() -> list[dict[str, str]]:
        return [{"label": s.label, "value": s.id} for s in registry.sources.values()]

    app = dash.Dash(__name__, title="graphscope", update_title=None)
    app.index_string = app.index_string.replace("{%css%}", "{%css%}<style>" + _CSS + "</style>")
    first = next(iter(registry.sources), None)
    app.layout = html.Div(
        [
            html.Header(
                [
                    html.H1("graphscope"),
                    dcc.Dropdown(
                        id="source",
                        options=options(),
                        value=first,
                        clearable=False,
                        style={"width": "420px"},
                    ),
                    dcc.Upload(
                        html.Div("Drop or pick a .dot / .json / .json.gz"),
                        id="upload",
                        max_size=UPLOAD_LIMIT,
                        accept=",".join(SUFFIXES),
                    ),
                    dcc.RadioItems(
                        id="colour",
                        options=[
                            {"label": " by type", "value": "type"},
                            {"label": " by replay time", "value": "time"},
                        ],
                        value="type",
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
                    html.Span(id="match-count", className="muted"),
                ]
            ),
            html.Div(id="status", style={"padding": "4px 16px"}),
            html.Div(id="cards", className="cards"),
            html.Main(
                [
                    html.Div(
                        [
                            dcc.Graph(id="dag", config={"scrollZoom": True, "displaylogo": False}),
                            # Below the DAG, so that the node panel beside them stays in view.
                            html.Div(
                                dcc.Graph(id="timeline", config={"displaylogo": False}),
                                id="timeline-pane",
                            ),
                        ],
                        id="graph-pane",
                    ),
                    html.Div(
                        html.P("Click a node to see its details.", className="muted"),
                        id="node-panel",
                    ),
                ]
            ),
            dcc.Store(id="selected"),
            dcc.Store(id="matches", data=[]),
        ]
    )

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
        Output("timeline", "figure"),
        Output("timeline-pane", "style"),
        Input("source", "value"),
        Input("colour", "value"),
        Input("search", "value"),
        Input("selected", "data"),
    )
    def draw(
        source_id: str | None, colour: str, search: str | None, selected: str | None
    ) -> tuple[Any, ...]:
        hidden = {"display": "none"}
        source = registry.get(source_id)
        if source is None:
            message = html.Div(
                "No graph to show: give files to graphscope serve, or drop one here.",
                className="muted",
            )
            return {}, hidden, message, [], [], "", {}, hidden
        registry.load(source.id)
        if source.error is not None:
            return (
                {},
                hidden,
                html.Div(source.error, className="error", id="load-error"),
                [],
                [],
                "",
                {},
                hidden,
            )
        G = source.graph
        assert G is not None
        found, warning = _matches(G, search or "")
        notes: list[Any] = []
        if not has_timing(G):
            notes.append(
                html.Div(
                    "This file has no timing (a DOT dump carries none): nodes are coloured by "
                    "type. Capture with graphscope capture to time every node.",
                    className="muted",
                    id="no-timing",
                )
            )
        if warning:
            notes.append(html.Div(f"search: {warning}", className="muted"))
        key = selected if isinstance(selected, str) and selected in G else None
        fig = build_figure(G, layout_of(source.id, G), colour, key, found)
        count = f"{len(found)} matches" if search else ""
        if has_timeline(G):
            timeline, timeline_style = build_timeline(G, key), {}
        else:
            timeline, timeline_style = {}, hidden
        return fig, {}, notes, _cards(G), found, count, timeline, timeline_style

    @app.callback(
        Output("selected", "data"),
        Input("dag", "clickData"),
        Input("timeline", "clickData"),
        Input({"type": "nav", "key": ALL}, "n_clicks"),
        Input("prev", "n_clicks"),
        Input("next", "n_clicks"),
        Input("source", "value"),
        State("matches", "data"),
        State("selected", "data"),
        prevent_initial_call=True,
    )
    def select(
        click: Any,
        timeline_click: Any,
        nav: Any,
        prev: int,
        nxt: int,
        source_id: str,
        matches: list[str],
        current: str | None,
    ) -> Any:
        trigger = dash.ctx.triggered_id
        if trigger == "source":
            return None
        if trigger in ("prev", "next"):
            if not matches:
                return dash.no_update
            step = 1 if trigger == "next" else -1
            index = matches.index(current) + step if current in matches else (0 if step > 0 else -1)
            return matches[index % len(matches)]
        if isinstance(trigger, dict) and trigger.get("type") == "nav":
            if not any(nav):  # the buttons were just drawn, not clicked
                return dash.no_update
            return trigger["key"]
        clicked = timeline_click if trigger == "timeline" else click
        if clicked and clicked.get("points"):
            point = clicked["points"][0]
            return point.get("customdata") or dash.no_update
        return dash.no_update

    @app.callback(
        Output("node-panel", "children"), Input("selected", "data"), State("source", "value")
    )
    def panel(selected: str | None, source_id: str | None) -> Any:
        G = graph_of(source_id)
        if G is None or not isinstance(selected, str) or selected not in G:
            return html.P("Click a node to see its details.", className="muted")
        return node_panel(G, selected)

    return app
