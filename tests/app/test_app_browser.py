"""The dashboard in a real headless Chromium: open a sample, click a node, open a bad file."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("selenium")
from graphscope.app.serve.browser import have_chromium, headless_chromium, serve_in_thread
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

import graphscope
from graphscope.analysis.report import step_report

BUNDLES = Path(__file__).resolve().parents[2] / "samples" / "bundles"

if not have_chromium():
    if os.environ.get("GRAPHSCOPE_REQUIRE_BROWSER"):
        raise RuntimeError("CI needs Debian's chromium and chromium-driver: .ci/run installs them")
    pytest.skip(
        "no chromium/chromedriver (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = headless_chromium()
    yield driver
    driver.quit()


# The node labels the page draws, in its own layer over the DAG (assets/gs-1-labels.js).
_LABELS_IN_VIEW = (
    "return [...document.querySelectorAll('#dag svg.gs-labels text')].map(t => t.textContent);"
)


def _script_errors(driver: Any) -> list[str]:
    """The errors the page's scripts logged since the last call."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _wait(driver: Any, css: str, timeout: float = 20) -> Any:
    return WebDriverWait(
        driver, timeout, ignored_exceptions=[StaleElementReferenceException]
    ).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def test_clicking_a_node_shows_its_kernel_and_timing(browser: Any) -> None:
    url, server = serve_in_thread([BUNDLES / "tiny-gpt-b1.json.gz"])
    try:
        browser.get(url)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        # The node traces come after the edge trace; click the first kernel node drawn.
        points = browser.find_elements(
            By.CSS_SELECTOR, "#dag .scatterlayer .trace:nth-child(2) .points path"
        )
        assert len(points) > 20
        # Hover texts are patched in after the first paint; then a node shows its name and time.
        WebDriverWait(browser, 20).until(
            lambda d: d.execute_script(
                "const gd = document.querySelector('#dag .js-plotly-plot');"
                "return gd.data[1].hovertext && gd.data[1].hovertext.length > 20;"
            )
        )
        points = browser.find_elements(
            By.CSS_SELECTOR, "#dag .scatterlayer .trace:nth-child(2) .points path"
        )
        ActionChains(browser).move_to_element(points[5]).pause(0.3).perform()
        label = _wait(browser, "#dag .hoverlayer .hovertext").text
        assert "replay" in label and " us" in label and "graph_" in label
        # Plotly takes clicks on its drag layer above the points: a real mouse move and click
        # at the node's place, as a person does it.
        ActionChains(browser).move_to_element(points[5]).pause(0.3).click().perform()
        title = _wait(browser, "#node-title")
        timing = _wait(browser, "#node-timing")
        assert title.text  # the kernel's short name
        assert "replay median" in timing.text and " us" in timing.text
        launch = browser.find_element(By.ID, "node-launch").text
        assert "grid" in launch and "block" in launch and "registers per thread" in launch
        assert title.text in launch  # the same kernel's name in the launch table
        # The selection ring is drawn by the page round the clicked node, and round its bars
        # on the timeline; Plotly's own ring traces are left empty (assets/gs-1-labels.js).
        box = points[5].rect
        centre = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        ring = WebDriverWait(browser, 10).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#dag svg.gs-labels circle.gs-ring")
        )
        assert len(ring) == 1
        drawn = ring[0].rect
        assert abs(drawn["x"] + drawn["width"] / 2 - centre[0]) < 2
        assert abs(drawn["y"] + drawn["height"] / 2 - centre[1]) < 2
        bars = WebDriverWait(browser, 10).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline svg.gs-labels rect.gs-ring")
        )
        assert 1 <= len(bars) <= 3  # its launch call, eager kernel and replayed kernel
        assert browser.execute_script(
            "return ['#dag', '#timeline'].map(id => document.querySelector(id + ' .js-plotly-plot')"
            ".data.find(t => t.name === 'selected').x.length);"
        ) == [0, 0]
        # The page draws with graphscope's own plotly.js, holding only the traces it uses.
        traces = browser.execute_script("return Object.keys(Plotly.PlotSchema.get().traces)")
        assert sorted(traces) == ["bar", "scatter", "scattergl"]
        os.makedirs("/tmp/shots", exist_ok=True)
        browser.save_screenshot("/tmp/shots/node-panel.png")
    finally:
        server.shutdown()


