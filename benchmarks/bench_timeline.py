"""The timeline of a 100,000-node graph whose eager step made about 1.4 million CUDA calls.

    python benchmarks/bench_timeline.py [--nodes 100000]

The graph is the real tiny-llama b1 bundle chained deeper with its eager trace chained alongside
(benchmarks/_big.py). Times, once each, what the server does: read the rows (once per file and
grouping; kept), draw the whole step (merged), and redraw a 2 ms zoom; with the figures' sizes,
for the graph opened collapsed and expanded.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import plotly.io as pio
from _big import big_decode_bundle
from graphscope.app.render.timeline import build_timeline, timeline_rows

from graphscope.analysis.folding import collapsed, group_levels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    args = parser.parse_args()
    G = big_decode_bundle(args.nodes, eager=True)
    trace = G.graph["eager_trace"]
    print(
        f"{G.number_of_nodes()} nodes, {len(trace['api']['rows'])} CUDA calls, "
        f"{len(trace['gpu']['rows'])} GPU ops"
    )
    for label, shown in (("collapsed", collapsed(G, group_levels(G), set())), ("expanded", G)):
        start = time.perf_counter()
        rows = timeline_rows(G, shown)
        read = time.perf_counter() - start
        start = time.perf_counter()
        whole = pio.to_json(build_timeline(G, None, shown, rows=rows))
        draw = time.perf_counter() - start
        start = time.perf_counter()
        zoom = pio.to_json(build_timeline(G, None, shown, (1000.0, 3000.0), rows))
        redraw = time.perf_counter() - start
        print(
            f"  {label}: rows {read:.2f} s; whole step {draw:.2f} s, {len(whole) / 1e6:.1f} MB; "
            f"2 ms zoom {redraw:.2f} s, {len(zoom) / 1e6:.2f} MB"
        )


if __name__ == "__main__":
    main()
