"""The report, compare, buckets and catalog pages: graphscope's analyses as tables, names as
text.

A node key shown on a page (``graph_1_node_40``, alone or inside a line of text) is a link to
``?file=<source id>&node=<key>``: the same page, reloaded to that node in the DAG. The page
functions take the source ids to link to; without one a key stays plain text.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

import networkx as nx
import plotly.graph_objects as go
from dash import dcc, html
from dash.development.base_component import Component

from graphscope.analysis import coverage
from graphscope.analysis.buckets import BucketReport
from graphscope.analysis.check import DEFAULT_RULES, check
from graphscope.analysis.diff import GraphDiff, NodeChange, diff
from graphscope.analysis.lifecycle import history, process_report
from graphscope.analysis.report import step_report
from graphscope.analysis.update import HAZARD_NOTE, changes_text, hazard_groups
from graphscope.recording import Recording, graph_label, process_label
from graphscope.text import mib, render_ledger, step_rows, us

from ..files.sources import RecordedRun

#: A node key inside a line of text, as graphscope.model writes keys.
_KEY_IN_TEXT = re.compile(r"\bgraph_\d+_node_\d+\b")


def address(source_id: str, **query: str) -> str:
    """A same-page address that opens ``source_id`` as ``query`` asks (``node``, ``compare``);
    following it reloads the page, which restores that state (``callbacks.url_state``)."""
    return "?" + urlencode({"file": source_id, **query})


def node_link(key: str, source_id: str | None) -> Any:
    """``key`` as a link that opens it in the DAG of ``source_id``; plain text without one."""
    if source_id is None:
        return key
    return html.A(key, href=address(source_id, node=key), className="node-link")


def linked(text: str, source_id: str | None) -> Any:
    """``text`` with each node key in it a link (``node_link``); the text itself when none."""
    if source_id is None or not _KEY_IN_TEXT.search(text):
        return text
    out: list[Any] = []
    at = 0
    for match in _KEY_IN_TEXT.finditer(text):
        if match.start() > at:
            out.append(text[at : match.start()])
        out.append(node_link(match.group(), source_id))
        at = match.end()
    if at < len(text):
        out.append(text[at:])
    return out


def _keys(keys: list[str], source_id: str | None, limit: int = 40) -> list[Any]:
    """The first ``limit`` keys as links, comma-separated, `` ...`` when there are more."""
    out: list[Any] = []
    for i, key in enumerate(keys[:limit]):
        out += [", "] if i else []
        out.append(node_link(key, source_id))
    return out + ([" ..."] if len(keys) > limit else [])


def _cell(value: Any) -> Any:
    """A table cell's children: a component (a link) as it is, anything else as text."""
    if isinstance(value, (Component, list)):
        return value
    return "" if value is None else str(value)


def _table(head: list[str], rows: list[list[Any]], table_id: str | None = None) -> html.Table:
    """A plain table; every cell is text (Dash escapes it) or a link, never markup."""
    children = [html.Tr([html.Th(h) for h in head])] + [
        html.Tr([html.Td(_cell(v)) for v in row]) for row in rows
    ]
    if table_id:
        return html.Table(children, className="data", id=table_id)
    return html.Table(children, className="data")


def findings_list(found: list[dict[str, Any]], source_id: str | None = None) -> html.Div:
    """The findings, each node key in their details a link into ``source_id``'s DAG."""
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
                    html.Ul([html.Li(linked(line, source_id)) for line in f["details"][:12]]),
                ],
                className=f"finding {f['severity']}",
            )
        )
    return html.Div([html.H3(f"Findings ({len(found)})"), *items], id="findings")


