"""Reading a Dash component tree in tests: its components, their ids, and the text it shows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from dash import dcc, html


def walk(component: Any) -> Iterator[Any]:
    """Every component and string in a Dash component tree, depth first."""
    if isinstance(component, (list, tuple)):
        for c in component:
            yield from walk(c)
        return
    yield component
    children = getattr(component, "children", None)
    if children is not None and not isinstance(component, str):
        yield from walk(children)


def text(component: Any, sep: str = " ") -> str:
    """The text a component tree shows, its pieces joined by ``sep``; a Markdown table's cells
    as the text they show (the table's pipes and the escapes taken out)."""
    return sep.join(_shown(component))


def _shown(component: Any) -> Iterator[str]:
    if isinstance(component, (list, tuple)):
        for c in component:
            yield from _shown(c)
    elif isinstance(component, str):
        yield component
    elif isinstance(component, dcc.Markdown):
        yield from (cell for row in table_rows(component) for cell in row if cell)
    elif getattr(component, "children", None) is not None:
        yield from _shown(component.children)


def by_id(component: Any, component_id: Any) -> Any:
    """The component of a tree with this id (an error when there is none)."""
    for c in walk(component):
        if getattr(c, "id", None) == component_id:
            return c
    raise AssertionError(f"no component with id {component_id!r}")


def ids(component: Any) -> list[Any]:
    """The ids of a tree's components, depth first (those without one left out)."""
    return [c.id for c in walk(component) if getattr(c, "id", None) is not None]


_REFERENCE = re.compile(r"&#(\d+);")


def table_rows(component: Any) -> list[list[Any]]:
    """The rows of the table in a tree, header first where it has one: an ``html.Table``'s
    cells as components, or a Markdown table's cells as the text they show."""
    found = [c for c in walk(component) if isinstance(c, (html.Table, dcc.Markdown))]
    if isinstance(found[0], html.Table):
        return [list(r.children) for r in walk(found[0]) if isinstance(r, html.Tr)]
    lines = found[0].children.splitlines()
    assert re.fullmatch(r"\|( --- \|)+", lines[1]), lines[1]
    rows = [
        # Cells split at the table's pipes: a cell's own are character references.
        [_REFERENCE.sub(lambda m: chr(int(m.group(1))), c).strip() for c in line[2:-2].split(" | ")]
        for line in [lines[0], *lines[2:]]
    ]
    return rows[1:] if not any(rows[0]) else rows
