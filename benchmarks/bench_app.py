"""The dashboard in headless Chromium: first paint, pan and zoom, clicks, and whether the view
can be read.

    python benchmarks/bench_app.py [--graphs NAME ...] [--runs 3] [--shots DIR]

Needs Debian's chromium and chromium-driver and selenium (the test extra). The graphs:

- ``deep``: samples/large/hf-deep-llama-b1.json.gz, a real 10,780-node decode step (224 layers);
- ``deep-dot``: the same graph's verbose DOT dump, no module paths;
- ``all-types``: samples/dot/explicit-all-types/flags-verbose.dot, every node type, child
  graphs and conditional bodies;
- ``llama``: samples/bundles/tiny-llama-b1.json.gz (212 nodes);
- ``100k``: the tiny-llama graph chained to 100,064 nodes (benchmarks/_big.py);
- ``deep-expanded``, ``100k-expanded``: the same after "expand all": every node drawn (WebGL).

Each opens in a fresh app, at 1600x1000. Measured, per run:

- first paint: from asking for the page to the DAG drawn with its nodes;
- redraw: ``Plotly.relayout`` to a zoom in and to a pan, as the wheel and the drag do, until
  Plotly has drawn the new view: ``plotly_afterplot``, then the second frame (WebGL traces,
  above 3,000 nodes, draw in a task after the first). Above 3,000 nodes the page gives Plotly
  only a window around the view (assets/gs-4-cull.js): a pan of a fifth of the
  view stays in it, and a far pan, one and a half views, leaves it and is timed to the
  redraw of the new window;
- click: a real mouse click (Selenium's pointer) on the pixel of a drawn node, at the first
  view and zoomed in twice, from the button's release until the panel shows that node (a
  frame after it is in the page): the time, and whether the panel shows the node that was
  under the pointer.

- step: with a node selected, eight presses of the right arrow key (to the node's first
  successor) back to back, each as soon as the panel shows the last one's node: the wall time
  per step, seen from the benchmark (so it holds the page's work after each step, and
  Selenium's round trip);

And once, on the first view: nodes drawn, nodes labelled, pairs of labels whose boxes overlap,
and pairs of markers that cover each other (centres closer than a marker's size), with a
screenshot of the page kept in ``--shots``.

Targets (issue 14): first paint <= 2 s; a pan or zoom redraw <= 150 ms; click to panel
<= 100 ms, hitting the node under the pointer at every zoom.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from graphscope.app.serve.browser import headless_chromium, serve_in_thread
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.by import By

import graphscope

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _big import big_decode_bundle  # noqa: E402

GRAPHS = {
    "deep": ROOT / "samples" / "large" / "hf-deep-llama-b1.json.gz",
    "deep-dot": ROOT / "samples" / "large" / "hf-deep-llama-b1.dot",
    "all-types": ROOT / "samples" / "dot" / "explicit-all-types" / "flags-verbose.dot",
    "llama": ROOT / "samples" / "bundles" / "tiny-llama-b1.json.gz",
}
CLICK_GAP = 1.0  # seconds between clicks, as a person's come
_DRAWN = """
const gd = document.querySelector('#dag .js-plotly-plot');
if (!gd || !gd._fullData || !gd.data) return false;
const nodes = gd.data.filter(t => t.customdata && t.customdata.length);
return nodes.length > 0 && !!gd.querySelector('.scatterlayer .trace, canvas.gl-canvas');
"""
# Pan or zoom, timed by the page itself: relayout, Plotly's afterplot, the second frame. A
# culled view (assets/gs-4-cull.js) that left its window is drawn again for a new one: the
# time runs on to that redraw's second frame. `far` pans by one and a half views, out of the
# window; `pan` by a fifth of one.
_REDRAW = """
const done = arguments[arguments.length - 1];
const gd = document.querySelector('#dag .js-plotly-plot');
const [x0, x1] = gd._fullLayout.xaxis.range, [y0, y1] = gd._fullLayout.yaxis.range;
const kind = arguments[0];
const w = x1 - x0, h = y1 - y0;
const shift = kind === 'far' ? 1.5 * w : w / 5;
const update = kind === 'zoom'
  ? {'xaxis.range': [x0 + w / 4, x1 - w / 4], 'yaxis.range': [y0 + h / 4, y1 - h / 4]}
  : {'xaxis.range': [x0 + shift, x1 + shift], 'yaxis.range': [y0, y1]};
