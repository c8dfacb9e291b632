"""The CLI's output to a terminal: bad option values, serve's start-up errors, and values
from files that hold control characters (found by a red team)."""

from __future__ import annotations

import io
import json
import re
import shutil
import socket
from pathlib import Path

import pytest

from graphscope import cli
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


SAMPLES = Path(__file__).resolve().parents[2] / "samples"
#: A kernel name that would set the terminal's title and clear its screen, printed raw.
HOSTILE_NAME = "pwn\x1b]0;pwned\x07\x1b[2Jkernel"


def _hostile_dot(tmp_path: Path) -> Path:
    """A real DOT dump whose first kernel's name sets the terminal's title and clears it."""
    text = (SAMPLES / "dot" / "torch-ops" / "flags-verbose.dot").read_text()
    first = re.search(r"_Z[A-Za-z0-9_]+", text)
    assert first is not None
    path = tmp_path / "esc_kernel.dot"
    path.write_text(text.replace(first.group(0), HOSTILE_NAME))
    return path


def _hostile_buckets(tmp_path: Path) -> Path:
    """A real buckets index (its bundles beside it) whose model name holds a newline."""
    for bundle in (SAMPLES / "bundles").glob("tiny-llama-b*.json.gz"):
        shutil.copy(bundle, tmp_path / bundle.name)
    index = json.loads((SAMPLES / "bundles" / "tiny-llama.buckets.json").read_text())
    index["model"] = "tiny\nllama\x1b[2J"
    path = tmp_path / "forged.buckets.json"
    path.write_text(json.dumps(index))
    return path


@pytest.mark.parametrize("command", ["inspect", "diff"])
def test_text_output_escapes_control_characters_from_files(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dot = str(_hostile_dot(tmp_path))
    main([command, dot] + ([dot] if command == "diff" else []))
    out = capsys.readouterr().out
    assert out and not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)
    if command == "inspect":
        assert "\\x1b]0;pwned\\x07" in out


def test_buckets_header_stays_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["buckets", str(_hostile_buckets(tmp_path))]) == 0
    first, second = capsys.readouterr().out.splitlines()[:2]
    assert "buckets;" in first and second.split() == [
        *("batch", "replay", "per", "seq", "nodes", "pool", "eager")
    ]


def test_escaping_stream_keeps_newline_and_tab() -> None:
    sink = io.StringIO()
    stream = cli._EscapingStream(sink)
    assert stream.write("a\tb\x1b[2J\r\x85\x7f\n") == 11
    assert sink.getvalue() == "a\tb\\x1b[2J\\r\\x85\\x7f\n"


def test_json_output_is_not_escaped_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """DEL is a control character JSON leaves raw: escaped as \\x7f it would be invalid JSON."""
    folder = tmp_path / "a\x7fb"
    folder.mkdir()
    dot = folder / "g.dot"
    shutil.copy(SAMPLES / "bundles" / "tiny-llama-b2.dot", dot)
    main(["inspect", "--json", str(dot)])
    assert json.loads(capsys.readouterr().out)[0]["file"] == str(dot)


def test_serve_says_on_the_terminal_when_a_file_fails_to_load(tmp_path: Path) -> None:
    # Issue 27: `serve bad.dot` printed nothing; the failure showed only in the page.
    from graphscope.app.serve.server import create_app
    from graphscope.app.view import callbacks
    from graphscope.app.view.state import ViewState

    bad, good = tmp_path / "bad.dot", tmp_path / "good.dot"
    bad.write_text("digraph {\n")
    good.write_text((SAMPLES / "dot" / "torch-ops" / "flags-verbose.dot").read_text())
    later = tmp_path / "later.dot"
    later.write_text("not a graph\n")
    said: list[str] = []
    create_app([bad, good, later], say=said.append)
    assert len(said) == 1 and said[0].startswith(f"{bad}:2: ") and "truncated" in said[0]
    # A file that fails when first opened is said then.
    view = ViewState.over([bad, good, later])
    view.registry.say = said.append
    later_id = next(s.id for s in view.registry.sources.values() if s.path == later)
    callbacks.draw(view, later_id, "type", None, None, None)
    assert len(said) == 2 and said[1].startswith(str(later))
