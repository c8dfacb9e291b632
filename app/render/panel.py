"""The node panel: a node's own parameters, the memory it touches, its timing, its origin, the
graph it sits in and its neighbours.

Everything from a file is shown as text: Dash escapes strings it renders, and nothing here is
ever passed as markup. A table of text is one ``dcc.Markdown`` with every punctuation mark
escaped, so nothing in a cell is read as markup or a link either. Measured in headless
Chromium on tiny-llama's kernels: the panel as about 180 html components took 50 to 90 ms to
render after the server's answer; with its text tables as Markdown, 20 to 35 ms. Dash's cost
is per component, and a click's time to the panel is mostly that.
"""

from __future__ import annotations

import json
import re
from typing import Any

import networkx as nx
from dash import dcc, html
from dash.development.base_component import Component

from graphscope.analysis.addresses import addresses, known_addresses
from graphscope.analysis.findings import values_agree
from graphscope.analysis.numerics import first_difference_text, read_frozen
from graphscope.analysis.timing import IMPLAUSIBLE_SPANS, plausible_max_us
from graphscope.model import display_name, module_of, module_text, node_key, owner_of

# Each type's own parameters, shown first in this order with these labels (docs/FORMAT.md names
# the fields); composite rows (extents, access policy windows, batch ops, child graphs,
# conditional bodies) are added by the functions below.
_PARAMS: dict[str, tuple[tuple[str, str], ...]] = {
    "KERNEL": (
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
        ("cooperative", "cooperative launch"),
        ("priority", "priority"),
        ("func_handle", "function handle"),
    ),
    "MEMCPY": (
        ("kind", "copy kind"),
        ("bytes", "bytes"),
        ("src.memory_type", "source memory"),
        ("dst.memory_type", "destination memory"),
    ),
    "MEMSET": (
        ("value", "value"),
        ("element_size", "element size (bytes)"),
        ("width", "width (elements)"),
        ("height", "height (rows)"),
        ("pitch", "pitch (bytes)"),
        ("bytes", "bytes"),
    ),
    "HOST": (("fn", "host function"), ("user_data", "user data")),
    "EVENT_RECORD": (("event", "event recorded"),),
    "WAIT_EVENT": (("event", "event waited for"),),
    "EXT_SEMAS_SIGNAL": (("num_ext_sems", "external semaphores"),),
    "EXT_SEMAS_WAIT": (("num_ext_sems", "external semaphores"),),
    "MEM_ALLOC": (
        ("bytes", "bytes allocated"),
        ("dptr", "address allocated"),
        ("pool_props.alloc_type", "allocation type"),
        ("pool_props.location.type", "location"),
        ("pool_props.location.id", "location id"),
        ("pool_props.handle_types", "handle types"),
    ),
    "MEM_FREE": (("dptr", "address freed"),),
    "BATCH_MEM_OP": (("count", "operations"), ("flags", "flags")),
    "CONDITIONAL": (
        ("conditional_type", "conditional type"),
        ("conditional_handle", "conditional handle"),
    ),
}
#: A kernel's names: each distinct text is one row.
_NAMES = {"short_name", "demangled", "name"}
_SECTIONS = {"replay", "eager", "attribution", "args", "pointers"}
_ALWAYS_SHOWN = _SECTIONS | {"type", "graph_id", "local_id", "parent"}
# Fields whose values are addresses or handles (the last dotted part of the name): shown in hex.
_ADDRESS_PARTS = {
    "address", "addr", "array", "base_ptr", "device", "dptr", "event", "fn", "func_handle",
    "host", "node_handle", "ptr", "user_data",
}  # fmt: skip
_BREAK = re.compile(r"(?<=[.:/,])")  # where a long buffer or segment name may wrap
_MAX_POINTER_ROWS = 100


def _is_address(field: str) -> bool:
    return field.rsplit(".", 1)[-1] in _ADDRESS_PARTS


def _hex(value: object) -> str:
    return hex(value) if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _text(value: object) -> str:
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def _shown(field: str, value: object) -> str:
    """A field's value as text: addresses and handles in hex."""
    return _hex(value) if _is_address(field) else _text(value)


def _cell(value: Any) -> Any:
    return value if isinstance(value, Component) else _text(value)


