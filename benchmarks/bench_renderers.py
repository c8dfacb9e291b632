"""Plotly against dash-cytoscape and sigma.js drawing the same graphs, in headless Chromium.

    .venv/bin/pip install dash-cytoscape              # benchmark-only, not a graphscope dependency
    .venv/bin/pip install --no-deps ipysigma          # optional: only its bundled sigma.js is used
    python benchmarks/bench_renderers.py [--graphs NAME ...] [--renderers NAME ...] [--runs 3]
                                         [--shots DIR] [--json FILE]

Issue 14 asks to choose the DAG's renderer by measurement. Each renderer draws the same view
of the same graph, at the same pixel positions, in a minimal Dash app of its own (the page's
plotly.js, or the dash-cytoscape component), so that each pays Dash's own start-up alike:

- ``plotly``: ``figure.build_figure`` on ``placement.layout`` of the view, drawn by a
  ``dcc.Graph`` with the app's assets (its plotly.js of scatter, scattergl and bar, and
  assets/gs-1-labels.js), Plotly drawing the labels as the app did when the figures in
  docs/DASHBOARD.md were measured (``in_page=False``; the app now draws them in a layer
  of its own, with the edges' arrowheads: tiny-llama's zoom is 84 ms instead of about 200);
- ``cytoscape``: dash-cytoscape's ``Cytoscape`` (Cytoscape.js 3.28, canvas), ``preset`` layout
  at the pixel positions Plotly gave the nodes in its first view, labels (shown from the same
  zoom as the app's: every node's when at most ``LABEL_LIMIT`` are drawn, else once there are
  40 px per level), edges with arrowheads;
- ``sigma``: sigma.js 3.0.0-alpha2 (WebGL) with graphology, as ipysigma's JupyterLab
  extension bundles them: no Dash component wraps it, so a plain ``html.Div`` in a Dash app,
  drawn by a script that fetches the graph; arrowheads on edges, labels from the same zoom
  as the app's.

The graphs, each as the app draws it:

- ``deep-overview``: samples/large/hf-deep-llama-b1.json.gz (10,780 nodes) folded to its
  overview (``analysis.folding.overview``), the view the app opens on;
- ``llama``: samples/bundles/tiny-llama-b1.json.gz, 212 nodes, whole, all labelled;
- ``deep-expanded``: the 10,780 nodes with every group open;
- ``100k-expanded``: benchmarks/_big.py's 100,064-node decode graph, every group open.

Per renderer and graph, medians over ``--runs`` page loads, each from a new site (one
browser per renderer and graph, as bench_app.py has one per graph):

- first paint: from the page's navigation start to the second frame after the renderer has
  drawn every node (Plotly: its traces are in the page; Cytoscape.js: its ``render`` event
  with all nodes added; sigma: its ``afterRender`` with all nodes), checked each frame;
- zoom and pan: a zoom in by 2 about the middle and a pan by a fifth of the width, made
  programmatically (``Plotly.relayout`` as bench_app.py does, ``cy.zoom`` / ``cy.panBy``,
  sigma's camera), timed in the page to the second frame after the renderer says it drew;
  twice per load (the second from the first zoom), each pan undone before the next zoom.
  The second frame, not the first that bench_app.py waits for: Plotly's scattergl (above
  3,000 nodes) draws in a long task after the first frame, with or without Dash, and only
  the frame after waits for it. Both are kept (``*1_*`` in ``--json``);
- JS heap: V8's used heap after a forced garbage collection, after the first paint (CDP
  ``Runtime.getHeapUsage``; WebGL buffers are not in it);
- the request that brings the graph (Dash's layout, or sigma's fetch): its time and size.

One screenshot per renderer and graph of the first view, and one after the first zoom, go to
``--shots``. The machine's load average is printed before and after each graph.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dash
import networkx as nx
from dash import dcc, html
from graphscope.app.render import shared
from graphscope.app.render.components import OFFLINE
from graphscope.app.render.figure import TYPE_COLOURS, build_figure, node_label
from graphscope.app.render.placement import Layout, layout
from graphscope.app.render.shared import LABEL_LIMIT
from graphscope.app.serve.browser import headless_chromium

import graphscope
from graphscope.analysis.folding import GROUP, all_groups, collapsed, group_levels, overview

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _big import big_decode_bundle  # noqa: E402
from bench_app import _DRAWN, _REDRAW, wait  # noqa: E402  (what it times, timed alike)

DEEP = ROOT / "samples" / "large" / "hf-deep-llama-b1.json.gz"
LLAMA = ROOT / "samples" / "bundles" / "tiny-llama-b1.json.gz"
GRAPHS = ("deep-overview", "llama", "deep-expanded", "100k-expanded")
RENDERERS = ("plotly", "cytoscape", "sigma")
APP_ASSETS = ROOT / "app" / "assets"
SIGMA_CHUNKS = (
    "vendors-node_modules_sigma_index_js",
    "vendors-node_modules_events_events_js-node_modules_sigma_rendering_webgl_programs_edge_rectan-f2e7ad",
    "vendors-node_modules_graphology_dist_graphology_umd_min_js",
)
ROOM_PX = 40  # px per level before a large graph's labels show (assets/gs-1-labels.js ROOM_PX)
PAINT_TIMEOUT = 300.0  # s: a renderer slower than this on a graph is reported as such
SETTLE = 0.5  # s between measurements, so that one redraw's tail does not time the next

# Runs in the page's head before Dash starts: each frame, until the renderer's ``ready``
# says it has drawn; then the times of the next frame and the one after it. The second is the
# one reported: Plotly's scattergl draws in a long task after the first (a pan of 100,064
# nodes took 35 ms to the next frame and 1.8 s to the one after).
_HOOK = """
window.__bench = {drawnAt: null, ready: () => false};
(function loop() {
  if (window.__bench.ready()) {
    requestAnimationFrame(() => {
      const one = performance.now();
      requestAnimationFrame(() => { window.__bench.drawnAt = [one, performance.now()]; });
    });
    return;
  }
  requestAnimationFrame(loop);
})();
"""
_PLOTLY_READY = f"window.__bench.ready = new Function({json.dumps(_DRAWN)});"
# The Cytoscape instance is made in the same task that mounts its container, and draws on a
# later frame: an observer of the page's mutations (a microtask) finds it before it draws.
_CYTOSCAPE_READY = """
window.__bench.ready = () => window.__bench.cyDrawn === true;
new MutationObserver((_, observer) => {
  const box = [...document.querySelectorAll('div')].find(d => d._cyreg && d._cyreg.cy);
  if (!box) return;
  observer.disconnect();
  const cy = window.__cy = box._cyreg.cy;
  const check = () => {
    if (cy.nodes().length === %d) { window.__bench.cyDrawn = true; cy.off('render', check); }
  };
  cy.on('render', check);
}).observe(document, {childList: true, subtree: true});
"""
# A minimal webpack runtime for the chunks of ipysigma's JupyterLab extension: the chunks
# push their modules, ``require`` runs one and what it needs.
_SIGMA_LOADER = """
(function () {
  const modules = {}, cache = {};
  const chunks = (self.webpackChunkipysigma = self.webpackChunkipysigma || []);
  const take = (c) => Object.assign(modules, c[1]);
  chunks.forEach(take);
  chunks.push = (c) => { take(c); return 0; };
  function req(id) {
    if (cache[id]) return cache[id].exports;
    const module = (cache[id] = {exports: {}});
    modules[id].call(module.exports, module, module.exports, req);
    return module.exports;
  }
  req.r = (e) => Object.defineProperty(e, '__esModule', {value: true});
  req.d = (e, defs) => {
    for (const k in defs) {
      if (!(k in e)) Object.defineProperty(e, k, {enumerable: true, get: defs[k]});
    }
  };
  req.n = (m) => {
    const g = m && m.__esModule ? () => m['default'] : () => m;
    req.d(g, {a: g});
    return g;
  };
  req.o = (o, p) => Object.prototype.hasOwnProperty.call(o, p);
  req.g = globalThis;
  self.__sigmaRequire = req;
})();
"""
# The graph comes from the server, as a Dash component's props would; sigma is made on an
# empty graph, given the box of the first view's pixels, then filled: its first render
# (the next frame) draws every node at Plotly's pixel positions.
_SIGMA_READY = """
window.__bench.ready = () => window.__bench.sigmaDrawn === true;
new MutationObserver(async (_, observer) => {
  const box = document.getElementById('sigma');
  if (!box) return;
  observer.disconnect();
  const req = self.__sigmaRequire;
  const Graph = req('./node_modules/graphology/dist/graphology.umd.min.js');
  const Sigma = req('./node_modules/sigma/index.js').default;
  const data = await (await fetch('/bench-graph.json')).json();
  const g = new Graph();
  const r = window.__sigma = new Sigma(g, box, data.settings);
  r.setCustomBBox(data.bbox);
  r.on('afterRender', () => {
    if (g.order === data.nodes.length) window.__bench.sigmaDrawn = true;
  });
  g.import({nodes: data.nodes, edges: data.edges});
}).observe(document, {childList: true, subtree: true});
"""
# Redraws end with ``frames()``: [ms to the next frame, ms to the one after].
_FRAMES = """
const frames = () => requestAnimationFrame(() => {
  const one = performance.now() - begun;
  requestAnimationFrame(() => done([one, performance.now() - begun]));
});
"""
_ONE_FRAME = "requestAnimationFrame(() => done(performance.now() - begun))"
assert _ONE_FRAME in _REDRAW, "bench_app._REDRAW changed: update bench_renderers.py"
_PLOTLY_REDRAW = _FRAMES + _REDRAW.replace(_ONE_FRAME, "frames()")
_CYTOSCAPE_REDRAW = (
    _FRAMES
    + """