def test_a_bad_file_shows_its_error_and_the_app_goes_on(browser: Any, tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"nodes": [1, 2')
    url, server = serve_in_thread([bad, BUNDLES / "tiny-gpt-b1.json.gz"])
    try:
        browser.get_log("browser")  # what earlier tests left
        browser.get(url)
        WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
            lambda d: "broken.json" in d.find_element(By.ID, "load-error").text
        )
        # The page's scripts find no DAG to draw on, and say nothing of it (assets/gs-*.js
        # read the empty plot's data: a TypeError twice on every such page).
        time.sleep(0.5)  # its watch runs every 200 ms
        assert _script_errors(browser) == []
        # Pick the good file from the list: the page still works.
        browser.find_element(By.CSS_SELECTOR, "#source").click()

        def pick(d: Any) -> bool:
            # The list may be redrawn while open (the failed file marked): find it afresh.
            options = d.find_elements(By.CSS_SELECTOR, "[role=option]")
            good = [o for o in options if "tiny-gpt-b1" in o.text]
            if len(good) != 1:
                return False
            good[0].click()
            return True

        WebDriverWait(browser, 10, ignored_exceptions=[StaleElementReferenceException]).until(pick)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        assert not browser.find_elements(By.ID, "load-error")
    finally:
        server.shutdown()


def test_clicking_the_eager_row_selects_the_node(browser: Any) -> None:
    url, server = serve_in_thread([BUNDLES / "tiny-gpt-b1.json.gz"])
    try:
        browser.get(url)
        bars = WebDriverWait(
            browser, 20, ignored_exceptions=[StaleElementReferenceException]
        ).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline .barlayer .trace .point path")
        )
        assert len(bars) > 60
        # Zoom out is the default view: pick the widest bar of the eager GPU row's trace.
        traces = browser.find_elements(By.CSS_SELECTOR, "#timeline .barlayer .trace")
        gpu_bars = traces[2].find_elements(By.CSS_SELECTOR, ".point path")
        widest = max(gpu_bars, key=lambda b: b.size["width"])
        ActionChains(browser).move_to_element(widest).pause(0.3).click().perform()
        title = _wait(browser, "#node-title")
        assert title.text and "eager duration" in browser.find_element(By.ID, "node-timing").text
        # Zoomed out past the start, the axis stops at 0: no time runs before a row starts.
        start = browser.execute_script(
            "const gd = document.querySelector('#timeline .js-plotly-plot');"
            "return window.Plotly.relayout(gd, {'xaxis.range': [-300, 200]})"
            ".then(() => gd._fullLayout.xaxis.range[0]);"
        )
        assert start == 0
    finally:
        server.shutdown()


def test_a_drag_pans_and_selects_nothing_and_a_click_takes_the_node_under_it(
    browser: Any,
) -> None:
    """The page finds the clicked node itself (assets/gs-2-clicks.js): a press that moves is a
    pan, not a click, and a click between nodes selects nothing."""
    url, server = serve_in_thread([BUNDLES / "tiny-gpt-b1.json.gz"])
    nodes = "#dag .scatterlayer .trace:nth-child(2) .points path"
    try:
        browser.get(url)
        _wait(browser, nodes)
        points = browser.find_elements(By.CSS_SELECTOR, nodes)
        ranges = "const gd = document.querySelector('#dag .js-plotly-plot');"
        ranges += "return gd._fullLayout.xaxis.range.slice();"
        before = browser.execute_script(ranges)
        ActionChains(browser).move_to_element(points[7]).click_and_hold().move_by_offset(
            60, 0
        ).release().perform()
        WebDriverWait(browser, 10).until(lambda d: d.execute_script(ranges) != before)
        # A click where no node is: the empty top-left of the plot area, under the legend.
        area = browser.find_element(By.CSS_SELECTOR, "#dag .nsewdrag")
        ActionChains(browser).move_to_element_with_offset(area, 0, 0).click().perform()
        time.sleep(1.5)  # what a wrong selection would need to arrive: a round trip, a render
        assert not browser.find_elements(By.ID, "node-title")  # neither selected anything
        points = browser.find_elements(By.CSS_SELECTOR, nodes)
        key = browser.execute_script(
            "const gd = document.querySelector('#dag .js-plotly-plot');"
            "return gd.data[1].customdata[3];"
        )
        ActionChains(browser).move_to_element(points[3]).pause(0.2).click().perform()
        _wait(browser, "#node-title")
        assert key in browser.find_element(By.ID, "node-panel").text
    finally:
        server.shutdown()


