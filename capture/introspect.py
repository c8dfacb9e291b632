"""Read a CUDA graph node by node through the driver API (cuda-python) and CUPTI.

This is the ground truth the DOT reader is tested against: what the driver itself says about a
graph's nodes, ids, edges and launch configurations. Driver quirks it works around (DESIGN.md):
``cuGraphNodeGetType`` rather than the runtime call, ``cuGraphKernelNodeGetParams`` rather than
the runtime one (which fails on PyTorch, cuBLAS and Triton kernels), and CUPTI for node ids,
since ``cuGraphNodeGetLocalId`` needs a 13.1 driver.
"""

from __future__ import annotations

from typing import Any

from graphscope.errors import CaptureError

from ._cuda import check, cupti, driver

_NODE_TYPE_PREFIX = "CU_GRAPH_NODE_TYPE_"
_MEMORY_KIND = {1: "H", 2: "D", 3: "A", 4: "U"}  # CUmemorytype: host, device, array, unified


def _ptr(value: Any) -> int:
    """An integer address out of a cuda-python handle, pointer wrapper or plain int."""
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except TypeError:
        return int(value.getPtr())


def node_type(node: Any) -> str:
    kind = check(driver().cuGraphNodeGetType(node), "cuGraphNodeGetType")
    name: str = kind.name
    return name[len(_NODE_TYPE_PREFIX) :] if name.startswith(_NODE_TYPE_PREFIX) else name


def graph_id(graph: Any) -> int:
    return int(cupti().get_graph_id(_ptr(graph)))


def node_ids(node: Any) -> tuple[int, int]:
    """(graph_id, local_id) from CUPTI's ``(graph_id << 32) | local_id``."""
    packed = int(cupti().get_graph_node_id(_ptr(node)))
    return packed >> 32, packed & 0xFFFFFFFF


def graph_nodes(graph: Any) -> list[Any]:
    drv = driver()
    _, count = check(drv.cuGraphGetNodes(graph, 0), "cuGraphGetNodes")
    if count == 0:
        return []
    nodes, _ = check(drv.cuGraphGetNodes(graph, count), "cuGraphGetNodes")
    return list(nodes)


def graph_edges(graph: Any) -> list[tuple[Any, Any, dict[str, int]]]:
    """Edges as (from_node, to_node, edge_data) with CUDA 13's ``cuGraphGetEdges`` signature."""
    drv = driver()
    *_, count = check(drv.cuGraphGetEdges(graph, 0), "cuGraphGetEdges")
    if count == 0:
        return []
    src, dst, data, _ = check(drv.cuGraphGetEdges(graph, count), "cuGraphGetEdges")
    edges = []
    for a, b, d in zip(src, dst, data, strict=True):
        edge = {"from_port": int(d.from_port), "to_port": int(d.to_port), "type": int(d.type)}
        edges.append((a, b, edge))
    return edges


def _memory_kind(memory_type: Any, pointer: int) -> str:
    code = int(memory_type)
    if code == 4 and pointer:  # unified addressing: ask where the pointer lives
        drv = driver()
        attr = drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE
        err, real = drv.cuPointerGetAttribute(attr, pointer)
        code = int(real) if int(err) == 0 else 1  # not a CUDA allocation: pageable host memory
    return _MEMORY_KIND.get(code, "?")


