"""Shared fixtures; ``gpu`` tests run only where torch sees a CUDA device and cupti imports."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _gpu_missing() -> str | None:
    for module in ("torch", "cuda.bindings", "cupti"):
        try:
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed"
        except ModuleNotFoundError:
            return f"{module} is not installed"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any("gpu" in item.keywords for item in items):
        return
    reason = _gpu_missing()
    if reason is None:
        return
    if os.environ.get("GRAPHSCOPE_REQUIRE_GPU"):
        # .ci/run-gpu: a run where every gpu test skipped would read as a pass
        raise pytest.UsageError(f"GRAPHSCOPE_REQUIRE_GPU is set, but {reason}")
    skip = pytest.mark.skip(reason=f"gpu test: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def samples() -> Path:
    """The repository's samples/ folder of real captures."""
    return SAMPLES


@pytest.fixture
def recording_with(tmp_path: Path) -> Any:
    """``recording_with(**sections)``: a one-process recording index (pid 42, serve.py,
    finished) with those top-level sections, written and read back through the reader."""
    from graphscope import recording

    def make(**sections: Any) -> recording.Recording:
        doc = recording.new_document({"pid": 42, "status": "finished", "argv": ["serve.py"]}, {})
        doc.update(sections)
        path = tmp_path / recording.INDEX_NAME
        path.write_text(recording.dumps_index(doc, path))
        return recording.load_recording(path)

    return make
