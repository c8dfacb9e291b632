"""What a client can send the dashboard's server, answered or refused in one plain line, never
with a 500 (issue 24, classes 10 to 12); through Flask's test client, no browser.

Each class of request is tested by what it is, not by one request an outside campaign sent:
values a callback reads that are not what the page holds (``app/view/inputs.py``), callback
requests of the wrong shape and asset paths that name no file (``app/serve/protocol.py``), and
every route Flask has with every method and odd headers. ``benchmarks/_fuzz_server.py``
sends thousands more.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dash")

import dash
from dash import Input, Output, State
from graphscope.app.serve.server import create_app

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "samples" / "bundles"
LLAMA = BUNDLES / "tiny-llama-b1.json.gz"
BUCKETS = str(BUNDLES / "tiny-llama.buckets.json")
NODE = "graph_1_node_47"
UPDATE = "/_dash-update-component"


@pytest.fixture(scope="module")
def app() -> dash.Dash:
    return create_app([LLAMA, ROOT / "samples" / "dot" / "torch-ops" / "flags-verbose.dot"])


@pytest.fixture(scope="module")
def props(app: dash.Dash) -> dict[str, dict[str, Any]]:
    """Each component of the page with an id: its props, as the browser first has them."""
    found: dict[str, dict[str, Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("props"), dict) and isinstance(node["props"].get("id"), str):
                found[node["props"]["id"]] = node["props"]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(app.server.test_client().get("/_dash-layout").get_json())
    return found


def body(
    app: dash.Dash, props: dict[str, dict[str, Any]], output: str, values: dict[str, Any]
) -> dict[str, Any]:
    """A request for the server callback whose outputs include ``output`` (``id.property``)
    and that the first of ``values`` (``id.property``: value) triggers, as the page sends
    one: each input and state from ``values``, else from the page."""
    changed = next(iter(values))
    name, cb = next(
        (k, c)
        for k, c in app.callback_map.items()
        if "callback" in c  # run by the server
        if output in [f"{o.component_id}.{o.component_property}" for o in _outputs(c)]
        and changed in [f"{i['id']}.{i['property']}" for i in c["inputs"]]
    )

    def item(ref: dict[str, Any]) -> Any:
        if ref["id"].startswith("{"):
            return []  # no pattern-matching component drawn
        key = f"{ref['id']}.{ref['property']}"
        value = values[key] if key in values else props.get(ref["id"], {}).get(ref["property"])
        return {"id": ref["id"], "property": ref["property"], "value": value}

    outputs = [{"id": o.component_id, "property": o.component_property} for o in _outputs(cb)]
    return {
        "output": name,
        "outputs": outputs if isinstance(cb["output"], list) else outputs[0],
        "inputs": [item(i) for i in cb["inputs"]],
        "state": [item(s) for s in cb["state"]],
        "changedPropIds": [changed],
    }


def _outputs(cb: dict[str, Any]) -> list[Any]:
    return cb["output"] if isinstance(cb["output"], list) else [cb["output"]]


def post(app: dash.Dash, payload: Any) -> Any:
    """``payload`` to the callback endpoint, as JSON (NaN and Infinity as JavaScript has
    them: Python's json reads them back)."""
    data = json.dumps(payload, allow_nan=True)
    return app.server.test_client().post(UPDATE, data=data, content_type="application/json")


def is_plain_line(response: Any) -> bool:
    """A refusal as the server words them: one line of plain text, no page, no traceback."""
    text = response.get_data(as_text=True)
    return (
        response.mimetype == "text/plain"
        and text.startswith("graphscope: ")
        and text.count("\n") == 1
        and "Traceback" not in text
    )


# Class 10: values a callback reads, of the wrong type, range or keys.
@pytest.mark.parametrize(
    ("output", "values"),
    [
        ("status.children", {"search.value": 5}),
        ("status.children", {"search.value": ["mm"]}),
        ("status.children", {"grouping.data": {"source": "f0"}}),  # no default, no toggled
        ("status.children", {"colour.value": {"by": "time"}}),
        ("node-panel.children", {"dag-pick.data": {"points": 7}, "source.value": "f0"}),
        ("node-panel.children", {"dag-pick.data": {"points": ["x"]}, "source.value": "f0"}),
        (
            "node-panel.children",
            {"next.n_clicks": 1, "source.value": "f0", "grouping.data": {"source": "f0"}},
        ),
        (
            "focus.data",  # the ring: a rings store without its trace index
            {
                "node-panel.children": None,
                "selected.data": NODE,
                "source.value": "f0",
                "rings.data": {"source": "f0", "colour": "type"},
            },
        ),
        ("timeline-window.data", {"timeline-zoom.data": {"xaxis.range": [1]}}),
        (
            "timeline-window.data",
            {"timeline-zoom.data": {"xaxis.range[0]": 0, "xaxis.range[1]": 10**400}},
        ),
        ("timeline-ring.data", {"painted.data": {"dag": "x", "source": "f0", "colour": "type"}}),
        (
            "timeline-ring.data",
            {
                "painted.data": {"dag": 1, "source": "f0", "colour": "type"},
                "timeline-window.data": {"source": "f0", "window": ["a", "b"]},
            },
        ),
        ("buckets-page.children", {"page.value": "buckets", "buckets-file.value": [BUCKETS]}),
        ("report-page.children", {"page.value": ["report"]}),
        ("source.value", {"upload.contents": 5, "upload.filename": "x.dot"}),
    ],
)
def test_a_callback_value_the_page_never_holds_changes_nothing(
    app: dash.Dash, props: dict[str, dict[str, Any]], output: str, values: dict[str, Any]
) -> None:
    response = post(app, body(app, props, output, values))
    assert response.status_code == 204, response.get_data(as_text=True)[:500]


@pytest.mark.parametrize("budget", [1e308, math.nan, math.inf, -5, 0, "8"])
def test_a_budget_that_is_no_size_is_said_in_the_page(
    app: dash.Dash, props: dict[str, dict[str, Any]], budget: Any
) -> None:
    values = {"budget.value": budget, "page.value": "buckets", "buckets-file.value": BUCKETS}
    response = post(app, body(app, props, "buckets-page.children", values))
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    shown = json.dumps(response.get_json()["response"]["buckets-page"]["children"])
    assert "memory budget: " in shown and "is not a size" in shown
    assert "bucket-table" in shown  # and the buckets, without a best set
    good = post(app, body(app, props, "buckets-page.children", {**values, "budget.value": 8}))
    assert "is not a size" not in good.get_data(as_text=True)
    assert "Best within 8.0 MiB" in good.get_data(as_text=True)


# Class 11: callback requests of the wrong shape.
def _malformed(app: dash.Dash, props: dict[str, dict[str, Any]]) -> dict[str, Any]:
    good = body(app, props, "report-page.children", {"page.value": "report"})
    ring = body(app, props, "focus.data", {"node-panel.children": None})
    click = body(app, props, "node-panel.children", {"prev.n_clicks": 1})
    click["inputs"][2] = [{"id": {"type": "nav", "key": 5}, "property": "n_clicks", "value": 1}]
    deep = b"[" * 100_000 + b"]" * 100_000
    return {
        "an empty object": {},
        "a list": [good],
        "null": None,
        "an unknown output": {**good, "output": "nope.children"},
        "a callback run in the browser": {**good, "output": "focused.data"},
        "inputs that are text": {**good, "inputs": "page.value"},
        "inputs missing": {k: v for k, v in good.items() if k != "inputs"},
        "an input too few": {**good, "inputs": good["inputs"][:1]},
        "another component's input": {
            **good,
            "inputs": [{**good["inputs"][0], "id": "budget"}, good["inputs"][1]],
        },
        "outputs that are a number": {**good, "outputs": 5},
        "outputs of another callback": {**ring, "outputs": ring["outputs"][:2]},
        "state that is an object": {**ring, "state": {"selected": 1}},
        "state missing": {k: v for k, v in ring.items() if k != "state"},
        "a trigger that is no input": {**good, "changedPropIds": ["budget.value"]},
        "a trigger that is a list": {**good, "changedPropIds": [["page.value"]]},
        "a trigger of broken JSON": {**good, "changedPropIds": ['{"type":"nav".n_clicks']},
        "a pattern id holding a number": click,
        "JSON nested 100,000 deep": deep,
        "not JSON": b"{output: 1",
    }


@pytest.mark.parametrize(
    "case",
    [
        "an empty object", "a list", "null", "an unknown output", "a callback run in the browser",
        "inputs that are text", "inputs missing", "an input too few", "another component's input",
        "outputs that are a number", "outputs of another callback", "state that is an object",
        "state missing", "a trigger that is no input", "a trigger that is a list",
        "a trigger of broken JSON", "a pattern id holding a number", "JSON nested 100,000 deep",
        "not JSON",
    ],
)  # fmt: skip
def test_a_malformed_callback_request_is_refused_in_one_line(
    app: dash.Dash, props: dict[str, dict[str, Any]], case: str
) -> None:
    payload = _malformed(app, props)[case]
    client = app.server.test_client()
    if isinstance(payload, bytes):
        response = client.post(UPDATE, data=payload, content_type="application/json")
    else:
        response = post(app, payload)
    assert response.status_code == 400, response.get_data(as_text=True)[:300]
    assert is_plain_line(response), response.get_data(as_text=True)[:300]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_callback_request_that_is_not_json_is_refused_in_one_line(
    app: dash.Dash, props: dict[str, dict[str, Any]], content_type: str | None
) -> None:
    good = json.dumps(body(app, props, "report-page.children", {"page.value": "report"}))
    response = app.server.test_client().post(UPDATE, data=good, content_type=content_type)
    assert response.status_code == 415 and is_plain_line(response)
    again = app.server.test_client().post(UPDATE, data=good, content_type="application/json")
    assert again.status_code == 200  # the same body as JSON is answered


# Class 12: asset paths that name no file.
@pytest.mark.parametrize(
    "path",
    [
        "/_dash-component-suites/dash/nope.js",
        "/_dash-component-suites/nopkg/x.js",
        "/_dash-component-suites/os/__init__.py",
        "/_dash-component-suites/dash/../../../etc/passwd",
        "/_dash-component-suites/dash/%2e%2e/%2e%2e/etc/passwd",
        "/_dash-component-suites/dash/%2E%2E%2F%2E%2E%2Fdash.py",
        "/_dash-component-suites/dash/..%5c..%5cdash.py",
        "/_dash-component-suites/dash/dcc/a%00.js",
        "/_dash-component-suites/dash//etc/passwd",
        "/_dash-component-suites/dash",
        "/_dash-component-suites/",
        "/assets/nope.js",
        "/assets/../server.py",
        "/assets/%2e%2e/server.py",
        "/assets/..%5cserver.py",
        "/assets/gs-0-core.js%00.txt",
        "/assets//etc/passwd",
        "/static/x.js",
        "/static/%2e%2e/server.py",
        "/_dash-layout/x",
        "/_favicon.ico/..",
        "/whatever",
        "/a%00b",
        "/C:%5cWindows%5cwin.ini",
    ],
)
def test_a_path_that_names_no_file_is_404(app: dash.Dash, path: str) -> None:
    response = app.server.test_client().get(path)
    assert response.status_code in (400, 404), (response.status_code, path)
    assert is_plain_line(response), response.get_data(as_text=True)[:300]


def test_the_page_and_its_files_are_still_served(app: dash.Dash) -> None:
    client = app.server.test_client()
    index = client.get("/")
    assert index.status_code == 200
    scripts = [s for s in index.get_data(as_text=True).split('"') if s.endswith(".js")]
    scripts += [
        s.split("?")[0] for s in index.get_data(as_text=True).split('"') if s.startswith("/assets/")
    ]
    assert len(scripts) >= 8
    for script in scripts:
        assert client.get(script).status_code == 200, script
    assert client.get("/?file=f0&node=" + NODE).status_code == 200


# Anything else: every route Flask has, every method, odd query strings and headers.
METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND"]
HEADERS = [
    {},
    {"Referer": "http://[x/?file=f0"},  # no address: urlparse raises ValueError
    {"Referer": "http://127.0.0.1:8050/?file=f0&node=" + NODE + "&colour=%ff"},
    {"If-None-Match": '"' + "x" * 5000 + '"', "If-Modified-Since": "yesterday"},
    {"Range": "bytes=99999999-", "Accept-Encoding": "gzip;q=nan"},
    {"Cookie": "a=" + "\x7f" * 50, "Content-Type": "multipart/form-data; boundary="},
    {"Content-Type": "application/json; charset=utf-9", "Accept": "*/*;q=x"},
]
QUERIES = ["", "file=f0&node=" + NODE, "file=%00&view=%ff&colour=[]&compare=f0", "x=" + "y" * 9000]


def test_no_route_method_query_or_header_gets_a_500(app: dash.Dash) -> None:
    client = app.server.test_client()
    paths = []
    for rule in app.server.url_map.iter_rules():
        path = rule.rule
        for arg in rule.arguments:
            path = path.replace(f"<string:{arg}>", "dash").replace(f"<path:{arg}>", "x/y.js")
            path = path.replace(f"<{arg}>", "x")
        paths.append(path)
    assert UPDATE in paths and "/_dash-layout" in paths  # what Dash registers
    seen: dict[int, int] = {}
    for path in paths:
        for method in METHODS:
            for headers in HEADERS:
                for query in QUERIES:
                    response = client.open(
                        path, method=method, headers=headers, query_string=query, data=b"{}"
                    )
                    seen[response.status_code] = seen.get(response.status_code, 0) + 1
                    assert response.status_code < 500, (path, method, headers, query)
                    assert b"Traceback" not in response.data
                    if response.status_code >= 400 and method != "HEAD":
                        assert is_plain_line(response), (path, method, response.data[:200])
    assert {200, 400, 404, 405, 415} <= set(seen)


# Every callback the app registers has its values declared.
def test_every_server_callback_has_its_values_declared_and_checked(app: dash.Dash) -> None:
    from graphscope.app.view import inputs

    assert inputs.undeclared(app) == []
    listed = app.callback_map
    server = inputs.server_callbacks(app)
    assert 10 <= len(server) < len(listed)  # the rest run in the browser
    for cb in server.values():
        assert getattr(cb["callback"], "checked", False)
    for output, cb in listed.items():
        if output not in server:
            assert cb.get("callback") is None  # in the browser: the server refuses it (400)


def test_a_new_callback_without_declared_values_stops_the_app() -> None:
    from graphscope.app.view import inputs

    app = create_app([LLAMA], preload=False)

    @app.callback(Output("status", "children", allow_duplicate=True), Input("cards", "style"),
                  State("search", "value"), prevent_initial_call=True)  # fmt: skip
    def added(style: Any, search: Any) -> Any:
        return dash.no_update

    assert inputs.undeclared(app) == [
        f"{next(k for k in app.callback_map if k.startswith('status.children@'))}: cards.style"
    ]
    with pytest.raises(RuntimeError, match=r"declares no check .* cards\.style"):
        inputs.install(app)
