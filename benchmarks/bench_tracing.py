"""On the GPU machine: the tracing overhead under each CUPTI setting that could lower it.

    python benchmarks/bench_tracing.py [--nodes 10000] [--repeats 3] [--json F]

Issue 3's target is a per-node tracing overhead <= 10% of replay time. CUPTI's cost per traced
kernel is what is left (docs/CAPTURE.md); this script measures, each in a fresh process (CUPTI
reads most attributes once, before its first trace), the overhead that ``graphscope capture``
records under the settings CUPTI offers:

- ``default``: what capture/trace.py sets now;
- ``hw-trace``: ``cuptiActivityEnableHWTrace`` (kernel timestamps from the hardware event
  system, where the GPU has one);
- ``buffer-128mb``: a device record buffer four times larger;
- ``preallocate``: device buffers and profiling semaphores allocated before the first replay,
  and a semaphore pool sized for every traced kernel of a timed run;
- ``preallocate-buffers``: only the device buffers allocated up front (the one of those
  attributes the H200 accepted);
- ``serial-kernel``: replays traced with the ``KERNEL`` activity (kernels serialised) instead of
  ``CONCURRENT_KERNEL``; a decode graph captured on one stream is serial anyway. Its overhead
  is low (1% on tiny-llama b1), but on the H200 its records are no timings: kernels with zero
  durations, no record for memcpy nodes, GPU spans of a raw timestamp (docs/CAPTURE.md).

Each variant captures a step of ``--nodes`` in-place adds (about 1 us each, the worst case) and
the tiny-llama b1 decode step, ``--repeats`` times; the overhead is the medians of those.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

VARIANTS = (
    "default",
    "hw-trace",
    "buffer-128mb",
    "preallocate",
    "preallocate-buffers",
    "serial-kernel",
)


def _apply(variant: str) -> None:
    """Install ``variant``'s settings, to be made just before the first trace starts."""
    from graphscope.capture import trace
    from graphscope.capture._cuda import cupti

    api = cupti()
    attr = api.ActivityAttribute
    if variant == "buffer-128mb":
        trace._DEVICE_BUFFER_BYTES = 128 << 20
        return
    if variant == "default":
        return
    if variant == "serial-kernel":
        # Replays are traced with ActivityTrace's default kinds; the eager trace keeps its own.
        serial = tuple("KERNEL" if k == "CONCURRENT_KERNEL" else k for k in trace.GPU_KINDS)
        trace.ActivityTrace.__init__.__defaults__ = (serial,)
        return
    enter = trace.ActivityTrace.__enter__
    done = False

    def first_enter(self: Any) -> Any:
        nonlocal done
        if not done:
            done = True
            if variant == "hw-trace":
                api.activity_enable_hw_trace(1)
            elif variant == "preallocate":
                trace._set_size_attribute(attr.ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, 4)
                trace._set_size_attribute(attr.ATTR_PROFILING_SEMAPHORE_POOL_SIZE, 1 << 18)
                trace._set_size_attribute(attr.ATTR_PROFILING_SEMAPHORE_PRE_ALLOCATE_VALUE, 4)
            elif variant == "preallocate-buffers":
                trace._set_size_attribute(attr.ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, 4)
        return enter(self)

    trace.ActivityTrace.__enter__ = first_enter  # type: ignore[method-assign]


def _child(variant: str, nodes: int, repeats: int) -> dict[str, Any]:
    """One variant in this process: overheads per graph, or the error CUPTI gave."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_capture import many_kernels
    from graphscope.capture import session

    import graphscope

    try:
        _apply(variant)
        graphs: dict[str, list[dict[str, float]]] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(repeats):
                for label, spec in (
                    (f"{nodes} adds", lambda b: many_kernels(nodes)),
                    (
                        "tiny-llama b1",
                        "tiny-llama",
                    ),
                ):
                    G = graphscope.load(session.capture_to_bundle(spec, 1, tmp))
                    t = G.graph["timing"]
                    graphs.setdefault(label, []).append(
                        {
                            "overhead_pct": t["tracing_overhead_pct"],
                            "replay_us": t["replay_wall_us"],
                            "traced_us": t["replay_wall_traced_us"],
                            "timed_nodes": t["timed_nodes"],
                        }
                    )
    except Exception as exc:  # a setting the GPU refuses is a result, not a crash
        return {"variant": variant, "error": f"{type(exc).__name__}: {exc}"}
    summary = {
        label: {
            "overhead_pct": statistics.median(r["overhead_pct"] for r in runs),
            "all_pct": [round(r["overhead_pct"], 2) for r in runs],
            "replay_us": statistics.median(r["replay_us"] for r in runs),
            "traced_us": statistics.median(r["traced_us"] for r in runs),
            "timed_nodes": runs[0]["timed_nodes"],
        }
        for label, runs in graphs.items()
    }
    return {"variant": variant, "graphs": summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.nodes, args.repeats)))
        return
    rows = []
    for variant in args.variants:
        cmd = [sys.executable, __file__, "--child", variant, "--nodes", str(args.nodes)]
        cmd += ["--repeats", str(args.repeats)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        lines = done.stdout.strip().splitlines()
        try:
            row = json.loads(lines[-1])
        except (IndexError, json.JSONDecodeError):
            row = {"variant": variant, "error": (done.stderr or done.stdout)[-2000:]}
        rows.append(row)
        if "error" in row:
            print(f"{variant}: failed: {row['error']}", flush=True)
            continue
        for label, g in row["graphs"].items():
            print(
                f"{variant}: {label}: overhead {g['overhead_pct']:.1f}% (runs {g['all_pct']}); "
                f"replay {g['replay_us']:.0f} us untraced, {g['traced_us']:.0f} us traced; "
                f"{g['timed_nodes']} nodes timed",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
