"""The app in a real browser, for the browser tests, the page benchmark and the screenshots.

``serve_in_thread`` runs the dashboard on a free localhost port; ``headless_chromium`` starts
Debian's Chromium through Selenium (the ``test`` extra) with the flags all three need. Like
``dash.testing``, this lives with the app so that each caller starts the browser the same way.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # selenium comes with the test extra only
    from selenium.webdriver import Chrome
    from werkzeug.serving import BaseWSGIServer

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

# Headless without a GPU, a sandbox or /dev/shm (containers give 64 MB), and nothing that
# reaches the network in the background and could slow a measured page down.
_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # The pointer of a desktop browser with a mouse. Headless Chromium reports none that
    # hovers ("(hover: none)" matches), and Plotly then takes its touch-screen path: on each
    # press and release it sets the cursor on the <html> element, which restyles the whole
    # page; on tiny-llama (8,000 elements) that was 23 to 50 ms of every click, measured.
    # Blink's values: hover 2 is "hover", pointer 4 is "fine".
    "--blink-settings=primaryHoverType=2,availableHoverTypes=2,"
    "primaryPointerType=4,availablePointerTypes=4",
)


def have_chromium() -> bool:
    """Whether Chromium and its driver are installed."""
    return os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)


def headless_chromium(width: int = 1600, height: int = 1000) -> Chrome:
    """A Selenium driver for a headless Chromium with a ``width`` x ``height`` window."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*_FLAGS, f"--window-size={width},{height}"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


def serve_in_thread(paths: Sequence[Path | str]) -> tuple[str, BaseWSGIServer]:
    """The app on the given files at a free localhost port: (its URL, the server to shut down)."""
    from werkzeug.serving import make_server

    from .server import create_app

    app = create_app(list(paths))
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}/", server
