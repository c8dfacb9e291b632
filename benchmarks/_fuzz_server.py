"""The fuzz campaign's families for the dashboard's server (benchmarks/fuzz.py registers them).

- ``callbacks``: every server callback of ``app.callback_map``, in turn, posted through Flask's
  test client as the page posts it, each input and state a value the page holds (read from
  its layout, or from the answers of the callbacks before it in the same input) or a hostile
  one: another type, None, huge or negative numbers, NaN and infinities, long strings, lone
  surrogates, nested lists and objects, an object missing a key or holding a wrong one, the
  value of another component. A short chain of the page's own requests comes first, so that
  the values of other callbacks (rings, groupings, panels with their links) are real.
- ``http``: callback requests of the wrong shape (keys deleted, swapped, of another type,
  nested deep, not JSON, other content types), paths under every static route that name no
  file (traversal with ``..``, ``%2e%2e``, backslashes, NUL, absolute paths), every route
  Flask has with every method, odd query strings and headers.

Each input runs in a worker against one app per worker (``create_app`` over a few samples);
each request is a step with the campaign's time and memory limits. An exception that escapes
Flask (the app runs with ``PROPAGATE_EXCEPTIONS``, so that a would-be 500 shows where it
fell) or a 5xx is a defect, and so is a 4xx that is not one plain line, a body with a
traceback, a callback request of the right shape refused as malformed (``callbacks`` only), a
hang, or memory that grows past ``GROWTH_MIB`` in one input. A 4xx is *refused*; 2xx and 3xx
are *clean*. Each input's requests are written to ``requests.jsonl`` in its folder;
``python benchmarks/_fuzz_server.py replay requests.jsonl [N]`` sends them (up to the Nth)
to a fresh app and prints each answer.
"""

from __future__ import annotations

import base64
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _mutations import dumps_mutant, json_mutation, show

if TYPE_CHECKING:
    import random

    from fuzz import Runner, Seeds

    Rng = random.Random

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
#: The files the fuzzed app serves: a timed bundle (with buckets files beside it), parallel
#: branches, every node type, a recording (the catalog), and a path that is no file.
FILES = (
    SAMPLES / "bundles" / "tiny-llama-b1.json.gz",
    SAMPLES / "bundles" / "tiny-gpt-parallel-b1.json.gz",
    SAMPLES / "dot" / "explicit-all-types" / "flags-verbose.dot",
    SAMPLES / "recordings" / "torch-buckets",
    SAMPLES / "bundles" / "no-such-file.dot",
)
UPDATE = "/_dash-update-component"
#: An input whose requests grow the worker's resident memory by more than this is a defect
#: (the app keeps a few drawn views per file, and uploads: far less).
GROWTH_MIB = 256
#: A few values kept per property from the answers, for the requests after them.
KEPT = 6


# ---------------------------------------------------------------------------------------------
# The app each worker serves, and what its page first holds


@dataclass
class Served:
    """The app of this worker, made on its first input, and its page as the browser gets it."""

    app: Any
    client: Any
    props: dict[str, dict[str, Any]]  # each component with an id: its props
    callbacks: dict[str, dict[str, Any]]  # the server callbacks, by output
    rules: list[tuple[str, list[str]]]  # every route: (a path it takes, its methods)
    nodes: list[str]  # node keys drawn at first (group keys too: "group:...")
    constants: dict[str, Any]  # the page's colourings, pages and grouping defaults


_SERVED: Served | None = None


def served() -> Served:
    """This worker's app, made once (a second or two): its first input waits for it."""
    global _SERVED
    if _SERVED is None:
        from graphscope.app.render.components import COLOURS, PAGES
        from graphscope.app.serve.server import create_app
        from graphscope.app.view import inputs
        from graphscope.app.view.state import DEFAULTS

        app = create_app(FILES)
        # A would-be 500 raises out of the test client instead, with its traceback.
        app.server.config["PROPAGATE_EXCEPTIONS"] = True
        client = app.server.test_client()
        props = _components(client.get("/_dash-layout").get_json(), {})
        rules = []
        for rule in app.server.url_map.iter_rules():
            path = rule.rule
            for arg in rule.arguments:
                for kind in ("string:", "path:", ""):
                    path = path.replace(f"<{kind}{arg}>", "dash" if kind == "string:" else "x")
            rules.append((path, sorted(rule.methods or [])))
        nodes = _customdata(props.get("dag", {}).get("figure"))
        constants = {"colours": COLOURS, "pages": list(PAGES), "defaults": DEFAULTS}
        _SERVED = Served(app, client, props, inputs.server_callbacks(app), rules, nodes, constants)
    return _SERVED


