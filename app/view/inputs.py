"""What each server callback's inputs and state must hold, checked before the callback runs.

The page sends the values of its components with each callback request, and anyone can send
any JSON in their place: a search that is a number, a budget of 1e308, a store without its
keys. As ``graphscope.load`` checks a file once, at the boundary, ``VALUES`` says once what
each component property read by a server callback must look like (types, ranges, required
keys), and ``install`` puts that check in front of every server callback of ``app.callback_map``.
A value that fails is answered as Dash answers ``PreventUpdate``: no change (204). A property
in ``SHOWN`` is passed on as it came, for its callback to say in the page what is wrong
(``problem``). ``install`` refuses an app with a callback that reads a property ``VALUES``
does not declare, so no callback runs unchecked.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from typing import Any

import dash
from dash.exceptions import PreventUpdate

from graphscope.analysis.buckets import MAX_BUDGET_MIB
from graphscope.contract import (
    TEXT,
    Flag,
    Int,
    ListOf,
    Maybe,
    Num,
    OneOf,
    Problem,
    Record,
    Rule,
    show,
)

from ..render.components import COLOURS, PAGES
from .state import DEFAULTS

log = logging.getLogger(__name__)


class Anything(Rule):
    """Any value: a trigger whose value the callback never reads, or Plotly's own keys."""

    says = "anything"

    def problem(self, value: Any) -> Problem | None:
        return None


class BudgetMiB(Rule):
    """A memory budget in MiB, as ``graphscope buckets --budget-mib`` takes one: above 0; or
    None, no budget (a message for a person, without ``Maybe``'s "or null")."""

    says = f"a size: give a number above 0, at most {MAX_BUDGET_MIB:,}"
    _RANGE = Num(0, MAX_BUDGET_MIB)

    def problem(self, value: Any) -> Problem | None:
        if value is None or (self._RANGE.problem(value) is None and value > 0):
            return None
        return "", f"{show(value)} MiB is not {self.says}"


ANY = Anything()


def _record(required: dict[str, Rule], optional: dict[str, Rule] | None = None) -> Record:
    """An object with each ``required`` key, and perhaps the ``optional`` ones; other keys are
    let be (Plotly's click data has many)."""
    return Record({**required, **(optional or {})}, required, other=ANY)


#: A click count: None until the first click.
CLICKS = Maybe(Int(0, 2**53))
#: Plotly's click data (a ``points`` list); the callbacks read ``points[0].customdata``.
CLICK = Maybe(_record({"points": ListOf(_record({}, {"customdata": ANY}))}))
#: The grouping store (``state``): whose it is, how it opens, what is toggled from that.
GROUPING = Maybe(
    _record(
        {
            "source": TEXT,
            "default": OneOf(DEFAULTS, "a way to open the groups"),
            "toggled": ListOf(TEXT),
        },
        # what the last step through search matches opened, to shut at the next
        {"compare": Maybe(TEXT), "stepped": ListOf(TEXT)},
    )
)
_COLOUR = OneOf(COLOURS, "a colouring")
#: The ``rings`` store the draw writes (``painted`` passes it on once the DAG is drawn).
RINGS = Maybe(_record({"dag": Int(0, 10_000), "source": TEXT, "colour": _COLOUR}))
#: A time on the timeline, in microseconds.
_US = Num(-1e15, 1e15)
#: The timeline's relayout data, as ``clientside.X_CHANGES`` passes it on (Plotly's keys).
RELAYOUT = Maybe(
    _record(
        {},
        {
            "xaxis.range": ListOf(_US, 2),
            "xaxis.range[0]": _US,
            "xaxis.range[1]": _US,
            "xaxis.autorange": ANY,
        },
    )
)
_TEXT = Maybe(TEXT)