def report_page(G: nx.DiGraph, source_id: str | None = None) -> list[Any]:
    """The step report of one graph; its node keys link to ``source_id``'s DAG."""
    r = step_report(G)
    out: list[Any] = []
    if r.has_step_timing:
        rows = step_rows(r)
        out += [
            html.H3("Eager step against graph replay"),
            _table(["", "eager", "graph"], rows, "step-table"),
        ]
        if r.timing_source:
            out.append(html.P(f"Timed from {r.timing_source}.", className="muted"))
        if r.eager_step_us is None and r.eager_traced_step_us is None:
            out.append(
                html.P(
                    "No eager step in this file: the program's own steps were not timed apart.",
                    className="muted",
                    id="no-eager",
                )
            )
        if r.speedup is not None:
            saved = r.cpu_overhead_reduction_pct
            out.append(
                html.P(
                    f"Speedup {r.speedup:.1f}x"
                    + (f"; CPU launch overhead down {saved:.0f}%" if saved is not None else ""),
                    id="speedup",
                )
            )
    elif r.untimed_reason:
        out.append(
            html.P(
                r.untimed_reason[:1].upper() + r.untimed_reason[1:] + ".",
                className="muted",
                id="no-timing-reason",
            )
        )
    if r.values:
        out.append(html.P(f"Values: {r.values}.", id="values"))
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
            [
                us(n["median_us"]),
                us(n["eager_us"]),
                node_link(n["node"], source_id),
                n["name"],
                n.get("module") or "",
            ]
            for n in r.top_nodes
        ]
        out += [
            html.H3("Slowest nodes"),
            _table(["replay", "eager", "node", "name", "module"], rows, "top-nodes"),
        ]
    g = r.graph_vs_eager
    if g is not None:
        slower = [x for x in g["rows"] if x["delta_us"] > 0]
        out += [
            html.H3("Graph against eager, node by node"),
            html.P(
                f"{g['compared']:,} nodes timed both ways: {us(g['graph_us'])} in replay "
                f"against {us(g['eager_us'])} eagerly. {g['slower']:,} run slower in the graph, "
                f"by {us(g['slower_us'])} in all; the others faster by {us(g['faster_us'])}. "
                "One eager launch is noisier than a replay median: look at the large losses.",
                id="graph-vs-eager-note",
            ),
        ]
        if slower:
            rows = [
                [
                    f"{x['delta_us']:+.2f} us",
                    f"{x['ratio']:.2f}x",
                    us(x["graph_us"]),
                    us(x["eager_us"]),
                    node_link(x["node"], source_id),
                    x["name"],
                    x.get("module") or "",
                ]
                for x in slower
            ]
            head = ["loss", "ratio", "replay", "eager", "node", "name", "module"]
            out.append(_table(head, rows, "graph-vs-eager"))
    if r.module_totals:
        rows = [
            [
                us(m["replay_us"]),
                f"{m['share_pct']:.1f}%",
                f"{m['nodes']:,}",
                m["module"],
                f"{m['instances']:,}",
                us(m["per_instance_us"]),
            ]
            for m in r.module_totals
        ]
        out += [
            html.H3("Repeated modules, summed over their instances"),
            _table(
                ["replay", "share", "nodes", "module", "instances", "each"], rows, "module-totals"
            ),
        ]
    if r.top_modules:
        rows = [
            [us(m["replay_us"]), f"{m['share_pct']:.1f}%", f"{m['nodes']:,}", m["module"]]
            for m in r.top_modules
        ]
        out += [html.H3("Module groups"), _table(["replay", "share", "nodes", "module"], rows)]
    out.append(findings_list(r.findings, source_id))
    return out


def _changes(c: NodeChange) -> str:
    """A changed row's fields as text, the kernel's names in A and B first."""
    kernel = [f"kernel: {c.kernels[0]} -> {c.kernels[1]}"] if c.kernels else []
    return "; ".join(kernel + [f"{k}: {a} -> {b}" for k, (a, b) in c.fields.items() if k != "name"])