def _components(node: Any, found: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each component of a layout (as ``/_dash-layout`` sends it) with a plain id: its props;
    those with a pattern-matching id under ``pattern:<type>``, as a list of ids."""
    if isinstance(node, dict):
        props = node.get("props")
        if isinstance(props, dict):
            ident = props.get("id")
            if isinstance(ident, str):
                found[ident] = props
            elif isinstance(ident, dict) and isinstance(ident.get("type"), str):
                found.setdefault(f"pattern:{ident['type']}", {"ids": []})["ids"].append(ident)
        for value in node.values():
            _components(value, found)
    elif isinstance(node, list):
        for value in node:
            _components(value, found)
    return found


def _customdata(figure: Any) -> list[str]:
    """The node (and group) keys a drawn figure holds, a few hundred at most."""
    keys: list[str] = []
    for trace in figure.get("data", []) if isinstance(figure, dict) else []:
        data = trace.get("customdata") if isinstance(trace, dict) else None
        keys += [k for k in (data or []) if isinstance(k, str)][:300]
    return sorted(set(keys))[:600]


# ---------------------------------------------------------------------------------------------
# Requests, sent and judged


@dataclass
class Request:
    """One HTTP request, as the test client sends it and ``requests.jsonl`` keeps it."""

    method: str
    path: str
    query: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    content_type: str | None = None
    well_formed: bool = False  # a callback request of the right shape (callbacks family)

    def kept(self) -> dict[str, Any]:
        return {**asdict(self), "body": base64.b64encode(self.body).decode()}

    def open(self, client: Any) -> Any:
        """Send this request through a Flask test client; its response."""
        return client.open(
            self.path,
            method=self.method,
            query_string=self.query,
            headers=self.headers,
            data=self.body,
            content_type=self.content_type,
        )

    @classmethod
    def read(cls, line: str) -> Request:
        data = json.loads(line)
        return cls(**{**data, "body": base64.b64decode(data["body"])})


class Http:
    """Sends an input's requests as steps of the campaign's ``Runner`` and judges each."""

    def __init__(self, run: Runner, family: str) -> None:
        self.run = run
        self.family = family
        self.server = served()
        self.sent = 0

    def send(self, request: Request) -> Any:
        """The response, or None where the request found a defect (an exception escaped)."""
        with open("requests.jsonl", "a") as log:  # written first: kept if the request hangs
            log.write(json.dumps(request.kept()) + "\n")
        line = f"{shlex.join(['python', __file__, 'replay', 'requests.jsonl', str(self.sent)])}"
        line += f"  # {request.method} {show(request.path)}"
        self.sent += 1
        self.run._begin(line)
        try:
            response = request.open(self.server.client)
            data = response.get_data()
        except Exception as exc:  # an exception out of Flask: what would be a 500
            self.run._raised(line, exc, None)
            return None
        self.run.result.steps[-1] += f" -> {response.status_code}"
        self._judge(line, request, response.status_code, response.mimetype, data)
        return response

    def _judge(self, line: str, request: Request, status: int, mimetype: str, data: bytes) -> None:
        text = data.decode("utf-8", "replace")
        if status >= 500:
            self.run._defect(line, "status", str(status), "?", "app", text[:500])
        elif "Traceback (most recent call last)" in text:
            self.run._defect(line, "message", "a traceback in the answer", "?", "app", text[-800:])
        elif status >= 400:
            self.run.result.refused = True
            plain = mimetype == "text/plain" and text.startswith("graphscope: ")
            if request.method != "HEAD" and not (plain and text.count("\n") == 1):
                why = "a refusal that is not one plain line"
                self.run._defect(line, "message", why, "?", "app", text[:500])
            elif request.well_formed and "not a callback request" in text:
                why = "a well-formed callback request refused as malformed"
                self.run._defect(line, "message", why, "?", "app", text[:500])
        else:
            self.run.result.loaded = True  # answered


def _resident_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _measured(case: Callable[[Http, Rng], None]) -> Callable[..., None]:
    """A family's case function (fuzz.py's signature) around ``case``: its requests sent,
    the worker's memory growth over them judged."""

    def run_case(family: str, rng: Rng, seeds: Seeds, run: Runner, config: dict[str, Any]) -> None:
        http = Http(run, family)
        run.result.seed = "app: " + ", ".join(p.name for p in FILES)
        before = _resident_mib()
        case(http, rng)
        grown = _resident_mib() - before
        if grown > GROWTH_MIB:
            why = f"resident memory grew {grown:.0f} MiB over the input's requests"
            run._defect("(the input's requests)", "memory", why, "?", "app")

    run_case.__name__ = f"case_{case.__name__}"
    return run_case


