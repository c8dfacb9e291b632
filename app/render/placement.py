"""Where each node sits on the page: topological levels, wrapped into rows.

A decode step is a chain of hundreds of kernels. Drawn level by level it is a ladder hundreds of
levels long; here the levels are cut into rows that read left to right and top to bottom, a new
row starting where the layer changes (``model.layers.3`` from attribution) or where a row is
full. Branches stack within a row, one lane per node of a level. Child and conditional-body
graphs are laid out the same way below their parent graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from typing import TypedDict

import networkx as nx

from graphscope.analysis.folding import collapsed, repeat_sections
from graphscope.model import layer_of, module_of, owner_of

from .shared import LABEL_LIMIT

#: Levels in a row before it wraps, when no layer boundary comes first.
ROW_LEVELS = 50
#: Graphs of at most LABEL_LIMIT drawn nodes carry a label on every node (figure.py) and
#: wrap after this many levels, to leave each label room.
LABELLED_ROW = 10
#: A layer change starts a new row only after this many levels: graphs whose layers
#: interleave node by node would otherwise get a row per node ...
MIN_ROW = 6
#: ... except in a drawing of at most this many nodes, mostly blocks.
BLOCK_VIEW = 40
#: Module boxes drawn at most: past this many the page draws none (a wrapped drawing of a
#: whole 224-layer model has one a layer, and SVG shapes are not culled with the nodes).
BOXES_KEPT = 400
#: How far a box reaches past its nodes, and how much each box inside another is inset.
BOX_PAD = 0.42
BOX_INSET = 0.1


class LayoutRow(TypedDict):
    """One row of the drawing: its graph, its label on the left, its y and its node count."""

    graph_id: int
    label: str
    y: float
    nodes: int


class Box(TypedDict):
    """A module's box: around the drawn nodes of one layer, or of one module inside it, in
    the drawing's coordinates; ``depth`` counts the boxes it sits in."""

    module: str
    label: str
    x0: float
    x1: float
    y0: float
    y1: float
    depth: int


@dataclass
class Layout:
    """Node positions and the rows they were cut into."""

    pos: dict[str, tuple[float, float]] = field(default_factory=dict)
    rows: list[LayoutRow] = field(default_factory=list)
    # (owner, first node) for each child or body graph drawn: the figure joins them.
    nests: list[tuple[str, str]] = field(default_factory=list)
    # A view of blocks (a large graph's folded overview) reads top to bottom, one level a
    # line, as Model Explorer stacks its boxes: no row wraps back with a long diagonal edge,
    # and each node's label sits at its right (the page reads this from the figure's meta).
    vertical: bool = False
    # Boxes around each layer's nodes and, in a drawing of blocks, around each module opened
    # inside a layer (``module_boxes``).
    boxes: list[Box] = field(default_factory=list)


def _levels(G: nx.DiGraph, members: list[str]) -> list[list[str]]:
    ranks = sorted(members, key=lambda k: (G.nodes[k]["local_id"], k))
    order = {key: i for i, key in enumerate(ranks)}
    sub = G.subgraph(members)
    if not nx.is_directed_acyclic_graph(sub):
        # Collapsed groups can depend on each other both ways (a module that runs before and
        # after a layer); such a graph is drawn as the chain of its nodes in creation order.
        return [[key] for key in ranks]
    return [sorted(level, key=order.__getitem__) for level in nx.topological_generations(sub)]


def _cut(
    G: nx.DiGraph, levels: list[list[str]], row_levels: int, sections: Mapping[str, str]
) -> list[list[list[str]]]:
    """Split the levels into rows where the layer changes (into, out of or between layers)
    and where a row is full. A section (``layout``'s) starts and ends a row wherever it is."""
    rows: list[list[list[str]]] = []
    current: list[list[str]] = []
    layer: str | None = None
    section: str | None = None
    # A view of blocks (a large graph's overview) is short: each layer's blocks get a row of
    # their own however few they are, so that a row reads as one layer.
    least = 1 if G.number_of_nodes() <= BLOCK_VIEW else MIN_ROW
    for level in levels:
        # A group inside a layer (its attention) belongs to the layer; a fold of layers and
        # other groups are layers of their own: rows of them wrap only when full.
        here = layer_of(G.nodes[level[0]])
        into = sections.get(level[0])
        changed = (here != layer and len(current) >= least) or into != section
        if current and (changed or len(current) >= row_levels):
            rows.append(current)
            current = []
        layer, section = here, into
        current.append(level)
    if current:
        rows.append(current)
    return rows