#: Every component property a server callback reads, as ``id.property`` (a pattern-matching
#: id by its ``type``), and what it must hold.
VALUES: dict[str, Rule] = {
    "source.value": _TEXT,
    "source.options": ListOf(_record({"label": TEXT, "value": TEXT})),
    "colour.value": _COLOUR,
    "search.value": _TEXT,
    "page.value": OneOf(PAGES, "a page"),
    "selected.data": _TEXT,
    "focus-request.data": _TEXT,
    "grouping.data": GROUPING,
    "dag-pick.data": CLICK,
    "timeline.clickData": CLICK,
    "prev.n_clicks": CLICKS,
    "next.n_clicks": CLICKS,
    "collapse-all.n_clicks": CLICKS,
    "expand-all.n_clicks": CLICKS,
    "nav.n_clicks": ListOf(CLICKS),
    "collapse.n_clicks": ListOf(CLICKS),
    "open-graph.n_clicks": ListOf(CLICKS),
    "node-panel.children": ANY,  # a trigger: the panel has been drawn
    "rings.data": RINGS,
    "painted.data": RINGS,
    "timeline-ring.data": Maybe(Int(0, 10_000)),
    "timeline-merged.data": Maybe(Flag()),
    "timeline-window.data": Maybe(_record({"source": TEXT, "window": Maybe(ListOf(_US, 2))})),
    "timeline-zoom.data": RELAYOUT,
    "compare-a.value": _TEXT,
    "compare-b.value": _TEXT,
    "buckets-file.value": _TEXT,
    "budget.value": BudgetMiB(),
    "upload.contents": _TEXT,
    "upload.filename": _TEXT,
}
#: Properties whose callback shows in the page why a value is refused (a person typed it):
#: they reach the callback as they came, and it asks ``problem``.
SHOWN = frozenset({"budget.value"})


def key(dependency: dict[str, Any]) -> str:
    """``id.property`` of an input or state as ``app.callback_map`` lists it; a pattern-matching
    id (``{"type": "nav", "key": ["ALL"]}``, there as JSON) by its ``type``."""
    ident = dependency["id"]
    if ident.startswith("{"):
        ident = json.loads(ident).get("type", ident)
    return f"{ident}.{dependency['property']}"


def problem(name: str, value: Any) -> str | None:
    """Why ``value`` is not what the property ``name`` (``id.property``) must hold, or None."""
    found = VALUES[name].problem(value)
    return None if found is None else (f"{found[0].lstrip('.')}: " if found[0] else "") + found[1]


def server_callbacks(app: dash.Dash) -> dict[str, dict[str, Any]]:
    """The callbacks the server runs, by output: those of ``app.callback_map`` with a Python
    function (the others run in the browser)."""
    return {output: cb for output, cb in app.callback_map.items() if "callback" in cb}


def undeclared(app: dash.Dash) -> list[str]:
    """``output: id.property`` for each value a server callback reads that ``VALUES`` lacks."""
    return [
        f"{output}: {key(dep)}"
        for output, cb in server_callbacks(app).items()
        for dep in cb["inputs"] + cb["state"]
        if key(dep) not in VALUES
    ]


def install(app: dash.Dash) -> None:
    """Check every server callback's values before it runs (``VALUES``).

    Raises RuntimeError, naming them, when a callback reads a value ``VALUES`` does not
    declare: an app is not started with a callback unchecked.
    """
    if missing := undeclared(app):
        raise RuntimeError(
            "app/view/inputs.py declares no check for what these callbacks read: "
            + "; ".join(missing)
            + " (add each to VALUES)"
        )
    for cb in server_callbacks(app).values():
        if not getattr(cb["callback"], "checked", False):
            cb["callback"] = _checked(cb["callback"], [key(d) for d in cb["inputs"] + cb["state"]])


def _checked(callback: Callable[..., Any], names: list[str]) -> Callable[..., Any]:
    """``callback`` (Dash's wrapper: the inputs' and states' values in order, then Dash's
    keywords) behind the check of each value."""

    @functools.wraps(callback)
    def checked(*values: Any, **dash_keywords: Any) -> Any:
        for name, value in zip(names, values, strict=False):
            if name not in SHOWN and (why := problem(name, value)) is not None:
                log.debug("refused %s: %s", name, why)
                raise PreventUpdate  # Dash's "no change": 204, every output left as it is
        return callback(*values, **dash_keywords)

    checked.checked = True  # type: ignore[attr-defined]  # installed once
    return checked