# ---------------------------------------------------------------------------------------------
# Callback requests: the page's values, and hostile ones


class Pool:
    """Values the page holds, by ``id.property``: from its layout, then from the answers."""

    def __init__(self, server: Served, rng: Rng) -> None:
        self.server = server
        # One file and one page for the input, as a person's page has: most paths of a
        # callback are reached only where its other values agree (the buckets page shown,
        # the file whose nodes are clicked).
        self.source: str | None = rng.choice(self.sources())
        self.page: str = rng.choice(server.constants["pages"])
        self.values: dict[str, list[Any]] = {}
        self.nodes = list(server.nodes)
        self.patterns: dict[str, list[dict[str, Any]]] = {
            name.split(":", 1)[1]: list(props["ids"])
            for name, props in server.props.items()
            if name.startswith("pattern:")
        }
        for ident, props in server.props.items():
            for prop, value in props.items():
                if prop not in ("children", "figure", "id") or ident == "node-panel":
                    self.keep(f"{ident}.{prop}", value)
        for rings in self.values.get("rings.data", []):
            self.keep("painted.data", rings)  # as the page passes it on once drawn

    def keep(self, name: str, value: Any) -> None:
        kept = self.values.setdefault(name, [])
        if value not in kept:
            kept.append(value)
            del kept[:-KEPT]

    def harvest(self, response: Any) -> None:
        """What a callback's answer put in the page, for the requests after it."""
        try:
            answer = response.get_json(silent=True)
        except Exception:
            return
        if not isinstance(answer, dict) or not isinstance(answer.get("response"), dict):
            return
        for ident, props in answer["response"].items():
            if not isinstance(props, dict):
                continue
            for prop, value in props.items():
                if prop == "figure":
                    self.nodes = _customdata(value) or self.nodes
                    continue
                self.keep(f"{ident}.{prop}", value)
                if ident == "rings" and prop == "data":
                    self.keep("painted.data", value)  # as the page passes it on once drawn
                for kind, ids in _components(value, {}).items():
                    if kind.startswith("pattern:"):
                        self.patterns[kind.split(":", 1)[1]] = ids["ids"][:50]

    def sources(self) -> list[str]:
        return [o["value"] for o in self.server.props["source"]["options"]]

    def node(self, rng: Rng) -> str:
        return rng.choice(self.nodes) if self.nodes else "graph_1_node_47"

    def valid(self, name: str, rng: Rng) -> Any:
        """A value the page could hold for ``name`` (``id.property``)."""
        made = _MADE.get(name)
        kept = self.values.get(name, [])
        if made is None or (kept and name not in _COHERENT and rng.random() < 0.4):
            return rng.choice(kept) if kept else None
        return made(self, rng, self.server.constants)

    def pattern_items(self, kind: str, prop: str, rng: Rng, hostile: float) -> list[Any]:
        """The items of a pattern-matching input: ids of such links drawn (or made up), with
        click counts, some hostile."""
        ids = self.patterns.get(kind) or [
            {
                "type": kind,
                _PATTERN_KEYS.get(kind, "key"): self.node(rng),
                **_PATTERN_MORE.get(kind, {}),
            }
        ]
        chosen = [rng.choice(ids) for _ in range(rng.choice([0, 1, 1, 2, 3, 20]))]
        return [
            {
                "id": dict(ident),
                "property": prop,
                "value": hostile_value(self, rng)
                if rng.random() < hostile
                else rng.choice([None, 0, 1, 2]),
            }
            for ident in chosen
        ]


