"""Probe (GPU machine): can graphscope attach to a process before any framework makes a CUDA
context, without initialising CUDA, and see graphs that torch does not make?

    python benchmarks/probe_attach.py [--out probe.jsonl]

Each scenario runs in a fresh Python process and prints one JSON line:

* ``subscribe-cost``: import cupti-python, subscribe, enable the RESOURCE callbacks
  (CONTEXT_CREATED, GRAPHEXEC_CREATED) and the graph-launch API callbacks: milliseconds each.
* ``fork-after-subscribe``: subscribe as above, then fork; the child initialises CUDA and
  makes a context. A parent whose subscription initialised CUDA leaves the child with
  CUDA_ERROR_NOT_INITIALIZED or a failed context: then early subscription is not fork-safe.
  The same with nothing subscribed is the control.
* ``jax``, ``cupy``, ``cuda-python``: subscribe first, then run the framework's graphs
  (a jitted loop XLA turns into command buffers; a CuPy stream capture; cuda-python's stream
  capture of a memset); counts of contexts created, graphs instantiated and graph launches
  seen by the callbacks.

The answer decides issue 25's mechanism: subscribe early from the start-up hook if every line
says so, else CUDA's injection (CUDA_INJECTION64_PATH). Kept as the issue asks, to run again
on a new driver or CUPTI.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time

_SUBSCRIBE = r"""
import json, os, sys, time
t0 = time.perf_counter()
import cupti.cupti as c
t1 = time.perf_counter()
seen = {"contexts": 0, "graph_execs": 0, "launches": 0}
res = int(c.CallbackDomain.RESOURCE)
ctx_id = int(c.CallbackIdResource.CONTEXT_CREATED)
exec_id = int(c.CallbackIdResource.GRAPHEXEC_CREATED)
launch_ids = set()
enter = int(c.ApiCallbackSite.API_ENTER)
def on_callback(userdata, domain, cbid, cbdata):
    domain, cbid = int(domain), int(cbid)
    if domain == res and cbid == ctx_id:
        seen["contexts"] += 1
    elif domain == res and cbid == exec_id:
        seen["graph_execs"] += 1
    elif cbid in launch_ids and int(cbdata.callback_site) == enter:
        seen["launches"] += 1
handle = c.subscribe(on_callback, None)
t2 = time.perf_counter()
c.enable_callback(1, handle, c.CallbackDomain.RESOURCE, c.CallbackIdResource.CONTEXT_CREATED)
c.enable_callback(1, handle, c.CallbackDomain.RESOURCE, c.CallbackIdResource.GRAPHEXEC_CREATED)
# The driver's launch alone: the runtime's cudaGraphLaunch calls it, and counting both
# would count each launch twice.
for name, member in c.driver_api_trace_cbid.__members__.items():
    if name.startswith("cuGraphLaunch"):
        launch_ids.add(int(member))
        c.enable_callback(1, handle, c.CallbackDomain.DRIVER_API, member)
t3 = time.perf_counter()
result = {"import_ms": (t1 - t0) * 1e3, "subscribe_ms": (t2 - t1) * 1e3,
          "enable_ms": (t3 - t2) * 1e3}
"""

_FORK = r"""
from cuda.bindings import driver as d
def try_cuda():
    (err,) = d.cuInit(0)
    if int(err):
        return f"cuInit: {err.name}"
    err, dev = d.cuDeviceGet(0)
    err, ctx = d.cuDevicePrimaryCtxRetain(dev)
    return "ok" if int(err) == 0 else f"cuDevicePrimaryCtxRetain: {err.name}"
maps = open("/proc/self/maps").read()
result["libcuda_loaded_before_fork"] = "libcuda.so" in maps
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(read)
    os.write(write, try_cuda().encode())
    os._exit(0)
os.close(write)
os.waitpid(pid, 0)
result["child_after_fork"] = os.read(read, 1000).decode()
result["parent_after"] = try_cuda()
"""

_JAX = r"""
import jax, jax.numpy as jnp
@jax.jit
def step(x, w):
    for _ in range(8):
        x = jnp.tanh(x @ w)
    return x
x = jnp.ones((8, 256)); w = jnp.ones((256, 256)) * 0.01
for _ in range(50):
    x = step(x, w)
x.block_until_ready()
result["xla_flags"] = os.environ.get("XLA_FLAGS")
"""

_CUPY = r"""
import cupy as cp
x = cp.ones(1 << 20, dtype=cp.float32)
s = cp.cuda.Stream(non_blocking=True)
with s:
    s.begin_capture()
    y = x * 2 + 1
    g = s.end_capture()
for _ in range(20):
    g.launch(s)
s.synchronize()
"""

_CUDA_PYTHON = r"""
from cuda.bindings import runtime as rt
(err,) = rt.cudaFree(0)[:1]
err, stream = rt.cudaStreamCreate()
err, buf = rt.cudaMalloc(1 << 20)
rt.cudaStreamBeginCapture(stream, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal)
rt.cudaMemsetAsync(buf, 0, 1 << 20, stream)
err, graph = rt.cudaStreamEndCapture(stream)
err, exe = rt.cudaGraphInstantiate(graph, 0)
for _ in range(20):
    rt.cudaGraphLaunch(exe, stream)
rt.cudaStreamSynchronize(stream)
"""

_END = r"""
result.update(seen)
print(json.dumps(result))
"""

SCENARIOS = {
    "subscribe-cost": _SUBSCRIBE + _END,
    "fork-control": "import json, os\nresult = {}\nseen = {}\n" + _FORK + _END,
    "fork-after-subscribe": _SUBSCRIBE + _FORK + _END,
    "jax": _SUBSCRIBE + _JAX + _END,
    "cupy": _SUBSCRIBE + _CUPY + _END,
    "cuda-python": _SUBSCRIBE + _CUDA_PYTHON + _END,
}


def run(name: str, code: str, timeout: float) -> dict[str, object]:
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"scenario": name, "error": f"no answer in {timeout:g} s"}
    line: dict[str, object] = {"scenario": name, "wall_s": round(time.perf_counter() - start, 3)}
    last = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
    with contextlib.suppress(json.JSONDecodeError):
        line.update(json.loads(last[0]) if last else {})
    if done.returncode != 0 or not last:
        line["error"] = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the JSON lines here")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help=", ".join(SCENARIOS))
    args = parser.parse_args()
    unknown = [n for n in args.scenarios if n not in SCENARIOS]
    if unknown:
        parser.error(f"no scenario {', '.join(unknown)}; the scenarios: {', '.join(SCENARIOS)}")
    lines = [run(n, SCENARIOS[n], args.timeout) for n in (args.scenarios or SCENARIOS)]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    return 0 if all("error" not in line for line in lines) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
