"""Reading a Dash component tree in tests: every component in it, and the text it shows."""

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
