"""On the GPU machine: introspection cost per node on a >= 10,000-node graph, and tracing overhead.

    python benchmarks/bench_capture.py [--nodes 10000] [--replays 100]

Targets (issue 3): introspection <= 20 us per node; per-node tracing overhead <= 10% of replay
time. The graph is a real PyTorch capture of a step of ``--nodes`` small elementwise kernels.
"""

from __future__ import annotations

import argparse
import sys
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--replays", type=int, default=100)
    args = parser.parse_args()
    module = sys.modules[__name__]
    module.factory = lambda batch: many_kernels(args.nodes)  # type: ignore[attr-defined]
    sys.modules["bench_capture_models"] = module
    with tempfile.TemporaryDirectory() as tmp:
        bundle = session.capture_to_bundle(
            "bench_capture_models:factory", 1, tmp, replays=args.replays, progress=print
        )
        import graphscope

        G = graphscope.load(bundle)
        t = G.graph["timing"]
        print(
            f"nodes {G.number_of_nodes()}: introspection {t['introspect_us_per_node']:.1f} us "
            f"per node (target <= 20); replay {t['replay_wall_us']:.0f} us untraced, "
            f"{t['replay_wall_traced_us']:.0f} us traced: overhead "
            f"{t['tracing_overhead_pct']:.1f}% (target <= 10)"
        )
        print(
            f"eager step {t['eager_step_us']:.0f} us, eager CPU issue {t['eager_cpu_us']:.0f} "
            f"us, graph CPU launch {t['cpu_launch_us']:.0f} us"
        )


if __name__ == "__main__":
    main()