_PATTERN_KEYS = {"nav": "key", "collapse": "group", "open-graph": "source", "buffer": "name"}
_PATTERN_MORE = {"open-graph": {"at": "catalog"}}  # the other keys of such an id
_TINY_DOT = (SAMPLES / "dot" / "torch-ops" / "flags-none.dot").read_bytes()


_SEARCHES = [None, "", "mm", "KERNEL", "layers.1", r"(\w+)+!", "buffer:x", "[", "a" * 1001]


#: Values made for the input's file and page rather than taken from the layout's.
_COHERENT = frozenset({"source.value", "page.value"})


def _grouping(pool: Pool, rng: Rng, c: dict[str, Any]) -> Any:
    groups = [k[len("group:") :] for k in pool.nodes if k.startswith("group:")]
    state: dict[str, Any] = {
        "source": pool.source if rng.random() < 0.9 else rng.choice(pool.sources()),
        "default": rng.choice(c["defaults"]),
        "toggled": rng.sample(groups, min(len(groups), rng.randint(0, 3))),
    }
    if rng.random() < 0.2:
        state["compare"] = rng.choice(pool.sources())
    return state if rng.random() < 0.9 else None


def _click(pool: Pool, rng: Rng) -> Any:
    return {"points": [{"customdata": pool.node(rng), "x": 1, "y": 2}], "at": time.time()}


def _window(rng: Rng) -> list[float]:
    a = rng.uniform(-10, 500)
    return [a, a + rng.choice([0.001, 1, 50, 1e4])]


_MADE: dict[str, Callable[[Pool, Rng, dict[str, Any]], Any]] = {
    "source.value": lambda p, r, c: (
        p.source if r.random() < 0.9 else r.choice([*p.sources(), None])
    ),
    "colour.value": lambda p, r, c: r.choice(c["colours"]),
    "search.value": lambda p, r, c: r.choice([*_SEARCHES, p.node(r)]),
    "page.value": lambda p, r, c: p.page if r.random() < 0.9 else r.choice(c["pages"]),
    "selected.data": lambda p, r, c: r.choice([p.node(r), p.node(r), None]),
    "focus-request.data": lambda p, r, c: r.choice([p.node(r), None]),
    "grouping.data": _grouping,
    "dag-pick.data": lambda p, r, c: _click(p, r),
    "timeline.clickData": lambda p, r, c: _click(p, r) if r.random() < 0.8 else None,
    "prev.n_clicks": lambda p, r, c: r.choice([None, 0, 1, 5]),
    "next.n_clicks": lambda p, r, c: r.choice([None, 0, 1, 5]),
    "collapse-all.n_clicks": lambda p, r, c: r.choice([None, 0, 1]),
    "expand-all.n_clicks": lambda p, r, c: r.choice([None, 0, 1]),
    "timeline-ring.data": lambda p, r, c: r.choice([None, 0, 1, 3, 5]),
    "timeline-merged.data": lambda p, r, c: r.choice([None, True, False]),
    "timeline-window.data": lambda p, r, c: {
        "source": r.choice(p.sources()),
        "window": r.choice([None, _window(r)]),
    },
    "timeline-zoom.data": lambda p, r, c: r.choice(
        [
            {"xaxis.autorange": True},
            dict(zip(("xaxis.range[0]", "xaxis.range[1]"), _window(r), strict=True)),
            {"xaxis.range": _window(r)},
            {"yaxis.range[0]": 1},
        ]
    ),
    "compare-a.value": lambda p, r, c: r.choice([*p.sources(), p.source, None]),
    "compare-b.value": lambda p, r, c: r.choice([*p.sources(), None]),
    "budget.value": lambda p, r, c: r.choice([None, 1, 8, 64, 1024, 0.5, 1e6]),
    "upload.contents": lambda p, r, c: r.choice(
        [None, "data:application/octet-stream;base64," + base64.b64encode(_TINY_DOT).decode()]
    ),
    "upload.filename": lambda p, r, c: r.choice(["tiny.dot", "x.json.gz", "notes.txt", None]),
}

