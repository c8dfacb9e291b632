"""Finding nodes from the search box: by name, module, op or type, or by a buffer they touch."""

from __future__ import annotations

from typing import Any

import networkx as nx

from graphscope.pattern import compile_pattern

from .addresses import memory_names

#: A search for the nodes that touch one buffer or segment (a click in the buffers table).
BUFFER_SEARCH = "buffer:"


def _in_order(G: nx.DiGraph, keys: list[str]) -> list[str]:
    return sorted(
        keys, key=lambda k: (G.nodes[k].get("graph_id", 0), G.nodes[k].get("local_id", 0))
    )


def search_nodes(G: nx.DiGraph, text: str | None) -> tuple[list[str], str | None]:
    """Nodes whose kernel name, module, op or type matches ``text`` (an RE2 regex, else
    the text as it is), in graph and creation order, and a warning to show, if any;
    ``buffer:NAME`` finds the nodes that touch that buffer or segment."""
    text = (text or "").strip()
    if not text:
        return [], None
    if text.startswith(BUFFER_SEARCH):
        name = text[len(BUFFER_SEARCH) :].strip()
        found = [k for k, d in G.nodes(data=True) if name in memory_names(G, d)]
        return _in_order(G, found), None if found else f"no node touches {name!r}"
    # RE2 cannot backtrack: a pattern like (\w+)+! runs in linear time, not for ever.
    pattern = compile_pattern(text)
    found = [key for key, data in G.nodes(data=True) if pattern.search_any(fields(data, key))]
    return _in_order(G, found), pattern.warning


def fields(data: dict[str, Any], key: str) -> tuple[Any, ...]:
    """What a search looks in: a node's names, type, module, op and key."""
    label = data.get("attribution")
    origin: dict[str, Any] = label if isinstance(label, dict) else {}
    return (
        data.get("name"),
        data.get("short_name"),
        data.get("demangled"),
        data.get("type"),
        origin.get("module"),
        origin.get("op"),
        key,
    )


def match_count(found: Any, selected: Any, searched: bool = False) -> str:
    """``3 of 17`` when the selected node is a match, else ``17 matches``; ``found`` as the
    page keeps it (anything but a non-empty list counts nothing): ``no match`` when a search
    was ``searched`` for, else nothing."""
    if not isinstance(found, list) or not found:
        return "no match" if searched else ""
    if selected in found:
        return f"{found.index(selected) + 1} of {len(found)}"
    return f"{len(found)} matches"
