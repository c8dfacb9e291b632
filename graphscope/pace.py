"""Pause points in the loops that grow with a graph, for a thread working beside a program.

``graphscope record``'s worker builds bundles in the recorded program's own process: parsing
a dump, building its graph and encoding its bundle run Python that holds the GIL the
program's thread needs. The recorder sets a hook for its worker thread (:func:`giving_way`)
that waits while the program captures a graph; the loops here call it every ``EVERY`` items
(:func:`paced`, :func:`point`, and :func:`dumps` for a bundle's JSON text). Elsewhere no
hook is set and they cost nothing: :func:`paced` hands the iterable back as it is.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

#: Items between two calls of the hook: a few milliseconds of work at most.
EVERY = 256

# A context variable, so the hook is the setting thread's alone (each thread has its own
# context): the program's threads may call the same loops meanwhile, and never wait.
_hook: ContextVar[Callable[[], object] | None] = ContextVar("graphscope_pace", default=None)


@contextlib.contextmanager
def giving_way(hook: Callable[[], object]) -> Iterator[None]:
    """Call ``hook`` at the pause points this thread reaches inside the block."""
    token = _hook.set(hook)
    try:
        yield
    finally:
        _hook.reset(token)


def point() -> None:
    """A pause point: call this thread's hook, if it has one."""
    hook = _hook.get()
    if hook is not None:
        hook()


def paced(items: Iterable[T]) -> Iterable[T]:
    """``items``, with a pause point every ``EVERY`` of them where this thread has a hook."""
    hook = _hook.get()
    if hook is None:
        return items
    return _paced(items, hook)


def _paced(items: Iterable[T], hook: Callable[[], object]) -> Iterator[T]:
    for i, item in enumerate(items):
        if i % EVERY == EVERY - 1:
            hook()
        yield item


#: How deep :func:`dumps` looks for long lists; below that a value is encoded whole.
_DEPTH = 4
#: What ``json.dumps(value, separators=(",", ":"), allow_nan=False)`` makes for each call.
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """``json.dumps(value, separators=(",", ":"), allow_nan=False)``, the same text, with a
    pause point every ``EVERY`` items of its long lists and dicts.

    One ``json.dumps`` of a 10,411-node bundle held the GIL for 0.17 to 0.24 s on the
    development VM; in pieces, the worker can stop between them for a capture. The pieces
    are ``json.dumps``'s own text, so the encoder stays the C one."""
    hook = _hook.get()
    if hook is None:
        return _ENCODER.encode(value)
    out: list[str] = []
    _encode(value, out, hook, 0)
    return "".join(out)


def _encode(value: Any, out: list[str], hook: Callable[[], object], depth: int) -> None:
    kind = type(value)
    if kind is list and len(value) > EVERY:
        out.append("[")
        for start in range(0, len(value), EVERY):
            if start:
                out.append(",")
            out.append(_ENCODER.encode(value[start : start + EVERY])[1:-1])
            hook()
        out.append("]")
    elif kind is dict and depth < _DEPTH and all(type(key) is str for key in value):
        items = list(value.items())
        out.append("{")
        if len(items) > EVERY:  # many keys: whole pieces of the dict
            for start in range(0, len(items), EVERY):
                if start:
                    out.append(",")
                piece = dict(items[start : start + EVERY])
                out.append(_ENCODER.encode(piece)[1:-1])
                hook()
        else:  # a few keys: each value on its own, for the long lists inside
            for i, (key, item) in enumerate(items):
                if i:
                    out.append(",")
                out.append(_ENCODER.encode(key) + ":")
                _encode(item, out, hook, depth + 1)
        out.append("}")
    else:
        out.append(_ENCODER.encode(value))
