"""The dashboard in a real headless Chromium: open a sample, click a node, open a bad file."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("selenium")
from graphscope.app.server import create_app
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait
from werkzeug.serving import make_server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
BUNDLES = Path(__file__).resolve().parent.parent / "samples" / "bundles"

if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    if os.environ.get("GRAPHSCOPE_REQUIRE_BROWSER"):
        raise RuntimeError("CI needs Debian's chromium and chromium-driver: .ci/run installs them")
    pytest.skip(
        "no chromium/chromedriver (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1600,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    yield driver
    driver.quit()


def _serve(paths: list[Path]) -> tuple[str, Any]:
    app = create_app(paths)
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}/", server


def _wait(driver: Any, css: str, timeout: float = 20) -> Any:
    return WebDriverWait(
        driver, timeout, ignored_exceptions=[StaleElementReferenceException]
    ).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def test_clicking_a_node_shows_its_kernel_and_timing(browser: Any) -> None:
    url, server = _serve([BUNDLES / "tiny-gpt-b1.json.gz"])
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
    url, server = _serve([bad, BUNDLES / "tiny-gpt-b1.json.gz"])
    try:
        browser.get(url)
        error = _wait(browser, "#load-error")
        assert "broken.json" in error.text
        # Pick the good file from the list: the page still works.
        browser.find_element(By.CSS_SELECTOR, "#source").click()
        options = WebDriverWait(
            browser, 10, ignored_exceptions=[StaleElementReferenceException]
        ).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[role=option]"))
        [good] = [o for o in options if "tiny-gpt-b1" in o.text]
        good.click()
        _wait(browser, "#dag .scatterlayer .trace .points path")
        assert not browser.find_elements(By.ID, "load-error")
    finally:
        server.shutdown()


def test_clicking_the_eager_row_selects_the_node(browser: Any) -> None:
    url, server = _serve([BUNDLES / "tiny-gpt-b1.json.gz"])
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
    finally:
        server.shutdown()


def test_collapse_all_then_a_click_opens_a_layer(browser: Any) -> None:
    url, server = _serve([BUNDLES / "tiny-llama-b1.json.gz"])
    try:
        browser.get(url)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        browser.find_element(By.ID, "collapse-all").click()
        note = _wait(browser, "#collapsed-note")
        assert note.text.startswith("10 groups collapsed (212 nodes in all)")
        nodes = "#dag .scatterlayer .trace:nth-child(2) .points path"  # after the edges' trace
        WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, nodes)) == 10
        )
        squares = browser.find_elements(By.CSS_SELECTOR, nodes)
        # Click one of the squares: that group opens, the other nine stay shut.
        ActionChains(browser).move_to_element(squares[6]).pause(0.3).click().perform()
        WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
            lambda d: (
                "collapsed" in d.find_element(By.ID, "collapsed-note").text
                and d.find_element(By.ID, "collapsed-note").text.split()[0] != "10"
            )
        )
        drawn = browser.find_elements(By.CSS_SELECTOR, "#dag .scatterlayer .trace .points path")
        assert len(drawn) > 28  # the layer's own groups are drawn now, beside the other nine
    finally:
        server.shutdown()


def test_a_dropped_file_opens_and_a_bad_one_shows_its_error(browser: Any, tmp_path: Path) -> None:
    url, server = _serve([BUNDLES / "tiny-gpt-b1.json.gz"])
    try:
        browser.get(url)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        picker = browser.find_element(By.CSS_SELECTOR, "#upload input[type=file]")
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
        picker = browser.find_element(By.CSS_SELECTOR, "#upload input[type=file]")
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
    url, server = _serve(files)
    try:
        browser.get(url)
        _wait(browser, "#dag .scatterlayer .trace .points path")
        pages = browser.find_elements(By.CSS_SELECTOR, "#page input")
        pages[1].click()  # report
        speedup = _wait(browser, "#speedup")
        assert (
            speedup.text.startswith("Speedup 12.5x") and "CPU launch overhead down" in speedup.text
        )
        assert "q_proj, k_proj, v_proj" in browser.find_element(By.ID, "findings").text
        assert not browser.find_element(By.ID, "graph-page").is_displayed()
        pages[2].click()  # compare
        _pick(browser, "compare-a", "llama-b1")
        _pick(browser, "compare-b", "llama-b8")
        verdict = _wait(browser, "#update-verdict")
        assert "B can update an executable graph of A in place" in verdict.text
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
