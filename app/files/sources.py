"""The graphs the app may show: files named on the command line, the samples, and uploads.

The app reads only these: a path from the page is never opened, only an id this registry gave
out. A file that fails to load keeps its one-line error, shown in the page, whatever the
reader raised.

Requests run on several threads. Each source has its own lock, so a slow file holds up only
the requests for it; the list of sources is replaced whole when one is added, never changed
in place, so a thread reading it never sees it change under it.

Each file is listed under the shortest end of its path that no other listed file shares
(``flags-verbose.dot`` alone, ``torch-ops/flags-verbose.dot`` beside another one), worked out
again as files are added; a file that failed to load is listed with ``failed:`` in front.

A server runs for days: what it keeps is bounded. Read graphs are kept up to ``NODES_KEPT``
nodes in all, the least recently shown let go first and read again from their file when next
shown; the list keeps the last ``UPLOADS_KEPT`` uploads, an older one removed with its file.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gc
import logging
import os
import tempfile
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

import graphscope
from graphscope.errors import GraphscopeError
from graphscope.recording import Recording, load_recordings, unrecorded_processes

#: Largest upload accepted, in bytes (a 100,000-node bundle is about 2 MB gzipped).
UPLOAD_LIMIT = 200 << 20
#: Largest an upload may expand to when it is read (gzip): a 100,000-node bundle is about
#: 340 MB of JSON; a gzip bomb is refused when it passes this, not when memory runs out.
UPLOAD_EXPANDED_LIMIT = 512 << 20
#: Uploads read at once; more wait, so that a burst of large ones cannot take all memory.
UPLOADS_AT_ONCE = 2
#: Nodes of the read graphs kept in memory, over all files: past it the least recently shown
#: graph is let go (read again from its file when next shown); the one just read always stays.
#: Every graph was kept: 19 uploads of a 10,000-node bundle took the server from 0.5 to 3.2 GB.
#: A 10,780-node graph held about 140 MB read and drawn, with its views.
NODES_KEPT = 60_000
#: Uploads listed at once: a new one past it removes the oldest from the list, and its file.
#: Each upload stayed listed, and every upload's answer carried the whole list (300 KB after
#: 5,000 uploads).
UPLOADS_KEPT = 24
# Characters of base64 decoded at a time (a multiple of 4): an upload is written to disk in
# steps, never held decoded whole beside the request that carries it.
_B64_STEP = 4 << 20
SUFFIXES = (".dot", ".gv", ".json", ".json.gz")
NAME_LIMIT = 120  # characters of an upload's name shown
#: In front of a sample's name in the file list.
SAMPLE = "sample: "
#: In front of the name of a file that failed to load.
FAILED = "failed: "
#: Longest label written folders first (``torch-ops/flags-verbose.dot``). The picker, 420 px
#: wide, shows about 43 characters and cuts the rest with "..." (its open menu shows them
#: all); when a file's label would be longer, the files with folders in their labels are
#: listed file name first (``flags-verbose.dot · torch-llama-decode``), where no cut hides it.
LABEL_CHARS = 40

log = logging.getLogger(__name__)


def _samples() -> Path | None:
    for root in (Path(graphscope.__file__).resolve().parent.parent, Path.cwd()):
        if (root / "samples").is_dir():
            return root / "samples"
    return None


def sample_files() -> list[Path]:
    """The bundled samples: capture bundles first, then issue 28's planted faults (each graph
    against eager by value), then the large one, then the DOT dumps."""
    samples = _samples()
    if samples is None:
        return []
    bundles = sorted((samples / "bundles").glob("*.json.gz"))
    planted = sorted((samples / "bundles" / "planted").glob("*.json.gz"))
    large = sorted((samples / "large").glob("*.json.gz"))
    dots = sorted((samples / "dot").glob("*/flags-verbose.dot"))
    return bundles + planted + large + dots


def sample_recordings() -> list[Path]:
    """The bundled recordings (``graphscope record`` runs), one folder each."""
    samples = _samples()
    if samples is None or not (samples / "recordings").is_dir():
        return []
    return sorted(p for p in (samples / "recordings").iterdir() if p.is_dir())


@dataclass
class RecordedRun:
    """A recording the app shows: its processes, and the source id of each graph's bundle."""

    label: str  # the run folder as given ("sample: gpt-fast")
    path: Path
    recordings: list[Recording] = field(default_factory=list)
    sources: dict[tuple[str, str], str] = field(default_factory=dict)  # (process, graph) -> id
    error: str | None = None  # the one-line error when the index cannot be read
    # The run's processes that used CUDA where the recorder could not follow (run.json).
    unrecorded: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Source:
    """A graph the app may show, and how the file list names it."""

    id: str
    path: Path
    graph: nx.DiGraph | None = None
    error: str | None = None
    uploaded: bool = False
    sample: bool = False
    given: str | None = None  # a recording graph's name, listed as is; an upload's file name
    name: str = ""  # its name in the file list, distinct from the others' (``Registry``)
    parts: tuple[str, ...] = field(default=(), repr=False)  # ``_parts(path)``, for ``name``
    max_bytes: int | None = None  # the reader's size limit, where not its default (uploads)
    # Held while the file is read: a second request for it waits for the first read.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def label(self) -> str:
        """The name in the file list, marked ``failed:`` once the file failed to load."""
        return FAILED + self.name if self.error is not None else self.name


