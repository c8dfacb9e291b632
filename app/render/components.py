"""The page's components and styles: what ``callbacks.page`` fills in and the callbacks update.

Every page (graph, report, compare, buckets, catalog) stays mounted, shown or hidden, so the
DAG is not drawn again on a return to it. Component ids are the names callbacks use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dash import dcc, html

from ..files.sources import SUFFIXES
from .shared import DAG, MINIMAP, TIMELINE

CSS = """
body { font-family: system-ui, sans-serif; margin: 0; color: #222; }
header { padding: 8px 16px; border-bottom: 1px solid #ddd; display: flex; gap: 12px;
         align-items: center; flex-wrap: wrap; }
header h1 { font-size: 18px; margin: 0 12px 0 0; }
main { display: flex; gap: 0; }
#graph-pane { flex: 3; min-width: 0; }
#dag-pane { position: relative; }
#minimap { position: absolute; right: 8px; top: 40px; border: 1px solid #bbb;
           background: white; visibility: hidden; }
#node-panel { flex: 2; max-width: 620px; padding: 8px 16px; border-left: 1px solid #ddd;
              overflow: auto; max-height: calc(100vh - 140px); font-size: 13px; }
#node-title { overflow-wrap: anywhere; display: -webkit-box; -webkit-box-orient: vertical;
              -webkit-line-clamp: 3; overflow: hidden; }
