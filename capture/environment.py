"""What a capture records about the machine: GPU, driver, CUDA and package versions."""

from __future__ import annotations

import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import graphscope

from ._cuda import check, driver


def versions() -> dict[str, Any]:
    """Python, torch, CUDA binding, CUPTI, transformers, networkx and graphscope versions."""
    out: dict[str, Any] = {"python": platform.python_version()}
    for dist in ("torch", "cuda-bindings", "cupti-python", "transformers", "networkx"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    out["graphscope_version"] = graphscope.__version__
    return out


def device_info(torch: Any) -> dict[str, Any]:
    """GPU name, driver version and CUDA versions, as the bundle's metadata records them."""
    info: dict[str, Any] = {"device": torch.cuda.get_device_name()}
    try:
        line = (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            )
            .stdout.strip()
            .splitlines()[0]
        )
        info["driver"] = line.strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        info["driver"] = None
    api = check(driver().cuDriverGetVersion(), "cuDriverGetVersion")
    info["cuda_driver_api"] = api
    info["cuda"] = torch.version.cuda
    return info