def test_collapse_all_then_a_click_opens_a_layer(browser: Any) -> None:
    url, server = serve_in_thread([BUNDLES / "tiny-llama-b1.json.gz"])
    try:
        browser.get(url)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        browser.find_element(By.ID, "collapse-all").click()
        note = _wait(browser, "#collapsed-note")
        # embed_tokens, model, rotary_emb, the four layers as one run, norm, lm_head, and
        # the memcpy outside any module
        assert note.text.startswith("7 groups collapsed (212 nodes in all)")
        nodes = "#dag .scatterlayer .trace:nth-child(2) .points path"  # after the edges' trace
        WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, nodes)) == 7
        )
        squares = browser.find_elements(By.CSS_SELECTOR, nodes)
        # Click the run of layers: it opens to layer 0 and a fold of layers 1..3.
        ActionChains(browser).move_to_element(squares[3]).pause(0.3).click().perform()
        WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
            lambda d: d.find_element(By.ID, "collapsed-note").text.startswith("8 groups")
        )
        wait_labels = WebDriverWait(
            browser, 20, ignored_exceptions=[StaleElementReferenceException]
        )
        wait_labels.until(
            lambda d: {"layers.0", "layers 1..3 x3"} <= set(d.execute_script(_LABELS_IN_VIEW))
        )
    finally:
        server.shutdown()


def test_a_dropped_file_opens_and_a_bad_one_shows_its_error(browser: Any, tmp_path: Path) -> None:
    url, server = serve_in_thread([BUNDLES / "tiny-gpt-b1.json.gz"])
    try:
        browser.get(url)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        # Dash loads the upload box's script after the page (async-upload.js): its input is
        # there once that has run, not when the DAG is.
        picker = _wait(browser, "#upload input[type=file]")
        picker.send_keys(str(BUNDLES / "tiny-gpt-parallel-b1.json.gz"))
        WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
            lambda d: (
                "tiny-gpt-parallel-b1.json.gz (uploaded)" in d.find_element(By.ID, "source").text
            )
        )
        WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
            lambda d: d.find_element(By.ID, "cards").text.startswith("63\nnodes")
        )  # the uploaded graph is drawn
        bad = tmp_path / "cut.json.gz"
        bad.write_bytes((BUNDLES / "tiny-gpt-b1.json.gz").read_bytes()[:3000])
        picker = _wait(browser, "#upload input[type=file]")
        picker.send_keys(str(bad))
        error = _wait(browser, "#load-error")
        assert error.text.startswith("cut.json.gz") and "\n" not in error.text
    finally:
        server.shutdown()


def _pick(browser: Any, dropdown_id: str, text: str) -> None:
    """Choose the option of a dcc.Dropdown whose label contains ``text``."""
    browser.find_element(By.ID, dropdown_id).click()  # Dash 4: a button opening a list
    WebDriverWait(browser, 10).until(
        lambda d: any(text in o.text for o in d.find_elements(By.CSS_SELECTOR, "[role=option]"))
    )
    [option] = [
        o for o in browser.find_elements(By.CSS_SELECTOR, "[role=option]") if text in o.text
    ]
    option.click()
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)


