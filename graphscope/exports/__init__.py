"""Exports of a graph for other tools: Perfetto, Model Explorer, networkx node-link.

Each module holds one format and a function ``G -> data`` that returns plain JSON-ready data;
``write(G, fmt, path)`` writes any of them atomically. The standalone HTML report draws
pictures, so it lives in ``graphscope.app.render.report_html``.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx

from .. import sizes
from ..io import write_atomic
from ..model import display_name, origin_of
from .model_explorer import model_explorer_graph, model_explorer_node_data
from .node_link import node_link
from .perfetto import chrome_trace

#: Format name -> (what it makes, the default file suffix).
FORMATS: dict[str, tuple[Callable[[nx.DiGraph], Any], str]] = {
    "perfetto": (chrome_trace, ".trace.json"),
    "model-explorer": (model_explorer_graph, ".model-explorer.json"),
    "node-link": (node_link, ".node-link.json"),
}


#: What to do when an export would be too large: every export writes each node whole.
EXPORT_INSTEAD = (
    "it writes each node whole, so a value many nodes share is written once per node; write "
    "a .json.gz bundle instead (graphscope convert), which stores it once"
)


def measure_html(G: nx.DiGraph, estimate: sizes.Estimate) -> None:
    """What the HTML report (``graphscope.app.render.report_html``) writes of ``G``, about: its
    pictures carry each node's name and attribution texts, a few times over (a 212-node graph
    whose names and modules were 200 KB each made 167 MiB: twice those texts a node; four
    times is counted), plus the plotly bundle it inlines."""
    texts = []
    for _, data in G.nodes(data=True):
        texts.append(display_name(data))
        texts.extend(origin_of(data).values())
    for _ in range(4):
        estimate.add_each(texts)
    estimate.total += (2 << 20) + 200 * G.number_of_nodes()


def write_json(
    data: Any, path: str | os.PathLike[str], what: str = "the export", measured: bool = False
) -> Path:
    """``data`` as JSON at ``path`` (gzipped when it ends in .gz), written atomically; its
    size measured first, and refused past ``sizes.LIMIT`` (``what`` names it there), unless
    the caller ``measured`` it before building it."""
    if not measured:
        sizes.check(path, lambda e: e.add(data), what, EXPORT_INSTEAD)
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