def kernel_name(params: Any) -> str:
    drv = driver()
    if _ptr(params.func):
        raw = check(drv.cuFuncGetName(params.func), "cuFuncGetName")
    else:
        raw = check(drv.cuKernelGetName(params.kern), "cuKernelGetName")
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def node_params(node: Any, kind: str) -> dict[str, Any]:
    """The contract fields of one node, read from the driver."""
    drv = driver()
    if kind == "KERNEL":
        p = check(drv.cuGraphKernelNodeGetParams(node), "cuGraphKernelNodeGetParams")
        return {
            "name": kernel_name(p),
            "grid": [int(p.gridDimX), int(p.gridDimY), int(p.gridDimZ)],
            "block": [int(p.blockDimX), int(p.blockDimY), int(p.blockDimZ)],
            "shared_mem": int(p.sharedMemBytes),
        }
    if kind == "MEMCPY":
        p = check(drv.cuGraphMemcpyNodeGetParams(node), "cuGraphMemcpyNodeGetParams")
        src = _memory_kind(p.srcMemoryType, _ptr(p.srcDevice) or _ptr(p.srcHost))
        dst = _memory_kind(p.dstMemoryType, _ptr(p.dstDevice) or _ptr(p.dstHost))
        return {
            "kind": f"{src}to{dst}",
            "bytes": int(p.WidthInBytes) * max(int(p.Height), 1) * max(int(p.Depth), 1),
        }
    if kind == "MEMSET":
        p = check(drv.cuGraphMemsetNodeGetParams(node), "cuGraphMemsetNodeGetParams")
        return {
            "value": int(p.value),
            "element_size": int(p.elementSize),
            "width": int(p.width),
            "height": int(p.height),
        }
    if kind == "MEM_ALLOC":
        p = check(drv.cuGraphMemAllocNodeGetParams(node), "cuGraphMemAllocNodeGetParams")
        return {"bytes": int(p.bytesize)}
    return {}


def child_graphs(node: Any, kind: str, known: dict[int, list[Any]]) -> list[Any]:
    """The graphs a GRAPH or CONDITIONAL node owns.

    Conditional bodies cannot be read back from a node on a 13.0 driver without
    ``cuGraphNodeGetParams``; the builder passes the bodies it created in ``known``.
    """
    if kind == "GRAPH":
        return [
            check(driver().cuGraphChildGraphNodeGetGraph(node), "cuGraphChildGraphNodeGetGraph")
        ]
    if kind == "CONDITIONAL":
        return known.get(_ptr(node), [])
    return []


def describe_graph(graph: Any, bodies: dict[int, list[Any]] | None = None) -> dict[str, Any]:
    """Every node, edge and nested graph of ``graph`` as plain data, keyed by driver ids.

    Returns ``{"graphs": [...], "nodes": [...], "edges": [...]}``; nodes carry ``graph_id``,
    ``local_id``, ``type``, ``parent`` ([graph_id, local_id] or None) and the contract fields.
    """
    bodies = bodies or {}
    graphs: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    pending: list[tuple[Any, list[int] | None]] = [(graph, None)]
    while pending:
        current, parent = pending.pop(0)
        gid = graph_id(current)
        graphs.append({"graph_id": gid, "parent": parent, "nodes": 0})
        members = graph_nodes(current)
        graphs[-1]["nodes"] = len(members)
        for node in members:
            ngid, lid = node_ids(node)
            kind = node_type(node)
            entry: dict[str, Any] = {
                "graph_id": ngid,
                "local_id": lid,
                "type": kind,
                "parent": parent,
            }
            entry.update(node_params(node, kind))
            nodes.append(entry)
            for child in child_graphs(node, kind, bodies):
                pending.append((child, [ngid, lid]))
        for a, b, data in graph_edges(current):
            edges.append({"from": list(node_ids(a)), "to": list(node_ids(b)), **data})
    return {"graphs": graphs, "nodes": nodes, "edges": edges}


_FUNC_ATTRIBUTES = {
    "registers": "CU_FUNC_ATTRIBUTE_NUM_REGS",
    "static_shared_mem": "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES",
    "max_threads_per_block": "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
    "local_mem": "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",
}
# CU_LAUNCH_PARAM_END, _BUFFER_POINTER and _BUFFER_SIZE: the keys of a launch's ``extra`` array.
_EXTRA_END, _EXTRA_BUFFER, _EXTRA_SIZE = 0, 1, 2


