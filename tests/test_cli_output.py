"""The CLI's output to a terminal: bad option values, serve's start-up errors, and values
from files that hold control characters (found by a red team)."""

from __future__ import annotations

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
