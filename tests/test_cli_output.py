"""The CLI's output to a terminal: bad option values, serve's start-up errors, and values
from files that hold control characters (found by a red team)."""

from __future__ import annotations

import socket

import pytest

from graphscope.cli import main


@pytest.mark.parametrize("port", ["99999", "-1", "65536", "0"])
def test_serve_refuses_a_port_out_of_range(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["serve", f"--port={port}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "1 to 65535" in err
    assert err.splitlines()[-1].startswith("graphscope serve: error: argument --port:")


def _serve_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 1
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("graphscope: error: --host "), lines
    assert "\x1b" not in captured.err + captured.out
    return lines[0]


def test_serve_says_in_one_line_that_a_port_is_in_use(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = _serve_error(["serve", "--port", str(port)], capsys)
    assert f"--port {port}: is in use" in line


@pytest.mark.parametrize("host", ["256.1.1.1", "a\x1b]0;pwned\x07\nb", ""])
def test_serve_says_in_one_line_that_a_host_is_no_address(
    host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _serve_error(["serve", "--host", host], capsys)
    assert "not an address to serve on" in line
