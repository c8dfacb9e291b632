"""``graphscope serve`` with readers that misbehave on cue, and a client that speaks to it as
the page does: for tests/app/test_server_hardening.py and benchmarks/bench_server.py.

    python tests/serve_harness.py FILE ... --port PORT

The real command (``graphscope.cli.main``), except that ``graphscope.load``:
- sleeps ``GRAPHSCOPE_TEST_SLOW_S`` seconds before reading a file whose name starts with
  ``slow``, as a reader stuck on a large file holds its request's thread;
- raises RuntimeError on a file that starts with ``digraph crash``, as a reader's bug would;
and uploads expand to at most ``GRAPHSCOPE_TEST_EXPANDED_LIMIT`` bytes where that is set, so
that a small gzip bomb passes the limit.

Until the dashboard's search calls ``graphscope.pattern.compile_pattern`` itself, the module
that holds it still compiles the person's text with ``re``: that name is pointed at RE2 here,
the way the call site will be (see the module's ``_wire_search``). Once the search module no
longer uses ``re``, this does nothing and the test runs the search as the app has it.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests
from graphscope.app.files import sources

import graphscope
from graphscope.cli import main
from graphscope.pattern import compile_pattern


class _RE2:
    """What a search module asks of ``re``, run by RE2 (graphscope.pattern)."""

    IGNORECASE = re.IGNORECASE
    error = re.error
    escape = staticmethod(re.escape)

    @staticmethod
    def compile(text: str, flags: int = 0) -> Any:
        pattern = compile_pattern(text)
        if pattern.warning is not None:
            raise re.error(pattern.warning)
        return pattern


def _wire_search() -> None:
    for name in ("graphscope.analysis.search", "graphscope.app.serve.server"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, "re", None) is re and not hasattr(module, "compile_pattern"):
            module.re = _RE2  # type: ignore[attr-defined]


#: This file, to run as the server.
HARNESS = Path(__file__).resolve()


def _misbehaving(real: Any) -> Any:
    slow_s = float(os.environ.get("GRAPHSCOPE_TEST_SLOW_S", "0"))

    def load(path: str | os.PathLike[str], **kwargs: Any) -> Any:
        if Path(path).name.startswith("slow"):
            time.sleep(slow_s)
        with open(path, "rb") as fh:
            if fh.read(13) == b"digraph crash":
                raise RuntimeError("a reader's bug")
        return real(path, **kwargs)

    return load


# The client side: the server on a free port, and requests as the page sends them.


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def serve(
    tmp_path: Path, argv: list[str], env: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``argv`` (a command ending in serve's arguments) on a free port: (its URL, process)."""
    port = free_port()
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    log = (tmp_path / "server.log").open("wb")  # not a pipe: a full pipe would stall it
    server = subprocess.Popen(
        [*argv, "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "TMPDIR": str(temp), **(env or {})},
    )
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text()
            with contextlib.suppress(requests.RequestException):
                if requests.get(base, timeout=5).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        yield base, server
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        log.close()


def components(node: Any, found: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each component of a Dash layout (as /_dash-layout sends it) with an id: its props."""
    if isinstance(node, dict):
        props = node.get("props")
        if isinstance(props, dict) and isinstance(props.get("id"), str):
            found[props["id"]] = props
        for value in node.values():
            components(value, found)
    elif isinstance(node, list):
        for value in node:
            components(value, found)
    return found


class Page:
    """What the browser knows of the page: its components and callbacks, to fire one."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.props = components(requests.get(base + "_dash-layout", timeout=30).json(), {})
        self.callbacks = requests.get(base + "_dash-dependencies", timeout=30).json()

    def source(self, label: str) -> str:
        """The id of the file listed as ``label``."""
        return next(o["value"] for o in self.props["source"]["options"] if o["label"] == label)

    def fire(
        self, output: str, changed: str, values: dict[str, Any], timeout: float = 30
    ) -> requests.Response:
        """The callback whose outputs include ``output``, as a change of ``changed`` fires it."""
        callback = next(
            c
            for c in self.callbacks
            if output in c["output"]
            and changed in [f"{i['id']}.{i['property']}" for i in c["inputs"]]
        )

        def item(ref: dict[str, Any]) -> dict[str, Any]:
            key = f"{ref['id']}.{ref['property']}"
            value = (
                values[key] if key in values else self.props.get(ref["id"], {}).get(ref["property"])
            )
            return {"id": ref["id"], "property": ref["property"], "value": value}

        names = callback["output"].strip(".").split("...")
        outputs = [dict(zip(("id", "property"), n.rsplit(".", 1), strict=True)) for n in names]
        body = {
            "output": callback["output"],
            "outputs": outputs if callback["output"].startswith("..") else outputs[0],
            "inputs": [item(i) for i in callback["inputs"]],
            "state": [item(s) for s in callback["state"]],
            "changedPropIds": [changed],
        }
        return requests.post(self.base + "_dash-update-component", json=body, timeout=timeout)

    def draw(self, source: str, search: str = "", timeout: float = 30) -> requests.Response:
        return self.fire(
            "status.children",
            "source.value",
            {"source.value": source, "search.value": search},
            timeout,
        )

    def upload(self, filename: str, payload: bytes | str) -> requests.Response:
        contents = (
            payload
            if isinstance(payload, str)
            else "data:application/octet-stream;base64," + base64.b64encode(payload).decode()
        )
        return self.fire(
            "source.options",
            "upload.contents",
            {"upload.contents": contents, "upload.filename": filename},
        )


def raw(port: int, head: bytes) -> tuple[bytes, float]:
    """Send a request's head alone (no body), and read the answer: (its bytes, seconds)."""
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer, time.perf_counter() - start


def huge_body(port: int) -> tuple[bytes, float]:
    """A POST that announces 1 GiB and sends none of it: refused from its Content-Length."""
    return raw(
        port,
        b"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (port, 1 << 30),
    )


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


if __name__ == "__main__":
    graphscope.load = _misbehaving(graphscope.load)
    if os.environ.get("GRAPHSCOPE_TEST_EXPANDED_LIMIT"):
        sources.UPLOAD_EXPANDED_LIMIT = int(os.environ["GRAPHSCOPE_TEST_EXPANDED_LIMIT"])
    _wire_search()
    sys.exit(main(["serve", *sys.argv[1:]]))
