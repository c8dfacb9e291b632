"""Read ``cudaGraphDebugDotPrint`` output (any flag set) into the graph model.

What the driver prints, as seen on the samples (samples/dot):

* one ``subgraph cluster_<graph_id>`` per graph, child and conditional-body graphs included,
  all at top level; a node is ``graph_<graph_id>_node_<local_id>``;
* with no flags, plain labels: ``<id>\\n<TYPE>\\n(HtoD,16384)``; a kernel shows its mangled
  name instead of a type word, a child-graph node the name ``graph_<N>`` of its graph;
* with the kernel-params flag, a third kernel line ``\\<\\<\\<grid,block,smem\\>\\>\\>``, with
  ``\\{x,y\\}`` for 2-D dimensions;
* verbose, Graphviz record labels (``{KERNEL | {ID | 1 (topoId: 17) | name<<<...>>>} | ...}``)
  holding handles, access policy windows, memcpy source and destination, and so on; with the
  runtime-types flag the memcpy rows use runtime names (``{kind | HtoD (...)}``);
* conditional nodes are always records naming their body graphs (``{True | graph_7}``).

Every field a label carries becomes a node attribute (keys in snake_case, nested record
fields joined with dots); the contract fields of DESIGN.md are derived from them.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import networkx as nx

from .contract import JsonBudget, check_nodes, check_structure, claimed_graphs, parse_json
from .dotparse import DotDocument, Node, parse_dot
from .errors import DotFormatError, InputError
from .model import NODE_TYPES, SCHEMA_VERSION, parse_key
from .names import demangle_all, short_names_all
from .pace import paced
from .recording import check_graph_entry

_TYPE_WORDS = {t: t for t in NODE_TYPES if t not in ("KERNEL", "GRAPH")}
_TYPE_WORDS["EVENT_WAIT"] = "WAIT_EVENT"  # the DOT's word for CU_GRAPH_NODE_TYPE_WAIT_EVENT
_CLUSTER = re.compile(r"cluster_(\d{1,10})\Z")  # a longer id names no graph: not a cluster
_GRAPH_REF = re.compile(r"graph_(\d+)\Z")
_ID_CELL = re.compile(r"(\d+)(?:\s*\(topoId:\s*(\d+)\))?\Z")
_LAUNCH = re.compile(r"(.*?)<<<(\{[\d,]*\}|\d+),(\{[\d,]*\}|\d+),(\d+)>>>\Z", re.DOTALL)
_PAREN_PAIR = re.compile(r"\(([^,()]+),(\d+)\)\Z")
_RECORD_TOKEN = re.compile(r"\\(.)|([{}|])|([^\\{}|]+)", re.DOTALL)
_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|\s+")
_HEX = re.compile(r"0x[0-9A-Fa-f]+\Z")
_INT = re.compile(r"-?\d+\Z")
_FLOAT = re.compile(r"-?\d+\.\d*\Z")
# The driver prints 64-bit numbers: 20 digits, 16 in hex. A longer run is refused before int()
# converts it (which takes time quadratic in its length, and refuses past 4300 digits).
_MAX_DIGITS = 20
_MEMORY_LETTER = {"HOST": "H", "DEVICE": "D", "ARRAY": "A", "UNIFIED": "U"}

Record = list["Record | str"]
# Driver labels nest five deep at most; the bound keeps the recursive readers below safe.
_MAX_RECORD_DEPTH = 32


def _snake(key: str) -> str:
    # Only a driver's short keys are cached: a long one (any text, in a mutated file) held
    # by the cache would stay in a server's memory for good.
    return _snake_cached(key) if len(key) <= 64 else _snake_text(key)


@lru_cache(maxsize=4096)
def _snake_cached(key: str) -> str:
    return _snake_text(key)


def _snake_text(key: str) -> str:
    return ".".join(_SNAKE.sub("_", part.strip()).lower() for part in key.split("."))


class _CellError(ValueError):
    """A label cell holds what no driver prints; the caller names the node and the line."""


def _number(digits: str, base: int = 10) -> int:
    """An integer of a label, refused past 64 bits' worth of digits."""
    if len(digits.lstrip("-")) > (_MAX_DIGITS if base == 10 else 16):
        raise _CellError(
            f"the number {digits[:12]}... has {len(digits)} digits, more than the driver prints"
        )
    return int(digits, base)