.kv th, .kv td:first-child { text-align: left; padding-right: 12px; font-weight: 500;
    color: #555; vertical-align: top; white-space: nowrap; font-family: inherit; }
.kv td, .args td { font-family: ui-monospace, monospace; word-break: break-all; }
.args th, .args td { padding: 1px 6px; text-align: left; vertical-align: top; }
.kv thead { display: none; }  /* a Markdown label/value table's empty header */
.kv table, .args table { border-collapse: collapse; }
.muted { color: #777; }
.error { color: #b00020; font-weight: 500; }
.warn { color: #8a5300; font-weight: 500; }
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
.memory { margin-top: 10px; }
.memory ul { margin-top: 4px; }
.process { font-weight: 500; margin: 10px 0 4px; }
.finding { border-left: 4px solid #999; padding: 4px 12px; margin: 8px 0; }
.finding.warning { border-color: #d62728; } .finding.info { border-color: #1f77b4; }
.finding.unrecorded { max-width: 1188px; } .finding.unrecorded ul { margin: 6px 0 2px; }
.diagnosis { border: 1px solid #ddd; border-radius: 6px; padding: 4px 12px 6px; margin: 6px 0 10px;
             max-width: 1200px; }
.diagnosis h4 { margin: 4px 0; }
.diagnosis .pass { color: #1b7f3b; font-weight: 500; }
#upload { border: 1px dashed #999; border-radius: 6px; padding: 4px 10px; cursor: pointer; }
"""

#: The plots' mode bar with nothing that leaves the machine: plotly.js 4 shows a "Share chart..."
#: button (sendChartToCloud, to cloud.plotly.com) unless told not to, and its logo links out.
OFFLINE = dcc.Graph.Config(displaylogo=False, showSendToCloud=False, plotlyServerURL="")

HIDDEN = {"display": "none"}
#: How long typing in the search box pauses before the search runs, in seconds.
SEARCH_PAUSE_S = 0.4
#: The DAG's colourings, in the picker's order.
COLOURS = ("type", "time", "eager")
#: The pages, in the picker's order, and the id of the component each one shows or hides.
PAGES = {
    "graph": "graph-page",
    "report": "report-page",
    "compare": "compare-wrap",
    "buckets": "buckets-wrap",
    "catalog": "catalog-page",
}


class Outputs:
    """A callback's outputs as a dataclass, one field each, named as ``server.register`` names
    its Outputs."""

    def outputs(self) -> dict[str, Any]:
        """The fields by name, for Dash's dict-style outputs (not copied: a figure is large)."""
        return dict(vars(self))


@dataclass
class Drawing(Outputs):
    """The graph page for one graph, as ``callbacks.draw`` makes it."""

    figure: Any = field(default_factory=dict)  # the DAG, a plotly Figure; {} when none
    minimap: Any = field(default_factory=dict)  # the whole graph, small (figure.minimap)
    style: dict[str, str] = field(default_factory=lambda: dict(HIDDEN))  # the DAG pane's
    status: Any = None  # notes and errors above the DAG
    cards: Any = field(default_factory=list)  # the step's figures (cards.card_divs)
    count: str = ""  # "3 of 17", "17 matches", "no match", or nothing without a search
    rings: dict[str, Any] | None = None  # the selection ring's trace index, source, colour


def no_selection() -> html.P:
    """The node panel before a node is selected."""
    return html.P("Click a node to see its details.", className="muted")


def page_layout(
    drawing: Drawing,
    *,
    options: list[dict[str, str]],
    source_id: str | None,
    bucket_files: list[dict[str, str]],
    catalog: Any,
    start: str,
    colour: str = "type",
    selected: str | None = None,
    grouping: Any = None,
    panel: Any = None,
    report: Any = None,
    buckets: Any = None,
) -> html.Div:
    """The page's components: the graph ``source_id`` as ``drawing`` shows it, ``start`` the
    page shown (``report`` and ``buckets`` its content when it is one of those), the others
    hidden; ``selected``, ``grouping`` and ``panel`` as the address asked."""

    def shown(page: str) -> dict[str, str]:
        return {} if page == start else HIDDEN

    return html.Div(
        [
            html.Header(
                [
                    html.H1("graphscope"),
                    dcc.Dropdown(
                        id="source",
                        options=options,
                        value=source_id,
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
                            {"label": " graph against eager", "value": "eager"},
                        ],
                        value=colour,
                        inline=True,
                    ),
                    dcc.Input(
                        id="search",
                        type="text",
                        placeholder="search as you type: kernel, module, op, type (regex)",
                        # Searched once typing pauses: on Enter alone, nothing said so.
                        debounce=SEARCH_PAUSE_S,
                    ),
                    html.Button("previous", id="prev", n_clicks=0),
                    html.Button("next", id="next", n_clicks=0),
                    html.Span(drawing.count, id="match-count", className="muted"),
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
                    html.Div(drawing.status, id="status", style={"padding": "4px 16px"}),
                    html.Div(drawing.cards, id="cards", className="cards"),
                    html.Main(
                        [
                            html.Div(
                                [
                                    html.Div(
                                        [
                                            dcc.Graph(
                                                id=DAG,
                                                figure=drawing.figure,
                                                config={**OFFLINE, "scrollZoom": True},
                                            ),
                                            # In the DAG's right margin, kept for it when
                                            # the graph opens in part: where the view is in
                                            # the whole graph (figure.minimap).
                                            dcc.Graph(
                                                id=MINIMAP,
                                                figure=drawing.minimap,
                                                config={**OFFLINE, "displayModeBar": False},
                                            ),
                                        ],
                                        id="dag-pane",
                                        style=drawing.style,
                                    ),
                                    # Below the DAG: the node panel beside them stays in view.
                                    html.Div(
                                        dcc.Graph(id=TIMELINE, config=OFFLINE),
                                        id="timeline-pane",
                                    ),
                                ],
                                id="graph-pane",
                            ),
                            html.Div(
                                panel or no_selection(),
                                id="node-panel",
                            ),
                            # The panel's tables are Markdown, whose script Dash loads on the
                            # first one drawn: loaded with the page, not on the first click.
                            dcc.Markdown("", style={"display": "none"}),
                        ]
                    ),
                ],
                id="graph-page",
                style=shown("graph"),
            ),
            html.Div(
                catalog,
                id="catalog-page",
                className="page",
                style=shown("catalog"),
            ),
            html.Div(report, id="report-page", className="page", style=shown("report")),
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
                style=shown("compare"),
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
                            # No min or max: the browser sends a value out of range as
                            # nothing, and the page is to say why it takes none.
                            dcc.Input(
                                id="budget",
                                type="number",
                                placeholder="memory budget, MiB",
                                debounce=True,
                            ),
                        ],
                        className="pickers",
                    ),
                    html.Div(buckets, id="buckets-page"),
                ],
                id="buckets-wrap",
                className="page",
                style=shown("buckets"),
            ),
            dcc.Store(id="selected", data=selected),
            dcc.Store(id="grouping", data=grouping),
            dcc.Store(id="rings", data=drawing.rings),
            dcc.Store(id="painted"),
            dcc.Store(id="dag-pick"),  # the node a click in the DAG is on (assets/gs-2-clicks.js)
            dcc.Store(id="timeline-ring"),
            dcc.Store(id="timeline-merged"),
            dcc.Store(id="timeline-window"),
            dcc.Store(id="timeline-zoom"),
            dcc.Store(id="focus-request"),
            dcc.Store(id="focus"),
            dcc.Store(id="focused"),
            dcc.Store(id="panel-top"),
            dcc.Store(id="keys"),
            dcc.Location(id="url", refresh=False),
        ]
    )
