"""Read and write graphscope bundles: the graph plus timings, eager trace and attribution.

The schema is documented in docs/FORMAT.md. In memory everything lives on the DiGraph: per-node
sections as node attributes (``replay``, ``eager``, ``attribution``), the rest in ``G.graph``.
On disk the per-node sections are stored apart from the graph, keyed by node, so a bundle with
no timing is just a graph.

Records (nodes, and each per-node section) are stored as rows, ``[shape, key, value, ...]``
with ``shapes[shape]`` naming the fields, because most records of a graph share their field
names; kernel names are stored once in ``kernel_names`` and node rows point at them. Both keep
a 100,000-node bundle within the 2 s load and save targets (benchmarks/bench_bundle.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import networkx as nx

from . import __version__
from .errors import BundleFormatError
from .model import NODE_TYPES, SCHEMA_VERSION

FORMAT_NAME = "graphscope-bundle"

#: Node attributes stored in a section of their own: attribute -> section name.
NODE_SECTIONS = {"replay": "timing", "eager": "eager", "attribution": "attribution"}
#: Graph attributes stored in a section of their own: attribute -> (section, entry).
GRAPH_SECTIONS = {
    "timing": ("timing", "summary"),
    "replays": ("timing", "replays"),
    "eager_trace": ("eager", "trace"),
}
#: In a node shape, this field holds an index into ``kernel_names`` instead of a name.
NAME_REF = "@name"
_NAME_FIELDS = ("name", "demangled", "short_name")


def _encode_records(items: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    shapes: dict[tuple[str, ...], int] = {}
    rows = []
    for key, record in items:
        fields = tuple(record)
        index = shapes.get(fields)
        if index is None:
            index = shapes[fields] = len(shapes)
        rows.append([index, key, *record.values()])
    return {"shapes": [list(s) for s in shapes], "rows": rows}


def _decode_records(table: Any, path: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    if not isinstance(table, dict):
        raise _fail(path, where, "not an object")
    shapes, rows = table.get("shapes"), table.get("rows")
    if not isinstance(shapes, list) or not isinstance(rows, list):
        raise _fail(path, where, "needs a list of shapes and a list of rows")
    for i, shape in enumerate(shapes):
        if not isinstance(shape, list) or not all(isinstance(f, str) for f in shape):
            raise _fail(path, f"{where}.shapes[{i}]", "not a list of field names")
    try:
        # The fast path: one comprehension, checked as a whole afterwards.
        records = [(row[1], dict(zip(shapes[row[0]], row[2:], strict=True))) for row in rows]
        valid = all(type(row[0]) is int and row[0] >= 0 for row in rows) and all(
            type(key) is str for key, _ in records
        )
    except (TypeError, IndexError, KeyError, ValueError):
        valid = False
    if valid:
        return records
    for i, row in enumerate(rows):  # find the first bad row, to name it
        if (
            not isinstance(row, list)
            or len(row) < 2
            or type(row[0]) is not int
            or not 0 <= row[0] < len(shapes)
            or len(row) != len(shapes[row[0]]) + 2
            or not isinstance(row[1], str)
        ):
            raise _fail(path, f"{where}.rows[{i}]", "not a [shape, key, values...] row")
    raise AssertionError("unreachable: a row failed the fast path but passes every check")


def _encode_aligned(values: list[Any], wrapped: bool) -> dict[str, Any]:
    """Section values as rows in node order: ``[shape, value, ...]``, or null for none."""
    shapes: dict[tuple[str, ...], int] = {}
    rows: list[list[Any] | None] = []
    for value in values:
        if value is None:
            rows.append(None)
            continue
        record = {"value": value} if wrapped else value
        fields = tuple(record)
        index = shapes.get(fields)
        if index is None:
            index = shapes[fields] = len(shapes)
        rows.append([index, *record.values()])
    return {"shapes": [list(f) for f in shapes], "rows": rows, "wrapped": wrapped}


def _decode_aligned(table: Any, count: int, path: Any, where: str) -> list[Any]:
    if not isinstance(table, dict):
        raise _fail(path, where, "not an object")
    shapes, rows = table.get("shapes"), table.get("rows")
    if not isinstance(shapes, list) or not all(
        isinstance(s, list) and all(isinstance(f, str) for f in s) for s in shapes
    ):
        raise _fail(path, f"{where}.shapes", "not a list of lists of field names")
    if not isinstance(rows, list) or len(rows) != count:
        raise _fail(path, f"{where}.rows", f"needs one row per node ({count})")
    try:
        values = [
            None if row is None else dict(zip(shapes[row[0]], row[1:], strict=True)) for row in rows
        ]
        valid = all(row is None or (type(row[0]) is int and row[0] >= 0) for row in rows)
    except (TypeError, IndexError, KeyError, ValueError):
        valid = False
    if not valid:
        for i, row in enumerate(rows):
            if row is not None and (
                not isinstance(row, list)
                or not row
                or type(row[0]) is not int
                or not 0 <= row[0] < len(shapes)
                or len(row) != len(shapes[row[0]]) + 1
            ):
                raise _fail(path, f"{where}.rows[{i}]", "not null or a [shape, values...] row")
    if table.get("wrapped"):
        return [None if v is None else v.get("value") for v in values]
    return values


def to_document(G: nx.DiGraph) -> dict[str, Any]:
    """The bundle document (plain JSON data) for ``G``."""
    names: dict[tuple[Any, ...], int] = {}
    name_list: list[dict[str, Any]] = []
    # Per-node section values in node order, None where a node has none.
    sections: dict[str, list[Any]] = {attr: [] for attr in NODE_SECTIONS}

    def nodes() -> Iterator[tuple[str, dict[str, Any]]]:
        for key, data in G.nodes(data=True):
            record = dict(data)
            for attr, values in sections.items():
                values.append(record.pop(attr, None))
            if isinstance(record.get("name"), str):
                ident = tuple(record.get(f) for f in _NAME_FIELDS)
                ref = names.get(ident)
                if ref is None:
                    ref = names[ident] = len(name_list)
                    name_list.append({f: record[f] for f in _NAME_FIELDS if f in record})
                for f in _NAME_FIELDS:
                    record.pop(f, None)
                record[NAME_REF] = ref
            yield key, record

    doc: dict[str, Any] = {
        "format": FORMAT_NAME,
        "schema_version": SCHEMA_VERSION,
        "writer": {"graphscope": __version__},
        "metadata": {
            **{k: v for k, v in G.graph.items() if k not in GRAPH_SECTIONS},
            "schema_version": SCHEMA_VERSION,
        },
        "nodes": _encode_records(nodes()),
        "kernel_names": name_list,
        "edges": [[a, b, d] if d else [a, b] for a, b, d in G.edges(data=True)],
    }
    for attr, section in NODE_SECTIONS.items():
        values = sections[attr]
        if any(v is not None for v in values):
            # Values that are not objects are stored wrapped as {"value": v}, and said so.
            wrapped = any(not isinstance(v, dict) for v in values if v is not None)
            doc.setdefault(section, {})["nodes"] = _encode_aligned(values, wrapped)
    for attr, (section, entry) in GRAPH_SECTIONS.items():
        if attr in G.graph:
            doc.setdefault(section, {})[entry] = G.graph[attr]
    return doc


def _fail(path: Any, where: str, message: str) -> BundleFormatError:
    return BundleFormatError(path, f"{where}: {message}")


def _foreign_schema(doc: dict[str, Any]) -> str:
    keys = set(doc)
    if {"nodes", "directed"} <= keys and ("links" in keys or "edges" in keys):
        return (
            "this is networkx node-link JSON, not a graphscope bundle; read it with "
            "networkx.node_link_graph"
        )
    if "traceEvents" in keys:
        return "this is a Chrome/Perfetto trace, not a graphscope bundle"
    shown = ", ".join(sorted(keys)[:8]) or "none"
    return (
        f'JSON of another schema: not a graphscope bundle (no "format": "{FORMAT_NAME}";'
        f" top-level keys: {shown})"
    )


def _check_version(doc: dict[str, Any], path: Any) -> None:
    version = doc.get("schema_version")
    if type(version) is not int:
        raise _fail(path, "schema_version", f"expected an integer, found {json.dumps(version)}")
    if version > SCHEMA_VERSION:
        writer = doc.get("writer")
        by = writer.get("graphscope") if isinstance(writer, dict) else None
        raise BundleFormatError(
            path,
            f"bundle schema version {version} (written by graphscope {by or 'newer'}); "
            f"graphscope {__version__} reads schema versions up to {SCHEMA_VERSION}: "
            "upgrade with pip install -U graphscope",
        )
    if version < 1:
        raise BundleFormatError(path, f"schema_version {version} is not a valid version")


def _node_entries(doc: dict[str, Any], path: Any) -> dict[str, dict[str, Any]]:
    names = doc.get("kernel_names")
    if not isinstance(names, list) or not all(
        isinstance(v, dict) and isinstance(v.get("name"), str) for v in names
    ):
        raise _fail(path, "kernel_names", 'not a list of {"name": ...} objects')
    nodes: dict[str, dict[str, Any]] = {}
    for i, (key, entry) in enumerate(_decode_records(doc.get("nodes"), path, "nodes")):
        where = f"nodes.rows[{i}]"
        if NAME_REF in entry:
            ref = entry.pop(NAME_REF)
            if type(ref) is not int or not 0 <= ref < len(names):
                raise _fail(path, where, f"kernel name index {ref!r} is out of range")
            entry.update(names[ref])
        if key in nodes:
            raise _fail(path, where, f"duplicate node key {key!r}")
        if entry.get("type") not in NODE_TYPES:
            shown = json.dumps(entry.get("type"))[:40]
            raise _fail(path, f"{where}.type", f"{shown} is not a CUDA graph node type")
        if type(entry.get("graph_id")) is not int or type(entry.get("local_id")) is not int:
            raise _fail(path, where, "graph_id and local_id must be integers")
        nodes[key] = entry
    for key, entry in nodes.items():
        parent = entry.get("parent")
        if parent is not None and parent not in nodes:
            raise _fail(path, f"node {key}", f"parent {json.dumps(parent)[:60]} is not a node")
    return nodes


def from_document(doc: Any, path: Any = None) -> nx.DiGraph:
    """Check a parsed bundle document and build its DiGraph; raise BundleFormatError."""
    if not isinstance(doc, dict):
        raise BundleFormatError(
            path,
            f"JSON of another schema: the top level is a {type(doc).__name__}, "
            "a graphscope bundle is an object",
        )
    if doc.get("format") != FORMAT_NAME:
        raise BundleFormatError(path, _foreign_schema(doc))
    _check_version(doc, path)
    if not isinstance(doc.get("metadata"), dict):
        raise _fail(path, "metadata", "missing or not an object")
    if not isinstance(doc.get("edges"), list):
        raise _fail(path, "edges", "missing or not a list")
    nodes = _node_entries(doc, path)
    keys = list(nodes)
    for attr, section in NODE_SECTIONS.items():
        body = doc.get(section)
        if body is None:
            continue
        if not isinstance(body, dict):
            raise _fail(path, section, "not an object")
        if "nodes" not in body:
            continue
        values = _decode_aligned(body["nodes"], len(keys), path, f"{section}.nodes")
        for key, value in zip(keys, values, strict=True):
            if value is not None:
                nodes[key][attr] = value
    edges = doc["edges"]
    try:
        valid = all(
            type(e) is list
            and (len(e) == 2 or (len(e) == 3 and type(e[2]) is dict))
            and type(e[0]) is str
            and type(e[1]) is str
            and e[0] in nodes
            and e[1] in nodes
            for e in edges
        )
    except TypeError:  # an unhashable endpoint
        valid = False
    if not valid:
        _fail_on_edges(edges, nodes, path)
    G = nx.DiGraph()
    G.graph.update(doc["metadata"])
    # add_nodes_from copies every attribute dict; these are fresh, so they are handed to
    # networkx's node store as they are (0.3 s of the 2 s budget for 100,000 nodes).
    G._node.update(nodes)
    for key in nodes:
        G._succ[key] = {}
        G._pred[key] = {}
    G.add_edges_from(tuple(e) for e in edges)
    for attr, (section, entry_name) in GRAPH_SECTIONS.items():
        body = doc.get(section)
        if isinstance(body, dict) and entry_name in body:
            G.graph[attr] = body[entry_name]
    return G


def _fail_on_edges(edges: list[Any], nodes: dict[str, Any], path: Any) -> None:
    for i, edge in enumerate(edges):
        if (
            not isinstance(edge, list)
            or len(edge) not in (2, 3)
            or (len(edge) == 3 and not isinstance(edge[2], dict))
        ):
            raise _fail(path, f"edges[{i}]", "not a [from, to] or [from, to, {attributes}] list")
        for end, name in ((edge[0], "from"), (edge[1], "to")):
            if not isinstance(end, str) or end not in nodes:
                shown = json.dumps(end)[:60]
                raise _fail(path, f"edges[{i}].{name}", f"{shown} is not a node key")


def dumps(G: nx.DiGraph) -> str:
    """``G`` as bundle JSON text."""
    try:
        return json.dumps(to_document(G), separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise BundleFormatError(None, f"graph cannot be saved as JSON: {exc}") from None
