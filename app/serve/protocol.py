"""What the server answers besides the callbacks' values: a callback request of the wrong
shape, a path that names no page or file, any HTTP error, each a 4xx with one plain line.

Dash trusts the body of ``/_dash-update-component``: ``{}``, an output no callback has, a
callback that runs in the browser, ``inputs`` that is a string, a trigger that names no input,
JSON nested 100,000 deep each ended in a 500. ``body_problem`` checks the body against the
callback it names in ``app.callback_map`` (its outputs, inputs and state, in order) before
Dash reads it; the values themselves are ``inputs``'s to check. Dash checks a
``/_dash-component-suites/`` path against the files it registered, and answered one it has not
(``..``, ``%2e%2e``, a NUL, a name of its own) with a 500: that is a 404 here; so is every path
that no route but Dash's catch-all takes (this app has one page, at the root). Flask's own
4xx pages (405, 413, 415, a body that is no JSON) are turned to the same plain line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import dash
import flask
from dash.exceptions import DependencyException
from werkzeug.exceptions import (
    BadRequest,
    HTTPException,
    MethodNotAllowed,
    NotFound,
    UnsupportedMediaType,
)

from graphscope.contract import show

from ..view.inputs import server_callbacks

#: The most items a pattern-matching input may list (a link per node of a panel or group).
MAX_MATCHES = 100_000


@dataclass(frozen=True)
class Dependency:
    """An output, input or state as a callback declares it, and what a request gives for it."""

    id: str | dict[str, Any]  # a pattern-matching id's wildcards are lists: {"key": ["ALL"]}
    property: str

    @classmethod
    def listed(cls, entry: dict[str, Any]) -> Dependency:
        """From ``app.callback_map``'s form: a pattern-matching id there is JSON."""
        ident = entry["id"]
        return cls(json.loads(ident) if ident.startswith("{") else ident, entry["property"])

    def names(self, ident: Any) -> bool:
        """Whether a request's ``ident`` is this id, or matches its pattern. The page's
        pattern-matching ids hold strings (node keys, group names, source ids)."""
        if isinstance(self.id, str):
            return bool(ident == self.id)
        return (
            isinstance(ident, dict)
            and ident.keys() == self.id.keys()
            and all(
                isinstance(v, str) if isinstance(self.id[k], list) else v == self.id[k]
                for k, v in ident.items()
            )
        )

    def problem(self, given: Any, where: str) -> str | None:
        """Why ``given`` is not this dependency as a request lists it, or None."""
        if isinstance(self.id, str):
            return self._item_problem(given, where)
        if not isinstance(given, list) or len(given) > MAX_MATCHES:
            return f"{where} is not a list of {self.shown()} (at most {MAX_MATCHES:,})"
        return next(
            (why for i, g in enumerate(given) if (why := self._item_problem(g, f"{where}[{i}]"))),
            None,
        )

    def _item_problem(self, item: Any, where: str) -> str | None:
        if (
            isinstance(item, dict)
            and self.names(item.get("id"))
            and isinstance(item.get("property"), str)
            # An output that others share is named with a suffix: "figure@<hash>".
            and item["property"].partition("@")[0] == self.property
        ):
            return None
        return f"{where} is {show(item)}, not {self.shown()}"

    def shown(self) -> str:
        return f'{{"id": {json.dumps(self.id)}, "property": "{self.property}"}}'


