"""Read and write graphscope bundles: the graph plus timings, eager trace and attribution.

The schema is documented in docs/FORMAT.md. In memory everything lives on the DiGraph: per-node
sections as node attributes (``replay``, ``eager``, ``attribution``), the rest in ``G.graph``.
On disk the per-node sections are stored apart from the graph, keyed by node, so a bundle with
no timing is just a graph.
"""

from __future__ import annotations

import json
from typing import Any

import networkx as nx

from . import __version__
from .errors import BundleFormatError
from .model import NODE_TYPES, SCHEMA_VERSION

FORMAT_NAME = "graphscope-bundle"

#: Node attributes stored per node in a section of their own, with the section's name.
NODE_SECTIONS = {
    "replay": ("timing", "nodes"),
    "eager": ("eager", "nodes"),
    "attribution": ("attribution", None),
}
#: Graph attributes stored in a section of their own.
GRAPH_SECTIONS = {
    "timing": ("timing", "summary"),
    "replays": ("timing", "replays"),
    "eager_trace": ("eager", "trace"),
}


def _section(doc: dict[str, Any], name: str, sub: str | None) -> Any:
    section = doc.get(name)
    if section is None:
        return None
    return section.get(sub) if sub is not None else section


def to_document(G: nx.DiGraph) -> dict[str, Any]:
    """The bundle document (plain JSON data) for ``G``."""
    metadata = {k: v for k, v in G.graph.items() if k not in GRAPH_SECTIONS}
    metadata["schema_version"] = SCHEMA_VERSION
    doc: dict[str, Any] = {
        "format": FORMAT_NAME,
        "schema_version": SCHEMA_VERSION,
        "writer": {"graphscope": __version__},
        "metadata": metadata,
        "nodes": [],
        "edges": [],
        "timing": None,
        "eager": None,
        "attribution": None,
    }

    def put(name: str, sub: str | None, key: str | None, value: Any) -> None:
        section = doc[name] if doc[name] is not None else {}
        doc[name] = section
        if sub is None:
            section[key] = value
        elif key is None:
            section[sub] = value
        else:
            section.setdefault(sub, {})[key] = value

    nodes = doc["nodes"]
    for key, data in G.nodes(data=True):
        entry = {"key": key}
        for attr, value in data.items():
            if attr in NODE_SECTIONS:
                put(*NODE_SECTIONS[attr], key, value)
            else:
                entry[attr] = value
        nodes.append(entry)
    doc["edges"] = [{"from": a, "to": b, **d} for a, b, d in G.edges(data=True)]
    for attr, (name, sub) in GRAPH_SECTIONS.items():
        if attr in G.graph:
            put(name, sub, None, G.graph[attr])
    return doc


def _fail(path: Any, where: str, message: str) -> BundleFormatError:
    return BundleFormatError(path, f"{where}: {message}")


def _require_int(path: Any, where: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(path, where, f"expected an integer, found {json.dumps(value)[:40]}")
    return value


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


def from_document(doc: Any, path: Any = None) -> nx.DiGraph:
    """Check a parsed bundle document and build its DiGraph; raise BundleFormatError."""
    if not isinstance(doc, dict):
        raise BundleFormatError(
            path,
            f"JSON of another schema: the top level is a "
            f"{type(doc).__name__}, a graphscope bundle is an object",
        )
    if doc.get("format") != FORMAT_NAME:
        raise BundleFormatError(path, _foreign_schema(doc))
    version = _require_int(path, "schema_version", doc.get("schema_version"))
    if version > SCHEMA_VERSION:
        writer = (
            doc.get("writer", {}).get("graphscope", "a newer graphscope")
            if isinstance(doc.get("writer"), dict)
            else "a newer graphscope"
        )
        raise BundleFormatError(
            path,
            f"bundle schema version {version} (written by graphscope "
            f"{writer}); graphscope {__version__} reads schema versions up "
            f"to {SCHEMA_VERSION}: upgrade with pip install -U graphscope",
        )
    if version < 1:
        raise BundleFormatError(path, f"schema_version {version} is not a valid version")
    for name in ("metadata",):
        if not isinstance(doc.get(name), dict):
            raise _fail(path, name, "missing or not an object")
    for name in ("nodes", "edges"):
        if not isinstance(doc.get(name), list):
            raise _fail(path, name, "missing or not a list")
    G = nx.DiGraph()
    G.graph.update(doc["metadata"])
    for i, entry in enumerate(doc["nodes"]):
        where = f"nodes[{i}]"
        if not isinstance(entry, dict):
            raise _fail(path, where, "not an object")
        key = entry.get("key")
        if not isinstance(key, str) or not key:
            raise _fail(path, f"{where}.key", "missing or not a string")
        if key in G:
            raise _fail(path, f"{where}.key", f"duplicate node key {key!r}")
        if entry.get("type") not in NODE_TYPES:
            raise _fail(
                path,
                f"{where}.type",
                f"{json.dumps(entry.get('type'))[:40]} is not a CUDA graph node type",
            )
        _require_int(path, f"{where}.graph_id", entry.get("graph_id"))
        _require_int(path, f"{where}.local_id", entry.get("local_id"))
        G.add_node(key, **{k: v for k, v in entry.items() if k != "key"})
    for key, data in G.nodes(data=True):
        parent = data.get("parent")
        if parent is not None and parent not in G:
            raise _fail(path, f"node {key}", f"parent {json.dumps(parent)[:60]} is not a node")
    for i, entry in enumerate(doc["edges"]):
        where = f"edges[{i}]"
        if not isinstance(entry, dict):
            raise _fail(path, where, "not an object")
        a, b = entry.get("from"), entry.get("to")
        for end, name in ((a, "from"), (b, "to")):
            if not isinstance(end, str) or end not in G:
                raise _fail(path, f"{where}.{name}", f"{json.dumps(end)[:60]} is not a node key")
        G.add_edge(a, b, **{k: v for k, v in entry.items() if k not in ("from", "to")})
    for attr, (name, sub) in NODE_SECTIONS.items():
        if doc.get(name) is not None and not isinstance(doc[name], dict):
            raise _fail(path, name, "not an object")
        per_node = _section(doc, name, sub) if doc.get(name) is not None else None
        if per_node is None:
            continue
        if not isinstance(per_node, dict):
            raise _fail(path, f"{name}.{sub}", "not an object")
        for key, value in per_node.items():
            if key not in G:
                raise _fail(path, f"{name}{'.' + sub if sub else ''}", f"{key!r} is not a node key")
            G.nodes[key][attr] = value
    for attr, (name, sub) in GRAPH_SECTIONS.items():
        section = doc.get(name)
        if isinstance(section, dict) and sub in section:
            G.graph[attr] = section[sub]
    return G


def dumps(G: nx.DiGraph) -> str:
    """``G`` as bundle JSON text."""
    try:
        return json.dumps(to_document(G), separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise BundleFormatError(None, f"graph cannot be saved as JSON: {exc}") from None