# Every ASCII punctuation mark as a numeric character reference: Dash's Markdown (remark in
# GFM mode) decodes it to the character, as text, while nothing written so can open markup, a
# link, an autolink ("http&#58;//" is none) or a table cell. Backslash escapes are not enough:
# remark outside CommonMark mode shows "\<" or "\," as written.
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")


def _md_cell(text: str) -> str:
    return _PUNCTUATION.sub(lambda m: f"&#{ord(m.group())};", " ".join(text.split())) or " "


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    """A GFM table of plain text: ``head`` and ``rows`` of cell text, shown as they are."""
    lines = ["| " + " | ".join(_md_cell(h) for h in head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _text_table(head: list[str], rows: list[list[str]], test_id: str, kind: str) -> html.Div:
    return html.Div(dcc.Markdown(markdown_table(head, rows)), className=kind, id=test_id)


def _table(rows: list[tuple[str, Any]], test_id: str) -> html.Div | html.Table:
    """A label/value table; a value is text, or components (links) shown as they are."""
    if not any(isinstance(value, Component) for _, value in rows):
        # No header: the Markdown table's empty one is hidden by the page's CSS.
        return _text_table(["", ""], [[label, _text(v)] for label, v in rows], test_id, "kv")
    return html.Table(
        [html.Tr([html.Th(label), html.Td(_cell(value))]) for label, value in rows],
        className="kv",
        id=test_id,
    )


def _link(key: str, text: str) -> html.Button:
    """A button that selects node ``key`` (the server listens to this id's pattern)."""
    return html.Button(text, id={"type": "nav", "key": key}, className="link", n_clicks=0)


def _first_node(G: nx.DiGraph, graph_id: int) -> str | None:
    """The first-made node of graph ``graph_id`` (it depends on nothing), or None if empty."""
    key = node_key(graph_id, 0)
    if key in G:
        return key
    nodes = [(d.get("local_id", 0), k) for k, d in G.nodes(data=True) if d["graph_id"] == graph_id]
    return min(nodes)[1] if nodes else None


def _graph_link(G: nx.DiGraph, graph_id: int) -> Any:
    first = _first_node(G, graph_id)
    if first is None:
        return f"graph {graph_id} (no nodes)"
    return html.Span([_link(first, f"graph {graph_id}"), f" (first node {first})"])


def _extra_rows(G: nx.DiGraph, data: dict[str, Any]) -> tuple[list[tuple[str, Any]], set[str]]:
    """Rows built from several fields, and the fields they show."""
    kind = data.get("type")
    if kind == "KERNEL":
        return _access_policy(data)
    if kind == "MEMCPY":
        return _extent(data)
    if kind == "BATCH_MEM_OP":
        return _batch_ops(data)
    if kind == "GRAPH" and isinstance(data.get("child_graph"), int):
        return [("child graph", _graph_link(G, data["child_graph"]))], {"child_graph"}
    if kind == "CONDITIONAL":
        bodies, labels = data.get("bodies") or [], data.get("body_labels") or []
        rows = [
            (f"body '{label}'", _graph_link(G, body))
            for body, label in zip(bodies, labels, strict=False)
        ]
        return rows, {"bodies", "body_labels"}
    return [], set()


def _access_policy(data: dict[str, Any]) -> tuple[list[tuple[str, Any]], set[str]]:
    prefix = "access_policy_window."
    fields = {k for k in data if k.startswith(prefix)}
    if not fields:
        return [], set()
    size = data.get(prefix + "num_bytes")
    if not size:
        return [("access policy window", "none")], fields
    text = (
        f"{_hex(data.get(prefix + 'base_ptr'))} + {size} bytes, hit ratio "
        f"{data.get(prefix + 'hit_ratio')} ({data.get(prefix + 'hit_prop')} on hit, "
        f"{data.get(prefix + 'miss_prop')} on miss)"
    )
    return [("access policy window", text)], fields


def _extent(data: dict[str, Any]) -> tuple[list[tuple[str, Any]], set[str]]:
    # Verbose dumps name the width extent.width_in_bytes; runtime-types ones extent.width.
    names = [
        "extent.width_in_bytes" if "extent.width_in_bytes" in data else "extent.width",
        "extent.height",
        "extent.depth",
    ]
    if not all(n in data for n in names):
        return [], set()
    text = " x ".join(str(data[n]) for n in names)
    return [("extent (width bytes x height x depth)", text)], set(names)


def _batch_ops(data: dict[str, Any]) -> tuple[list[tuple[str, Any]], set[str]]:
    rows, fields, i = [], set(), 0
    while f"param_array[{i}].op" in data:
        part = {f: data.get(f"param_array[{i}].{f}") for f in ("op", "addr", "val", "flags")}
        fields |= {f"param_array[{i}].{f}" for f in part}
        text = f"{part['op']} at {_hex(part['addr'])}, value {part['val']}, flags {part['flags']}"
        rows.append((f"operation {i}", text))
        i += 1
    return rows, fields


def _params(G: nx.DiGraph, data: dict[str, Any]) -> tuple[list[tuple[str, Any]], set[str]]:
    """The node's own parameters as labelled rows, and every field they show."""
    spec = _PARAMS.get(data.get("type", ""), ())
    rows: list[tuple[str, Any]] = []
    for field, label in spec:
        if field not in data:
            continue
        text = _shown(field, data[field])
        if field in _NAMES:
            # A Triton or cuDNN kernel's short, demangled and mangled names are often one
            # text: shown once, its row labelled with each name it is.
            same = next((i for i, (_, t) in enumerate(rows) if t == text), None)
            if same is not None:
                rows[same] = (f"{rows[same][0]}, {label}", text)
                continue
        rows.append((label, text))
    extra, fields = _extra_rows(G, data)
    return rows + extra, fields | {field for field, _ in spec}


def _owner(G: nx.DiGraph, data: dict[str, Any]) -> list[Any]:
    """Where a node of a child or body graph sits: "IF body 'True' of <owner>", as a link."""
    found = owner_of(G, data)
    if found is None:
        return []
    words, parent = found
    return [html.Div([f"in {words} of ", _link(parent, parent)], id="node-owner")]


def _us(value: object) -> str:
    return f"{value:.2f} us" if isinstance(value, (int, float)) else "-"


def _replay_max(G: nx.DiGraph, replay: dict[str, Any]) -> Any:
    """The node's replay max, or a flag where it cannot be the node's own time."""
    high = replay.get("max_us")
    bound = plausible_max_us(G)
    if not isinstance(high, (int, float)) or bound is None or high <= bound[0]:
        return _us(high)
    limit = "the longest traced replay" if bound[1] else f"{IMPLAUSIBLE_SPANS} median replays"
    return html.Span(
        f"{_us(high)}: not a real time",
        className="error",
        id="implausible-max",
        title=f"Longer than {limit} ({bound[0]:,.1f} us), which holds this node: a recording "
        "set-up artefact (the last traced launch of older recordings), not this node's time.",
    )


def _timing(G: nx.DiGraph, data: dict[str, Any]) -> list[Any]:
    replay = data.get("replay") if isinstance(data.get("replay"), dict) else None
    eager = data.get("eager") if isinstance(data.get("eager"), dict) else None
    if replay is None and eager is None:
        return [html.P("No timing for this node.", className="muted")]
    rows: list[tuple[str, Any]] = []
    if replay is not None:
        rows += [
            ("replay median", _us(replay.get("median_us"))),
            ("replay p90", _us(replay.get("p90_us"))),
            ("replay min", _us(replay.get("min_us"))),
            ("replay max", _replay_max(G, replay)),
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
    rows = [
        [str(i), str(arg.get("offset")), str(arg.get("size")), str(arg.get("value", "-"))]
        for i, arg in enumerate(args)
    ]
    table = _text_table(["#", "offset", "size", "value"], rows, "node-args", "args")
    return [html.H4(f"Arguments ({len(args)})"), table]


def _breakable(name: str) -> Any:
    """``name`` with line-break chances after its dots, colons, slashes and commas."""
    parts = [p for p in _BREAK.split(name) if p]
    if len(parts) < 2:
        return name
    out: list[Any] = []
    for part in parts:
        out += [part, html.Wbr()]
    return out[:-1]


def _place(name: Any, offset: Any) -> Any:
    if not name:
        return "-"
    shown = _breakable(str(name))
    suffix = f" +{_hex(offset)}" if isinstance(offset, int) and offset else ""
    if isinstance(shown, list):
        return [*shown, suffix] if suffix else shown
    return shown + suffix


def _memory_link(name: Any, offset: Any, at: int) -> Any:
    """A buffer or segment cell: its name as a link that finds every node touching it;
    ``at`` tells apart two links to one buffer (two ids alike: Dash refused the page)."""
    if not name:
        return "-"
    return html.Button(
        _place(name, offset),
        id={"type": "buffer", "name": str(name), "at": at},
        className="link",
        n_clicks=0,
        title="show every node that touches it",
        style={"textAlign": "left"},
    )


def _address_rows(
    G: nx.DiGraph, data: dict[str, Any], first: int = 0
) -> list[tuple[str, str, int, Any, Any]]:
    """(what, offset, address, buffer, segment) of each address in :func:`_addresses`, the
    table's rows from ``first`` on."""
    found = addresses(data)
    known = known_addresses(G) if found else {}
    rows = []
    for i, (what, field, pos) in enumerate(found, start=first):
        p = known.get(data[field], {})
        buffer = _memory_link(p.get("buffer"), p.get("buffer_offset"), 2 * i)
        segment = _memory_link(p.get("segment"), p.get("segment_offset"), 2 * i + 1)
        rows.append((what, pos, data[field], buffer, segment))
    return rows


_BUFFER_COLUMNS = (
    ("arg", "the kernel argument's index, or which end of a copy or memset"),
    ("offset", "bytes into the argument, or the copy's x, y, z position"),
    ("address", "the address, in hex"),
    ("buffer", "the named buffer it falls in, + the offset into it"),
    ("segment", "the allocator segment it falls in, + the offset into it"),
)
_WRAP = {
    "overflowWrap": "break-word",
    "wordBreak": "normal",
    "padding": "1px 6px",
    "textAlign": "left",
    "verticalAlign": "top",
}
_ADDRESS_CELL = {
    "fontFamily": "ui-monospace, monospace",
    "whiteSpace": "nowrap",
    "padding": "1px 6px",
    "verticalAlign": "top",
}


def _buffers(G: nx.DiGraph, data: dict[str, Any]) -> list[Any]:
    """One table of the memory a node touches: kernel pointer arguments, copy and memset
    addresses, in hex, with the buffer and allocator segment they fall in where known."""
    pointers = (data.get("pointers") or [])[:_MAX_POINTER_ROWS]
    rows = [
        (
            str(p.get("arg", "-")),
            str(p.get("offset", "-")),
            p.get("address"),
            _memory_link(p.get("buffer"), p.get("buffer_offset"), 2 * i),
            _memory_link(p.get("segment"), p.get("segment_offset"), 2 * i + 1),
        )
        for i, p in enumerate(pointers)
    ] + _address_rows(G, data, len(pointers))
    if not rows:
        return []
    table = [html.Tr([html.Th(h, title=tip, style=_WRAP) for h, tip in _BUFFER_COLUMNS])]
    for what, offset, address, buffer, segment in rows:
        table.append(
            html.Tr(
                [
                    html.Td(what, style=_WRAP),
                    html.Td(offset, style=_WRAP),
                    html.Td(_hex(address), style=_ADDRESS_CELL),
                    html.Td(buffer, style=_WRAP),
                    html.Td(segment, style=_WRAP),
                ]
            )
        )
    out: list[Any] = [
        html.H4("Buffers"),
        html.Table(table, id="node-buffers", style={"borderCollapse": "collapse", "width": "100%"}),
    ]
    if len(pointers) > _MAX_POINTER_ROWS:
        out.append(html.P(f"... and {len(pointers) - _MAX_POINTER_ROWS} more pointers."))
    if data.get("type") != "KERNEL" and known_addresses(G):
        out.append(
            html.P(
                "Named where a kernel argument of this graph holds the same address.",
                className="muted",
            )
        )
    return out


def _links(G: nx.DiGraph, keys: list[str], title: str, test_id: str) -> list[Any]:
    """Links to neighbours; ``test_id`` is where the page's arrow keys find the first."""
    if not keys:
        return [html.Div(f"{title}: none", className="muted", id=test_id)]
    buttons = [_link(k, f"{display_name(G.nodes[k])} ({k})") for k in keys[:50]]
    more = [html.Span(f" ... and {len(keys) - 50} more")] if len(keys) > 50 else []
    return [html.Div([html.Span(f"{title}: "), *buttons, *more], id=test_id)]


def _groups(groups: list[str] | None) -> list[Any]:
    """A collapse button for each open group the node sits in, innermost first."""
    if not groups:
        return []
    buttons = [
        html.Button(g, id={"type": "collapse", "group": g}, className="link", n_clicks=0)
        for g in groups
    ]
    return [html.Div([html.Span("collapse: "), *buttons], id="node-groups")]


def _origin(data: dict[str, Any]) -> list[Any]:
    origin = data.get("attribution") if isinstance(data.get("attribution"), dict) else None
    if origin is None:
        return []
    where = f"{origin.get('file')}:{origin.get('line')}" if origin.get("file") else "-"
    source = f"{where} in {origin.get('function')}" if origin.get("function") else where
    rows = [
        ("module", module_text(module_of(data))),
        ("op", origin.get("op") or "-"),
        ("source", source),
    ]
    compiled = origin.get("compiled") if isinstance(origin.get("compiled"), dict) else {}
    if compiled.get("source_nodes"):  # Inductor's comment above the kernel call
        fuses = str(compiled["source_nodes"])
        rows.append(("fuses", f"{fuses} ({compiled['aten']})" if compiled.get("aten") else fuses))
    hlo = origin.get("hlo") if isinstance(origin.get("hlo"), dict) else {}
    if hlo.get("instruction"):  # XLA's kernels (graphscope.hlo)
        rows.append(("HLO", f"{hlo['instruction']} in {hlo.get('module') or '?'}"))
    return [html.H4("Made by"), _table(rows, "node-origin")]


def _against_eager(G: nx.DiGraph, key: str) -> list[Any]:
    """What capture's value comparison says of this node: the first output that differs from
    eager's, and the arguments the graph froze (``analysis.numerics``); nothing elsewhere."""
    lines = []
    numerics = G.graph.get("numerics")
    first = numerics.get("first") if isinstance(numerics, dict) else None
    if isinstance(first, dict) and key in (first.get("nodes") or []):
        lines.append(
            "the graph's values first differ from eager's here: " + first_difference_text(first)
        )
    frozen = read_frozen(G)
    rows = [r for r in (frozen.frozen if frozen is not None else []) if r.node == key]
    lines += [row.said().split(": ", 1)[-1] for row in rows]
    if not lines:
        return []
    # A frozen value in a graph whose values matched eager's (so none differs first here) is
    # told, not raised, as its finding is
    calm = all(r.kind == "value" for r in rows) and values_agree(G)
    if calm:
        lines.append(
            "the graph's values matched eager's at the step compared: "
            + ("this word" if len(rows) == 1 else "these words")
            + " may be bytes the kernel never reads"
        )
    return [
        html.H4("Graph against eager"),
        html.Ul(
            [html.Li(line) for line in lines],
            id="node-against-eager",
            className="" if calm else "error",
        ),
    ]


def node_panel(G: nx.DiGraph, key: str, groups: list[str] | None = None) -> list[Any]:
    """The panel's children for node ``key``; ``groups``: the open groups it can fold into."""
    data = G.nodes[key]
    kind = data.get("type", "?")
    title = display_name(data) if kind == "KERNEL" else kind
    params, shown = _params(G, data)
    out: list[Any] = [
        # A long name wraps, at most three lines of it shown (components.CSS); the whole
        # name on hover, and in a copy.
        html.H3(title, id="node-title", title=title),
        html.Div(
            f"{kind} · {key} · graph {data.get('graph_id')} · local id {data.get('local_id')}"
        ),
        *_owner(G, data),
        *_groups(groups),
        # what the value comparison found here comes first: a wrong result outranks the rest
        *_against_eager(G, key),
        html.H4("Parameters"),
        _table(params, "node-launch") if params else html.P("none", className="muted"),
        *_buffers(G, data),
        html.H4("Timing"),
        *_timing(G, data),
        *_origin(data),
        *_arguments(data),
        html.H4("Neighbours"),
        *_links(G, sorted(G.predecessors(key)), "depends on", "node-predecessors"),
        *_links(G, sorted(G.successors(key)), "followed by", "node-successors"),
    ]
    hidden = shown | _ALWAYS_SHOWN | {field for _, field, _ in addresses(data)}
    rest = sorted((k, _shown(k, v)) for k, v in data.items() if k not in hidden and v is not None)
    if rest:
        out += [
            html.Details([html.Summary(f"All attributes ({len(rest)})"), _table(rest, "node-all")])
        ]
    return out
