"""Pointer integrity: whether each live graph still points at the parameters it was made with.

A graph keeps the addresses its kernels were captured with. A weight reload that rebinds a
parameter's storage (``param.data = new``, ``load_state_dict(..., assign=True)``, a sleep and
wake that frees the weights and allocates them again) leaves every graph reading the old
memory: the output goes wrong and nothing raises (sgl-project/sglang#27140). Every few seconds,
and once more as recording ends, the recorder's worker reads where the parameters of the
modules each graph was captured under are now (``pointers.tree_spans``: in C, milliseconds for
thousands of tensors) and compares that with where the graph's pointers say they were. Each
parameter a graph points into that has moved since, or is gone, is a :class:`Stale` finding,
filed once, with the nodes that point at the old address; ``replays_since`` then counts the
launches that read it.

What is checked here is the parameters and buffers of those modules; the other allocator
blocks a graph points into (static inputs, KV caches) are checked by :meth:`run_blocks`
(``blocks.py``). Pointers into memory torch's allocator does not hold (another framework's,
``cudaMalloc``'s) are not checked: the index's findings say so, never that the graph is
clean beyond them.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..pointers import tree_spans
from .blocks import BlockMap, block_name, what_became

if TYPE_CHECKING:
    from .lives import Life

_NODES_KEPT = 20


@dataclass
class Stale:
    """A parameter that graph ``graph`` points into, no longer where it was."""

    graph: str
    buffer: str  # "param:layers.0.attn.qkv.weight"
    was: int  # its first byte when the graph was made
    now: int | None  # its first byte now; None: gone (its module or tensor was dropped)
    nodes: list[str]  # the nodes that point into it (the first 20)
    pointers: int  # how many pointers of the graph point into it
    at_ns: int  # when the recorder saw it
    replays_at: int  # the graph's replays then
    why: str | None = None  # for an allocator block: "was freed", ...

    def as_dict(self, since_s: Any, replays: int) -> dict[str, Any]:
        out = {
            "graph": self.graph,
            "buffer": self.buffer,
            "was": self.was,
            "now": self.now,
            "nodes": list(self.nodes),
            "pointers": self.pointers,
            "at_s": since_s(self.at_ns),
            "replays_since": max(0, replays - self.replays_at),
        }
        if self.why is not None:
            out["why"] = self.why
        return out


@dataclass
class Use:
    """Which nodes of a graph point into one parameter, and how many pointers."""

    nodes: list[str] = field(default_factory=list)
    pointers: int = 0


def uses_of(G: Any) -> dict[str, Use]:
    """The parameters a built graph's kernels point into (the ``param:`` buffers of its
    nodes' ``pointers``), by name."""
    uses: dict[str, Use] = {}
    for key, data in G.nodes(data=True):
        for p in data.get("pointers") or ():
            name = p.get("buffer")
            if not isinstance(name, str) or not name.startswith("param:"):
                continue
            use = uses.setdefault(name, Use())
            use.pointers += 1
            if not use.nodes or use.nodes[-1] != str(key):
                use.nodes.append(str(key))
    return uses


def roots_of(trees: list[tuple[str, Any, Any]]) -> list[tuple[str, weakref.ref[Any]]]:
    """``(prefix, weak root)`` of each tree a graph's parameters were named from."""
    return [(prefix, weakref.ref(root)) for prefix, root, _ in trees]


