"""Recordings: what ``graphscope record`` wrote about every CUDA graph a program instantiated.

A recording folder holds one folder per recorded process (``pid<P>`` or ``rank<R>-pid<P>``),
each with a ``recording.json`` index and, per graph, a bundle (``g<N>.json.gz``) and its
verbose dump (``g<N>.dot``). The index is rewritten whole as the program runs, so a program
that is killed leaves an index of what it did until then (``status`` stays ``running``).

``load_recording`` validates an index once (types included), so the CLI and the app never
meet a field of the wrong type (``graphscope.analysis.lifecycle`` reads it for people). The
schema is in docs/FORMAT.md; ``GRAPH_FIELDS`` and ``PROCESS_FIELDS`` below are its
machine-readable form.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .errors import InputError

FORMAT_NAME = "graphscope-recording"
SCHEMA_VERSION = 1
INDEX_NAME = "recording.json"
#: Largest index read; a recording of thousands of graphs is a few MB.
MAX_INDEX_BYTES = 256 << 20

_NUMBER = (int, float)
_OPTIONAL_INT = (int, type(None))
_OPTIONAL_NUMBER = (int, float, type(None))
_OPTIONAL_STR = (str, type(None))

#: Per-graph entry fields: name -> allowed JSON types (absent is allowed: readers use None).
GRAPH_FIELDS: dict[str, tuple[type, ...]] = {
    "id": (str,),  # "g<exec id>": unique in the process
    "bundle": _OPTIONAL_STR,  # file name of its bundle beside the index, None until written
    "dot": _OPTIONAL_STR,  # file name of its verbose cudaGraphDebugDotPrint dump
    "graph_id": _OPTIONAL_INT,  # CUPTI's id of the cudaGraph_t it was instantiated from
    "exec_id": (int,),  # CUPTI's id of the executable graph; replays carry it
    "capturer": _OPTIONAL_STR,  # who captured it: inductor, torch.cuda.graph, vllm, sglang, ...
    "site": (dict, type(None)),  # the user's line where capture began: file, line, function
    "captured_at_s": _OPTIONAL_NUMBER,  # seconds after the recorder started
    "capture_ms": _OPTIONAL_NUMBER,  # from the start of stream capture to its end
    "instantiated_at_s": _OPTIONAL_NUMBER,
    "instantiate_ms": _OPTIONAL_NUMBER,  # the driver's instantiation, before graphscope's read
    "grab_ms": _OPTIONAL_NUMBER,  # graphscope's read at instantiation (the program waits)
    "build_ms": _OPTIONAL_NUMBER,  # graphscope's bundle build, later, in its own thread
    "nodes": _OPTIONAL_INT,
    "kernels": _OPTIONAL_INT,
    "pool": (dict, type(None)),  # the memory pool: id, bytes, graphs sharing it
    "inputs": (list, type(None)),  # shapes of the captured callable's tensor inputs
    "batch": _OPTIONAL_INT,  # the batch size the inputs' shapes say it serves
    "rerecord_of": _OPTIONAL_STR,  # the earlier graph recorded from the same site
    "rerecord_reason": _OPTIONAL_STR,  # why, as far as the captures tell
    "program_site": (dict, type(None)),  # the program's own line (not an installed package's)
    "shape_changes": (list, type(None)),  # inputs whose shapes differ from that graph's
    "replays": (int,),  # launches counted
    "traced_replays": (int,),  # launches timed with CUPTI (sampled)
    "replay_us": _OPTIONAL_NUMBER,  # median GPU span of the traced replays
    "cpu_launch_us": _OPTIONAL_NUMBER,  # median CPU time of the launch call, untraced
    "cpu_launch_traced_us": _OPTIONAL_NUMBER,  # the same, of the traced launches
    "gpu_time_us": _OPTIONAL_NUMBER,  # estimate: replays x median span
    "updates": (list,),  # cudaGraphExecUpdate calls: at_s, ok, result
    "destroyed_at_s": _OPTIONAL_NUMBER,
    "attributed_nodes": _OPTIONAL_INT,
    "error": _OPTIONAL_STR,  # why no bundle could be written for it
}
_SITE_FIELDS: dict[str, tuple[type, ...]] = {
    "file": _OPTIONAL_STR,
    "line": _OPTIONAL_INT,
    "function": _OPTIONAL_STR,
}
#: Objects inside a graph entry: field -> (their fields, whether it is a list of them).
_NESTED: dict[str, tuple[dict[str, tuple[type, ...]], bool]] = {
    "site": (_SITE_FIELDS, False),
    "program_site": (_SITE_FIELDS, False),
    "pool": ({"id": (list, type(None)), "bytes": _OPTIONAL_INT, "shared_with": (list,)}, False),
    "updates": ({"at_s": _NUMBER, "ok": (bool,), "result": _OPTIONAL_STR}, True),
    "inputs": ({"input": (int,), "shape": (list,), "dtype": _OPTIONAL_STR}, True),
    "shape_changes": (
        {"input": (int,), "from": (list, type(None)), "to": (list, type(None))},
        True,
    ),
}
#: Fields of those objects that are lists of integers (pool ids, shapes).
_INT_LISTS = {"pool": ("id",), "inputs": ("shape",), "shape_changes": ("from", "to")}
#: Process fields: name -> allowed JSON types.
PROCESS_FIELDS: dict[str, tuple[type, ...]] = {
    "pid": (int,),
    "rank": _OPTIONAL_INT,
    "world_size": _OPTIONAL_INT,
    "argv": (list,),
    "started_at": (str,),
    "updated_at": (str,),
    "ended_at": _OPTIONAL_STR,
    "status": (str,),  # running, finished, stopped (recording stopped, program went on)
    "stop_reason": _OPTIONAL_STR,
    "device": _OPTIONAL_STR,
}
STATUSES = ("running", "finished", "stopped")
#: What the sampled windows saw, for the process.
SAMPLING_FIELDS: dict[str, tuple[type, ...]] = {
    "windows": (int,),  # periodic windows opened
    "records": (int,),  # activity records received
    "graph_kernel_us": _NUMBER,  # kernel time of the traced replays (busy x launches traced)
    "eager_kernels": (int,),  # kernels outside any graph while tracing was on
    "eager_kernel_us": _NUMBER,
    "launches_of_unknown_graphs": (int,),  # graphs instantiated before recording began
}
#: Where torch says it ran a function without CUDA graphs.
FALLBACK_FIELDS: dict[str, tuple[type, ...]] = {
    "inductor_cudagraph_skips": (int,),  # torch._dynamo's counter
    "reasons": (list,),  # what Inductor logged, first line each
}

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
    attribution: bool = True  # label nodes with module, op and line while graphs are captured

    def as_dict(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "every_s": self.every_s,
            "window": self.window,
            "attribution": self.attribution,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Settings:
        data = data if isinstance(data, dict) else {}
        out = cls()
        for name, kind in (("first", int), ("every_s", float), ("window", int)):
            value = data.get(name)
            if (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
                and value >= 0
            ):
                setattr(out, name, kind(value))
        if isinstance(data.get("attribution"), bool):
            out.attribution = data["attribution"]
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


def _check_fields(
    value: Any, fields: dict[str, tuple[type, ...]], path: Any, where: str
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, where, "not an object")
    checked: dict[str, Any] = value
    for name, types in fields.items():
        if name not in value:
            continue
        item = value[name]
        # bool is an int in Python and never a valid count or id here.
        if (isinstance(item, bool) and bool not in types) or not isinstance(item, types):
            shown = json.dumps(item)[:40]
            wanted = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise _fail(path, f"{where}.{name}", f"{shown} is not {wanted}")
        if isinstance(item, float) and not math.isfinite(item):
            raise _fail(path, f"{where}.{name}", "is not a finite number")
    return checked


def check_graph_entry(value: Any, path: Any, where: str) -> dict[str, Any]:
    """Check one graph's entry (of an index, or a bundle's ``recording`` section)."""
    entry = _check_fields(value, GRAPH_FIELDS, path, where)
    for name in ("id", "exec_id"):
        if name not in entry:
            raise _fail(path, where, f"has no {name!r}")
    for name in ("bundle", "dot"):
        file = entry.get(name)
        if isinstance(file, str) and (Path(file).name != file or file in ("", ".", "..")):
            raise _fail(path, f"{where}.{name}", f"{file!r} is not a file name in the folder")
    for name, (fields, many) in _NESTED.items():
        item = entry.get(name)
        if item is None:
            continue
        if many and not isinstance(item, list):
            raise _fail(path, f"{where}.{name}", "not a list of objects")
        for i, obj in enumerate(item if many else [item]):
            here = f"{where}.{name}[{i}]" if many else f"{where}.{name}"
            _check_fields(obj, fields, path, here)
            for key in _INT_LISTS.get(name, ()):
                values = obj.get(key)
                if values is not None and not all(type(v) is int for v in values):
                    raise _fail(path, f"{here}.{key}", "not a list of integers")
    shared = (entry.get("pool") or {}).get("shared_with") or []
    if not all(isinstance(other, str) for other in shared):
        raise _fail(path, f"{where}.pool.shared_with", "not a list of graph ids")
    entry.setdefault("replays", 0)
    entry.setdefault("traced_replays", 0)
    entry.setdefault("updates", [])
    return entry


def read_index(path: Path) -> Any:
    """The parsed JSON of an index file, or one InputError naming the file."""
    try:
        size = path.stat().st_size
        if size > MAX_INDEX_BYTES:
            raise InputError(path, f"{size} bytes is more than a recording index holds")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read it ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"invalid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply") from None


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
    process = _check_fields(doc.get("process"), PROCESS_FIELDS, path, "process")
    for name in ("pid", "status"):
        if name not in process:
            raise _fail(path, "process", f"has no {name!r}")
    if process["status"] not in STATUSES:
        raise _fail(path, "process.status", f"{process['status']!r} is not one of {STATUSES}")
    graphs = doc.get("graphs")
    if not isinstance(graphs, list):
        raise _fail(path, "graphs", "missing or not a list")
    checked = [check_graph_entry(g, path, f"graphs[{i}]") for i, g in enumerate(graphs)]
    ids = [g["id"] for g in checked]
    if len(set(ids)) != len(ids):
        raise _fail(path, "graphs", "two graphs have the same id")
    settings: dict[str, Any] = {}
    if isinstance(doc.get("settings"), dict):
        settings = Settings.from_dict(doc["settings"]).as_dict()
    sampling = _check_fields(doc.get("sampling", {}), SAMPLING_FIELDS, path, "sampling")
    fallbacks = _check_fields(doc.get("fallbacks", {}), FALLBACK_FIELDS, path, "fallbacks")
    reasons = fallbacks.get("reasons")
    if reasons is not None and not all(isinstance(r, str) for r in reasons):
        raise _fail(path, "fallbacks.reasons", "not a list of strings")
    notes = doc.get("notes")
    if notes is not None and (
        not isinstance(notes, list) or not all(isinstance(n, str) for n in notes)
    ):
        raise _fail(path, "notes", "not a list of strings")
    return Recording(
        path=path,
        process=process,
        settings=settings,
        graphs=checked,
        sampling=sampling,
        fallbacks=fallbacks,
        notes=list(notes or []),
    )


def load_recording(path: str | os.PathLike[str]) -> Recording:
    """One process's recording, from its ``recording.json`` or the folder holding it."""
    p = Path(path)
    if p.is_dir():
        p = p / INDEX_NAME
    return from_document(read_index(p), p)


