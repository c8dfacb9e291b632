"""The ``graphscope`` command: ``inspect`` and ``convert``.

Errors print as one line, ``graphscope: error: FILE[:LINE]: what is wrong``; the exit status is
2 for unreadable or invalid input, 1 for any other graphscope error, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from . import __version__
from .analysis.summary import summarize
from .errors import GraphscopeError, InputError
from .io import detect_format, load, save


def _dims(d: Any) -> str:
    return "x".join(str(x) for x in d) if isinstance(d, list) else "?"


def _us(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.1f} us"


def render_summary(path: str, s: dict[str, Any], out: TextIO, top: int = 25) -> None:
    """Print an ``inspect`` summary for a person at a terminal."""
    kind = {"dot": "DOT", "bundle": "graphscope bundle"}.get(s.get("format", ""), "?")
    w = out.write
    w(f"{path}  ({kind})\n")
    w(
        f"  nodes {s['nodes']}   edges {s['edges']}   graphs {len(s['graphs'])}"
        f"   depth {s['depth']}   widest level {s['widest_level']}\n"
    )
    w("  types  " + "  ".join(f"{t} {n}" for t, n in s["types"].items()) + "\n")
    nested = [g for g in s["graphs"] if g["parent"] is not None]
    if nested:
        w(f"  nested graphs ({len(nested)}):\n")
        for g in nested:
            w(f"    graph_{g['graph_id']}  in {g['parent']}  {g['nodes']} nodes\n")
    if s["timed_nodes"]:
        w(
            f"  replay: {s['timed_nodes']} nodes timed, node times add up to "
            f"{_us(s['replay_node_time_us'])}\n"
        )
    timing = s.get("timing") or {}
    for label, key in (("eager step", "eager_step_us"), ("graph replay", "replay_us")):
        if isinstance(timing.get(key), (int, float)):
            w(f"  {label}: {_us(float(timing[key]))}\n")
    kernels = s["kernels"]
    if not kernels:
        return
    order = "replay time" if s["timed_nodes"] else "count"
    w(f"  kernels: {len(kernels)} distinct, by {order}\n")
    w(f"    {'count':>5}  {'replay':>9}  {'grid':>10} {'block':>10} {'smem':>6}  name\n")
    for k in kernels[:top]:
        configs = k["launch_configs"]
        first = configs[0] if configs else None
        grid = _dims(first["grid"]) if first else "-"
        block = _dims(first["block"]) if first else "-"
        smem = str(first["shared_mem"]) if first else "-"
        more = f"  (+{len(configs) - 1} configs)" if len(configs) > 1 else ""
        w(
            f"    {k['count']:>5}  {_us(k['replay_us']):>9}  {grid:>10} {block:>10} {smem:>6}"
            f"  {k['short_name']}{more}\n"
        )
    if len(kernels) > top:
        w(f"    ... {len(kernels) - top} more (--top N, or --json for all)\n")


def _error(message: str) -> None:
    sys.stderr.write(f"graphscope: error: {message}\n")


def cmd_inspect(args: argparse.Namespace) -> int:
    status = 0
    results = []
    for path in args.files:
        try:
            summary = {"format": detect_format(path), **summarize(load(path))}
        except InputError as exc:
            _error(str(exc))
            status = 2
            continue
        if args.json:
            results.append({"file": path, **summary})
        else:
            render_summary(path, summary, sys.stdout, top=args.top)
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        sys.stdout.write("\n")
    return status


def cmd_convert(args: argparse.Namespace) -> int:
    G = load(args.input)
    written = save(G, args.output)
    print(f"{args.input} -> {written} ({G.number_of_nodes()} nodes, {G.number_of_edges()} edges)")
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    from .capture import session  # needs torch, cuda-python and cupti-python

    command = "graphscope " + " ".join(sys.argv[1:]) if sys.argv[1:] else None
    for batch in args.batch_sizes:
        session.capture_to_bundle(
            args.model,
            batch,
            args.out,
            replays=args.replays,
            warmup=args.warmup,
            progress=lambda msg: print(msg, flush=True),
            command=command,
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphscope",
        description="See inside CUDA graphs: read cudaGraphDebugDotPrint dumps and graphscope "
        "bundles.",
    )
    parser.add_argument("--version", action="version", version=f"graphscope {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    inspect = sub.add_parser(
        "inspect",
        help="summarise graph files (.dot, .json, .json.gz)",
        description="Summarise CUDA graph files: nodes by type, shape, "
        "kernels with their launch configurations, and times "
        "where the file has them.",
    )
    inspect.add_argument("files", nargs="+", metavar="FILE")
    inspect.add_argument("--json", action="store_true", help="print JSON for scripts")
    inspect.add_argument(
        "--top", type=int, default=25, metavar="N", help="kernel names to list (default 25)"
    )
    inspect.set_defaults(run=cmd_inspect)
    convert = sub.add_parser(
        "convert",
        help="convert between .dot, .json and .json.gz",
        description="Convert a graph file; the output format follows "
        "OUT's extension (.json, .json.gz, .dot).",
    )
    convert.add_argument("input", metavar="IN")
    convert.add_argument("output", metavar="OUT")
    convert.set_defaults(run=cmd_convert)
    capture = sub.add_parser(
        "capture",
        help="capture a model's decode step on the GPU and write bundles",
        description="Capture a decode step into a CUDA graph per batch size, read every node "
        "through the driver, time every node in replay with CUPTI, and write "
        "<model>-b<batch>.json.gz with the verbose DOT dump beside it. Needs a CUDA GPU and "
        "pip install 'graphscope[capture]'.",
    )
    capture.add_argument(
        "--model", required=True, help="tiny-gpt, tiny-llama, or package.module:factory"
    )
    capture.add_argument(
        "--batch-sizes",
        type=int,
        nargs="+",
        default=[1, 2, 4, 8],
        metavar="N",
        help="one graph per batch size (default 1 2 4 8)",
    )
    capture.add_argument("--out", required=True, help="folder for the bundles")
    capture.add_argument(
        "--replays",
        type=int,
        default=200,
        help="timed replays, with and without tracing (default 200)",
    )
    capture.add_argument("--warmup", type=int, default=3, help="eager warm-up steps (default 3)")
    capture.set_defaults(run=cmd_capture)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except InputError as exc:
        _error(str(exc))
        return 2
    except GraphscopeError as exc:
        _error(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into head and closed early
        return 0


if __name__ == "__main__":
    sys.exit(main())
