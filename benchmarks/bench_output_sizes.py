"""What every writer writes of each sample, against the size ``graphscope.sizes`` estimates
before it builds it, and what the estimate costs: the measurements behind ``sizes.LIMIT``.

    python benchmarks/bench_output_sizes.py [--nodes 100000]

For each graph file in samples/ and each writer (DOT, bundle JSON, the node-link, Perfetto
and Model Explorer exports, the HTML report), the bytes written and the estimate; then the
largest output, and the estimate's ratio to the output (above 1: it errs high). With
``--nodes`` it also times the estimate against the writer on the benchmarks' large graph.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import networkx as nx

import graphscope
from graphscope import dotwrite, exports, sizes
from graphscope.bundle import encode, to_document
from graphscope.errors import GraphscopeError

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _json(data: Any) -> int:
    return len(json.dumps(data, separators=(",", ":"), default=str).encode())


Writer = tuple[Callable[[nx.DiGraph], Any], Callable[[Any], int], Callable[[Any], int]]


def writers() -> dict[str, Writer]:
    """Writer -> (what it builds first from G, the bytes it writes of that, the estimate)."""

    def measured(fill: Callable[[sizes.Estimate], Any], quoted: bool = False) -> int:
        return sizes.measure("-", fill, quoted=quoted).total

    def same(G: nx.DiGraph) -> nx.DiGraph:
        return G

    out: dict[str, Writer] = {
        "dot": (
            same,
            lambda G: len(dotwrite.dumps_dot(G).encode()),
            lambda G: measured(lambda e: dotwrite.measure(G, e), quoted=True),
        ),
        "bundle": (
            to_document,
            lambda doc: len(encode(doc).encode()),
            lambda doc: measured(lambda e: e.add(doc)),
        ),
    }
    for name, (make, _) in exports.FORMATS.items():
        out[name] = (make, _json, lambda doc: measured(lambda e: e.add(doc)))
    # Model Explorer is measured on the graph, before it is built (the CLI does so).
    out["model-explorer"] = (
        same,
        lambda G: _json(exports.model_explorer_graph(G)),
        lambda G: measured(lambda e: exports.model_explorer.measure(G, e)),
    )
    try:
        from graphscope.app.render.report_html import report_html
    except ImportError:
        return out
    out["html"] = (
        same,
        lambda G: len(report_html(G, "sample").encode()),
        lambda G: measured(lambda e: exports.measure_html(G, e)),
    )
    return out


def samples() -> list[Path]:
    found = sorted(SAMPLES.rglob("*.dot")) + sorted(SAMPLES.rglob("*.json.gz"))
    return [p for p in found if "traces" not in p.parts]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=0, help="also time a graph this large")
    args = parser.parse_args()
    every = writers()
    largest: dict[str, tuple[int, str]] = {}
    ratios: dict[str, list[float]] = {name: [] for name in every}
    for path in samples():
        try:
            G = graphscope.load(path)
        except GraphscopeError:
            continue
        for name, (prepare, write, estimate) in every.items():
            made = prepare(G)
            real, guess = write(made), estimate(made)
            if real > largest.get(name, (0, ""))[0]:
                largest[name] = (real, str(path.relative_to(SAMPLES)))
            if real > 4096:  # the fixed parts of tiny outputs say nothing of the estimate
                ratios[name].append(guess / real)
    print(f"{'writer':16} {'largest output':>16}  {'of':40} {'estimate / output':>20}")
    for name in every:
        real, where = largest[name]
        r = ratios[name]
        spread = f"{min(r):.2f} to {max(r):.2f}" if r else "-"
        print(f"{name:16} {real:>16,}  {where:40} {spread:>20}")
    print(f"limit: {sizes.LIMIT:,} bytes ({sizes.human(sizes.LIMIT)})")
    if args.nodes:
        from _big import big_bundle_graph

        G = big_bundle_graph(args.nodes)
        print(f"\n{G.number_of_nodes():,} nodes: build, write, estimate (s); output, estimate")
        for name, (prepare, write, estimate) in every.items():
            started = time.perf_counter()
            made = prepare(G)
            built = time.perf_counter() - started
            real = write(made)
            wrote = time.perf_counter() - started - built
            started = time.perf_counter()
            guess = estimate(made)
            guessed = time.perf_counter() - started
            print(f"{name:16} {built:6.2f} {wrote:6.2f} {guessed:6.2f}  {real:>14,} {guess:>14,}")


if __name__ == "__main__":
    main()
