"""Write a graph as readable DOT that graphscope reads back without loss.

Layout follows ``cudaGraphDebugDotPrint`` (one ``cluster_<graph_id>`` per graph, nodes named
``graph_<G>_node_<N>``) so the file opens in Graphviz and reads like a driver dump, but labels
are short (id, short kernel name, launch configuration or copy size). Every attribute travels
as JSON in ``gs_attrs``, and the graph's metadata in ``gs_graph``, so
``load(save(G, "x.dot"))`` returns ``G``.
"""

from __future__ import annotations

import json
from typing import Any

import networkx as nx

from .model import display_name, nodes_by_graph
from .sizes import Estimate
from .version import __version__

_SHAPES = {
    "KERNEL": "box",
    "MEMCPY": "trapezium",
    "MEMSET": "invtrapezium",
    "CONDITIONAL": "diamond",
    "GRAPH": "folder",
}


def _quote(text: str) -> str:
    """A DOT string; the reader undoes both escapes for gs_ attributes."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dims(d: Any) -> str:
    if not isinstance(d, list):
        return "?"
    trimmed = list(d)
    while len(trimmed) > 1 and trimmed[-1] == 1:
        trimmed.pop()
    return str(trimmed[0]) if len(trimmed) == 1 else "{" + ",".join(map(str, trimmed)) + "}"


def _label(data: dict[str, Any]) -> str:
    lines = [str(data.get("local_id", "?")), display_name(data)]
    kind = data.get("type")
    if kind == "KERNEL" and "grid" in data:
        lines.append(
            f"<<<{_dims(data['grid'])},{_dims(data.get('block'))},{data.get('shared_mem', 0)}>>>"
        )
    elif kind in ("MEMCPY", "MEMSET", "MEM_ALLOC") and "bytes" in data:
        head = data.get("kind", data.get("value", ""))
        lines.append(f"({head},{data['bytes']})" if head != "" else f"({data['bytes']} B)")
    elif kind == "GRAPH" and "child_graph" in data:
        lines.append(f"graph_{data['child_graph']}")
    elif kind == "CONDITIONAL":
        lines.append(
            f"{data.get('conditional_type', '')} -> "
            + ", ".join(f"graph_{b}" for b in data.get("bodies", []))
        )
    if isinstance(data.get("replay"), dict) and "median_us" in data["replay"]:
        lines.append(f"{data['replay']['median_us']:.1f} us")
    # The label is for Graphviz only (gs_attrs holds the exact values, JSON-escaped): text that
    # UTF-8 cannot hold (a lone surrogate, which a bundle's JSON can carry) is shown as "?".
    return "\n".join(lines).encode("utf-8", "replace").decode("utf-8")


def measure(G: nx.DiGraph, estimate: Estimate) -> None:
    """Give a quoted ``estimate`` what ``dumps_dot`` writes of ``G``, without writing it.

    Each node is written whole (its ``gs_attrs``), with a label that repeats its name.
    """
    estimate.add(G.graph, 64)
    nodes = list(G.nodes(data=True))
    estimate.add_each([data for _, data in nodes])
    names = [display_name(data) for _, data in nodes]
    # Labels: the name, as UTF-8 (up to four bytes a character) with quotes doubled, and the
    # key twice, the shape and the launch configuration around it.
    estimate.total += sum(len(n) * (2 if n.isascii() else 4) + 120 for n in names)
    estimate.total += 2 * sum(map(len, G))
    bodies = [d.get("bodies") for _, d in nodes if d.get("type") == "CONDITIONAL"]
    estimate.add_each(bodies)  # a conditional's label lists them
    edges = [d for _, _, d in G.edges(data=True)]
    estimate.add_each(edges, 16)  # the arrow, quotes and brackets; the keys below
    estimate.total += 2 * sum(len(a) + len(b) for a, b in G.edges)


def dumps_dot(G: nx.DiGraph) -> str:
    """``G`` as DOT text."""
    by_graph = nodes_by_graph(G)
    meta = dict(G.graph)
    out = [
        f"// written by graphscope {__version__}; graphscope reads it back exactly",
        "digraph dot {",
        f"gs_graph={_quote(json.dumps(meta, separators=(',', ':')))};",
    ]
    for gid in sorted(by_graph):
        out.append(f"subgraph cluster_{gid} {{")
        out.append(f'label="graph_{gid}" graph[style="dashed"];')
        members = set(by_graph[gid])
        for key in by_graph[gid]:
            data = G.nodes[key]
            attrs = json.dumps(data, separators=(",", ":"))
            shape = _SHAPES.get(str(data.get("type")), "rectangle")
            out.append(
                f"{_quote(key)}[shape={shape} label={_quote(_label(data))} "
                f"gs_attrs={_quote(attrs)}];"
            )
        for a, b, d in G.edges(by_graph[gid], data=True):
            if b in members:
                extra = f" [gs_attrs={_quote(json.dumps(d, separators=(',', ':')))}]" if d else ""
                out.append(f"{_quote(a)} -> {_quote(b)}{extra};")
        out.append("}")
    out.append("}")
    return "\n".join(out) + "\n"