#: Hostile values: another type, None, huge numbers, NaN and infinities, long strings, lone
#: surrogates, nesting (placeholders ``dumps_mutant`` fills: deeper than json.dumps writes).
_HOSTILE: list[Any] = [
    None, True, False, 0, -1, 1.5, 2**53 + 1, 2**63, -(2**63), 10**400, 1e308, -1e308,
    5e-324, math.nan, math.inf, -math.inf, "", "x", "nan", "../../etc/passwd", "\x00",
    "\ud800", "<script>alert(1)</script>", "graph_1_node_99999999", "group:", "group:x",
    "é" * 300, "a" * 200_000, [], [None], [1, "a", {}], {}, {"a": 1}, {"points": []},
    {"points": None}, {"points": [None]}, {"points": [{}]}, {"points": "abc"},
    {"source": None}, {"dag": -1}, [[[[[]]]]],
]  # fmt: skip


_NUMBERS = [-1, -0.5, 0, 1.5, 2**53 + 1, 10**400, 1e308, -1e308, math.nan, math.inf, True]


def _nested(depth: int, rng: Rng) -> Any:
    value: Any = rng.choice([1, "x", None])
    for _ in range(depth):
        value = [value] if rng.random() < 0.5 else {"a": value}
    return value


def hostile_value(pool: Pool, rng: Rng, like: Any = None) -> Any:
    """A value the page never holds where ``like`` is: half the time one near it (a number
    gone wrong, an object with a key deleted or a field of another type: ``json_mutation``),
    else a fixed hostile one, deep nesting, or the value of another component."""
    if rng.random() < 0.5:
        if isinstance(like, (dict, list)) and like:
            try:
                return json_mutation(json.loads(json.dumps(like)), rng)[0]
            except (ValueError, RecursionError):
                pass
        if isinstance(like, (int, float)) and not isinstance(like, bool):
            return rng.choice(_NUMBERS)
    roll = rng.random()
    if roll < 0.65:
        return rng.choice(_HOSTILE)
    if roll < 0.8:
        return _nested(rng.choice([3, 50, 400]), rng)
    return rng.choice(pool.values[rng.choice(sorted(pool.values))] or [None])


def callback_body(
    pool: Pool, output: str, rng: Rng, hostile: int, said: list[str]
) -> dict[str, Any]:
    """A request for the callback of ``output`` in the page's own shape: ``hostile`` of its
    values (all, where it has fewer) made hostile, the rest the page's (``pool``), so that a
    hostile value meets the callback's real paths; what was made hostile goes to ``said``."""
    cb = pool.server.callbacks[output]
    name = _short(output)
    listed = cb["inputs"] + cb["state"]
    bad = {id(ref) for ref in rng.sample(listed, min(hostile, len(listed)))}

    def item(ref: dict[str, Any]) -> Any:
        ident, prop = ref["id"], ref["property"]
        if ident.startswith("{"):
            kind = json.loads(ident)["type"]
            return pool.pattern_items(kind, prop, rng, 0.5 if id(ref) in bad else 0.0)
        key = f"{ident}.{prop}"
        value = pool.valid(key, rng)
        if id(ref) in bad:
            value = hostile_value(pool, rng, value)
            said.append(f"{name}: {key} <- {show(value)}")
        entry = {"id": ident, "property": prop, "value": value}
        if value is None and rng.random() < 0.3:
            del entry["value"]  # undefined in the page: JSON leaves it out
        return entry

    declared = cb["output"] if isinstance(cb["output"], list) else [cb["output"]]
    # An output others share is named with its hash, as the page names it, or without.
    hashes = dict(p.split("@") for p in output.strip(".").split("...") if "@" in p)
    outputs = [
        {
            "id": o.component_id,
            "property": o.component_property
            + (
                "@" + hashes[f"{o.component_id}.{o.component_property}"]
                if f"{o.component_id}.{o.component_property}" in hashes and rng.random() < 0.5
                else ""
            ),
        }
        for o in declared
    ]
    inputs = [item(i) for i in cb["inputs"]]
    changed = []
    for given in inputs:
        for entry in given if isinstance(given, list) else [given]:
            ident = entry["id"]
            text = json.dumps(ident, sort_keys=True, separators=(",", ":"))
            changed.append(f"{ident if isinstance(ident, str) else text}.{entry['property']}")
    return {
        "output": output,
        "outputs": outputs if isinstance(cb["output"], list) else outputs[0],
        "inputs": inputs,
        "changedPropIds": rng.sample(changed, min(len(changed), rng.choice([0, 1, 1, 1, 2]))),
        "state": [item(s) for s in cb["state"]],
    }


