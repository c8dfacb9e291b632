"""Make the reader's real test data: CUDA graphs of every node type, dumped at each DOT flag set.

Run on a GPU machine::

    python -m graphscope.capture.dot_samples --out samples/dot

For each scenario it builds one graph (explicit graph API through cuda-python, raw stream capture,
or a PyTorch capture), writes ``cudaGraphDebugDotPrint`` output at four flag sets, and writes
``driver.json``: what the driver API and CUPTI said about the same graph at that moment (node ids,
types, parents, edges, kernel names, launch configurations). Tests compare the DOT reader with
that record, never with the reader's own output. A ``manifest.jsonl`` line per file says how it
was made.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import os
import shlex
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._cuda import check, driver, nvrtc, require, runtime
from .environment import device_info, now_iso, versions
from .introspect import describe_graph

# The four flag sets the DOT reader must handle; "all" ORs every CUgraphDebugDot_flags member.
FLAG_SETS = ("none", "verbose", "kernel-params", "all")

_KERNEL_SOURCE = r"""
template <typename T>
__global__ void graphscope_scale(T* x, T a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
__global__ void graphscope_fill2d(float* out, int width) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    extern __shared__ float scratch[];
    scratch[threadIdx.x] = 1.0f;
    out[y * width + x] = scratch[threadIdx.x];
}
"""
_KERNEL_NAMES = ("graphscope_scale<float>", "graphscope_fill2d")


def flag_value(name: str) -> int:
    flags = driver().CUgraphDebugDot_flags
    if name == "none":
        return 0
    if name == "verbose":
        return int(flags.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE)
    if name == "kernel-params":
        return int(flags.CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS)
    if name == "all":
        value = 0
        for member in flags:
            value |= int(member)
        return value
    raise ValueError(name)


class Kernels:
    """Two small kernels compiled with NVRTC, for the graphs built by hand."""

    def __init__(self, arch: str) -> None:
        rtc, drv = nvrtc(), driver()
        prog = check(
            rtc.nvrtcCreateProgram(_KERNEL_SOURCE.encode(), b"graphscope_samples.cu", 0, [], []),
            "nvrtcCreateProgram",
        )
        for name in _KERNEL_NAMES:
            check(rtc.nvrtcAddNameExpression(prog, name.encode()), "nvrtcAddNameExpression")
        opts = [f"--gpu-architecture={arch}".encode(), b"-std=c++17"]
        err = rtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
        if int(err):
            size = check(rtc.nvrtcGetProgramLogSize(prog))
            log = b" " * size
            rtc.nvrtcGetProgramLog(prog, log)
            raise RuntimeError(f"NVRTC failed: {log.decode(errors='replace')}")
        size = check(rtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * size
        check(rtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
        self.module = check(drv.cuModuleLoadData(cubin), "cuModuleLoadData")
        self.functions = {}
        for name in _KERNEL_NAMES:
            lowered = check(rtc.nvrtcGetLoweredName(prog, name.encode()), "nvrtcGetLoweredName")
            func = check(drv.cuModuleGetFunction(self.module, lowered), "cuModuleGetFunction")
            self.functions[name] = func
        self._keep: list[Any] = []

    def params(
        self,
        name: str,
        args: list[Any],
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared: int = 0,
    ) -> Any:
        """CUDA_KERNEL_NODE_PARAMS with ``args`` (ctypes values) packed as a ``void*`` array."""
        drv = driver()
        holders = [a for a in args]
        array = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(a) for a in holders])
        self._keep.append((holders, array))
        p = drv.CUDA_KERNEL_NODE_PARAMS()
        p.func = self.functions[name]
        p.gridDimX, p.gridDimY, p.gridDimZ = grid
        p.blockDimX, p.blockDimY, p.blockDimZ = block
        p.sharedMemBytes = shared
        p.kernelParams = ctypes.addressof(array)
        return p


class Builder:
    """Adds nodes to one graph through the runtime and driver APIs, recording what failed."""

    def __init__(self, kernels: Kernels, graph: Any = None) -> None:
        self.rt, self.drv = runtime(), driver()
        self.kernels = kernels
        self.graph = graph if graph is not None else check(self.rt.cudaGraphCreate(0))
        self.errors: list[str] = []
        self.bodies: dict[int, list[Any]] = {}
        self._keep: list[Any] = []

    def rt_graph(self, graph: Any = None) -> Any:
        return self.rt.cudaGraph_t(init_value=int(graph if graph is not None else self.graph))

    def drv_graph(self, graph: Any = None) -> Any:
        return self.drv.CUgraph(init_value=int(graph if graph is not None else self.graph))

    def rt_nodes(self, deps: list[Any]) -> list[Any]:
        return [self.rt.cudaGraphNode_t(init_value=int(d)) for d in deps]

    def drv_nodes(self, deps: list[Any]) -> list[Any]:
        return [self.drv.CUgraphNode(init_value=int(d)) for d in deps]

    def attempt(self, what: str, make: Callable[[], Any]) -> Any:
        try:
            return make()
        except Exception as exc:  # recorded in driver.json: which node types this driver refused
            self.errors.append(f"{what}: {type(exc).__name__}: {exc}")
            return None

    def kernel(
        self,
        deps: list[Any],
        name: str,
        args: list[Any],
        grid: Any,
        block: Any,
        shared: int = 0,
        graph: Any = None,
    ) -> Any:
        p = self.kernels.params(name, args, grid, block, shared)
        g = self.drv_graph(graph)
        return check(
            self.drv.cuGraphAddKernelNode(g, self.drv_nodes(deps), len(deps), p),
            "cuGraphAddKernelNode",
        )

    def memcpy(
        self, deps: list[Any], dst: int, src: int, count: int, kind: str, graph: Any = None
    ) -> Any:
        k = getattr(self.rt.cudaMemcpyKind, f"cudaMemcpy{kind}")
        return check(
            self.rt.cudaGraphAddMemcpyNode1D(
                self.rt_graph(graph), self.rt_nodes(deps), len(deps), dst, src, count, k
            ),
            "cudaGraphAddMemcpyNode1D",
        )

    def memset(
        self,
        deps: list[Any],
        dst: int,
        value: int,
        element_size: int,
        width: int,
        height: int = 1,
        pitch: int = 0,
        graph: Any = None,
    ) -> Any:
        p = self.rt.cudaMemsetParams()
        p.dst = dst
        p.value = value
        p.elementSize = element_size
        p.width = width
        p.height = height
        p.pitch = pitch or width * element_size
        return check(
            self.rt.cudaGraphAddMemsetNode(self.rt_graph(graph), self.rt_nodes(deps), len(deps), p),
            "cudaGraphAddMemsetNode",
        )

    def host(self, deps: list[Any]) -> Any:
        callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _data: None)
        self._keep.append(callback)
        address = ctypes.cast(callback, ctypes.c_void_p).value
        p = self.rt.cudaHostNodeParams()
        try:
            p.fn = self.rt.cudaHostFn_t(init_value=address)
        except Exception:
            p.fn = address
        p.userData = 0
        return check(
            self.rt.cudaGraphAddHostNode(self.rt_graph(), self.rt_nodes(deps), len(deps), p),
            "cudaGraphAddHostNode",
        )

    def empty(self, deps: list[Any], graph: Any = None) -> Any:
        return check(
            self.rt.cudaGraphAddEmptyNode(self.rt_graph(graph), self.rt_nodes(deps), len(deps)),
            "cudaGraphAddEmptyNode",
        )

    def event(self, deps: list[Any], event: Any, record: bool) -> Any:
        add = self.rt.cudaGraphAddEventRecordNode if record else self.rt.cudaGraphAddEventWaitNode
        return check(
            add(self.rt_graph(), self.rt_nodes(deps), len(deps), event),
            "cudaGraphAddEvent(Record|Wait)Node",
        )

    def ext_semas(self, deps: list[Any], signal: bool) -> Any:
        if signal:
            p = self.rt.cudaExternalSemaphoreSignalNodeParams()
            add = self.rt.cudaGraphAddExternalSemaphoresSignalNode
        else:
            p = self.rt.cudaExternalSemaphoreWaitNodeParams()
            add = self.rt.cudaGraphAddExternalSemaphoresWaitNode
        p.numExtSems = 0
        return check(
            add(self.rt_graph(), self.rt_nodes(deps), len(deps), p),
            "cudaGraphAddExternalSemaphores*Node",
        )

    def mem_alloc(self, deps: list[Any], nbytes: int) -> tuple[Any, int]:
        p = self.rt.cudaMemAllocNodeParams()
        p.poolProps.allocType = self.rt.cudaMemAllocationType.cudaMemAllocationTypePinned
        p.poolProps.location.type = self.rt.cudaMemLocationType.cudaMemLocationTypeDevice
        p.poolProps.location.id = 0
        p.bytesize = nbytes
        node = check(
            self.rt.cudaGraphAddMemAllocNode(self.rt_graph(), self.rt_nodes(deps), len(deps), p),
            "cudaGraphAddMemAllocNode",
        )
        return node, int(p.dptr)

    def mem_free(self, deps: list[Any], dptr: int) -> Any:
        return check(
            self.rt.cudaGraphAddMemFreeNode(self.rt_graph(), self.rt_nodes(deps), len(deps), dptr),
            "cudaGraphAddMemFreeNode",
        )

    def batch_mem_op(self, deps: list[Any], address: int, value: int) -> Any:
        drv = self.drv
        ctx = check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
        op = drv.CUstreamBatchMemOpParams()
        write = drv.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WRITE_VALUE_32
        op.operation = write
        op.writeValue.operation = write
        op.writeValue.address = drv.CUdeviceptr(address)
        op.writeValue.value = value
        op.writeValue.flags = 0
        p = drv.CUDA_BATCH_MEM_OP_NODE_PARAMS()
        p.ctx = ctx
        p.count = 1
        p.paramArray = [op]
        p.flags = 0
        self._keep.append((op, p))
        return check(
            drv.cuGraphAddBatchMemOpNode(self.drv_graph(), self.drv_nodes(deps), len(deps), p),
            "cuGraphAddBatchMemOpNode",
        )

    def child(self, deps: list[Any], child: Any) -> Any:
        return check(
            self.rt.cudaGraphAddChildGraphNode(
                self.rt_graph(), self.rt_nodes(deps), len(deps), self.rt_graph(child)
            ),
            "cudaGraphAddChildGraphNode",
        )

    def conditional(self, deps: list[Any], kind: str, size: int) -> tuple[Any, list[Any]]:
        rt = self.rt
        flags = int(getattr(rt, "cudaGraphCondAssignDefault", 1))
        handle = check(
            rt.cudaGraphConditionalHandleCreate(self.rt_graph(), 1, flags),
            "cudaGraphConditionalHandleCreate",
        )
        p = rt.cudaGraphNodeParams()
        p.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        p.conditional.handle = handle
        p.conditional.type = getattr(rt.cudaGraphConditionalNodeType, f"cudaGraphCondType{kind}")
        p.conditional.size = size
        try:
            node = check(
                rt.cudaGraphAddNode(self.rt_graph(), self.rt_nodes(deps), None, len(deps), p),
                "cudaGraphAddNode",
            )
        except TypeError:
            node = check(
                rt.cudaGraphAddNode(self.rt_graph(), self.rt_nodes(deps), len(deps), p),
                "cudaGraphAddNode",
            )
        bodies = list(p.conditional.phGraph_out)[:size]
        self.bodies[int(node)] = [self.drv_graph(b) for b in bodies]
        return node, bodies


def build_explicit(kernels: Kernels, torch: Any) -> tuple[Any, Builder]:
    """Every node type the explicit graph API can make, in a fork/join shape."""
    b = Builder(kernels)
    rt = b.rt
    n = 4096
    dev = torch.zeros(n, device="cuda")
    dev2 = torch.zeros(n, device="cuda")
    grid2d = torch.zeros(64 * 64, device="cuda")
    pinned = torch.zeros(n, pin_memory=True)
    pinned2 = torch.zeros(n, pin_memory=True)
    flag = torch.zeros(4, dtype=torch.int32, device="cuda")
    b._keep += [dev, dev2, grid2d, pinned, pinned2, flag]
    nbytes = n * 4

    def scale_args(ptr: int) -> list[Any]:
        return [ctypes.c_void_p(ptr), ctypes.c_float(2.0), ctypes.c_int(n)]

    h2d = b.attempt(
        "memcpy HtoD",
        lambda: b.memcpy([], dev.data_ptr(), pinned.data_ptr(), nbytes, "HostToDevice"),
    )
    root = [h2d] if h2d is not None else []
    k1 = b.attempt(
        "kernel 1-D",
        lambda: b.kernel(
            root,
            "graphscope_scale<float>",
            scale_args(dev.data_ptr()),
            (n // 256, 1, 1),
            (256, 1, 1),
        ),
    )
    k2 = b.attempt(
        "kernel 2-D",
        lambda: b.kernel(
            root,
            "graphscope_fill2d",
            [ctypes.c_void_p(grid2d.data_ptr()), ctypes.c_int(64)],
            (4, 16, 1),
            (16, 4, 1),
            shared=64,
        ),
    )
    ms = b.attempt("memset 1-D", lambda: b.memset(root, dev2.data_ptr(), 0, 4, n))
    ms2 = b.attempt(
        "memset 2-D", lambda: b.memset(root, grid2d.data_ptr(), 0x3F, 1, 128, height=8, pitch=256)
    )
    branch = [x for x in (k1, k2, ms, ms2) if x is not None]
    d2d = b.attempt(
        "memcpy DtoD",
        lambda: b.memcpy(branch, dev2.data_ptr(), dev.data_ptr(), nbytes, "DeviceToDevice"),
    )
    h2h = b.attempt(
        "memcpy HtoH",
        lambda: b.memcpy([], pinned2.data_ptr(), pinned.data_ptr(), 1024, "HostToHost"),
    )
    join = b.attempt("empty", lambda: b.empty([x for x in (d2d, h2h) if x is not None]))
    chain = [join] if join is not None else []
    hostn = b.attempt("host", lambda: b.host(chain))
    chain = [hostn] if hostn is not None else chain
    event = check(rt.cudaEventCreate(), "cudaEventCreate")
    b._keep.append(event)
    rec = b.attempt("event record", lambda: b.event(chain, event, record=True))
    chain = [rec] if rec is not None else chain
    wait = b.attempt("event wait", lambda: b.event(chain, event, record=False))
    chain = [wait] if wait is not None else chain
    sig = b.attempt("ext semas signal", lambda: b.ext_semas(chain, signal=True))
    chain = [sig] if sig is not None else chain
    swait = b.attempt("ext semas wait", lambda: b.ext_semas(chain, signal=False))
    chain = [swait] if swait is not None else chain
    alloc = b.attempt("mem alloc", lambda: b.mem_alloc(chain, 1 << 20))
    if alloc is not None:
        alloc_node, dptr = alloc
        use = b.attempt(
            "memset into graph allocation", lambda: b.memset([alloc_node], dptr, 0, 4, 1 << 18)
        )
        free = b.attempt(
            "mem free", lambda: b.mem_free([use if use is not None else alloc_node], dptr)
        )
        chain = [free] if free is not None else chain
    bmo = b.attempt("batch mem op", lambda: b.batch_mem_op(chain, flag.data_ptr(), 7))
    chain = [bmo] if bmo is not None else chain

    # A child graph holding a kernel, a memset and a nested child graph of its own.
    inner = check(rt.cudaGraphCreate(0), "cudaGraphCreate")
    b.attempt("nested child: empty", lambda: b.empty([], graph=inner))
    b.attempt("nested child: memset", lambda: b.memset([], dev2.data_ptr(), 1, 1, 256, graph=inner))
    child = check(rt.cudaGraphCreate(0), "cudaGraphCreate")
    ck = b.attempt(
        "child: kernel",
        lambda: b.kernel(
            [],
            "graphscope_scale<float>",
            scale_args(dev2.data_ptr()),
            (n // 128, 1, 1),
            (128, 1, 1),
            graph=child,
        ),
    )
    b.attempt(
        "child: memset",
        lambda: b.memset([ck] if ck is not None else [], dev.data_ptr(), 0, 2, 512, graph=child),
    )
    sub = Builder(kernels, graph=child)
    sub.attempt("child: nested child graph", lambda: sub.child([], inner))
    b.errors += sub.errors
    cg = b.attempt("child graph", lambda: b.child(chain, child))
    chain = [cg] if cg is not None else chain

    # Conditional nodes: IF with an else branch, WHILE, SWITCH; each body gets real work.
    for kind, size in (("If", 2), ("While", 1), ("Switch", 3)):
        made = b.attempt(f"conditional {kind}", functools.partial(b.conditional, chain, kind, size))
        if made is None:
            continue
        node, bodies = made
        for i, body in enumerate(bodies):
            if i % 2 == 0:
                b.attempt(
                    f"{kind} body {i}: kernel",
                    functools.partial(
                        b.kernel,
                        [],
                        "graphscope_scale<float>",
                        scale_args(dev.data_ptr()),
                        (n // 512, 1, 1),
                        (512, 1, 1),
                        graph=body,
                    ),
                )
            else:
                b.attempt(
                    f"{kind} body {i}: memset",
                    functools.partial(b.memset, [], dev2.data_ptr(), 0, 4, 64, graph=body),
                )
        chain = [node]
    d2h = b.attempt(
        "memcpy DtoH",
        lambda: b.memcpy(chain, pinned.data_ptr(), dev.data_ptr(), nbytes, "DeviceToHost"),
    )
    del d2h
    return b.graph, b


def build_stream_capture(kernels: Kernels, torch: Any) -> tuple[Any, Builder]:
    """A raw stream capture (as an engine of its own would do) with the async calls that make
    host, event, allocation and batch-memory-op nodes, forked onto a second stream."""
    b = Builder(kernels, graph=0)
    rt, drv = b.rt, b.drv
    n = 8192
    dev = torch.zeros(n, device="cuda")
    flag = torch.zeros(4, dtype=torch.int32, device="cuda")
    pinned = torch.zeros(n, pin_memory=True)
    b._keep += [dev, flag, pinned]
    s1 = check(rt.cudaStreamCreateWithFlags(1), "cudaStreamCreateWithFlags")
    s2 = check(rt.cudaStreamCreateWithFlags(1), "cudaStreamCreateWithFlags")
    fork = check(rt.cudaEventCreateWithFlags(2), "cudaEventCreateWithFlags")  # disable timing
    joinev = check(rt.cudaEventCreateWithFlags(2), "cudaEventCreateWithFlags")
    external = check(rt.cudaEventCreateWithFlags(2), "cudaEventCreateWithFlags")
    waited = check(rt.cudaEventCreateWithFlags(2), "cudaEventCreateWithFlags")
    rt.cudaEventRecord(waited, s1)
    rt.cudaStreamSynchronize(s1)
    callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _data: None)
    b._keep += [s1, s2, fork, joinev, external, waited, callback]
    mode = rt.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal
    check(rt.cudaStreamBeginCapture(s1, mode), "cudaStreamBeginCapture")
    try:
        d1 = drv.CUstream(init_value=int(s1))
        b.attempt(
            "capture: memcpy HtoD",
            lambda: check(
                rt.cudaMemcpyAsync(
                    dev.data_ptr(),
                    pinned.data_ptr(),
                    n * 4,
                    rt.cudaMemcpyKind.cudaMemcpyHostToDevice,
                    s1,
                )
            ),
        )
        b.attempt(
            "capture: fork",
            lambda: (
                check(rt.cudaEventRecord(fork, s1)),
                check(rt.cudaStreamWaitEvent(s2, fork, 0)),
            ),
        )
        f = kernels.functions["graphscope_scale<float>"]
        args = [ctypes.c_void_p(dev.data_ptr()), ctypes.c_float(0.5), ctypes.c_int(n)]
        array = (ctypes.c_void_p * 3)(*[ctypes.addressof(a) for a in args])
        b._keep += [args, array]

        def launch(on: Any) -> Any:
            return check(
                drv.cuLaunchKernel(f, n // 256, 1, 1, 256, 1, 1, 0, on, ctypes.addressof(array), 0)
            )

        for stream in (s1, s2):
            ds = drv.CUstream(init_value=int(stream))
            b.attempt("capture: kernel", functools.partial(launch, ds))
        b.attempt("capture: memset", lambda: check(rt.cudaMemsetAsync(dev.data_ptr(), 0, 512, s2)))
        b.attempt(
            "capture: join",
            lambda: (
                check(rt.cudaEventRecord(joinev, s2)),
                check(rt.cudaStreamWaitEvent(s1, joinev, 0)),
            ),
        )
        host_fn = ctypes.cast(callback, ctypes.c_void_p).value
        b.attempt(
            "capture: host func",
            lambda: check(rt.cudaLaunchHostFunc(s1, rt.cudaHostFn_t(init_value=host_fn), 0)),
        )
        b.attempt(
            "capture: external event record",
            lambda: check(rt.cudaEventRecordWithFlags(external, s1, 1)),
        )
        b.attempt(
            "capture: external event wait", lambda: check(rt.cudaStreamWaitEvent(s1, waited, 1))
        )

        def alloc_free() -> None:
            ptr = check(rt.cudaMallocAsync(1 << 16, s1), "cudaMallocAsync")
            check(rt.cudaMemsetAsync(ptr, 0, 1 << 16, s1), "cudaMemsetAsync")
            check(rt.cudaFreeAsync(ptr, s1), "cudaFreeAsync")

        b.attempt("capture: malloc/free async", alloc_free)
        b.attempt(
            "capture: stream write value",
            lambda: check(drv.cuStreamWriteValue32(d1, drv.CUdeviceptr(flag.data_ptr()), 3, 0)),
        )
        b.attempt(
            "capture: memcpy DtoH",
            lambda: check(
                rt.cudaMemcpyAsync(
                    pinned.data_ptr(),
                    dev.data_ptr(),
                    n * 4,
                    rt.cudaMemcpyKind.cudaMemcpyDeviceToHost,
                    s1,
                )
            ),
        )
    finally:
        graph = check(rt.cudaStreamEndCapture(s1), "cudaStreamEndCapture")
    b.graph = graph
    return graph, b


def _torch_capture(torch: Any, step: Callable[[], Any]) -> Any:
    """gpt-fast discipline: warm up on a side stream, then capture with keep_graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    graph.enable_debug_mode()
    with torch.cuda.graph(graph):
        step()
    torch.cuda.synchronize()
    return graph