def _value(text: str) -> Any:
    text = text.strip()
    if _INT.match(text):
        return _number(text)
    if _HEX.match(text):
        return _number(text[2:], 16)
    if _FLOAT.match(text):
        return float(text)
    return text


def _is_value(text: str) -> bool:
    text = text.strip()
    # A \x01N\x02 placeholder stands for a number while a record template is parsed.
    return bool(
        _INT.match(text) or _HEX.match(text) or _FLOAT.match(text) or _PLACEHOLDER.fullmatch(text)
    )


def _unescape(text: str) -> str:
    return re.sub(r"\\([<>{}|\\ ])", r"\1", text)


def _dims(text: str) -> list[int]:
    parts = text.strip("{}").split(",")
    if not 1 <= len(parts) <= 3 or not all(parts):
        raise _CellError(f"launch dimensions {text[:40]!r} are not 1 to 3 numbers")
    return [*map(_number, parts), 1, 1, 1][:3]


def parse_record(label: str, path: Any = None, line: int | None = None) -> Record:
    """A Graphviz record label as nested lists of field strings (escapes resolved)."""
    root: Record = []
    # One entry per open brace: the group, the current field's text, and whether the
    # current field is a nested group rather than text.
    stack: list[tuple[Record, list[str], list[bool]]] = [(root, [], [False])]

    def finish_field() -> None:
        group, text, is_group = stack[-1]
        if not is_group[0]:
            group.append("".join(text).strip())
        text.clear()
        is_group[0] = False

    for escaped, punct, plain in _RECORD_TOKEN.findall(label):
        if punct == "{":
            if len(stack) > _MAX_RECORD_DEPTH:
                raise DotFormatError(
                    path, f"record label nested deeper than {_MAX_RECORD_DEPTH} levels", line
                )
            group: Record = []
            stack[-1][0].append(group)
            stack[-1][2][0] = True
            stack.append((group, [], [False]))
        elif punct == "}":
            if len(stack) == 1:
                raise DotFormatError(path, "unbalanced '}' in a record label", line)
            finish_field()
            stack.pop()
        elif punct == "|":
            finish_field()
        else:
            stack[-1][1].append(escaped or plain)
    if len(stack) != 1:
        raise DotFormatError(path, "unbalanced '{' in a record label", line)
    finish_field()
    return [f for f in root if f != ""]


def _flat_keys(tree: Record | str) -> list[str]:
    if isinstance(tree, str):
        return [tree]
    if len(tree) == 2 and isinstance(tree[0], str) and isinstance(tree[1], list):
        return [f"{tree[0]}.{k}" for k in _flat_keys(tree[1])]
    keys: list[str] = []
    for item in tree:
        keys.extend(_flat_keys(item))
    return keys


def _unwrap(item: Record | str) -> Record | str:
    while isinstance(item, list) and len(item) == 1 and isinstance(item[0], list):
        item = item[0]
    return item


def _all_str(items: Record) -> bool:
    return all(isinstance(x, str) for x in items)