def test_report_compare_and_buckets_pages(browser: Any) -> None:
    files = [BUNDLES / f"tiny-llama-b{n}.json.gz" for n in (1, 8)] + [
        BUNDLES / "tiny-gpt-b1.json.gz"
    ]
    url, server = serve_in_thread(files)
    try:
        browser.get(url)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        pages = browser.find_elements(By.CSS_SELECTOR, "#page input")
        pages[1].click()  # report
        speedup = _wait(browser, "#speedup")
        report = step_report(graphscope.load(files[0]))
        assert report.speedup is not None and report.cpu_overhead_reduction_pct is not None
        assert speedup.text == (
            f"Speedup {report.speedup:.1f}x; CPU launch overhead down "
            f"{report.cpu_overhead_reduction_pct:.0f}%"
        )
        assert "q_proj, k_proj, v_proj" in browser.find_element(By.ID, "findings").text
        assert not browser.find_element(By.ID, "graph-page").is_displayed()
        pages[2].click()  # compare
        _pick(browser, "compare-a", "llama-b1")
        _pick(browser, "compare-b", "llama-b8")
        verdict = _wait(browser, "#update-verdict")
        assert "B can update an executable graph of A in place" in verdict.text
        hazards = _wait(browser, "#update-hazards")
        assert "same-name-other-function" in hazards.text and "nvjet_sm90" in hazards.text
        assert "212 nodes matched" in browser.find_element(By.ID, "compare-counts").text
        pages[3].click()  # buckets: the files beside the bundles, tiny-gpt's first
        _wait(browser, "#bucket-table")
        _pick(browser, "buckets-file", "tiny-llama.buckets")
        WebDriverWait(browser, 10).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "#bucket-table tr")) == 5
        )
        table = browser.find_element(By.ID, "bucket-table")
        assert len(table.find_elements(By.TAG_NAME, "tr")) == 5  # a header and four buckets
        budget = browser.find_element(By.ID, "budget")
        budget.send_keys("8\n")
        best = _wait(browser, "#bucket-best")
        assert "buckets 2 4 8" in best.text
        pages[0].click()  # back to the graph, drawn as it was
        assert browser.find_element(By.ID, "dag").is_displayed()
    finally:
        server.shutdown()


def _long_eager_step(tmp_path: Path) -> Path:
    """The tiny-llama b1 bundle with its eager CUDA calls repeated 3 times over (each copy
    after the last, correlation ids past every one in the trace, so that none joins a GPU
    op): more calls than a row draws."""
    import graphscope

    G = graphscope.load(BUNDLES / "tiny-llama-b1.json.gz")
    trace = G.graph["eager_trace"]
    rows = trace["api"]["rows"]
    span = max(row[2] for row in rows) + 1000
    past = max(row[3] for part in ("api", "gpu") for row in trace[part]["rows"]) + 1
    extra = [
        [row[0], row[1] + k * span, row[2] + k * span, past + i + k * len(rows), row[4]]
        for k in (1, 2, 3)
        for i, row in enumerate(rows)
    ]
    G.graph["eager_trace"]["api"]["rows"] = rows + extra
    return graphscope.save(G, tmp_path / "long-eager.json.gz")


_ZOOM = """
const gd = document.querySelector('#timeline .js-plotly-plot');
const range = gd.layout.xaxis.range;
if (!(range[0] === 0 && range[1] === 300)) {
  Plotly.relayout(gd, {'xaxis.range[0]': 0, 'xaxis.range[1]': 300});
}
"""
_MERGED = """
const gd = document.querySelector('#timeline .js-plotly-plot');
if (!gd || !gd.data) return null;
const calls = gd.data.find(t => t.name === 'other CUDA calls');
if (!calls) return null;
return [calls.hovertext.filter(t => t && t.includes('zoom in to see each')).length,
        calls.hovertext.length];
"""


def test_a_long_eager_trace_is_merged_until_zoomed(browser: Any, tmp_path: Path) -> None:
    from graphscope.app.render.timeline import MAX_BARS

    url, server = serve_in_thread([_long_eager_step(tmp_path)])
    try:
        browser.get(url)
        merged = WebDriverWait(browser, 30).until(lambda d: d.execute_script(_MERGED))
        assert merged[0] > 0 and merged[1] <= 3 * (MAX_BARS + 1)  # WebGL: 3 points a bar

        # Zoom into the first 300 us, as a drag on the axis does: the server redraws it bar by
        # bar, with no merged bar left. (Asked again until the axis holds it: a zoom made while
        # the page is still settling can be drawn over.)
        def zoomed_in(d: Any) -> Any:
            d.execute_script(_ZOOM)
            merged = d.execute_script(_MERGED)
            return merged if merged and merged[0] == 0 else None

        zoomed = WebDriverWait(browser, 30, poll_frequency=1).until(zoomed_in)
        assert zoomed[1] > 0
        window = browser.execute_script(
            "return document.querySelector('#timeline .js-plotly-plot').layout.xaxis.range"
        )
        assert window == [0, 300]
    finally:
        server.shutdown()


