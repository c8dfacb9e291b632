"""On a GPU: what each bucket's graph memory pool holds, segment by segment.

    python benchmarks/bucket_pools.py [--model tiny-llama] [--batch-sizes 1 2 4]
    CUBLAS_WORKSPACE_CONFIG=:0:0 python benchmarks/bucket_pools.py   # no cuBLAS workspace

Captures one graph per batch size in one process, as ``graphscope capture`` does, and prints
each pool's segments (size and the first allocation's stack frame when torch recorded one).
Written to explain why the first bucket's pool was 32 MiB larger than the others.
"""

from __future__ import annotations

import argparse
import os

from graphscope.capture import session
from graphscope.capture._cuda import require


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-llama")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    torch = require("torch")
    print(f"CUBLAS_WORKSPACE_CONFIG={os.environ.get('CUBLAS_WORKSPACE_CONFIG', '(unset)')}")
    kept = []
    for size in args.batch_sizes:
        step = session._build_step(args.model, size)
        graph, _, _ = session.capture_step(torch, step, what=f"b{size}")
        kept.append(graph)  # alive, as a server keeps every bucket
        pool = tuple(graph.pool())
        segments = [
            s for s in torch.cuda.memory_snapshot() if tuple(s.get("segment_pool_id") or ()) == pool
        ]
        sizes = sorted((s["total_size"] for s in segments), reverse=True)
        total = sum(sizes)
        print(
            f"b{size}: pool {total / 2**20:.1f} MiB in {len(sizes)} segments; largest "
            + ", ".join(f"{n / 2**20:.1f} MiB" for n in sizes[:4])
        )


if __name__ == "__main__":
    main()