def _short(output: str) -> str:
    """A callback's outputs, as a mutation's account names it (hashes left out)."""
    return "+".join(p.split("@")[0] for p in output.strip(".").split("...")[:2])


def _post_json(body: Any, rng: Rng, well_formed: bool) -> Request:
    return Request(
        "POST",
        UPDATE,
        body=dumps_mutant(body, rng),
        content_type="application/json",
        well_formed=well_formed,
    )


def _callbacks(http: Http, rng: Rng) -> None:
    """A few of the page's own requests, then the input's callback with hostile values."""
    server = http.server
    pool = Pool(server, rng)
    said = http.run.result.mutations
    outputs = sorted(server.callbacks)
    target = outputs[http.run.result.index % len(outputs)]
    pages = [page for page in server.constants["pages"] if f"{page}-page" in target]
    pool.page = pages[0] if pages else pool.page
    said.append(f"file {pool.source}, page {pool.page}")
    draw = next(o for o in outputs if "rings.data" in o and "dag.figure" in o)
    # The file drawn (its nodes, rings), then a few of the page's own requests.
    for output in [draw, *rng.sample(outputs, rng.choice([0, 1, 1, 2]))]:
        response = http.send(_post_json(callback_body(pool, output, rng, 0, []), rng, True))
        if response is not None:
            pool.harvest(response)
    hostile = rng.choice([0, 1, 1, 1, 2, 3, 99])
    said.append(f"{_short(target)}, {hostile} values hostile")
    for _ in range(rng.choice([1, 1, 2])):
        body = callback_body(pool, target, rng, hostile, said)
        response = http.send(_post_json(body, rng, True))
        if response is not None:
            pool.harvest(response)


# ---------------------------------------------------------------------------------------------
# Malformed requests, paths that name no file, every route with every method


_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT",
            "PROPFIND", "get", "X-NONSENSE"]  # fmt: skip
_TRAVERSALS = [
    "..", "../..", "%2e%2e", "%2E%2E/%2E%2E", "..%2f..%2f", "%2e%2e%2f%2e%2e%2f", "..%5c..%5c",
    "..\\..\\", "....//....//", "%252e%252e%252f", "%c0%ae%c0%ae/", "\uff0e\uff0e/", "%00",
    "a%00.js", "/etc/passwd", "//etc/passwd", "C:%5cWindows%5cwin.ini", "~", ".", "%ff",
    "dash.py", "__init__.py", "x" * 5000, "/".join(["a"] * 300),
]  # fmt: skip
_PACKAGES = ["dash", "plotly", "dash_table", "os", "sys", "graphscope", "__main__", "..", "%00",
             "dash.dcc", "x" * 300]  # fmt: skip