def test_a_recording_opens_on_its_catalog_and_a_graph_id_opens_the_graph(browser: Any) -> None:
    recordings = BUNDLES.parent / "recordings"
    url, server = serve_in_thread([recordings / "torch-buckets", recordings / "gpt-fast"])
    try:
        browser.get(url)
        links = WebDriverWait(browser, 20).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#catalog-page button.link") or False
        )
        page = browser.find_element(By.ID, "catalog-page").text
        assert "torch_buckets.py:102 in capture" in page and "decode_one_token" in page
        assert "recorded again after g2: input 0: [4, 1] -> [2, 1]" in page
        assert [link.text for link in links] == ["g2", "g5", "g8", "g2", "g5", "g8"]
        links[4].click()  # gpt-fast's batch-1 graph
        _wait(browser, "#dag .scatterlayer .trace .points path")
        WebDriverWait(browser, 20).until(
            lambda d: "gpt-fast pid1355/g5" in d.find_element(By.ID, "source").text
        )
        assert browser.find_element(By.ID, "catalog-page").value_of_css_property("display") == (
            "none"
        )
        cards = browser.find_element(By.ID, "cards").text
        assert "replays in the program" in cards and "inductor" in cards
    finally:
        server.shutdown()


DEEP = BUNDLES.parent / "large" / "hf-deep-llama-b1.json.gz"
_RANGES = (
    "const gd = document.querySelector('#dag .js-plotly-plot');"
    "return [gd._fullLayout.xaxis.range, gd._fullLayout.yaxis.range];"
)


# The DAG's nodes in view: of the whole figure the page holds, and of what Plotly was given
# (assets/gs-4-cull.js culls a WebGL view to a window around it); and how many it was given.
_NODES_IN_VIEW = """
const gd = document.querySelector('#dag .js-plotly-plot');
const [x0, x1] = [...gd._fullLayout.xaxis.range].sort((a, b) => a - b);
const [y0, y1] = [...gd._fullLayout.yaxis.range].sort((a, b) => a - b);
const nodes = (data) => data.filter(t => t.customdata && t.hoverinfo !== 'skip');
const inView = (data) => nodes(data).flatMap(t => t.customdata.filter((k, i) =>
  t.x[i] >= x0 && t.x[i] <= x1 && t.y[i] >= y0 && t.y[i] <= y1)).sort();
return [inView(gd.__gsCull ? gd.__gsCull.full : gd.data), inView(gd.data),
        nodes(gd.data).reduce((n, t) => n + t.customdata.length, 0), !!gd.__gsRecull];
"""


def _text(driver: Any, element_id: str) -> str:
    found = driver.find_elements(By.ID, element_id)
    return str(found[0].text) if found else ""


def _area(ranges: Any) -> float:
    """How much of the graph ``_RANGES``' answer shows: its x span times its y span. The
    overview of blocks is a narrow column and the opened graph rows of kernels, so neither
    span alone says whether the view zoomed in."""
    (x0, x1), (y0, y1) = ranges
    return abs(float(x1 - x0) * float(y1 - y0))


