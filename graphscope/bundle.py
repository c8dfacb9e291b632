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

import heapq
import os
from collections.abc import Set as AbstractSet
from typing import Any, cast

import networkx as nx

from . import pace, sizes
from .contract import (
    NODE,
    NODE_PART,
    NODE_RULE,
    Record,
    check_graph,
    claimed_graphs,
    shaped_rows_ok,
    show,
)
from .errors import BundleFormatError, InputError
from .model import SCHEMA_VERSION
from .pace import paced
from .recording import check_graph_entry
from .version import __version__

FORMAT_NAME = "graphscope-bundle"

#: Node attributes stored in a section of their own: attribute -> section name.
NODE_SECTIONS = {"replay": "timing", "eager": "eager", "attribution": "attribution"}
#: Graph attributes stored in a section of their own: attribute -> (section, entry).
GRAPH_SECTIONS = {
    "timing": ("timing", "summary"),
    "replays": ("timing", "replays"),
    "eager_trace": ("eager", "trace"),
    "eager_summary": ("eager", "summary"),
    "parity": ("eager", "parity"),
    "recording": ("recording", "graph"),  # graphscope record: the graph's life in its program
}
#: In a node shape, this field holds an index into ``kernel_names`` instead of a name.
NAME_REF = "@name"
#: The field that holds a node's key in the node table.
KEY = "@key"
_NAME_FIELDS = ("name", "demangled", "short_name")


_SCALARS = (str, int, float, bool, type(None))


def _shape_key(record: dict[str, Any], shared: AbstractSet[int]) -> tuple[Any, ...]:
    """The fields of a record, and which of the ``shared`` strings it holds, field by field:
    records that hold one of them in the same field get a shape of their own."""
    if not shared:
        return tuple(record)
    held = tuple((f, id(v)) for f, v in record.items() if type(v) is str and id(v) in shared)
    return (*record, *held) if held else tuple(record)


def _encode_table(
    records: list[dict[str, Any] | None], shared: AbstractSet[int] = frozenset()
) -> dict[str, Any]:
    """Records as a table: ``rows[i]`` is ``[shape, value, ...]`` or null for no record.

    ``shapes[shape]`` is ``{"fields": [...], "constants": {...}}``: the names of the row's
    values, and the fields whose (scalar) value is the same in every record of that shape,
    stored once. Only scalars are shared, so no two nodes end up holding one mutable object.
    ``shared``: ids of long strings that many records hold (a bundle's constant, read back);
    records holding one in a field get a shape of their own, so it is stored once, as that
    shape's constant, even where other records of their fields hold other values.
    """
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for record in records:
        if record is not None:
            groups.setdefault(_shape_key(record, shared), []).append(record)
    shapes: list[dict[str, Any]] = []
    index_of: dict[tuple[Any, ...], tuple[int, list[str]]] = {}
    for index, (key, members) in enumerate(groups.items()):
        fields = tuple(members[0])
        constants: dict[str, Any] = {}
        if len(members) > 1:
            for field in fields:
                first = members[0][field]
                kind = type(first)
                if kind in _SCALARS and all(
                    type(m[field]) is kind and m[field] == first for m in members
                ):
                    constants[field] = first
        varying = [f for f in fields if f not in constants]
        shapes.append({"fields": varying, "constants": constants})
        index_of[key] = (index, varying)
    rows: list[list[Any] | None] = []
    for record in records:
        if record is None:
            rows.append(None)
            continue
        index, varying = index_of[_shape_key(record, shared)]
        rows.append([index, *[record[f] for f in varying]])
    return {"shapes": shapes, "rows": rows}


