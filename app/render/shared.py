"""What the Python side and the page's script (``assets/gs-*.js``, ``clientside``)
share, named once: the ids of the plots the page drives, the names of the traces it finds in
a figure, the keys of a DAG figure's ``layout.meta``, and the label limit.

``create_app`` gives them to the page once, as ``window.graphscopeShared`` in the page's
head (``script``), before any asset runs; the script reads them from there instead of
keeping copies of its own.
"""

from __future__ import annotations

import json
from typing import Literal, TypedDict

#: Element ids of the plots the page's script drives.
DAG = "dag"
MINIMAP = "minimap"
TIMELINE = "timeline"
#: Trace names the page finds in a figure: the DAG's edges (their arrowheads are drawn by
#: the page), and the selection ring of the DAG and the timeline (drawn by the page; the
#: server moves the trace by a patch on each click).
EDGES = "edges"
RING = "selected"
#: Most labels drawn at once; a graph of at most this many nodes has every label drawn.
LABEL_LIMIT = 400


class DagMeta(TypedDict):
    """A DAG figure's ``layout.meta``: how the page draws what Plotly is not asked to."""

    labels: Literal["always", "zoomed"]  # every node in view, or once a zoom leaves room
    arrows: bool  # the page draws the edges' arrowheads
    cull: bool  # the page gives Plotly only what is in and around the view (WebGL)
    minimap: bool  # a minimap is shown, in the right margin kept for it
    side: Literal["right", "alternate"]  # labels at each node's right (a column) or above
    # and below in turn (rows)


def for_page() -> dict[str, object]:
    """What the page's script reads, as JSON."""
    return {
        "ids": {"dag": DAG, "minimap": MINIMAP, "timeline": TIMELINE},
        "traces": {"edges": EDGES, "ring": RING},
        "labelLimit": LABEL_LIMIT,
    }


def script() -> str:
    """The page head's script that gives the page ``for_page()`` (JSON, from constants)."""
    return "<script>window.graphscopeShared = " + json.dumps(for_page()) + ";</script>"
