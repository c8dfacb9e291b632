"""graphscope itself runs anywhere: importing it pulls in no GPU or web stack."""

from __future__ import annotations

import subprocess
import sys


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
