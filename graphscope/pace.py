"""Pause points in the loops that grow with a graph, for a thread working beside a program.

``graphscope record``'s worker builds bundles in the recorded program's own process: parsing
a dump, building its graph and encoding its bundle run Python that holds the GIL the
program's thread needs. The recorder sets a hook for its worker thread (:func:`giving_way`)
that waits while the program captures a graph; the loops here call it every
``EVERY`` items (:func:`paced`, :func:`point`). Elsewhere no hook is set and they cost
nothing: :func:`paced` hands the iterable back as it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import TypeVar

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