const begun = performance.now();
const frames = (then) => requestAnimationFrame(() => requestAnimationFrame(then));
const finish = () => {
  if (!gd.__gsRecull) { done(performance.now() - begun); return; }
  gd.once('plotly_afterplot', () => frames(finish));
};
gd.once('plotly_afterplot', () => frames(finish));
window.Plotly.relayout(gd, update);
"""
# The nodes drawn in view: key, centre in page pixels, marker size, label box.
_VIEW = """
const gd = document.querySelector('#dag .js-plotly-plot');
const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
const box = gd.querySelector('.nsewdrag') || gd;
const r = box.getBoundingClientRect();
const nodes = [];
gd._fullData.forEach((t, i) => {
  const keys = t.customdata;
  if (!keys || !keys.length || !t.visible || t.name === 'selected') return;
  if (t.name && t.name.startsWith('matches')) return;
  const size = Array.isArray(t.marker.size) ? t.marker.size : null;
  for (let j = 0; j < keys.length; j++) {
    const px = r.left + xa.l2p(t.x[j]), py = r.top + ya.l2p(t.y[j]);
    if (px < r.left || px > r.right || py < r.top || py > r.bottom) continue;
    const label = Array.isArray(t.meta) ? t.meta[j] : t.text;
    nodes.push({key: keys[j], x: px, y: py, size: size ? size[j] : t.marker.size,
                text: label ? (Array.isArray(label) ? label[j] : label) : ''});
  }
});
// The labels the page draws in its own layer (assets/gs-1-labels.js), and any Plotly drew.
const labels = [...gd.querySelectorAll('svg.gs-labels text, .scatterlayer .textpoint text')]
  .filter(e => e.textContent).map(e => {
    const b = e.getBoundingClientRect();
    return [b.left, b.top, b.right, b.bottom];
  }).filter(b => b[2] > r.left && b[0] < r.right && b[3] > r.top && b[1] < r.bottom);
return {nodes: nodes, labels: labels, plot: [r.left, r.top, r.right, r.bottom]};
"""
_WATCH = """
window.__panelShown = undefined;
window.__clickAt = undefined;
const key = arguments[0];
// From the button's release (the event's own time stamp, taken before any handler of the
// page or of Plotly ran): the user's click, not Plotly's event or the page's answer to it.
document.addEventListener('mouseup', (event) => { window.__clickAt = event.timeStamp; },
                          {capture: true, once: true});
const observer = new MutationObserver(() => {
  const panel = document.getElementById('node-panel');
  if (panel && panel.textContent.includes(key) && document.getElementById('node-title')) {
    observer.disconnect();
    requestAnimationFrame(() => { window.__panelShown = performance.now(); });
  }
});
observer.observe(document.getElementById('node-panel'), {childList: true, subtree: true,
                                                         characterData: true});
"""


# One arrow-key step: press, then the panel shows another node (a frame after), or -1.
_STEP = """
const done = arguments[arguments.length - 1];
const shown = () => (document.getElementById('node-title') || {}).textContent + '|' +
  document.getElementById('node-panel').textContent.length;
const before = shown();
const observer = new MutationObserver(() => {
  if (document.getElementById('node-title') && shown() !== before) {
    observer.disconnect();
    requestAnimationFrame(() => done(1));
  }
});
observer.observe(document.getElementById('node-panel'), {childList: true, subtree: true,
                                                         characterData: true});
