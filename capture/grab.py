"""Read a CUDA graph in two steps: what must be read while it lives, and the rest, later.

``snapshot`` runs while the ``cudaGraph_t`` exists (inside ``capture`` after stream capture,
or inside ``record``'s instantiation callback, where the program waits for it): the verbose
``cudaGraphDebugDotPrint`` dump, and per node its type and, for kernels, the function's
attributes and the raw argument bytes, which live in the graph. ``build`` does the slower
rest from those alone, after the graph may be gone: parse the dump, check that the driver and
the dump agree, add what only the driver said, name pointers inside arguments.

Both ``graphscope capture`` and ``graphscope record`` read graphs through these two.
"""

from __future__ import annotations

import ctypes
import gc
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import graphscope
from graphscope import hlo
from graphscope.errors import CaptureError
from graphscope.model import node_key
from graphscope.pace import paced

from . import introspect
from ._cuda import check, check_status, driver, libcuda
from .introspect import RawArgument
from .pointers import PointerMap

if TYPE_CHECKING:
    import networkx as nx

    from graphscope.hlo import Module

    from .attribution import Label


@dataclass
class Snapshot:
    """What the driver said about a graph's root nodes while the graph lived."""

    graph_id: int  # CUPTI's id of the graph
    types: dict[int, str]  # local id -> node type
    kernels: dict[int, tuple[dict[str, int], list[RawArgument]]] = field(default_factory=dict)
    seconds: float = 0.0  # time spent reading through the driver (after the dump)
    dump_seconds: float = 0.0  # time cudaGraphDebugDotPrint took

    @property
    def nodes(self) -> int:
        return len(self.types)


def dump_dot(handle: int, path: Path) -> None:
    """The verbose ``cudaGraphDebugDotPrint`` dump of graph ``handle`` into ``path``."""
    drv = driver()
    flags = int(drv.CUgraphDebugDot_flags.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE)
    check(
        drv.cuGraphDebugDotPrint(drv.CUgraph(init_value=handle), str(path).encode(), flags),
        "cuGraphDebugDotPrint",
    )


def clone(handle: int) -> int:
    """A copy of graph ``handle`` that graphscope owns (``cuGraphClone``), to be read later.

    On the H100 a clone of a 10,411-node decoder graph took 1.1 us per node, against 14.2
    for the dump and read, and read the same: the same local ids, node types, kernels,
    arguments and edges (benchmarks/probe_clone.py). Only the node handles differ.

    These three calls go through ctypes (``_cuda.libcuda``): the program waits on them at
    instantiation, before cuda-python's driver module need be imported."""
    copy = ctypes.c_void_p()
    check_status(libcuda().cuGraphClone(ctypes.byref(copy), handle), "cuGraphClone")
    if not copy.value:
        raise CaptureError("cuGraphClone gave no graph")
    return int(copy.value)


def destroy(handle: int) -> None:
    """Destroy a graph graphscope made (a :func:`clone`)."""
    check_status(libcuda().cuGraphDestroy(handle), "cuGraphDestroy")


def node_count(handle: int) -> int:
    """How many nodes graph ``handle`` has (its own, not its child graphs')."""
    count = ctypes.c_size_t(0)
    check_status(libcuda().cuGraphGetNodes(handle, None, ctypes.byref(count)), "cuGraphGetNodes")
    return int(count.value)


def _rename_graph(dot_path: Path, old: int, new: int) -> None:
    """Rewrite a dump's names of graph ``old`` (``cluster_<old>``, its label ``graph_<old>``,
    its nodes ``graph_<old>_node_<n>``) as graph ``new``'s: a clone's dump, read as the
    original it copies."""
    text = dot_path.read_bytes()
    text = re.sub(rb"\b(graph|cluster)_%d(?![0-9])" % old, rb"\1_%d" % new, text)
    dot_path.write_bytes(text)


