"""The report, compare, buckets and catalog pages: graphscope's analyses as tables, names as
text."""

from __future__ import annotations

from typing import Any

import networkx as nx
from dash import html

from graphscope.analysis.buckets import BucketReport
from graphscope.analysis.diff import NodeChange, diff
from graphscope.analysis.lifecycle import history, process_report
from graphscope.analysis.report import step_report
from graphscope.text import mib, step_rows, us

from .sources import RecordedRun


def _table(head: list[str], rows: list[list[Any]], table_id: str | None = None) -> html.Table:
    """A plain table; every cell is text (Dash escapes it), never markup."""
    children = [html.Tr([html.Th(h) for h in head])] + [
        html.Tr([html.Td("" if v is None else str(v)) for v in row]) for row in rows
    ]
    if table_id:
        return html.Table(children, className="data", id=table_id)
    return html.Table(children, className="data")


def findings_list(found: list[dict[str, Any]]) -> html.Div:
    if not found:
        return html.Div(html.P("No findings.", className="muted"), id="findings")
    items = []
    for f in found:
        cost = f" ({us(f['cost_us'])} of replay)" if f.get("cost_us") else ""
        items.append(
            html.Div(
                [
                    html.B(f"{f['code']}: "),
                    html.Span(f["title"] + cost),
                    html.Div(f"Why: {f['why']}", className="muted"),
                    html.Div(f"Fix: {f['fix']}"),
                    html.Ul([html.Li(line) for line in f["details"][:12]]),
                ],
                className=f"finding {f['severity']}",
            )
        )
    return html.Div([html.H3(f"Findings ({len(found)})"), *items], id="findings")


def report_page(G: nx.DiGraph) -> list[Any]:
    """The step report of one graph."""
    r = step_report(G)
    out: list[Any] = []
    if r.eager_step_us is not None or r.replay_us is not None:
        rows = step_rows(r)
        out += [
            html.H3("Eager step against graph replay"),
            _table(["", "eager", "graph"], rows, "step-table"),
        ]
        if r.speedup is not None:
            saved = r.cpu_overhead_reduction_pct
            out.append(
                html.P(
                    f"Speedup {r.speedup:.1f}x"
                    + (f"; CPU launch overhead down {saved:.0f}%" if saved is not None else ""),
                    id="speedup",
                )
            )
    else:
        out.append(html.P("This file has no timing (a DOT dump carries none).", className="muted"))
    if r.critical_path_us is not None:
        text = (
            f"Critical path: {len(r.critical_path)} nodes, {us(r.critical_path_us)} of "
            f"{us(r.node_time_us)} node time"
        )
        if r.parallelism is not None:
            text += f" (parallelism {r.parallelism:.2f})"
        if r.span_over_critical is not None:
            text += f"; the replay span is {r.span_over_critical:.2f}x the critical path"
        out.append(html.P(text + ".", id="critical-path"))
    if r.top_nodes:
        rows = [
            [us(n["median_us"]), us(n["eager_us"]), n["node"], n["name"], n.get("module") or ""]
            for n in r.top_nodes
        ]
        out += [
            html.H3("Slowest nodes"),
            _table(["replay", "eager", "node", "name", "module"], rows, "top-nodes"),
        ]
    if r.top_modules:
        rows = [
            [us(m["replay_us"]), f"{m['share_pct']:.1f}%", m["nodes"], m["module"]]
            for m in r.top_modules
        ]
        out += [html.H3("Module groups"), _table(["replay", "share", "nodes", "module"], rows)]
    out.append(findings_list(r.findings))
    return out


def _changes(c: NodeChange) -> str:
    """A changed row's fields as text, the kernel's names in A and B first."""
    kernel = [f"kernel: {c.kernels[0]} -> {c.kernels[1]}"] if c.kernels else []
    return "; ".join(kernel + [f"{k}: {a} -> {b}" for k, (a, b) in c.fields.items() if k != "name"])


def compare_page(A: nx.DiGraph, B: nx.DiGraph, top: int = 30) -> list[Any]:
    """What changed from A to B, and the cudaGraphExecUpdate verdict."""
    d = diff(A, B)
    out: list[Any] = [
        html.P(
            f"{d.matched} nodes matched, {len(d.added)} added in B, {len(d.removed)} removed "
            f"from A; {len(d.edges_added)} edges added, {len(d.edges_removed)} removed.",
            id="compare-counts",
        )
    ]
    v = d.update
    if v is not None:
        if v.ok:
            verdict = (
                "cudaGraphExecUpdate: B can update an executable graph of A in place "
                f"({v.paired} node pairs checked)."
            )
            out.append(html.P(verdict, id="update-verdict", className="ok"))
        else:
            out.append(
                html.P(
                    f"cudaGraphExecUpdate: B cannot update an executable graph of A ({v.result}); "
                    "B must be instantiated anew.",
                    id="update-verdict",
                    className="error",
                )
            )
            rows = [[o.result, o.node or "graph", o.pair, o.why] for o in v.obstacles[:top]]
            out.append(_table(["result", "node in B", "pair in A", "why"], rows))
    if d.replay_a_us is not None and d.replay_b_us is not None:
        out.append(html.P(f"Replay: {us(d.replay_a_us)} -> {us(d.replay_b_us)}."))
    config = [c for c in d.changed if c.fields]
    if config:
        rows = [[c.a, c.b, c.name, _changes(c)] for c in config[:top]]
        out += [
            html.H3(f"Changed parameters ({len(config)} nodes)"),
            _table(["A", "B", "name", "what changed"], rows),
        ]
    args_only = sum(1 for c in d.changed if not c.fields)
    if args_only:
        out.append(html.P(f"{args_only} nodes differ only in argument values.", className="muted"))
    timed = [c for c in d.timing if c.delta_us is not None][:top]
    if timed:
        rows = [
            [f"{c.delta_us:+.2f} us", us(c.median_a_us), us(c.median_b_us), c.b, c.name]
            for c in timed
        ]
        out += [
            html.H3("Largest timing changes"),
            _table(["change", "A", "B", "node in B", "name"], rows),
        ]
    for label, keys in (("Added in B", d.added), ("Removed from A", d.removed)):
        if keys:
            out.append(
                html.P(f"{label}: " + ", ".join(keys[:40]) + (" ..." if len(keys) > 40 else ""))
            )
    return out


