"""Ask the driver whether ``cudaGraphExecUpdate`` accepts graph B for an executable of graph A.

``graphscope.analysis.update`` predicts the same from two bundles on any machine; this is the
ground truth it is tested against on a GPU.
"""

from __future__ import annotations

import ctypes
from typing import Any, TypedDict

from graphscope.errors import CaptureError
from graphscope.model import node_key

from . import introspect
from ._cuda import check, driver

_RESULT_PREFIX = "CU_GRAPH_EXEC_UPDATE_"


def _key(node: int) -> str | None:
    if not node:
        return None
    graph_id, local_id = introspect.node_ids(node)
    return node_key(graph_id, local_id)


class DriverUpdate(TypedDict):
    """What the driver answered when an executable of graph A was updated with graph B."""

    ok: bool  # whether the update succeeded
    # The driver's CUgraphExecUpdateResult without its prefix: SUCCESS, ERROR_TOPOLOGY_CHANGED...
    result: str
    # The nodes it names, as B's keys (the driver names the node of the graph it was given).
    error_node: str | None
    error_from: str | None


def driver_update(graph_a: Any, graph_b: Any) -> DriverUpdate:
    """Instantiate A, update the executable with B, and say what the driver answered.

    The executable is destroyed afterwards; A and B are left as they were.
    """
    drv = driver()
    a = drv.CUgraph(init_value=introspect.graph_handle(graph_a, "graph A"))
    b = drv.CUgraph(init_value=introspect.graph_handle(graph_b, "graph B"))
    exe = check(drv.cuGraphInstantiate(a, 0), "cuGraphInstantiate")
    try:
        code, result, error_node, error_from = _exec_update(int(exe), int(b))
    finally:
        check(drv.cuGraphExecDestroy(exe), "cuGraphExecDestroy")
    failure = int(drv.CUresult.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
    if code not in (0, failure):
        raise CaptureError(f"cuGraphExecUpdate failed: {drv.CUresult(code).name} ({code})")
    name = drv.CUgraphExecUpdateResult(result).name
    return {
        "ok": code == 0,
        "result": name[len(_RESULT_PREFIX) :] if name.startswith(_RESULT_PREFIX) else name,
        "error_node": _key(error_node),
        "error_from": _key(error_from),
    }


class _ResultInfo(ctypes.Structure):
    """CUgraphExecUpdateResultInfo_v1 (cuda.h)."""

    _fields_ = [
        ("result", ctypes.c_int),
        ("errorNode", ctypes.c_void_p),
        ("errorFromNode", ctypes.c_void_p),
    ]


def _exec_update(exe: int, graph: int) -> tuple[int, int, int, int]:
    """``cuGraphExecUpdate`` through ctypes: (status, result, error node, error-from node).

    cuda-python returns no result info when the call fails (``(err, None)``), which is the
    case that matters here, so the driver library is called directly.
    """
    lib = ctypes.CDLL("libcuda.so.1")
    call = lib.cuGraphExecUpdate_v2
    call.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_ResultInfo)]
    call.restype = ctypes.c_int
    info = _ResultInfo()
    code = call(exe, graph, ctypes.byref(info))
    return code, info.result, info.errorNode or 0, info.errorFromNode or 0
