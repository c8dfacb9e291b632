"""The fuzz campaign: mutated real files through every reader and every command that reads one.

    python benchmarks/fuzz.py --family all --count 1000 --seed 0 --timeout 10 --out /tmp/fuzz

Every input is a file of ``samples/`` (or one graphscope wrote from one) changed by a few
mutations that know its format: a JSON document is parsed and its tree changed (keys deleted,
values swapped for ones of another type, numbers made huge, negative, NaN or infinite, strings
made long, items duplicated, deep nesting, lists and objects swapped), a bundle's node table,
edges and sections are changed knowing what they mean, a DOT dump has its label cells,
numbers, node ids, edges, quotes, braces and lines changed, and any file can have bytes
flipped, be cut short or be gzipped wrongly. Families (docs/FUZZING.md):

- ``dot``, ``bundle``: ``graphscope.load``; on a graph that loads, the graph contract,
  ``load(save(G))`` equal to G as a bundle and as DOT, ``inspect`` and ``report``;
- ``buckets``: ``read_buckets``, ``read_distribution`` and ``graphscope buckets`` with
  histograms and memory budgets;
- ``trace``: the profiler-trace reader and ``graphscope import-trace``, then the bundle it wrote;
- ``recording``: ``load_recordings``, then ``inspect``, ``report`` and ``diff`` of the folder;
- ``commands``: a graph that loads (a mutated file, or a seed's graph changed in memory within
  the contract: deep nesting, long chains, no edges, extreme values) through every command
  that reads one: ``inspect``, ``report``, ``diff``, ``export`` in each format,
  ``import-trace`` and ``convert``, and with ``--upload`` the dashboard's upload;
- ``callbacks``, ``http``: the dashboard's server, through Flask's test client
  (``_fuzz_server.py``): every callback with hostile values, malformed requests, every route;
- ``demangle``, ``json``: the readers' bounds (``_fuzz_readers.py``): kernel names that demangle
  past every bound, and dense JSON through every JSON reader.

Each input runs in a worker process, with a time limit per step and a memory limit; a worker
that runs past either is killed, and the input counted. A step ends *clean*, *refused* (a
``GraphscopeError`` in one line naming the file: what a user must see for a bad file) or in a
DEFECT: a traceback (any other exception), a hang, a crash, a memory blow-up, an error that is
not one line naming the file, output on stderr, a graph that loads but breaks the contract,
or a round trip that is not exact. Each defect is put down to the code it fell over in (a
reader, the contract, an analysis, an export, the CLI, the app), and its input, its commands
and its traceback are kept under ``OUT/defects/<family>/<index>/``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import functools
import gzip
import io
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import random
import re
import resource
import shlex
import shutil
import signal
import sys
import time
import traceback
import tracemalloc
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fuzz_outputs import case_amplify, case_outputs
from _fuzz_readers import case_demangle, case_json, not_strict_json
from _fuzz_server import case_callbacks, case_http
from _mutations import (
    bundle_mutation,
    byte_mutation,
    dot_mutation,
    dumps_mutant,
    graph_mutation,
    gzip_mutation,
    json_mutation,
    show,
)

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
FAMILIES = (
    *("dot", "bundle", "buckets", "trace", "recording", "commands", "callbacks", "http"),
    *("demangle", "json"),  # _fuzz_readers.py
    *("outputs", "amplify"),  # _fuzz_outputs.py
)
#: A seed at least this large (the 10,780-node sample) is drawn rarely and given more time.
LARGE_BYTES = 1 << 20
LARGE_SHARE = 0.02
LARGE_FACTOR = 8.0
#: A load whose traced allocations pass this many times the file's size, plus a fixed
#: allowance, is a memory blow-up (a real bundle takes tens of bytes per byte of file).
MEMORY_RATIO = 200
MEMORY_FIXED = 8 << 20

Rng = random.Random


# ---------------------------------------------------------------------------------------------
# Seeds: every file in samples/, and a few that graphscope writes from them


@dataclass(frozen=True)
class Seed:
    """A file to mutate."""

    name: str  # a path under samples/, or "written:..." for one graphscope wrote
    data: bytes
    suffix: str  # the ending its mutants' file names get: .dot, .json, .json.gz

    @property
    def large(self) -> bool:
        return len(self.data) >= LARGE_BYTES


@dataclass
class Seeds:
    """The seeds of every family, read once in the parent before the workers fork."""

    dot: list[Seed]
    bundle: list[Seed]
    buckets: list[Seed]
    trace: list[Seed]
    recordings: list[Path]  # run folders under samples/recordings
    large: bool  # whether the large sample is drawn at all

    def pick(self, seeds: list[Seed], rng: Rng) -> Seed:
        small = [s for s in seeds if not s.large]
        big = [s for s in seeds if s.large] if self.large else []
        if big and rng.random() < LARGE_SHARE:
            return rng.choice(big)
        return rng.choice(small)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def load_seeds(large: bool = True) -> Seeds:
    """Every sample file by family, plus DOT, plain .json and import-trace output that
    graphscope writes: they reach what no capture does (the DOT reader's ``gs_attrs`` and
    ``gs_graph``, a bundle whose eager side came from a profiler trace)."""
    import graphscope
    from graphscope.analysis.torch_trace import with_torch_trace
    from graphscope.bundle import dumps
    from graphscope.dotwrite import dumps_dot

    def found(pattern: str) -> list[Path]:
        return [
            p for p in sorted(SAMPLES.rglob(pattern)) if large or p.stat().st_size < LARGE_BYTES
        ]

    dot = [Seed(_rel(p), p.read_bytes(), ".dot") for p in found("*.dot")]
    bundles = [p for p in found("*.json.gz") if "traces" not in p.parts]
    bundle = [Seed(_rel(p), p.read_bytes(), ".json.gz") for p in bundles]
    for path in (
        SAMPLES / "dot" / "explicit-all-types" / "flags-verbose.dot",  # every node type
        SAMPLES / "bundles" / "tiny-gpt-parallel-b1.json.gz",  # parallel branches
        SAMPLES / "recordings" / "torch-buckets" / "pid959" / "g8.json.gz",  # a recording
        SAMPLES / "recordings" / "gpt-fast" / "pid1355" / "g2.json.gz",  # an empty graph
    ):
        G = graphscope.load(path)
        name = path.name.split(".")[0]
        dot.append(Seed(f"written:{path.parent.name}-{name}.dot", dumps_dot(G).encode(), ".dot"))
        bundle.append(Seed(f"written:{path.parent.name}-{name}.json", dumps(G).encode(), ".json"))
    trace = sorted(SAMPLES.glob("traces/*.json.gz"))
    b1 = graphscope.load(SAMPLES / "bundles" / "tiny-llama-b1.json.gz")
    imported = dumps(with_torch_trace(b1, trace[0])).encode()
    bundle.append(Seed("written:import-trace.json", imported, ".json"))
    return Seeds(
        dot=dot,
        bundle=bundle,
        buckets=[Seed(_rel(p), p.read_bytes(), ".json") for p in found("*.buckets.json")],
        trace=[Seed(_rel(p), p.read_bytes(), ".json.gz") for p in trace],
        recordings=sorted(p.parent for p in SAMPLES.glob("recordings/*/run.json")),
        large=large,
    )


# ---------------------------------------------------------------------------------------------
# Inputs


def mutate(seed: Seed, rng: Rng, kind: str, cache: Path, said: list[str], light: bool) -> bytes:
    """A mutant of ``seed``: mostly changes that know its format, sometimes bytes or gzip.
    ``light``: one or two changes, seldom bytes, never gzip bombs or bloat (for inputs that
    should still load)."""
    raw = gzip.decompress(seed.data) if seed.data[:2] == b"\x1f\x8b" else seed.data
    count = rng.randint(1, 2 if light else 4)
    if kind == "dot":
        for _ in range(count):
            raw, what = (
                dot_mutation(raw, rng, not light) if rng.random() < 0.8 else byte_mutation(raw, rng)
            )
            said.append(what)
        return raw
    try:
        doc = json.loads(raw) if rng.random() < (0.92 if light else 0.75) else None
    except (ValueError, RecursionError):
        doc = None  # an earlier mutation broke it: bytes from here on
    data = raw
    if doc is not None:
        for _ in range(count):
            changed = bundle_mutation(doc, rng) if kind == "bundle" and rng.random() < 0.5 else None
            doc, what = changed or json_mutation(doc, rng)
            said.append(what)
        data = dumps_mutant(doc, rng)
    else:
        for _ in range(count):
            data, what = byte_mutation(data, rng)
            said.append(what)
    if seed.suffix.endswith(".gz"):
        if not light and rng.random() < 0.12:
            data, what = gzip_mutation(data, rng, cache)
            said.append(what)
        elif rng.random() < 0.9:
            data = gzip.compress(data, mtime=0)
    return data


# ---------------------------------------------------------------------------------------------
# What a graph must satisfy: the contract, and exact round trips


def contract_violations(G: Any) -> list[str]:
    """Why a loaded graph breaks the graph contract (``graphscope.contract.check_graph``),
    if it does: it tells a defect of an analysis on a valid graph from one on a graph its
    reader should have refused."""
    from graphscope.errors import GraphscopeError

    try:
        from graphscope.contract import check_graph
    except ImportError:
        return []
    try:
        check_graph(G, "G")
    except GraphscopeError as exc:
        return [str(exc)]
    except Exception as exc:
        return [f"the contract check raised {type(exc).__name__}: {exc}"]
    return []


def graphs_differ(G: Any, H: Any) -> str | None:
    """Where two graphs differ (metadata, nodes and their attributes, edges), or None;
    1 and 1.0, or a list and a tuple, differ."""
    if (why := _differ(dict(G.graph), dict(H.graph), "G.graph")) is not None:
        return why
    if set(G) != set(H):
        return f"nodes: {len(set(G) - set(H))} lost, {len(set(H) - set(G))} gained"
    for key in G:
        if (why := _differ(G.nodes[key], H.nodes[key], str(key))) is not None:
            return why
    if set(G.edges) != set(H.edges):
        lost, gained = len(set(G.edges) - set(H.edges)), len(set(H.edges) - set(G.edges))
        return f"edges: {lost} lost, {gained} gained"
    for a, b, d in G.edges(data=True):
        if (why := _differ(d, H.edges[a, b], f"edge {a} -> {b}")) is not None:
            return why
    return None


def _differ(a: Any, b: Any, where: str) -> str | None:
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} {show(a)} became {type(b).__name__} {show(b)}"
    if isinstance(a, dict):
        if set(a) != set(b):
            return f"{where}: keys {sorted(map(str, set(a) ^ set(b)))[:4]} differ"
        return next((w for k in a if (w := _differ(a[k], b[k], f"{where}.{k}"))), None)
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items became {len(b)}"
        pairs = enumerate(zip(a, b, strict=True))
        return next((w for i, (x, y) in pairs if (w := _differ(x, y, f"{where}[{i}]"))), None)
    same = a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))
    return None if same else f"{where}: {show(a)} became {show(b)}"


# ---------------------------------------------------------------------------------------------
# Results, and whose code a defect fell over in


@dataclass
class Defect:
    """A step that ended neither clean nor in one line naming the file."""

    step: str  # what ran, as a shell line: "graphscope report input.json.gz"
    kind: str  # traceback, hang, crash, memory, message, stderr, contract, round-trip
    error: str  # the exception's type, or what was wrong
    site: str  # the innermost graphscope function it fell in: "graphscope/text.py:us"
    owner: str  # reader:<what>, contract, analyses, exports, text, dotwrite, cli, app, ...
    detail: str = ""  # the message, the contract's complaint, or the traceback's end

    @property
    def cls(self) -> tuple[str, str, str, str]:
        return (self.owner, self.kind, self.error, self.site)


@dataclass
class CaseResult:
    """What one input did."""

    family: str
    index: int
    seed: str = "?"
    mutations: list[str] = field(default_factory=list)
    loaded: bool = False  # whether the family's reader read it
    refused: bool = False  # a step refused it in one line naming the file
    defects: list[Defect] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # shell lines, one per step, to reproduce
    skipped: list[str] = field(default_factory=list)  # app hooks that found nothing to call
    seconds: float = 0.0

    @property
    def outcome(self) -> str:
        return "defect" if self.defects else "refused" if self.refused else "clean"


# Where a function lives -> who owns a failure there: the first prefix that matches.
_OWNERS = (
    ("graphscope/analysis/torch_trace.py", "reader:trace"),
    ("graphscope/analysis/buckets.py:read_", "reader:buckets"),
    ("graphscope/analysis/", "analyses"),
    ("graphscope/exports/", "exports"),
    ("graphscope/text.py", "text"),
    ("graphscope/dotwrite.py", "dotwrite"),
    ("graphscope/dot", "reader:dot"),
    ("graphscope/bundle.py", "reader:bundle"),
    ("graphscope/contract.py", "reader:contract"),
    ("graphscope/recording.py", "reader:recording"),
    ("graphscope/io.py", "reader:io"),
    ("graphscope/output.py", "output"),
    ("graphscope/cli.py", "cli"),
    ("graphscope/", "graphscope"),
    ("app/", "app"),
)


def _site(tb: Any) -> str:
    """``path:function`` of the innermost function of graphscope's own code in a traceback
    (a comprehension or a lambda is put down to the function around it)."""
    site = "?"
    for frame in traceback.extract_tb(tb):
        try:
            rel = Path(frame.filename).resolve().relative_to(ROOT)
        except ValueError:
            continue
        if rel.parts[0] in ("graphscope", "app") and not frame.name.startswith("<"):
            site = f"{rel}:{frame.name}"
    return site


def _owner(site: str, default: str) -> str:
    return next((owner for prefix, owner in _OWNERS if site.startswith(prefix)), default)


# ---------------------------------------------------------------------------------------------
# Steps: each runs in the worker, says when it starts (for the time limit), and is classified


def _py(code: str) -> str:
    """A shell line that runs ``code``, its quotes made double so that the line reads plainly
    (the campaign's file names hold no quotes)."""
    return shlex.join(["python", "-c", code.replace("'", '"')])


class Runner:
    """Runs the steps of one input and classifies each."""

    def __init__(self, result: CaseResult, report: Callable[[str, float], None], timeout: float):
        self.result = result
        self.report = report  # tells the parent a step began, and its time limit
        self.timeout = timeout
        self.factor = 1.0  # time limits are this many times the usual (large inputs)
        self.memory_mib = 0  # what one step may add to the address space (0: no limit)
        self.violations: list[str] = []  # how the loaded graph breaks the contract, if it does
        # Count a graph that breaks the contract as refused, as load will once every reader
        # checks it: to look for defects of the analyses on valid graphs alone.
        self.gate = False
        self.stdout = b""  # what the last ``cli`` step printed

    def _begin(self, line: str, factor: float = 1.0) -> None:
        self.result.steps.append(line)
        self.report(line, self.timeout * self.factor * factor)
        _limit_memory(self.memory_mib)

    def _defect(self, *args: str) -> None:
        self.result.defects.append(Defect(*args))

    def _raised(self, line: str, exc: BaseException, reader: str | None) -> None:
        """An exception other than a GraphscopeError: put down to the code it fell in, or to
        the contract when the graph broke it."""
        site = _site(exc.__traceback__)
        found = _owner(site, reader or "?")
        if reader is not None and not found.startswith("reader:"):
            found = reader  # the reader's step: the reader let it through
        detail = "".join(traceback.format_exception(exc)[-6:])[-1500:]
        if reader is None and self.violations and not found.startswith("reader:"):
            found, detail = "contract", f"{self.violations[0]}\n{detail}"
        kind = "memory" if isinstance(exc, MemoryError) else "traceback"
        self._defect(line, kind, type(exc).__name__, site, found, detail)

    def _refusal(self, line: str, message: str, names: list[str], owner: str) -> None:
        """A GraphscopeError's message: one line naming one of the inputs, or a defect."""
        if "\n" in message.strip():
            self._defect(line, "message", "more than one line", "?", owner, message[:500])
        elif not any(name in message for name in names):
            self._defect(line, "message", "does not name the file", "?", owner, message[:500])
        else:
            self.result.refused = True

    def reader(self, line: str, owner: str, names: list[str], fn: Callable[[], Any]) -> Any:
        """A reader's step: its value, or None when it refused (in one line) or failed."""
        from graphscope.errors import GraphscopeError

        self._begin(line)
        try:
            return fn()
        except GraphscopeError as exc:
            self._refusal(line, str(exc), names, owner)
        except Exception as exc:  # what the campaign is for: any other exception is a defect
            self._raised(line, exc, owner)
        return None

    def must(self, line: str, owner: str, fn: Callable[[], Any], factor: float = 1.0) -> Any:
        """A step that must succeed (saving and reading back a graph that loaded)."""
        from graphscope.errors import GraphscopeError

        self._begin(line, factor)
        try:
            return fn()
        except GraphscopeError as exc:
            site = _site(exc.__traceback__)
            self._defect(line, "round-trip", "refused", site, owner, str(exc)[:500])
        except Exception as exc:
            self._raised(line, exc, None)
        return None

    def cli(self, argv: list[str], names: list[str], factor: float = 1.0) -> int | None:
        """``graphscope ARGV`` in this process: status 0, or 1 or 2 with one error line that
        names an input; stdout is as strict as a UTF-8 terminal (a lone surrogate fails)."""
        from graphscope.cli import main

        line = shlex.join(["graphscope", *argv])
        self._begin(line, factor)
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
        err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
                out.flush()
            self.stdout = out.buffer.getvalue()
        except SystemExit as exc:
            # argparse refusing an option's value (a budget of "nan"): its usage and one
            # error line, as any command-line tool; anything else is a defect.
            err.flush()
            said = err.buffer.getvalue().decode("utf-8", "replace")
            if exc.code == 2 and said.startswith("usage: ") and ": error: " in said:
                self.result.refused = True
            else:
                self._defect(line, "traceback", f"SystemExit({exc.code})", "?", "cli", said)
            return None
        except Exception as exc:
            self._raised(line, exc, None)
            return None
        err.flush()
        text = err.buffer.getvalue().decode("utf-8", "replace")
        lines = [x for x in text.splitlines() if x.strip()]
        if code == 0:
            if [x for x in lines if not x.startswith("graphscope: warning: ")]:
                self._defect(line, "stderr", "output on stderr", "?", "cli", text[-800:])
            elif "--json" in argv and (why := not_strict_json(out.buffer.getvalue())):
                self._defect(line, "json", "--json printed what is not JSON", "?", "cli", why)
        elif code not in (1, 2):
            self._defect(line, "traceback", f"exit status {code}", "?", "cli", text[-800:])
        elif len(lines) != 1 or not lines[0].startswith("graphscope: error: "):
            why = "no message" if not lines else "not one error line"
            self._defect(line, "message", why, "?", "cli", text[-800:])
        else:
            self._refusal(line, lines[0], names, "cli")
        return int(code)

    def load(self, path: str, family: str, measure: bool = False) -> Any:
        """``graphscope.load``: a graph file's reader step, then the contract on what it read.

        ``measure``: trace the load's allocations (slower) for the memory bound."""
        import graphscope

        line = _py(f"import graphscope; graphscope.load({path!r})")
        size = os.path.getsize(path)
        if measure:
            tracemalloc.start()
        try:
            G = self.reader(line, f"reader:{family}", [path], lambda: graphscope.load(path))
            peak = tracemalloc.get_traced_memory()[1] if measure else 0
        finally:
            tracemalloc.stop()
        if peak > MEMORY_RATIO * size + MEMORY_FIXED:
            why = f"{peak >> 20} MiB traced for a file of {size} bytes"
            self._defect(line, "memory", why, "?", f"reader:{family}")
        if G is None:
            return None
        self.violations = contract_violations(G)
        if self.violations and self.gate:
            self.result.refused = True
            return None
        self.result.loaded = True
        if self.violations:
            why = "loads but breaks the contract"
            self._defect(line, "contract", why, "?", f"reader:{family}", self.violations[0])
        return G

    def round_trips(self, G: Any, path: str) -> None:
        """``load(save(G))`` is G again, as a bundle and as DOT. Saving and reading back are two
        steps: the file written can be far larger than the input (DOT repeats per node what a
        bundle's tables share), and reading it back is timed by its own size, as readers are."""
        import graphscope

        for out in ("roundtrip.json.gz", "roundtrip.dot"):
            owner = "contract" if self.violations else f"round-trip:{out.split('.', 1)[1]}"
            found = len(self.result.defects)
            save = _py(f"import graphscope as g; g.save(g.load({path!r}), {out!r})")
            self.must(save, owner, lambda out=out: graphscope.save(G, out))
            if len(self.result.defects) > found:
                continue
            line = _py(f"import graphscope as g; g.load({out!r})")
            factor = 1 + Path(out).stat().st_size / (32 << 20)
            H = self.must(line, owner, lambda out=out: graphscope.load(out), factor)
            if H is not None and (why := graphs_differ(G, H)) is not None:
                self._defect(line, "round-trip", "not equal", "?", owner, why)


# ---------------------------------------------------------------------------------------------
# The families: each makes its input in the worker's folder for it, and runs its steps


def _case_graph(family: str, rng: Rng, seeds: Seeds, run: Runner, config: dict[str, Any]) -> None:
    seed = seeds.pick(seeds.dot if family == "dot" else seeds.bundle, rng)
    run.result.seed = seed.name
    data = mutate(seed, rng, family, config["cache"], run.result.mutations, light=False)
    path = "input" + seed.suffix
    Path(path).write_bytes(data)
    run.factor = (LARGE_FACTOR if seed.large else 1.0) * (1 + len(data) / (32 << 20))
    G = run.load(path, family, measure=rng.random() < 0.1)
    if G is not None:
        run.round_trips(G, path)
    run.cli(["inspect", path], [path])  # a refusal, as a user sees it
    if G is not None:
        run.cli(["report", path], [path])


def _case_buckets(family: str, rng: Rng, seeds: Seeds, run: Runner, config: dict[str, Any]) -> None:
    from graphscope.analysis.buckets import read_buckets, read_distribution

    seed = rng.choice(seeds.buckets)
    run.result.seed = seed.name
    said = run.result.mutations
    doc = json.loads(seed.data)
    if rng.random() < 0.15:  # many buckets: the search for the best set within a budget
        n = rng.choice([12, 21, 67, 300, 5000])
        first = doc["buckets"][0]
        doc["buckets"] = [{**first, "batch_size": i + 1, "bundle": None} for i in range(n)]
        said.append(f"{n} buckets")
    many = Seed(seed.name, json.dumps(doc).encode(), ".json")
    data = mutate(many, rng, "buckets", config["cache"], said, light=rng.random() < 0.5)
    os.mkdir("buckets")
    path = "buckets/model.buckets.json"
    Path(path).write_bytes(data)
    if rng.random() < 0.1:
        Path("buckets/other.buckets.json").write_bytes(seed.data)
        said.append("a second buckets file in the folder")
    argv = ["buckets", rng.choice([path, "buckets"])]
    names = ["buckets"]
    if rng.random() < 0.5:
        Path("histogram.txt").write_bytes(_histogram(rng, said))
        argv += ["--histogram", "histogram.txt"]
        names.append("histogram.txt")
        code = "from graphscope.analysis.buckets import read_distribution as r; r('histogram.txt')"
        run.reader(_py(code), "reader:buckets", names, lambda: read_distribution("histogram.txt"))
    if rng.random() < 0.5:
        budgets = ["0", "1", "16", "64", "256", "1024", "1e6", "0.001", "1e300", "-1", "nan", "inf"]
        argv += ["--budget-mib", rng.choice(budgets)]
    code = f"from graphscope.analysis.buckets import read_buckets as r; r({argv[1]!r})"
    read = run.reader(_py(code), "reader:buckets", names, lambda: read_buckets(argv[1]))
    run.result.loaded = read is not None
    run.cli(argv, names)
    run.cli([*argv, "--json"], names)


def _histogram(rng: Rng, said: list[str]) -> bytes:
    if rng.random() < 0.5:
        doc: Any = {"1": 120, "2": 40, "4": 30, "8": 5}
        for _ in range(rng.randint(1, 3)):
            doc, what = json_mutation(doc, rng)
            said.append(f"histogram: {what}")
        return dumps_mutant(doc, rng)
    lines = ["batch,count", "1,120", "2,40", "3,10", "4,30", "8,5"]
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        how = rng.choice(["number", "delete", "junk", "many"])
        if how == "number":
            junk = rng.choice(["0", "-1", "9" * 30, "nan", "inf", "1e999", "", "x", "70000",
                               "1e308", "-1e308", "5e-324", "1e15", "1e16", "2e-308"])  # fmt: skip
            lines[i] = re.sub(r"\d+", junk, lines[i], count=1)
        elif how == "delete" and len(lines) > 1:
            del lines[i]
        elif how == "junk":
            lines.insert(i, rng.choice(["1,2,3", ",", "#", "1;2", "\x00", "batch"]))
        else:
            lines += [f"{n},{rng.randrange(100)}" for n in range(1, rng.choice([100, 70_000]))]
        said.append(f"histogram: {how}")
    return "\n".join(lines).encode()


def _case_trace(family: str, rng: Rng, seeds: Seeds, run: Runner, config: dict[str, Any]) -> None:
    import graphscope
    from graphscope.analysis.torch_trace import read_torch_trace, records_from_torch_trace

    seed = rng.choice(seeds.trace)
    run.result.seed = seed.name
    data = mutate(seed, rng, "trace", config["cache"], run.result.mutations, light=False)
    trace = "trace.json.gz" if data[:2] == b"\x1f\x8b" else "trace.json"
    Path(trace).write_bytes(data)
    bundle = str(SAMPLES / "bundles" / "tiny-llama-b1.json.gz")  # the trace's own step
    if rng.random() < 0.1:
        other = rng.choice([s for s in seeds.bundle + seeds.dot if not s.large])
        bundle = "bundle" + other.suffix
        Path(bundle).write_bytes(other.data)
        run.result.mutations.append(f"joined to {other.name}")
    code = (
        "from graphscope.analysis.torch_trace import *; "
        f"records_from_torch_trace(read_torch_trace({trace!r}))"
    )
    read = run.reader(
        _py(code),
        "reader:trace",
        [trace],
        lambda: records_from_torch_trace(read_torch_trace(trace)),
    )
    run.result.loaded = read is not None
    out = "out.json.gz"
    if run.cli(["import-trace", bundle, trace, "-o", out], [trace, bundle]) != 0:
        return
    # import-trace wrote it: it must read back, within the contract.
    G = run.must(_py(f"import graphscope; graphscope.load({out!r})"), "reader:trace",
                 lambda: graphscope.load(out))  # fmt: skip
    if G is None:
        return
    run.violations = contract_violations(G)
    if run.violations:
        why = "import-trace wrote a graph that breaks the contract"
        run._defect(f"graphscope import-trace ... -o {out}", "contract", why, "?", "reader:trace",
                    run.violations[0])  # fmt: skip
    run.round_trips(G, out)
    run.cli(["inspect", out], [out])
    run.cli(["report", out], [out])
    run.cli(["export", out, "--format", "perfetto", "-o", "out.trace.json"], [out])


def _case_recording(
    family: str, rng: Rng, seeds: Seeds, run: Runner, config: dict[str, Any]
) -> None:
    from graphscope.recording import load_recordings

    source = rng.choice(seeds.recordings)
    run.result.seed = _rel(source)
    said = run.result.mutations
    shutil.copytree(source, "rec")
    indexes = sorted(Path("rec").glob("*/recording.json"))
    for _ in range(rng.randint(1, 3)):
        index = rng.choice(indexes)
        folder = index.parent
        op = rng.random()
        if op < 0.7:
            seed = Seed(str(index), index.read_bytes(), ".json")
            light = rng.random() < 0.5
            index.write_bytes(mutate(seed, rng, "recording", config["cache"], said, light))
            said[-1] = f"{folder.name}/recording.json: {said[-1]}"
        elif op < 0.8 and (files := sorted(folder.glob("g*"))):
            gone = rng.choice(files)
            gone.unlink()
            said.append(f"{gone.name} deleted")
        elif op < 0.88 and (bundles := sorted(folder.glob("g*.json.gz"))):
            victim = rng.choice(bundles)
            seed = Seed(str(victim), victim.read_bytes(), ".json.gz")
            victim.write_bytes(mutate(seed, rng, "bundle", config["cache"], said, light=True))
            said.append(f"{victim.name} mutated")
        elif op < 0.94:
            run_json = Path("rec/run.json")
            seed = Seed("run.json", run_json.read_bytes(), ".json")
            run_json.write_bytes(mutate(seed, rng, "recording", config["cache"], said, False))
        else:
            odd = Path("rec") / rng.choice(["pid1", "rank0-pid2", "pidx", "rank-1-pid3"])
            odd.mkdir(exist_ok=True)
            if rng.random() < 0.5:
                (odd / "recording.json").write_bytes(index.read_bytes())
            said.append(f"folder {odd.name} added")
    emptied = rng.random() < 0.1
    if emptied:  # run.json alone, as record leaves a run where no process could be recorded
        for folder in {index.parent for index in indexes}:
            shutil.rmtree(folder, ignore_errors=True)
        said.append("every process folder removed")
    where = "rec" if emptied or rng.random() < 0.8 else str(rng.choice(indexes).parent)
    code = f"from graphscope.recording import load_recordings as r; r({where!r})"
    read = run.reader(_py(code), "reader:recording", [where], lambda: load_recordings(where))
    run.result.loaded = read is not None
    for argv in (
        ["inspect", where],
        ["inspect", "--json", where],
        ["report", where],
        ["report", "--json", where],
        ["diff", where, str(source)],
        ["diff", "--json", where, where],
    ):
        run.cli(argv, [where])
    if read is not None and config["app"]:
        _app_catalog(run, where)


def _case_commands(
    family: str, rng: Rng, seeds: Seeds, run: Runner, config: dict[str, Any]
) -> None:
    """A graph that loads through every command that reads one: half the time a mutated file
    (a few tries at one that loads), half a seed's graph changed in memory."""
    import graphscope

    if rng.random() < 0.5 and _changed_graph(rng, seeds, run, config):
        return
    for _ in range(8):
        kind = rng.choice(["dot", "bundle", "bundle"])
        seed = seeds.pick(seeds.dot if kind == "dot" else seeds.bundle, rng)
        run.result.mutations = []
        data = mutate(seed, rng, kind, config["cache"], run.result.mutations, light=True)
        path = "input" + seed.suffix
        Path(path).write_bytes(data)
        try:
            G = graphscope.load(path)
        except graphscope.GraphscopeError:
            continue  # refused: this family is about graphs that load
        except Exception:
            break  # a reader's defect: the load step below records it
        if not run.gate or not contract_violations(G):
            break
    run.result.seed = seed.name
    run.factor = LARGE_FACTOR if seed.large else 1.0
    G = run.load(path, kind)
    if G is not None:
        every_command(run, G, path, seed, config)


_SEED_GRAPHS: dict[str, Any] = {}  # the seeds' graphs this worker loaded, by name


def _changed_graph(rng: Rng, seeds: Seeds, run: Runner, config: dict[str, Any]) -> bool:
    """A seed's graph changed in memory (``graph_mutation``) until it keeps the contract,
    saved by graphscope, read back, then every command; False where none kept it."""
    import graphscope

    seed = seeds.pick(seeds.bundle + seeds.dot, rng)
    if seed.name not in _SEED_GRAPHS:
        Path("seed" + seed.suffix).write_bytes(seed.data)
        _SEED_GRAPHS[seed.name] = graphscope.load("seed" + seed.suffix)
    for _ in range(10):
        G = copy.deepcopy(_SEED_GRAPHS[seed.name])
        said = [graph_mutation(G, rng) for _ in range(rng.randint(1, 3))]
        if not contract_violations(G):
            break
    else:
        return False
    run.result.seed, run.result.mutations = seed.name, said
    run.factor = LARGE_FACTOR if seed.large else 1.0
    path = rng.choice(["input.json.gz", "input.json", "input.dot"])
    owner = f"round-trip:{path.split('.', 1)[1]}"
    line = _py(f"import graphscope; graphscope.save(G, {path!r})") + "  # G: the seed, changed"
    if run.must(line, owner, lambda: graphscope.save(G, path)) is None:
        return True
    loaded = run.load(path, "bundle" if "json" in path else "dot")
    if loaded is None:
        run.result.refused = False
        run._defect(line, "round-trip", "a valid graph, saved, does not load", "?", owner)
        return True
    for filled in ("source", "schema_version", "root_graph_ids"):  # load fills these if absent
        G.graph.setdefault(filled, loaded.graph.get(filled))
    if (why := graphs_differ(G, loaded)) is not None:
        run._defect(line, "round-trip", "not equal", "?", owner, why)
    every_command(run, loaded, path, seed, config)
    return True


def every_command(run: Runner, G: Any, path: str, seed: Seed, config: dict[str, Any]) -> None:
    """Every command that reads a graph file, on ``path`` (which loads as ``G``)."""
    import graphscope

    run.round_trips(G, path)
    original = "original" + seed.suffix
    Path(original).write_bytes(seed.data)
    trace = str(next(SAMPLES.glob("traces/*.json.gz")))
    names = [path, original, trace]
    for argv in (
        ["inspect", path],
        ["inspect", "--json", path],
        ["report", path],
        ["report", "--json", path],
        ["diff", original, path],
        ["diff", "--json", path, original],
        ["diff", path, path],
        ["export", path, "--format", "html", "-o", "out.html"],
        ["export", path, "--format", "perfetto", "-o", "out.trace.json"],
        ["export", path, "--format", "model-explorer", "-o", "out.model-explorer.json"],
        ["export", path, "--format", "node-link", "-o", "out.node-link.json.gz"],
        ["import-trace", path, trace, "-o", "out.imported.json.gz"],
        ["convert", path, "out.dot"],
        ["convert", path, "out.json"],
    ):
        run.cli(argv, names, 3.0 if argv[0] in ("export", "diff") else 1.0)
    for out in ("out.dot", "out.json"):
        if os.path.exists(out):
            owner = "contract" if run.violations else f"round-trip:{out.split('.')[1]}"
            line = _py(f"import graphscope; graphscope.load({out!r})")
            H = run.must(line, owner, functools.partial(graphscope.load, out))
            if H is not None and (why := graphs_differ(G, H)) is not None:
                run._defect(f"graphscope convert {path} {out}", "round-trip", "not equal", "?",
                            owner, why)  # fmt: skip
    if config.get("upload"):
        _upload(run, path)
    if config.get("app"):
        _app_cards(run, G)


# ---------------------------------------------------------------------------------------------
# Hooks into the dashboard (app/), run with --upload and --app: its upload and its pages are
# being reworked, so each is looked up when it runs and skipped where it is not there.


def _upload(run: Runner, path: str) -> None:
    """The dashboard's upload of the input: a source, or its error in one line."""
    try:
        from graphscope.app.files.sources import Registry
    except ImportError:
        run.result.skipped.append("upload")
        return
    if not hasattr(Registry, "add_upload"):
        run.result.skipped.append("upload")
        return
    data = (
        "data:application/octet-stream;base64," + base64.b64encode(Path(path).read_bytes()).decode()
    )
    line = f"Registry().add_upload({path!r}, <the file as a data: URL>, Path('uploads'))"
    source = run.reader(
        line, "app", [path], lambda: Registry().add_upload(path, data, Path("uploads"))
    )
    if source is not None and getattr(source, "error", None):
        run._refusal(line, str(source.error), [path], "app")


def _app_catalog(run: Runner, where: str) -> None:
    try:
        from graphscope.app.files.sources import Registry
        from graphscope.app.render import pages
    except ImportError:
        run.result.skipped.append("catalog")
        return
    line = f"pages.catalog_page([Registry().add_recording(Path({where!r}), 'rec')])"
    run.must(
        line, "app", lambda: pages.catalog_page([Registry().add_recording(Path(where), "rec")])
    )


def _app_cards(run: Runner, G: Any) -> None:
    try:
        from graphscope.app.render import cards
    except ImportError:
        run.result.skipped.append("cards")
        return
    if not hasattr(cards, "card_divs"):
        run.result.skipped.append("cards")
        return
    run.must("cards.card_divs(G)", "app", lambda: cards.card_divs(G))


# ---------------------------------------------------------------------------------------------
# Workers, each with its time and memory limits

_SEEDS: Seeds | None = None  # set in the parent before the workers fork: never piped
_CASES = {
    "dot": _case_graph,
    "bundle": _case_graph,
    "buckets": _case_buckets,
    "trace": _case_trace,
    "recording": _case_recording,
    "commands": _case_commands,
    "callbacks": case_callbacks,
    "http": case_http,
    "demangle": case_demangle,
    "json": case_json,
    "outputs": case_outputs,
    "amplify": case_amplify,
}


def run_case(
    family: str, index: int, config: dict[str, Any], report: Callable[[str, float], None]
) -> CaseResult:
    """Make input ``index`` of ``family`` (the same for the same campaign seed) in the current
    folder, and run it."""
    assert _SEEDS is not None
    result = CaseResult(family, index)
    run = Runner(result, report, config["timeout"])
    run.gate = config["gate"]
    run.memory_mib = config["memory_mib"]
    started = time.perf_counter()
    _CASES[family](family, random.Random(f"{config['seed']}/{family}/{index}"), _SEEDS, run, config)
    result.seconds = time.perf_counter() - started
    return result


def _limit_memory(mib: int) -> None:
    """Let this process's address space grow by ``mib`` MiB from here, no more (0: no limit).

    Set again before each step: a worker's address space grows over many steps (freed memory
    is not always handed back: fourteen loads of a 54 MB DOT file in a row reached 2 GiB), and
    the limit is on what one step may add.
    """
    if not mib:
        return
    with open("/proc/self/statm") as fh:
        size = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = size + (mib << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))


