"""Where a node's memory addresses point: the buffers and allocator segments a graph names.

The capture resolves kernel arguments only (``pointers``); a copy, memset or batch memory op
to the very same address points to the same place, so its addresses are looked up among the
graph's resolved ones. Used by the node panel, the search for a buffer, and the CLI.
"""

from __future__ import annotations

import weakref
from typing import Any

import networkx as nx

# Where each kernel-argument address of a graph points, by address: the capture resolves kernel
# arguments only, and a copy or memset to the very same address points to the same place.
_KNOWN: weakref.WeakKeyDictionary[nx.DiGraph, dict[int, dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)


def prepare(G: nx.DiGraph) -> None:
    """Build what a node's panel looks up across the whole graph (where each kernel-argument
    address points), so that no click waits for it: on the 100,064-node graph, the first
    click on a copy took 0.28 to 0.40 s more while it was built."""
    known_addresses(G)


def known_addresses(G: nx.DiGraph) -> dict[int, dict[str, Any]]:
    if G not in _KNOWN:
        known: dict[int, dict[str, Any]] = {}
        for _, data in G.nodes(data=True):
            for p in data.get("pointers") or ():
                # A bundle's pointer entries are kept as written: one may lack its address.
                if isinstance(p.get("address"), int) and (p.get("buffer") or p.get("segment")):
                    known.setdefault(p["address"], p)
        _KNOWN[G] = known
    return _KNOWN[G]


def endpoint(data: dict[str, Any], side: str) -> tuple[str, str, str] | None:
    """A copy's ``side`` ("src" or "dst"): (label, address field, position) from whichever
    field the dump filled: runtime-types ``src_ptr.ptr``, else verbose ``src.device``, ``.host``
    or ``.array`` (the one the memory type names, else the first non-zero)."""
    if isinstance(data.get(f"{side}_ptr.ptr"), int):
        return side, f"{side}_ptr.ptr", position([data.get(f"{side}_pos.{a}") for a in "xyz"])
    fields = [f for f in ("device", "host", "array") if isinstance(data.get(f"{side}.{f}"), int)]
    if not fields:
        return None
    memory = str(data.get(f"{side}.memory_type", "")).split(" ")[0].lower()
    chosen = [f for f in fields if f == memory] or [f for f in fields if data[f"{side}.{f}"]]
    field = (chosen or fields)[0]
    pos = position([data.get(f"{side}.{a}") for a in ("x_in_bytes", "y", "z")])
    return f"{side} ({field})", f"{side}.{field}", pos


def position(pos: list[Any]) -> str:
    return "x {} y {} z {}".format(*pos) if any(pos) else "-"


def addresses(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(what, address field, position) of each address a copy, memset or batch op touches."""
    kind = data.get("type")
    if kind == "MEMCPY":
        ends = (endpoint(data, side) for side in ("src", "dst"))
        return [end for end in ends if end is not None]
    if kind == "MEMSET" and isinstance(data.get("dptr"), int):
        return [("dst", "dptr", "-")]
    found, i = [], 0
    while kind == "BATCH_MEM_OP" and isinstance(data.get(f"param_array[{i}].addr"), int):
        found.append((f"operation {i}", f"param_array[{i}].addr", "-"))
        i += 1
    return found


def memory_names(G: nx.DiGraph, data: dict[str, Any]) -> set[str]:
    """The buffers and allocator segments a node touches, by name (what a click on one in
    the buffers table searches for)."""
    names: set[str] = set()
    for p in list(data.get("pointers") or ()) + [
        known_addresses(G).get(data[field], {}) for _, field, _ in addresses(data)
    ]:
        names.update(str(p[k]) for k in ("buffer", "segment") if p.get(k))
    return names