def build_torch_ops(torch: Any) -> Any:
    """A PyTorch capture of common ops: copies in and out, layer norm, GEMM, softmax, memset."""
    rt = runtime()
    x = torch.randn(64, 256, device="cuda", dtype=torch.float16)
    w = torch.randn(256, 512, device="cuda", dtype=torch.float16)
    host_in = torch.randn(64, 256, dtype=torch.float16).pin_memory()
    host_out = torch.empty(64, 512, dtype=torch.float16).pin_memory()
    buf = torch.empty(64, 512, device="cuda", dtype=torch.float16)
    scratch = torch.empty(1 << 16, device="cuda", dtype=torch.uint8)

    def step() -> None:
        x.copy_(host_in, non_blocking=True)
        y = torch.nn.functional.layer_norm(x, (256,))
        z = torch.softmax(y @ w, dim=-1)
        buf.copy_(z)
        stream = torch.cuda.current_stream().cuda_stream
        check(rt.cudaMemsetAsync(scratch.data_ptr(), 0, scratch.numel(), stream))
        host_out.copy_(buf, non_blocking=True)

    graph = _torch_capture(torch, step)
    graph._graphscope_keep = (x, w, host_in, host_out, buf, scratch)
    return graph


def build_torch_multistream(torch: Any) -> Any:
    """Fork/join over two side streams, as tensor-parallel or speculative steps do."""
    a = torch.randn(128, 128, device="cuda")
    w1 = torch.randn(128, 128, device="cuda")
    w2 = torch.randn(128, 128, device="cuda")
    out = torch.empty(128, 128, device="cuda")
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()

    def step() -> None:
        h = torch.relu(a @ w1)
        main = torch.cuda.current_stream()
        s1.wait_stream(main)
        s2.wait_stream(main)
        with torch.cuda.stream(s1):
            left = torch.sigmoid(h @ w1)
        with torch.cuda.stream(s2):
            right = torch.tanh(h @ w2) * 2
        main.wait_stream(s1)
        main.wait_stream(s2)
        out.copy_(left + right)

    graph = _torch_capture(torch, step)
    graph._graphscope_keep = (a, w1, w2, out, s1, s2)
    return graph