def _worker(conn: Any, config: dict[str, Any]) -> None:
    """Run the inputs the parent sends until it sends None; report each step as it starts."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    work = Path(config["work"])
    while (job := conn.recv()) is not None:
        family, index = job
        folder = work / f"{family}-{index}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        os.chdir(folder)
        _limit_memory(config["memory_mib"])  # making the input, until its first step
        try:
            result = run_case(family, index, config, lambda line, s: conn.send(("step", line, s)))
        except MemoryError:
            made = Defect("making the input", "memory", "MemoryError", "?", "fuzz")
            result = CaseResult(family, index, defects=[made])
        except Exception:  # the campaign's own bug, kept apart from graphscope's
            made = Defect("making the input", "fuzz", "error", "?", "fuzz", traceback.format_exc())
            result = CaseResult(family, index, defects=[made])
        os.chdir(work)
        conn.send(("done", asdict(result)))


@dataclass
class _Slot:
    """A worker and the input it runs."""

    process: Any = None
    conn: Any = None
    job: tuple[str, int] | None = None
    step: str = ""
    steps: list[str] = field(default_factory=list)
    deadline: float = 0.0


class Pool:
    """Workers forked from this process; one whose step runs past its time is killed."""

    def __init__(self, jobs: int, config: dict[str, Any]):
        self.config = config
        self.context = multiprocessing.get_context("fork")
        self.slots = [_Slot() for _ in range(jobs)]
        for slot in self.slots:
            self._start(slot)

    def _start(self, slot: _Slot) -> None:
        parent, child = self.context.Pipe()
        slot.process = self.context.Process(target=_worker, args=(child, self.config), daemon=True)
        slot.process.start()
        child.close()
        slot.conn, slot.job = parent, None

    def _restart(self, slot: _Slot) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(slot.process.pid, signal.SIGKILL)
        slot.process.join()
        slot.conn.close()
        self._start(slot)

    def close(self) -> None:
        for slot in self.slots:
            if slot.job is None:
                with contextlib.suppress(OSError):
                    slot.conn.send(None)
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.process.pid, signal.SIGKILL)
        for slot in self.slots:
            slot.process.join(timeout=5)

    def run(self, jobs: Iterator[tuple[str, int]]) -> Iterator[CaseResult]:
        """Each input's result as it finishes."""
        jobs_left = True
        while True:
            for slot in self.slots:
                if slot.job is None and jobs_left:
                    job = next(jobs, None)
                    if job is None:
                        jobs_left = False
                        continue
                    slot.job, slot.steps, slot.step = job, [], "making the input"
                    slot.deadline = time.monotonic() + self.config["timeout"] * LARGE_FACTOR
                    slot.conn.send(job)
            busy = [s for s in self.slots if s.job is not None]
            if not busy:
                return
            wait = max(0.0, min(s.deadline for s in busy) - time.monotonic())
            ready = multiprocessing.connection.wait([s.conn for s in busy], timeout=wait)
            for slot in busy:
                if slot.conn in ready:
                    try:
                        message = slot.conn.recv()
                    except (EOFError, OSError):
                        yield self._lost(slot, "crash", f"worker died ({slot.process.exitcode})")
                        continue
                    if message[0] == "step":
                        _, slot.step, limit = message
                        slot.steps.append(slot.step)
                        slot.deadline = time.monotonic() + limit
                    else:
                        slot.job = None
                        yield _result(message[1])
                elif time.monotonic() >= slot.deadline:
                    yield self._lost(slot, "hang", "past its time limit")

    def _lost(self, slot: _Slot, kind: str, why: str) -> CaseResult:
        """The result of an input whose worker hung or died: it is killed and replaced."""
        assert slot.job is not None
        family, index = slot.job
        step = slot.step
        if step == "making the input":
            owner = "fuzz"
        elif step.startswith("python"):
            owner = f"reader:{family}"  # Python-level steps are the readers' (and save's)
        else:
            owner = "after load"
        result = CaseResult(family, index, steps=list(slot.steps))
        result.defects.append(Defect(step, kind, why, "?", owner))
        self._restart(slot)
        return result


