"""The Dash app: pick a graph, see its DAG, click a node for its details.

``create_app(paths)`` builds it; ``graphscope serve`` runs it on 127.0.0.1:8050 and
``graphscope.app.wsgi:server`` serves it from a WSGI server. The page's components are in
``components``, the view state in ``state``, the callbacks in ``callbacks`` (the graph page)
and ``page_callbacks`` (the rest), those run in the browser in ``clientside``; ``register``
here wires them to Dash, each callback's inputs named as its function's parameters.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import dash
import flask
from dash import ALL, Input, Output, State

from ..render import shared
from ..render.components import CSS, PAGES
from ..view import callbacks, clientside, inputs, page_callbacks
from ..view.state import ViewState
from . import guard, protocol

_ASSETS = Path(__file__).resolve().parent.parent / "assets"


def create_app(
    paths: Iterable[str | Path] = (),
    preload: bool = True,
    say: Callable[[str], None] | None = None,
) -> dash.Dash:
    """The app over ``paths`` (the bundled samples when there are none).

    With ``preload`` the first file is read and laid out before this returns, so that the
    page is quick from its first request (``graphscope serve`` prints the address after).
    ``say`` is given the one line of each file that fails to load, as it fails (a path that is
    not a file at once, the first file as it is preloaded, the others when first opened):
    ``graphscope serve`` prints them on the terminal, not only in the page.
    """
    view = ViewState.over(paths)
    # None turns the "Updating..." tab title off; Dash's annotation says str only.
    app = dash.Dash(
        __name__,
        title="graphscope",
        update_title=None,  # type: ignore[arg-type]
        assets_folder=str(_ASSETS),  # app/assets, beside this folder
    )
    # Localhost names only and a capped body, however the app is run; `serve --host` and the
    # WSGI entry point install it again with the names they open it to.
    guard.install(app.server)
    # The page's styles, and what the page's script shares with the figures (shared.py),
    # in the head: before any asset's script runs.
    head = "<style>" + CSS + "</style>" + shared.script()
    app.index_string = app.index_string.replace("{%css%}", "{%css%}" + head)
    app.layout = lambda: callbacks.page(view, _asked())
    register(app, view)
    # Every callback's values checked before it runs, and every request's shape before Dash
    # reads it: what a client sends is answered, or refused in a line, never a 500.
    inputs.install(app)
    protocol.install(app)
    if say is not None:
        for source in view.registry.sources.values():
            if source.error is not None:  # not a file: it failed as it was listed
                say(source.error)
        view.registry.say = say  # and each file that fails as it is read, from now on
    if preload:
        view.preload()
    quiet_startup()
    return app


#: What werkzeug's server says, in red, each time it starts (``BaseWSGIServer.log_startup``).
DEV_SERVER_WARNING = "WARNING: This is a development server."


class _StartupFilter(logging.Filter):
    """Drops werkzeug's development-server warning from its start-up record, and nothing
    else: its address lines, each request and every error are logged as before."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not isinstance(record.msg, str) or DEV_SERVER_WARNING not in record.msg:
            return True
        lines = [x for x in record.msg.splitlines() if DEV_SERVER_WARNING not in x]
        record.msg = "\n".join(lines)
        return bool(lines)


def quiet_startup() -> None:
    """Keep werkzeug from printing its development-server warning at every start of
    ``graphscope serve``: a local viewer is what that server is for, and the red line read
    as an error. A filter on werkzeug's logger, added once, rather than a lower log level,
    which would hide its errors too."""
    logger = logging.getLogger("werkzeug")
    if not any(isinstance(f, _StartupFilter) for f in logger.filters):
        logger.addFilter(_StartupFilter())


def _asked() -> dict[str, str]:
    """What the address the page was opened at asks for (``callbacks.url_state``).

    Dash asks for the layout from ``/_dash-layout``, so that address is the request's
    referrer; a layout made outside a request asks for nothing.
    """
    if not flask.has_request_context():
        return {}
    if flask.request.args:
        return callbacks.url_state(flask.request.args)
    referrer = flask.request.referrer or ""
    try:
        query = {k: v[0] for k, v in parse_qs(urlparse(referrer).query).items() if v}
    except ValueError:  # a header that is no address ("http://[x"): it asks for nothing
        return {}
    return callbacks.url_state(query)


