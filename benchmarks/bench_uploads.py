"""What a long-running ``graphscope serve`` keeps as files are dropped on it, one after another.

    python benchmarks/bench_uploads.py [--uploads 30] [--python PY] [--bundle FILE]

``graphscope serve`` (run by ``--python``, default this one: pass another environment's python
to measure another version side by side) is sent ``--uploads`` uploads of one bundle through
the page's own upload callback, each under a new name and each drawn after, as a person
dropping files would. Printed: the server's resident memory at start and after every fifth
upload, its peak (VmHWM), and the bytes of the last upload's answer (it carries the file list).

The default bundle is the 10,780-node ``samples/large/hf-deep-llama-b1.json.gz`` (4 MB), the
file of issue 24's report: each upload kept about 140 MB for good before the registry's bounds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from serve_harness import Page, rss_kb, serve  # noqa: E402

DEEP = ROOT / "samples" / "large" / "hf-deep-llama-b1.json.gz"
SMALL = ROOT / "samples" / "bundles" / "tiny-llama-b1.json.gz"


def _hwm_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uploads", type=int, default=30)
    parser.add_argument("--python", default=sys.executable, help="the python that serves")
    parser.add_argument("--bundle", type=Path, default=DEEP, help="the file uploaded")
    args = parser.parse_args()
    payload = args.bundle.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        argv = [args.python, "-m", "graphscope", "serve", str(SMALL)]
        with serve(Path(tmp), argv) as (base, server):
            page = Page(base)
            start = rss_kb(server.pid)
            print(f"{args.python}: serving; memory {start / 1024:.0f} MiB at start")
            size = 0
            for i in range(1, args.uploads + 1):
                answer = page.upload(f"upload-{i}{''.join(args.bundle.suffixes)}", payload)
                answer.raise_for_status()
                size = len(answer.content)
                listed = answer.json()["response"]["source"]
                drawn = page.draw(listed["value"], timeout=120)
                drawn.raise_for_status()
                if i % 5 == 0 or i == args.uploads:
                    print(
                        f"  after {i:3d} uploads: {rss_kb(server.pid) / 1024:6.0f} MiB, "
                        f"{len(listed['options'])} files listed, answer {size:,} bytes"
                    )
            print(
                f"  {args.uploads} uploads of {args.bundle.name} ({len(payload) / 1e6:.1f} MB): "
                f"{start / 1024:.0f} -> {rss_kb(server.pid) / 1024:.0f} MiB, peak "
                f"{_hwm_kb(server.pid) / 1024:.0f} MiB"
            )


if __name__ == "__main__":
    main()