_QUERIES = [
    "", "file=f0", "file=f0&node=graph_1_node_47&colour=time&view=report&compare=f1",
    "file=%00", "node=%ff%fe", "view=" + "x" * 9000, "file=f0&file=f1", "colour[]=1",
    "a=1;b=2", "&&&==&", "compare=f0&file=f0", "%zz=1", "m=1796402629.2", "cacheKey=x&endId=y",
]  # fmt: skip
_HEADERS: list[dict[str, str]] = [
    {},
    {"Referer": "http://[x/?file=f0"},
    {"Referer": "http://127.0.0.1/?file=f1&node=graph_1_node_4&compare=f1&view=buckets"},
    {"Referer": "\xff\xfe" * 100},
    {"If-None-Match": '"' + "x" * 3000 + '"', "If-Modified-Since": "0"},
    {"Range": "bytes=5-1"},
    {"Range": "bytes=999999999-"},
    {"Accept-Encoding": "gzip;q=nan, br, *;q=-1"},
    {"Cookie": "=; a=\x7f; " * 50},
    {"Accept": "*/*;q=x", "Accept-Language": "\xe9" * 50},
    {"Host": "evil.example"},
    {"Host": "localhost:99999999"},
    {"Host": ""},
    {"X-Forwarded-For": "1.2.3.4", "X-Forwarded-Host": "evil.example", "Forwarded": "for=x"},
    {"Transfer-Encoding": "chunked"},
    {"Content-Length": "abc"},
    {"Expect": "100-continue"},
]
_CONTENT_TYPES = [
    "application/json", "application/json", "application/json; charset=utf-16",
    "application/json; charset=latin-1", "application/vnd.api+json", "text/plain", None,
    "multipart/form-data; boundary=x", "application/x-www-form-urlencoded", "application/jso",
]  # fmt: skip


def _shape_mutation(body: dict[str, Any], pool: Pool, rng: Rng) -> tuple[Any, str]:
    """One change to a callback request's shape, knowing its parts."""
    if not isinstance(body, dict):  # an earlier change made it something else
        return json_mutation(body, rng)
    part = rng.choice(["output", "outputs", "inputs", "state", "changedPropIds", "any", "any"])
    if part == "output":
        new = rng.choice(
            [*pool.server.app.callback_map, "nope.children", "", "..", f"{body.get('output')}x"]
        )
        body["output"] = new if rng.random() < 0.8 else hostile_value(pool, rng)
        return body, f"output <- {show(body['output'])}"
    if part == "changedPropIds":
        body[part] = rng.choice(
            [["budget.value"], [5], [["x"]], '{"a":1}.n', ['{"type":"nav".n_clicks'],
             ["{" * 900 + ".x"], ['{"key":1,"type":"nav"}.n_clicks'], "page.value", None]
        )  # fmt: skip
        return body, f"changedPropIds <- {show(body[part])}"
    if part in ("outputs", "inputs", "state") and isinstance(body.get(part), list) and body[part]:
        items = body[part]
        i = rng.randrange(len(items))
        how = rng.choice(["drop", "add", "swap", "hostile", "id", "property", "wrap"])
        if how == "drop":
            del items[i]
        elif how == "add":
            items.append(items[i])
        elif how == "swap" and len(items) > 1:
            j = rng.randrange(len(items))
            items[i], items[j] = items[j], items[i]
        elif how == "hostile":
            items[i] = hostile_value(pool, rng)
        elif how in ("id", "property") and isinstance(items[i], dict):
            items[i][how] = rng.choice(["budget", "n_clicks", {"type": "nav", "key": 1}, 5, None])
        elif how in ("id", "property") and isinstance(items[i], list) and items[i]:
            first = items[i][0] if isinstance(items[i][0], dict) else {}
            items[i][0] = {**first, "id": {"type": "nav", "key": rng.choice([1, None, []])}}
        else:
            items[i] = [items[i]]
        return body, f"{part}[{i}]: {how}"
    doc, what = json_mutation(body, rng)
    return doc, what


