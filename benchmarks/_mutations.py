"""The mutations of the fuzz campaign (benchmarks/fuzz.py), by what they know of a file.

``json_mutation`` changes a parsed JSON document's tree; ``bundle_mutation`` a bundle's node
table, edges and sections, knowing what they mean; ``graph_mutation`` a loaded graph in
memory, mostly within the contract; ``dot_mutation`` a DOT dump's label cells, numbers, ids,
edges, quotes, braces and lines; ``byte_mutation`` and ``gzip_mutation`` any file. Each takes
a ``random.Random`` (so a campaign seed makes the same inputs again) and says what it did.
"""

from __future__ import annotations

import copy
import gzip
import itertools
import json
import math
import os
import random
import re
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

#: Expansion of the gzip bomb, a file of about 2 MB; past the 1 GiB graphscope reads.
BOMB_MIB = 2048
#: ``dot_mutation`` repeats a body to about this size (rarely), and not a larger file's.
BLOAT_BYTES = 2 << 20

JSONPath = tuple[Any, ...]
Rng = random.Random


# ---------------------------------------------------------------------------------------------
# Values a mutation puts where another was

# Placeholders json.dumps can write, replaced in its text by what it cannot: nesting deeper
# than its recursion allows, and integers longer than Python converts (4,300 digits).
_DEEP = "\x00gs-fuzz-deep"
_BIGINT = "\x00gs-fuzz-bigint"


def _generic(rng: Rng) -> Any:
    long = rng.choice(["a", "graph_1_node_1|", "{", "é", "\\", "model.layers."])
    return rng.choice(
        [None, True, False, 0, -1, 2**64 + 1, "", "x", [], {}, [None], [1, "a"], {"a": 1},
         {"value": 1}, math.nan, math.inf, -math.inf, 1e308, _DEEP, _BIGINT,
         long * rng.choice([300, 5_000, 200_000])]
    )  # fmt: skip


def _copied(value: Any) -> Any:
    """A deep copy; a value nested past the recursion limit (an earlier mutation) is shared,
    which is the same once the document is written out."""
    try:
        return copy.deepcopy(value)
    except RecursionError:
        return value


def _small(value: Any, limit: int = 10_000) -> bool:
    """Whether a JSON value is written in fewer than ``limit`` characters."""
    try:
        return len(json.dumps(value)) < limit
    except (RecursionError, ValueError, TypeError):
        return False


def _plus_half(x: float) -> float:
    """``x + 0.5`` as a float; an int past float's range (an earlier mutation) stays itself."""
    try:
        return float(x) + 0.5
    except OverflowError:
        return x


def _number_variant(x: float, rng: Rng) -> Any:
    return rng.choice(
        [0, -1, -x, x + 1, 2**31, 2**32 + 1, 2**63, 2**64 + 1, -(2**63) - 1, 10**30, 1e308,
         -1e308, 5e-324, math.nan, math.inf, -math.inf, _plus_half(x), str(x), True, _BIGINT]
    )  # fmt: skip


def _string_variant(s: str, rng: Rng) -> Any:
    return rng.choice(
        # A prefix repeated: a string lengthened by an earlier mutation must not grow to GBs.
        ["", (s[:64] or "x") * rng.choice([50, 5_000]), s + "\x00", "../" + s, s.upper(), s[:1],
         s + "\n" + s, "graph_1_node_99999", "graph_0_node_0", "KERNEL", "1", "nan", "a..b.",
         "model.layers.99999999999999999999999.mlp", "<script>",
         "\ud800"]  # a lone surrogate: valid in JSON text, not encodable as UTF-8
    )  # fmt: skip


def _variant(old: Any, rng: Rng) -> Any:
    """A value to put where ``old`` was: one of its own kind gone wrong, or of another kind."""
    if isinstance(old, bool):
        return rng.choice([not old, 1, "true", None])
    if isinstance(old, (int, float)) and rng.random() < 0.65:
        return _number_variant(old, rng)
    if isinstance(old, str) and rng.random() < 0.5:
        return _string_variant(old, rng)
    if isinstance(old, list) and old and rng.random() < 0.3:
        return rng.choice([old[:1], old * 2, [old], old[::-1], old + [old[0]] * 3])
    return _generic(rng)


