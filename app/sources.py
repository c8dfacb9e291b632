"""The graphs the app may show: files named on the command line, the samples, and uploads.

The app reads only these: a path from the page is never opened, only an id this registry gave
out. A file that fails to load keeps its one-line error, shown in the page.
"""

from __future__ import annotations

import base64
import binascii
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

import graphscope
from graphscope.errors import GraphscopeError
from graphscope.recording import Recording, load_recordings

#: Largest upload accepted, in bytes (a 100,000-node bundle is about 2 MB gzipped).
UPLOAD_LIMIT = 200 << 20
SUFFIXES = (".dot", ".gv", ".json", ".json.gz")


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
    id: str
    label: str
    path: Path
    graph: nx.DiGraph | None = None
    error: str | None = None
    uploaded: bool = False


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
                run.sources[(rec.name, g["id"])] = self.add_path(bundle, name).id
        return run

    def add_path(self, path: Path, label: str | None = None) -> Source:
        source = Source(id=f"f{len(self.sources)}", label=label or str(path), path=path)
        self.sources[source.id] = source
        return source

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
                source.error = f"{source.label}: cannot read it ({exc.strerror or exc})"

    def add_upload(self, filename: str, contents: str, folder: Path) -> Source:
        """An upload from the page (``data:...;base64,...``), written to ``folder`` and loaded."""
        name = Path(filename or "upload").name
        source = Source(id=f"u{len(self.sources)}", label=f"{name} (uploaded)", path=folder / name)
        source.uploaded = True
        self.sources[source.id] = source
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
        with tempfile.NamedTemporaryFile(dir=folder, suffix="-" + name, delete=False) as fh:
            fh.write(payload)
        source.path = Path(fh.name)
        self.load(source.id)
        if source.error:
            source.error = source.error.replace(str(source.path), name)
        return source