def _decode_table(
    table: Any, path: Any, where: str, count: int | None = None
) -> list[dict[str, Any] | None]:
    """The records of a table written by ``_encode_table``; null rows only when ``count``."""
    if not isinstance(table, dict):
        raise _fail(path, where, "not an object")
    shapes, rows = table.get("shapes"), table.get("rows")
    if not isinstance(shapes, list) or not isinstance(rows, list):
        raise _fail(path, where, "needs a list of shapes and a list of rows")
    if count is not None and len(rows) != count:
        raise _fail(path, f"{where}.rows", f"needs one row per node ({count})")
    fields: list[list[str]] = []
    constants: list[dict[str, Any]] = []
    for i, shape in enumerate(shapes):
        if (
            not isinstance(shape, dict)
            or not isinstance(shape.get("fields"), list)
            or not all(isinstance(f, str) for f in shape["fields"])
            or not isinstance(shape.get("constants"), dict)
            or not all(isinstance(v, _SCALARS) for v in shape["constants"].values())
        ):
            raise _fail(path, f"{where}.shapes[{i}]", "not {fields: [...], constants: {...}}")
        fields.append(shape["fields"])
        constants.append(shape["constants"])
    # Per shape: its fields, its constants (None when it has none) and a row's length. The
    # loop below is most of a 100,000-node load's time outside the JSON parser: the common
    # case (a well-formed row) is tested once, and a shape without constants builds its
    # record in one call (measured: 0.87 s for the four tables of 100,014 nodes before, see
    # benchmarks/bench_bundle.py).
    kinds = [(f, c or None, len(f) + 1) for f, c in zip(fields, constants, strict=True)]
    n = len(kinds)
    records: list[dict[str, Any] | None] = []
    append = records.append
    for i, row in enumerate(rows):
        if type(row) is list and row:
            shape = row[0]
            if type(shape) is int and 0 <= shape < n:
                names, fixed, width = kinds[shape]
                if len(row) == width:
                    if fixed is None:
                        append(dict(zip(names, row[1:], strict=False)))  # its length is checked
                    else:
                        record = fixed.copy()
                        record.update(zip(names, row[1:], strict=False))
                        append(record)
                    continue
        elif row is None and count is not None:
            append(None)
            continue
        raise _fail(path, f"{where}.rows[{i}]", "not a [shape, values...] row")
    return records


def to_document(G: nx.DiGraph, shared: AbstractSet[int] = frozenset()) -> dict[str, Any]:
    """The bundle document (plain JSON data) for ``G``; ``shared``: see ``_encode_table``."""
    names: dict[tuple[Any, ...], int] = {}
    name_list: list[dict[str, Any]] = []
    # Per-node section values in node order, None where a node has none.
    sections: dict[str, list[Any]] = {attr: [] for attr in NODE_SECTIONS}
    records: list[dict[str, Any] | None] = []
    for key, data in paced(G.nodes(data=True)):
        record = {KEY: key, **data}
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
        records.append(record)
    doc: dict[str, Any] = {
        "format": FORMAT_NAME,
        "schema_version": SCHEMA_VERSION,
        "writer": {"graphscope": __version__},
        "metadata": {
            **{k: v for k, v in G.graph.items() if k not in GRAPH_SECTIONS},
            "schema_version": SCHEMA_VERSION,
        },
        "nodes": _encode_table(records, shared),
        "kernel_names": name_list,
        "edges": [[a, b, d] if d else [a, b] for a, b, d in G.edges(data=True)],
    }
    for attr, section in NODE_SECTIONS.items():
        values = sections[attr]
        if any(v is not None for v in values):
            # Values that are not objects are stored wrapped as {"value": v}, and said so.
            wrapped = any(not isinstance(v, dict) for v in values if v is not None)
            if wrapped:
                values = [None if v is None else {"value": v} for v in values]
            table = _encode_table(values, shared)
            doc.setdefault(section, {})["nodes"] = {**table, "wrapped": wrapped}
    for attr, (section, entry) in GRAPH_SECTIONS.items():
        if attr in G.graph:
            doc.setdefault(section, {})[entry] = G.graph[attr]
    return doc


def _fail(path: Any, where: str, message: str) -> BundleFormatError:
    return BundleFormatError(path, f"{where}: {message}")


