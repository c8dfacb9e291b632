"""``graphscope record`` run as a user runs it, for the tests that read what it says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_record(
    out: Path, program: list[str], timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``graphscope record --out OUT -- PROGRAM`` in ``cwd``, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "graphscope", "record", "--out", str(out), "--", *program],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
    )


def not_recorded(stderr: str) -> list[str]:
    """The reasons record gave, one per process it names as not recorded."""
    mark = "graphscope record: not recorded: "
    return [line.removeprefix(mark) for line in stderr.splitlines() if line.startswith(mark)]