def dumps_mutant(doc: Any, rng: Rng) -> bytes:
    """JSON text of a mutated document with its placeholders filled; NaN and Infinity as
    Python writes them (its reader takes them back), lone surrogates kept."""
    ascii_only = rng.random() < 0.5
    text = json.dumps(doc, ensure_ascii=ascii_only, separators=(",", ":"))
    if _DEEP[1:] in text:
        depth = rng.choice([60, 300, 900, 3_000, 200_000])
        text = text.replace(json.dumps(_DEEP, ensure_ascii=ascii_only), "[" * depth + "]" * depth)
    if _BIGINT[1:] in text:
        digits = "9" * rng.choice([25, 400, 5_000])
        text = text.replace(json.dumps(_BIGINT, ensure_ascii=ascii_only), digits)
    return text.encode("utf-8", "surrogatepass")


def show(value: Any) -> str:
    """A value for a one-line account of a mutation."""
    if value == _DEEP:
        return "deep nesting"
    if value == _BIGINT:
        return "a very long integer"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------------------------------------
# JSON tree mutations


def _children(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return list(node)
    return list(range(len(node))) if isinstance(node, list) else []


def _all_paths(doc: Any, limit: int = 300_000, depth: int = 200) -> list[JSONPath]:
    """Paths to the values of ``doc``, at most ``limit`` of them and ``depth`` deep: each path
    is a tuple, so a nest 100,000 deep (an earlier mutation) would hold 5e9 keys."""
    out: list[JSONPath] = []
    stack: list[tuple[JSONPath, Any]] = [((), doc)]
    while stack and len(out) < limit:
        path, node = stack.pop()
        out.append(path)
        if len(path) < depth:
            stack += [((*path, key), node[key]) for key in _children(node)]
    return out


def pick_path(doc: Any, rng: Rng) -> JSONPath:
    """Half the time any value at all (mostly a node's), half a walk down from the root
    (headers and sections as often as rows)."""
    if rng.random() < 0.5:
        return rng.choice(_all_paths(doc))
    path: JSONPath = ()
    while _children(doc) and not (path and rng.random() < 0.3):
        key = rng.choice(_children(doc))
        path, doc = (*path, key), doc[key]
    return path


def _get(doc: Any, path: JSONPath) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _set(doc: Any, path: JSONPath, value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _keys_of(doc: Any, limit: int = 2_000) -> list[str]:
    keys: dict[str, None] = {}
    stack = [doc]
    while stack and len(keys) < limit:
        node = stack.pop()
        if isinstance(node, dict):
            keys.update(dict.fromkeys(node))
            stack += list(node.values())
        elif isinstance(node, list):
            stack += node[:20]
    return list(keys)


def json_mutation(doc: Any, rng: Rng) -> tuple[Any, str]:
    """One change to a parsed JSON document: (the document, what was done)."""
    path = pick_path(doc, rng)
    old = _get(doc, path)
    where = "/".join(map(str, path)) or "(root)"
    op = rng.choice(["replace"] * 3 + ["delete", "duplicate", "swap", "wrap", "rename", "reorder"])
    if op == "delete" and path:
        del _get(doc, path[:-1])[path[-1]]
        return doc, f"delete {where}"
    if op == "duplicate" and isinstance(old, list) and old:
        i = rng.randrange(len(old))
        # Thirty copies of a small item only: copies of copies of a large one grow past
        # any memory (the campaign's own MemoryError, not the reader's).
        times = rng.choice([1, 1, 2, 30]) if _small(old[i]) else 1
        old[i:i] = [_copied(old[i]) for _ in range(times)]
        return doc, f"duplicate an item of {where}"
    if op == "swap" and isinstance(old, (list, dict)):
        new = (
            {str(i): v for i, v in enumerate(old)} if isinstance(old, list) else list(old.values())
        )
        return _set(doc, path, new), f"swap list and object at {where}"
    if op == "wrap":
        return _set(doc, path, rng.choice([[old], {"value": old}])), f"wrap {where}"
    if op == "rename" and isinstance(old, dict) and old:
        key = rng.choice(list(old))
        new_key = rng.choice([*_keys_of(doc)[:50], "", "x", key.upper()])
        old[new_key] = old.pop(key)
        return doc, f"rename {where}/{key} to {new_key!r}"
    if op == "reorder" and isinstance(old, list) and len(old) > 1:
        how = rng.choice(["shuffle", "reverse", "empty", "halve"])
        if how == "shuffle":
            rng.shuffle(old)
        else:
            old[:] = {"reverse": old[::-1], "empty": [], "halve": old[: len(old) // 2]}[how]
        return doc, f"{how} list {where}"
    new = rng.choice([_variant(old, rng), _variant(old, rng), _get(doc, pick_path(doc, rng))])
    return _set(doc, path, _copied(new)), f"replace {where} ({show(old)} -> {show(new)})"


# ---------------------------------------------------------------------------------------------
# Bundle mutations that know the node table: node fields, edges, parents, sections

_NODE_FIELDS = (
    "graph_id", "local_id", "type", "parent", "grid", "block", "shared_mem", "bytes", "kind",
    "value", "width", "height", "element_size", "child_graph", "bodies", "body_labels",
    "conditional_type", "@name", "@key", "cooperative", "priority", "name",
)  # fmt: skip


def _node_rows(doc: Any) -> tuple[list[Any], list[list[Any]]] | None:
    """The node table's shapes and its well-formed rows, while it still has some."""
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    shapes = nodes.get("shapes") if isinstance(nodes, dict) else None
    rows = nodes.get("rows") if isinstance(nodes, dict) else None
    if not isinstance(shapes, list) or not isinstance(rows, list):
        return None

    def good(row: Any) -> bool:
        if not isinstance(row, list) or not row or type(row[0]) is not int:
            return False
        shape = shapes[row[0]] if 0 <= row[0] < len(shapes) else None
        return (
            isinstance(shape, dict)
            and isinstance(shape.get("fields"), list)
            and isinstance(shape.get("constants"), dict)
            and len(row) == len(shape["fields"]) + 1
        )

    rows = [r for r in rows if good(r)]
    return (shapes, rows) if rows else None


def _row_get(shapes: list[Any], row: list[Any], name: str) -> Any:
    shape = shapes[row[0]]
    if name in shape["fields"]:
        return row[1 + shape["fields"].index(name)]
    return shape["constants"].get(name)


def _row_set(shapes: list[Any], row: list[Any], name: str, value: Any) -> None:
    """Set one row's field; a field its shape holds as a constant moves it to a new shape."""
    shape = shapes[row[0]]
    if name in shape["fields"]:
        row[1 + shape["fields"].index(name)] = value
        return
    constants = {k: v for k, v in shape["constants"].items() if k != name}
    shapes.append({"fields": [*shape["fields"], name], "constants": constants})
    row[:] = [len(shapes) - 1, *row[1:], value]


def _field_value(name: str, keys: list[Any], rng: Rng, old: Any) -> Any:
    """A value for a node field that is wrong in a way that field can be wrong."""
    if name in ("graph_id", "local_id", "child_graph", "@name"):
        near = old + 1 if type(old) is int else 7
        return rng.choice([0, 1, 2, 6, near, -1, 2**31, 2**63, 1.0, "1", True, None])
    if name == "type":
        return rng.choice(["KERNEL", "GRAPH", "CONDITIONAL", "MEMCPY", "MEM_ALLOC", "kernel", ""])
    if name in ("parent", "@key"):
        return rng.choice([*rng.sample(keys, min(3, len(keys))), "graph_9_node_9", "", None, 1])
    if name in ("grid", "block"):
        return rng.choice(
            [[0, 0, 0], [2**31, 1, 1], [1, 1], [1, 1, 1, 1], [-1, 1, 1], ["1", 1, 1],
             [1.5, 1, 1], None, 5, [], [2**64, 2**64, 2**64]]
        )  # fmt: skip
    if name == "bodies":
        return rng.choice([[], [99], [0, 0], [1, "2"], None, 3, [-1]])
    if name == "body_labels":
        return rng.choice([[], ["True"], [None], "True", [1, 2, 3, 4, 5]])
    return _variant(old, rng)


def bundle_mutation(doc: Any, rng: Rng) -> tuple[Any, str] | None:
    """A change that knows what a bundle's tables mean, or None where they are gone."""
    found = _node_rows(doc)
    if found is None:
        return None
    shapes, rows = found
    keys = [k for k in (_row_get(shapes, r, "@key") for r in rows) if isinstance(k, str)]
    op = rng.choice(["field", "field", "field", "edge", "edge", "parent", "section", "meta"])
    if op == "field":
        row, name = rng.choice(rows), rng.choice(_NODE_FIELDS)
        value = _field_value(name, keys, rng, _row_get(shapes, row, name))
        _row_set(shapes, row, name, value)
        return doc, f"node {_row_get(shapes, row, '@key')}: {name} = {show(value)}"
    if op == "parent" and keys:
        row = rng.choice(rows)
        own = _row_get(shapes, row, "@key")
        target = rng.choice([own, *rng.sample(keys, min(2, len(keys)))])
        _row_set(shapes, row, "parent", target)
        return doc, f"node {own}: parent = {target}"
    edges = doc.get("edges")
    if op == "edge" and isinstance(edges, list) and keys:
        how = rng.choice(["reverse", "self", "random", "cross", "bad", "attributes"])
        existing = [e for e in edges if isinstance(e, list) and len(e) >= 2]
        if how == "reverse" and existing:
            e = rng.choice(existing)
            edges.append([e[1], e[0]])  # a cycle
        elif how == "self":
            edges.append([keys[0], keys[0]])
        elif how == "random":
            edges.append([rng.choice(keys), rng.choice(keys)])
        elif how == "cross":  # between two graphs
            graphs: dict[str, list[Any]] = defaultdict(list)
            for r in rows:
                graphs[repr(_row_get(shapes, r, "graph_id"))].append(_row_get(shapes, r, "@key"))
            if len(graphs) > 1:
                a, b = rng.sample(list(graphs.values()), 2)
                edges.append([rng.choice(a), rng.choice(b)])
        elif how == "bad":
            edges.append(rng.choice([[keys[0]], [keys[0], "x"], [keys[0], keys[-1], 5], "x"]))
        elif existing:
            rng.choice(existing)[2:] = [rng.choice([{"headlabel": _generic(rng)}, {"x": [1]}])]
        return doc, f"edge: {how}"
    sections = [doc[s] for s in ("timing", "eager", "attribution") if isinstance(doc.get(s), dict)]
    if op == "section" and sections:
        section = rng.choice(sections)
        target = section.get("nodes") if isinstance(section.get("nodes"), dict) else section
    else:
        meta = [doc.get("metadata"), *[s.get(k) for s in sections for k in ("summary", "trace")]]
        meta += [s.get("parity") for s in sections]
        choices = [m for m in meta if isinstance(m, (dict, list)) and m]
        if not choices:
            return None
        target = rng.choice(choices)
    path = pick_path(target, rng)
    if not path:
        return None
    new = _variant(_get(target, path), rng)
    _set(target, path, new)
    return doc, f"{op} value {'/'.join(map(str, path))} -> {show(new)}"


# ---------------------------------------------------------------------------------------------
# Graph mutations: a loaded graph changed in memory, mostly within the contract. They reach
# what file mutations rarely do: valid graphs of unusual shape (child graphs nested deep, long
# chains, no edges, no timing, extreme values), where analyses and exports must not fail.

_GRAPH_NUMBERS = [0, 1, -1, 0.5, 1e-9, 2**31 - 1, 2**32 - 1, 2**63 - 1, 9e15, -9e15, 12345.678]
_GRAPH_STRINGS = [
    "", "x" * 100_000, "é中文", "\ud800", "<script>alert(1)</script>", "a\nb", "model", ".",
    "model..layers", "model.layers.0." * 50, "aten::mm", "'\"\\", "\x00",
]  # fmt: skip


def _members(G: Any) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    for key, data in G.nodes(data=True):
        out[data["graph_id"]].append(key)
    return out


def _new_graph(G: Any, parent: str | None, size: int, kind: str, chain: bool = True) -> int:
    """A graph of ``size`` new nodes owned by ``parent``: a chain, or unconnected."""
    gid = max((d["graph_id"] for _, d in G.nodes(data=True)), default=0) + 1
    keys = [f"graph_{gid}_node_{i}" for i in range(size)]
    G.add_nodes_from(
        (k, {"graph_id": gid, "local_id": i, "type": kind, "parent": parent})
        for i, k in enumerate(keys)
    )
    if chain:
        G.add_edges_from(itertools.pairwise(keys))
    if parent is None and isinstance(G.graph.get("root_graph_ids"), list):
        G.graph["root_graph_ids"].append(gid)
    return gid


def graph_mutation(G: Any, rng: Rng) -> str:
    """One change to ``G`` in place (a few tries at one that applies); what was done."""
    for _ in range(5):
        done = _graph_change(G, rng)
        if done is not None:
            return done
    return "nothing (no place for it)"


def _graph_change(G: Any, rng: Rng) -> str | None:
    import networkx as nx

    keys = list(G)
    key = rng.choice(keys) if keys else None
    data = G.nodes[key] if key is not None else {}
    sections = [n for n in ("replay", "eager", "attribution") if isinstance(data.get(n), dict)]
    op = rng.choice(
        ["drop", "number", "number", "string", "string", "remove", "edges", "cut", "entry",
         "eager", "replay", "type", "nest", "chain", "wide", "empty", "module", "trace",
         "renumber"]
    )  # fmt: skip
    if op == "drop" and key is not None:
        if sections and rng.random() < 0.5:
            section = data[rng.choice(sections)]
            if section:
                del section[rng.choice(list(section))]
                return f"{key}: a field of a section removed"
        names = [n for n in data if n not in ("graph_id", "local_id", "type", "parent")]
        if names:
            name = rng.choice(names)
            for other in keys if rng.random() < 0.3 else [key]:
                G.nodes[other].pop(name, None)
            return f"{name} removed"
    if op in ("number", "string") and key is not None:
        kinds = (int, float) if op == "number" else (str,)
        places = [data, *(data[n] for n in sections)]
        if op == "number" and isinstance(G.graph.get("timing"), dict):
            places.append(G.graph["timing"])
        ids = ("graph_id", "local_id", "child_graph")
        spots = [(p, n) for p in places for n, v in p.items() if type(v) in kinds and n not in ids]
        if spots:
            where, name = rng.choice(spots)
            where[name] = rng.choice(_GRAPH_NUMBERS if op == "number" else _GRAPH_STRINGS)
            return f"{name} = {show(where[name])}"
    if op == "remove" and keys:
        gone = rng.sample(keys, min(len(keys), rng.choice([1, 1, 5, len(keys) // 2 + 1])))
        G.remove_nodes_from(gone)
        return f"{len(gone)} nodes removed"
    if op == "edges":
        groups = [m for m in _members(G).values() if len(m) > 1]
        if groups:
            order = list(nx.topological_sort(G.subgraph(rng.choice(groups))))
            for _ in range(rng.choice([1, 10, 200])):
                i, j = sorted(rng.sample(range(len(order)), 2))
                G.add_edge(order[i], order[j], **rng.choice([{}, {"headlabel": 7}]))
            return "edges added, forward"
    if op == "cut" and G.number_of_edges():
        edges = list(G.edges)
        gone = edges if rng.random() < 0.5 else rng.sample(edges, len(edges) // 2)
        G.remove_edges_from(gone)
        return f"{len(gone)} edges removed"
    if op == "entry" and G.graph:
        name = rng.choice(list(G.graph))
        entry = G.graph[name]
        if isinstance(entry, dict) and entry and rng.random() < 0.5:
            inner = rng.choice(list(entry))
            entry[inner] = rng.choice([*_GRAPH_NUMBERS, None, [], False, ""])
            return f"G.graph[{name!r}][{inner!r}] = {show(entry[inner])}"
        del G.graph[name]
        return f"G.graph[{name!r}] removed"
    if op == "eager":
        how = rng.choice(["same index", "none", "on every node"])
        for k in keys:
            eager = G.nodes[k].get("eager")
            if how == "same index" and isinstance(eager, dict):
                eager["index"] = 0
            elif how == "none":
                G.nodes[k].pop("eager", None)
            elif how == "on every node" and not isinstance(eager, dict):
                G.nodes[k]["eager"] = {"index": 0, "start_us": 1.0, "duration_us": 0.0}
        return f"eager: {how}"
    if op == "replay":
        how = rng.choice(["half", "zero", "negative start", "everywhere", "all at once"])
        for i, k in enumerate(keys):
            replay = G.nodes[k].get("replay")
            if how == "half" and i % 2:
                G.nodes[k].pop("replay", None)
            elif how == "zero" and isinstance(replay, dict):
                replay.update(dict.fromkeys(set(replay) & {"min_us", "median_us", "max_us"}, 0.0))
            elif how == "negative start" and isinstance(replay, dict):
                replay["start_us"] = -1.0 - i
            elif how == "everywhere":
                G.nodes[k]["replay"] = {"count": 1, "median_us": i % 7 * 1.0, "start_us": i * 1.0}
            elif how == "all at once":  # every node overlaps every other
                G.nodes[k]["replay"] = {"count": 1, "median_us": 1.0, "start_us": 0.0}
        return f"replay: {how}"
    if op == "trace" and isinstance(G.graph.get("eager_trace"), dict):
        table = G.graph["eager_trace"][rng.choice(["api", "gpu"])]
        fields, rows = table["fields"], table["rows"]
        how = rng.choice(["null", "empty", "one correlation", "shuffle"])
        if how == "null" and rows:
            nullable = ("correlation_id", "stream_id", "grid", "block", "bytes", "copy_kind")
            column = rng.choice([f for f in nullable if f in fields] or fields)
            j = fields.index(column)
            for row in rows if rng.random() < 0.5 else rng.sample(rows, max(1, len(rows) // 10)):
                row[j] = None
            return f"eager_trace: {column} null"
        if how == "empty":
            rows.clear()
        elif how == "one correlation" and "correlation_id" in fields:
            for row in rows:
                row[fields.index("correlation_id")] = 1
        else:
            rng.shuffle(rows)
        return f"eager_trace: {how}"
    if op == "type" and key is not None and data["type"] not in ("GRAPH", "CONDITIONAL"):
        data["type"] = rng.choice(["KERNEL", "EMPTY", "HOST", "MEMSET", "MEMCPY", "MEM_FREE"])
        return f"{key}: type {data['type']}"
    if op == "nest":
        depth = rng.choice([3, 40, 1500])
        parent: str | None = None
        for _ in range(depth):
            gid = _new_graph(G, parent, 2, "EMPTY")
            parent = f"graph_{gid}_node_1"
            G.nodes[parent].update(type="GRAPH", child_graph=gid + 1)
        _new_graph(G, parent, 3, "KERNEL")
        return f"child graphs nested {depth} deep"
    if op in ("chain", "wide"):
        size = rng.choice([500, 20_000] if op == "chain" else [500, 5_000])
        _new_graph(G, None, size, rng.choice(["EMPTY", "KERNEL"]), chain=op == "chain")
        return f"a root graph of {size} nodes, {'a chain' if op == 'chain' else 'no edges'}"
    if op == "empty":
        G.remove_nodes_from(keys)
        return "every node removed"
    if op == "module":
        how = rng.choice(["same", "deep", "none", "the model"])
        module = {"same": "model.layers.0.mlp", "deep": "model" + ".layers.1" * 300}.get(how)
        for k in keys:
            G.nodes[k].setdefault("attribution", {})["module"] = (
                "" if how == "the model" else module
            )
        return f"attribution.module: {how}"
    if op == "renumber" and keys:
        gid = rng.choice(list(_members(G)))
        top = (1 << 32) - 1
        rename = {
            k: f"graph_{gid}_node_{top - d['local_id']}"
            for k, d in G.nodes(data=True)
            if d["graph_id"] == gid
        }
        nx.relabel_nodes(G, rename, copy=False)
        for new in rename.values():
            G.nodes[new]["local_id"] = top - G.nodes[new]["local_id"]
        for _, d in G.nodes(data=True):
            d["parent"] = rename.get(d.get("parent"), d.get("parent"))
        return f"graph {gid}: local ids counted down from 2**32 - 1"
    return None


# ---------------------------------------------------------------------------------------------
# Byte and gzip mutations

_TOKENS = [
    b"{", b"}", b"|", b'"', b"\\", b"->", b"[", b"]", b";", b"\n", b"\x00", b"\xff\xfe",
    b"subgraph cluster_9 {", b"graph_1_node_", b"<<<", b"0x", b"99999999999999999999999",
    b"NaN", b"-Infinity", b"1e999", b"\xef\xbb\xbf", b"\r\n", b",", b":", b"null",
]  # fmt: skip


def byte_mutation(data: bytes, rng: Rng) -> tuple[bytes, str]:
    buf = bytearray(data)
    op = rng.choice(["flip", "cut", "insert", "delete", "duplicate", "random", "crlf"])
    at = rng.randrange(max(len(buf), 1))
    if op == "flip" and buf:
        buf[at] = rng.randrange(256)
    elif op == "cut":
        del buf[at:]
    elif op == "insert":
        buf[at:at] = rng.choice(_TOKENS)
    elif op == "delete":
        del buf[at : at + rng.choice([1, 8, 64, 4096])]
    elif op == "duplicate":
        buf[at:at] = buf[at : at + rng.choice([16, 512, 65536])]
    elif op == "random":
        buf[at:at] = bytes(rng.randrange(256) for _ in range(rng.choice([1, 16, 256])))
    else:
        return data.replace(b"\n", b"\r\n"), "bytes: CRLF line ends"
    return bytes(buf), f"bytes: {op} at {at}"


def bomb(cache: Path) -> bytes:
    """A gzip file of about 2 MB that expands to ``BOMB_MIB`` MiB of spaces and ``{}``; made
    once (10 s) and kept in ``cache``."""
    path = cache / f"bomb-{BOMB_MIB}m.gz"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
        spaces = b" " * (1 << 20)
        parts = [deflate.compress(spaces) for _ in range(BOMB_MIB)]
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(b"".join([*parts, deflate.compress(b"{}"), deflate.flush()]))
        tmp.replace(path)
    return path.read_bytes()


def gzip_mutation(raw: bytes, rng: Rng, cache: Path) -> tuple[bytes, str]:
    """``raw`` (uncompressed) gzipped wrongly."""
    packed = gzip.compress(raw, mtime=0)
    op = rng.choice(["cut", "flip", "trailer", "garbage", "members", "double", "empty", "flags"])
    if rng.random() < 0.02:
        return bomb(cache), f"a gzip bomb ({BOMB_MIB} MiB)"
    if op == "cut":
        return packed[: rng.randrange(1, len(packed))], "gzip cut short"
    if op == "flip":
        buf = bytearray(packed)
        buf[rng.randrange(10, len(buf))] ^= 1 << rng.randrange(8)
        return bytes(buf), "gzip bit flipped"
    if op == "trailer":
        return packed[:-8] + rng.randbytes(8), "gzip CRC and size wrong"
    if op == "garbage":
        return packed + rng.choice([b"x", b"\x1f\x8b", b"\x00" * 100]), "gzip, then other bytes"
    if op == "members":
        cut = rng.randrange(len(raw) + 1)
        halves = gzip.compress(raw[:cut], mtime=0) + gzip.compress(raw[cut:], mtime=0)
        return halves, "two gzip members"
    if op == "double":
        return gzip.compress(packed, mtime=0), "gzip of gzip"
    if op == "empty":
        return gzip.compress(b"", mtime=0), "empty gzip"
    buf = bytearray(packed)
    buf[3] = rng.choice([0x04, 0x08, 0x1F, 0xFF])  # FEXTRA, FNAME or reserved flags, no data
    return bytes(buf), "gzip header flags wrong"


# ---------------------------------------------------------------------------------------------
# DOT mutations

_NUMBER = re.compile(rb"0x[0-9a-fA-F]+|\d+")
_NODE_ID = re.compile(rb"graph_\d+_node_\d+")
_LABEL = re.compile(rb'label="((?:[^"\\]|\\.)*)"', re.S)
_GS = re.compile(rb'(gs_attrs|gs_graph)="((?:[^"\\]|\\.)*)"', re.S)
# Node ids, not any word: "\w+ -> \w+" takes quadratic time on a long run of letters.
_EDGE = re.compile(rb'"?(graph_\d+_node_\d+)"?\s*->\s*"?(graph_\d+_node_\d+)"?')
_CELL = re.compile(rb"(?<!\\)\|")
_DOT_NUMBERS = [
    b"9" * 30, b"9" * 5000, b"-1", b"0", b"nan", b"inf", b"1e999", b"0x" + b"f" * 20, b"",
    b"abc", b"1.5", b"00", b"-0", b"4294967296",
]  # fmt: skip


def _splice(data: bytes, match: re.Match[bytes], group: int, new: bytes) -> bytes:
    return data[: match.start(group)] + new + data[match.end(group) :]


def _gs_unescape(text: str) -> str:
    """What graphscope's DOT writer escaped in a ``gs_`` attribute: backslash, quote, newline."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), text, flags=re.S)


def _gs_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def dot_mutation(data: bytes, rng: Rng, bloat: bool = True) -> tuple[bytes, str]:
    """One change that knows DOT. With ``bloat``, rarely, the body is repeated to about 2 MB:
    a reader that is not linear in the file's size shows there."""
    op = rng.choice(
        ["line", "line", "number", "number", "id", "cell", "cell", "edge", "quote", "brace",
         "unquoted", "long", "gs", "attribute", "bloat"]
    )  # fmt: skip
    labels = list(_LABEL.finditer(data))
    label = rng.choice(labels) if labels else None
    if op == "line":
        lines = data.split(b"\n")
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        how = rng.choice(["delete", "duplicate", "swap", "move"])
        if how == "delete":
            del lines[i]
        elif how == "duplicate":
            lines.insert(i, lines[i])
        elif how == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines.insert(j, lines.pop(i))
        return b"\n".join(lines), f"line {i}: {how}"
    if op == "number" and (numbers := list(_NUMBER.finditer(data))):
        m, new = rng.choice(numbers), rng.choice(_DOT_NUMBERS)
        return _splice(data, m, 0, new), f"number {m.group(0)[:20]!r} -> {new[:20]!r}"
    if op == "id" and (ids := list(_NODE_ID.finditer(data))):
        m = rng.choice(ids)
        new = rng.choice(
            [rng.choice(ids).group(0), b"graph_1_node_99999", b"graph__node_", b"graph_1_node_1_2",
             b"graph_99_node_1", b"graph_" + b"9" * 30 + b"_node_1"]
        )  # fmt: skip
        return _splice(data, m, 0, new), f"node id {m.group(0)!r} -> {new[:40]!r}"
    if op == "cell" and label is not None:
        cells = _CELL.split(label.group(1))
        i = rng.randrange(len(cells))
        how = rng.choice(["delete", "duplicate", "swap", "empty", "junk", "nest", "unbrace"])
        if how == "delete" and len(cells) > 1:
            del cells[i]
        elif how == "duplicate":
            cells.insert(i, cells[i])
        elif how == "swap":
            j = rng.randrange(len(cells))
            cells[i], cells[j] = cells[j], cells[i]
        elif how in ("empty", "junk"):
            junk = [b"\\<\\<\\<", b"x=y", b"\\{1,2", b"(HtoD,", b"<<<1,2,3>>>", b"\\n", b"=" * 50]
            cells[i] = b"" if how == "empty" else rng.choice(junk)
        elif how == "nest":
            depth = rng.choice([50, 3000, 100_000])
            cells[i] = b"{" * depth + cells[i] + b"}" * depth
        else:
            cells[i] = cells[i].replace(b"{", b"").replace(b"}", b"")
        return _splice(data, label, 1, b"|".join(cells)), f"label cell {i}: {how}"
    if op == "edge":
        nodes = [found.group(0) for found in _NODE_ID.finditer(data)] or [b"a"]
        edges = list(_EDGE.finditer(data))
        how = rng.choice(["reverse", "self", "random", "unknown"])
        a, b = rng.choice(nodes), rng.choice(nodes)
        if how == "reverse" and edges:
            b, a = rng.choice(edges).groups()
        elif how == "self":
            b = a
        elif how == "unknown":
            b = b"graph_1_node_77777"
        line = b'"' + a + b'" -> "' + b + b'";'
        end = data.rfind(b"}")
        at = rng.choice([end, rng.randrange(len(data) + 1)]) if end > 0 else len(data)
        return data[:at] + b"\n" + line + b"\n" + data[at:], f"edge: {how}"
    if op == "quote":
        at = rng.choice([i for i, c in enumerate(data) if c == 34] or [0])
        how = rng.choice(["delete", "insert", "escape"])
        new = {"delete": b"", "insert": b'""', "escape": b'\\"'}[how]
        return data[:at] + new + data[at + 1 :], f"quote: {how}"
    if op == "brace":
        at = rng.randrange(len(data) + 1)
        how = rng.choice(["{", "}", "delete", "nest", "clusters"])
        if how == "delete":
            at = rng.choice([i for i, c in enumerate(data) if c in b"{}"] or [0])
            return data[:at] + data[at + 1 :], "brace deleted"
        if how == "nest":
            depth = rng.choice([100, 5000, 100_000])
            return data[:at] + b"{" * depth + b"}" * depth + data[at:], f"{depth} nested braces"
        if how == "clusters":
            depth = rng.choice([50, 2000, 50_000])
            start = data.find(b"{") + 1
            nested = b"subgraph cluster_9 {\n" * depth + b"}" * depth
            return data[:start] + nested + data[start:], f"{depth} nested clusters"
        return data[:at] + how.encode() + data[at:], f"brace {how} inserted"
    if op == "unquoted" and label is not None:
        junk = [b"a" * 50_000 + b"!", label.group(1), b"x y z", b"=" * 10_000, b"a\\" * 20_000]
        unquoted = b"label=" + rng.choice(junk)
        return data[: label.start()] + unquoted + data[label.end() :], "label value unquoted"
    if op == "long" and label is not None:
        longer = label.group(1) + b"x" * rng.choice([100_000, 2_000_000])
        return _splice(data, label, 1, longer), "long label"
    if op == "gs" and (gs := list(_GS.finditer(data))):
        m = rng.choice(gs)
        try:
            doc = json.loads(_gs_unescape(m.group(2).decode()))
        except ValueError:
            return byte_mutation(data, rng)
        if isinstance(doc, dict) and doc and rng.random() < 0.5:
            name = rng.choice([k for k in _NODE_FIELDS if k in doc] or list(doc))
            doc[name] = _field_value(name, [], rng, doc[name])
            what = f"{name} = {show(doc[name])}"
        else:
            doc, what = json_mutation(doc, rng)
        text = dumps_mutant(doc, rng).decode("utf-8", "surrogateescape")
        new = _gs_escape(text).encode("utf-8", "surrogateescape")
        return _splice(data, m, 2, new), f"{m.group(1).decode()}: {what}"
    if op == "attribute" and label is not None:
        extras = [b' label="x"', b" style=filled style=dashed", b'shape="box"', b" label=",
                  b' gs_attrs="{}"', b' gs_attrs="[1]"']  # fmt: skip
        extra = rng.choice(extras)
        return data[: label.end()] + extra + data[label.end() :], f"attribute {extra!r} added"
    start, end = data.find(b"{") + 1, data.rfind(b"}")
    if op == "bloat" and bloat and 0 < start < end < BLOAT_BYTES and rng.random() < 0.2:
        copies = max(2, BLOAT_BYTES // (end - start))
        return data[:start] + data[start:end] * copies + data[end:], f"body x{copies}"
    return byte_mutation(data, rng)
