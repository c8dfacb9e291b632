"""The graphs the app may show: files named on the command line, the samples, and uploads.

The app reads only these: a path from the page is never opened, only an id this registry gave
out. A file that fails to load keeps its one-line error, shown in the page.

Each file is listed under the shortest end of its path that no other listed file shares
(``flags-verbose.dot`` alone, ``torch-ops/flags-verbose.dot`` beside another one), worked out
again as files are added; a file that failed to load is listed with ``failed:`` in front.
"""

from __future__ import annotations

import base64
import binascii
import os
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

import graphscope
from graphscope.errors import GraphscopeError
from graphscope.recording import Recording, load_recordings

#: Largest upload accepted, in bytes (a 100,000-node bundle is about 2 MB gzipped).
UPLOAD_LIMIT = 200 << 20
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


def _samples() -> Path | None:
    for root in (Path(graphscope.__file__).resolve().parent.parent, Path.cwd()):
        if (root / "samples").is_dir():
            return root / "samples"
    return None


def sample_files() -> list[Path]:
    """The bundled samples: capture bundles first, then the large one, then the DOT dumps."""
    samples = _samples()
    if samples is None:
        return []
    bundles = sorted((samples / "bundles").glob("*.json.gz"))
    large = sorted((samples / "large").glob("*.json.gz"))
    dots = sorted((samples / "dot").glob("*/flags-verbose.dot"))
    return bundles + large + dots


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


@dataclass
class Registry:
    """Sources by id, each loaded on first use and kept.

    Dash runs callbacks on several threads at once; the lock keeps two of them from reading
    the same large file twice side by side.
    """

    sources: dict[str, Source] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_recording(self, path: Path, label: str) -> RecordedRun:
        """A recording folder: each of its graphs becomes a source, in catalog order."""
        run = RecordedRun(label=label, path=path)
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

    def _add(self, path: Path, given: str | None = None) -> Source:
        source = Source(id=f"f{len(self.sources)}", path=path, given=given)
        self.sources[source.id] = source
        return source

    def relabel(self) -> None:
        """Name every source in the list, each name distinct from the others.

        A file is named by the shortest end of its path that no other file here ends with,
        ``sample:`` in front of a sample; an upload by its file name and ``(uploaded)``; a
        recording's graph as the recording named it. Run after each file added (the server's
        reordering of ``sources`` keeps the names).
        """
        files = [s for s in self.sources.values() if s.given is None and not s.uploaded]
        ends = _suffixes([s.parts for s in files])
        labels = _labels(ends, [SAMPLE if s.sample else "" for s in files])
        for source, label in zip(files, labels, strict=True):
            source.name = label
        uploads: Counter[str] = Counter()
        seen: Counter[str] = Counter()
        for source in self.sources.values():
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

    def get(self, source_id: str | None) -> Source | None:
        return self.sources.get(source_id or "")

    def load(self, source_id: str) -> Source:
        """The source with its graph, or with ``error`` set to the reader's one line."""
        source = self.sources[source_id]
        with self.lock:
            self._read(source)
        return source

    def _read(self, source: Source) -> None:
        if source.graph is None and source.error is None:
            try:
                source.graph = graphscope.load(source.path)
            except GraphscopeError as exc:
                source.error = str(exc)
            except OSError as exc:
                source.error = f"{source.path}: cannot read it ({exc.strerror or exc})"

    def add_upload(self, filename: str, contents: str, folder: Path) -> Source:
        """An upload from the page (``data:...;base64,...``), written to ``folder`` and loaded."""
        # The name is only shown: the file on disk is named by the app (a NUL or a name over
        # the file system's limit ended the upload with a server error).
        name = Path((filename or "").replace("\x00", "")).name or "upload"
        if len(name) > NAME_LIMIT:
            name = name[: NAME_LIMIT // 2] + "…" + name[-NAME_LIMIT // 2 :]
        source = Source(id=f"u{len(self.sources)}", path=folder / name, uploaded=True, given=name)
        self.sources[source.id] = source
        self.relabel()
        if not name.endswith(SUFFIXES):
            source.error = f"{name}: not a graph file graphscope reads (.dot, .json, .json.gz)"
            return source
        try:
            payload = base64.b64decode(contents.split(",", 1)[1], validate=True)
        except (IndexError, binascii.Error):
            source.error = f"{name}: the upload arrived damaged; try again"
            return source
        if len(payload) > UPLOAD_LIMIT:
            source.error = (
                f"{name}: {len(payload) / 2**20:.0f} MB is over the {UPLOAD_LIMIT >> 20} MB "
                "upload limit; open it from the command line: graphscope serve FILE"
            )
            return source
        folder.mkdir(parents=True, exist_ok=True)
        suffix = next(end for end in SUFFIXES if name.endswith(end))
        with tempfile.NamedTemporaryFile(dir=folder, suffix=suffix, delete=False) as fh:
            fh.write(payload)
        source.path = Path(fh.name)
        self.load(source.id)
        if source.error:
            source.error = source.error.replace(str(source.path), name)
        return source