def register(app: dash.Dash, view: ViewState) -> None:
    """Wire the callbacks, of the server and of the browser, to the page's components."""
    _register_graph_page(app, view)
    _register_other_pages(app, view)
    _register_clientside(app)


def _register_graph_page(app: dash.Dash, view: ViewState) -> None:
    @app.callback(
        output={
            "figure": Output(shared.DAG, "figure"),
            "minimap": Output(shared.MINIMAP, "figure"),
            "style": Output("dag-pane", "style"),
            "status": Output("status", "children"),
            "cards": Output("cards", "children"),
            "count": Output("match-count", "children"),
            "rings": Output("rings", "data"),
        },
        inputs={
            "source_id": Input("source", "value"),
            "colour": Input("colour", "value"),
            "search": Input("search", "value"),
            "grouping": Input("grouping", "data"),
        },
        state={
            "selected": State("selected", "data"),
            "focus_request": State("focus-request", "data"),
        },
        # The page arrives with its graph drawn (callbacks.page).
        prevent_initial_call=True,
    )
    def draw(focus_request: Any, **values: Any) -> dict[str, Any]:
        trigger = dash.ctx.triggered_id
        return callbacks.draw(
            view,
            **values,
            new_source=trigger == "source",
            focus=focus_request if trigger == "grouping" else None,
        ).outputs()

    @app.callback(
        output={
            "selected": Output("selected", "data"),
            "grouping": Output("grouping", "data"),
            "focus_request": Output("focus-request", "data"),
            "panel": Output("node-panel", "children"),
            "count": Output("match-count", "children", allow_duplicate=True),
        },
        inputs={
            "dag_click": Input("dag-pick", "data"),
            "timeline_click": Input(shared.TIMELINE, "clickData"),
            "nav_clicks": Input({"type": "nav", "key": ALL}, "n_clicks"),
            "collapse_clicks": Input({"type": "collapse", "group": ALL}, "n_clicks"),
            # Told apart by the trigger alone.
            "buttons": (
                Input("prev", "n_clicks"),
                Input("next", "n_clicks"),
                Input("collapse-all", "n_clicks"),
                Input("expand-all", "n_clicks"),
            ),
            "source_id": Input("source", "value"),
        },
        state={
            "search": State("search", "value"),
            "selected": State("selected", "data"),
            "grouping": State("grouping", "data"),
        },
        prevent_initial_call=True,
    )
    def interact(buttons: Any, **values: Any) -> dict[str, Any]:
        return callbacks.interact(view, dash.ctx.triggered_id, **values).outputs()

    @app.callback(
        output={
            "dag": Output(shared.DAG, "figure", allow_duplicate=True),
            "timeline": Output(shared.TIMELINE, "figure", allow_duplicate=True),
            "focus": Output("focus", "data"),
        },
        inputs={"panel": Input("node-panel", "children")},
        state={
            "selected": State("selected", "data"),
            "source_id": State("source", "value"),
            "grouping": State("grouping", "data"),
            "rings": State("rings", "data"),
            "timeline_ring_index": State("timeline-ring", "data"),
            "focus_request": State("focus-request", "data"),
        },
        prevent_initial_call=True,
    )
    def ring(panel: Any, **values: Any) -> dict[str, Any]:
        return callbacks.ring(view, **values).outputs()

    @app.callback(
        Output(shared.DAG, "figure", allow_duplicate=True),
        Input("painted", "data"),
        State("grouping", "data"),
        prevent_initial_call="initial_duplicate",
    )
    def hovers(rings: Any, grouping: Any) -> Any:
        return callbacks.hovers(view, rings, grouping)

    @app.callback(
        output={
            "figure": Output(shared.TIMELINE, "figure"),
            "style": Output("timeline-pane", "style"),
            "ring": Output("timeline-ring", "data"),
            "merged": Output("timeline-merged", "data"),
        },
        inputs={"rings": Input("painted", "data")},
        state={
            "grouping": State("grouping", "data"),
            "selected": State("selected", "data"),
            "zoom": State("timeline-window", "data"),
        },
    )
    def timeline(**values: Any) -> dict[str, Any]:
        return callbacks.timeline(view, **values).outputs()

    @app.callback(
        output={
            "figure": Output(shared.TIMELINE, "figure", allow_duplicate=True),
            "window": Output("timeline-window", "data"),
        },
        inputs={"relayout": Input("timeline-zoom", "data")},
        state={
            "merged": State("timeline-merged", "data"),
            "source_id": State("source", "value"),
            "grouping": State("grouping", "data"),
            "selected": State("selected", "data"),
        },
        prevent_initial_call=True,
    )
    def timeline_zoom(**values: Any) -> dict[str, Any]:
        return callbacks.timeline_zoom(view, **values).outputs()