const done = arguments[arguments.length - 1];
const cy = window.__cy, kind = arguments[0];
const w = cy.width(), h = cy.height();
const begun = performance.now();
cy.one('render', frames);
if (kind === 'zoom') cy.zoom({level: cy.zoom() * 2, renderedPosition: {x: w / 2, y: h / 2}});
else cy.panBy({x: (kind === 'pan' ? -w : w) / 5, y: 0});
"""
)
_SIGMA_REDRAW = (
    _FRAMES
    + """
const done = arguments[arguments.length - 1];
const r = window.__sigma, camera = r.getCamera(), kind = arguments[0];
const state = camera.getState(), {width} = r.getDimensions();
const begun = performance.now();
r.once('afterRender', frames);
if (kind === 'zoom') {
  camera.setState({ratio: state.ratio / 2});
} else {
  const a = r.viewportToFramedGraph({x: 0, y: 0});
  const b = r.viewportToFramedGraph({x: (kind === 'pan' ? width : -width) / 5, y: 0});
  camera.setState({x: state.x + b.x - a.x, y: state.y + b.y - a.y});
}
"""
)
_PLOTLY_BACK = """
const done = arguments[arguments.length - 1];
const gd = document.querySelector('#dag .js-plotly-plot');
const [a, b] = gd._fullLayout.xaxis.range, w = b - a;
window.Plotly.relayout(gd, {'xaxis.range': [a - w / 5, b - w / 5]}).then(() => done([0, 0]));
"""
# Plotly's first view: its axis ranges and plot area, which the other renderers copy.
_PLOTLY_VIEW = """
const L = document.querySelector('#dag .js-plotly-plot')._fullLayout;
return {x: L.xaxis.range, y: L.yaxis.range, l: L._size.l, t: L._size.t, w: L._size.w,
        h: L._size.h, height: L.height};