@dataclass(frozen=True)
class Shape:
    """What a request for one server callback must hold."""

    outputs: tuple[Dependency, ...]
    multi: bool  # outputs listed (several), or one given alone
    inputs: tuple[Dependency, ...]
    state: tuple[Dependency, ...]

    @classmethod
    def of(cls, cb: dict[str, Any]) -> Shape:
        """From an entry of ``app.callback_map``."""
        declared = cb["output"]
        multi = isinstance(declared, list)
        outputs = tuple(
            Dependency(o.component_id, o.component_property)
            for o in (declared if multi else [declared])
        )
        return cls(
            outputs,
            multi,
            tuple(map(Dependency.listed, cb["inputs"])),
            tuple(map(Dependency.listed, cb["state"])),
        )

    def problem(self, body: dict[str, Any]) -> str | None:
        """Why ``body`` is not a request for this callback, or None."""
        outputs = body.get("outputs")
        listed = outputs if self.multi else [outputs]
        if not (isinstance(listed, list) and len(listed) == len(self.outputs)):
            return f"'outputs' is not a list of {len(self.outputs)}"
        for i, (want, given) in enumerate(zip(self.outputs, listed, strict=True)):
            if why := want.problem(given, f"outputs[{i}]" if self.multi else "'outputs'"):
                return why
        for part, declared in (("inputs", self.inputs), ("state", self.state)):
            # The page leaves 'state' out when a callback has none.
            given = body.get(part, [] if not declared else None)
            if not isinstance(given, list) or len(given) != len(declared):
                return f"{part!r} is not a list of {len(declared)}"
            for i, (want, item) in enumerate(zip(declared, given, strict=True)):
                if why := want.problem(item, f"{part}[{i}]"):
                    return why
        return self._changed_problem(body)

    def _changed_problem(self, body: dict[str, Any]) -> str | None:
        """``changedPropIds``: the inputs that changed, each ``id.property`` of an input the
        request lists (Dash reads a pattern-matching id back from its JSON)."""
        changed = body.get("changedPropIds", [])
        if not isinstance(changed, list):
            return "'changedPropIds' is not a list"
        listed = [
            (item["id"], item["property"].partition("@")[0])
            for given in body["inputs"]
            for item in (given if isinstance(given, list) else [given])
        ]
        for prop_id in changed:
            ident: Any = None
            prop = ""
            if isinstance(prop_id, str):
                ident, _, prop = prop_id.rpartition(".")
                if ident.startswith("{"):
                    try:
                        ident = json.loads(ident)
                    except (ValueError, RecursionError):
                        ident = None
            if ident is None or (ident, prop) not in listed:
                return f"'changedPropIds' names {show(prop_id)}, which is no input of this request"
        return None


@dataclass
class Requests:
    """The checks made before Flask routes a request to Dash (a ``before_request`` function)."""

    app: dash.Dash
    shapes: dict[str, Shape] = field(default_factory=dict)  # by output, made on first use

    def __post_init__(self) -> None:
        prefix = str(self.app.config.routes_pathname_prefix)
        self.catchall = prefix + "<path:path>"  # the endpoints, as Dash names them
        self.update = prefix + "_dash-update-component"

    def __call__(self) -> None:
        rule = flask.request.url_rule
        if rule is None:  # Flask answers 404 or 405 itself
            return
        if rule.endpoint == self.catchall:
            # Dash's catch-all: every path serves the page, for apps of several pages. This
            # one has its page at the root: another path is a file that is not there.
            raise NotFound(f"nothing at {show(flask.request.path)}; the dashboard is at /")
        if rule.endpoint == self.update and flask.request.method == "POST":
            try:
                body = flask.request.get_json()  # kept by Flask: Dash reads it from there
            except UnsupportedMediaType:
                raise UnsupportedMediaType(
                    "a callback request is JSON (application/json)"
                ) from None
            except BadRequest:
                raise BadRequest("the body is not JSON") from None
            except RecursionError:  # Python's json gives up past 1,000 levels, with this
                raise BadRequest("the body's JSON is nested too deeply") from None
            if (why := self.body_problem(body)) is not None:
                raise BadRequest(f"not a callback request of this page: {why}")

    def body_problem(self, body: Any) -> str | None:
        """Why ``body`` is not a request for a server callback of the app, or None."""
        if not isinstance(body, dict):
            return f"the body is {show(body)}, not an object"
        output = body.get("output")
        if not isinstance(output, str):
            return f"'output' is {show(output)}, not a callback's outputs"
        shape = self.shapes.get(output)
        if shape is None:
            cb = server_callbacks(self.app).get(output)
            if cb is None:
                return f"no callback of the server has the outputs {show(output)}"
            shape = self.shapes[output] = Shape.of(cb)
        return shape.problem(body)


def plain(error: HTTPException) -> flask.Response:
    """An HTTP error as one plain line (Flask's are HTML pages), with its headers (a 405's
    ``Allow``)."""
    response = error.get_response()
    line = f"graphscope: {error.code} {error.name}"
    if isinstance(error, MethodNotAllowed) and error.valid_methods:
        line += f": this address takes {', '.join(error.valid_methods)}"
    elif error.description != type(error).description:  # werkzeug's stock text says no more
        line += f": {error.description}"
    response.set_data(" ".join(line.split("\n")) + "\n")
    response.mimetype = "text/plain"
    response.headers["X-Content-Type-Options"] = "nosniff"  # the line may quote the request
    return response  # type: ignore[return-value]  # a werkzeug Response, which Flask sends


def _unknown_file(error: DependencyException) -> flask.Response:
    # Dash's own check of the path against the files it serves: it names no such file.
    return plain(NotFound(f"no file {show(flask.request.path)}"))


def install(app: dash.Dash) -> Requests:
    """Check each request's shape before Dash sees it, and answer every refusal in one line."""
    requests = Requests(app)
    server = app.server
    server.before_request(requests)
    server.register_error_handler(HTTPException, plain)
    server.register_error_handler(DependencyException, _unknown_file)
    return requests
