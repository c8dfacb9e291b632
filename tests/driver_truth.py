"""Compare a graph read from a DOT dump with what the driver API said about the same graph.

``driver.json`` beside each sample dump is written by ``graphscope.capture.dot_samples`` from
cuGraphGetNodes/cuGraphGetEdges/cuGraphKernelNodeGetParams and CUPTI ids, at the moment the
dump was printed. Which fields a dump carries depends on its flags; ``FIELDS`` says, per flag
set, which contract fields must be present and equal to the driver's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx

from graphscope.model import node_key

_FULL = {
    "KERNEL": ("name", "grid", "block", "shared_mem"),
    "MEMCPY": ("kind", "bytes"),
    "MEMSET": ("value", "element_size", "width", "height"),
    "MEM_ALLOC": ("bytes",),
}
FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "none": {"KERNEL": ("name",), "MEMCPY": ("kind", "bytes"), "MEMSET": ("value",)},
    "kernel-params": {
        "KERNEL": ("name", "grid", "block", "shared_mem"),
        "MEMCPY": ("kind", "bytes"),
        "MEMSET": ("value",),
    },
    "verbose": _FULL,
    "all": _FULL,
}


def flag_set(dump: Path) -> str:
    """The flag set a sample dump was printed with, from its file name."""
    stem = dump.stem
    if stem.startswith("flags-"):
        return stem[len("flags-") :]
    if stem == "torch-debug-dump":  # CUDAGraph.debug_dump prints verbose through the runtime
        return "verbose"
    raise ValueError(f"unknown dump {dump}")


def load_truth(dump: Path) -> dict[str, Any]:
    return json.loads((dump.parent / "driver.json").read_text())


def mismatches(G: nx.DiGraph, truth: dict[str, Any], flags: str) -> list[str]:
    """Every way ``G`` differs from the driver's record; empty when they agree exactly."""
    problems: list[str] = []
    expected = {node_key(n["graph_id"], n["local_id"]): n for n in truth["nodes"]}
    if set(G) != set(expected):
        problems.append(
            f"node keys differ: missing {sorted(set(expected) - set(G))[:5]}, "
            f"extra {sorted(set(G) - set(expected))[:5]}"
        )
    for key, want in expected.items():
        if key not in G:
            continue
        got = G.nodes[key]
        parent = node_key(*want["parent"]) if want["parent"] else None
        for field, value in (
            ("type", want["type"]),
            ("graph_id", want["graph_id"]),
            ("local_id", want["local_id"]),
            ("parent", parent),
        ):
            if got.get(field) != value:
                problems.append(f"{key}.{field}: read {got.get(field)!r}, driver {value!r}")
        for field in FIELDS[flags].get(want["type"], ()):
            if field not in got:
                problems.append(f"{key}.{field}: missing, driver says {want[field]!r}")
            elif got[field] != want[field]:
                problems.append(f"{key}.{field}: read {got[field]!r}, driver {want[field]!r}")
    want_edges = {(node_key(*e["from"]), node_key(*e["to"])) for e in truth["edges"]}
    if set(G.edges) != want_edges:
        problems.append(
            f"edges differ: missing {sorted(want_edges - set(G.edges))[:5]}, "
            f"extra {sorted(set(G.edges) - want_edges)[:5]}"
        )
    return problems