def _pairs(item: Record | str, prefix: str, out: list[tuple[str, str]], extra: list[str]) -> None:
    """Turn one record field into ``(key, value)`` pairs, the layouts the driver prints."""
    item = _unwrap(item)
    if isinstance(item, str):
        if item:
            extra.append(item)
        return
    if len(item) == 2 and _all_str(item):  # {key | value}
        out.append((prefix + str(item[0]), str(item[1])))
        return
    if len(item) >= 2 and isinstance(item[-1], list) and isinstance(item[-2], list):
        keys_tree, vals = _unwrap(item[-2]), _unwrap(item[-1])
        heads = item[:-2]
        keys = _flat_keys(keys_tree)
        # A key row holds names only; {{Width | 16384} | {Height | 1}} is a list of pairs.
        if isinstance(vals, list) and _all_str(vals) and not any(map(_is_value, keys)):
            if len(heads) == 1 and isinstance(heads[0], list) and _all_str(heads[0]):
                # {{src | dst} | {k1 .. kn k1 .. kn} | {v ..}}: keys shared out among heads
                names = [h for h in heads[0] if isinstance(h, str)]
                if names and len(keys) == len(vals) and len(keys) % len(names) == 0:
                    step = len(keys) // len(names)
                    for i, (k, v) in enumerate(zip(keys, vals, strict=True)):
                        out.append((f"{prefix}{names[i // step]}.{k}", str(v)))
                    return
            elif _all_str(heads) and len(keys) == len(vals):
                head = ".".join(h for h in heads if isinstance(h, str) and h)
                lead = f"{prefix}{head}." if head else prefix
                for k, v in zip(keys, vals, strict=True):
                    out.append((lead + k, str(v)))
                return
    if len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], list):
        _pairs(item[1], f"{prefix}{item[0]}.", out, extra)  # {srcPos | {{x | 0} | ...}}
        return
    if all(isinstance(x, list) for x in item):
        for sub in item:
            _pairs(sub, prefix, out, extra)
        return
    extra.append(json.dumps(item))


def _launch(text: str, attrs: dict[str, Any]) -> bool:
    """Fill name/grid/block/shared_mem from ``name<<<grid,block,smem>>>``; True if it matched."""
    match = _LAUNCH.match(text.strip())
    if not match:
        return False
    name, grid, block, smem = match.groups()
    if name.strip():
        attrs["name"] = name.strip()
    attrs["grid"] = _dims(grid)
    attrs["block"] = _dims(block)
    attrs["shared_mem"] = _number(smem)
    return True


def _id_cell(text: str, attrs: dict[str, Any]) -> None:
    match = _ID_CELL.match(text.strip())
    if match and match.group(2) is not None:
        attrs["topo_id"] = _number(match.group(2))


def _memory_letter(text: str) -> str:
    """``HOST (HOST PINNED)`` -> ``H``; the part in brackets is where the memory really is."""
    inner = text[text.find("(") + 1 : text.rfind(")")] if "(" in text else text
    word = inner.split()[0] if inner.split() else ""
    return _MEMORY_LETTER.get(word, "?")


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _derive(attrs: dict[str, Any]) -> None:
    """Contract fields (kind, bytes, ...) from the raw record fields, where they are numbers."""
    kind = attrs["type"]
    if kind == "MEMCPY":
        if "kind" in attrs and isinstance(attrs["kind"], str):
            attrs["kind"] = attrs["kind"].split()[0] if attrs["kind"].split() else ""
        elif "src.memory_type" in attrs and "dst.memory_type" in attrs:
            src = _memory_letter(str(attrs["src.memory_type"]))
            dst = _memory_letter(str(attrs["dst.memory_type"]))
            attrs["kind"] = f"{src}to{dst}"
        width = _int(attrs.get("extent.width_in_bytes", attrs.get("extent.width")))
        height, depth = _int(attrs.get("extent.height")), _int(attrs.get("extent.depth"))
        if "bytes" not in attrs and width is not None:
            attrs["bytes"] = width * max(height or 1, 1) * max(depth or 1, 1)
    elif kind == "MEM_ALLOC" and _int(attrs.get("bytesize")) is not None:
        attrs["bytes"] = attrs["bytesize"]
    elif kind == "MEMSET" and "bytes" not in attrs:
        width = _int(attrs.get("width"))
        size, height = _int(attrs.get("element_size", 1)), _int(attrs.get("height", 1))
        if width is not None and size is not None and height is not None:
            attrs["bytes"] = width * size * height
    elif kind == "CONDITIONAL" and "conditional_type" in attrs:
        attrs["conditional_type"] = str(attrs["conditional_type"]).strip()