def compare_page(
    A: nx.DiGraph, B: nx.DiGraph, top: int = 30, a: str | None = None, b: str | None = None
) -> list[Any]:
    """What changed from A to B, and the cudaGraphExecUpdate verdict.

    ``a`` and ``b`` are the two files' source ids: A's node keys link to A's DAG, B's to B's,
    and a link opens B's DAG with what changed from A marked (``callbacks.page``).
    """
    d = diff(A, B)
    out: list[Any] = [
        html.P(
            f"{d.matched} nodes matched, {len(d.added)} added in B, {len(d.removed)} removed "
            f"from A; {len(d.edges_added)} edges added, {len(d.edges_removed)} removed.",
            id="compare-counts",
        )
    ]
    if a is not None and b is not None:
        out.append(
            html.P(
                html.A(
                    "show in the DAG",
                    href=address(b, compare=a),
                    id="compare-dag-link",
                    title="B's graph with its added and changed nodes ringed",
                )
            )
        )
    v = d.update
    if v is not None:
        if v.ok:
            verdict = (
                "cudaGraphExecUpdate: B can update an executable graph of A in place "
                f"({v.paired:,} node pairs checked); {changes_text(v)}."
            )
            out.append(
                html.P(verdict, id="update-verdict", className="warn" if v.hazards else "ok")
            )
            groups = hazard_groups(v)
            if groups:
                out.append(
                    html.H3(f"Hazards the driver does not report ({len(v.hazards):,} nodes)")
                )
                hazard_rows = [
                    [
                        g.kind,
                        html.Span(
                            [
                                *(part for k in g.nodes[:4] for part in (node_link(k, b), " ")),
                                f"and {len(g.nodes) - 4:,} more" if len(g.nodes) > 4 else "",
                            ]
                        ),
                        g.why,
                    ]
                    for g in groups[:top]
                ]
                out += _cut(len(groups), top, "kinds", "hazards-shown")
                out.append(_table(["hazard", "nodes in B", "what"], hazard_rows, "update-hazards"))
                out.append(html.P(HAZARD_NOTE[0].upper() + HAZARD_NOTE[1:] + "."))
        else:
            out.append(
                html.P(
                    f"cudaGraphExecUpdate: B cannot update an executable graph of A ({v.result}); "
                    "B must be instantiated anew.",
                    id="update-verdict",
                    className="error",
                )
            )
            rows = [
                [
                    o.result,
                    node_link(o.node, b) if o.node else "graph",
                    node_link(o.pair, a) if o.pair else None,
                    linked(o.why, b),  # keys in the reasons are B's (analysis.update)
                ]
                for o in v.obstacles[:top]
            ]
            out += _cut(len(v.obstacles), top, "reasons", "update-shown")
            out.append(_table(["result", "node in B", "pair in A", "why"], rows))
    if d.replay_a_us is not None and d.replay_b_us is not None:
        out.append(html.P(f"Replay: {us(d.replay_a_us)} -> {us(d.replay_b_us)}."))
    config = d.configured
    if config:
        rows = [[node_link(c.a, a), node_link(c.b, b), c.name, _changes(c)] for c in config[:top]]
        out += [
            html.H3(f"Changed parameters ({len(config)} nodes)"),
            *_cut(len(config), top, "nodes", "changed-shown"),
            _table(["A", "B", "name", "what changed"], rows, "compare-changed"),
        ]
    args_only = len(d.args_only)
    if args_only:
        out.append(html.P(f"{args_only} nodes differ only in argument values.", className="muted"))
    all_timed = [c for c in d.timing if c.delta_us is not None]
    timed = all_timed[:top]
    if timed:
        rows = [
            [
                f"{c.delta_us:+.2f} us",
                us(c.median_a_us),
                us(c.median_b_us),
                node_link(c.b, b),
                c.name,
            ]
            for c in timed
        ]
        out += [
            html.H3("Largest timing changes"),
            *_cut(len(all_timed), top, "timed nodes, largest change first", "timing-shown"),
            _table(["change", "A", "B", "node in B", "name"], rows),
        ]
    for label, keys, source_id in (("Added in B", d.added, b), ("Removed from A", d.removed, a)):
        if keys:
            out.append(html.P([f"{label}: ", *_keys(keys, source_id)]))
    return out


def _cut(total: int, top: int, what: str, element_id: str) -> list[html.P]:
    """The line above a table that shows only its first ``top`` rows of ``total``, if it does:
    the tables stopped at 30 rows without a word."""
    if total <= top:
        return []
    return [html.P(f"The first {top:,} of {total:,} {what}.", className="muted", id=element_id)]


def changed_keys(d: GraphDiff) -> list[str]:
    """B's nodes whose parameters changed: the compare page's "Changed parameters" (a node
    whose argument values alone differ is left out: between two captures most do)."""
    return [c.b for c in d.configured]


