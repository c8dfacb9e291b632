"""Model Explorer graph JSON, with namespaces from attribution, and a replay-time overlay.

The graph follows Model Explorer's ``graph_builder`` dataclasses (a ``GraphCollection``: a
``label`` and ``graphs``, each with ``id`` and ``nodes``; a node has ``id``, ``label``,
``namespace``, ``subgraphIds``, ``attrs`` as key/value strings and ``incomingEdges``). The
namespace is the module path with "/" between parts (``model/layers/3/self_attn``), which the
viewer folds into layers. Child and conditional-body graphs become graphs of their own,
reached through ``subgraphIds``. The overlay follows ``node_data_builder``: per graph id,
``results`` (node id -> ``{"value": us}``) and a ``gradient`` from fast to slow.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import networkx as nx

from ..io import bulk
from ..model import display_name, nodes_by_graph, origin_of, owned_graphs
from ..sizes import Estimate

# Shown in attrs of their own, or nothing to a reader of a saved graph: the id holds the graph
# and local ids, the label the short name; handles are addresses in the capturing process.
# (Leaving these out also took a 100,000-node export from 4.4 s to under 2 s: one dict each.)
_SKIPPED = {
    "args",
    "pointers",
    "replay",
    "eager",
    "attribution",
    "graph_id",
    "local_id",
    "topo_id",
    "parent",
    "short_name",
    "node_handle",
    "func_handle",
}
_SKIPPED_PREFIXES = ("access_policy_window.",)
# Containers longer than this are looked up by identity before their value (see _Cells).
_SMALL = 8
_GRADIENT = [{"stop": 0, "bgColor": "#e8f5e9"}, {"stop": 1, "bgColor": "#c62828"}]


def _graph_name(gid: int) -> str:
    return f"graph_{gid}"


class _Cells:
    """Key/value attribute cells, one object per distinct pair, shared between nodes.

    A 100,000-node graph has 2.2 million attributes but 125,000 distinct pairs (a model's
    layers repeat their kernels): sharing them took its export, freeing included, from 1.5 to
    2.4 s to 1.3 to 1.5 s over five runs each, the difference being the making and freeing of
    dicts. The cells are shared, so the returned graph is to be written, not edited.
    """

    def __init__(self) -> None:
        self.cells: dict[tuple[str, Any], dict[str, str]] = {}
        # Containers by identity first: one cell for a value that many nodes share, not a
        # tuple() or a str() of it at each (a 5 MB list on 20,000 nodes is 100 GB of text).
        # Each is kept with its cell, so that its id cannot be another object's meanwhile.
        self.by_id: dict[tuple[str, int], tuple[Any, dict[str, str]]] = {}
        self.shown: dict[tuple[str, ...], list[str]] = {}
        self.spaces: dict[str, str] = {}  # module path -> namespace, made once each

    def cell(self, key: str, value: Any) -> dict[str, str]:
        if isinstance(value, (list, dict)) and len(value) > _SMALL:
            return self._by_id(key, value)
        # Lists (grids, blocks) are looked up as tuples; str(), not json.dumps, for the text:
        # json.dumps took 10.5 of the 16.6 s a 100,000-node export once took.
        probe = (key, tuple(value) if value.__class__ is list else value)
        try:
            found = self.cells.get(probe)
        except TypeError:  # an unhashable value: a cell per object
            return self._by_id(key, value)
        if found is None:
            text = value if isinstance(value, str) else str(value)
            found = self.cells[probe] = {"key": key, "value": text}
        return found

    def _by_id(self, key: str, value: Any) -> dict[str, str]:
        kept = self.by_id.get((key, id(value)))
        if kept is None:
            kept = self.by_id[key, id(value)] = (value, {"key": key, "value": str(value)})
        return kept[1]

    def keys(self, data: dict[str, Any]) -> list[str]:
        """The attributes shown of a node, sorted: once per set of keys, not once per node."""
        signature = tuple(data)
        keys = self.shown.get(signature)
        if keys is None:
            keys = self.shown[signature] = sorted(
                k for k in signature if k not in _SKIPPED and not k.startswith(_SKIPPED_PREFIXES)
            )
        return keys


def _attrs(data: dict[str, Any], cells: _Cells) -> list[dict[str, str]]:
    cell = cells.cell
    out = [cell(k, data[k]) for k in cells.keys(data)]
    replay = data.get("replay")
    if isinstance(replay, dict):
        for field in ("median_us", "p90_us", "min_us", "max_us", "start_us"):
            if replay.get(field) is not None:
                out.append(cell(f"replay.{field}", replay[field]))
    eager = data.get("eager")
    if isinstance(eager, dict) and eager.get("duration_us") is not None:
        out.append(cell("eager.duration_us", eager["duration_us"]))
    origin = data.get("attribution")
    if isinstance(origin, dict):
        for field in ("module", "op", "file", "line"):
            if origin.get(field) is not None:
                out.append(cell(field, origin[field]))
    if data.get("args"):
        out.append(cell("arguments", len(data["args"])))
    return out


def _namespace(data: dict[str, Any], cells: _Cells) -> str:
    module = origin_of(data).get("module")
    if not isinstance(module, str):
        return ""
    space = cells.spaces.get(module)
    if space is None:  # once per module: a layer's nodes share it, and it can be long
        space = cells.spaces[module] = module.replace(".", "/")
    return space


def measure(G: nx.DiGraph, estimate: Estimate) -> None:
    """Give ``estimate`` what the export of ``G`` writes, about, before it is built: each
    node's attributes as text (``str`` of a value is about its JSON), its label (the short
    name, which attrs leave out) and namespace (the module path again), and an entry per
    incoming edge. Measured on the graph, not on the export: the export makes the text of
    each distinct value, which for a value nested to share itself many times over is far more
    than the graph holds."""
    nodes = [data for _, data in G.nodes(data=True)]
    estimate.add_each(nodes, 200)
    estimate.add_each([display_name(data) for data in nodes])
    estimate.add_each([module for data in nodes if isinstance(module := _module(data), str)])
    estimate.total += 100 * G.number_of_edges()


def _module(data: dict[str, Any]) -> Any:
    return origin_of(data).get("module")


def model_explorer_graph(G: nx.DiGraph, label: str | None = None) -> dict[str, Any]:
    """The graph as a Model Explorer ``GraphCollection`` JSON object (read only: nodes share
    their attribute cells)."""
    with bulk():
        return _graph(G, label)


def _graph(G: nx.DiGraph, label: str | None) -> dict[str, Any]:
    members = nodes_by_graph(G)
    owned = {key: [_graph_name(g) for g in ids] for key, ids in owned_graphs(G).items()}
    graphs = []
    cells = _Cells()
    for gid in sorted(members):
        nodes = []
        for key in sorted(members[gid], key=lambda k: G.nodes[k].get("local_id", 0)):
            data = G.nodes[key]
            nodes.append(
                {
                    "id": key,
                    "label": display_name(data),
                    "namespace": _namespace(data, cells),
                    "subgraphIds": owned.get(key, []),
                    "attrs": _attrs(data, cells),
                    "incomingEdges": [
                        {"sourceNodeId": src, "sourceNodeOutputId": "0", "targetNodeInputId": "0"}
                        for src in G.pred[key]
                    ],
                    "outputsMetadata": [],
                    "inputsMetadata": [],
                }
            )
        graphs.append({"id": _graph_name(gid), "nodes": nodes})
    name = label or str(G.graph.get("model") or "graphscope")
    return {"label": name, "graphs": graphs}


def model_explorer_node_data(G: nx.DiGraph) -> dict[str, Any]:
    """Replay medians as Model Explorer node data, keyed by graph id (``ModelNodeData``)."""
    results: dict[str, dict[str, Any]] = defaultdict(dict)
    for key, data in G.nodes(data=True):
        replay = data.get("replay")
        if isinstance(replay, dict) and isinstance(replay.get("median_us"), (int, float)):
            graph = _graph_name(int(data.get("graph_id", 0)))
            results[graph][key] = {"value": float(replay["median_us"])}
    return {graph: {"results": values, "gradient": _GRADIENT} for graph, values in results.items()}