def test_a_large_graph_reads_finds_follows_and_shares(browser: Any) -> None:
    """The 10,780-node sample: labels, search steps that move the view, a link that
    restores the node after a reload, and the arrow keys along its edges."""
    url, server = serve_in_thread([DEEP])
    wait = WebDriverWait(browser, 30, ignored_exceptions=[StaleElementReferenceException])
    try:
        browser.get(url)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        # One module level: the first layer's attention and MLP as blocks, the other 223
        # layers as one.
        wait.until(
            lambda d: (
                {"self_attn", "mlp", "layers 1..223 x223"} <= set(d.execute_script(_LABELS_IN_VIEW))
            )
        )
        before = browser.execute_script(_RANGES)
        search = browser.find_element(By.ID, "search")
        assert "as you type" in (search.get_attribute("placeholder") or "")
        search.send_keys("no-such-kernel")  # no Enter: it searches once typing pauses
        wait.until(lambda d: _text(d, "match-count") == "no match")
        search.send_keys(Keys.CONTROL, "a")
        search.send_keys("sdpa")
        wait.until(lambda d: _text(d, "match-count") == "224 matches")
        [legend] = [
            t
            for t in browser.find_elements(By.CSS_SELECTOR, "#dag .legendtext")
            if t.text.startswith("matches")
        ]
        assert legend.text == "matches (224)"  # as the count says, folded ones too
        browser.find_element(By.ID, "next").click()
        wait.until(lambda d: _text(d, "match-count") == "1 of 224")
        browser.find_element(By.ID, "next").click()
        wait.until(lambda d: _text(d, "match-count") == "2 of 224")
        wait.until(lambda d: "sdpa" in _text(d, "node-title"))
        # The view moved to the match and zoomed in on it. Waited for, not read at the first
        # change of range: the view may pan before it zooms (CI once read the pan alone).
        wait.until(lambda d: d.execute_script(_RANGES)[0] != before[0])
        wait.until(lambda d: _area(d.execute_script(_RANGES)) < _area(before))
        assert browser.execute_script("return document.getElementById('node-panel').scrollTop") == 0
        shared = browser.current_url
        node = shared.split("node=")[1]
        assert "file=" in shared and node.startswith("graph_1_node_")
        # A reload (or the link, shared) comes back to the same node, in view.
        browser.get(shared)
        wait.until(lambda d: "sdpa" in _text(d, "node-title"))
        assert f"local id {node.rsplit('_', 1)[1]}" in _text(browser, "node-panel")
        # The right arrow follows the node's edge to what runs next.
        browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_RIGHT)
        following = f"graph_1_node_{int(node.rsplit('_', 1)[1]) + 1}"
        wait.until(lambda d: d.current_url.endswith(f"node={following}"))
        browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
        wait.until(lambda d: d.current_url.endswith(f"node={node}"))
        # A search typed and "next" clicked at once, no Enter: the first press finds it.
        browser.find_element(By.ID, "search").send_keys("rsqrt")
        browser.find_element(By.ID, "next").click()
        wait.until(lambda d: _text(d, "match-count") == "1 of 449")
        wait.until(lambda d: "rsqrt" in _text(d, "node-title"))
    finally:
        server.shutdown()


def test_a_node_id_on_the_report_opens_the_node_in_the_dag(browser: Any) -> None:
    from graphscope.model import display_name

    url, server = serve_in_thread([BUNDLES / "tiny-llama-b1.json.gz"])
    wait = WebDriverWait(browser, 30, ignored_exceptions=[StaleElementReferenceException])
    try:
        browser.get(url)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        browser.find_elements(By.CSS_SELECTOR, "#page input")[1].click()  # report
        first = "#top-nodes a.node-link"
        _wait(browser, first)
        # Read and clicked in one go: the report may be drawn again meanwhile (a fresh link).
        key, href = wait.until(
            lambda d: (lambda a: (a.text, a.get_attribute("href")))(
                d.find_element(By.CSS_SELECTOR, first)
            )
        )
        assert href.endswith(f"?file=f0&node={key}")
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, first).click() or True)
        # The page reloads at the address: the graph page, the node selected in the panel.
        wait.until(lambda d: d.current_url.endswith(f"node={key}"))
        title = wait.until(lambda d: _text(d, "node-title"))
        assert browser.find_element(By.ID, "graph-page").is_displayed()
        G = graphscope.load(BUNDLES / "tiny-llama-b1.json.gz")
        assert step_report(G).top_nodes[0]["node"] == key  # the slowest node, first in its table
        assert title == display_name(G.nodes[key])
        assert f"local id {key.rsplit('_', 1)[1]}" in _text(browser, "node-panel")
    finally:
        server.shutdown()


