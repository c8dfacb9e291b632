"""What the recorder knows of each graph: the capture that made it and its life after."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from .. import grab
from ..sampling import Replays

if TYPE_CHECKING:
    import weakref

    import networkx as nx

    from .. import sites
    from ..introspect import KernelReader
    from ..pointers import TreeSpans
    from .blocks import Watch
    from .inputs import Armed
    from .integrity import Use

LAUNCHES_KEPT = 512  # untraced launch calls timed per graph (the latest), for the median

# An input whose shape changed between two captures from one site ("from" is a keyword).
ShapeChange = TypedDict("ShapeChange", {"input": int, "from": list[int] | None, "to": list[int]})


@dataclass
class Capture:
    """A stream capture, from its beginning to the graph it made."""

    began_ns: int
    site: sites.Site | None  # the innermost frame outside torch and graphscope
    capturer: str
    program_site: sites.Site | None = None  # the program's own line (not a package's)
    inputs: list[sites.TensorInput] | None = None  # the non-static tensor inputs
    batch: int | None = None
    function: str | None = None  # Inductor's function id: one compiled function's graphs
    engine_reason: str | None = None  # why the engine recorded again, in its words
    ended_ns: int | None = None
    pool: tuple[int, ...] | None = None
    owner: Any = None  # weak reference to the torch.cuda.CUDAGraph, asked for its pool later
    stream: int | None = None  # the stream captured
    thread_id: int | None = None  # the thread that began it

    def key(self) -> tuple[Any, ...]:
        """What makes two captures the same site: a new graph there is a re-record.

        Inductor's function id is left out: torch.compile recompiling for new shapes and then
        recording is, to the user, the same call site recording again.
        """
        where = [
            s.get(k) if s else None
            for s in (self.site, self.program_site)
            for k in ("file", "line")
        ]
        return (self.capturer, *where)


@dataclass
class Life:
    """One executable graph, from capture to destruction."""

    id: str
    exec_id: int
    graph_id: int | None
    capture: Capture | None
    instantiated_ns: int
    instantiate_ns: int | None
    grab_ns: int = 0  # the program's wait for graphscope at instantiation
    dump_s: float | None = None  # cudaGraphDebugDotPrint (on the worker, of a clone)
    read_s: float | None = None  # the driver's read of the nodes (likewise)
    # graphscope's copy of the graph (grab.clone), made at instantiation and read by the
    # worker while the program rests; None once read, or where the graph was read at once.
    clone: int | None = None
    snapshot: grab.Snapshot | None = None
    # Where the parameters of the modules that ran in its capture were at instantiation: the
    # bundle is built later, when a program's model may be gone (a main() that returned) or
    # its weights reloaded elsewhere. Named Regions by the worker (pointers.regions_of).
    parameters: TreeSpans | None = None
    # The trees they were named from (weakly), and where the built graph's pointers say its
    # parameters began: what the integrity check compares with where they are now.
    param_roots: list[tuple[str, weakref.ref[Any]]] | None = None
    param_uses: dict[str, Use] | None = None
    # name -> (first byte now, or -1 if gone; ns first seen moved; replays then), and the
    # names filed as stale (integrity.py)
    param_moved: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    param_filed: set[str] = field(default_factory=set)
    # The allocator blocks outside its pool and the parameters that it points into, as they
    # were when it was read, by first byte; and those filed as changed since (blocks.py).
    blocks: dict[int, Watch] | None = None
    blocks_filed: set[int] = field(default_factory=set)
    inputs: Armed | None = None  # the small blocks sampled at launches (inputs.py)
    dot_tmp: Path | None = None
    bundle: str | None = None
    dot: str | None = None
    nodes: int | None = None
    kernels: int | None = None
    build_ms: float | None = None
    error: str | None = None
    local_ids: dict[int, str] = field(default_factory=dict)
    replays: int = 0
    traced: int = 0
    timed: Replays = field(default_factory=Replays)
    launch_ns: deque[int] = field(default_factory=lambda: deque(maxlen=LAUNCHES_KEPT))
    timing: dict[str, Any] | None = None
    written_with: int = -1  # traced replays the written bundle holds (-1: none written)
    written: tuple[Any, ...] = ()  # what the written bundle's recording section reflects
    updates: list[dict[str, Any]] = field(default_factory=list)
    destroyed_ns: int | None = None
    rerecord_of: str | None = None
    rerecord_reason: str | None = None
    shape_changes: list[ShapeChange] = field(default_factory=list)
    pool_bytes: int | None = None
    pool_active_bytes: int | None = None  # of those, in use when it was read
    attributed: int | None = None
    graph: nx.DiGraph | None = None  # the built graph, kept to rewrite with timing
    # A graph built without stream capture (XLA's command buffers, cudaGraphAdd*): the
    # program's lines that instantiated it, where the instantiating thread runs Python.
    instantiated_site: sites.Site | None = None
    instantiated_program_site: sites.Site | None = None

    def read(
        self, handle: int, folder: Path, kernels: KernelReader, as_graph: int | None = None
    ) -> None:
        """Dump and read graph ``handle`` into this life's snapshot (a :func:`grab.clone` of
        the graph ``as_graph`` names, or the graph itself); on failure ``error`` says why: this
        graph goes unread, the others are still recorded."""
        dot_tmp = folder / f".{self.id}.dot.tmp"
        try:
            snap = grab.snapshot(handle, dot_tmp, kernels, as_graph=as_graph)
        except Exception as exc:
            self.error = f"could not read the graph: {exc}"
            dot_tmp.unlink(missing_ok=True)
            return
        self.snapshot, self.dot_tmp = snap, dot_tmp
        self.dump_s, self.read_s = snap.dump_seconds, snap.seconds
        self.graph_id, self.nodes, self.kernels = snap.graph_id, snap.nodes, len(snap.kernels)

    @property
    def unread(self) -> bool:
        """Grabbed and not built yet: a clone to read, or a snapshot to build."""
        return self.clone is not None or self.snapshot is not None


def median_us(values: Iterable[int]) -> float | None:
    """The median of nanosecond figures, in us; None for none."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2] / 1e3 if ordered else None


