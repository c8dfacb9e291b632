"""Recordings: what ``graphscope record`` wrote about every CUDA graph a program instantiated.

A recording folder holds one folder per recorded process (``pid<P>`` or ``rank<R>-pid<P>``),
each with a ``recording.json`` index and, per graph, a bundle (``g<N>.json.gz``) and its
verbose dump (``g<N>.dot``). The index is rewritten whole as the program runs, so a program
that is killed leaves an index of what it did until then (``status`` stays ``running``).

``load_recording`` validates an index once (types included), so the CLI and the app never
meet a field of the wrong type (``graphscope.analysis.lifecycle`` reads it for people). The
schema is in docs/FORMAT.md; ``RECORDING_GRAPH``, ``RECORDING_PROCESS`` and their neighbours
in ``graphscope.contract`` are its machine-readable form.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import paths
from .contract import (
    RECORDING_CAPTURE_FAILURE,
    RECORDING_COVERAGE,
    RECORDING_FALLBACKS,
    RECORDING_GRAPH,
    RECORDING_INPUT_CHECKS,
    RECORDING_MEMORY,
    RECORDING_PROCESS,
    RECORDING_SAMPLING,
    RECORDING_STALE_POINTER,
    RECORDING_STATUSES,
    RECORDING_UNCHANGED_INPUT,
    TEXTS,
    JsonBudget,
    check,
    check_each,
    parse_json,
    read_limited,
)
from .errors import InputError
from .version import __version__

FORMAT_NAME = "graphscope-recording"
SCHEMA_VERSION = 1
INDEX_NAME = "recording.json"
#: Largest index read; a recording of thousands of graphs is a few MB.
MAX_INDEX_BYTES = 256 << 20
#: Most JSON values an index may hold: the samples' indexes take 42 to 81 values a graph, so
#: this is some 50,000 graphs.
MAX_INDEX_VALUES = 1 << 22

STATUSES = RECORDING_STATUSES

DEFAULT_FIRST = 20
DEFAULT_EVERY_S = 10.0
DEFAULT_WINDOW = 5


@dataclass
class Settings:
    """How ``graphscope record`` samples a program's replays for timing.

    The first ``first`` launches of each graph are traced, then every launch of a window of
    ``window`` launches opened every ``every_s`` seconds; between windows tracing is off.
    """

    first: int = DEFAULT_FIRST  # launches traced at the start of each graph's life
    every_s: float = DEFAULT_EVERY_S  # seconds between periodic windows (0: none)
    window: int = DEFAULT_WINDOW  # launches traced in each periodic window
    attribution: bool = True  # label nodes with module and line while graphs are captured
    # Also name each node's aten op: a TorchDispatchMode on every op captured. A 10,411-node
    # capture took 3.6x its unrecorded time with it, 1.6x without, on the H100 (RECORD.md).
    ops: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "every_s": self.every_s,
            "window": self.window,
            "attribution": self.attribution,
            "ops": self.ops,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Settings:
        data = data if isinstance(data, dict) else {}
        out = cls()
        for name, kind in (("first", int), ("every_s", float), ("window", int)):
            value = data.get(name)
            # A setting past 2**53 (or not finite) is no setting a recorder wrote: the default.
            if (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and 0 <= value <= 2**53
            ):
                setattr(out, name, kind(value))
        for name in ("attribution", "ops"):
            if isinstance(data.get(name), bool):
                setattr(out, name, data[name])
        return out


@dataclass
class Recording:
    """One process's validated ``recording.json`` and the folder it lies in."""

    path: Path  # the recording.json
    process: dict[str, Any]  # PROCESS_FIELDS, and versions
    settings: dict[str, Any]  # sampling: first, every_s, window
    graphs: list[dict[str, Any]]  # GRAPH_FIELDS, in instantiation order
    sampling: dict[str, Any] = field(default_factory=dict)  # what the sampled windows saw
    fallbacks: dict[str, Any] = field(default_factory=dict)  # graphs skipped, where known
    notes: list[str] = field(default_factory=list)  # problems the recorder reported
    # RECORDING_CAPTURE_FAILURE each: captures broken by a call inside them, or refused
    capture_failures: list[dict[str, Any]] = field(default_factory=list)
    # RECORDING_STALE_POINTER each: parameters live graphs point into that moved since
    stale_pointers: list[dict[str, Any]] = field(default_factory=list)
    # RECORDING_MEMORY: the allocator's totals at the last read (empty in older recordings)
    memory: dict[str, Any] = field(default_factory=dict)
    coverage: dict[str, Any] = field(default_factory=dict)  # bin_s, bins; empty in older ones
    # RECORDING_UNCHANGED_INPUT each: small blocks graphs read that no sampled replay saw change
    unchanged_inputs: list[dict[str, Any]] = field(default_factory=list)
    # RECORDING_INPUT_CHECKS: what was sampled for those (empty in older recordings)
    input_checks: dict[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def name(self) -> str:
        return self.folder.name

    def bundle_path(self, entry: dict[str, Any]) -> Path | None:
        """Where a graph's bundle lies, or None when none was written."""
        name = entry.get("bundle")
        return self.folder / name if isinstance(name, str) else None


def _fail(path: Any, where: str, message: str) -> InputError:
    return InputError(path, f"{where}: {message}")


def _with_defaults(entry: dict[str, Any]) -> dict[str, Any]:
    entry.setdefault("replays", 0)
    entry.setdefault("traced_replays", 0)
    entry.setdefault("updates", [])
    return entry


def check_graph_entry(value: Any, path: Any, where: str) -> dict[str, Any]:
    """Check one graph's entry (of an index, or a bundle's ``recording`` section)."""
    check(value, RECORDING_GRAPH, path, where)
    return _with_defaults(value)


def read_index(path: Path) -> Any:
    """The parsed JSON of an index file, or one InputError naming the file."""
    raw = read_limited(path, MAX_INDEX_BYTES, decompress=False, hint=" for a recording index")
    return parse_json(raw, path, InputError, "recording index", budget=JsonBudget(MAX_INDEX_VALUES))


def from_document(doc: Any, path: Path) -> Recording:
    """Validate a parsed index; raise InputError naming the file and the field."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise InputError(path, f'not a graphscope recording index (no "format": "{FORMAT_NAME}")')
    version = doc.get("schema_version")
    if type(version) is not int or version < 1:
        raise _fail(path, "schema_version", "not a positive integer")
    if version > SCHEMA_VERSION:
        raise InputError(
            path,
            f"recording schema version {version}: read it with a newer graphscope "
            f"(pip install -U graphscope); this one reads up to {SCHEMA_VERSION}",
        )
    process: dict[str, Any] = doc.get("process", {})
    check(process, RECORDING_PROCESS, path, "process")
    graphs = doc.get("graphs")
    if not isinstance(graphs, list):
        raise _fail(path, "graphs", "missing or not a list")
    check_each(graphs, RECORDING_GRAPH, path, "graphs[{}]".format)
    checked = [_with_defaults(g) for g in graphs]
    ids = [g["id"] for g in checked]
    if len(set(ids)) != len(ids):
        raise _fail(path, "graphs", "two graphs have the same id")
    settings: dict[str, Any] = {}
    if isinstance(doc.get("settings"), dict):
        settings = Settings.from_dict(doc["settings"]).as_dict()
    sampling: dict[str, Any] = doc.get("sampling", {})
    fallbacks: dict[str, Any] = doc.get("fallbacks", {})
    check(sampling, RECORDING_SAMPLING, path, "sampling")
    check(fallbacks, RECORDING_FALLBACKS, path, "fallbacks")
    notes = doc.get("notes")
    if notes is not None:
        check(notes, TEXTS, path, "notes")
    failures = doc.get("capture_failures", [])
    if not isinstance(failures, list):
        raise _fail(path, "capture_failures", "not a list")
    check_each(failures, RECORDING_CAPTURE_FAILURE, path, "capture_failures[{}]".format)
    stale = doc.get("stale_pointers", [])
    if not isinstance(stale, list):
        raise _fail(path, "stale_pointers", "not a list")
    check_each(stale, RECORDING_STALE_POINTER, path, "stale_pointers[{}]".format)
    for entry in stale:
        entry.setdefault("replays_since", 0)
        entry.setdefault("nodes", [])
    unchanged = doc.get("unchanged_inputs", [])
    if not isinstance(unchanged, list):
        raise _fail(path, "unchanged_inputs", "not a list")
    check_each(unchanged, RECORDING_UNCHANGED_INPUT, path, "unchanged_inputs[{}]".format)
    for entry in unchanged:
        entry.setdefault("nodes", [])
    input_checks: dict[str, Any] = doc.get("input_checks") or {}
    if input_checks:
        check(input_checks, RECORDING_INPUT_CHECKS, path, "input_checks")
    memory: dict[str, Any] = doc.get("memory") or {}
    check(memory, RECORDING_MEMORY, path, "memory")
    coverage: dict[str, Any] = doc.get("coverage", {})
    if coverage is None:  # as an older writer might: no coverage
        coverage = {}
    if coverage != {}:  # a [] or "" is refused, not taken for none
        check(coverage, RECORDING_COVERAGE, path, "coverage")
        known = {g["id"] for g in checked}
        for i, b in enumerate(coverage["bins"]):
            b.setdefault("unknown_launches", 0)
            strange = set(b["launches"]) - known
            if strange:
                raise _fail(path, f"coverage.bins[{i}].launches", f"names no graph: {min(strange)}")
            odd = [k for k in b.get("probe_batches") or {} if not _is_batch(k)]
            if odd:
                raise _fail(path, f"coverage.bins[{i}].probe_batches", f"no batch size: {odd[0]!r}")
    return Recording(
        path=path,
        process=process,
        settings=settings,
        graphs=checked,
        sampling=sampling,
        fallbacks=fallbacks,
        notes=list(notes or []),
        capture_failures=failures,
        stale_pointers=stale,
        unchanged_inputs=unchanged,
        input_checks=input_checks,
        memory=memory,
        coverage=coverage,
    )


def _is_batch(key: str) -> bool:
    """A batch size as JSON keys hold it: a decimal number from 1 (no sign, no spaces)."""
    return key.isascii() and key.isdigit() and len(key) <= 12 and int(key) >= 1


def load_recording(path: str | os.PathLike[str]) -> Recording:
    """One process's recording, from its ``recording.json`` or the folder holding it."""
    p = Path(path)
    if paths.is_dir(p):
        p = p / INDEX_NAME
    return from_document(read_index(p), p)


def is_recording(path: str | os.PathLike[str], empty: bool = False) -> bool:
    """Whether ``path`` is a recording folder (of one process or of a whole run) or index;
    with ``empty``, also a run folder where nothing was recorded (``run.json`` alone), which
    the commands take as a recording so that ``load_recordings`` says what it holds.

    A path the OS refuses to look up (a name too long, a folder that cannot be searched) is
    one ``InputError`` line, not False: the user is told why, not "not a recording"."""
    return bool(index_files(path)) or (empty and paths.is_file(Path(path) / RUN_FILE))


def index_files(path: str | os.PathLike[str]) -> list[Path]:
    """The ``recording.json`` files of a run folder (one per process), of one process's
    folder, or the index itself when ``path`` names one."""
    p = Path(path)
    found = paths.stat(p)
    if found is None:
        return []
    if stat.S_ISREG(found.st_mode):
        return [p] if p.name == INDEX_NAME else []
    if not stat.S_ISDIR(found.st_mode):
        return []
    if paths.is_file(p / INDEX_NAME):
        return [p / INDEX_NAME]
    return sorted(
        (child / INDEX_NAME for child in paths.entries(p) if paths.is_file(child / INDEX_NAME)),
        key=lambda f: _process_order(f.parent.name),
    )


#: What ``graphscope record`` writes into its folder beside the process folders.
RUN_FILE = "run.json"
_PROCESS_FOLDER = re.compile(r"(rank\d+-)?pid\d+")


def recording_parts(folder: str | os.PathLike[str]) -> list[Path]:
    """What a recording left in ``folder``: its ``run.json`` and its process folders (by
    their index, or by their name where a killed process wrote none yet).

    ``[folder]`` when ``folder`` is itself one process's folder. ``graphscope record`` refuses
    a folder where this is not empty, and ``--force`` removes exactly these."""
    p = Path(folder)
    if not paths.is_dir(p):
        return []
    if paths.is_file(p / INDEX_NAME):
        return [p]
    found = [f.parent for f in index_files(p)]
    run_file = [p / RUN_FILE] if paths.is_file(p / RUN_FILE) else []
    unindexed = [
        c for c in paths.entries(p) if _PROCESS_FOLDER.fullmatch(c.name) and paths.is_dir(c)
    ]
    return sorted({*found, *run_file, *unindexed})


def recorded_pids(folder: str | os.PathLike[str]) -> set[int]:
    """The pids of the processes that left a folder in the recording ``folder``."""
    return {
        pid
        for part in recording_parts(folder)
        if part.name != RUN_FILE and (pid := _process_order(part.name)[1]) >= 0
    }


def unrecorded_processes(folder: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The processes of the run that loaded the CUDA driver where ``record`` could not follow
    (``run.json``'s ``unrecorded_processes``: ``{pid, name, why}``). A run.json that is
    missing, unreadable or of another shape gives none: it only adds to what the process
    folders say."""
    return _unrecorded_entries(_read_run_file(folder))


def _unrecorded_entries(run: dict[str, Any]) -> list[dict[str, Any]]:
    """A run.json's ``unrecorded_processes``, each entry of its shape; the others left out."""
    entries = run.get("unrecorded_processes")
    if not isinstance(entries, list):
        return []
    return [
        e
        for e in entries
        if isinstance(e, dict)
        and isinstance(e.get("pid"), int)
        and isinstance(e.get("name"), str)
        and isinstance(e.get("why"), str)
    ]


def _read_run_file(folder: str | os.PathLike[str], strict: bool = False) -> dict[str, Any]:
    """``folder``'s ``run.json``; empty where it is missing, unreadable or no JSON object,
    or with ``strict``, InputError where it is there but unreadable."""
    path = Path(folder) / RUN_FILE
    try:
        # Bounded as every other read: a run.json nested thousands deep made json.loads
        # raise RecursionError through inspect (benchmarks/fuzz.py, recording family).
        run = (
            parse_json(read_limited(path, MAX_INDEX_BYTES, decompress=False), path, InputError)
            if paths.is_file(path)
            else {}
        )
    except OSError as exc:
        if strict:
            raise InputError(path, exc.strerror or str(exc)) from None
        return {}
    except InputError:
        if strict:
            raise
        return {}
    if strict and not isinstance(run, dict):
        raise InputError(path, "not a JSON object: not graphscope record's run.json")
    return run if isinstance(run, dict) else {}


def _process_order(name: str) -> tuple[int, int, str]:
    """rank0, rank1, ... first, then the other processes by pid."""
    rank, pid = -1, -1
    for part in name.split("-"):
        if part.startswith("rank") and part[4:].isdigit():
            rank = int(part[4:])
        elif part.startswith("pid") and part[3:].isdigit():
            pid = int(part[3:])
    return (rank if rank >= 0 else 1 << 30, pid, name)


def nothing_recorded(path: str | os.PathLike[str], most: int = 3) -> str | None:
    """What to say of a run folder that ``graphscope record`` left with no process recorded
    (its ``run.json``, no index): that nothing was, and the processes that used CUDA where
    the recorder could not follow. None for any other path."""
    p = Path(path)
    if not paths.is_file(p / RUN_FILE) or index_files(p):
        return None
    try:
        run = _read_run_file(p, strict=True)
    except InputError as exc:
        return f"nothing was recorded here, and {exc}"
    if run.get("exit_status") is None:  # running, or record was killed
        said = "a graphscope record run with nothing recorded yet: no Python process of the "
        said += "program has made a CUDA context, and the program has not been seen to end"
    else:
        said = "a graphscope record run in which nothing was recorded: no Python process of "
        said += "the program made a CUDA context"
    missed = _unrecorded_entries(run)
    if missed:
        said += "; not recorded: " + "; ".join(e["why"] for e in missed[:most])
        if len(missed) > most:
            said += f"; and {len(missed) - most} more (run.json lists them all)"
    return said


def load_recordings(path: str | os.PathLike[str]) -> list[Recording]:
    """Every process recording under ``path``; InputError when there is none."""
    files = index_files(path)
    if not files:
        raise InputError(
            path,
            nothing_recorded(path)
            or f"not a recording folder: no {INDEX_NAME} in it or in its folders "
            "(graphscope record --out FOLDER writes one per process)",
        )
    return [load_recording(f) for f in files]


def new_document(process: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """An empty index for a process that has just started recording."""
    return {
        "format": FORMAT_NAME,
        "schema_version": SCHEMA_VERSION,
        "writer": {"graphscope": __version__},
        "process": process,
        "settings": settings,
        "graphs": [],
        "sampling": {},
        "fallbacks": {},
        "capture_failures": [],
        "stale_pointers": [],
        "unchanged_inputs": [],
        "input_checks": {},
        "memory": {},
        "coverage": {},
        "notes": [],
    }


def dumps_index(doc: dict[str, Any], path: Path) -> str:
    """The index as text, checked against the schema first: what is written reads back."""
    from_document(json.loads(json.dumps(doc)), path)
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


def program_name(argv: Any) -> str | None:
    """What ran in a process, from its argv: ``serve.py``, ``compile_worker/__main__.py``."""
    if not isinstance(argv, list) or not argv or not isinstance(argv[0], str) or not argv[0]:
        return None
    path = Path(argv[0])
    return f"{path.parent.name}/{path.name}" if path.name == "__main__.py" else path.name


def graph_label(graph: str, batch: int | None) -> str:
    """``g5 (batch 2)``, or ``g5`` where the batch is not known."""
    return graph if batch is None else f"{graph} (batch {batch})"


def process_label(recording: Recording) -> str:
    """``rank 0 (pid 123, serve.py)`` or ``pid 123 (serve.py)``, for headings."""
    p = recording.process
    name = program_name(p.get("argv"))
    if p.get("rank") is not None:
        return f"rank {p['rank']} (pid {p['pid']}" + (f", {name})" if name else ")")
    return f"pid {p['pid']}" + (f" ({name})" if name else "")
