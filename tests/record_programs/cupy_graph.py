"""A CuPy stream capture replayed in a loop, no torch.

    python tests/record_programs/cupy_graph.py --replays 100

Prints one JSON line: replays run, and the value the graph computed.
"""

from __future__ import annotations

import argparse
import json

import cupy as cp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replays", type=int, default=100)
    args = parser.parse_args()
    x = cp.ones(1 << 20, dtype=cp.float32)
    y = cp.empty_like(x)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        y[...] = x * 2 + 1  # compiled and run once before capture
        stream.begin_capture()
        y[...] = x * 2 + 1
        y[...] = cp.sqrt(y)
        graph = stream.end_capture()
    for _ in range(args.replays):
        graph.launch(stream)
    stream.synchronize()
    print(json.dumps({"replays": args.replays, "value": float(y[0])}))


if __name__ == "__main__":
    main()