class KernelReader:
    """Reads kernel nodes: launch, function attributes and raw arguments.

    Attributes and argument layouts belong to the function, not the node, so they are read
    once per function: a decode graph launches a few dozen functions thousands of times, and
    the driver calls would otherwise dominate the 20 us-per-node budget.
    """

    def __init__(self) -> None:
        self._functions: dict[tuple[int, int], tuple[dict[str, int], list[tuple[int, int]]]] = {}
        self._device: Any = None

    def _function(self, params: Any) -> tuple[dict[str, int], list[tuple[int, int]]]:
        func, kern = _ptr(params.func), _ptr(params.kern)
        known = self._functions.get((func, kern))
        if known is not None:
            return known
        drv = driver()
        if not func and self._device is None:
            self._device = check(drv.cuCtxGetDevice(), "cuCtxGetDevice")
        attrs = {}
        for name, attr in _FUNC_ATTRIBUTES.items():
            which = getattr(drv.CUfunction_attribute, attr)
            if func:
                err, value = drv.cuFuncGetAttribute(which, params.func)
            else:
                err, value = drv.cuKernelGetAttribute(which, params.kern, self._device)
            if int(err) == 0:
                attrs[name] = int(value)
        layout: list[tuple[int, int]] = []
        while True:
            if func:
                err, offset, size = drv.cuFuncGetParamInfo(params.func, len(layout))
            else:
                err, offset, size = drv.cuKernelGetParamInfo(params.kern, len(layout))
            if int(err) != 0:
                break
            layout.append((int(offset), int(size)))
        self._functions[(func, kern)] = (attrs, layout)
        return attrs, layout

    @staticmethod
    def _arguments(params: Any, layout: list[tuple[int, int]]) -> list[RawArgument]:
        """Each argument's offset, size and raw bytes (None where the driver has none).

        ``kernelParams`` is the address of the ``void*`` array the driver keeps for the node
        (DESIGN.md); kernels launched with ``extra`` (cuBLAS does) keep one packed buffer
        instead, found through the ``CU_LAUNCH_PARAM_BUFFER_POINTER`` entry. Bytes are copied
        now, while the graph lives, and turned into hex later (``arguments``).
        """
        import ctypes

        base = _ptr(params.kernelParams)
        if base:
            slots = (ctypes.c_void_p * len(layout)).from_address(base)
            return [
                (o, s, ctypes.string_at(slot, s) if (slot := slots[i]) else None)
                for i, (o, s) in enumerate(layout)
            ]
        extra = _ptr(params.extra)
        buffer, size = 0, 0
        if extra:
            entries = ctypes.cast(extra, ctypes.POINTER(ctypes.c_void_p))
            i = 0
            while i < 16 and (entries[i] or 0) != _EXTRA_END:
                key, value = entries[i] or 0, entries[i + 1] or 0
                if key == _EXTRA_BUFFER:
                    buffer = value
                elif key == _EXTRA_SIZE and value:
                    size = ctypes.c_size_t.from_address(value).value
                i += 2
        if not buffer:
            return [(o, s, None) for o, s in layout]
        packed = ctypes.string_at(buffer, size or (layout[-1][0] + layout[-1][1] if layout else 0))
        return [(o, s, packed[o : o + s]) for o, s in layout]

    def read_raw(self, node: Any) -> tuple[dict[str, int], list[RawArgument]]:
        """Function attributes and raw arguments of one kernel node (the fast part)."""
        p = check(driver().cuGraphKernelNodeGetParams(node), "cuGraphKernelNodeGetParams")
        attrs, layout = self._function(p)
        return attrs, self._arguments(p, layout)

    def read(self, node: Any) -> dict[str, Any]:
        """Function attributes and arguments of one kernel node."""
        attrs, raw = self.read_raw(node)
        return {**attrs, "args": arguments(raw)}


#: One kernel argument as read: offset, size, bytes (None when the driver keeps none).
RawArgument = tuple[int, int, "bytes | None"]


def arguments(raw: list[RawArgument]) -> list[dict[str, Any]]:
    """Arguments as a bundle stores them: offset, size and value as hex where there is one."""
    return [
        {"offset": o, "size": s, "value": value.hex()}
        if value is not None
        else {"offset": o, "size": s}
        for o, s, value in raw
    ]


def root_nodes(graph: Any) -> list[tuple[int, Any]]:
    """(local_id, node) for the nodes of ``graph`` itself."""
    return [(node_ids(n)[1], n) for n in graph_nodes(graph)]


def graph_handle(graph: Any, name: str) -> int:
    """The ``CUgraph`` value of a keep_graph ``torch.cuda.CUDAGraph`` or of a raw handle
    (a ``cudaGraph_t``/``CUgraph`` or its integer value); ``name`` says which in errors."""
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
