"""The callbacks of the page picker, the file list, and the report, compare, buckets and
catalog pages, as plain functions (as in ``callbacks``: ``ViewState`` first, then the page's
values; ``dash.no_update`` leaves an output as it is)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dash
import networkx as nx
from dash import html

from graphscope.analysis.buckets import bucket_report
from graphscope.errors import GraphscopeError

from ..render import pages
from ..render.components import HIDDEN, PAGES, Outputs
from . import inputs
from .state import ViewState


def show_page(page: str) -> dict[str, dict[str, str]]:
    """Each page's style, by page name: the one picked shown, the others hidden."""
    return {name: {} if page == name else dict(HIDDEN) for name in PAGES}


@dataclass
class Opened(Outputs):
    """A graph opened from a link on the catalog."""

    source: Any  # its source id, or no_update
    page: Any  # "graph", or no_update


def open_graph(trigger: Any, clicks: Sequence[Any]) -> Opened:
    """The graph a click on a catalog link opens (nothing when none was clicked)."""
    if not isinstance(trigger, dict) or not any(clicks or []):
        return Opened(dash.no_update, dash.no_update)  # the links were just drawn, not clicked
    return Opened(trigger.get("source"), "graph")


def _analysis(view: ViewState, source_id: str | None, make: Callable[[nx.DiGraph], Any]) -> Any:
    """``make(G)`` for a source, or the source's one-line error as the page shows it."""
    source = view.registry.get(source_id)
    if source is None:
        return html.P("Pick a graph.", className="muted")
    G, error = view.registry.graph_of(source.id)
    if G is None:
        return html.Div(error, className="error")
    return make(G)


def report(view: ViewState, page: str, source_id: str | None) -> Any:
    """The report page of the file shown, drawn when the page is picked."""
    if page != "report":
        return dash.no_update
    return _analysis(view, source_id, lambda G: pages.report_page(G, source_id))


def compare(view: ViewState, page: str, a: str | None, b: str | None) -> Any:
    """What changed from graph ``a`` to graph ``b``, once both are picked."""
    if page != "compare" or not a or not b:
        return dash.no_update
    A = _analysis(view, a, lambda G: G)
    if not isinstance(A, nx.DiGraph):
        return A
    return _analysis(view, b, lambda B: pages.compare_page(A, B, a=a, b=b))


def buckets(view: ViewState, page: str, path: str | None, budget: Any) -> Any:
    """The buckets page for one of the listed ``*.buckets.json``, within a memory budget (in
    MiB, as the page sends it: anything, ``inputs.SHOWN``)."""
    if page != "buckets":
        return dash.no_update
    if not path or path not in {f["value"] for f in view.bucket_files}:
        return html.P(
            "No buckets file here: graphscope capture writes <model>.buckets.json beside "
            "the bundles it makes; give a bundle in that folder to graphscope serve.",
            className="muted",
        )
    # The budget is what a person typed: one that is no size is said, not dropped silently.
    why = inputs.problem("budget.value", budget)
    limit = int(budget * 2**20) if budget is not None and why is None else None
    try:
        found = bucket_report(path, budget_bytes=limit)
    except GraphscopeError as exc:
        return html.Div(str(exc), className="error")
    # A bucket's bundle links to its graph where the app has that file.
    ids = {s.path.resolve(): s.id for s in view.registry.sources.values() if not s.uploaded}
    folder = Path(path).resolve().parent
    bundles = {b.batch_size: folder / b.bundle for b in found.buckets if b.bundle}
    shown = pages.buckets_page(found, {size: ids[f] for size, f in bundles.items() if f in ids})
    if why is None:
        return shown
    said = f"memory budget: {why}; every bucket is shown, without a best set."
    return [html.Div(said, className="error", id="budget-error"), *shown]


def mark_failed(view: ViewState, source_id: str | None) -> Any:
    """A file is read when first shown: one that fails is marked in the list then."""
    source = view.registry.get(source_id)
    if source is None or view.registry.load(source.id).error is None:
        return dash.no_update
    return view.options()


@dataclass
class Upload(Outputs):
    """A dropped file, listed and picked."""

    options: Any  # the file list with it, or no_update
    value: Any  # its source id, or no_update


def uploaded(view: ViewState, contents: str | None, filename: str | None) -> Upload:
    """A file dropped on the page: added to the list (with its error if it fails) and shown."""
    if not contents:
        return Upload(dash.no_update, dash.no_update)
    source = view.registry.add_upload(filename or "upload", contents, view.upload_folder())
    return Upload(view.options(), source.id)