def _record_fields(
    label: str, path: Any, line: int
) -> tuple[str, list[tuple[str, str]], list[str]]:
    """A record label as (type word, [(key, raw value)], [unexplained text])."""
    tree = _unwrap(parse_record(label, path, line))
    fields = tree if isinstance(tree, list) else [tree]
    if not fields or not isinstance(fields[0], str):
        raise DotFormatError(path, "record label does not start with a node type", line)
    pairs: list[tuple[str, str]] = []
    extra: list[str] = []
    for item in fields[1:]:
        item = _unwrap(item)
        if isinstance(item, list) and item and item[0] == "ID" and _all_str(item):
            pairs.append(("ID", str(item[1]) if len(item) > 1 else ""))
            if len(item) > 2:
                pairs.append(("ID.launch", str(item[2])))
            continue
        _pairs(item, "", pairs, extra)
    return fields[0].strip(), pairs, extra


# Record labels of one node type differ only in their numbers (ids, handles, sizes), so each
# shape is parsed once: the label with its numbers numbered becomes a template of format
# strings that later labels of the same shape fill in. A verbose dump of thousands of kernels
# has a few dozen shapes (benchmarks/bench_dot.py). Only short labels without the
# placeholder characters are cached, which bounds the cache's memory on hostile input.
_NUMBER = re.compile(r"\b(?:0x[0-9A-Fa-f]+|\d+(?:\.\d+)?)\b")
_PLACEHOLDER = re.compile("\x01(\\d+)\x02")
_TEMPLATES: dict[str, tuple[str, list[tuple[str, str]], list[str]]] = {}
_CACHED_LABEL_CHARS = 4096


def _as_format(text: str) -> str:
    return _PLACEHOLDER.sub(r"{\1}", text.replace("{", "{{").replace("}", "}}"))


def _cached_record_fields(
    label: str, path: Any, line: int
) -> tuple[str, list[tuple[str, str]], list[str]]:
    if len(label) > _CACHED_LABEL_CHARS or any(c in label for c in "\x00\x01\x02"):
        return _record_fields(label, path, line)
    shape = _NUMBER.sub("\x00", label)
    template = _TEMPLATES.get(shape)
    if template is None:
        counter = iter(range(1 << 30))
        numbered = _NUMBER.sub(lambda m: f"\x01{next(counter)}\x02", label)
        word, pairs, extra = _record_fields(numbered, path, line)
        template = (
            _as_format(word),
            [(_as_format(k), _as_format(v)) for k, v in pairs],
            [_as_format(x) for x in extra],
        )
        if len(_TEMPLATES) > 1024:
            _TEMPLATES.clear()
        _TEMPLATES[shape] = template
    numbers = _NUMBER.findall(label)
    word, pairs, extra = template
    return (
        word.format(*numbers),
        [(k.format(*numbers), v.format(*numbers)) for k, v in pairs],
        [x.format(*numbers) for x in extra],
    )


def _record_node(label: str, attrs: dict[str, Any], path: Any, line: int) -> None:
    word, pairs, extra = _cached_record_fields(label, path, line)
    if word == "KERNEL":
        attrs["type"] = "KERNEL"
    elif word in _TYPE_WORDS:
        attrs["type"] = _TYPE_WORDS[word]
    else:
        raise DotFormatError(path, f"unknown node type {word!r} in a record label", line)
    bodies: list[int] = []
    body_labels: list[str] = []
    for key, raw in pairs:
        if key == "ID.launch":
            if not _launch(raw, attrs):
                attrs["name"] = raw.strip()
            continue
        if key.startswith("ID."):
            key = key[3:]
        if key == "ID":
            _id_cell(raw, attrs)
            continue
        ref = _GRAPH_REF.match(raw.strip())
        if attrs["type"] == "CONDITIONAL" and ref:
            bodies.append(_number(ref.group(1)))
            body_labels.append(key)
            continue
        attrs[_snake(key)] = _value(raw)
    if bodies:
        attrs["bodies"] = bodies
        attrs["body_labels"] = body_labels
    if extra:
        attrs["label_extra"] = extra