def compare_note(d: GraphDiff, a: str, label_a: str, folded: bool = False) -> html.Div:
    """What the rings on B's DAG mean, and A's removed nodes (not drawn) as links to A;
    ``folded`` when a ring is around a collapsed group."""
    changed = len(changed_keys(d))
    parts = [f"{len(d.added):,} nodes added in B (ringed green)"] if d.added else []
    parts += [f"{changed:,} nodes with changed parameters (ringed orange)"] if changed else []
    parts += [f"{len(d.removed):,} nodes removed from A"] if d.removed else []
    text = f"Compared with A ({label_a}): " + (
        "; ".join(parts) or "no node added, changed or removed"
    )
    removed: list[Any] = [": ", *_keys(d.removed, a)] if d.removed else []
    folds = [" A collapsed group is ringed for the nodes it holds."] if folded else []
    return html.Div([text, *removed, ".", *folds], id="compare-note")


def buckets_page(r: BucketReport, sources: dict[int, str] | None = None) -> list[Any]:
    """Per bucket time and memory, padding waste, the best set within a budget.

    ``sources`` gives the source id of a bucket's bundle, by batch size, where the app has
    that file: its batch size then opens the graph, and a node the driver named opens there.
    """
    sources = sources or {}
    rows = [
        [
            (
                html.A(str(b.batch_size), href=address(sources[b.batch_size]))
                if b.batch_size in sources
                else b.batch_size
            ),
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
        # The driver names the node of the graph it was given to update with: the "to" one.
        to = u.get("to")
        where: list[Any] = []
        if not u.get("ok") and isinstance(u.get("error_node"), str):
            target = sources.get(to) if isinstance(to, int) else None
            where = [", at ", node_link(u["error_node"], target)]
        out.append(
            html.P(
                [
                    f"b{u.get('from')} -> b{to}: the driver {said} cudaGraphExecUpdate at capture",
                    *where,
                    ".",
                ]
            )
        )
    out += [html.P(f"Note: {note}", className="muted") for note in r.notes]
    return out


def diagnosis(run: RecordedRun) -> Any:
    """What ``graphscope check`` says of a run under its default rules, each finding linked to
    its graph: the catalog's first answer to "is something wrong with my graphs?"."""
    result = check(run.recordings, DEFAULT_RULES)
    rules = ", ".join(result.checked)
    if not result.violations:
        items: list[Any] = [html.Span(f"passed: {rules}", className="pass")]
    else:
        n = len(result.violations)
        items = [html.Span(f"{n} rule{'s' * (n != 1)} broken (checked: {rules})")]
        for i, v in enumerate(result.violations):
            process = next(
                (rec.name for rec in run.recordings if process_label(rec) == v.process), None
            )
            source = run.sources.get((process, v.graph)) if process and v.graph else None
            link: Any = (
                html.Button(
                    v.graph,
                    # one id a finding: two findings can name the same graph
                    id={"type": "open-graph", "source": source, "at": f"diagnosis {i}"},
                    className="link",
                    title="open this graph",
                )
                if source is not None
                else None
            )
            items.append(
                html.Div(
                    [html.B(f"{v.rule}: "), html.Span(v.message), *([" ", link] if link else [])],
                    className="finding warning",
                )
            )
    items += [html.P(f"not checked: {line}", className="muted") for line in result.unchecked]
    return html.Div(
        [html.H4("Diagnosis (graphscope check)"), *items],
        className="diagnosis",
    )


#: Graphs drawn apart in the launch chart; the rest are one trace.
_CHART_GRAPHS = 10


def launches_chart(rec: Recording) -> go.Figure | None:
    """Graph launches per second over the run, stacked by graph (its batch in the legend),
    with the stretch where no graph was launched shaded: which graph served which part of
    the run, and when the graphs stopped. None where the recording has no coverage."""
    spans = coverage.spans(rec)
    cov = rec.coverage
    if not spans or not cov:
        return None
    width = float(cov["bin_s"])
    bins = cov["bins"]
    x = [float(b["at_s"]) + width / 2 for b in bins]
    drawn = sorted(spans, key=lambda s: -s.launches)[:_CHART_GRAPHS]
    fig = go.Figure()
    for s in sorted(drawn, key=lambda s: (s.first_s, s.graph)):
        name = graph_label(s.graph, s.batch)
        y = [b["launches"].get(s.graph, 0) / width for b in bins]
        fig.add_bar(x=x, y=y, width=width, name=name, hovertemplate="%{y:,.0f}/s at %{x:.0f} s")
    kept = {s.graph for s in drawn}
    rest = [
        sum(n for g, n in b["launches"].items() if g not in kept) / width
        + b.get("unknown_launches", 0) / width
        for b in bins
    ]
    if any(rest):
        fig.add_bar(x=x, y=rest, width=width, name="other graphs", marker_color="#999")
    # The probes while no graph was launched: kernels outside graphs per second they traced,
    # on their own axis (a rate of eager kernels, not of launches).
    probed = [
        (xi, b["probe_kernels"] / (b["probe_ms"] / 1e3))
        for xi, b in zip(x, bins, strict=True)
        if b.get("probe_ms", 0) > 0 and "probe_kernels" in b
    ]
    if probed:
        fig.add_scatter(
            x=[p[0] for p in probed],
            y=[p[1] for p in probed],
            yaxis="y2",
            mode="markers",
            marker={"symbol": "x", "color": "#d62728", "size": 7},
            name="eager kernels/s (probed)",
            hovertemplate="%{y:,.0f} eager kernels/s at %{x:.0f} s",
        )
        fig.update_layout(
            yaxis2={
                "title": "eager kernels/s",
                "overlaying": "y",
                "side": "right",
                "rangemode": "tozero",
                "tickformat": ",.0f",
                "showgrid": False,
            }
        )
    stopped = coverage.stop(rec)
    for stretch in [*coverage.lapses(rec), *([stopped] if stopped is not None else [])]:
        fig.add_vrect(
            x0=stretch.at_s,
            x1=stretch.until_s,
            fillcolor="#d62728",
            opacity=0.08,
            line_width=0,
            annotation_text="no graph launched"
            + {True: ": eager kernels ran", False: ": GPU idle", None: ""}[stretch.eager],
            annotation_position="top left",
        )
    fig.update_layout(
        barmode="stack",
        bargap=0,
        height=200,
        margin={"l": 60, "r": 80 if probed else 10, "t": 24, "b": 36},
        title={"text": "graph launches per second over the run", "font": {"size": 13}},
        xaxis={"title": "seconds since recording began", "rangemode": "tozero"},
        yaxis={"title": "launches/s", "tickformat": ",.0f"},
        # One row above the plot: a legend at the right would sit on the second axis.
        legend={
            "font": {"size": 11},
            "orientation": "h",
            "x": 1,
            "xanchor": "right",
            "y": 1.02,
            "yanchor": "bottom",
        },
        plot_bgcolor="white",
    )
    return fig


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
        if run.unrecorded:
            out.append(
                html.Div(
                    [
                        html.B("Not recorded: "),
                        "processes of the program that used CUDA where graphscope record "
                        "could not follow",
                        html.Ul([html.Li(entry["why"]) for entry in run.unrecorded]),
                    ],
                    className="finding warning unrecorded",
                )
            )
        if run.error is not None:
            out.append(html.Div(run.error, className="error"))
            continue
        out.append(diagnosis(run))
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
                        id={"type": "open-graph", "source": source, "at": "catalog"},
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
            chart = launches_chart(rec)
            if chart is not None:
                out.append(
                    dcc.Graph(
                        figure=chart,
                        config={"displayModeBar": False},
                        className="launches",
                    )
                )
            ledger_lines: list[str] = []
            render_ledger(r.memory, ledger_lines.append)  # the lines graphscope inspect prints
            if ledger_lines:
                items = [line.strip() for line in "".join(ledger_lines).splitlines()]
                out.append(
                    html.Div(
                        [html.B(items[0]), html.Ul([html.Li(x) for x in items[1:]])],
                        className="memory",
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