def _row_label(
    G: nx.DiGraph, row: list[list[str]], graph_id: int, sections: Mapping[str, str]
) -> str:
    keys = [key for level in row for key in level]
    named = {sections.get(key) for key in keys}
    if len(named) == 1 and None not in named:
        # "nodes 3..55, 1 of 32": the rows around it name the graph, and the label fits
        return str(named.pop()).split(": ", 1)[-1]
    layers = {layer_of(G.nodes[key]) for key in keys}
    if len(layers) == 1 and None not in layers:
        return str(layers.pop())
    modules: list[str] = []
    for key in keys:
        label = G.nodes[key].get("attribution")
        module = label.get("module") if isinstance(label, dict) else None
        if module and module not in modules:
            modules.append(module)
    if modules:
        text = ", ".join(modules[:3]) + (", ..." if len(modules) > 3 else "")
        return text
    first, last = G.nodes[keys[0]]["local_id"], G.nodes[keys[-1]]["local_id"]
    owned = owner_of(G, G.nodes[keys[0]])
    if owned is not None:  # a child graph or conditional body: "IF body 'True' of graph_1_node_4"
        return f"{owned[0]} of {owned[1]}"
    return f"graph {graph_id}: nodes {first}..{last}"


def drawn_as(levels: dict[str, list[str]], key: str, expanded: Set[str]) -> str:
    """The drawn node that holds ``key``: its outermost collapsed group, or itself."""
    for group in levels.get(key, []):
        if group not in expanded:
            return "group:" + group
    return key


def drawn(
    G: nx.DiGraph, levels: dict[str, list[str]], expanded: Set[str]
) -> tuple[nx.DiGraph, Layout]:
    """The graph as drawn with ``expanded`` groups open, and its positions: the dashboard's
    view and the HTML report's one drawing."""
    shown = collapsed(G, levels, expanded)
    return shown, layout(shown, sections=repeat_sections(shown, levels, expanded))


def layout(
    G: nx.DiGraph, row_levels: int | None = None, sections: Mapping[str, str] | None = None
) -> Layout:
    """Positions for every node: x grows along a row, y grows downwards (plotted reversed).

    Rows hold ``row_levels`` levels; by default ``LABELLED_ROW`` where every node is
    labelled, else ``ROW_LEVELS``. ``sections`` names the part of the drawing each node of a
    layer that attribution does not name sits in (``folding.repeat_sections``: a DOT dump's
    repeated kernel period): it is cut into rows, labelled and boxed as a layer is.
    """
    sections = sections or {}
    if row_levels is None:
        row_levels = LABELLED_ROW if G.number_of_nodes() <= LABEL_LIMIT else ROW_LEVELS
    by_graph: dict[int, list[str]] = {}
    for key, data in G.nodes(data=True):
        by_graph.setdefault(int(data.get("graph_id", 0)), []).append(key)
    roots = [int(g) for g in G.graph.get("root_graph_ids") or []]
    order = [g for g in roots if g in by_graph] + sorted(g for g in by_graph if g not in roots)
    out = Layout(vertical=G.number_of_nodes() <= BLOCK_VIEW and len(order) == 1)
    y = 0.0
    for graph_id in order:
        members = by_graph[graph_id]
        head = min(members, key=lambda k: (G.nodes[k].get("local_id", 0), k))
        owned = owner_of(G, G.nodes[head])
        if owned is not None and owned[1] in G:
            out.nests.append((owned[1], head))
        if out.vertical:
            y = _column(G, members, out, sections)
            continue
        for row in _cut(G, _levels(G, members), row_levels, sections):
            width = max(len(level) for level in row)
            for x, level in enumerate(row):
                for lane, key in enumerate(level):
                    out.pos[key] = (float(x), y + lane)
            out.rows.append(
                {
                    "graph_id": graph_id,
                    "label": _row_label(G, row, graph_id, sections),
                    "y": y,
                    "nodes": sum(len(level) for level in row),
                }
            )
            y += width + 1
        y += 1  # a blank line between graphs
    out.boxes = module_boxes(G, out, sections)
    return out


