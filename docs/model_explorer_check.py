"""Open graphscope's Model Explorer exports in Model Explorer itself, in headless Chromium.

    pip install ai-edge-model-explorer      # anywhere: its server runs as its own process
    python docs/model_explorer_check.py [--model-explorer PATH]

Exports three samples with ``graphscope export --format model-explorer`` (the tiny-llama decode
chain with its replay-time overlay, the two-stream tiny-gpt-parallel, and the DOT dump that
holds every node type with child and conditional-body graphs), serves each with Model
Explorer's own server, opens it in Debian's chromium and checks what the page says: the model's
label, each file's first graph with the node count of our JSON, no load error, and for
tiny-llama the overlay's statistics. Saves docs/img/model-explorer-tiny-llama.png. Model
Explorer is not a dependency of graphscope or of its tests: this is a check made by hand,
after a change to graphscope/exports.py.

    python docs/model_explorer_check.py --big [--model-explorer PATH]   # needs Pillow too

does something else: the first view of the large sample (samples/large/hf-deep-llama-b1,
10,780 nodes) in graphscope's dashboard and, exported, in Model Explorer, each in a
1600x1000 Chromium window (a 1600x857 page), side by side in
docs/img/overview-vs-model-explorer.png with the halves at full size beside it
(overview-big-graphscope.png, overview-big-model-explorer.png). Model Explorer gets the graph
alone, without the replay-time overlay, as the dashboard opens coloured by type.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.request import urlopen

from graphscope.app.serve.browser import headless_chromium

from graphscope.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = {
    "tiny-llama": ROOT / "samples" / "bundles" / "tiny-llama-b1.json.gz",
    "tiny-gpt-parallel": ROOT / "samples" / "bundles" / "tiny-gpt-parallel-b1.json.gz",
    "all-types": ROOT / "samples" / "dot" / "explicit-all-types" / "flags-verbose.dot",
}
SHOT = ROOT / "docs" / "img" / "model-explorer-tiny-llama.png"
BIG = ROOT / "samples" / "large" / "hf-deep-llama-b1.json.gz"
IMG = ROOT / "docs" / "img"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(explorer: str, files: list[Path]) -> tuple[subprocess.Popen[str], str]:
    """Model Explorer's server on ``files``: the process and the page address it prints."""
    port = _free_port()
    cmd = [explorer, str(files[0]), "--no_open_in_browser", "--port", str(port)]
    if len(files) > 1:
        cmd += ["--node_data_paths", str(files[1])]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert server.stdout is not None
    for line in server.stdout:  # it prints the page's address once it is up
        if line.startswith(f"http://localhost:{port}/"):
            return server, line.strip()
    raise SystemExit(f"{explorer} stopped without serving: exit {server.wait()}")


def _page_text(url: str, shot: Path | None, overlay: bool) -> str:
    driver = headless_chromium(1600, 1000)
    try:
        driver.get(url)
        deadline = time.time() + 60
        text = ""
        while time.time() < deadline:  # the graph is laid out in a web worker, data after it
            text = driver.find_element("tag name", "body").text
            if "op node count" in text and (not overlay or "\nMin " in text):
                break
            time.sleep(0.5)
        time.sleep(3)  # let the layout settle before the picture
        text = driver.find_element("tag name", "body").text
        if shot is not None:
            driver.save_screenshot(str(shot))
        return text
    finally:
        driver.quit()


def _wait_still(driver: Any, least: float = 3.0, most: float = 60.0) -> None:
    """Wait ``least`` seconds, then until two pictures of the page a second apart are the same."""
    time.sleep(least)
    deadline = time.time() + most
    before = driver.get_screenshot_as_png()
    while time.time() < deadline:
        time.sleep(1)
        now = driver.get_screenshot_as_png()
        if now == before:
            return
        before = now
    raise SystemExit(f"the page at {driver.current_url} kept changing for {most:g} s")


def _big_model_explorer(explorer: str, graph: Path, shot: Path) -> str:
    """Model Explorer's first view of ``graph``, saved to ``shot``; the page's text."""
    server, url = _serve(explorer, [graph])
    driver = headless_chromium(1600, 1000)
    try:
        urlopen(url, timeout=10).close()
        driver.get(url)
        deadline = time.time() + 120
        text = ""
        while "op node count" not in text:  # the graph's info panel comes once it is laid out
            if time.time() > deadline:
                raise SystemExit(f"Model Explorer did not show {graph} in 120 s: {text!r}")
            time.sleep(0.5)
            text = driver.find_element("tag name", "body").text
        _wait_still(driver)
        text = str(driver.find_element("tag name", "body").text)
        driver.save_screenshot(str(shot))
        return text
    finally:
        driver.quit()
        server.terminate()
        server.wait()