def _plain_node(label: str, shape: str, attrs: dict[str, Any], path: Any, line: int) -> None:
    lines = [ln.strip() for ln in _unescape(label).split("\n")]
    lines = [ln for ln in lines if ln]
    if len(lines) < 2:
        raise DotFormatError(path, f"node label {label[:40]!r} has no node type line", line)
    _id_cell(lines[0], attrs)
    word = lines[1]
    ref = _GRAPH_REF.match(word)
    if word in _TYPE_WORDS and shape != "octagon":
        attrs["type"] = _TYPE_WORDS[word]
    elif ref:
        attrs["type"] = "GRAPH"
        attrs["child_graph"] = _number(ref.group(1))
    else:
        attrs["type"] = "KERNEL"
        if not _launch(word, attrs):
            attrs["name"] = word
    for text in lines[2:]:
        if attrs["type"] == "KERNEL" and _launch(text, attrs):
            continue
        pair = _PAREN_PAIR.match(text)
        if pair and attrs["type"] == "MEMCPY":
            attrs["kind"], attrs["bytes"] = pair.group(1), _number(pair.group(2))
        elif pair and attrs["type"] == "MEMSET":
            attrs["value"], attrs["bytes"] = _value(pair.group(1)), _number(pair.group(2))
        elif ":" in text:
            key, _, raw = text.partition(":")
            attrs[_snake(key)] = _value(raw)
        else:
            attrs.setdefault("label_extra", []).append(text)


def _gs_value(text: str) -> str:
    """Undo the backslash escaping graphscope's DOT writer applies to its gs_ attributes: a
    backslash keeps the character after it (a lone one at the end stays).

    What ``re.sub(r"\\(.)", r"\1", text)`` does, in string methods: that substitution expands
    its template in Python for every match, and a gs_attrs of 9.6 MB holding 4.8 million
    escapes took 11 s to read (found by the fuzz campaign).
    """
    if "\\" not in text:
        return text
    if "\x00" in text:  # the stand-in below must not occur: the general way
        return re.sub(r"\\(.)", r"\1", text, flags=re.DOTALL)
    # Pairs first, leftmost first as the pattern takes them: each stands for one backslash.
    # Every backslash left then escapes the character after it, but a last one, which stays.
    pairs = text.replace("\\\\", "\x00")
    tail = "\\" if pairs.endswith("\\") else ""
    return (pairs.replace("\\", "") + tail).replace("\x00", "\\")


def _gs_json(text: str, path: Any, where: str, line: int | None, budget: JsonBudget) -> Any:
    """The JSON graphscope's DOT writer stored in a gs_ attribute, within the JSON bounds
    (the values of all of a file's gs_ attributes count against one ``budget``)."""
    try:
        return parse_json(_gs_value(text), path, DotFormatError, budget=budget)
    except DotFormatError as exc:
        # parse_json counts lines inside the attribute; the file's line is the one to name.
        raise DotFormatError(path, f"{where}: {exc.message}", line) from None


def _node_attrs(name: str, node: Node, path: Any, budget: JsonBudget) -> dict[str, Any]:
    ids = parse_key(name)
    if ids is None:
        raise DotFormatError(
            path,
            f"node {name!r} is not named graph_<G>_node_<N>: this DOT "
            "file was not written by cudaGraphDebugDotPrint",
            node.line,
        )
    gid, lid = ids
    attrs: dict[str, Any] = {"graph_id": gid, "local_id": lid}
    if "gs_attrs" in node.attrs:  # written by graphscope's own DOT writer: exact attributes
        where = f"node {name!r}: gs_attrs"
        stored = _gs_json(node.attrs["gs_attrs"], path, where, node.line, budget)
        if not isinstance(stored, dict):
            raise DotFormatError(path, f"node {name!r}: gs_attrs is not a JSON object", node.line)
        stored.update(graph_id=gid, local_id=lid)  # the contract checks the rest
        return stored
    label = node.attrs.get("label")
    if label is None:
        raise DotFormatError(
            path, f"node {name!r} has no label: not cudaGraphDebugDotPrint output", node.line
        )
    shape = node.attrs.get("shape", "")
    try:
        if shape == "record" or label.lstrip().startswith("{"):
            _record_node(label, attrs, path, node.line)
        else:
            _plain_node(label, shape, attrs, path, node.line)
    except _CellError as exc:
        raise DotFormatError(path, f"node {name!r}: {exc}", node.line) from None
    if attrs["type"] == "GRAPH" and "child_graph" not in attrs:
        raise DotFormatError(path, f"node {name!r}: child-graph node names no graph", node.line)
    _derive(attrs)
    return attrs


