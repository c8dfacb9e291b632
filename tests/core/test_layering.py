"""graphscope itself runs anywhere: importing it pulls in no GPU or web stack."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


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


def test_start_up_paths_import_no_graph_library() -> None:
    """What runs before a user's program does, or inside it as it starts: ``graphscope
    record``'s own process (the CLI) and the recorder's start-up in each recorded process
    (``capture.autostart``). networkx and the readers load later, when a graph is read."""
    code = (
        "import sys, graphscope.cli, graphscope.capture.autostart\n"
        "heavy = ('networkx', 'graphscope.io', 'graphscope.dot', 'graphscope.bundle',\n"
        "         'graphscope.analysis.summary', 'graphscope.exports', 'torch._dynamo')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_graphscope_load_and_save_load_on_first_use() -> None:
    import graphscope
    from graphscope import io

    assert graphscope.load is io.load and graphscope.save is io.save
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        graphscope.nothing  # noqa: B018


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
    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]\n"
        f"sys.path.insert(0, {str(root)!r})\n"
        "import graphscope, graphscope.app.serve.server, graphscope.capture.introspect\n"
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


@pytest.mark.parametrize(
    ("program", "watched"),
    [
        ("pass", False),  # a process that never uses CUDA
        ("import json, decimal, math", False),  # the standard library's extensions
        ("import ctypes", True),  # CUDA through ctypes
        ("import markupsafe._speedups", True),  # an installed extension, as jaxlib or cupy
    ],
)
def test_the_start_up_hook_watches_for_contexts_only_once_compiled_code_loads(
    program: str, watched: bool, tmp_path: Path
) -> None:
    """graphscope record's hook in a process without torch: CUPTI (cupti-python, numpy,
    libcupti) is asked for contexts from the first extension module outside the standard
    library, before its code runs; a pure-Python process never pays for it."""
    from graphscope.capture import record

    from graphscope.recording import Settings

    code = (
        f"{program}\n"
        "import sys\n"
        "print('graphscope.capture.contexts' in sys.modules, 'torch' in sys.modules)\n"
    )
    env = {**os.environ, **record.child_environment(tmp_path, Settings())}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert result.stdout.split() == [str(watched), "False"], result.stderr