def build_llama_decode(torch: Any) -> Any:
    """Decode step of a 4-layer Llama (hidden 512, random weights) with a static KV cache."""
    transformers = require("transformers")
    config = transformers.LlamaConfig(
        hidden_size=512,
        intermediate_size=1376,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=8,
        vocab_size=4096,
        max_position_embeddings=256,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to("cuda", torch.float16).eval()
    try:
        cache = transformers.StaticCache(config=config, max_cache_len=64)
    except TypeError:
        cache = transformers.StaticCache(
            config=config, max_batch_size=1, max_cache_len=64, device="cuda", dtype=torch.float16
        )
    prompt = torch.randint(0, config.vocab_size, (1, 8), device="cuda")
    with torch.no_grad():
        model(
            input_ids=prompt,
            past_key_values=cache,
            use_cache=True,
            cache_position=torch.arange(8, device="cuda"),
        )
    token = torch.zeros(1, 1, dtype=torch.long, device="cuda")
    position = torch.tensor([8], device="cuda")
    logits = {}

    def step() -> None:
        with torch.no_grad():
            out = model(
                input_ids=token,
                past_key_values=cache,
                use_cache=True,
                cache_position=position,
                position_ids=position.unsqueeze(0),
            )
        logits["last"] = out.logits

    graph = _torch_capture(torch, step)
    graph._graphscope_keep = (model, cache, token, position, logits)
    return graph


def dump(
    graph: Any,
    folder: Path,
    bodies: dict[int, list[Any]] | None,
    torch_graph: Any = None,
    extra_errors: list[str] | None = None,
) -> list[str]:
    """Write the DOT files at every flag set and driver.json; return the file names written."""
    drv = driver()
    folder.mkdir(parents=True, exist_ok=True)
    handle = drv.CUgraph(init_value=int(graph))
    written = []
    for name in FLAG_SETS:
        path = folder / f"flags-{name}.dot"
        check(
            drv.cuGraphDebugDotPrint(handle, str(path).encode(), flag_value(name)),
            "cuGraphDebugDotPrint",
        )
        written.append(path.name)
    if torch_graph is not None:
        path = folder / "torch-debug-dump.dot"
        torch_graph.debug_dump(str(path))
        written.append(path.name)
    truth = describe_graph(handle, bodies)
    truth["flags"] = {name: flag_value(name) for name in FLAG_SETS}
    truth["build_errors"] = extra_errors or []
    (folder / "driver.json").write_text(json.dumps(truth, indent=1) + "\n")
    written.append("driver.json")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write scenarios into")
    parser.add_argument("--only", nargs="*", help="scenario names to make (default: all)")
    args = parser.parse_args(argv)
    torch = require("torch")
    if not torch.cuda.is_available():
        print("dot_samples: no CUDA device", file=sys.stderr)
        return 2
    torch.zeros(1, device="cuda")  # make the primary context current for the driver calls
    major, minor = torch.cuda.get_device_capability()
    kernels = Kernels(f"sm_{major}{minor}")
    env = {**device_info(torch), **versions()}
    command = "python -m graphscope.capture.dot_samples " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    date = now_iso()

    def explicit() -> Any:
        graph, b = build_explicit(kernels, torch)
        return graph, b.bodies, None, b.errors, b

    def capture() -> Any:
        graph, b = build_stream_capture(kernels, torch)
        return graph, b.bodies, None, b.errors, b

    def torch_graph(build: Callable[[Any], Any]) -> Callable[[], Any]:
        def make() -> Any:
            g = build(torch)
            return g.raw_cuda_graph(), {}, g, [], g

        return make

    scenarios: dict[str, Callable[[], Any]] = {
        "explicit-all-types": explicit,
        "stream-capture-misc": capture,
        "torch-ops": torch_graph(build_torch_ops),
        "torch-multistream": torch_graph(build_torch_multistream),
        "torch-llama-decode": torch_graph(build_llama_decode),
    }
    failures = 0
    manifest = []
    keep = []
    for name, make in scenarios.items():
        if args.only and name not in args.only:
            continue
        try:
            graph, bodies, tgraph, errors, owner = make()
            keep.append(owner)
            files = dump(graph, args.out / name, bodies, tgraph, errors)
        except Exception:
            failures += 1
            print(f"dot_samples: {name} failed:\n{traceback.format_exc()}", file=sys.stderr)
            continue
        for file in files:
            manifest.append(
                {
                    "file": f"{name}/{file}",
                    "scenario": name,
                    "command": command,
                    "date": date,
                    **env,
                }
            )
        print(f"dot_samples: {name}: {', '.join(files)}; refused: {errors or 'none'}")
    with open(args.out / "manifest.jsonl", "w") as fh:
        for line in manifest:
            fh.write(json.dumps(line) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
    sys.exit(main())
