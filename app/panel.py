"""The node panel: every attribute a node has, its timing, its origin and its neighbours.

Everything from a file is shown as text: Dash escapes strings it renders, and nothing here is
ever passed as markup.
"""

from __future__ import annotations

import json
from typing import Any

import networkx as nx
from dash import html

from graphscope.model import display_name

# Shown first, in this order, with these labels; everything else follows under "all attributes".
_LAUNCH = (
    ("short_name", "kernel"),
    ("demangled", "demangled"),
    ("name", "mangled"),
    ("grid", "grid"),
    ("block", "block"),
    ("shared_mem", "dynamic shared memory (bytes)"),
    ("static_shared_mem", "static shared memory (bytes)"),
    ("registers", "registers per thread"),
    ("max_threads_per_block", "max threads per block"),
    ("local_mem", "local memory (bytes)"),
    ("kind", "copy kind"),
    ("bytes", "bytes"),
    ("value", "value"),
    ("element_size", "element size"),
    ("width", "width"),
    ("height", "height"),
)
_SECTIONS = {"replay", "eager", "attribution", "args", "pointers"}
_SHOWN = {field for field, _ in _LAUNCH} | _SECTIONS | {"type", "graph_id", "local_id"}


def _text(value: Any) -> str:
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def _table(rows: list[tuple[str, Any]], test_id: str) -> html.Table:
    return html.Table(
        [html.Tr([html.Th(label), html.Td(_text(value))]) for label, value in rows],
        className="kv",
        id=test_id,
    )


def _us(value: Any) -> str:
    return f"{value:.2f} us" if isinstance(value, (int, float)) else "-"


def _timing(data: dict[str, Any]) -> list[Any]:
    replay = data.get("replay") if isinstance(data.get("replay"), dict) else None
    eager = data.get("eager") if isinstance(data.get("eager"), dict) else None
    if replay is None and eager is None:
        return [html.P("No timing for this node.", className="muted")]
    rows: list[tuple[str, Any]] = []
    if replay is not None:
        rows += [
            ("replay median", _us(replay.get("median_us"))),
            ("replay p90", _us(replay.get("p90_us"))),
            ("replay min / max", f"{_us(replay.get('min_us'))} / {_us(replay.get('max_us'))}"),
            ("replays timed", replay.get("count", "-")),
            ("start within replay", _us(replay.get("start_us"))),
        ]
    if eager is not None:
        rows += [
            ("eager duration", _us(eager.get("duration_us"))),
            ("eager launch call", eager.get("launch_api", "-")),
            ("launch call CPU time", _us(eager.get("launch_us"))),
            ("eager stream", eager.get("stream", "-")),
        ]
    if replay is not None and eager is not None:
        median, duration = replay.get("median_us"), eager.get("duration_us")
        if isinstance(median, (int, float)) and isinstance(duration, (int, float)):
            rows.append(("replay - eager", f"{median - duration:+.2f} us"))
    return [_table(rows, "node-timing")]


def _arguments(data: dict[str, Any]) -> list[Any]:
    args = data.get("args")
    if not isinstance(args, list) or not args:
        return []
    pointers: dict[int, list[str]] = {}
    for p in data.get("pointers") or []:
        where = p.get("buffer") or p.get("segment") or "?"
        offset = p.get("buffer_offset", p.get("segment_offset", 0))
        pointers.setdefault(int(p.get("arg", -1)), []).append(
            f"+{p.get('offset')}: {where}+{offset}"
        )
    header = html.Tr(
        [html.Th("#"), html.Th("offset"), html.Th("size"), html.Th("value"), html.Th("points to")]
    )
    rows = [header]
    for i, arg in enumerate(args):
        value = str(arg.get("value", "-"))
        rows.append(
            html.Tr(
                [
                    html.Td(str(i)),
                    html.Td(str(arg.get("offset"))),
                    html.Td(str(arg.get("size"))),
                    html.Td(value if len(value) <= 48 else value[:48] + "...", title=value),
                    html.Td("; ".join(pointers.get(i, [])) or "-"),
                ]
            )
        )
    return [html.H4(f"Arguments ({len(args)})"), html.Table(rows, className="args", id="node-args")]


def _links(G: nx.DiGraph, keys: list[str], title: str) -> list[Any]:
    if not keys:
        return [html.Div(f"{title}: none", className="muted")]
    buttons = [
        html.Button(
            f"{display_name(G.nodes[k])} ({k})",
            id={"type": "nav", "key": k},
            className="link",
            n_clicks=0,
        )
        for k in keys[:50]
    ]
    more = [html.Span(f" ... and {len(keys) - 50} more")] if len(keys) > 50 else []
    return [html.Div([html.Span(f"{title}: "), *buttons, *more])]


def _module_text(module: Any) -> str:
    """The module row: its path, or words for the model itself ("") and for no module (None)."""
    if module is None:
        return "(outside any module)"
    return module or "(the model itself)"


def node_panel(G: nx.DiGraph, key: str, groups: list[str] | None = None) -> list[Any]:
    """The panel's children for node ``key``; ``groups``: the open groups it can fold into."""
    data = G.nodes[key]
    kind = data.get("type", "?")
    title = display_name(data) if kind == "KERNEL" else kind
    launch = [(label, data[field]) for field, label in _LAUNCH if field in data]
    origin = data.get("attribution") if isinstance(data.get("attribution"), dict) else None
    out: list[Any] = [
        html.H3(title, id="node-title"),
        html.Div(
            f"{kind} · {key} · graph {data.get('graph_id')} · local id {data.get('local_id')}"
        ),
        html.H4("Launch"),
        _table(launch, "node-launch") if launch else html.P("-", className="muted"),
        html.H4("Timing"),
        *_timing(data),
    ]
    if origin is not None:
        where = f"{origin.get('file')}:{origin.get('line')}" if origin.get("file") else "-"
        out += [
            html.H4("Made by"),
            _table(
                [
                    ("module", _module_text(origin.get("module"))),
                    ("op", origin.get("op") or "-"),
                    (
                        "source",
                        f"{where} in {origin.get('function')}" if origin.get("function") else where,
                    ),
                ],
                "node-origin",
            ),
        ]
    out += _arguments(data)
    out += [
        html.H4("Neighbours"),
        *_links(G, sorted(G.predecessors(key)), "depends on"),
        *_links(G, sorted(G.successors(key)), "followed by"),
    ]
    rest = sorted((k, v) for k, v in data.items() if k not in _SHOWN)
    if rest:
        out += [
            html.Details([html.Summary(f"All attributes ({len(rest)})"), _table(rest, "node-all")])
        ]
    return out
