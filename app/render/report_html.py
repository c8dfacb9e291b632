"""A standalone HTML report in one file: the step report, the findings, the DAG and the timeline.

It works offline (for CI artifacts and bug reports): graphscope's own plotly.js bundle is
inlined, and nothing is fetched. Every name from the file is HTML-escaped.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import networkx as nx
import plotly.io as pio

from graphscope.analysis.folding import group_levels, overview
from graphscope.analysis.report import step_report
from graphscope.io import bulk
from graphscope.text import step_rows, us

from .figure import build_figure
from .marks import values_mark
from .placement import drawn, drawn_as
from .timeline import build_timeline, has_timeline

_PLOTLY = Path(__file__).resolve().parent.parent / "assets" / "plotly-graphscope.min.js"
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 16px 24px; color: #222; max-width: 1400px; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 2px 10px; text-align: left; border-bottom: 1px solid #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.finding { border-left: 4px solid #999; padding: 4px 12px; margin: 10px 0; font-size: 13px; }
.finding.warning { border-color: #d62728; } .finding.info { border-color: #1f77b4; }
.muted { color: #777; } code { font-size: 12px; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(head: list[str], rows: list[list[Any]], numeric: frozenset[int] = frozenset()) -> str:
    cells = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{_e(v)}</td>' if i in numeric else f"<td>{_e(v)}</td>"
            for i, v in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{cells}</tr>{body}</table>"


def report_html(G: nx.DiGraph, title: str) -> str:
    """The report as one HTML document."""
    with bulk():
        return _report_html(G, title)


def _report_html(G: nx.DiGraph, title: str) -> str:
    r = step_report(G)
    parts = [f"<h1>graphscope report: {_e(title)}</h1>"]
    meta = [G.graph.get(k) for k in ("model", "device", "driver", "torch", "captured_at")]
    parts.append(f'<p class="muted">{_e(" · ".join(str(m) for m in meta if m))}</p>')
    if r.eager_step_us is not None or r.replay_us is not None:
        rows = step_rows(r)
        parts.append("<h2>Eager step against graph replay</h2>")
        parts.append(_table(["", "eager", "graph"], rows, frozenset({1, 2})))
        if r.speedup is not None:
            reduction = r.cpu_overhead_reduction_pct
            parts.append(
                f"<p>Speedup <b>{r.speedup:.1f}x</b>"
                + (f"; CPU launch overhead down <b>{reduction:.0f}%</b>" if reduction else "")
                + "</p>"
            )
    else:
        parts.append('<p class="muted">This file has no timing (a DOT dump carries none).</p>')
    if r.values:
        parts.append(f'<p id="values">Values: {_e(r.values)}.</p>')
    if r.critical_path_us is not None:
        parts.append(
            f"<p>Critical path: {len(r.critical_path)} nodes, {_e(us(r.critical_path_us))} of "
            f"{_e(us(r.node_time_us))} node time"
            + (f" (parallelism {r.parallelism:.2f})" if r.parallelism else "")
            + (
                f"; the replay span is {r.span_over_critical:.2f}x the critical path"
                if r.span_over_critical
                else ""
            )
            + ".</p>"
        )
    if r.top_nodes:
        parts.append("<h2>Slowest nodes</h2>")
        rows = [
            [us(n["median_us"]), us(n["eager_us"]), n["node"], n["name"], n.get("module") or ""]
            for n in r.top_nodes
        ]
        parts.append(_table(["replay", "eager", "node", "name", "module"], rows, frozenset({0, 1})))
    if r.top_modules:
        parts.append("<h2>Module groups</h2>")
        rows = [
            [us(m["replay_us"]), f"{m['share_pct']:.1f}%", m["nodes"], m["module"]]
            for m in r.top_modules
        ]
        parts.append(_table(["replay", "share", "nodes", "module"], rows, frozenset({0, 1, 2})))
    parts.append(f"<h2>Findings ({len(r.findings)})</h2>")
    if not r.findings:
        parts.append('<p class="muted">None.</p>')
    for f in r.findings:
        details = "".join(f"<li>{_e(line)}</li>" for line in f["details"][:20])
        parts.append(
            f'<div class="finding {_e(f["severity"])}"><b>{_e(f["code"])}</b>: {_e(f["title"])}'
            f"<br>Why: {_e(f['why'])}<br>Fix: {_e(f['fix'])}<ul>{details}</ul></div>"
        )
    levels = group_levels(G)
    expanded = overview(levels)
    shown, placed = drawn(G, levels, expanded)  # the view the dashboard opens with
    parts.append("<h2>Graph</h2>")
    if shown is not G:
        parts.append(
            f'<p class="muted">{G.number_of_nodes()} nodes: repeated layers and groups folded '
            "as the dashboard first shows them.</p>"
        )
    dag = build_figure(shown, placed, "time", in_page=False)
    # the node where the values first differ from eager's, ringed as the dashboard rings it
    dag.add_traces(values_mark(G, placed, lambda k: drawn_as(levels, k, expanded)))
    figures = [dag]
    if has_timeline(G):
        figures.append(build_timeline(G, None, shown))
    for fig in figures:
        parts.append(
            pio.to_html(
                fig,
                include_plotlyjs=False,
                full_html=False,
                # No "Share chart" button, no logo linking out: nothing leaves the machine.
                config={"displaylogo": False, "showSendToCloud": False},
            )
        )
    script = _PLOTLY.read_text(encoding="utf-8").replace("</script", "<\\/script")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>graphscope: {_e(title)}</title><style>{_STYLE}</style></head>"
        # In the body: plotly.js adds its styles to the document as it loads.
        f"<body><script>{script}</script>{''.join(parts)}</body></html>"
    )