def is_recording(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a recording folder (of one process or of a whole run) or index."""
    p = Path(path)
    if p.is_file():
        return p.name == INDEX_NAME
    return p.is_dir() and bool(index_files(p))


def index_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The ``recording.json`` files of a run folder (one per process) or of one process."""
    p = Path(folder)
    if (p / INDEX_NAME).is_file():
        return [p / INDEX_NAME]
    if not p.is_dir():
        return []
    return sorted(
        (child / INDEX_NAME for child in p.iterdir() if (child / INDEX_NAME).is_file()),
        key=lambda f: _process_order(f.parent.name),
    )


def _process_order(name: str) -> tuple[int, int, str]:
    """rank0, rank1, ... first, then the other processes by pid."""
    rank, pid = -1, -1
    for part in name.split("-"):
        if part.startswith("rank") and part[4:].isdigit():
            rank = int(part[4:])
        elif part.startswith("pid") and part[3:].isdigit():
            pid = int(part[3:])
    return (rank if rank >= 0 else 1 << 30, pid, name)


def load_recordings(path: str | os.PathLike[str]) -> list[Recording]:
    """Every process recording under ``path``; InputError when there is none."""
    files = index_files(path)
    if not files:
        raise InputError(
            path,
            f"not a recording folder: no {INDEX_NAME} in it or in its folders "
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


def process_label(recording: Recording) -> str:
    """``rank 0 (pid 123, serve.py)`` or ``pid 123 (serve.py)``, for headings."""
    p = recording.process
    name = program_name(p.get("argv"))
    if p.get("rank") is not None:
        return f"rank {p['rank']} (pid {p['pid']}" + (f", {name})" if name else ")")
    return f"pid {p['pid']}" + (f" ({name})" if name else "")
