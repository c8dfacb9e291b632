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
import reprlib
from collections.abc import Callable
from typing import Any

import dash
from dash.exceptions import PreventUpdate

from .components import BUDGET_MIB_MAX, COLOURS, PAGES
from .state import DEFAULTS

log = logging.getLogger(__name__)

#: Why a value is refused, in a few words, or None when it is fine.
Check = Callable[[Any], "str | None"]

_SHORT = reprlib.Repr()  # a value as a message quotes it: short whatever its size or depth
_SHORT.maxstring = _SHORT.maxother = 40
_SHORT.maxlong = 24  # digits, as of an integer of 5,000


def show(value: Any) -> str:
    """``value`` as a message quotes it, at most a few dozen characters."""
    return _SHORT.repr(value)


def anything(value: Any) -> str | None:
    """Any value: a trigger whose value the callback never reads."""
    return None


def text(value: Any) -> str | None:
    """A string."""
    return None if isinstance(value, str) else f"{show(value)} is not text"


def flag(value: Any) -> str | None:
    """True or False."""
    return None if isinstance(value, bool) else f"{show(value)} is not true or false"


def maybe(check: Check) -> Check:
    """None (nothing given or picked), or what ``check`` accepts."""
    return lambda value: None if value is None else check(value)


def one_of(*choices: str) -> Check:
    """One of these strings."""

    def check(value: Any) -> str | None:
        if isinstance(value, str) and value in choices:
            return None
        return f"{show(value)} is not one of {', '.join(choices)}"

    return check


def number(low: float, high: float, whole: bool = False) -> Check:
    """A number from ``low`` to ``high`` (an integer with ``whole``), never a bool. The bounds
    keep ``float()`` of it exact enough and finite: NaN and infinities fail the comparison."""
    kinds = (int,) if whole else (int, float)

    def check(value: Any) -> str | None:
        if isinstance(value, kinds) and not isinstance(value, bool) and low <= value <= high:
            return None
        kind = "a whole number" if whole else "a number"
        return f"{show(value)} is not {kind} from {low:,} to {high:,}"

    return check


def items(check: Check, size: int | None = None) -> Check:
    """A list (of ``size`` items, where given) whose every item ``check`` accepts."""

    def each(value: Any) -> str | None:
        if not isinstance(value, list) or (size is not None and len(value) != size):
            return f"{show(value)} is not a list" + (f" of {size}" if size is not None else "")
        for i, item in enumerate(value):
            if (why := check(item)) is not None:
                return f"item {i}: {why}"
        return None

    return each


def record(required: dict[str, Check], optional: dict[str, Check] | None = None) -> Check:
    """An object with each ``required`` key, and perhaps the ``optional`` ones, each holding
    what its check accepts; other keys are let be (Plotly's click data has many)."""
    optional = optional or {}

    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return f"{show(value)} is not an object"
        for key, inner in required.items():
            if key not in value:
                return f"no {key!r}"
            if (why := inner(value[key])) is not None:
                return f"{key!r}: {why}"
        for key, inner in optional.items():
            if key in value and (why := inner(value[key])) is not None:
                return f"{key!r}: {why}"
        return None

    return check


def budget_mib(value: Any) -> str | None:
    """A memory budget in MiB, as ``graphscope buckets --budget-mib`` takes one: above 0."""
    if number(0, BUDGET_MIB_MAX)(value) is None and value > 0:
        return None
    return f"{show(value)} MiB is not a size: give a number above 0, at most {BUDGET_MIB_MAX:,}"


#: A click count: None until the first click.
CLICKS = maybe(number(0, 2**53, whole=True))
#: Plotly's click data (a ``points`` list); the callbacks read ``points[0].customdata``.
CLICK = maybe(record({"points": items(record({}, {"customdata": anything}))}))
#: The grouping store (``state``): whose it is, how it opens, what is toggled from that.
GROUPING = maybe(
    record(
        {"source": text, "default": one_of(*DEFAULTS), "toggled": items(text)},
        {"compare": maybe(text)},
    )
)
#: The ``rings`` store the draw writes (``painted`` passes it on once the DAG is drawn).
RINGS = maybe(
    record({"dag": number(0, 10_000, whole=True), "source": text, "colour": one_of(*COLOURS)})
)
#: A time on the timeline, in microseconds.
_US = number(-1e15, 1e15)
#: The timeline's relayout data, as ``clientside.X_CHANGES`` passes it on (Plotly's keys).
RELAYOUT = maybe(
    record(
        {},
        {
            "xaxis.range": items(_US, size=2),
            "xaxis.range[0]": _US,
            "xaxis.range[1]": _US,
            "xaxis.autorange": anything,
        },
    )
)

#: Every component property a server callback reads, as ``id.property`` (a pattern-matching
#: id by its ``type``), and what it must hold.
VALUES: dict[str, Check] = {
    "source.value": maybe(text),
    "source.options": items(record({"label": text, "value": text})),
    "colour.value": one_of(*COLOURS),
    "search.value": maybe(text),
    "page.value": one_of(*PAGES),
    "selected.data": maybe(text),
    "focus-request.data": maybe(text),
    "grouping.data": GROUPING,
    "dag-pick.data": CLICK,
    "timeline.clickData": CLICK,
    "prev.n_clicks": CLICKS,
    "next.n_clicks": CLICKS,
    "collapse-all.n_clicks": CLICKS,
    "expand-all.n_clicks": CLICKS,
    "nav.n_clicks": items(CLICKS),
    "collapse.n_clicks": items(CLICKS),
    "open-graph.n_clicks": items(CLICKS),
    "node-panel.children": anything,  # a trigger: the panel has been drawn
    "rings.data": RINGS,
    "painted.data": RINGS,
    "timeline-ring.data": maybe(number(0, 10_000, whole=True)),
    "timeline-merged.data": maybe(flag),
    "timeline-window.data": maybe(record({"source": text, "window": maybe(items(_US, size=2))})),
    "timeline-zoom.data": RELAYOUT,
    "compare-a.value": maybe(text),
    "compare-b.value": maybe(text),
    "buckets-file.value": maybe(text),
    "budget.value": maybe(budget_mib),
    "upload.contents": maybe(text),
    "upload.filename": maybe(text),
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
    return VALUES[name](value)


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
            "app/inputs.py declares no check for what these callbacks read: "
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
            if name not in SHOWN and (why := VALUES[name](value)) is not None:
                log.debug("refused %s: %s", name, why)
                raise PreventUpdate  # Dash's "no change": 204, every output left as it is
        return callback(*values, **dash_keywords)

    checked.checked = True  # type: ignore[attr-defined]  # installed once
    return checked
