"""Make the dashboard screenshots in docs/img from the real app in headless Chromium.

    python docs/screenshots.py     # needs Debian's chromium and chromium-driver, and selenium

Opens the tiny-llama b1 sample coloured by replay time, clicks its slowest node and saves the
page; the same sample coloured graph against eager; the catalog of two recordings
(samples/recordings); the 10,780-node sample's first view, and the same with a node of layer
0's attention asked for in the address (its attention opened, a box inside the layer's).
Nothing in the pictures is edited.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphscope.app.serve.browser import headless_chromium, serve_in_thread
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

import graphscope

ROOT = Path(__file__).resolve().parent.parent
LLAMA = ROOT / "samples" / "bundles" / "tiny-llama-b1.json.gz"
DOT = ROOT / "samples" / "dot" / "explicit-all-types" / "flags-verbose.dot"
OUT = ROOT / "docs" / "img"
RECORDINGS = ROOT / "samples" / "recordings"
DEEP = ROOT / "samples" / "large" / "hf-deep-llama-b1.json.gz"


def _page(
    files: list[Path],
    height: int,
    ready: str,
    name: str,
    then: Callable[[Any], None] | None = None,
    query: str = "",
) -> None:
    """Serve ``files``, open the page at ``query``, wait for ``ready`` (a CSS selector), do
    ``then``, save ``name``."""
    url, server = serve_in_thread(files)
    driver = headless_chromium(1600, height)
    try:
        driver.get(url + query)
        wait = WebDriverWait(driver, 20)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ready)))
        if then is not None:
            then(driver)
        time.sleep(1.5)
        driver.save_screenshot(str(OUT / name))
    finally:
        driver.quit()
        server.shutdown()


def catalog() -> None:
    """The catalog page of the hf-generate and gpt-fast recordings."""
    files = [RECORDINGS / "hf-generate", RECORDINGS / "gpt-fast"]
    _page(files, 900, "#catalog-page button.link", "catalog.png")


def graph_against_eager() -> None:
    """The tiny-llama b1 sample coloured by each node's replay over its eager launch."""

    def colour(driver: Any) -> None:
        driver.find_element(By.CSS_SELECTOR, "#colour input[value=eager]").click()
        WebDriverWait(driver, 20).until(
            ec.presence_of_element_located((By.CSS_SELECTOR, "#dag .colorbar"))
        )

    _page([LLAMA], 1000, "#dag .points path", "dashboard-graph-vs-eager.png", colour)


def overview() -> None:
    """The 10,780-node sample's first view, then with layer 0's attention opened."""
    _page([DEEP], 1000, "#dag .scatterlayer", "overview-column.png")
    G = graphscope.load(DEEP)
    inside = min(
        (k for k, d in G.nodes(data=True) if "self_attn" in str(d.get("attribution", {}))),
        key=lambda k: G.nodes[k]["local_id"],
    )
    _page([DEEP], 1000, "#dag .scatterlayer", "overview-nested.png", query=f"?node={inside}")


def main() -> None:
    url, server = serve_in_thread([LLAMA, DOT])
    driver = headless_chromium(1600, 1250)
    wait = WebDriverWait(driver, 20)
    try:
        driver.get(url)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#dag .points path")))
        driver.find_element(By.CSS_SELECTOR, "#colour input[value=time]").click()
        time.sleep(1.5)
        G = graphscope.load(LLAMA)
        slowest = max(
            (k for k, d in G.nodes(data=True) if "replay" in d),
            key=lambda k: G.nodes[k]["replay"]["median_us"],
        )
        keys = sorted(G.nodes, key=lambda k: G.nodes[k]["local_id"])
        points = driver.find_elements(
            By.CSS_SELECTOR, "#dag .scatterlayer .trace:nth-child(2) .points path"
        )
        # The one node trace holds the nodes in the graph's own order.
        index = list(G.nodes).index(slowest)
        assert len(points) == len(keys)
        ActionChains(driver).move_to_element(points[index]).pause(0.4).click().perform()
        wait.until(
            ec.text_to_be_present_in_element((By.ID, "node-title"), G.nodes[slowest]["short_name"])
        )
        # Move the pointer off the graph so that no hover label covers the picture.
        ActionChains(driver).move_to_element(driver.find_element(By.ID, "node-title")).perform()
        time.sleep(1.5)  # the selection rings are drawn after the panel
        driver.save_screenshot(str(OUT / "dashboard-slowest-node.png"))
        print(f"slowest node {slowest}: {G.nodes[slowest]['short_name']}")
    finally:
        driver.quit()
        server.shutdown()


if __name__ == "__main__":
    main()
    graph_against_eager()
    catalog()
    overview()
