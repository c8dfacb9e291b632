"""What a capture records about the machine: GPU, driver, CUDA and package versions."""

from __future__ import annotations

import datetime
import functools
import platform
import re
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypedDict

import graphscope

from ._cuda import check, driver


class DeviceInfo(TypedDict):
    """The GPU and the CUDA versions, as a bundle's metadata records them."""

    device: str  # torch's name for the GPU: "NVIDIA H200"
    driver: str | None  # the driver's version, from nvidia-smi: "580.159.04"
    cuda_driver_api: int  # cuDriverGetVersion: 13000 for CUDA 13.0
    cuda: str | None  # the CUDA torch was built with: "13.0"


def versions() -> dict[str, str | None]:
    """Python, torch, CUDA binding, CUPTI, transformers, networkx and graphscope versions."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("torch", "cuda-bindings", "cupti-python", "transformers", "networkx"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    out["graphscope_version"] = graphscope.__version__
    return out


def now_iso() -> str:
    """The time now, UTC, to the second: when a capture or recording was made."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


_PROC = Path("/proc/driver/nvidia")
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
_PROC_DRIVER = re.compile(r"NVRM version:.*?\s(\d+\.\d+(?:\.\d+)*)\s")


def _from_proc() -> dict[str, str | None] | None:
    """GPU 0's name and the driver's version from the driver's own files, or None.

    nvidia-smi takes a few hundred ms on a GPU machine, all of it in ``graphscope record``'s
    wall time for a short program (issue 25); these files answer in microseconds. GPU folders
    are named by PCI bus id, the order nvidia-smi lists GPUs in.
    """
    try:
        found = _PROC_DRIVER.search((_PROC / "version").read_text(errors="replace"))
        folders = sorted((_PROC / "gpus").iterdir())
        info = (folders[0] / "information").read_text(errors="replace") if folders else ""
    except OSError:
        return None
    name = next(
        (line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("Model:")),
        None,
    )
    if found is None or not name:
        return None
    return {"device": name, "driver": found.group(1)}


@functools.cache
def nvidia_smi() -> dict[str, str | None]:
    """The GPU's name and driver version, which initialises no CUDA context in this process
    (None each where neither the driver's files nor nvidia-smi say them)."""
    quick = _from_proc()
    if quick is not None:
        return quick
    try:
        line = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.splitlines()[0]
        name, driver_version = (part.strip() for part in line.split(",", 1))
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return {"device": None, "driver": None}
    return {"device": name, "driver": driver_version}


def device_info(torch: Any) -> DeviceInfo:
    """GPU name, driver version and CUDA versions, as the bundle's metadata records them;
    ``torch`` None in a process whose CUDA is not torch's (JAX, CuPy): nvidia-smi's name."""
    smi = nvidia_smi()
    if torch is None or not torch.cuda.is_initialized():
        return {
            "device": smi["device"] or "?",
            "driver": smi["driver"],
            "cuda_driver_api": check(driver().cuDriverGetVersion(), "cuDriverGetVersion"),
            "cuda": None,
        }
    return {
        "device": torch.cuda.get_device_name(),
        "driver": smi["driver"],
        "cuda_driver_api": check(driver().cuDriverGetVersion(), "cuDriverGetVersion"),
        "cuda": torch.version.cuda,
    }