def worth_keeping(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The findings an index keeps: a moved parameter always; an allocator block freed under
    a graph only once the graph was launched after (a program that frees a graph's input and
    never launches it again has no fault, and neither has one that is ending)."""
    return [s for s in entries if "why" not in s or s["replays_since"]]


class IntegrityCheck:
    """Compares where each live graph's parameters were when it was made with where they are
    now, and files the moved ones its kernels point into."""

    def __init__(self) -> None:
        self.found: list[Stale] = []
        self._then: dict[int, tuple[Any, dict[str, int]]] = {}  # id(spans) -> name -> start

    def run(self, lives: list[Life], now_ns: int) -> list[Stale]:
        """Check every graph; the findings new since the last run.

        A move is noted when it is first seen, graph built or not (the worker builds while the
        program rests, and a serving loop may not rest until it ends); it is filed once the
        graph is built and its kernels are known to point into that parameter."""
        walked: dict[int, dict[str, int] | None] = {}  # id(root) -> path -> first byte now
        moved_by: dict[int, dict[str, int]] = {}  # id(spans) -> moved name -> start now
        new: list[Stale] = []
        for life in lives:
            if not life.parameters or not life.param_roots:
                continue
            if life.destroyed_ns is None:  # moves are noted while the graph lives
                key = id(life.parameters)
                if key not in moved_by:
                    now = _where_now(life.param_roots, walked)
                    then = self._names(life.parameters)
                    # None: a tree gone (the program ending) or torn mid-walk: nothing new
                    moved_by[key] = (
                        {}
                        if now is None
                        else {n: now.get(n, -1) for n, first in then.items() if now.get(n) != first}
                    )
                for name, where in moved_by[key].items():
                    if name not in life.param_moved:
                        life.param_moved[name] = (where, now_ns, life.replays)
            # and filed once the graph is built, even if it is gone by then (the program's
            # last replays came before it dropped the graph, and the worker builds late)
            if not life.param_moved or life.graph is None:
                continue
            if life.param_uses is None:
                life.param_uses = uses_of(life.graph)
            then = self._names(life.parameters)
            for name, (where, seen_ns, replays_at) in life.param_moved.items():
                use = life.param_uses.get(name)
                if use is None or name in life.param_filed:
                    continue
                life.param_filed.add(name)
                stale = Stale(
                    graph=life.id,
                    buffer=name,
                    was=then[name],
                    now=None if where < 0 else where,
                    nodes=use.nodes[:_NODES_KEPT],
                    pointers=use.pointers,
                    at_ns=seen_ns,
                    replays_at=replays_at,
                )
                self.found.append(stale)
                new.append(stale)
        return new

    def run_blocks(self, lives: list[Life], blocks: BlockMap, now_ns: int) -> list[Stale]:
        """File each block a live graph points into that is no longer the allocation it was
        when the graph was read (``blocks.py``); the findings new since the last run."""
        new: list[Stale] = []
        for life in lives:
            if not life.blocks or life.destroyed_ns is not None:
                continue
            for start, watch in life.blocks.items():
                if start in life.blocks_filed:
                    continue
                became = what_became(watch, blocks)
                if became is None:
                    continue
                life.blocks_filed.add(start)
                why, now = became
                stale = Stale(
                    graph=life.id,
                    buffer=block_name(watch.block),
                    was=start,
                    now=now,
                    nodes=list(watch.nodes),
                    pointers=watch.pointers,
                    at_ns=now_ns,
                    replays_at=life.replays,
                    why=why,
                )
                self.found.append(stale)
                new.append(stale)
        return new

    def _names(self, trees: Any) -> dict[str, int]:
        """``param:<prefix><path> -> first byte`` of spans read at instantiation, made once
        per spans object (graphs instantiated under the same parameters share one)."""
        held = self._then.get(id(trees))
        if held is None or held[0] is not trees:
            held = (
                trees,
                {
                    f"param:{prefix}{path}": first
                    for prefix, spans in trees
                    for first, _, path in spans
                },
            )
            self._then[id(trees)] = held
        return held[1]


def _where_now(
    roots: list[tuple[str, weakref.ref[Any]]], walked: dict[int, dict[str, int] | None]
) -> dict[str, int] | None:
    """``param:<prefix><path> -> first byte`` now, each tree walked once per check; None when
    a tree is gone (the program is ending: nothing to say) or a walk failed."""
    now: dict[str, int] = {}
    for prefix, ref in roots:
        root = ref()
        if root is None:
            return None
        if id(root) not in walked:
            try:
                spans, _ = tree_spans(root)
                walked[id(root)] = {path: first for first, _, path in spans}
            except Exception:
                walked[id(root)] = None
        where = walked[id(root)]
        if where is None:
            return None
        now.update((f"param:{prefix}{path}", first) for path, first in where.items())
    return now
