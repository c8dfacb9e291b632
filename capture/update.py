"""Ask the driver whether ``cudaGraphExecUpdate`` accepts graph B for an executable of graph A.

``graphscope.analysis.update`` predicts the same from two bundles on any machine; this is the
ground truth it is tested against on a GPU.
"""

from __future__ import annotations

import ctypes
from typing import Any

from graphscope.errors import CaptureError
from graphscope.model import node_key

from . import introspect
from ._cuda import check, driver

_RESULT_PREFIX = "CU_GRAPH_EXEC_UPDATE_"


def _handle(graph: Any, name: str) -> int:
    """The ``CUgraph`` value of a keep_graph ``torch.cuda.CUDAGraph`` or of a raw handle."""
    if hasattr(graph, "raw_cuda_graph"):
        try:
            return int(graph.raw_cuda_graph())
        except RuntimeError as exc:
            raise CaptureError(
                f"{name}: torch cannot give this CUDAGraph's graph ({exc}); capture it with "
                "torch.cuda.CUDAGraph(keep_graph=True)"
            ) from None
    try:
        return int(graph)
    except TypeError:
        raise CaptureError(
            f"{name}: expected a torch.cuda.CUDAGraph or a cudaGraph_t handle, "
            f"got {type(graph).__name__}"
        ) from None


def _key(node: int) -> str | None:
    if not node:
        return None
    graph_id, local_id = introspect.node_ids(node)
    return node_key(graph_id, local_id)


def driver_update(graph_a: Any, graph_b: Any) -> dict[str, Any]:
    """Instantiate A, update the executable with B, and say what the driver answered.

    Returns ``{"ok", "result", "error_node", "error_from"}``: ``result`` is the driver's
    ``CUgraphExecUpdateResult`` without its prefix (``SUCCESS``, ``ERROR_TOPOLOGY_CHANGED``,
    ...), the nodes are B's keys (the driver names the node of the graph it was given). The
    executable is destroyed afterwards; A and B are left as they were.
    """
    drv = driver()
    a = drv.CUgraph(init_value=_handle(graph_a, "graph A"))
    b = drv.CUgraph(init_value=_handle(graph_b, "graph B"))
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
