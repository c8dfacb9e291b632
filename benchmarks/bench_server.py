"""The dashboard's server against hostile requests: what each costs it, and whether it stays
responsive. Every request goes to 127.0.0.1, bounded in count and time.

    python benchmarks/bench_server.py [--slow-s 20] [--probes 40]

``graphscope serve`` runs in a subprocess (tests/serve_harness.py: one file's read sleeps
``--slow-s`` seconds). Measured:

- a 1 GiB request body, streamed for real: the time until the server answers 413, the bytes
  sent by then, and the server's resident memory before and after, and its peak (VmHWM);
- a gzip bomb uploaded from the page (1.96 MB expanding to 1.9 GiB of JSON): the time to
  its one-line refusal, the peak memory and the memory it keeps after;
- ordinary requests (the layout, then the graph redrawn with a search) while two reads of
  the slow file, searches for ``(\\w+)+!``, 1 GiB bodies and requests for another Host run
  in a loop: the median and the slowest answer.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import socket
import statistics
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from serve_harness import HARNESS, Page, huge_body, rss_kb, serve  # noqa: E402

TORCH_OPS = ROOT / "samples" / "dot" / "torch-ops" / "flags-verbose.dot"


def _hwm_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _stream_gib(port: int) -> tuple[str, float, int]:
    """POST 1 GiB for real, a MiB at a time, until the server answers or stops reading."""
    block = b" " * (1 << 20)
    sent = 0
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(
            b"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (port, 1 << 30)
        )
        s.setblocking(False)
        answer = b""
        while sent < 1 << 30 and not answer:
            with contextlib.suppress(BlockingIOError):
                answer = s.recv(4096)
            try:
                sent += s.send(block)
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                time.sleep(0.001)
        s.setblocking(True)
        while not answer and (chunk := s.recv(4096)):
            answer += chunk
    return answer.split(b"\r\n", 1)[0].decode(), time.perf_counter() - start, sent


def _bomb() -> bytes:
    """1.9 GiB of spaces inside a JSON string, gzipped (about 2 MB)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b" " * (64 << 20)
    parts = [deflate.compress(b'{"schema": "graphscope.bundle", "pad": "')]
    parts += [deflate.compress(block) for _ in range(30)]
    return b"".join([*parts, deflate.compress(b'"}'), deflate.flush()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow-s", type=float, default=20.0)
    parser.add_argument("--probes", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        small, slow = folder / "small.dot", folder / "slow.dot"
        small.write_bytes(TORCH_OPS.read_bytes())
        slow.write_bytes(TORCH_OPS.read_bytes())
        env = {"GRAPHSCOPE_TEST_SLOW_S": str(args.slow_s)}
        argv = [sys.executable, str(HARNESS), str(small), str(slow)]
        with serve(folder, argv, env) as (base, server):
            port = int(base.rsplit(":", 1)[1].strip("/"))
            page = Page(base)
            small_id, slow_id = page.source("small.dot"), page.source("slow.dot")

            before = rss_kb(server.pid)
            status, seconds, sent = _stream_gib(port)
            print(
                f"1 GiB body: {status!r} after {seconds * 1000:.0f} ms and "
                f"{sent / 2**20:.0f} MiB sent; server memory {before / 1024:.0f} -> "
                f"{rss_kb(server.pid) / 1024:.0f} MiB (peak {_hwm_kb(server.pid) / 1024:.0f})"
            )

            bomb = _bomb()
            contents = "data:;base64," + base64.b64encode(bomb).decode()
            before = rss_kb(server.pid)
            start = time.perf_counter()
            answer = page.fire(
                "source.options",
                "upload.contents",
                {"upload.contents": contents, "upload.filename": "bomb.json.gz"},
                timeout=120,
            )
            took = time.perf_counter() - start
            listed = answer.json()["response"]["source"]
            label = next(o["label"] for o in listed["options"] if o["value"] == listed["value"])
            error = str(page.draw(listed["value"]).json()["response"]["status"])
            print(
                f"gzip bomb upload ({len(bomb) / 1e6:.2f} MB): {label!r} in {took:.2f} s; "
                f"server memory {before / 1024:.0f} -> {rss_kb(server.pid) / 1024:.0f} MiB "
                f"(peak {_hwm_kb(server.pid) / 1024:.0f}); the page says: {error[:160]}"
            )

            stop = threading.Event()

            def attack(what: str) -> None:
                while not stop.is_set():
                    try:
                        if what == "search":
                            page.draw(small_id, r"(\w+)+!", timeout=30)
                        elif what == "body":
                            huge_body(port)
                        elif what == "host":
                            requests.get(base, headers={"Host": "evil.example"}, timeout=10)
                        else:
                            page.draw(slow_id, timeout=args.slow_s + 30)
                            return
                    except requests.RequestException:
                        pass

            kinds = ["slow", "slow", "search", "search", "search", "body", "host"]
            with ThreadPoolExecutor(len(kinds)) as pool:
                for kind in kinds:
                    pool.submit(attack, kind)
                time.sleep(0.5)
                times = []
                for i in range(args.probes):
                    start = time.perf_counter()
                    assert requests.get(base + "_dash-layout", timeout=30).ok
                    assert page.draw(small_id, "mm" if i % 2 else "", timeout=30).ok
                    times.append(time.perf_counter() - start)
                stop.set()
            print(
                f"under attack ({', '.join(kinds)}): {args.probes} ordinary layout + redraw "
                f"pairs, median {statistics.median(times) * 1000:.0f} ms, slowest "
                f"{max(times) * 1000:.0f} ms"
            )


if __name__ == "__main__":
    main()