"""
# The request that brings the graph: Dash's layout, or sigma's own fetch.
_GRAPH_REQUEST = """
const e = performance.getEntriesByType('resource').filter(
  e => e.name.includes('_dash-layout') || e.name.includes('bench-graph.json')).pop();
return e ? [e.responseEnd - e.requestStart, e.decodedBodySize] : [NaN, NaN];
"""


@dataclass
class Scene:
    """One graph as the app draws it: the drawn graph, its placement and Plotly's figure."""

    name: str
    nodes: int  # nodes in the loaded graph
    shown: nx.DiGraph  # the drawn graph: groups folded as the view has them
    lay: Layout  # its placement
    figure: Any  # plotly's go.Figure, as the app builds it for its first paint
    view: dict[str, Any] = field(default_factory=dict)  # Plotly's first view (_PLOTLY_VIEW)

    def pixels(self) -> dict[str, tuple[float, float]]:
        """Each drawn node's position in page pixels in Plotly's first view."""
        v = self.view
        (x0, x1), (y0, y1) = v["x"], v["y"]
        out = {}
        for trace in self.figure.data:
            if not trace.customdata or trace.name == "selected":
                continue
            for key, x, y in zip(trace.customdata, trace.x, trace.y, strict=True):
                px = v["l"] + (x - x0) / (x1 - x0) * v["w"]
                py = v["t"] + v["h"] * (1 - (y - y0) / (y1 - y0))
                out[key] = (px, py)
        return out

    def label_zoom(self) -> float:
        """The zoom from the first view at which the app starts to label a large graph."""
        if self.shown.number_of_nodes() <= LABEL_LIMIT:
            return 0.0
        (x0, x1) = self.view["x"]
        return ROOM_PX / (self.view["w"] / abs(x1 - x0))


