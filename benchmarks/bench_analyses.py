"""Time every analysis and export on a 100,000-node bundle.

    python benchmarks/bench_analyses.py [--nodes 100000] [--repeat 3]

The graph is the real tiny-llama b1 bundle chained into a deeper model (benchmarks/_big.py).
Diffs run against a copy of it (two captures of one step), against a copy with every 100th
kernel's grid changed and 50 nodes cut out of the middle (what alignment has to work for),
and the update verdict against the changed copy. Graphs are loaded once, before timing.
Target (issue 5): every analysis <= 2 s on this machine. Medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import networkx as nx
from _big import big_decode_bundle

import graphscope
from graphscope.analysis.buckets import bucket_report
from graphscope.analysis.diff import diff
from graphscope.analysis.findings import findings
from graphscope.analysis.report import step_report
from graphscope.analysis.update import update_verdict
from graphscope.exports import chrome_trace, model_explorer_graph, node_link

BUCKETS = Path(__file__).resolve().parent.parent / "samples" / "bundles" / "tiny-llama.buckets.json"


def changed_copy(G: nx.DiGraph) -> nx.DiGraph:
    """G with every 100th kernel's grid changed and 50 nodes cut out of the middle."""
    H = copy.deepcopy(G)
    kernels = [k for k, d in H.nodes(data=True) if d["type"] == "KERNEL"]
    for key in kernels[::100]:
        H.nodes[key]["grid"] = [g * 2 for g in H.nodes[key]["grid"]]
    order = list(nx.topological_sort(H))
    middle = order[len(order) // 2 : len(order) // 2 + 50]
    before, after = next(iter(H.pred[middle[0]])), next(iter(H.succ[middle[-1]]))
    H.remove_nodes_from(middle)
    H.add_edge(before, after)
    return H


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = graphscope.save(big_decode_bundle(args.nodes), Path(tmp) / "big.json.gz")
        G = graphscope.load(path)
        again = graphscope.load(path)
    H = changed_copy(G)
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("step report (with findings)", lambda: step_report(G)),
        ("findings", lambda: findings(G)),
        ("diff, two captures of one step", lambda: diff(G, again)),
        ("diff, changed grids and 50 nodes cut", lambda: diff(G, H)),
        ("update verdict, changed copy", lambda: update_verdict(G, H)),
        ("bucket report (samples, 8 MiB budget)", lambda: bucket_report(BUCKETS, None, 8 << 20)),
        ("export perfetto", lambda: chrome_trace(G)),
        ("export model-explorer", lambda: model_explorer_graph(G)),
        ("export node-link", lambda: node_link(G)),
    ]
    try:
        from graphscope.app.render.report_html import report_html

        cases.append(("export html (collapsed groups)", lambda: report_html(G, "big")))
    except ImportError:
        pass
    print(f"{G.number_of_nodes()} nodes, {G.number_of_edges()} edges; medians of {args.repeat}")
    for name, run in cases:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        print(f"  {name:<40} {statistics.median(times):6.2f} s", flush=True)


if __name__ == "__main__":
    main()