def _column(G: nx.DiGraph, members: list[str], out: Layout, sections: Mapping[str, str]) -> float:
    """A graph's levels one under the other (lanes across), a half line between layers, each
    layer's first line labelled; the y after the last line. A section outside the layers (the
    embedding, a fold of layers with the head) gets no label of its own: each of its nodes is
    labelled beside it."""
    y = 0.0

    def layer(key: str) -> str | None:
        return layer_of(G.nodes[key]) or sections.get(key)

    layered = any(layer(key) is not None for key in members)
    for row in _cut(G, _levels(G, members), 1 << 30, sections):
        graph_id = int(G.nodes[row[0][0]].get("graph_id", 0))
        layers = {layer(key) for level in row for key in level}
        # A layer's section is named by it; in a drawing with no layers at all (a DOT dump)
        # the one section says which graph and nodes it is.
        named = (len(layers) == 1 and None not in layers) or not layered
        out.rows.append(
            {
                "graph_id": graph_id,
                "label": _row_label(G, row, graph_id, sections) if named else "",
                "y": y,
                "nodes": sum(len(level) for level in row),
            }
        )
        for level in row:
            for lane, key in enumerate(level):
                out.pos[key] = (float(lane), y)
            y += 1
        y += 0.5
    return y


def _contiguous(
    lines: list[float], taken: dict[float, set[str]], module: str, path: Callable[[str], str | None]
) -> bool:
    """Whether the lines ``module``'s nodes sit on hold nothing else, and no other line comes
    between them: only then does a box around them say what is inside."""
    ordered = sorted(taken)
    first, last = ordered.index(min(lines)), ordered.index(max(lines))
    return all(_inside(path(key), module) for y in ordered[first : last + 1] for key in taken[y])


def _inside(path: str | None, module: str) -> bool:
    return path is not None and (path == module or path.startswith(module + "."))


def module_boxes(
    G: nx.DiGraph, lay: Layout, sections: Mapping[str, str] | None = None
) -> list[Box]:
    """Boxes around what each layer holds, and in a drawing of blocks (``vertical``) around
    each module opened inside a layer: a layer's attention opened shows as a box inside the
    layer's box, as Model Explorer nests namespaces. A module gets a box only where its nodes
    fill whole lines with nothing else between them, and only where it holds more than one
    drawn node; none past ``BOXES_KEPT``."""
    lines: dict[float, set[str]] = {}
    for key, (_, y) in lay.pos.items():
        lines.setdefault(y, set()).add(key)
    right: dict[float, float] = {}
    for x, y in lay.pos.values():
        right[y] = max(right.get(y, 0.0), x)
    # Each module at or inside a layer, with the lines its drawn nodes sit on.
    sections = sections or {}

    def path_of(key: str) -> str | None:
        return sections.get(key) or module_of(G.nodes[key])

    spans: dict[str, list[float]] = {}
    for key, (_, y) in lay.pos.items():
        if key in sections:  # a section is boxed whole, as a layer is
            spans.setdefault(sections[key], []).append(y)
            continue
        path = module_of(G.nodes[key])
        if not path or layer_of(G.nodes[key]) is None:
            continue
        parts = path.split(".")
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            if layer_of({"attribution": {"module": prefix}}) is None:
                break
            if (
                not lay.vertical
                and end > 1
                and layer_of({"attribution": {"module": prefix}}) != prefix
            ):
                continue  # a wrapped drawing boxes its layers only
            spans.setdefault(prefix, []).append(y)
    boxes: list[Box] = []
    for module in sorted(spans, key=lambda m: (min(spans[m]), m.count("."))):
        ys = spans[module]
        if len(ys) < 2 or not _contiguous(ys, lines, module, path_of):
            continue
        depth = sum(1 for b in boxes if _inside(module, b["module"]) and b["module"] != module)
        inset = BOX_INSET * depth
        top, bottom = min(ys), max(ys)
        # A wrapped row's lanes go downwards from its y: its box takes them in.
        bottom = max(y for y in lines if top <= y <= bottom) if lay.vertical else bottom
        widest = max(right[y] for y in lines if top <= y <= bottom)
        boxes.append(
            {
                "module": module,
                "label": module.rsplit(".", 1)[-1] if depth else module,
                "x0": -BOX_PAD + inset,
                # in a drawing of blocks, the labels at the nodes' right are inside it
                "x1": widest + (1.6 if lay.vertical else 0.0) + BOX_PAD - inset,
                "y0": top - BOX_PAD + inset,
                "y1": bottom + BOX_PAD - inset,
                "depth": depth,
            }
        )
        if len(boxes) > BOXES_KEPT:
            return []
    return boxes