def _name_kernels(nodes: dict[str, dict[str, Any]], doc: DotDocument) -> None:
    """Give each kernel read from a driver label its demangled and short names, demangling
    them all in one bounded child process (``graphscope.names``): the short names come from
    its answers, so a file starts one child whatever the name caches hold."""
    kernels = [
        attrs
        for key, attrs in nodes.items()
        if "gs_attrs" not in doc.nodes[key].attrs and attrs["type"] == "KERNEL" and "name" in attrs
    ]
    demangled = demangle_all(attrs["name"] for attrs in kernels)
    short = short_names_all(demangled)  # from these answers: no second child for this file
    for attrs in kernels:
        attrs["demangled"] = demangled[attrs["name"]]
        attrs["short_name"] = short[attrs["name"]]


def graph_from_dot(doc: DotDocument, path: str | Path | None = None) -> nx.DiGraph:
    """Build the graph model from a parsed cudaGraphDebugDotPrint document."""
    if not doc.directed:
        raise DotFormatError(
            path, "an undirected 'graph': cudaGraphDebugDotPrint writes a 'digraph'"
        )
    for edge in doc.edges:
        for end in (edge.source, edge.target):
            if parse_key(end) is None:
                raise DotFormatError(
                    path,
                    f"node {end!r} is not named graph_<G>_node_<N>: this "
                    "DOT file was not written by cudaGraphDebugDotPrint",
                    edge.line,
                )
    if not doc.nodes:
        return _empty_graph(doc, path)
    budget = JsonBudget()
    nodes = {name: _node_attrs(name, node, path, budget) for name, node in paced(doc.nodes.items())}
    _name_kernels(nodes, doc)
    lines = {name: node.line for name, node in doc.nodes.items()}
    # The contract first: what follows reads child graphs, bodies and ids as their types.
    check_nodes(nodes, path, DotFormatError, lines)
    G = nx.DiGraph()
    owners: dict[int, str] = {}  # graph id -> key of the node that owns it
    for name, node in paced(doc.nodes.items()):
        attrs = nodes[name]
        if node.subgraph is not None:
            cluster = _CLUSTER.match(node.subgraph)
            if cluster and int(cluster.group(1)) != attrs["graph_id"]:
                raise DotFormatError(
                    path,
                    f"node {name!r} sits in {node.subgraph}, not in cluster_{attrs['graph_id']}",
                    node.line,
                )
        # As the contract counts them: only a GRAPH or CONDITIONAL node owns what it names (a
        # bundle may carry ``bodies`` on a kernel, and its DOT dump then carries them too).
        for gid in claimed_graphs(attrs):
            if gid in owners:
                raise DotFormatError(
                    path, f"graph_{gid} is claimed by both {owners[gid]} and {name}", node.line
                )
            owners[gid] = name
        G.add_node(name, **attrs)
    for _, data in G.nodes(data=True):
        data.setdefault("parent", owners.get(data["graph_id"]))
    for edge in doc.edges:
        for end in (edge.source, edge.target):
            if end not in G:
                raise DotFormatError(
                    path, f"edge names node {end!r}, which is not declared", edge.line
                )
        src, dst = G.nodes[edge.source], G.nodes[edge.target]
        if src["graph_id"] != dst["graph_id"]:
            raise DotFormatError(
                path, f"edge {edge.source} -> {edge.target} joins two graphs", edge.line
            )
        if "gs_attrs" in edge.attrs:
            edge_attrs = _gs_json(edge.attrs["gs_attrs"], path, "edge gs_attrs", edge.line, budget)
            if not isinstance(edge_attrs, dict):
                raise DotFormatError(path, "edge gs_attrs is not a JSON object", edge.line)
        else:
            try:
                edge_attrs = {_snake(k): _value(v) for k, v in edge.attrs.items()}
            except _CellError as exc:
                where = f"edge {edge.source} -> {edge.target}"
                raise DotFormatError(path, f"{where}: {exc}", edge.line) from None
        G.add_edge(edge.source, edge.target, **edge_attrs)
    present = {d["graph_id"] for _, d in G.nodes(data=True)}
    for gid, owner in owners.items():
        # graphscope's own dump carries each node's attributes exactly (gs_attrs): a graph
        # with no nodes there was empty in the graph written, and is not marked again.
        if gid not in present and "gs_attrs" not in doc.nodes[owner].attrs:
            # An empty body graph prints as an empty cluster: nothing to attach; keep the ref.
            G.nodes[owner].setdefault("empty_graphs", []).append(gid)
    roots = sorted({d["graph_id"] for _, d in G.nodes(data=True) if d["parent"] is None})
    G.graph.update(_graph_metadata(doc, path, budget))
    G.graph.setdefault("root_graph_ids", roots)
    G.graph.setdefault("source", {"format": "dot", "path": None if path is None else str(path)})
    check_structure(G, path, DotFormatError)
    return G