def _malformed_update(http: Http, rng: Rng) -> None:
    pool = Pool(http.server, rng)
    said = http.run.result.mutations
    output = rng.choice(sorted(http.server.callbacks))
    # A copy: the page's values in it are shared with the worker's app state, and changed here.
    body: Any = json.loads(json.dumps(callback_body(pool, output, rng, 0, [])))
    for _ in range(rng.randint(1, 3)):
        body, what = _shape_mutation(body, pool, rng)
        said.append(what)
    roll = rng.random()
    if roll < 0.1:
        depth = rng.choice([900, 5_000, 100_000])
        data = (
            ("[" * depth + "]" * depth).encode()
            if rng.random() < 0.5
            else ('{"a":' * depth + "1" + "}" * depth).encode()
        )
        said.append(f"JSON nested {depth} deep")
    elif roll < 0.2:
        text = dumps_mutant(body, rng)
        data = rng.choice(
            [text[: rng.randrange(len(text))], b"\xef\xbb\xbf" + text, text + b"}{", b"",
             b"  \n", b"\xff\xfe\x00x", text.decode("utf-8", "replace").encode("utf-16"),
             b"[" * 1_000_000, b'{"output": ' + b"9" * 5000 + b"}", b'{"a":1,"a":2}']
        )  # fmt: skip
        said.append(f"bytes: {show(data[:40])}")
    else:
        data = dumps_mutant(body, rng)
    content_type = rng.choice(_CONTENT_TYPES) if rng.random() < 0.25 else "application/json"
    method = "POST" if rng.random() < 0.92 else rng.choice(_METHODS)
    headers = rng.choice(_HEADERS) if rng.random() < 0.1 else {}
    said.append(f"{method}, {content_type}")
    http.send(Request(method, UPDATE, headers=dict(headers), body=data, content_type=content_type))


def _asset_path(http: Http, rng: Rng) -> None:
    said = http.run.result.mutations
    known = [p for p, _ in http.server.rules]
    prefix = rng.choice(
        ["/_dash-component-suites/" + rng.choice(_PACKAGES) + "/", "/assets/", "/static/",
         "/_dash-component-suites/", "/_dash-layout/", "/_favicon.ico/", "/", *known]
    )  # fmt: skip
    tail = "/".join(rng.choice(_TRAVERSALS) for _ in range(rng.randint(1, 3)))
    tail += rng.choice(["", "", "/dash.py", ".js", "/etc/passwd", "/../server.py"])
    path = prefix.rstrip("/") + "/" + tail if rng.random() < 0.9 else prefix + tail
    said.append(f"path {show(path)}")
    headers = rng.choice(_HEADERS) if rng.random() < 0.2 else {}
    http.send(Request(rng.choice(["GET", "GET", "HEAD", "POST"]), path, headers=dict(headers)))


def _route(http: Http, rng: Rng) -> None:
    said = http.run.result.mutations
    path, _ = rng.choice(http.server.rules)
    method = rng.choice(_METHODS)
    query = rng.choice(_QUERIES)
    headers = dict(rng.choice(_HEADERS))
    body = rng.choice([b"", b"{}", b"x=1", json.dumps({"output": "x"}).encode()])
    content_type = rng.choice(_CONTENT_TYPES)
    said.append(f"{method} {path}?{show(query)} {show(headers)}")
    http.send(Request(method, path, query, headers, body, content_type))


def _http(http: Http, rng: Rng) -> None:
    """One or two requests: a malformed callback request, a path that names no file, or any
    route with any method, query string and headers."""
    for _ in range(rng.choice([1, 1, 2])):
        kind = rng.choice([_malformed_update, _malformed_update, _asset_path, _route])
        kind(http, rng)


case_callbacks = _measured(_callbacks)
case_http = _measured(_http)


# ---------------------------------------------------------------------------------------------
# Replay, for a reproducer


def replay(path: str, upto: int | None = None) -> Iterator[tuple[Request, Any]]:
    """Each request of a ``requests.jsonl`` (up to the ``upto``th) sent to a fresh app."""
    server = served()
    server.app.server.config["PROPAGATE_EXCEPTIONS"] = False  # print the 500, go on
    for i, line in enumerate(Path(path).read_text().splitlines()):
        if upto is not None and i > upto:
            return
        request = Request.read(line)
        yield (
            request,
            request.open(server.client),
        )


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "replay":
        sys.exit(f"usage: python {sys.argv[0]} replay requests.jsonl [N]")
    for request, response in replay(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else None):
        print(request.method, show(request.path), "->", response.status_code)
        print("  ", response.get_data(as_text=True)[:300].replace("\n", "\n   "))
