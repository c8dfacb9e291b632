"""The ``graphscope`` command: ``inspect``, ``report``, ``diff``, ``buckets``, ``export``,
``convert``, ``serve`` and ``capture``.

Errors print as one line, ``graphscope: error: FILE[:LINE]: what is wrong``; the exit status is
2 for unreadable or invalid input, 1 for any other graphscope error, 0 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from . import __version__, exports, text
from .analysis.buckets import DEFAULT_BUCKETS, bucket_report, read_distribution
from .analysis.diff import diff
from .analysis.findings import findings
from .analysis.report import step_report
from .analysis.summary import summarize
from .analysis.torch_trace import with_torch_trace
from .errors import GraphscopeError, InputError
from .io import detect_format, load, save, write_atomic


def _dims(d: Any) -> str:
    return "x".join(str(x) for x in d) if isinstance(d, list) else "?"


def _us(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.1f} us"


def _num(mapping: Any, key: str) -> float | None:
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def _render_timing(s: dict[str, Any], w: Any) -> None:
    """Eager step against graph replay, parity and attribution, where the bundle has them."""
    timing = s.get("timing") or {}
    eager, replay = _num(timing, "eager_step_us"), _num(timing, "replay_wall_us")
    if eager is not None:
        issue = _num(timing, "eager_cpu_us")
        w(f"  eager step: {_us(eager)}" + (f" (CPU issues it in {_us(issue)})" if issue else ""))
        traced = s.get("eager") or {}
        idle = _num(traced, "gpu_idle_pct")
        if idle is not None:
            w(f"; traced, the GPU idles {idle:.0f}% of its span")
        w("\n")
    if replay is not None:
        launch = _num(timing, "cpu_launch_us")
        w(f"  graph replay: {_us(replay)}")
        if launch is not None:
            w(f" (CPU launch {_us(launch)})")
        if eager:
            w(f"; {eager / replay:.1f}x faster than eager")
        w("\n")
    elif _num(timing, "replay_us") is not None:
        w(f"  graph replay: {_us(_num(timing, 'replay_us'))}\n")
    parity = s.get("parity")
    if parity:
        if parity["ok"]:
            w(f"  parity: eager and graph run the same {parity['matched']} GPU ops\n")
        else:
            diffs = parity["differences"]
            w(f"  parity: {len(diffs)} differences between the eager step and the graph\n")
            for line in diffs[:10]:
                w(f"    {line}\n")
            if len(diffs) > 10:
                w(f"    ... {len(diffs) - 10} more (--json for all)\n")
    if s.get("attributed_nodes"):
        w(
            f"  attribution: {s['attributed_nodes']} of {s['nodes']} nodes labelled, "
            f"{s['attributed_with_module']} inside a module, {s['attributed_with_op']} with an "
            "aten op\n"
        )


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
    _render_timing(s, w)
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


def _dump_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


def cmd_inspect(args: argparse.Namespace) -> int:
    status = 0
    results = []
    for path in args.files:
        try:
            G = load(path)
            summary = {
                "format": detect_format(path),
                **summarize(G),
                "findings": [f.as_dict() for f in findings(G)],
            }
        except InputError as exc:
            _error(str(exc))
            status = 2
            continue
        if args.json:
            results.append({"file": path, **summary})
        else:
            render_summary(path, summary, sys.stdout, top=args.top)
            text.render_findings(summary["findings"], sys.stdout.write)
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

    # A crash inside the driver or CUPTI kills the process without a Python error: print
    # where it happened, for the bug report.
    with contextlib.suppress(io.UnsupportedOperation, ValueError):  # stderr is no file
        faulthandler.enable()
    command = "graphscope " + " ".join(sys.argv[1:]) if sys.argv[1:] else None
    bundles = session.capture_buckets(
        args.model,
        args.batch_sizes,
        args.out,
        replays=args.replays,
        warmup=args.warmup,
        progress=lambda msg: print(msg, flush=True),
        command=command,
    )
    print(f"{len(bundles)} bundles in {args.out}, listed in its .buckets.json")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from .app.server import create_app  # needs dash and plotly

    missing = [f for f in args.files if not Path(f).is_file()]
    if missing:
        raise InputError(missing[0], "no such file")
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"graphscope: warning: serving on {args.host}: anyone who can reach this machine "
            "can read the graphs it shows",
            file=sys.stderr,
        )
    if args.files:
        print(f"graphscope: reading {args.files[0]}", flush=True)
    app = create_app(args.files)
    shown = "the bundled samples" if not args.files else f"{len(args.files)} file(s)"
    print(f"graphscope: showing {shown} at http://{args.host}:{args.port}/ (Ctrl-C stops it)")
    app.run(host=args.host, port=args.port, debug=False)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    report = step_report(load(args.file), top=args.top)
    if args.json:
        _dump_json({"file": args.file, **report.as_dict()})
    else:
        text.render_report(args.file, report, sys.stdout.write)
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    result = diff(load(args.a), load(args.b))
    if args.json:
        _dump_json({"a": args.a, "b": args.b, **result.as_dict()})
    else:
        text.render_diff(args.a, args.b, result, sys.stdout.write, top=args.top)
    return 0


def cmd_buckets(args: argparse.Namespace) -> int:
    distribution = read_distribution(args.histogram) if args.histogram else None
    budget = int(args.budget_mib * 2**20) if args.budget_mib is not None else None
    report = bucket_report(args.path, distribution, budget)
    if args.json:
        _dump_json({"path": args.path, **report.as_dict()})
    else:
        text.render_buckets(args.path, report, sys.stdout.write)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    G = load(args.file)
    out = Path(args.output)
    if args.format == "html":
        try:
            from .app.report_html import report_html
        except ImportError as exc:
            raise GraphscopeError(
                f"the HTML report needs the dashboard's packages ({exc}): pip install graphscope"
            ) from None
        written = [write_atomic(out, report_html(G, Path(args.file).name))]
    else:
        make, _ = exports.FORMATS[args.format]
        written = [exports.write_json(make(G), out)]
        if args.format == "model-explorer":
            overlay = exports.model_explorer_node_data(G)
            if overlay:
                name = out.name.removesuffix(".gz").removesuffix(".json")
                written.append(exports.write_json(overlay, out.with_name(name + ".node-data.json")))
    for path in written:
        print(f"wrote {path}")
    return 0


def cmd_import_trace(args: argparse.Namespace) -> int:
    G = with_torch_trace(load(args.bundle), args.trace)
    parity = G.graph["parity"]
    print(
        f"joined {parity['matched']} of {parity['eager_ops']} GPU ops of the profiler trace to "
        f"the graph's {parity['graph_ops']}"
        + ("" if parity["ok"] else "; they differ: graphscope inspect shows how")
    )
    print(f"wrote {save(G, args.output)}")
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
    report = sub.add_parser(
        "report",
        help="eager step against graph replay: what the graph saved, where time goes",
        description="The step report of a bundle: eager and replay step time, CPU launch time, "
        "GPU busy and idle, speedup, the slowest nodes and module groups, the critical path "
        "against the replay span, and the findings.",
    )
    report.add_argument("file", metavar="FILE")
    report.add_argument("--json", action="store_true", help="print JSON for scripts")
    report.add_argument("--top", type=int, default=10, metavar="N", help="rows per table")
    report.set_defaults(run=cmd_report)
    compare = sub.add_parser(
        "diff",
        help="what changed between two graphs, and whether cudaGraphExecUpdate accepts it",
        description="Match the nodes of A and B by topology and kernel identity; list added, "
        "removed and changed nodes and timing deltas; predict whether cudaGraphExecUpdate "
        "would update an executable graph of A with B, with the reason for each node that "
        "prevents it.",
    )
    compare.add_argument("a", metavar="A")
    compare.add_argument("b", metavar="B")
    compare.add_argument("--json", action="store_true", help="print JSON for scripts")
    compare.add_argument("--top", type=int, default=15, metavar="N", help="rows per list")
    compare.set_defaults(run=cmd_diff)
    buckets = sub.add_parser(
        "buckets",
        help="which batch-size buckets are worth their memory",
        description="Per bucket of a <model>.buckets.json (or the folder holding it): replay "
        "time, time per sequence, node count and graph memory; the padding waste for a "
        "batch-size distribution; the fastest set of buckets within a memory budget.",
    )
    buckets.add_argument("path", metavar="BUCKETS", help="a .buckets.json or its folder")
    buckets.add_argument(
        "--histogram",
        metavar="FILE",
        help='batch sizes seen in traffic: "batch,count" lines or a JSON object '
        "(default: every size up to the largest bucket, equally likely)",
    )
    buckets.add_argument(
        "--budget-mib", type=float, metavar="MIB", help="graph memory budget for the best set"
    )
    buckets.add_argument("--json", action="store_true", help="print JSON for scripts")
    buckets.set_defaults(run=cmd_buckets)
    export = sub.add_parser(
        "export",
        help="write a graph for Perfetto, a browser, Model Explorer or networkx",
        description="perfetto: a Chrome trace JSON of the eager step and the graph replay "
        "(open it at ui.perfetto.dev); html: a standalone report in one file that works "
        "offline; model-explorer: Model Explorer graph JSON with namespaces from attribution, "
        "and a node-data overlay of replay times beside it (<name>.node-data.json); "
        "node-link: networkx node-link JSON (networkx.node_link_graph reads it back).",
    )
    export.add_argument("file", metavar="FILE")
    export.add_argument(
        "--format", required=True, choices=["perfetto", "html", "model-explorer", "node-link"]
    )
    export.add_argument("-o", "--output", required=True, metavar="OUT")
    export.set_defaults(run=cmd_export)
    imported = sub.add_parser(
        "import-trace",
        help="use a PyTorch profiler trace of the eager step as a bundle's eager trace",
        description="Join a torch.profiler Chrome trace (export_chrome_trace, .json or "
        ".json.gz) of one eager step to a bundle's nodes and write a bundle whose eager "
        "side (trace, summary, parity, per-node eager timing) comes from it.",
    )
    imported.add_argument("bundle", metavar="BUNDLE")
    imported.add_argument("trace", metavar="TRACE")
    imported.add_argument("-o", "--output", required=True, metavar="OUT")
    imported.set_defaults(run=cmd_import_trace)
    convert = sub.add_parser(
        "convert",
        help="convert between .dot, .json and .json.gz",
        description="Convert a graph file; the output format follows "
        "OUT's extension (.json, .json.gz, .dot).",
    )
    convert.add_argument("input", metavar="IN")
    convert.add_argument("output", metavar="OUT")
    convert.set_defaults(run=cmd_convert)
    serve = sub.add_parser(
        "serve",
        help="open graphs in the dashboard (a local web app)",
        description="Start the dashboard on the given graph files (.dot, .json, .json.gz), or "
        "on the bundled samples when none are given. More files can be dropped into the page.",
    )
    serve.add_argument("files", nargs="*", metavar="FILE")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8050, help="port (default 8050)")
    serve.set_defaults(run=cmd_serve)
    capture = sub.add_parser(
        "capture",
        help="capture a model's decode step on the GPU and write bundles",
        description="Capture a decode step into a CUDA graph per batch size, read every node "
        "through the driver, time every node in replay with CUPTI, and write "
        "<model>-b<batch>.json.gz with the verbose DOT dump beside it. Needs a CUDA GPU and "
        "pip install 'graphscope[capture]'.",
    )
    capture.add_argument(
        "--model",
        required=True,
        help="tiny-gpt, tiny-gpt-parallel (two streams), tiny-llama, hf:FOLDER (a Hugging "
        "Face causal LM saved with save_pretrained), or package.module:factory",
    )
    capture.add_argument(
        "--batch-sizes",
        type=int,
        nargs="+",
        default=list(DEFAULT_BUCKETS),
        metavar="N",
        help="one graph per batch size; a batch pads up to the next one "
        f"(default {' '.join(map(str, DEFAULT_BUCKETS))})",
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
