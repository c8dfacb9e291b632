"""The view state: the graphs the app shows, how each is folded, and what is kept between
callbacks.

The page keeps its grouping as JSON in a store (``grouping``): ``{"source": id, "default":
"overview" | "expanded" | "collapsed", "toggled": [groups]}``, plus ``"compare": id`` when the
DAG marks a diff and ``"stepped": [groups]``, those the last step through search matches
opened (the next step shuts them). A graph's expanded groups are those its default opens,
with the toggled ones flipped. ``ViewState`` holds the app's files; each open one is an
``OpenFile``, which owns its graph's groups, drawn views, timeline rows and searches.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterable, Set
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import networkx as nx

from graphscope.analysis.folding import (
    all_groups,
    group_levels,
    overview,
)
from graphscope.analysis.search import search_nodes
from graphscope.recording import is_recording

from ..files.sources import RecordedRun, Registry, sample_files, sample_recordings
from ..render.placement import Layout, drawn, drawn_as
from ..render.timeline import Row, timeline_rows

#: Drawn views kept per open file (graph and placement, by expanded groups): a fold opened and
#: shut again redraws from here. The registry keeps graphs up to ``sources.NODES_KEPT`` nodes
#: in all, which bounds what the open files' views hold.
VIEWS_KEPT = 6
#: Timeline rows kept per file, likewise: a zoom redraws from them (1.4 million calls at 100k
#: nodes).
ROWS_KEPT = 3
#: Searches kept per file (matches by search text): the draw and the steps through matches.
SEARCHES_KEPT = 8
#: Open files kept: a long-running server is shown file after file, upload after upload, and
#: kept them all.
FILES_KEPT = 8
K = TypeVar("K")
V = TypeVar("V")


def _kept(cache: dict[K, V], key: K, make: Callable[[], V], limit: int) -> V:
    """``cache[key]``, made if missing; the oldest entry goes once ``limit`` are kept. Two
    threads may both make an entry: each gets a correct one."""
    if key not in cache:
        if len(cache) >= limit:
            with contextlib.suppress(RuntimeError, StopIteration, KeyError):
                cache.pop(next(iter(cache)), None)
        cache[key] = make()
    return cache[key]


#: How a grouping opens, before its toggles: the overview, every group open, or every one shut.
DEFAULTS = ("overview", "expanded", "collapsed")


def default_grouping(source_id: str) -> dict[str, Any]:
    """How a graph opens: its overview (analysis.folding.overview), nothing toggled from it."""
    return {"source": source_id, "default": "overview", "toggled": []}


def is_open(state: dict[str, Any], base: Set[str], group: str) -> bool:
    """Whether ``group`` is open in grouping ``state``, whose default opens ``base``."""
    return (group in base) != (group in state["toggled"])


def opened_to(
    state: dict[str, Any], base: Set[str], chain: list[str], want: bool = True
) -> dict[str, Any]:
    """``state`` with every group of ``chain`` open (or shut, with ``want`` False); ``base``
    is what its default opens. The same state comes back when nothing changes."""
    toggled = set(state["toggled"])
    for group in chain:
        if ((group in base) != (group in toggled)) != want:
            toggled.symmetric_difference_update({group})
    if toggled == set(state["toggled"]):
        return state
    return {**state, "toggled": sorted(toggled)}


def _bucket_files(files: list[Path], given: bool) -> list[dict[str, str]]:
    """The ``*.buckets.json`` beside the given files, as the buckets page's picker lists them."""
    folders = sorted({p.resolve().parent for p in files})
    return [
        {"label": str(f) if given else f"sample: {f.name}", "value": str(f)}
        for folder in folders
        for f in sorted(folder.glob("*.buckets.json"))
    ]


@dataclass(eq=False)
class OpenFile:
    """One open file: its graph and what the page made from it, kept while it stays open.

    Its groups, the overview it opens to, its drawn views, timeline rows and searches are
    made on first use. The caches are plain dicts and properties: two threads making the
    same entry at once each get a correct one.
    """

    id: str
    graph: nx.DiGraph
    _views: dict[frozenset[str], tuple[nx.DiGraph, Layout]] = field(
        default_factory=dict, repr=False
    )
    _rows: dict[frozenset[str], list[Row]] = field(default_factory=dict, repr=False)
    _searches: dict[str, tuple[list[str], str | None]] = field(default_factory=dict, repr=False)

    @cached_property
    def levels(self) -> dict[str, list[str]]:
        """Each node's groups, outermost first (``folding.group_levels``)."""
        return group_levels(self.graph)

    @cached_property
    def groups(self) -> frozenset[str]:
        """Every group of the graph. Kept: each click asks for them, and on the 10,780-node
        sample making the set was 6 of a click's 8 ms in the server."""
        return frozenset(all_groups(self.levels))

    @cached_property
    def overview(self) -> frozenset[str]:
        """The groups the file opens with (``folding.overview``)."""
        return frozenset(overview(self.levels))

    def base(self, default: str) -> frozenset[str]:
        """The groups open before any toggle, for a grouping's ``default``."""
        if default == "collapsed":
            return frozenset()
        return self.groups if default == "expanded" else self.overview

    def grouping_of(self, grouping: Any) -> dict[str, Any]:
        """The page's grouping if it belongs to this file, else the file's default."""
        if isinstance(grouping, dict) and grouping.get("source") == self.id:
            return grouping
        return default_grouping(self.id)

    def expanded(self, grouping: Any) -> frozenset[str]:
        """The expanded groups a grouping state asks for (a stale or missing one: the default).
        Without toggles, the kept set itself: on the 100,064-node graph expanded, copying its
        groups was half of a click's time in the server."""
        state = self.grouping_of(grouping)
        base = self.base(state["default"])
        toggled = set(state["toggled"]) & self.groups
        return base ^ toggled if toggled else base

    def view(self, expanded: Set[str]) -> tuple[nx.DiGraph, Layout]:
        """The graph drawn with these groups expanded (the rest folded) and its placement."""

        def make() -> tuple[nx.DiGraph, Layout]:
            return drawn(self.graph, self.levels, expanded)

        return _kept(self._views, frozenset(expanded), make, VIEWS_KEPT)

    def drawn_as(self, key: str, expanded: Set[str]) -> str:
        """The drawn node that holds ``key`` in the view with ``expanded`` open."""
        return drawn_as(self.levels, key, expanded)

    def matches(self, text: str | None) -> tuple[list[str], str | None]:
        """The nodes a search finds, in order, and its warning (``search.search_nodes``)."""
        key = (text or "").strip()
        return _kept(self._searches, key, lambda: search_nodes(self.graph, text), SEARCHES_KEPT)

    def rows(self, expanded: Set[str]) -> list[Row]:
        """The timeline's rows for this view."""

        def make() -> list[Row]:
            return timeline_rows(self.graph, self.view(expanded)[0])

        return _kept(self._rows, frozenset(expanded), make, ROWS_KEPT)


