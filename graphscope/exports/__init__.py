"""Exports of a graph for other tools: Perfetto, Model Explorer, networkx node-link.

Each module holds one format and a function ``G -> data`` that returns plain JSON-ready data;
``write(G, fmt, path)`` writes any of them atomically. The standalone HTML report draws
pictures, so it lives in ``graphscope.app.report_html``.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx

from ..io import write_atomic
from .model_explorer import model_explorer_graph, model_explorer_node_data
from .node_link import node_link
from .perfetto import chrome_trace

#: Format name -> (what it makes, the default file suffix).
FORMATS: dict[str, tuple[Callable[[nx.DiGraph], Any], str]] = {
    "perfetto": (chrome_trace, ".trace.json"),
    "model-explorer": (model_explorer_graph, ".model-explorer.json"),
    "node-link": (node_link, ".node-link.json"),
}


def write_json(data: Any, path: str | os.PathLike[str]) -> Path:
    """``data`` as JSON at ``path`` (gzipped when it ends in .gz), written atomically."""
    text = json.dumps(data, separators=(",", ":"), default=str)
    raw = text.encode()
    return write_atomic(path, gzip.compress(raw) if str(path).endswith(".gz") else raw)


__all__ = [
    "FORMATS",
    "chrome_trace",
    "model_explorer_graph",
    "model_explorer_node_data",
    "node_link",
    "write_json",
]
