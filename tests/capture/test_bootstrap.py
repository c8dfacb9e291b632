"""graphscope record's start-up hook (capture/bootstrap/sitecustomize.py) where it cannot
watch for CUDA contexts: a process that then loads the CUDA driver says so at exit (CPU)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from record_cli import run_record

# The program copies its own interpreter's ctypes library to a file named libcuda.so.1 and
# loads it (after numpy-like compiled code has started the hook's watch), or does not.
_PROGRAM = """
import _ctypes, ctypes, os, shutil, sys
folder = sys.argv[1]
if sys.argv[2] == "load":
    fake = os.path.join(folder, "libcuda.so.1")
    shutil.copy(_ctypes.__file__, fake)
    ctypes.CDLL(fake)
print("ran")
"""
_SAID = "this process loaded the CUDA driver and ran unrecorded"

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="needs Linux's /proc")


def _run(tmp_path: Path, python: str, load: str) -> subprocess.CompletedProcess[str]:
    # Run outside the checkout, whose graphscope/ folder any Python would import from "".
    program = [python, "-c", _PROGRAM, str(tmp_path), load]
    done = run_record(tmp_path / f"rec-{load}", program, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "ran\n", done.stderr[-3000:]
    return done


@pytest.mark.skipif(
    importlib.util.find_spec("cupti") is not None, reason="cupti-python is installed here"
)
def test_without_cupti_a_process_that_loads_the_driver_says_so_at_exit(tmp_path: Path) -> None:
    done = _run(tmp_path, sys.executable, "load")
    said = [line for line in done.stderr.splitlines() if _SAID in line]
    assert len(said) == 1, done.stderr
    assert f"cupti-python is not installed for {sys.executable}" in said[0]
    assert "install graphscope[capture]" in said[0]
    quiet = _run(tmp_path, sys.executable, "skip")
    assert _SAID not in quiet.stderr, quiet.stderr


def test_a_python_without_graphscope_that_loads_the_driver_says_so_at_exit(
    tmp_path: Path,
) -> None:
    # This interpreter outside its virtual environment, or another on this machine, where
    # graphscope is not installed.
    candidates = [getattr(sys, "_base_executable", None), *map(shutil.which, ("python3", "python"))]
    other = next(
        (
            p
            for p in candidates
            if p
            and subprocess.run(
                [p, "-c", "import graphscope"], capture_output=True, cwd=tmp_path
            ).returncode
        ),
        None,
    )
    if other is None:
        pytest.skip("no Python on this machine without graphscope")
    done = _run(tmp_path, other, "load")
    said = [line for line in done.stderr.splitlines() if _SAID in line]
    assert len(said) == 1 and "cannot import graphscope in" in said[0], done.stderr