def snapshot(
    handle: int,
    dot_path: Path,
    kernels: introspect.KernelReader | None = None,
    as_graph: int | None = None,
) -> Snapshot:
    """Dump graph ``handle`` to ``dot_path`` and read its nodes through the driver.

    ``kernels`` keeps what is read per kernel function across graphs (a process's graphs
    launch the same few hundred functions). ``as_graph``: ``handle`` is a :func:`clone`, and
    its nodes are named as those of the graph with this CUPTI id, which it copies (CUPTI's
    records name the original's nodes, and a clone keeps their local ids).
    """
    started = time.perf_counter()
    dump_dot(handle, dot_path)
    graph = driver().CUgraph(init_value=handle)
    if as_graph is not None:
        own = introspect.graph_id(graph)
        if own != as_graph:
            _rename_graph(dot_path, own, as_graph)
    dumped = time.perf_counter()
    reader = kernels or introspect.KernelReader()
    # Each read allocates; the collector would walk the process's objects for garbage this
    # loop never makes (48 us per node with it on a 10,000-node graph on the H200, under 20
    # with it off: docs/BENCHMARKS.md).
    collecting = gc.isenabled()
    gc.disable()
    try:
        types: dict[int, str] = {}
        details: dict[int, tuple[dict[str, int], list[RawArgument]]] = {}
        for local_id, node in paced(introspect.root_nodes(graph)):
            kind = introspect.node_type(node)
            types[local_id] = kind
            if kind == "KERNEL":
                details[local_id] = reader.read_raw(node)
        gid = introspect.graph_id(graph) if as_graph is None else as_graph
    finally:
        if collecting:
            gc.enable()
    return Snapshot(
        graph_id=gid,
        types=types,
        kernels=details,
        seconds=time.perf_counter() - dumped,
        dump_seconds=dumped - started,
    )


def build(snap: Snapshot, dot_path: Path, pointers: PointerMap | None) -> nx.DiGraph:
    """The graph as its verbose dump describes it, with what only the driver knew added.

    Node ids are checked to agree: a node the driver had and the dump lacks is an error.
    """
    G = graphscope.load(dot_path)
    collecting = gc.isenabled()
    gc.disable()
    try:
        for local_id, kind in paced(snap.types.items()):
            key = node_key(snap.graph_id, local_id)
            if key not in G:
                raise CaptureError(f"driver node {key} is not in the DOT dump {dot_path}")
            data = G.nodes[key]
            if kind != data["type"]:
                raise CaptureError(f"{key}: the driver says {kind}, the dump says {data['type']}")
            if kind == "KERNEL":
                attrs, raw = snap.kernels[local_id]
                data.update(attrs)
                data["args"] = introspect.arguments(raw)
                if pointers is not None:
                    data["pointers"] = pointers.scan_raw([value for _, _, value in raw])
    finally:
        if collecting:
            gc.enable()
    return G


def read_graph(
    handle: int, dot_path: Path, pointers: PointerMap | None
) -> tuple[nx.DiGraph, float]:
    """``snapshot`` and ``build`` at once: the graph and the driver read's seconds."""
    snap = snapshot(handle, dot_path)
    return build(snap, dot_path, pointers), snap.seconds


def attach_hlo(G: nx.DiGraph, modules: list[Module]) -> int:
    """Label each kernel node that has no label with the HLO instruction behind its launch
    (``graphscope.hlo.match_kernels``, each graph's kernels in the order they were made);
    how many."""
    by_graph: dict[int, list[tuple[int, str]]] = {}
    for key, data in G.nodes(data=True):
        if data.get("type") == "KERNEL" and not data.get("attribution"):
            graph, local = data.get("graph_id"), data.get("local_id")
            if isinstance(graph, int) and isinstance(local, int):
                by_graph.setdefault(graph, []).append((local, key))
    labelled = 0
    for nodes in by_graph.values():
        nodes.sort()
        names = [str(G.nodes[key].get("name") or "") for _, key in nodes]
        for (_, key), origin in zip(nodes, hlo.match_kernels(names, modules), strict=True):
            if origin is None:
                continue
            G.nodes[key]["attribution"] = {
                "module": None,
                "op": origin["op"],
                "file": origin["file"],
                "line": origin["line"],
                "function": None,
                "hlo": {"module": origin["module"], "instruction": origin["instruction"]},
            }
            labelled += 1
    return labelled


def attach_labels(G: nx.DiGraph, labels: dict[int, Label]) -> int:
    """Put each attribution label on its node (keys are CUPTI's packed node ids); how many."""
    labelled = 0
    for packed, label in paced(labels.items()):
        key = node_key(packed >> 32, packed & 0xFFFFFFFF)
        if key in G:
            G.nodes[key]["attribution"] = label
            labelled += 1
    return labelled
