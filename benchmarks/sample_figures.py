"""What the graph saved, per sample bundle: eager step against graph replay, in our own numbers.

    python benchmarks/sample_figures.py [BUNDLE...]    # default: samples/bundles/*.json.gz

Reads bundles only (no GPU): every figure was measured on the GPU machine when the bundle was
captured. Prints a Markdown table: eager step (median wall time of 50 untraced steps), graph
replay (mean wall time of the untraced replays), the ratio, the CPU time to issue the eager step
against the CPU time of the replay's launch call, and the traced eager step's share of CPU
time in CUDA launch calls and of GPU time idle.
"""

from __future__ import annotations

import sys
from pathlib import Path

import graphscope

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "bundles"


def row(path: Path) -> str:
    G = graphscope.load(path)
    t = G.graph["timing"]
    eager = G.graph.get("eager_summary") or {}
    cut = (1 - t["cpu_launch_us"] / t["eager_cpu_us"]) * 100
    return (
        f"| {path.name.removesuffix('.json.gz')} ({G.number_of_nodes()} nodes) "
        f"| {t['eager_step_us']:.0f} us | {t['replay_wall_us']:.0f} us "
        f"| {t['eager_step_us'] / t['replay_wall_us']:.1f}x "
        f"| {t['eager_cpu_us']:.0f} us | {t['cpu_launch_us']:.0f} us | {cut:.0f}% "
        f"| {eager.get('cpu_launch_us', 0):.0f} us | {eager.get('gpu_idle_pct', 0):.0f}% "
        f"| {t['tracing_overhead_pct']:.1f}% |"
    )


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv] or sorted(SAMPLES.glob("*.json.gz"))
    print(
        "| bundle | eager step | graph replay | speedup | CPU to issue the eager step "
        "| CPU launch of the replay | CPU time saved | launch calls in the traced eager step "
        "| GPU idle in the traced eager step | tracing overhead |"
    )
    print("| --- " * 10 + "|")
    for path in paths:
        print(row(path))


if __name__ == "__main__":
    main(sys.argv[1:])