def _register_other_pages(app: dash.Dash, view: ViewState) -> None:
    @app.callback(
        output={name: Output(component, "style") for name, component in PAGES.items()},
        inputs={"page": Input("page", "value")},
        prevent_initial_call=True,
    )
    def show_page(page: str) -> dict[str, Any]:
        return page_callbacks.show_page(page)

    @app.callback(
        output={
            "source": Output("source", "value", allow_duplicate=True),
            "page": Output("page", "value"),
        },
        inputs={"clicks": Input({"type": "open-graph", "source": ALL, "at": ALL}, "n_clicks")},
        prevent_initial_call=True,
    )
    def open_graph(clicks: list[Any]) -> dict[str, Any]:
        return page_callbacks.open_graph(dash.ctx.triggered_id, clicks).outputs()

    @app.callback(
        Output("report-page", "children"),
        Input("page", "value"),
        Input("source", "value"),
        prevent_initial_call=True,
    )
    def report(page: str, source_id: str | None) -> Any:
        return page_callbacks.report(view, page, source_id)

    @app.callback(
        Output("compare-a", "options"),
        Output("compare-b", "options"),
        Input("source", "options"),
        prevent_initial_call=True,
    )
    def compare_options(choices: Any) -> tuple[Any, Any]:
        return choices, choices  # both pickers list what the file list does

    @app.callback(
        Output("compare-page", "children"),
        inputs={
            "page": Input("page", "value"),
            "a": Input("compare-a", "value"),
            "b": Input("compare-b", "value"),
        },
        prevent_initial_call=True,
    )
    def compare(**values: Any) -> Any:
        return page_callbacks.compare(view, **values)

    @app.callback(
        Output("buckets-page", "children"),
        inputs={
            "page": Input("page", "value"),
            "path": Input("buckets-file", "value"),
            "budget": Input("budget", "value"),
        },
        prevent_initial_call=True,
    )
    def buckets(**values: Any) -> Any:
        return page_callbacks.buckets(view, **values)

    @app.callback(
        Output("source", "options", allow_duplicate=True),
        Input("source", "value"),
        prevent_initial_call=True,
    )
    def mark_failed(source_id: str | None) -> Any:
        return page_callbacks.mark_failed(view, source_id)

    @app.callback(
        output={"options": Output("source", "options"), "value": Output("source", "value")},
        inputs={"contents": Input("upload", "contents")},
        state={"filename": State("upload", "filename")},
        prevent_initial_call=True,
    )
    def uploaded(**values: Any) -> dict[str, Any]:
        return page_callbacks.uploaded(view, **values).outputs()


def _register_clientside(app: dash.Dash) -> None:
    wire: Callable[..., Any] = app.clientside_callback  # Dash's carries no annotations
    wire(
        clientside.FOCUS,
        Output("focused", "data"),
        Input("focus", "data"),
        prevent_initial_call=True,
    )
    wire(
        clientside.PANEL_TOP,
        Output("panel-top", "data"),
        Input("node-panel", "children"),
        prevent_initial_call=True,
    )
    wire(
        clientside.TO_URL,
        Output("url", "search"),
        Input("source", "value"),
        Input("selected", "data"),
        Input("page", "value"),
        Input("colour", "value"),
        Input("grouping", "data"),
    )
    wire(clientside.KEYS, Output("keys", "data"), Input("keys", "id"))
    # In the browser: the panel's buffer links are drawn on every click, and a server callback
    # on them was a round trip each time, to learn that none was clicked.
    wire(
        clientside.FIND_BUFFER,
        Output("search", "value"),
        Input({"type": "buffer", "name": ALL, "at": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    wire(clientside.WHEN_PAINTED, Output("painted", "data"), Input("rings", "data"))
    wire(
        clientside.X_CHANGES,
        Output("timeline-zoom", "data"),
        Input(shared.TIMELINE, "relayoutData"),
    )