def _foreign_schema(doc: dict[str, Any]) -> str:
    keys = doc.keys()
    if {"nodes", "directed"} <= keys and ("links" in keys or "edges" in keys):
        return (
            "this is networkx node-link JSON, not a graphscope bundle; read it with "
            "networkx.node_link_graph"
        )
    if "traceEvents" in keys:
        return "this is a Chrome/Perfetto trace, not a graphscope bundle"
    # The first few in order, not all of them sorted: an object can hold millions of keys.
    shown = ", ".join(heapq.nsmallest(8, keys)) or "none"
    return (
        f'JSON of another schema: not a graphscope bundle (no "format": "{FORMAT_NAME}";'
        f" top-level keys: {shown})"
    )


def _default_parents(nodes: dict[str, dict[str, Any]]) -> None:
    """A node without ``parent`` gets the GRAPH or CONDITIONAL node that owns its graph, or
    None, as the DOT reader gives it (the contract then checks what it holds)."""
    if all("parent" in d for d in nodes.values()):
        return
    owners: dict[Any, str] = {}
    for key, d in nodes.items():
        for gid in claimed_graphs(d):
            if isinstance(gid, int):
                owners.setdefault(gid, key)
    for d in nodes.values():
        if "parent" not in d:
            gid = d.get("graph_id")
            d["parent"] = owners.get(gid) if isinstance(gid, int) else None


def _check_version(doc: dict[str, Any], path: Any) -> None:
    version = doc.get("schema_version")
    if type(version) is not int:
        raise _fail(path, "schema_version", f"expected an integer, found {show(version)}")
    if version > SCHEMA_VERSION:
        writer = doc.get("writer")
        by = writer.get("graphscope") if isinstance(writer, dict) else None
        # The writer's version as a file gives it: shown on one line, quoted where it is not a
        # plain version number.
        if by and not (isinstance(by, str) and by.replace(".", "").isalnum() and len(by) < 40):
            by = show(by)
        reader = f"graphscope {by} or newer" if by else "a newer graphscope"
        raise BundleFormatError(
            path,
            f"bundle schema version {show(version)}, written by graphscope "
            f"{by or '(unknown)'}: read it with {reader} (pip install -U graphscope); "
            f"graphscope {__version__} reads schema versions up to {SCHEMA_VERSION}",
        )
    if version < 1:
        raise BundleFormatError(path, f"schema_version {version} is not a valid version")


