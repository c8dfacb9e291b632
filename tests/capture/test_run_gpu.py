"""``.ci/run-gpu`` runs every test file that holds a ``gpu`` test."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_run_gpu_names_every_gpu_test_file() -> None:
    script = (ROOT / ".ci" / "run-gpu").read_text()
    patterns = re.findall(r'"?\$repo"?/(tests/[\w/*]+\.py)', script)
    assert patterns, "no test paths found in .ci/run-gpu"
    gpu_files = [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "tests").rglob("test_*.py"))
        if re.search(r"mark\.gpu\b", path.read_text())
    ]
    assert gpu_files  # the marker is still spelled as this test expects
    missing = [f for f in gpu_files if not any(fnmatch.fnmatch(f, p) for p in patterns)]
    assert not missing, f".ci/run-gpu leaves out {missing}"