def test_a_large_graph_expanded_has_a_minimap_and_labels_once_zoomed(browser: Any) -> None:
    """Expand all on the 10,780-node sample: it opens on its first rows with the minimap
    showing where; a click on the minimap moves the view; a zoom in draws node labels.
    Plotly is given only the nodes in and around the view, and every node in view after
    the view moves far."""
    url, server = serve_in_thread([DEEP])
    wait = WebDriverWait(browser, 30, ignored_exceptions=[StaleElementReferenceException])
    try:
        browser.get(url)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        minimap = browser.find_element(By.ID, "minimap")
        # The overview is all in view: the minimap keeps out of its way.
        wait.until(lambda d: minimap.value_of_css_property("visibility") == "hidden")
        browser.find_element(By.ID, "expand-all").click()
        wait.until(lambda d: minimap.value_of_css_property("visibility") == "visible")
        # In a margin of its own, right of the plot area: no node is ever under it.
        area = browser.find_element(By.CSS_SELECTOR, "#dag .nsewdrag").rect
        wait.until(lambda d: minimap.rect["x"] >= area["x"] + area["width"])
        (x0, x1), (y_low, y_high) = browser.execute_script(_RANGES)
        assert y_high == -1 and y_low < 100  # the first rows of ~450, not all of them
        # The rectangle the page draws over the minimap is the view.
        box = browser.find_element(By.CSS_SELECTOR, "#minimap div.gs-view")
        wait.until(lambda d: json.loads(box.get_attribute("data-view"))[2:] == [y_low, y_high])
        assert 10 < box.size["height"] < 60 and box.size["width"] > 50  # near the top, wide
        assert browser.execute_script(_LABELS_IN_VIEW) == []  # 17 px a node: no room yet
        whole, given, plotted, _ = browser.execute_script(_NODES_IN_VIEW)
        assert len(whole) > 1000 and given == whole
        assert plotted < 10780 // 2  # culled: the window, not all
        # A click low on the minimap takes the view there, at the same zoom.
        box = browser.find_element(By.CSS_SELECTOR, "#minimap .nsewdrag")
        ActionChains(browser).move_to_element_with_offset(
            box, 0, int(box.size["height"] * 0.3)
        ).pause(0.3).click().perform()
        wait.until(lambda d: d.execute_script(_RANGES)[1][0] > 250)
        # Out of the first window: Plotly is given the new view's nodes.
        wait.until(lambda d: not d.execute_script(_NODES_IN_VIEW)[3])
        whole, given, plotted, _ = browser.execute_script(_NODES_IN_VIEW)
        assert len(whole) > 1000 and given == whole and plotted < 10780 // 2
        (nx0, nx1), (ny_low, ny_high) = browser.execute_script(_RANGES)
        assert abs((ny_low - ny_high) - (y_low - y_high)) < 1e-6
        assert abs((nx1 - nx0) - (x1 - x0)) < 1e-6
        # Zoomed in, the nodes in view carry their labels, as a small graph's do.
        browser.execute_script(
            "const gd = document.querySelector('#dag .js-plotly-plot');"
            "const [a, b] = gd._fullLayout.xaxis.range, [c, e] = gd._fullLayout.yaxis.range;"
            "window.Plotly.relayout(gd, {'xaxis.range': [a, a + (b - a) / 4],"
            " 'yaxis.range': [e + (c - e) / 4, e]});"
        )
        wait.until(lambda d: len(d.execute_script(_LABELS_IN_VIEW) or []) > 20)
        shown = browser.execute_script(_LABELS_IN_VIEW)
        assert {"mm", "mul"} & set(shown)
        # Each label sits by its node: inside the plot area, on the page.
        boxes = browser.execute_script(
            "return [...document.querySelectorAll('#dag svg.gs-labels text')]"
            ".map(t => t.getBoundingClientRect()).map(b => [b.width, b.height]);"
        )
        assert len(boxes) == len(shown) and all(w > 0 and h > 0 for w, h in boxes)
    finally:
        server.shutdown()


def test_a_buffer_clicked_in_the_panel_finds_every_node_that_touches_it(browser: Any) -> None:
    """The panel's buffer links search in the page itself: the search box takes the buffer,
    the DAG marks the nodes that touch it, and the count says how many."""
    url, server = serve_in_thread([BUNDLES / "tiny-llama-b1.json.gz"])
    wait = WebDriverWait(browser, 30, ignored_exceptions=[StaleElementReferenceException])
    try:
        browser.get(url + "?file=f0&node=graph_1_node_0")
        link = wait.until(
            ec.element_to_be_clickable((By.CSS_SELECTOR, "#node-buffers button.link"))
        )
        # The page draws each edge's arrowhead, one triangle of one path per edge ending in
        # view (of tiny-llama's 211), beside the labels of the nodes in view.
        arrows = (
            "const p = document.querySelector('#dag svg.gs-labels path.gs-arrowheads');"
            "return p ? (p.getAttribute('d').match(/M/g) || []).length : 0;"
        )
        wait.until(lambda d: 10 <= d.execute_script(arrows) <= 211)  # zoomed to the node
        assert 10 <= len(browser.execute_script(_LABELS_IN_VIEW)) <= 212
        name = json.loads(link.get_attribute("id"))["name"]  # Dash writes a dict id as JSON
        assert not browser.find_element(By.ID, "search").get_attribute("value")
        link.click()
        wait.until(lambda d: d.find_element(By.ID, "search").get_attribute("value"))
        assert browser.find_element(By.ID, "search").get_attribute("value") == "buffer:" + name
        # The selected node touches it: "1 of N" (or "N matches" with it elsewhere).
        wait.until(lambda d: re.fullmatch(r"\d+ of \d+|\d+ match(es)?", _text(d, "match-count")))
        found = browser.execute_script(
            "const gd = document.querySelector('#dag .js-plotly-plot');"
            "const t = gd.data.find(t => (t.name || '').startsWith('matches'));"
            "return t ? t.x.length : 0;"
        )
        assert found >= 1
    finally:
        server.shutdown()


