"""Reading a Dash component tree in tests: its components, their ids, and the text it shows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


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
    """The text a component tree shows, its pieces joined by ``sep``."""
    return sep.join(c for c in walk(component) if isinstance(c, str))


def by_id(component: Any, component_id: Any) -> Any:
    """The component of a tree with this id (an error when there is none)."""
    for c in walk(component):
        if getattr(c, "id", None) == component_id:
            return c
    raise AssertionError(f"no component with id {component_id!r}")


def ids(component: Any) -> list[Any]:
    """The ids of a tree's components, depth first (those without one left out)."""
    return [c.id for c in walk(component) if getattr(c, "id", None) is not None]