def _parts(path: Path) -> tuple[str, ...]:
    """The path's folders and name, from the root: the same file given twice reads the same."""
    return Path(os.path.abspath(path)).parts


def _join(parts: tuple[str, ...]) -> str:
    """``parts`` as a path written with ``/`` (the root, where there is one, ends with one)."""
    if parts and parts[0].endswith(("/", "\\")):
        return parts[0].replace("\\", "/") + "/".join(parts[1:])
    return "/".join(parts)


def _suffixes(paths: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """For each path, its shortest end that no other path ends with (the whole path if none)."""
    ends = [parts[-1:] for parts in paths]
    depth = 1
    while True:
        counts = Counter(ends)
        clash = [i for i, end in enumerate(ends) if counts[end] > 1 and len(paths[i]) > len(end)]
        if not clash:
            return ends
        depth += 1
        for i in clash:
            ends[i] = paths[i][-depth:]


def _labels(ends: list[tuple[str, ...]], prefixes: list[str]) -> list[str]:
    """Each ``prefix`` and path end; all file name first if one written whole would be cut.

    One form for the whole list, so that a glance down it finds the names in one place.
    """
    whole = [prefix + _join(end) for prefix, end in zip(prefixes, ends, strict=True)]
    if all(len(label) <= LABEL_CHARS for label in whole):
        return whole
    return [
        f"{prefix}{end[-1]} · {_join(end[:-1])}" if len(end) > 1 else label
        for prefix, end, label in zip(prefixes, ends, whole, strict=True)
    ]


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Registry:
    """Sources by id, each loaded on first use and kept.

    Dash runs callbacks on several threads at once: each source's lock keeps two of them from
    reading the same large file side by side, and no read waits for another file's.
    """

    sources: dict[str, Source] = field(default_factory=dict)
    # Held while ``sources`` is replaced (and an id given out); never while a file is read.
    lock: threading.Lock = field(default_factory=threading.Lock)
    uploading: threading.BoundedSemaphore = field(
        default_factory=lambda: threading.BoundedSemaphore(UPLOADS_AT_ONCE)
    )
    nodes_kept: int = NODES_KEPT
    uploads_kept: int = UPLOADS_KEPT
    # The sources whose graphs are read, least recently shown first (under ``lock``).
    _read_order: OrderedDict[str, int] = field(default_factory=OrderedDict, repr=False)
    # Ids of the uploads removed from the list, for the line a page that still shows one gets.
    dropped: set[str] = field(default_factory=set, repr=False)
    # Called with a source's id when its graph is let go, so that what was made from the
    # graph (the views ``state.ViewState`` keeps) goes with it.
    let_go: list[Callable[[str], None]] = field(default_factory=list, repr=False)
    # Told each file's one line when it fails to load (``graphscope serve`` prints it).
    say: Callable[[str], None] | None = field(default=None, repr=False)

    def add_recording(self, path: Path, label: str) -> RecordedRun:
        """A recording folder: each of its graphs becomes a source, in catalog order."""
        run = RecordedRun(label=label, path=path, unrecorded=unrecorded_processes(path))
        try:
            run.recordings = load_recordings(path)
        except GraphscopeError as exc:
            run.error = str(exc)
            return run
        for rec in run.recordings:
            for g in rec.graphs:
                bundle = rec.bundle_path(g)
                if bundle is None:
                    continue
                batch = f", batch {g['batch']}" if g.get("batch") is not None else ""
                name = f"{label} {rec.name}/{g['id']} ({g.get('capturer') or '?'}{batch})"
                run.sources[(rec.name, g["id"])] = self._add(bundle, given=name).id
        self.relabel()
        return run

    def add_path(self, path: Path, label: str | None = None, *, sample: bool = False) -> Source:
        """A file, listed under the shortest end of its path that tells it from the others.

        ``label`` is kept as given, except the two labels that only name the file: its path,
        and ``sample: NAME`` (a sample, as ``sample`` says). A path that is not a file fails
        here, at once, so that the list marks it from the start.
        """
        if label is not None and label.startswith(SAMPLE) and label[len(SAMPLE) :] == path.name:
            label, sample = None, True
        source = self._add(path, given=None if label in (None, str(path)) else label)
        source.sample = sample
        source.parts = _parts(path)
        if not path.is_file():
            self.load(source.id)  # fails without reading anything: the list marks it at once
        self.relabel()
        return source

    def _add(self, path: Path, given: str | None = None, *, uploaded: bool = False) -> Source:
        with self.lock:
            key = f"{'u' if uploaded else 'f'}{len(self.sources)}"
            source = Source(id=key, path=path, given=given, uploaded=uploaded)
            # A new dict, not an insertion: another thread may be iterating the old one.
            self.sources = {**self.sources, key: source}
        return source

    def relabel(self) -> None:
        """Name every source in the list, each name distinct from the others.

        A file is named by the shortest end of its path that no other file here ends with,
        ``sample:`` in front of a sample; an upload by its file name and ``(uploaded)``; a
        recording's graph as the recording named it. Run after each file added (the server's
        reordering of ``sources`` keeps the names).
        """
        with self.lock:
            self._relabel(list(self.sources.values()))

    @staticmethod
    def _relabel(sources: list[Source]) -> None:
        files = [s for s in sources if s.given is None and not s.uploaded]
        ends = _suffixes([s.parts for s in files])
        labels = _labels(ends, [SAMPLE if s.sample else "" for s in files])
        for source, label in zip(files, labels, strict=True):
            source.name = label
        uploads: Counter[str] = Counter()
        seen: Counter[str] = Counter()
        for source in sources:
            if source.uploaded:
                name = source.given or source.path.name
                uploads[name] += 1
                n = uploads[name]
                source.name = f"{name} (uploaded{f' {n}' if n > 1 else ''})"
            elif source.given is not None:
                source.name = source.given
            seen[source.name] += 1
            if seen[source.name] > 1:  # the same file given twice, or a name like another's
                source.name += f" ({seen[source.name]})"

    def get(self, source_id: object) -> Source | None:
        """The source with this id; None for any other value the page sends."""
        return self.sources.get(source_id) if isinstance(source_id, str) else None

    def load(self, source_id: str) -> Source:
        """The source with its graph, or with ``error`` set to the reader's one line.

        The graph may be let go again once others are read (``NODES_KEPT``): a caller that
        goes on using it takes it from ``graph_of``."""
        return self._load(source_id)[0]

    def graph_of(self, source_id: str) -> tuple[nx.DiGraph | None, str | None]:
        """The source's graph, read if need be, and its error: held by the caller, the graph
        stays whole even if the registry lets it go meanwhile."""
        return self._load(source_id)[1:]

    def _load(self, source_id: str) -> tuple[Source, nx.DiGraph | None, str | None]:
        source = self.sources[source_id]
        with source.lock:
            self._read(source)
            graph, error = source.graph, source.error
        if graph is not None:
            self._keep(source_id, graph.number_of_nodes())
        return source, graph, error

    def _keep(self, source_id: str, nodes: int) -> None:
        """Mark the source as shown last, and let go of the graphs read longest ago while
        those kept hold more than ``nodes_kept`` nodes."""
        gone: list[str] = []
        with self.lock:
            self._read_order[source_id] = max(nodes, 1)
            self._read_order.move_to_end(source_id)
            total = sum(self._read_order.values())
            for old in list(self._read_order):
                if total <= self.nodes_kept or old == source_id:
                    break
                total -= self._read_order.pop(old)
                gone.append(old)
                source = self.sources.get(old)
                if source is not None:
                    source.graph = None  # a request holding it keeps its own reference
        self._forget(gone)

    def _forget(self, source_ids: list[str]) -> None:
        for source_id in source_ids:
            for forget in self.let_go:
                forget(source_id)
        if source_ids:
            # A networkx graph refers to itself (its cached views), so only the cycle
            # collector frees one, and its full pass comes rarely in a process holding
            # millions of objects: without it, 20 uploads let go still held 2.1 GB.
            gc.collect()

    def kept(self) -> list[str]:
        """The ids of the sources whose graphs are held read, least recently shown first."""
        with self.lock:
            return list(self._read_order)

    def _read(self, source: Source) -> None:
        if source.graph is not None or source.error is not None:
            return
        self._try_read(source)
        if source.error is not None and self.say is not None:
            with contextlib.suppress(Exception):
                self.say(source.error)

    def _try_read(self, source: Source) -> None:
        try:
            if source.max_bytes is None:
                source.graph = graphscope.load(source.path)
            else:
                source.graph = graphscope.load(source.path, max_bytes=source.max_bytes)
        except GraphscopeError as exc:
            source.error = _one_line(str(exc))
        except OSError as exc:
            source.error = f"{source.path}: cannot read it ({exc.strerror or exc})"
        except Exception as exc:
            # A reader's bug: the page gets one line and the server's log the traceback, for
            # the report; the file is marked failed and the others stay usable.
            log.exception("graphscope failed reading %s", source.path)
            source.error = _one_line(
                f"{source.path}: graphscope failed reading it ({type(exc).__name__}: {exc}); "
                "this is a bug in graphscope, please report it"
            )

    def add_upload(self, filename: object, contents: object, folder: Path) -> Source:
        """An upload from the page (``data:...;base64,...``), written to ``folder`` and loaded.

        Whatever arrives, the upload is listed, and one that cannot be shown keeps a one-line
        error: a name graphscope does not read, damaged data, a size over ``UPLOAD_LIMIT``, a
        file that expands past ``UPLOAD_EXPANDED_LIMIT``, a reader's failure.
        """
        # The name is only shown: the file on disk is named by the app (a NUL or a name over
        # the file system's limit ended the upload with a server error).
        text = filename if isinstance(filename, str) else ""
        name = Path(text.replace("\x00", "")).name or "upload"
        if len(name) > NAME_LIMIT:
            name = name[: NAME_LIMIT // 2] + "…" + name[-NAME_LIMIT // 2 :]
        source = self._add(folder / name, given=name, uploaded=True)
        source.max_bytes = UPLOAD_EXPANDED_LIMIT
        self._drop_old_uploads()
        self.relabel()
        if not name.endswith(SUFFIXES):
            source.error = f"{name}: not a graph file graphscope reads (.dot, .json, .json.gz)"
            return source
        start = contents.find(";base64,") if isinstance(contents, str) else -1
        if not isinstance(contents, str) or start < 0:
            source.error = f"{name}: the upload arrived damaged; try again"
            return source
        start += len(";base64,")
        size = (len(contents) - start) * 3 // 4  # decoded, give or take the padding
        if size > UPLOAD_LIMIT:
            source.error = (
                f"{name}: {size / 2**20:.0f} MB is over the {UPLOAD_LIMIT >> 20} MB "
                "upload limit; open it from the command line: graphscope serve FILE"
            )
            return source
        with self.uploading:
            self._store(source, contents, start, folder)
            if source.error is None:
                self.load(source.id)
                if source.error is not None:
                    source.path.unlink(missing_ok=True)  # nothing will read it again
        if source.error is not None:
            source.error = source.error.replace(str(source.path), name)
            if str(UPLOAD_EXPANDED_LIMIT) in source.error:  # the reader's limit was ours
                source.error += "; open it from the command line: graphscope serve FILE"
        return source

    def _drop_old_uploads(self) -> None:
        """Remove the oldest uploads past ``uploads_kept`` from the list, with their files."""
        with self.lock:
            uploads = [s for s in self.sources.values() if s.uploaded]
            old = uploads[: max(len(uploads) - self.uploads_kept, 0)]
            if not old:
                return
            gone = {s.id for s in old}
            self.sources = {k: v for k, v in self.sources.items() if k not in gone}
            for key in gone:
                self._read_order.pop(key, None)
            self.dropped |= gone
        self._forget(sorted(gone))
        for source in old:
            source.graph = None
            if source.given is not None and source.path.name != source.given:
                source.path.unlink(missing_ok=True)  # stored under a name of the app's

    def gone(self, source_id: object) -> str | None:
        """The line for a page that still shows an upload the list has dropped, else None."""
        if source_id not in self.dropped:
            return None
        return (
            f"This upload is no longer kept: the app keeps the last {self.uploads_kept} "
            "uploads. Drop the file again, or open it with graphscope serve FILE."
        )

    def _store(self, source: Source, contents: str, start: int, folder: Path) -> None:
        """Decode an upload's base64 into a file of its own in ``folder``, step by step."""
        name = source.given or ""
        suffix = next(end for end in SUFFIXES if name.endswith(end))
        written: Path | None = None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, suffix=suffix, delete=False) as fh:
                written = Path(fh.name)
                for at in range(start, len(contents), _B64_STEP):
                    fh.write(base64.b64decode(contents[at : at + _B64_STEP], validate=True))
        except (binascii.Error, ValueError):  # ValueError: a character that is not ASCII
            source.error = f"{name}: the upload arrived damaged; try again"
        except OSError as exc:
            source.error = f"{name}: cannot store the upload ({exc.strerror or exc})"
        if written is None:
            return
        if source.error is None:
            source.path = written
        else:
            written.unlink(missing_ok=True)