def buckets_page(r: BucketReport) -> list[Any]:
    """Per bucket time and memory, padding waste, the best set within a budget."""
    rows = [
        [
            b.batch_size,
            us(b.replay_us),
            us(b.per_sequence_us),
            b.nodes,
            mib(b.graph_pool_bytes),
            us(b.eager_step_us),
        ]
        for b in r.buckets
    ]
    c = r.captured
    out: list[Any] = [
        html.P(f"{r.model or '?'}: {r.padding_rule}."),
        _table(
            ["batch", "replay", "per sequence", "nodes", "graph pool", "eager step"],
            rows,
            "bucket-table",
        ),
        html.P(
            f"With every bucket: mean step {us(c.mean_step_us)}, padding {c.padding_pct:.1f}% of "
            f"real sequences, graph memory {mib(c.pool_bytes)}.",
            id="bucket-summary",
        ),
    ]
    if r.budget_bytes is not None:
        if r.best is None:
            out.append(
                html.P(f"No set of buckets fits in {mib(r.budget_bytes)}.", id="bucket-best")
            )
        else:
            b = r.best
            out.append(
                html.P(
                    f"Best within {mib(r.budget_bytes)}: buckets {' '.join(map(str, b.sizes))} "
                    f"({mib(b.pool_bytes)}): mean step {us(b.mean_step_us)}, "
                    f"padding {b.padding_pct:.1f}%"
                    + (f", {b.eager_share_pct:.0f}% of batches eager" if b.eager_share_pct else "")
                    + ".",
                    id="bucket-best",
                )
            )
    for u in r.updates:
        if "error" in u:
            continue
        said = "accepted" if u.get("ok") else f"refused ({u.get('result')})"
        out.append(
            html.P(
                f"b{u.get('from')} -> b{u.get('to')}: the driver {said} "
                "cudaGraphExecUpdate at capture."
            )
        )
    out += [html.P(f"Note: {note}", className="muted") for note in r.notes]
    return out


def catalog_page(runs: list[RecordedRun]) -> list[Any]:
    """Every graph of every recording: who captured it where, for which batch, how often it
    ran, its share of GPU time, its memory and its history; each id opens the graph."""
    if not runs:
        return [
            html.P(
                "No recording here: graphscope record --out DIR -- python your_program.py, "
                "then graphscope serve DIR.",
                className="muted",
            )
        ]
    out: list[Any] = []
    head = [
        "graph",
        "captured by",
        "site",
        "batch",
        "nodes",
        "replays",
        "replay (GPU)",
        "share",
        "pool",
        "history",
    ]
    for run in runs:
        out.append(html.H3(run.label))
        if run.error is not None:
            out.append(html.Div(run.error, className="error"))
            continue
        for rec in run.recordings:
            r = process_report(rec)
            share = (
                f"; {r.eager_share_pct:.0f}% of sampled kernel time outside graphs"
                if r.eager_share_pct is not None
                else ""
            )
            out.append(
                html.P(
                    f"{r.label}: {r.status}, {r.graphs} graphs, {r.replays:,} replays, "
                    f"pools {mib(r.pool_bytes)}{share}",
                    className="process",
                )
            )
            rows = []
            for row in r.rows:
                source = run.sources.get((rec.name, row["id"]))
                link: Any = (
                    html.Button(
                        row["id"],
                        id={"type": "open-graph", "source": source},
                        className="link",
                        title="open this graph",
                    )
                    if source is not None
                    else row["id"]
                )
                site = row["site"] or "-"
                if row["program_site"] and row["program_site"] != row["site"]:
                    site += f" (from {row['program_site']})"
                cells = [
                    row["capturer"] or "-",
                    site,
                    row["batch"],
                    row["nodes"],
                    f"{row['replays']:,}",
                    us(row["replay_us"]),
                    f"{row['gpu_share_pct']:.1f}%" if row["gpu_share_pct"] is not None else "-",
                    mib(row["pool_bytes"]),
                    "; ".join(history(row)),
                ]
                rows.append(
                    html.Tr([html.Td(link)] + [html.Td("" if v is None else str(v)) for v in cells])
                )
            if rows:
                out.append(
                    html.Table(
                        [html.Tr([html.Th(h) for h in head]), *rows],
                        className="data catalog",
                    )
                )
            for note in r.notes:
                out.append(
                    html.Div(
                        [
                            html.B(f"{note.code}: "),
                            html.Span(note.title),
                            html.Ul([html.Li(line) for line in note.details[:8]]),
                        ],
                        className=f"finding {note.severity}",
                    )
                )
    return out