def scenes(names: list[str]) -> Iterator[Scene]:
    """The graphs, one at a time (the 100,064-node one is built only when asked for)."""
    deep = None
    for name in names:
        if name in ("deep-overview", "deep-expanded"):
            G = deep = deep if deep is not None else graphscope.load(DEEP)
        elif name == "llama":
            G = graphscope.load(LLAMA)
        elif name == "100k-expanded":
            G = big_decode_bundle(100_000)
        else:
            raise SystemExit(f"unknown graph {name!r}: choose from {', '.join(GRAPHS)}")
        levels = group_levels(G)
        opened = overview(levels) if name in ("deep-overview", "llama") else all_groups(levels)
        shown = collapsed(G, levels, opened)
        lay = layout(shown)
        yield Scene(
            name,
            G.number_of_nodes(),
            shown,
            lay,
            build_figure(shown, lay, hover=False, in_page=False),
        )


def _app(assets: Path, head: str, body: Any) -> dash.Dash:
    app = dash.Dash(__name__, assets_folder=str(assets), update_title=None)
    app.index_string = dash.dash._default_index.replace(
        "{%css%}",
        # the app's page scripts read what the figures share with them (app/render/shared.py)
        "{%css%}<style>body{margin:0}</style>"
        + shared.script()
        + "<script>"
        + _HOOK
        + head
        + "</script>",
    )
    app.layout = body
    return app


def plotly_app(scene: Scene, empty: Path) -> dash.Dash:
    """The figure in a ``dcc.Graph`` with the app's assets and config."""
    graph = dcc.Graph(id="dag", figure=scene.figure, config={**OFFLINE, "scrollZoom": True})
    return _app(APP_ASSETS, _PLOTLY_READY, html.Div(graph))


def cytoscape_app(scene: Scene, empty: Path) -> dash.Dash:
    """The same nodes and edges in dash-cytoscape, at Plotly's pixels."""
    import dash_cytoscape as cyto

    pos = scene.pixels()
    elements: list[dict[str, Any]] = []
    for key, data in scene.shown.nodes(data=True):
        x, y = pos[key]
        kind = data.get("type", "?")
        # Below and above by turns along a row, as figure.py places Plotly's text.
        below = "below" if int(scene.lay.pos[key][0]) % 2 == 0 else "above"
        elements.append(
            {
                "data": {"id": key, "label": node_label(data)},
                "position": {"x": round(x, 2), "y": round(y, 2)},
                "classes": f"{kind} {below}",
            }
        )
    for a, b in scene.shown.edges():
        elements.append({"data": {"source": a, "target": b}})
    label_from = 9 * scene.label_zoom()  # font px drawn at the zoom the labels start
    stylesheet = [
        {
            "selector": "node",
            "style": {
                "width": 11,
                "height": 11,
                "label": "data(label)",
                "font-size": 9,
                "color": "#333333",
                "text-halign": "center",
                "min-zoomed-font-size": label_from,
                "border-width": 0,
            },
        },
        {"selector": "node.below", "style": {"text-valign": "bottom", "text-margin-y": 1}},
        {"selector": "node.above", "style": {"text-valign": "top", "text-margin-y": -1}},
        *[
            {"selector": f"node.{kind}", "style": {"background-color": colour}}
            for kind, colour in TYPE_COLOURS.items()
        ],
        {"selector": f"node.{GROUP}", "style": {"shape": "rectangle", "width": 16, "height": 16}},
        {
            "selector": "edge",
            "style": {
                "width": 1,
                "line-color": "#9a9a9a",
                "curve-style": "straight",
                "target-arrow-shape": "triangle",
                "target-arrow-color": "#9a9a9a",
                "arrow-scale": 0.8,
            },
        },
    ]
    graph = cyto.Cytoscape(
        id="cy",
        elements=elements,
        layout={"name": "preset", "fit": False},
        zoom=1,
        pan={"x": 0, "y": 0},
        stylesheet=stylesheet,
        autoungrabify=True,
        style={"width": "100%", "height": f"{scene.view['height']}px"},
    )
    return _app(empty, _CYTOSCAPE_READY % scene.shown.number_of_nodes(), html.Div(graph))


def _sigma_static() -> Path:
    spec = importlib.util.find_spec("ipysigma")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("sigma: pip install --no-deps ipysigma (its bundled sigma.js is used)")
    return Path(next(iter(spec.submodule_search_locations))) / "labextension" / "static"


