"""Probe: can a graph be read after its instantiation returns, from a clone made inside it?

``record`` reads each graph at ``GRAPHEXEC_CREATED``, while the ``cudaGraph_t`` lives: the
program waits for the verbose dump and the driver's read (13 us per node on the H200). A
``cuGraphClone`` made there instead, read later on the recorder's worker, would cost the
program only the clone, if the clone reads as the original: the same nodes, with the same
local ids (CUPTI's kernel records name the original's), types, kernels and arguments.

This captures a deep decoder with ``torch.cuda.graph`` (``keep_graph=True``, so the original
can be read beside its clone), then times the clone and the reads, and compares the two
graphs node by node. Prints one JSON line.

    python benchmarks/probe_clone.py --layers 400      # on the GPU machine
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "record_programs"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=400)
    args = parser.parse_args()
    import torch
    from graphscope.capture import grab, introspect
    from graphscope.capture._cuda import check, driver
    from torch_buckets import deep_decoder

    model, tokens, pos = deep_decoder(args.layers)
    with torch.no_grad():
        for _ in range(3):
            model(tokens, pos)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph(keep_graph=True)
        with torch.cuda.graph(graph):
            model(tokens, pos)
    handle = int(graph.raw_cuda_graph())
    drv = driver()
    started = time.perf_counter()
    clone = check(drv.cuGraphClone(drv.CUgraph(init_value=handle)), "cuGraphClone")
    clone_s = time.perf_counter() - started
    clone_handle = introspect.graph_handle(clone, "clone")
    out: dict[str, object] = {"layers": args.layers}
    with tempfile.TemporaryDirectory() as tmp:
        reads = {}
        for name, h in (("original", handle), ("clone", clone_handle)):
            path = Path(tmp) / f"{name}.dot"
            snap = grab.snapshot(h, path)
            reads[name] = (snap, path.read_text())
        (orig, orig_dot), (copy, copy_dot) = reads["original"], reads["clone"]
        out.update(
            nodes=orig.nodes,
            clone_us_per_node=clone_s * 1e6 / max(orig.nodes, 1),
            read_us_per_node=(orig.seconds + orig.dump_seconds) * 1e6 / max(orig.nodes, 1),
            graph_ids=[orig.graph_id, copy.graph_id],
            same_local_ids=sorted(orig.types) == sorted(copy.types),
            same_types=orig.types == copy.types,
            same_kernels=orig.kernels == copy.kernels,
            kernels_differing=sum(1 for k, v in orig.kernels.items() if copy.kernels.get(k) != v),
        )

        # The dumps, with each graph's id written out of their node names.
        def normal(text: str, gid: int) -> list[str]:
            text = re.sub(rf"graph_{gid}_", "graph_G_", text)
            return sorted(line for line in text.splitlines() if "graph_G_" in line)

        a, b = normal(orig_dot, orig.graph_id), normal(copy_dot, copy.graph_id)
        out["dot_lines"] = len(a)
        out["dot_lines_differing"] = len(set(a) ^ set(b))
        out["dot_first_difference"] = sorted(set(a) ^ set(b))[:4]
    check(drv.cuGraphDestroy(clone), "cuGraphDestroy")
    print(json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main()
