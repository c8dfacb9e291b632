"""graphscope itself runs anywhere: importing it pulls in no GPU or web stack."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_core_imports_no_gpu_or_dash() -> None:
    code = (
        "import sys, graphscope, graphscope.cli, graphscope.analysis\n"
        "bad = [m for m in ('torch', 'cuda', 'cupti', 'dash', 'plotly') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_capture_and_app_are_installed_under_graphscope() -> None:
    import graphscope.app
    import graphscope.capture
    import graphscope.capture.introspect  # imports cleanly; CUDA modules load only when used

    assert graphscope.capture.__name__ == "graphscope.capture"
    assert graphscope.app.__name__ == "graphscope.app"


def test_python_m_graphscope_from_a_checkout_finds_app_and_capture() -> None:
    """In a checkout's root, ``python -m graphscope serve`` reads ./graphscope before any
    install; app/ and capture/ must still import as graphscope.app and graphscope.capture.

    The editable install's finder would map them anyway, so the child drops it first, as a
    plain ``pip install .`` leaves none."""
    root = Path(__file__).resolve().parent.parent
    code = (
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]\n"
        f"sys.path.insert(0, {str(root)!r})\n"
        "import graphscope, graphscope.app.server, graphscope.capture.introspect\n"
        "print(graphscope.__file__, graphscope.app.__file__, graphscope.capture.__file__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=False
    )
    assert result.returncode == 0, result.stderr
    core, app, capture = result.stdout.split()
    assert Path(core).parent == root / "graphscope"
    assert Path(app).parent == root / "app"
    assert Path(capture).parent == root / "capture"