def sigma_app(scene: Scene, empty: Path) -> dash.Dash:
    """The same nodes and edges drawn by sigma.js, at Plotly's pixels (y up, as sigma has it)."""
    from flask import Response, send_from_directory

    static = _sigma_static()
    # sigma and its WebGL programs, graphology: what ``new Sigma`` needs, none of the widget's
    # other libraries (1.2 MB more, which would only slow the page down).
    chunks = [p.name for prefix in SIGMA_CHUNKS for p in static.glob(prefix + ".*.js")]
    pos = scene.pixels()
    height = scene.view["height"]
    nodes = []
    for key, data in scene.shown.nodes(data=True):
        x, y = pos[key]
        group = data.get("type") == GROUP
        nodes.append(
            {
                "key": key,
                "attributes": {
                    "x": round(x, 2),
                    "y": round(-y, 2),
                    "size": 8 if group else 5.5,  # a radius: Plotly's markers are 11 and 16 px
                    "label": node_label(data),
                    "color": TYPE_COLOURS.get(data.get("type", "?"), "#444444"),
                },
            }
        )
    # Sigma's edge size 1 leaves arrowheads of a pixel or two: 2 draws them as readable as
    # Plotly's and Cytoscape's.
    edges = [{"source": a, "target": b, "attributes": {"size": 2}} for a, b in scene.shown.edges()]
    payload = json.dumps(
        {
            "nodes": nodes,
            "edges": edges,
            "bbox": {"x": [0, 1600], "y": [-height, 0]},
            "settings": {
                "defaultEdgeType": "arrow",
                "defaultEdgeColor": "#9a9a9a",
                "stagePadding": 0,
                "labelSize": 9,
                "labelColor": {"color": "#333333"},
                # Sigma labels a node once its drawn radius reaches this, and radii grow as
                # the square root of the zoom: labels show from the zoom the app's do.
                "labelRenderedSizeThreshold": 5.5 * math.sqrt(scene.label_zoom()) - 0.01,
                "labelDensity": 100,  # no grid of its own: every label the zoom allows
            },
        }
    )
    head = _SIGMA_LOADER + _SIGMA_READY + "</script>"
    head += "".join(f'<script src="/bench-sigma/{name}"></script>' for name in chunks)
    head += "<script>"
    box = html.Div(id="sigma", style={"width": "1600px", "height": f"{height}px"})
    app = _app(empty, head, html.Div(box))
    app.server.add_url_rule(
        "/bench-sigma/<path:name>", "sigma", lambda name: send_from_directory(static, name)
    )
    app.server.add_url_rule(
        "/bench-graph.json", "graph", lambda: Response(payload, mimetype="application/json")
    )
    return app


APPS = {"plotly": plotly_app, "cytoscape": cytoscape_app, "sigma": sigma_app}
REDRAW = {"plotly": _PLOTLY_REDRAW, "cytoscape": _CYTOSCAPE_REDRAW, "sigma": _SIGMA_REDRAW}