def _result(data: dict[str, Any]) -> CaseResult:
    defects = [Defect(**d) for d in data.pop("defects")]
    return CaseResult(**data, defects=defects)


# ---------------------------------------------------------------------------------------------
# The campaign


@dataclass
class Summary:
    """Counts per family, and defect classes with a reproducer of each."""

    inputs: Counter[str] = field(default_factory=Counter)
    loaded: Counter[str] = field(default_factory=Counter)
    outcomes: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    owners: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    classes: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)  # app hooks with nothing to call
    examples: dict[tuple[str, str, str, str], str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def defects(self) -> int:
        """Inputs with at least one defect."""
        return sum(c["defect"] for c in self.outcomes.values())

    def add(self, result: CaseResult, kept: str | None) -> None:
        family = result.family
        self.inputs[family] += 1
        self.loaded[family] += int(result.loaded)
        self.skipped.update(result.skipped)
        self.outcomes[family][result.outcome] += 1
        for cls in dict.fromkeys(d.cls for d in result.defects):  # once per input
            self.classes[cls] += 1
            self.owners[family][cls[0]] += 1
            if kept is not None:
                self.examples.setdefault(cls, kept)

    def table(self) -> str:
        owners = sorted({o for c in self.owners.values() for o in c})
        rows = [["family", "inputs", "loaded", "clean", "refused", "defects", *owners]]
        for family in FAMILIES:
            if self.inputs[family]:
                o = self.outcomes[family]
                counts = [self.inputs[family], self.loaded[family], o["clean"], o["refused"]]
                counts += [o["defect"], *(self.owners[family][x] for x in owners)]
                rows.append([family, *map(str, counts)])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
            for r in rows
        ]
        total = sum(self.inputs.values())
        lines.append(f"{total} inputs in {self.seconds:.0f} s (owners: inputs with a defect there)")
        if self.skipped:
            lines.append(f"app hooks skipped, not found: {dict(self.skipped)}")
        if self.classes:
            lines.append("defect classes: inputs  owner | kind | error | where  (a reproducer)")
            lines += [
                f"  {n:>6}  {' | '.join(c)}  ({self.examples.get(c, '-')})"
                for c, n in self.classes.most_common()
            ]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        families = {
            f: {
                "inputs": self.inputs[f],
                "loaded": self.loaded[f],
                **self.outcomes[f],
                "owners": dict(self.owners[f]),
            }
            for f in FAMILIES
            if self.inputs[f]
        }
        classes = [
            {"inputs": n, "class": list(c), "example": self.examples.get(c)}
            for c, n in self.classes.most_common()
        ]
        return {
            "seconds": round(self.seconds, 1),
            "families": families,
            "classes": classes,
            "skipped_hooks": dict(self.skipped),
        }