@dataclass
class ViewState:
    """The app's sources and, per file, its groups and drawn views, made once and kept.

    Built by ``ViewState.over``; the callbacks read it and fill its caches. The caches are
    plain dicts: two threads computing the same entry at once each get a correct one.
    """

    registry: Registry
    runs: list[RecordedRun] = field(default_factory=list)  # recordings, for the catalog
    bucket_files: list[dict[str, str]] = field(default_factory=list)  # the buckets picker's
    start: str = "graph"  # the page shown when the address names none
    uploads: Path | None = None  # where dropped files are written; made on the first
    _open: dict[str, OpenFile] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.registry.let_go.append(self.forget)

    def forget(self, source_id: str) -> None:
        """Drop what was made from a source's graph: the registry let the graph go."""
        self._open.pop(source_id, None)

    @classmethod
    def over(cls, paths: Iterable[str | Path] = ()) -> ViewState:
        """The state over ``paths`` (files and recording folders; the bundled samples and
        recordings when there are none), in the order the file list shows them."""
        registry = Registry()
        given = [Path(p) for p in paths]
        runs: list[RecordedRun] = []
        if given:
            files = [p for p in given if not is_recording(p)]
            runs = [registry.add_recording(p, str(p)) for p in given if is_recording(p)]
        else:
            files = sample_files()
            runs = [registry.add_recording(p, f"sample: {p.name}") for p in sample_recordings()]
        for path in files:
            registry.add_path(path, str(path) if given else f"sample: {path.name}")
        # Graphs given as files come first in the picker; a recording alone opens on its
        # catalog, with the graph replayed most picked (an engine's first graph may be empty).
        order = list(registry.sources)
        if files:
            order = order[-len(files) :] + order[: -len(files)]
        elif runs:
            used = [
                (g["replays"], run.sources[(rec.name, g["id"])])
                for run in runs
                for rec in run.recordings
                for g in rec.graphs
                if (rec.name, g["id"]) in run.sources
            ]
            if used:
                busiest = max(used)[1]
                order.remove(busiest)
                order.insert(0, busiest)
        registry.sources = {k: registry.sources[k] for k in order}
        return cls(
            registry=registry,
            runs=runs,
            bucket_files=_bucket_files(files, bool(given)),
            start="catalog" if runs and not files else "graph",
        )

    @property
    def first(self) -> str | None:
        """The source the page opens on when its address names none."""
        return next(iter(self.registry.sources), None)

    def options(self) -> list[dict[str, str]]:
        """The file list: each source's label (``failed:`` once it failed) and id."""
        return [{"label": s.label, "value": s.id} for s in self.registry.sources.values()]

    def upload_folder(self) -> Path:
        """The folder dropped files are written to, removed when the app exits."""
        if self.uploads is None:
            self.uploads = Path(tempfile.mkdtemp(prefix="graphscope-uploads-"))
            atexit.register(shutil.rmtree, self.uploads, ignore_errors=True)
        return self.uploads

    def graph(self, source_id: str | None) -> nx.DiGraph | None:
        """The source's graph, read on first use; None for an unknown id or a failed file."""
        if source_id is None or self.registry.get(source_id) is None:
            return None
        return self.registry.graph_of(source_id)[0]

    def open(self, source_id: str | None) -> OpenFile | None:
        """The open file of a source, its graph read on first use; None for an unknown id or
        a file that failed to load."""
        G = self.graph(source_id)
        if G is None or source_id is None:
            return None
        known = self._open.get(source_id)
        if known is not None and known.graph is G:
            return known
        self._open.pop(source_id, None)  # read again since: what was made from it goes
        return _kept(self._open, source_id, lambda: OpenFile(source_id, G), FILES_KEPT)

    def preload(self) -> None:
        """Read the first file and place its first view, so the first page is quick."""
        first = self.open(self.first)
        if first is not None:
            first.view(first.expanded(None))