document.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true}));
setTimeout(() => { observer.disconnect(); done(-1); }, 5000);
"""


def steps(driver: Any, count: int = 8) -> float:
    """Wall ms per arrow-key step over ``count`` steps back to back (nan if one went nowhere)."""
    start = time.perf_counter()
    for _ in range(count):
        if driver.execute_async_script(_STEP) < 0:
            return float("nan")
    return (time.perf_counter() - start) * 1000 / count


def wait(driver: Any, script: str, timeout: float = 60.0) -> float:
    start = time.perf_counter()
    while not driver.execute_script(script):
        if time.perf_counter() - start > timeout:
            raise TimeoutError(script)
        time.sleep(0.01)
    return time.perf_counter()


def overlaps(boxes: list[list[float]]) -> int:
    """Pairs of boxes (left, top, right, bottom) that intersect, by a sweep along x."""
    boxes = sorted(boxes)
    count = 0
    for i, (_, t1, r1, b1) in enumerate(boxes):
        for l2, t2, _, b2 in boxes[i + 1 :]:
            if l2 >= r1:
                break
            if t2 < b1 and t1 < b2:
                count += 1
    return count


def covered(nodes: list[dict[str, Any]]) -> int:
    """Pairs of drawn markers whose centres are closer than the larger one's radius."""
    cells: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for node in nodes:
        cells.setdefault((int(node["x"] // 16), int(node["y"] // 16)), []).append(node)
    count = 0
    for (cx, cy), members in cells.items():
        near = [
            n for dx in (-1, 0, 1) for dy in (-1, 0, 1) for n in cells.get((cx + dx, cy + dy), [])
        ]
        for a in members:
            for b in near:
                if a["key"] < b["key"]:
                    reach = max(a["size"], b["size"]) / 2
                    if (a["x"] - b["x"]) ** 2 + (a["y"] - b["y"]) ** 2 < reach**2:
                        count += 1
    return count


def readability(view: dict[str, Any]) -> dict[str, int]:
    nodes = view["nodes"]
    return {
        "drawn_in_view": len(nodes),
        "labelled": len(view["labels"]),  # labels drawn in the plot area
        "overlapping_labels": overlaps(view["labels"]),
        "covered_markers": covered(nodes),
    }


def click(driver: Any, node: dict[str, Any]) -> tuple[float, bool]:
    """A real click at the node's pixel: (ms to the panel, whether it shows that node)."""
    driver.execute_script(_WATCH, node["key"])
    # The pointer moves to the node's pixel in the viewport, as a mouse would, and clicks.
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(round(node["x"]), round(node["y"]))
    actions.pointer_action.pause(0.2)
    actions.pointer_action.click()
    actions.perform()
    try:
        wait(driver, "return window.__panelShown !== undefined", timeout=15)
    except TimeoutError:
        return float("nan"), False
    shown = driver.execute_script("return window.__panelShown - window.__clickAt")
    title = driver.find_element(By.ID, "node-panel").text
    return float(shown), node["key"] in title


def pick(nodes: list[dict[str, Any]], plot: list[float]) -> dict[str, Any] | None:
    """A node near the middle of the plot, away from its edges and the legend."""
    left, top, right, bottom = plot
    inside = [
        n
        for n in nodes
        if left + 40 < n["x"] < right - 40
        and top + 60 < n["y"] < bottom - 30
        and not str(n["key"]).startswith("group:")
    ]
    if not inside:
        return None
    cx, cy = (left + right) / 2, (top + bottom) / 2
    return min(inside, key=lambda n: (n["x"] - cx) ** 2 + (n["y"] - cy) ** 2)


# The nodes among some traces (not the rings and marks), as an expression of a function.
_NODES_IN = """((data) => data.filter(t => t.hoverinfo !== 'skip' && t.customdata)
  .reduce((n, t) => n + t.customdata.length, 0))"""
_DAG = "document.querySelector('#dag .js-plotly-plot')"
# The nodes of the DAG's figure: the whole of it where the page culls what Plotly draws.
_NODES_DRAWN = f"{_NODES_IN}(((gd) => gd.__gsCull ? gd.__gsCull.full : gd.data)({_DAG}))"
# The nodes Plotly was given to draw.
_NODES_PLOTTED = f"return {_NODES_IN}({_DAG}.data);"


def measure(
    name: str, path: Path, runs: int, shots: Path | None, expand: bool = False
) -> dict[str, Any]:
    G = graphscope.load(path)
    out: dict[str, Any] = {
        "graph": name,
        "nodes": G.number_of_nodes(),
        "paint_s": [],
        "zoom_ms": [],
        "pan_ms": [],
        "far_ms": [],
        "click_ms": [],
        "step_ms": [],
        "hits": 0,
        "clicks": 0,
    }
    driver = headless_chromium(1600, 1000)
    try:
        for run in range(runs):
            url, server = serve_in_thread([path])
            start = time.perf_counter()
            driver.get(url)
            out["paint_s"].append(wait(driver, _DRAWN) - start)
            time.sleep(CLICK_GAP)  # the hover texts and the timeline come after the paint
            if expand:  # every node drawn, as "expand all" does it
                driver.find_element(By.ID, "expand-all").click()
                want = G.number_of_nodes()
                wait(driver, f"return {_NODES_DRAWN} >= {want};", timeout=180)
                time.sleep(3 * CLICK_GAP)  # its hover texts
            view = driver.execute_script(_VIEW)
            if run == 0:
                out["view"] = readability(view)
                out["drawn"] = driver.execute_script(f"return {_NODES_DRAWN};")
                out["plotted"] = driver.execute_script(_NODES_PLOTTED)
                if shots is not None:
                    shots.mkdir(parents=True, exist_ok=True)
                    driver.save_screenshot(str(shots / f"{name}.png"))
            for level in range(3):  # the first view, then zoomed in twice
                node = pick(view["nodes"], view["plot"])
                if node is not None:
                    ms, hit = click(driver, node)
                    out["clicks"] += 1
                    out["hits"] += hit
                    if ms == ms:
                        out["click_ms"].append(ms)
                    time.sleep(CLICK_GAP)
                    if level == 0:
                        ms = steps(driver)
                        if ms == ms:
                            out["step_ms"].append(ms)
                        time.sleep(CLICK_GAP)
                if level < 2:
                    out["zoom_ms"].append(driver.execute_async_script(_REDRAW, "zoom"))
                    out["pan_ms"].append(driver.execute_async_script(_REDRAW, "pan"))
                    out["far_ms"].append(driver.execute_async_script(_REDRAW, "far"))
                    # Back by both pans, so the middle of the first view stays in view.
                    driver.execute_script(
                        "const gd = document.querySelector('#dag .js-plotly-plot');"
                        "const [a, b] = gd._fullLayout.xaxis.range; const w = (b - a) * 1.7;"
                        "window.Plotly.relayout(gd, {'xaxis.range': [a - w, b - w]});"
                    )
                    time.sleep(1.0)
                    view = driver.execute_script(_VIEW)
            server.shutdown()
    finally:
        driver.quit()
    return out


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--graphs", nargs="*", default=[*GRAPHS, "100k", "deep-expanded", "100k-expanded"]
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shots", type=Path, default=ROOT / "docs" / "img" / "bench")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.graphs:
            base = name.removesuffix("-expanded")
            if base == "100k":
                path = Path(tmp) / "decode-100k.json.gz"
                if not path.exists():
                    graphscope.save(big_decode_bundle(100_000), path)
            else:
                path = GRAPHS[base]
            r = measure(name, path, args.runs, args.shots, expand=name.endswith("-expanded"))
            results.append(r)
            v = r["view"]
            paints = ", ".join(f"{p:.2f}" for p in r["paint_s"])
            print(
                f"{name} ({r['nodes']} nodes, {r['drawn']} drawn, {r['plotted']} given to "
                f"Plotly): first paint "
                f"{_median(r['paint_s']):.2f} s (runs {paints}); "
                f"zoom {_median(r['zoom_ms']):.0f} ms, pan {_median(r['pan_ms']):.0f} ms "
                f"(max {max(r['zoom_ms'] + r['pan_ms'], default=float('nan')):.0f}), far pan "
                f"{_median(r['far_ms']):.0f} ms (max {max(r['far_ms'], default=float('nan')):.0f});"
                f" "
                f"click to panel {_median(r['click_ms']):.0f} ms (max "
                f"{max(r['click_ms'], default=float('nan')):.0f}), {r['hits']} of {r['clicks']} "
                f"clicks on the node under the pointer; arrow-key step "
                f"{_median(r['step_ms']):.0f} ms "
                f"(max {max(r['step_ms'], default=float('nan')):.0f}); "
                f"first view: {v['drawn_in_view']} nodes in "
                f"view, {v['labelled']} labelled, {v['overlapping_labels']} overlapping label "
                f"pairs, {v['covered_markers']} covered marker pairs",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
