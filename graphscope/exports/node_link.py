"""networkx node-link JSON: the graph model as ``networkx.node_link_data`` writes it."""

from __future__ import annotations

from typing import Any

import networkx as nx


def node_link(G: nx.DiGraph) -> dict[str, Any]:
    """``nx.node_link_data(G, edges="edges")``: read back with ``nx.node_link_graph``."""
    data: dict[str, Any] = nx.node_link_data(G, edges="edges")
    return data
