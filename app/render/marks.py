"""Compare marks: rings on B's DAG around the nodes a diff from A finds added or changed."""

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
