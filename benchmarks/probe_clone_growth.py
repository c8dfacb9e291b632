"""Probe: does ``cuGraphClone`` of the same graph take longer with each capture, without graphscope?

``record`` clones each graph at instantiation (``grab.clone``). On the H200 the program's wait
for that clone grew from 14 to 31 ms over four captures of the same 10,411-node decoder
(docs/RECORD.md, eleventh round). This process imports nothing of graphscope: it captures the
decoder five times with ``keep_graph=True``, and for each capture times the capture, a clone
of its graph (destroyed at once, or kept with ``--keep``), the instantiation, and a second
clone after it. Prints one JSON line, milliseconds.

    python benchmarks/probe_clone_growth.py [--keep] [--layers 400]     # on the GPU machine
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "record_programs"))


def _clone(cuda: ctypes.CDLL, graph: int) -> ctypes.c_void_p:
    copy = ctypes.c_void_p()
    status = cuda.cuGraphClone(ctypes.byref(copy), ctypes.c_void_p(graph))
    if status:
        raise SystemExit(f"cuGraphClone failed with CUresult {status}")
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=400)
    parser.add_argument("--captures", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep every clone alive")
    args = parser.parse_args()
    import torch
    from torch_buckets import deep_decoder, warm_up

    cuda = ctypes.CDLL("libcuda.so.1")
    model, tokens, pos = deep_decoder(args.layers)
    rows, graphs, clones = [], [], []
    with torch.no_grad():
        warm_up(lambda: model(tokens, pos), 3)
        for _ in range(args.captures):
            graph = torch.cuda.CUDAGraph(keep_graph=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.cuda.graph(graph):
                model(tokens, pos)
            t1 = time.perf_counter()
            copy = _clone(cuda, graph.raw_cuda_graph())
            t2 = time.perf_counter()
            if args.keep:
                clones.append(copy)
            else:
                cuda.cuGraphDestroy(copy)
            t3 = time.perf_counter()
            graph.instantiate()
            t4 = time.perf_counter()
            cuda.cuGraphDestroy(_clone(cuda, graph.raw_cuda_graph()))
            t5 = time.perf_counter()
            spans = {
                "capture": t1 - t0,
                "clone": t2 - t1,
                "destroy": t3 - t2,
                "instantiate": t4 - t3,
                "clone_after_instantiate": t5 - t4,
            }
            rows.append({k: round(v * 1e3, 2) for k, v in spans.items()})
            graphs.append(graph)
    print(json.dumps({"keep": args.keep, "layers": args.layers, "ms": rows}), flush=True)


if __name__ == "__main__":
    main()
