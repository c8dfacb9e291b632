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
    """The libcupti cupti-python loaded, for the C calls read with ctypes; None where it is
    not found in this process (cupti-python's own calls then serve).

    The same library, not another copy found on the path: CUPTI keeps one subscriber and
    one pair of activity buffer callbacks per loaded library."""
    api = cupti()
    with contextlib.suppress(Exception):
        api.get_version()  # cupti-python opens libcupti at its first call
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if "/libcupti.so" in path:
                    return ctypes.CDLL(path)
    except OSError:
        return None
    return None


@functools.cache
def libcuda() -> ctypes.CDLL:
    """The CUDA driver library the process has loaded, for the few calls the program waits on
    at instantiation (``grab.clone``, ``grab.node_count``, ``grab.destroy``).

    Through ctypes rather than cuda-python: importing ``cuda.bindings.driver`` takes a few
    hundred ms while holding the GIL. Imported as the recorder starts, it can run during the
    first capture of a program that captures soon after it initialises CUDA; imported at the
    first instantiation, the program would wait for it. cuda-python still reads the graphs,
    in the recorder's thread, while the program rests (docs/RECORD.md, ninth round)."""
    lib = ctypes.CDLL("libcuda.so.1")
    graph, node = ctypes.c_void_p, ctypes.c_void_p
    lib.cuGraphClone.argtypes = [ctypes.POINTER(graph), graph]
    lib.cuGraphDestroy.argtypes = [graph]
    lib.cuGraphGetNodes.argtypes = [graph, ctypes.POINTER(node), ctypes.POINTER(ctypes.c_size_t)]
    lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    # The input observer's samples (record/inputs.py), on the program's thread at a launch.
    handle, size = ctypes.c_void_p, ctypes.c_size_t
    lib.cuMemcpyDtoHAsync_v2.argtypes = [handle, ctypes.c_uint64, size, handle]
    lib.cuEventCreate.argtypes = [ctypes.POINTER(handle), ctypes.c_uint]
    lib.cuEventRecord.argtypes = [handle, handle]
    lib.cuEventQuery.argtypes = [handle]
    lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(handle)]
    lib.cuCtxSetCurrent.argtypes = [handle]
    for function in (
        lib.cuGraphClone,
        lib.cuGraphDestroy,
        lib.cuGraphGetNodes,
        lib.cuGetErrorName,
        lib.cuMemcpyDtoHAsync_v2,
        lib.cuEventCreate,
        lib.cuEventRecord,
        lib.cuEventQuery,
        lib.cuCtxGetCurrent,
        lib.cuCtxSetCurrent,
    ):
        function.restype = ctypes.c_int
    return lib


def check_status(code: int, what: str) -> None:
    """Raise CaptureError for a CUresult other than CUDA_SUCCESS, with the error's name."""
    if code == 0:
        return
    name = ctypes.c_char_p()
    known = libcuda().cuGetErrorName(code, ctypes.byref(name)) == 0 and name.value
    label = name.value.decode(errors="replace") if known and name.value else f"CUresult {code}"
    raise CaptureError(f"{what} failed: {label} ({code})")


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
