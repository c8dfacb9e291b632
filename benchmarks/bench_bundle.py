"""Time saving and loading a 100,000-node .json.gz bundle, and the peak memory of a load.

    python benchmarks/bench_bundle.py [--nodes 100000] [--repeat 3]

Targets (issue 2): load <= 2 s, save <= 2 s, peak memory <= 500 MB. Memory is the peak
resident set of a fresh process that imports graphscope and loads the bundle, printed with
the same process's resident set before the load.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _big import big_bundle_graph

import graphscope

# VmHWM (peak resident set) of the child itself; ru_maxrss would include the parent's peak,
# which a child inherits across fork and exec on Linux.
_MEASURE = """
import sys, graphscope
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
before = hwm()
G = graphscope.load(sys.argv[1])
print(before, hwm(), G.number_of_nodes())
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    G = big_bundle_graph(args.nodes)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.json.gz"
        saves, loads = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            graphscope.save(G, path)
            saves.append(time.perf_counter() - start)
        for _ in range(args.repeat):
            start = time.perf_counter()
            H = graphscope.load(path)
            loads.append(time.perf_counter() - start)
            assert H.number_of_nodes() == G.number_of_nodes()
            del H  # freeing the last graph is not part of the next load
        done = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, check=True
        )
        before, after, _ = (float(x) for x in done.stdout.split())
        print(
            f"input: {G.number_of_nodes()} nodes, {G.number_of_edges()} edges, "
            f"{path.stat().st_size / 1e6:.1f} MB .json.gz (real Llama decode graph repeated, "
            "synthetic timing values)"
        )
        print(
            f"graphscope.save: median {statistics.median(saves):.3f} s of {args.repeat} "
            "(target <= 2 s)"
        )
        print(
            f"graphscope.load: median {statistics.median(loads):.3f} s of {args.repeat} "
            "(target <= 2 s)"
        )
        print(
            f"peak memory of a load: {after:.0f} MB resident ({before:.0f} MB before the "
            "load; target <= 500 MB)"
        )


if __name__ == "__main__":
    main()
