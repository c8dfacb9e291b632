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
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.request import urlopen

from graphscope.app.browser import headless_chromium

from graphscope.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = {
    "tiny-llama": ROOT / "samples" / "bundles" / "tiny-llama-b1.json.gz",
    "tiny-gpt-parallel": ROOT / "samples" / "bundles" / "tiny-gpt-parallel-b1.json.gz",
    "all-types": ROOT / "samples" / "dot" / "explicit-all-types" / "flags-verbose.dot",
}
SHOT = ROOT / "docs" / "img" / "model-explorer-tiny-llama.png"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-explorer", default=shutil.which("model-explorer"))
    args = parser.parse_args()
    if not args.model_explorer:
        raise SystemExit("model-explorer not found: pip install ai-edge-model-explorer")
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