def _big_graphscope(bundle: Path, shot: Path) -> str:
    """graphscope's dashboard, first view of ``bundle``, saved to ``shot``; the status line."""
    sys.path.insert(0, str(ROOT / "docs"))
    import screenshots  # docs/screenshots.py: serves the app and saves the page

    status: list[str] = []

    def settle(driver: Any) -> None:
        _wait_still(driver, least=2.0)  # the labels come after the points
        status.append(driver.find_element("id", "status").text)

    screenshots.OUT = shot.parent
    screenshots._page([bundle], 1000, "#dag .scatterlayer .trace .points path", shot.name, settle)
    return status[0] if status else ""


def big(explorer: str) -> None:
    """The large sample's first view in the dashboard and in Model Explorer, side by side."""
    from PIL import Image  # only here: the check itself needs no Pillow

    left = IMG / "overview-big-graphscope.png"
    right = IMG / "overview-big-model-explorer.png"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "hf-deep-llama-b1.json"
        if cli(["export", "--format", "model-explorer", "-o", str(out), str(BIG)]):
            raise SystemExit(f"graphscope export failed on {BIG}")
        text = _big_model_explorer(explorer, out, right)
    errors = [line for line in text.splitlines() if "Unsupported" in line or "rror" in line]
    if errors:
        raise SystemExit(f"Model Explorer: {errors}")
    info = text.split("GRAPH INFO", 1)[-1].split()
    print("Model Explorer: " + " ".join(info[:7]))
    print("graphscope: " + _big_graphscope(BIG, left))
    width, gap = 1200, 16
    halves = []
    for path in (left, right):
        with Image.open(path) as image:
            size = (width, round(image.height * width / image.width))
            halves.append(image.convert("RGB").resize(size, Image.Resampling.LANCZOS))
    height = max(h.height for h in halves)
    both = Image.new("RGB", (2 * width + gap, height), (160, 160, 160))
    both.paste(halves[0], (0, 0))
    both.paste(halves[1], (width + gap, 0))
    both.save(IMG / "overview-vs-model-explorer.png", optimize=True)
    for path in (left, right, IMG / "overview-vs-model-explorer.png"):
        print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-explorer", default=shutil.which("model-explorer"))
    parser.add_argument(
        "--big",
        action="store_true",
        help="instead: the large sample's first view here and in Model Explorer, side by side",
    )
    args = parser.parse_args()
    if not args.model_explorer:
        raise SystemExit("model-explorer not found: pip install ai-edge-model-explorer")
    if args.big:
        big(args.model_explorer)
        return
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, sample in SAMPLES.items():
            out = Path(tmp) / f"{name}.json"
            if cli(["export", "--format", "model-explorer", "-o", str(out), str(sample)]):
                raise SystemExit(f"graphscope export failed on {sample}")
            exported = json.loads(out.read_text())
            overlay = out.with_name(f"{name}.node-data.json")
            files = [out, overlay] if overlay.exists() else [out]
            server, url = _serve(args.model_explorer, files)
            try:
                urlopen(url, timeout=10).close()
                text = _page_text(url, SHOT if name == "tiny-llama" else None, overlay.exists())
            finally:
                server.terminate()
                server.wait()
            first = exported["graphs"][0]
            lines = text.splitlines()
            expected = [exported["label"], first["id"], f"{len(first['nodes'])} nodes"]
            missing = [e for e in expected if e not in lines]
            if overlay.exists():
                # The overlay's panel: its file name and the statistics of its values.
                values = [
                    v["value"]
                    for v in json.loads(overlay.read_text())[first["id"]]["results"].values()
                ]
                stats = {f"Min {min(values):g}", f"Max {max(values):g}"}
                missing += [e for e in sorted(stats) if e not in lines]
                missing += [] if overlay.name in lines else [overlay.name]
            errors = [line for line in lines if "Unsupported" in line or "rror" in line]
            ok = not missing and not errors
            failures += not ok
            print(
                f"{name}: {'ok' if ok else 'FAILED'}: {len(exported['graphs'])} graphs, the first "
                f"{first['id']} with {len(first['nodes'])} nodes"
                + (f"; not on the page: {missing}" if missing else "")
                + (f"; errors: {errors}" if errors else "")
            )
    print(f"wrote {SHOT}")
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