def _keep(result: CaseResult, work: Path, out: Path) -> str:
    """Move a defective input's folder to ``out/defects/<family>/<index>`` with a script of
    its steps (``repro.sh``) and what went wrong (``defects.json``)."""
    folder = work / f"{result.family}-{result.index}"
    target = out / "defects" / result.family / str(result.index)
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    if folder.exists():
        shutil.move(str(folder), str(target))
    else:
        target.mkdir()
    lines = [
        "#!/bin/sh",
        f"# fuzz {result.family} input {result.index}, from {result.seed}",
        *(f"# mutation: {m}" for m in result.mutations),
        *(
            f"# DEFECT {d.kind} {d.error} at {d.site} ({d.owner}) in: {d.step}"
            for d in result.defects
        ),
        'cd "$(dirname "$0")"',
        *result.steps,
    ]
    (target / "repro.sh").write_text("\n".join(lines) + "\n", errors="surrogateescape")
    (target / "defects.json").write_text(json.dumps(asdict(result), indent=1))
    return str(target.relative_to(out))


def campaign(
    families: list[str],
    count: int | dict[str, int],
    *,
    seed: int = 0,
    start: int = 0,
    timeout: float = 10.0,
    out: Path | str = "/tmp/graphscope-fuzz",
    jobs: int = 1,
    large: bool = True,
    memory_mib: int = 2048,
    upload: bool = False,
    app: bool = False,
    gate: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Summary:
    """Run ``count`` inputs of each family (or ``count[family]``), numbered from ``start``;
    keep each input with a defect under ``out/defects``, every result in
    ``out/results.jsonl``."""
    global _SEEDS
    out = Path(out).resolve()
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    _SEEDS = load_seeds(large)
    import graphscope.cli

    with contextlib.suppress(ImportError):
        import graphscope.app.render.report_html  # noqa: F401
    config = {
        "seed": seed, "timeout": timeout, "work": str(work), "cache": out / "cache",
        "memory_mib": memory_mib, "upload": upload, "app": app, "gate": gate,
    }  # fmt: skip
    counts = count if isinstance(count, dict) else dict.fromkeys(families, count)
    todo = iter(
        [
            (f, i)
            for i in range(start, start + max(counts.values(), default=0))
            for f in families
            if i < start + counts.get(f, 0)
        ]
    )
    summary = Summary()
    started = time.perf_counter()
    pool = Pool(jobs, config)
    try:
        with (out / "results.jsonl").open("w") as log:
            for n, result in enumerate(pool.run(todo), 1):
                kept = None
                if result.defects:
                    kept = _keep(result, work, out)
                else:
                    shutil.rmtree(work / f"{result.family}-{result.index}", ignore_errors=True)
                summary.add(result, kept)
                log.write(json.dumps({**asdict(result), "outcome": result.outcome}) + "\n")
                if progress is not None and n % 1000 == 0:
                    elapsed = time.perf_counter() - started
                    progress(f"{n} inputs, {summary.defects} with defects, {elapsed:.0f} s")
    finally:
        pool.close()
        summary.seconds = time.perf_counter() - started
        (out / "summary.json").write_text(json.dumps(summary.as_dict(), indent=1) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        epilog="Exit status 1 when any input found a defect. docs/FUZZING.md has more.",
    )
    parser.add_argument("--family", choices=[*FAMILIES, "all"], default="all")
    parser.add_argument(
        "--count",
        action="append",
        default=[],
        metavar="N|FAMILY=N",
        help="inputs per family (200); FAMILY=N for one family, e.g. --count 10000 "
        "--count commands=2000",
    )
    parser.add_argument("--seed", type=int, default=0, help="the same seed makes the same inputs")
    parser.add_argument(
        "--start",
        type=int,
        default=0,
        help="number of the first input (0): a long run in parts, e.g. --start 5000",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds a step may take (10)")
    parser.add_argument("--out", default="/tmp/graphscope-fuzz", help="where results go")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (1)")
    parser.add_argument("--memory-mib", type=int, default=2048, help="memory one step may add")
    parser.add_argument(
        "--no-large",
        action="store_true",
        help="leave out samples of 1 MiB or more (samples/large's graphs)",
    )
    parser.add_argument("--upload", action="store_true", help="also the dashboard's upload")
    parser.add_argument("--app", action="store_true", help="also the dashboard's catalog, cards")
    parser.add_argument(
        "--contract-gate",
        action="store_true",
        help="count a graph that loads but breaks graphscope.contract as refused: to look for "
        "defects of the analyses on valid graphs alone, while readers do not check it yet",
    )
    args = parser.parse_args(argv)
    families = list(FAMILIES) if args.family == "all" else [args.family]
    counts = dict.fromkeys(families, 200)
    for given in args.count:
        family, _, n = given.rpartition("=")
        if (family and family not in FAMILIES) or not n.isdigit():
            parser.error(f"--count {given}: expected N or FAMILY=N")
        counts.update({family: int(n)} if family else dict.fromkeys(families, int(n)))
    summary = campaign(
        families,
        {f: n for f, n in counts.items() if f in families},
        seed=args.seed,
        start=args.start,
        timeout=args.timeout,
        out=args.out,
        jobs=args.jobs,
        large=not args.no_large,
        memory_mib=args.memory_mib,
        upload=args.upload,
        app=args.app,
        gate=args.contract_gate,
        progress=lambda line: print(line, flush=True),
    )
    print(summary.table())
    print(
        f"every result: {Path(args.out) / 'results.jsonl'}; defects: {Path(args.out) / 'defects'}"
    )
    return 1 if summary.defects else 0


if __name__ == "__main__":
    sys.exit(main())
