"""The view state: the graphs the app shows, how each is folded, and what is kept between
callbacks.

The page keeps its grouping as JSON in a store (``grouping``): ``{"source": id, "default":
"overview" | "expanded" | "collapsed", "toggled": [groups]}``, plus ``"compare": id`` when the
DAG marks a diff and ``"stepped": [groups]``, those the last step through search matches
opened (the next step shuts them). A graph's expanded groups are those its default opens,
with the toggled ones flipped. ``ViewState`` turns that into the graph drawn and its
placement, each kept per file.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterable, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import networkx as nx

from graphscope.analysis.folding import all_groups, collapsed, group_levels, overview
from graphscope.analysis.search import search_nodes
from graphscope.recording import is_recording

from ..files.sources import RecordedRun, Registry, sample_files, sample_recordings
from ..render.placement import Layout, layout
from ..render.timeline import Row, timeline_rows

#: Drawn views kept (graph and placement, by file and expanded groups): a fold opened and shut
#: again, or a return to the last file, redraws from here.
VIEWS_KEPT = 9
#: Timeline rows kept, likewise: a zoom redraws from them (1.4 million calls at 100k nodes).
ROWS_KEPT = 5
#: Searches kept (matches by file and search text): the draw and the steps through matches.
SEARCHES_KEPT = 8
#: Files whose groups (levels, all groups, overview) are kept: a long-running server is shown
#: file after file, upload after upload, and kept them all.
GROUPS_KEPT = 8
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


def drawn_as(levels: dict[str, list[str]], key: str, expanded: Set[str]) -> str:
    """The drawn node that holds ``key``: its outermost collapsed group, or itself."""
    for group in levels.get(key, []):
        if group not in expanded:
            return "group:" + group
    return key


def _bucket_files(files: list[Path], given: bool) -> list[dict[str, str]]:
    """The ``*.buckets.json`` beside the given files, as the buckets page's picker lists them."""
    folders = sorted({p.resolve().parent for p in files})
    return [
        {"label": str(f) if given else f"sample: {f.name}", "value": str(f)}
        for folder in folders
        for f in sorted(folder.glob("*.buckets.json"))
    ]


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
    _levels: dict[str, dict[str, list[str]]] = field(default_factory=dict, repr=False)
    _groups: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    _overviews: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    _views: dict[tuple[str, frozenset[str]], tuple[nx.DiGraph, Layout]] = field(
        default_factory=dict, repr=False
    )
    _rows: dict[tuple[str, frozenset[str]], list[Row]] = field(default_factory=dict, repr=False)
    _searches: dict[tuple[str, str], tuple[list[str], str | None]] = field(
        default_factory=dict, repr=False
    )

    def __post_init__(self) -> None:
        self.registry.let_go.append(self.forget)

    def forget(self, source_id: str) -> None:
        """Drop what was made from a source's graph: the registry let the graph go."""
        by_source: list[dict[Any, Any]] = [self._levels, self._groups, self._overviews]
        for cache in by_source:
            cache.pop(source_id, None)
        by_view: list[dict[Any, Any]] = [self._views, self._rows, self._searches]
        for keyed in by_view:
            for key in [k for k in list(keyed) if k[0] == source_id]:
                keyed.pop(key, None)

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

    def levels(self, source_id: str, G: nx.DiGraph) -> dict[str, list[str]]:
        """Each node's groups, outermost first (``groups.group_levels``)."""
        return _kept(self._levels, source_id, lambda: group_levels(G), GROUPS_KEPT)

    def groups(self, source_id: str, G: nx.DiGraph) -> frozenset[str]:
        """Every group of the source's graph. Kept: each click asks for them, and on the
        10,780-node sample making the set was 6 of a click's 8 ms in the server."""
        return _kept(
            self._groups,
            source_id,
            lambda: frozenset(all_groups(self.levels(source_id, G))),
            GROUPS_KEPT,
        )

    def base(self, source_id: str, G: nx.DiGraph, default: str) -> frozenset[str]:
        """The groups open before any toggle, for a grouping's ``default``."""
        if default == "collapsed":
            return frozenset()
        if default == "expanded":
            return self.groups(source_id, G)
        return _kept(
            self._overviews,
            source_id,
            lambda: frozenset(overview(self.levels(source_id, G))),
            GROUPS_KEPT,
        )

    def grouping_of(self, source_id: str, grouping: Any) -> dict[str, Any]:
        """The page's grouping if it belongs to this source, else the source's default."""
        if isinstance(grouping, dict) and grouping.get("source") == source_id:
            return grouping
        return default_grouping(source_id)

    def expanded(self, source_id: str, G: nx.DiGraph, grouping: Any) -> frozenset[str]:
        """The expanded groups a grouping state asks for (a stale or missing one: the default).
        Without toggles, the kept set itself: on the 100,064-node graph expanded, copying its
        groups was half of a click's time in the server."""
        state = self.grouping_of(source_id, grouping)
        base = self.base(source_id, G, state["default"])
        toggled = set(state["toggled"]) & self.groups(source_id, G)
        return base ^ toggled if toggled else base

    def view(self, source_id: str, G: nx.DiGraph, expanded: Set[str]) -> tuple[nx.DiGraph, Layout]:
        """The graph drawn with these groups expanded (the rest folded) and its placement."""

        def make() -> tuple[nx.DiGraph, Layout]:
            shown = collapsed(G, self.levels(source_id, G), expanded)
            return shown, layout(shown)

        return _kept(self._views, (source_id, frozenset(expanded)), make, VIEWS_KEPT)

    def matches(
        self, source_id: str, G: nx.DiGraph, text: str | None
    ) -> tuple[list[str], str | None]:
        """The nodes a search finds, in order, and its warning (``search.search_nodes``)."""
        key = (source_id, (text or "").strip())
        return _kept(self._searches, key, lambda: search_nodes(G, text), SEARCHES_KEPT)

    def rows(self, source_id: str, G: nx.DiGraph, expanded: Set[str]) -> list[Row]:
        """The timeline's rows for this view."""

        def make() -> list[Row]:
            shown, _ = self.view(source_id, G, expanded)
            return timeline_rows(G, shown)

        return _kept(self._rows, (source_id, frozenset(expanded)), make, ROWS_KEPT)

    def preload(self) -> None:
        """Read the first file and place its first view, so the first page is quick."""
        G = self.graph(self.first)
        if G is not None and self.first is not None:
            self.view(self.first, G, self.expanded(self.first, G, None))
