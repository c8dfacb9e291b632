"""cuda-python's runtime API alone: a captured memset and copy, instantiated and launched.

    python tests/record_programs/cuda_python_graph.py --launches 50

Prints one JSON line: launches made.
"""

from __future__ import annotations

import argparse
import json

from cuda.bindings import runtime as rt


def _ok(result: tuple) -> object:
    err, *out = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise SystemExit(f"CUDA call failed: {err}")
    return out[0] if len(out) == 1 else out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=50)
    args = parser.parse_args()
    size = 1 << 20
    _ok(rt.cudaFree(0))
    stream = _ok(rt.cudaStreamCreate())
    a, b = _ok(rt.cudaMalloc(size)), _ok(rt.cudaMalloc(size))
    mode = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
    _ok(rt.cudaStreamBeginCapture(stream, mode))
    _ok(rt.cudaMemsetAsync(a, 1, size, stream))
    kind = rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice
    _ok(rt.cudaMemcpyAsync(b, a, size, kind, stream))
    graph = _ok(rt.cudaStreamEndCapture(stream))
    exe = _ok(rt.cudaGraphInstantiate(graph, 0))
    for _ in range(args.launches):
        _ok(rt.cudaGraphLaunch(exe, stream))
    _ok(rt.cudaStreamSynchronize(stream))
    print(json.dumps({"launches": args.launches}))


if __name__ == "__main__":
    main()