def _graph_metadata(
    doc: DotDocument, path: str | Path | None, budget: JsonBudget
) -> dict[str, Any]:
    """The graph metadata graphscope's DOT writer keeps in ``gs_graph`` (none elsewhere)."""
    # The schema the graph is read in: a DOT file has no version of its own, and a stamp in
    # gs_graph is its writer's, read as the bundle reader reads its metadata's.
    if "gs_graph" not in doc.attrs:
        return {"schema_version": SCHEMA_VERSION}
    meta = _gs_json(doc.attrs["gs_graph"], path, "gs_graph", None, budget)
    if not isinstance(meta, dict):
        raise DotFormatError(path, "gs_graph is not a JSON object")
    if "recording" in meta:  # checked, with its defaults, as a bundle's recording section is
        try:
            check_graph_entry(meta["recording"], path, "gs_graph.recording")
        except InputError as exc:
            raise DotFormatError(path, exc.message) from None
    return {**meta, "schema_version": SCHEMA_VERSION}


def _empty_graph(doc: DotDocument, path: str | Path | None) -> nx.DiGraph:
    """An empty graph, as cudaGraphDebugDotPrint dumps one: a cluster with no nodes.

    Inductor's CUDA graph trees instantiate such a graph first. graphscope's own DOT writer
    marks an empty graph with its ``gs_graph`` metadata instead. A DOT file with neither is
    refused: nothing says it is a CUDA graph.
    """
    clusters = [m for sub in doc.subgraphs if sub.name and (m := _CLUSTER.match(sub.name))]
    if doc.edges or not (clusters or "gs_graph" in doc.attrs):
        raise DotFormatError(path, "the DOT graph has no nodes")
    G = nx.DiGraph()
    G.graph.update(_graph_metadata(doc, path, JsonBudget()))
    G.graph.setdefault("root_graph_ids", [int(clusters[0].group(1))] if clusters else [])
    G.graph.setdefault("source", {"format": "dot", "path": None if path is None else str(path)})
    check_structure(G, path, DotFormatError)
    return G


def read_dot(path: str | Path, text: str | None = None) -> nx.DiGraph:
    """Read a ``cudaGraphDebugDotPrint`` file (``text`` if already read) into a DiGraph."""
    if text is None:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    return graph_from_dot(parse_dot(text, path), path)
