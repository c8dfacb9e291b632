"""On the GPU machine: introspection cost per node on a >= 10,000-node graph, and tracing overhead.

    python benchmarks/bench_capture.py [--nodes 10000] [--replays 100] [--models ...] [--json F]

Targets (issue 3): introspection <= 20 us per node; per-node tracing overhead <= 10% of replay
time. Measured on a real PyTorch capture of ``--nodes`` small elementwise kernels (the worst
case for tracing: each kernel runs about a microsecond) and on the built-in decode steps.
"""

from __future__ import annotations

import argparse
import json
import tempfile

from graphscope.capture import session
from graphscope.capture.models import Step


def many_kernels(nodes: int) -> Step:
    import torch

    x = torch.zeros(1024, device="cuda")

    def run() -> None:
        for _ in range(nodes):
            x.add_(1.0)

    return Step(run=run, inputs={"x": x}, description=f"{nodes} in-place adds")


def _row(label: str, G: object) -> dict[str, float]:
    t = G.graph["timing"]  # type: ignore[attr-defined]
    nodes = G.number_of_nodes()  # type: ignore[attr-defined]
    extra = t["replay_wall_traced_us"] - t["replay_wall_us"]
    row = {
        "graph": label,
        "nodes": nodes,
        "introspect_us_per_node": t["introspect_us_per_node"],
        "replay_us": t["replay_wall_us"],
        "replay_traced_us": t["replay_wall_traced_us"],
        "tracing_overhead_pct": t["tracing_overhead_pct"],
        "tracing_us_per_node": extra / nodes,
    }
    print(
        f"{label}: {nodes} nodes; introspection {row['introspect_us_per_node']:.1f} us per "
        f"node (target <= 20); replay {row['replay_us']:.0f} us untraced, "
        f"{row['replay_traced_us']:.0f} us traced: overhead {row['tracing_overhead_pct']:.1f}% "
        f"(target <= 10), {row['tracing_us_per_node']:.2f} us per node",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--replays", type=int, default=100)
    parser.add_argument("--models", nargs="*", default=["tiny-gpt", "tiny-llama"])
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    import graphscope

    def adds(batch: int) -> Step:
        return many_kernels(args.nodes)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        bundle = session.capture_to_bundle(adds, 1, tmp, replays=args.replays, progress=print)
        rows.append(_row(f"{args.nodes} in-place adds", graphscope.load(bundle)))
        for model in args.models:
            bundle = session.capture_to_bundle(model, 1, tmp, progress=print)
            rows.append(_row(f"{model} b1 decode step", graphscope.load(bundle)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
