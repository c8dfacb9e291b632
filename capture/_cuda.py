"""Lazy imports of the GPU stack and the one checker for cuda-python's ``(err, *out)`` tuples."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
from types import ModuleType
from typing import Any

from graphscope.errors import CaptureError

_INSTALL_HINT = (
    "graphscope capture and record need a CUDA GPU with torch, cuda-bindings and cupti-python: "
    "pip install 'graphscope[capture]'"
)


@functools.cache
def require(module: str) -> ModuleType:
    """Import a GPU-side module or raise a CaptureError saying what to install.

    Cached: introspection calls this several times per node, and ``import_module`` alone
    cost 10 us per node on a 10,000-node graph.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise CaptureError(f"cannot import {module} ({exc}); {_INSTALL_HINT}") from None


def driver() -> ModuleType:
    return require("cuda.bindings.driver")


def runtime() -> ModuleType:
    return require("cuda.bindings.runtime")


def nvrtc() -> ModuleType:
    return require("cuda.bindings.nvrtc")


def cupti() -> ModuleType:
    return require("cupti.cupti")


@functools.cache
def libcupti() -> ctypes.CDLL | None:
    """The libcupti cupti-python loaded, for the calls graphscope makes through ctypes (the
    ones where cupti-python's per-record or per-callback Python objects cost too much); None
    where it cannot be found, and cupti-python is used throughout."""
    api = cupti()
    # cupti-python loads libcupti at its first call; asking a callback's name touches no
    # device and makes no context (a process that forks workers must stay fork-safe).
    with contextlib.suppress(Exception):
        api.get_callback_name(api.CallbackDomain.RUNTIME_API, 1)
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = [line.rstrip("\n").split(maxsplit=5)[-1] for line in maps]
    except OSError:
        return None
    found = next((p for p in paths if "/libcupti.so" in p), None)
    if found is None:
        return None
    try:
        return ctypes.CDLL(found)
    except OSError:
        return None


def check(result: Any, what: str = "CUDA call") -> Any:
    """Unpack a cuda-python result tuple, raising CaptureError with the error's name on failure.

    Returns None for a bare status, the value for one output, a tuple for several.
    """
    if not isinstance(result, tuple):
        result = (result,)
    err, *out = result
    code = int(err)
    if code != 0:
        name = getattr(err, "name", str(err))
        raise CaptureError(f"{what} failed: {name} ({code})")
    if not out:
        return None
    return out[0] if len(out) == 1 else tuple(out)