def shape_changes(before: Capture | None, after: Capture) -> list[ShapeChange]:
    """The non-static inputs whose shape differs between two captures from one site."""
    if before is None or before.inputs is None or after.inputs is None:
        return []
    old = {i["input"]: i for i in before.inputs}  # static inputs are left out of `inputs`
    changes: list[ShapeChange] = []
    for entry in after.inputs:
        was = old.get(entry["input"])
        if was is None or was["shape"] != entry["shape"]:
            changes.append(
                {
                    "input": entry["input"],
                    "from": was["shape"] if was else None,
                    "to": entry["shape"],
                }
            )
    return changes


def pool_id(value: Any) -> tuple[int, ...] | None:
    """A memory pool id from what torch.cuda.graph was given: a handle (a pair of ints),
    ``(handle,)`` as older torch stores it, or a ``torch.cuda.MemPool``."""
    value = getattr(value, "id", value)
    if isinstance(value, tuple) and len(value) == 1:
        value = getattr(value[0], "id", value[0])
    if isinstance(value, tuple) and value and all(isinstance(x, int) for x in value):
        return tuple(value)
    return None


def rerecord_reason(before: Capture | None, after: Capture, life: Life) -> str | None:
    """Why a site recorded again: as the engine said, else as far as the two captures tell."""
    if after.engine_reason:
        return after.engine_reason
    if life.shape_changes:
        return "new input shapes"
    if before is None or before.inputs is None or after.inputs is None:
        return None
    if (
        before.function is not None
        and after.function is not None
        and before.function != after.function
    ):
        return "same input shapes; torch.compile compiled the function again"
    return "same input shapes"