def serve(app: dash.Dash, host: str = "127.0.0.1") -> tuple[str, Any]:
    """The app on a free port of ``host`` (a loopback address): its URL, and the server."""
    from werkzeug.serving import make_server

    server = make_server(host, 0, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://{host}:{server.server_port}/", server


def redraw(driver: Any, renderer: str, kind: str) -> list[float]:
    """One programmatic zoom, pan or pan back: ms to the next frame and to the one after."""
    script = _PLOTLY_BACK if renderer == "plotly" and kind == "back" else REDRAW[renderer]
    return [float(t) for t in driver.execute_async_script(script, kind)]


def heap_mb(driver: Any) -> float:
    driver.execute_cdp_cmd("HeapProfiler.collectGarbage", {})
    return driver.execute_cdp_cmd("Runtime.getHeapUsage", {})["usedSize"] / 2**20


def measure(
    scene: Scene, renderer: str, runs: int, shots: Path | None, empty: Path
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "graph": scene.name,
        "renderer": renderer,
        "nodes": scene.nodes,
        "drawn": scene.shown.number_of_nodes(),
        "edges": scene.shown.number_of_edges(),
        "paint_s": [],  # to the second frame after drawing (see _HOOK); reported
        "zoom_ms": [],
        "pan_ms": [],
        "paint1_s": [],  # to the first frame after, as bench_app.py times
        "zoom1_ms": [],
        "pan1_ms": [],
        "heap_mb": [],
        "request_ms": [],
        "request_mb": [],
        "error": None,
    }
    app = APPS[renderer](scene, empty)
    driver = headless_chromium(1600, 1000)
    driver.set_script_timeout(PAINT_TIMEOUT)
    try:
        for run in range(runs):
            # Each run on another loopback address, as bench_app.py gives each run a fresh
            # app: another site, so nothing comes from the cache, and its own renderer process,
            # so the heap is this page's alone (pages of one site share one, whatever the port).
            url, server = serve(app, f"127.0.0.{run + 1}")
            try:
                driver.get(url)
                wait(driver, "return window.__bench.drawnAt !== null", timeout=PAINT_TIMEOUT)
            except TimeoutError:
                out["error"] = f"not drawn within {PAINT_TIMEOUT:.0f} s"
                server.shutdown()
                break
            one, two = driver.execute_script("return window.__bench.drawnAt")
            out["paint1_s"].append(one / 1e3)
            out["paint_s"].append(two / 1e3)
            ms, size = driver.execute_script(_GRAPH_REQUEST)
            out["request_ms"].append(ms)
            out["request_mb"].append(size / 2**20)
            out["heap_mb"].append(heap_mb(driver))
            if renderer == "plotly" and not scene.view:
                scene.view = driver.execute_script(_PLOTLY_VIEW)
            time.sleep(SETTLE)
            if run == 0 and shots is not None:
                driver.save_screenshot(str(shots / f"{scene.name}-{renderer}.png"))
            for level in range(2):
                one, two = redraw(driver, renderer, "zoom")
                out["zoom1_ms"].append(one)
                out["zoom_ms"].append(two)
                time.sleep(SETTLE)
                if run == 0 and level == 0 and shots is not None:
                    driver.save_screenshot(str(shots / f"{scene.name}-{renderer}-zoomed.png"))
                one, two = redraw(driver, renderer, "pan")
                out["pan1_ms"].append(one)
                out["pan_ms"].append(two)
                time.sleep(SETTLE)
                redraw(driver, renderer, "back")
                time.sleep(SETTLE)
            server.shutdown()
    finally:
        driver.quit()
    return out


def probe_view(scene: Scene, empty: Path) -> None:
    """Plotly's first view, where the Plotly run did not give it."""
    url, server = serve(plotly_app(scene, empty))
    driver = headless_chromium(1600, 1000)
    try:
        driver.get(url)
        wait(driver, "return window.__bench.drawnAt !== null", timeout=PAINT_TIMEOUT)
        scene.view = driver.execute_script(_PLOTLY_VIEW)
    finally:
        driver.quit()
        server.shutdown()


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", nargs="*", default=list(GRAPHS), choices=GRAPHS)
    parser.add_argument("--renderers", nargs="*", default=list(RENDERERS), choices=RENDERERS)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shots", type=Path, default=ROOT / "docs" / "img" / "renderers")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    if args.shots is not None:
        args.shots.mkdir(parents=True, exist_ok=True)
    renderers = ["plotly"] + [r for r in args.renderers if r != "plotly"]  # Plotly's view first
    results = []
    with tempfile.TemporaryDirectory() as empty:
        for scene in scenes(args.graphs):
            print(f"{scene.name}: {load()}", flush=True)
            for renderer in renderers:
                if renderer not in args.renderers:
                    probe_view(scene, Path(empty))
                    continue
                r = measure(scene, renderer, args.runs, args.shots, Path(empty))
                results.append(r)
                m = {k: _median(v) for k, v in r.items() if isinstance(v, list)}
                print(
                    f"  {renderer:9} {scene.name} ({r['drawn']} of {r['nodes']} nodes drawn, "
                    f"{r['edges']} edges): first paint {m['paint_s']:.2f} s (runs "
                    f"{', '.join(f'{p:.2f}' for p in r['paint_s'])}; next frame "
                    f"{m['paint1_s']:.2f} s); zoom {m['zoom_ms']:.0f} ms, pan {m['pan_ms']:.0f} ms "
                    f"(max {max(r['zoom_ms'] + r['pan_ms'], default=float('nan')):.0f}; next "
                    f"frame {m['zoom1_ms']:.0f} / {m['pan1_ms']:.0f}); heap {m['heap_mb']:.0f} MB; "
                    f"graph request {m['request_ms']:.0f} ms, {m['request_mb']:.2f} MB"
                    + (f"; {r['error']}" if r["error"] else ""),
                    flush=True,
                )
            print(f"{scene.name}: {load()}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