def _node_entries(doc: dict[str, Any], path: Any) -> dict[str, dict[str, Any]]:
    names = doc.get("kernel_names")
    if not isinstance(names, list) or not all(
        isinstance(v, dict) and isinstance(v.get("name"), str) for v in names
    ):
        raise _fail(path, "kernel_names", 'not a list of {"name": ...} objects')
    # Without a count, the table has no null rows.
    records = cast("list[dict[str, Any]]", _decode_table(doc.get("nodes"), path, "nodes"))
    try:
        nodes: dict[str, dict[str, Any]] = {record.pop(KEY): record for record in records}
    except KeyError:
        raise _fail(path, "nodes", f"a node shape has no {KEY!r} field") from None
    except TypeError:  # an unhashable key
        raise _fail(path, "nodes", "a node key is not a string") from None
    if len(nodes) != len(records):
        raise _fail(path, "nodes", f"{len(records) - len(nodes)} node keys are used twice")
    # The node contract (types, ids, parents) is checked on the graph; here only what the
    # table's encoding adds: where each node's kernel name is.
    refs = [e[NAME_REF] for e in nodes.values() if NAME_REF in e]
    if refs and not (set(map(type, refs)) <= {int} and min(refs) >= 0 and max(refs) < len(names)):
        for key, entry in nodes.items():
            ref = entry.get(NAME_REF, 0)
            if type(ref) is not int or not 0 <= ref < len(names):
                raise _fail(path, f"node {key}", f"kernel name index {show(ref)} is out of range")
    for entry in nodes.values():
        if NAME_REF in entry:
            entry.update(names[entry.pop(NAME_REF)])
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
    # The contract judged on the tables' columns, before records hide them; where that does
    # not settle it, the graph's nodes are checked one by one instead (check_graph).
    fields_checked = NODE_PART.column_ok(doc["kernel_names"]) and _table_ok(
        doc["nodes"], NODE_RULE, (KEY, NAME_REF)
    )
    for attr, section in NODE_SECTIONS.items():
        body = doc.get(section)
        if body is None:
            continue
        if not isinstance(body, dict):
            raise _fail(path, section, "not an object")
        if "nodes" not in body:
            continue
        table = body["nodes"]
        values: list[Any] = _decode_table(table, path, f"{section}.nodes", count=len(keys))
        if isinstance(table, dict) and table.get("wrapped"):
            values = [None if v is None else v.get("value") for v in values]
            fields_checked = False
        else:
            fields_checked = fields_checked and _table_ok(table, _SECTION_ROWS[attr])
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
    # The writer stamps the metadata's schema version with the document's; a bundle without
    # it, or with another there, reads as the document's (checked above), so that a graph saved
    # and read again equals the one read (as the DOT reader does).
    G.graph["schema_version"] = doc["schema_version"]
    # add_nodes_from and add_edges_from copy every attribute dict and check every item; these
    # are fresh and checked above, so they go into networkx's stores as they are (0.5 s of
    # the 2 s budget for 100,000 nodes; the round-trip tests guard the layout).
    G._node.update(nodes)
    succ, pred = G._succ, G._pred
    succ.update({key: {} for key in nodes})
    pred.update({key: {} for key in nodes})
    for edge in edges:
        data = edge[2] if len(edge) == 3 else {}
        succ[edge[0]][edge[1]] = data
        pred[edge[1]][edge[0]] = data
    for attr, (section, entry_name) in GRAPH_SECTIONS.items():
        body = doc.get(section)
        if isinstance(body, dict) and entry_name in body:
            if attr == "recording":
                try:
                    check_graph_entry(body[entry_name], path, f"{section}.{entry_name}")
                except InputError as exc:
                    raise BundleFormatError(path, exc.message) from None
            G.graph[attr] = body[entry_name]
    _default_parents(nodes)
    if "root_graph_ids" not in G.graph:  # as the DOT reader gives them: graphs no node owns
        roots = {d.get("graph_id") for d in nodes.values() if d.get("parent") is None}
        G.graph["root_graph_ids"] = sorted(r for r in roots if isinstance(r, int))
    check_graph(G, path, BundleFormatError, fields_checked=fields_checked)
    return G


# A section's rows are the values of one node attribute each.
_SECTION_ROWS = {attr: cast(Record, NODE[attr]) for attr in NODE_SECTIONS}


def _table_ok(table: dict[str, Any], rule: Record, skip: tuple[str, ...] = ()) -> bool:
    """Whether a table ``_decode_table`` read holds records that pass ``rule``, by column."""
    shapes = table["shapes"]
    fields = [shape["fields"] for shape in shapes]
    constants = [shape["constants"] for shape in shapes]
    return shaped_rows_ok(fields, constants, table["rows"], rule, skip)


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
                raise _fail(path, f"edges[{i}].{name}", f"{show(end)} is not a node key")


def dumps(G: nx.DiGraph) -> str:
    """``G`` as bundle JSON text."""
    return encode(to_document(G))


def encode(doc: dict[str, Any]) -> str:
    """A bundle document as JSON text."""
    try:
        return pace.dumps(doc)
    except (TypeError, ValueError) as exc:
        raise BundleFormatError(None, f"graph cannot be saved as JSON: {exc}") from None


def bounded_document(G: nx.DiGraph, path: str | os.PathLike[str]) -> dict[str, Any]:
    """The bundle document of ``G`` to write to ``path``, its text measured before it is built.

    A long string that many nodes hold in one field (a bundle's constant, read back) is
    stored once; a value repeated in another way is written each time, and past
    ``sizes.LIMIT`` the graph is refused in one line naming ``path``.
    """
    doc = to_document(G)
    estimate = sizes.measure(path, lambda e: e.add(doc))
    if estimate.repeated:
        doc = to_document(G, estimate.repeated)
        estimate = sizes.measure(path, lambda e: e.add(doc))
    estimate.refuse_past_limit(
        path,
        "the bundle's JSON text",
        "a bundle stores a value once only where many nodes hold it in the same field; leave "
        "the large repeated values out of the graph",
    )
    return doc
