"""Marks: rings on a DAG around the nodes a diff from A finds added or changed in B, and
around the node where the graph's values first differ from eager's."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import plotly.graph_objects as go

from .figure import SVG_LIMIT, ring_trace
from .placement import Layout

ADDED = "#2ca02c"
# Darker than the search matches' orange ring (#ff9900) and the MEMCPY nodes' (#ff7f0e).
CHANGED = "#d95f02"
# Sizes apart, so that a collapsed group holding both kinds shows both rings, and wider than
# the search matches' ring (17) and the selection ring (21) that may sit inside them.
_ADDED_SIZE, _CHANGED_SIZE = 24, 28
#: The first node whose output differs from eager's (capture's ``numerics.first``).
DIFFERS = "#9c27b0"
_DIFFERS_SIZE = 32


def mark_traces(
    lay: Layout,
    added: Collection[str],
    changed: Collection[str],
    drawn_as: Callable[[str], str],
) -> list[Any]:
    """A ring trace each for B's ``added`` and ``changed`` nodes (keys of the full graph B).

    ``drawn_as`` names the drawn node that holds a key: the key itself, or the collapsed group
    it is folded into, which is ringed for all of its members. The traces go before the
    figure's last one: the selection ring stays last (the server patches it by index).
    """
    Scatter = go.Scatter if len(lay.pos) <= SVG_LIMIT else go.Scattergl
    traces = []
    for what, keys, colour, size in (
        ("added in B", added, ADDED, _ADDED_SIZE),
        ("changed", changed, CHANGED, _CHANGED_SIZE),
    ):
        if not keys:
            continue
        drawn = sorted({drawn_as(k) for k in keys} & lay.pos.keys())
        traces.append(ring_trace(Scatter, lay, drawn, f"{what} ({len(keys)})", colour, size, 2.5))
    return traces


def values_mark(G: Any, lay: Layout, drawn_as: Callable[[str], str]) -> list[Any]:
    """A ring around the node(s) of the first op whose output differs from eager's, where
    capture compared the graph's values (``numerics.first``); none otherwise. Like the compare
    marks it goes before the figure's last trace, the selection ring."""
    numerics = G.graph.get("numerics")
    first = numerics.get("first") if isinstance(numerics, dict) else None
    nodes = first.get("nodes") if isinstance(first, dict) else None
    keys = [k for k in nodes or () if isinstance(k, str) and k in G]
    if not keys:
        return []
    Scatter = go.Scatter if len(lay.pos) <= SVG_LIMIT else go.Scattergl
    drawn = sorted({drawn_as(k) for k in keys} & lay.pos.keys())
    name = f"values first differ from eager ({len(keys)})"
    return [ring_trace(Scatter, lay, drawn, name, DIFFERS, _DIFFERS_SIZE, 3.0)]