# The nodes drawn whose centre is under the minimap while it shows: a click there hit the
# minimap and moved the view.
_UNDER_MINIMAP = """
const map = document.getElementById('minimap');
if (getComputedStyle(map).visibility !== 'visible') return [];
const m = map.getBoundingClientRect();
return [...document.querySelectorAll('#dag .scatterlayer .trace .points path')]
  .map(p => p.getBoundingClientRect())
  .map(b => [b.x + b.width / 2, b.y + b.height / 2])
  .filter(([x, y]) => x >= m.left && x <= m.right && y >= m.top && y <= m.bottom);
"""


@pytest.mark.parametrize("dump", ["stream-capture-misc", "torch-multistream"])
def test_no_node_of_a_small_graph_is_under_the_minimap(browser: Any, dump: str) -> None:
    url, server = serve_in_thread([BUNDLES.parent / "dot" / dump / "flags-verbose.dot"])
    try:
        browser.get(url)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        time.sleep(0.5)  # the page places the minimap on its 200 ms watch
        assert browser.execute_script(_UNDER_MINIMAP) == []
        # Zoomed in, it still keeps off the nodes.
        browser.execute_script(
            "const gd = document.querySelector('#dag .js-plotly-plot');"
            "const [a, b] = gd._fullLayout.xaxis.range;"
            "window.Plotly.relayout(gd, {'xaxis.range': [a, a + (b - a) / 2]});"
        )
        time.sleep(0.5)
        assert browser.execute_script(_UNDER_MINIMAP) == []
    finally:
        server.shutdown()


def test_a_long_kernel_name_stays_within_the_panel_and_its_hover(browser: Any) -> None:
    """A 328-character templated kernel: the panel's title wraps (three lines, the rest on
    hover) and adds no sideways scrollbar; its hover label is a few lines, not a row wide."""
    G = graphscope.load(BUNDLES.parent / "recordings" / "gpt-fast" / "pid1355" / "g8.json.gz")
    name = G.nodes["graph_7_node_65"]["short_name"]
    url, server = serve_in_thread(
        [BUNDLES.parent / "recordings" / "gpt-fast" / "pid1355" / "g8.json.gz"]
    )
    try:
        browser.get(url + "?file=f0&node=graph_7_node_65")  # a page that once failed (ids)
        title = _wait(browser, "#node-title")
        assert title.get_attribute("title") == name
        panel = browser.find_element(By.ID, "node-panel")
        assert browser.execute_script(
            "const p = arguments[0]; return p.scrollWidth <= p.clientWidth;", panel
        )
        assert title.rect["width"] <= panel.rect["width"]
        # The hover label of the node, on its ring's place.
        WebDriverWait(browser, 20).until(
            lambda d: d.execute_script(
                "const gd = document.querySelector('#dag .js-plotly-plot');"
                "return gd.data[1].hovertext && gd.data[1].hovertext.length > 20;"
            )
        )
        ring = _wait(browser, "#dag svg.gs-labels circle.gs-ring")
        ActionChains(browser).move_to_element(ring).pause(0.4).perform()
        label = _wait(browser, "#dag .hoverlayer .hovertext")
        dag = browser.find_element(By.CSS_SELECTOR, "#dag .nsewdrag").rect
        assert "graph_7_node_65" in label.text
        assert label.rect["width"] < dag["width"] * 0.75
        os.makedirs("/tmp/shots", exist_ok=True)
        browser.save_screenshot("/tmp/shots/long-kernel-name.png")
    finally:
        server.shutdown()
