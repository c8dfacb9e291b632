"""The graph contract, and the bounds every reader keeps while it reads a file.

DESIGN.md's graph model and docs/FORMAT.md, as data: ``NODE`` says what each node attribute
holds (per-node sections included), ``GRAPH`` the metadata, ``EAGER_TRACE`` the eager trace's
tables, ``RECORDING_*`` a recording index, ``BUCKETS`` a buckets index and ``TORCH_EVENT`` the
profiler events graphscope reads. ``check_graph`` applies them, with the rules no field can say
alone (node keys, owners, edges within one graph, acyclic graphs), to each graph a reader builds,
so the analyses, exports and the app never meet a field of the wrong type. The folded view the
dashboard draws (``analysis.folding``: ``GROUP`` nodes, ``group:`` keys) is made from a checked
graph and is no input: docs/FORMAT.md describes it. A field the contract
does not name is allowed when it is plain JSON: a string, a bool, a finite number, an integer
that fits 64 bits, or lists and objects of those at most ``MAX_DEPTH`` deep. An optional field
may be absent; every rule here is about a field that is present.

Rules check a whole column at once (every node's ``grid``, then every node's ``block``) with
builtins that loop in C, which keeps a 100,000-node load within its target
(benchmarks/bench_bundle.py); only when a column fails are its values checked one by one, to
name the first culprit.

The bounds: ``read_limited`` reads a file of at most a given size, ``gunzip`` stops a gzip
stream that expands past its limit, and ``parse_json`` refuses JSON nested deeper than
``MAX_DEPTH`` or holding more than ``MAX_JSON_VALUES`` values (measured on the bytes, before
anything is built), integer literals too long to convert and the non-standard NaN and
Infinity. Each says the limit in its error.
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
import stat
import sys
import zlib
from collections.abc import Callable, Iterable, Mapping
from itertools import chain, compress, groupby, repeat
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import paths
from .errors import InputError
from .model import NODE_TYPES

if TYPE_CHECKING:
    import networkx as nx

#: Deepest JSON nesting any reader accepts; graphscope's own files nest 8 deep.
MAX_DEPTH = 64
#: Largest file, and largest decompressed gzip stream, ``graphscope.load`` reads by default:
#: samples/large's 10,780 nodes, every section and the eager trace included, are 36 MB of JSON.
MAX_BYTES = 512 << 20
#: Most JSON values (list items, object members, lists and objects) one read may hold. Bytes
#: do not bound memory: a value takes 20 to 100 bytes in Python, and 314 MB of ``{},`` (a
#: 306 KB gzip file) made 105 million dicts, 5.45 GB. Real bundles hold 0.06 values a byte:
#: samples/large 2.1 million, the 100,064-node decode graph of benchmarks/_big.py 1.5 million,
#: and 19 million with its eager trace (326 MB of JSON); at that density a bundle of MAX_BYTES
#: holds 32 million.
MAX_JSON_VALUES = 1 << 25
#: Most memory one read's JSON may take, as estimated from its text before it is parsed:
#: ``JSON_VALUE_BYTES`` a value, as much again an object member (a dict entry and its key),
#: plus the text's bytes (strings). Values alone under-count text of long unique strings or
#: keys: 30 million 13-character strings (450 MB) took 2.4 GB, and an object of 16 million
#: keys 2.2 GB and a minute to parse. The 100,064-node bundle with its eager trace, the
#: largest real one, estimates at 1.8 GB (measured peak 1.5 GB); samples/large at 0.2 GB.
MAX_JSON_MEMORY = 2 << 30
JSON_VALUE_BYTES = 64

U32 = (1 << 32) - 1
I64 = (1 << 63) - 1
U64 = (1 << 64) - 1
#: Bound on times and durations in us: a clock's epoch time with room to spare, and small
#: enough that the same time in ns still fits a signed 64-bit integer.
MAX_US = 9e15
MAX_NS = 9 * 10**18
#: Largest batch size a buckets index or a histogram may name.
MAX_BATCH_SIZE = 1 << 16

Problem = tuple[str, str]  # (where inside the value, e.g. ".grid[1]"; what is wrong)
_NONE = type(None)


def show(value: Any) -> str:
    """A short, safe rendering of a JSON value for an error message (never recurses)."""
    if isinstance(value, str):
        return json.dumps(value[:40]) + ("..." if len(value) > 40 else "")
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return (
            str(value) if value.bit_length() <= 128 else f"an integer of {value.bit_length()} bits"
        )
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


class Rule:
    """What the values of one field must be."""

    says = "a valid value"

    def problem(self, value: Any) -> Problem | None:
        """What is wrong with one value, or None."""
        raise NotImplementedError

    def column_ok(self, values: list[Any]) -> bool:
        """Whether every value of a column passes: the fast path, overridden where it pays."""
        return all(self.problem(v) is None for v in values)

    def bad(self, value: Any) -> Problem:
        return "", f"{show(value)} is not {self.says}"


class Int(Rule):
    """An integer (not a bool) in ``lo..hi``."""

    def __init__(self, lo: int, hi: int, says: str | None = None) -> None:
        self.lo, self.hi = lo, hi
        self.says = says or f"an integer in {lo}..{hi}"

    def problem(self, value: Any) -> Problem | None:
        if type(value) is int and self.lo <= value <= self.hi:
            return None
        return self.bad(value)

    def column_ok(self, values: list[Any]) -> bool:
        if not values:
            return True
        return set(map(type, values)) <= {int} and self.lo <= min(values) and max(values) <= self.hi


class Num(Rule):
    """A finite number in ``lo..hi``."""

    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi = lo, hi
        self.says = f"a finite number in {lo:g}..{hi:g}"

    def problem(self, value: Any) -> Problem | None:
        if type(value) in (int, float) and self.lo <= value <= self.hi:
            return None  # NaN fails both comparisons, infinities the range
        return self.bad(value)

    def column_ok(self, values: list[Any]) -> bool:
        if not values:
            return True
        # The range check comes first: it keeps isfinite from meeting an int too large for
        # a float; isfinite then catches a NaN that min and max can pass over.
        return (
            set(map(type, values)) <= {int, float}
            and self.lo <= min(values)
            and max(values) <= self.hi
            and all(map(math.isfinite, values))
        )


class Text(Rule):
    """A string; ``valid`` (a predicate) or ``alphabet`` (its characters) narrows it."""

    def __init__(
        self,
        says: str = "a string",
        valid: Callable[[str], bool] | None = None,
        alphabet: str | None = None,
    ) -> None:
        self.says, self.valid = says, valid
        self.alphabet = None if alphabet is None else frozenset(alphabet)

    def problem(self, value: Any) -> Problem | None:
        if (
            type(value) is str
            and (self.valid is None or self.valid(value))
            and (self.alphabet is None or set(value) <= self.alphabet)
        ):
            return None
        return self.bad(value)

    def column_ok(self, values: list[Any]) -> bool:
        if not set(map(type, values)) <= {str}:
            return False
        if self.alphabet is not None and not set("".join(values)) <= self.alphabet:
            return False
        return self.valid is None or all(map(self.valid, values))


class OneOf(Rule):
    """One of a few strings."""

    def __init__(self, choices: Iterable[str], what: str) -> None:
        self.choices = frozenset(choices)
        self.says = f"{what} ({', '.join(sorted(self.choices))})"

    def problem(self, value: Any) -> Problem | None:
        return None if type(value) is str and value in self.choices else self.bad(value)

    def column_ok(self, values: list[Any]) -> bool:
        return set(map(type, values)) <= {str} and set(values) <= self.choices


class Flag(Rule):
    says = "true or false"

    def problem(self, value: Any) -> Problem | None:
        return None if type(value) is bool else self.bad(value)

    def column_ok(self, values: list[Any]) -> bool:
        return set(map(type, values)) <= {bool}


class Maybe(Rule):
    """``rule``, or null."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.says = f"{rule.says} or null"

    def problem(self, value: Any) -> Problem | None:
        if value is None:
            return None
        found = self.rule.problem(value)
        return None if found is None else (found[0], f"{found[1]} (or null)")

    def column_ok(self, values: list[Any]) -> bool:
        if None in values:
            values = [v for v in values if v is not None]
        return self.rule.column_ok(values)


class ListOf(Rule):
    """A list of values that each pass ``item``; of exactly ``length`` items when given."""

    def __init__(self, item: Rule, length: int | None = None, says: str | None = None) -> None:
        self.item, self.length = item, length
        count = "a list" if length is None else f"a list of {length}"
        self.says = says or f"{count} (each {item.says})"

    def problem(self, value: Any) -> Problem | None:
        if type(value) is not list or (self.length is not None and len(value) != self.length):
            return self.bad(value)
        if self.item.column_ok(value):
            return None
        for i, item in enumerate(value):
            found = self.item.problem(item)
            if found is not None:
                return f"[{i}]{found[0]}", found[1]
        return None

    def column_ok(self, values: list[Any]) -> bool:
        if not set(map(type, values)) <= {list}:
            return False
        if self.length is not None and not set(map(len, values)) <= {self.length}:
            return False
        return self.item.column_ok(list(chain.from_iterable(values)))


def _column(records: list[dict[str, Any]], name: str) -> list[Any]:
    """The values of field ``name`` in the records that have it."""
    try:
        return list(map(itemgetter(name), records))  # in C, when every record has it
    except KeyError:
        return [r[name] for r in records if name in r]


class Record(Rule):
    """An object whose named fields pass their rules and whose other fields pass ``other``."""

    def __init__(
        self,
        fields: Mapping[str, Rule],
        required: Iterable[str] = (),
        other: Rule | None = None,
        says: str = "an object",
    ) -> None:
        self.fields = dict(fields)
        self.required = tuple(required)
        self.other: Rule = PLAIN if other is None else other
        self.says = says

    def problem(self, value: Any) -> Problem | None:
        if type(value) is not dict:
            return self.bad(value)
        for name in self.required:
            if name not in value:
                return f".{name}", "is missing"
        for name, item in value.items():
            found = self.fields.get(name, self.other).problem(item)
            if found is not None:
                return f".{name}{found[0]}", found[1]
        return None

    def column_ok(self, values: list[Any]) -> bool:
        if not set(map(type, values)) <= {dict}:
            return False
        for name in self.required:
            try:
                list(map(itemgetter(name), values))
            except KeyError:
                return False
        names: set[str] = set().union(*values)
        if len(names) > max(64, len(values)):
            # Keys that differ from row to row (an object of a million keys on one node): a
            # column per key would walk every row once per key, quadratic (a 32 MB DOT file
            # took 62 s here); value by value is linear in what the rows hold.
            return all(self.problem(v) is None for v in values)
        return all(
            self.fields.get(name, self.other).column_ok(_column(values, name)) for name in names
        )


class Plain(Rule):
    """Any plain JSON value: scalars in range, containers at most ``MAX_DEPTH`` deep."""

    says = "plain JSON"
    _SCALARS = frozenset({str, bool, _NONE})

    def problem(self, value: Any) -> Problem | None:
        return None if self._ok(value) else self._where(value)

    def _ok(self, value: Any) -> bool:
        """Whether ``value`` is plain JSON: the walk of ``_where`` without naming each place,
        and with scalar items checked where they are met. Naming every place as it went took
        most of the time: 24 s for the 1.7 million objects one node's attributes held."""
        scalars = self._SCALARS
        stack: list[tuple[Any, int]] = [(value, 1)]
        while stack:
            item, depth = stack.pop()
            kind = type(item)
            if kind is list or kind is dict:
                if depth > MAX_DEPTH:
                    return False
                depth += 1
                for x in item if kind is list else item.values():
                    inner = type(x)
                    if inner in scalars:
                        continue
                    if inner is int:
                        if not -(1 << 63) <= x <= U64:
                            return False
                    elif inner is float:
                        if not math.isfinite(x):
                            return False
                    else:
                        stack.append((x, depth))
            elif kind is int:
                if not -(1 << 63) <= item <= U64:
                    return False
            elif kind is float:
                if not math.isfinite(item):
                    return False
            elif kind not in scalars:
                return False
        return True

    def _where(self, value: Any) -> Problem | None:
        """Where ``value`` stops being plain JSON, and why (a second walk, made only then)."""
        # Iterative: a value nested thousands deep must be refused, not overflow the stack.
        stack: list[tuple[Any, str, int]] = [(value, "", 1)]
        while stack:
            item, where, depth = stack.pop()
            kind = type(item)
            if kind in self._SCALARS:
                continue
            if kind is int:
                if not -(1 << 63) <= item <= U64:
                    return where, f"{show(item)} does not fit 64 bits"
            elif kind is float:
                if not math.isfinite(item):
                    return where, f"{item!r} is not a finite number"
            elif kind is list or kind is dict:
                if depth > MAX_DEPTH:
                    return where, f"nested deeper than {MAX_DEPTH} levels"
                if kind is list:
                    stack.extend((x, f"{where}[{i}]", depth + 1) for i, x in enumerate(item))
                else:
                    stack.extend((x, f"{where}.{k}", depth + 1) for k, x in item.items())
            else:
                return where, f"a {kind.__name__} is not JSON"
        return None

    def column_ok(self, values: list[Any]) -> bool:
        kinds = set(map(type, values))
        if kinds <= self._SCALARS:
            return True
        if kinds == {int}:  # most of a dump's fields: handles, addresses, counts
            return bool(min(values) >= -(1 << 63) and max(values) <= U64)
        if kinds == {float}:
            return all(map(math.isfinite, values))
        if not kinds <= self._SCALARS | {int, float}:
            return all(self.problem(v) is None for v in values)
        ints = [v for v in values if type(v) is int]
        floats = [v for v in values if type(v) is float]
        return (not ints or (min(ints) >= -(1 << 63) and max(ints) <= U64)) and all(
            map(math.isfinite, floats)
        )


class Table(Rule):
    """A table stored as ``{"fields": [...], "rows": [[...], ...]}``, checked by column."""

    def __init__(
        self,
        columns: Mapping[str, Rule],
        required: Iterable[str],
        ordered: Iterable[tuple[str, str]] = (),
    ) -> None:
        self.columns = dict(columns)
        self.required = tuple(required)
        self.ordered = tuple(ordered)  # (start, end) columns where end >= start in each row
        self.says = "a table of fields and rows"

    def problem(self, value: Any) -> Problem | None:
        if type(value) is not dict:
            return self.bad(value)
        fields, rows = value.get("fields"), value.get("rows")
        if type(fields) is not list or type(rows) is not list:
            return "", "needs a list of fields and a list of rows"
        if not set(map(type, fields)) <= {str} or len(set(fields)) != len(fields):
            return ".fields", "not a list of distinct names"
        missing = [name for name in self.required if name not in fields]
        if missing:
            return ".fields", f"lacks {', '.join(missing)}"
        width = len(fields)
        if not set(map(type, rows)) <= {list} or not set(map(len, rows)) <= {width}:
            for i, row in enumerate(rows):
                if type(row) is not list or len(row) != width:
                    return f".rows[{i}]", f"not a row of {width} values"
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in fields]
        for j, name in enumerate(fields):
            rule = self.columns.get(name, PLAIN)
            column = list(columns[j])
            if not rule.column_ok(column):
                for i, item in enumerate(column):
                    found = rule.problem(item)
                    if found is not None:
                        return f".rows[{i}][{j}] ({name}){found[0]}", found[1]
        for start, end in self.ordered:
            starts, ends = columns[fields.index(start)], columns[fields.index(end)]
            if not all(map(operator.le, starts, ends)):
                i = next(i for i, (s, e) in enumerate(zip(starts, ends, strict=True)) if s > e)
                return f".rows[{i}]", f"{end} {ends[i]} is before {start} {starts[i]}"
        return None


PLAIN = Plain()
ID = Int(0, U32)  # graph and node ids are 32-bit in the driver and in CUPTI's node ids
COUNT = Int(0, I64)
BYTES = Int(0, I64)
ADDRESS = Int(0, U64)
LINE = Int(0, U32)
DIMS = ListOf(Int(1, (1 << 31) - 1), 3, "a list of 3 integers in 1..2147483647")
US = Num(-MAX_US, MAX_US)
DURATION_US = Num(0, MAX_US)
NS = Int(-MAX_NS, MAX_NS)
NUMBER = Num(-MAX_US, MAX_US)
TEXT = Text()
TEXTS = ListOf(TEXT)

#: Per-node sections and what each entry holds (docs/FORMAT.md, "Per-node sections").
REPLAY = Record(
    {
        "count": COUNT,
        "min_us": DURATION_US,
        "median_us": DURATION_US,
        "p90_us": DURATION_US,
        "max_us": DURATION_US,
        "start_us": US,
    }
)
EAGER = Record(
    {
        "index": COUNT,
        "start_us": US,
        "duration_us": DURATION_US,
        "stream": Maybe(Int(0, U64)),
        "launch_api": TEXT,
        "launch_start_us": US,
        "launch_us": DURATION_US,
    }
)
ATTRIBUTION = Record(
    {
        "module": Maybe(TEXT),
        "op": Maybe(TEXT),
        "file": Maybe(TEXT),
        "line": Maybe(LINE),
        "function": Maybe(TEXT),
        "compiled": Record({"source_nodes": Maybe(TEXT), "aten": Maybe(TEXT)}),
        "hlo": Record({"module": Maybe(TEXT), "instruction": Maybe(TEXT)}),
    }
)
ARG = Record(
    {
        "offset": BYTES,
        "size": BYTES,
        "value": Text("hexadecimal digits", alphabet="0123456789abcdefABCDEF"),
    },
    required=("offset", "size"),
)
POINTER = Record(
    {
        "arg": COUNT,
        "offset": BYTES,
        "address": ADDRESS,
        "segment": TEXT,
        "segment_offset": BYTES,
        "buffer": TEXT,
        "buffer_offset": BYTES,
    }
)

#: Node attributes: the graph model of DESIGN.md and what the per-node sections hold.
NODE: dict[str, Rule] = {
    "graph_id": ID,
    "local_id": ID,
    "type": OneOf(NODE_TYPES, "a CUDA graph node type"),
    "parent": Maybe(TEXT),
    "name": TEXT,
    "demangled": TEXT,
    "short_name": TEXT,
    "grid": DIMS,
    "block": DIMS,
    "shared_mem": BYTES,
    "kind": TEXT,
    "bytes": BYTES,
    "element_size": BYTES,
    "width": BYTES,
    "height": BYTES,
    "child_graph": ID,
    "conditional_type": TEXT,
    "bodies": ListOf(ID),
    "body_labels": TEXTS,
    "empty_graphs": ListOf(ID),
    "topo_id": COUNT,
    "registers": COUNT,
    "static_shared_mem": BYTES,
    "local_mem": BYTES,
    "max_threads_per_block": COUNT,
    "label_extra": TEXTS,
    "args": ListOf(ARG),
    "pointers": ListOf(POINTER),
    "replay": REPLAY,
    "eager": EAGER,
    "attribution": ATTRIBUTION,
}
NODE_REQUIRED = ("graph_id", "local_id", "type")
#: A node's attributes: every rule, and the fields every node has.
NODE_RULE = Record(NODE, NODE_REQUIRED)
_NODE = NODE_RULE
#: Some of a node's attributes (a bundle's kernel name entry): the same rules, none required.
NODE_PART = Record(NODE)
#: Types whose node owns a graph: a child graph, or a conditional's bodies.
OWNER_TYPES = ("GRAPH", "CONDITIONAL")
_OWNERS = frozenset(OWNER_TYPES)


def claimed_graphs(data: dict[str, Any]) -> list[Any]:
    """The graph ids a node names as its own, as read (not yet checked): a GRAPH node's child
    graph, a CONDITIONAL node's bodies; none for a node of any other type."""
    if data.get("type") not in _OWNERS:
        return []
    bodies = data.get("bodies")
    return [
        *(bodies if isinstance(bodies, list) else ()),
        *([data["child_graph"]] if "child_graph" in data else []),
    ]


_TRACE_DIMS = ListOf(Maybe(Int(1, (1 << 31) - 1)), 3)
#: The eager trace (docs/FORMAT.md, ``eager_trace``): its CUDA calls and its GPU work.
API_COLUMNS: dict[str, Rule] = {
    "name": TEXT,
    "start_ns": NS,
    "end_ns": NS,
    "correlation_id": Maybe(Int(0, U64)),
    "domain": TEXT,
}
GPU_COLUMNS: dict[str, Rule] = {
    "type": OneOf(("KERNEL", "MEMCPY", "MEMSET"), "a GPU activity type"),
    "name": Maybe(TEXT),
    "start_ns": NS,
    "end_ns": NS,
    "correlation_id": Maybe(Int(0, U64)),
    "stream_id": Maybe(Int(0, U64)),
    # A profiler trace may not say a kernel's launch dimensions: [null, null, null].
    "grid": Maybe(_TRACE_DIMS),
    "block": Maybe(_TRACE_DIMS),
    "shared_mem": Maybe(BYTES),
    "bytes": Maybe(BYTES),
    "copy_kind": Maybe(TEXT),
}
_SPAN = (("start_ns", "end_ns"),)
EAGER_TRACE = Record(
    {
        "origin_ns": Int(-I64, I64),
        "thread_id": Maybe(Int(0, U64)),
        "api": Table(API_COLUMNS, ("name", "start_ns", "end_ns", "correlation_id"), _SPAN),
        "gpu": Table(GPU_COLUMNS, ("type", "name", "start_ns", "end_ns", "correlation_id"), _SPAN),
    },
    required=("api", "gpu"),
)
_NUMBERS = Record({}, other=Maybe(NUMBER), says="an object of numbers")
PARITY = Record(
    {
        "matched": COUNT,
        "graph_ops": COUNT,
        "eager_ops": COUNT,
        "only_in_graph": ListOf(Record({"node": TEXT, "what": TEXT})),
        "only_in_eager": ListOf(Record({"index": COUNT, "what": TEXT, "start_us": US})),
        "config": ListOf(Record({"node": TEXT, "name": Maybe(TEXT), "field": TEXT})),
        "counts": ListOf(Record({"what": TEXT, "graph": COUNT, "eager": COUNT})),
        "ok": Flag(),
    },
    # every field: capture and import-trace write them all, and readers take each as there
    required=(
        "matched",
        "graph_ops",
        "eager_ops",
        "only_in_graph",
        "only_in_eager",
        "config",
        "counts",
        "ok",
    ),
)


def _file_name(text: str) -> bool:
    return Path(text).name == text and text not in ("", ".", "..")


FILE_NAME = Text("a file name in the same folder", _file_name)
_OPTIONAL_TEXT = Maybe(TEXT)
_OPTIONAL_COUNT = Maybe(COUNT)
_OPTIONAL_NUMBER = Maybe(NUMBER)
_SITE = Maybe(Record({"file": _OPTIONAL_TEXT, "line": Maybe(LINE), "function": _OPTIONAL_TEXT}))
_SHAPE = ListOf(COUNT)

#: One graph's entry in a recording index (docs/FORMAT.md, "Recordings"); a bundle written by
#: ``graphscope record`` holds its own as ``recording.graph``.
RECORDING_GRAPH = Record(
    {
        "id": TEXT,  # "g<exec id>": unique in the process
        "bundle": Maybe(FILE_NAME),  # its bundle beside the index, None until written
        "dot": Maybe(FILE_NAME),  # its verbose cudaGraphDebugDotPrint dump
        "graph_id": _OPTIONAL_COUNT,  # CUPTI's id of the cudaGraph_t it was instantiated from
        "exec_id": COUNT,  # CUPTI's id of the executable graph; replays carry it
        "capturer": _OPTIONAL_TEXT,  # inductor, torch.cuda.graph, vllm, sglang, ...
        "site": _SITE,  # the user's line where capture began
        "captured_at_s": _OPTIONAL_NUMBER,  # seconds after the recorder started
        "capture_ms": _OPTIONAL_NUMBER,  # from the start of stream capture to its end
        "instantiated_at_s": _OPTIONAL_NUMBER,
        "instantiate_ms": _OPTIONAL_NUMBER,  # the driver's instantiation
        "grab_ms": _OPTIONAL_NUMBER,  # graphscope's read at instantiation (the program waits)
        "build_ms": _OPTIONAL_NUMBER,  # graphscope's bundle build, later, in its own thread
        "nodes": _OPTIONAL_COUNT,
        "kernels": _OPTIONAL_COUNT,
        "pool": Maybe(
            Record(
                {
                    "id": Maybe(ListOf(COUNT)),
                    "bytes": _OPTIONAL_COUNT,  # reserved: the pool's segments
                    "active_bytes": _OPTIONAL_COUNT,  # of those, in use
                    "shared_with": TEXTS,
                }
            )
        ),
        "inputs": Maybe(ListOf(Record({"input": COUNT, "shape": _SHAPE, "dtype": _OPTIONAL_TEXT}))),
        "batch": _OPTIONAL_COUNT,  # the batch size the inputs' shapes say it serves
        "rerecord_of": _OPTIONAL_TEXT,  # the earlier graph recorded from the same site
        "rerecord_reason": _OPTIONAL_TEXT,
        "program_site": _SITE,  # the program's own line (not an installed package's)
        "shape_changes": Maybe(
            ListOf(Record({"input": COUNT, "from": Maybe(_SHAPE), "to": Maybe(_SHAPE)}))
        ),
        "replays": COUNT,  # launches counted
        "traced_replays": COUNT,  # launches timed with CUPTI (sampled)
        "replay_us": _OPTIONAL_NUMBER,  # median GPU span of the traced replays
        "cpu_launch_us": _OPTIONAL_NUMBER,  # median CPU time of the launch call, untraced
        "cpu_launch_traced_us": _OPTIONAL_NUMBER,
        "gpu_time_us": _OPTIONAL_NUMBER,  # estimate: replays x median span
        "updates": ListOf(
            Record({"at_s": NUMBER, "ok": Flag(), "result": _OPTIONAL_TEXT}, ("at_s", "ok"))
        ),
        "destroyed_at_s": _OPTIONAL_NUMBER,
        "attributed_nodes": _OPTIONAL_COUNT,
        "error": _OPTIONAL_TEXT,  # why no bundle could be written for it
    },
    required=("id", "exec_id"),
)
RECORDING_STATUSES = ("running", "finished", "stopped")
#: A recorded process: who it was and how its recording ended.
RECORDING_PROCESS = Record(
    {
        "pid": COUNT,
        "rank": _OPTIONAL_COUNT,
        "world_size": _OPTIONAL_COUNT,
        "argv": TEXTS,
        "started_at": TEXT,
        "updated_at": TEXT,
        "ended_at": _OPTIONAL_TEXT,
        # running, finished, stopped (recording stopped, program went on)
        "status": OneOf(RECORDING_STATUSES, "a recording status"),
        "stop_reason": _OPTIONAL_TEXT,
        "device": _OPTIONAL_TEXT,
    },
    required=("pid", "status"),
)
#: What the sampled windows saw, for the process.
RECORDING_SAMPLING = Record(
    {
        "windows": COUNT,  # periodic windows opened
        "records": COUNT,  # activity records received
        "graph_kernel_us": NUMBER,  # kernel time of the traced replays
        "eager_kernels": COUNT,  # kernels outside any graph while tracing was on
        "eager_kernel_us": NUMBER,
        # the probes while no graph was launched (capture/record/launches.py): time traced,
        # kernels seen and their GPU time
        "probe_s": NUMBER,
        "probe_kernels": COUNT,
        "probe_kernel_us": NUMBER,
        "probe_batches": Record({}, other=COUNT, says="an object of batch counts"),
        "launches_of_unknown_graphs": COUNT,  # graphs instantiated before recording began
    }
)
#: Graph launches over the whole run, bin by bin (capture/record/coverage.py).
RECORDING_COVERAGE = Record(
    {
        "bin_s": Num(0.001, MAX_US),
        "bins": ListOf(
            Record(
                {
                    "at_s": NUMBER,  # the bin's start, from the recorder's
                    "launches": Record({}, other=COUNT, says="an object of launch counts"),
                    "unknown_launches": COUNT,  # graphs made before recording began
                    # where a probe traced in the bin: how long, the kernels it saw outside
                    # graphs, and their GPU time
                    "probe_ms": NUMBER,
                    "probe_kernels": COUNT,
                    "probe_kernel_us": NUMBER,
                    # the eager steps' batches the probes saw on the program's stacks
                    "probe_batches": Record({}, other=COUNT, says="an object of batch counts"),
                },
                required=("at_s", "launches"),
            )
        ),
    },
    required=("bin_s", "bins"),
)
#: Where torch says it ran a function without CUDA graphs.
#: A function torch.compile runs without CUDA graphs: its calls, and the GPU time of those timed.
RECORDING_SKIPPED = Record(
    {
        "reason": TEXT,  # as in ``reasons``
        "calls": COUNT,
        "timed": COUNT,
        "gpu_us_median": Maybe(US),  # the span of a timed call on the GPU
        "gpu_ms_est": Maybe(US),  # all calls, each at the timed median
    },
    ("reason", "calls"),
)
RECORDING_FALLBACKS = Record(
    {"inductor_cudagraph_skips": COUNT, "reasons": TEXTS, "skipped": ListOf(RECORDING_SKIPPED)}
)
#: What torch's allocator held in all (every pool and the rest) at the recorder's last read.
RECORDING_MEMORY = Record(
    {"reserved_bytes": COUNT, "active_bytes": _OPTIONAL_COUNT, "at_s": _OPTIONAL_NUMBER}
)
#: A parameter a live graph points into that moved or went away after the graph was made.
RECORDING_STALE_POINTER = Record(
    {
        "graph": TEXT,
        "buffer": TEXT,  # param:layers.0.attn.qkv.weight
        "was": COUNT,  # its first byte when the graph was made
        "now": _OPTIONAL_COUNT,  # its first byte when seen moved; None: gone
        "nodes": TEXTS,  # the nodes that point into it (the first 20)
        "pointers": COUNT,
        "at_s": NUMBER,  # when the recorder saw it
        "replays_since": COUNT,  # launches of the graph after that
        # for an allocator block (buffer "block 0x... (N bytes)"): "was freed", ...
        "why": _OPTIONAL_TEXT,
    },
    required=("graph", "buffer", "was", "at_s"),
)
#: A small allocator block a live graph reads whose bytes were the same at every sampled
#: replay (capture/record/inputs.py): an input nothing fed between replays, or a constant.
RECORDING_UNCHANGED_INPUT = Record(
    {
        "graph": TEXT,
        "buffer": TEXT,  # block 0x7f... (32 bytes)
        "address": COUNT,  # its first byte
        "bytes": COUNT,
        "nodes": TEXTS,  # the nodes that point into it (the first 20)
        "kernels": TEXTS,  # what each of them runs (its kernel, and module where known)
        "pointers": COUNT,
        "samples": Int(1, I64),  # replays whose bytes were read, all alike
        "first_replay": COUNT,  # the first and last of them, counted from the graph's first
        "last_replay": COUNT,
        "first_s": NUMBER,  # and when, from the recorder's start
        "last_s": NUMBER,
    },
    required=("graph", "buffer", "address", "samples"),
)
#: What the input observer checked: graphs and blocks armed, samples read.
RECORDING_INPUT_CHECKS = Record(
    {
        "graphs": COUNT,
        "blocks": COUNT,
        "samples": COUNT,
        "graphs_unarmed": COUNT,  # left out for want of pinned memory
        "stopped": _OPTIONAL_TEXT,  # why sampling stopped, where a driver call failed
    },
    required=("graphs", "blocks", "samples"),
)
#: A stream capture that failed (a call inside it broke it) or was refused.
RECORDING_CAPTURE_FAILURE = Record(
    {
        "at_s": NUMBER,  # seconds after the recorder started
        "call": _OPTIONAL_TEXT,  # the first call that failed inside it (None: none watched did)
        "error": _OPTIONAL_TEXT,  # that call's CUDA error
        "thread": _OPTIONAL_TEXT,
        "stream": _OPTIONAL_COUNT,  # the stream the call named, where it names one
        "site": _SITE,  # the user's line of the call
        "program_site": _SITE,  # the program's own line
        "module": _OPTIONAL_TEXT,  # the nn.Module running
        "stack": TEXTS,  # innermost first, "file:line in function"
        "capture": Maybe(
            Record({"site": _SITE, "capturer": _OPTIONAL_TEXT, "stream": _OPTIONAL_COUNT})
        ),
        "ended": _OPTIONAL_TEXT,  # how the capture ended; None while it had not
    },
    required=("at_s",),
)

#: A difference between two tensors' values: any finite float (a value read from memory
#: nothing wrote can be 1e38 or more), null where it is not finite.
_GAP = Maybe(Num(-sys.float_info.max, sys.float_info.max))
#: How a tensor of the graph's differs from eager's (``analysis.numerics.Difference``).
DIFFERENCE = Record(
    {
        "dtype": TEXT,
        "shape": _SHAPE,
        "max_abs": _GAP,  # null: not finite, or the shapes differ
        "max_rel": _GAP,
        "count": COUNT,
        "first_index": _SHAPE,
        "graph_value": TEXT,
        "eager_value": TEXT,
    },
    required=(
        "dtype",
        "shape",
        "max_abs",
        "max_rel",
        "count",
        "first_index",
        "graph_value",
        "eager_value",
    ),
)
#: The graph against eager by value, at the step after the capture (capture/numerics.py).
NUMERICS = Record(
    {
        "at": TEXT,
        "ops": COUNT,
        "copied_bytes": COUNT,
        "windows": COUNT,
        "tolerances": Record({}, other=Maybe(ListOf(NUMBER, 2)), says="an object of tolerances"),
        "outputs": ListOf(Record({"name": TEXT, "difference": Maybe(DIFFERENCE)}, ("name",))),
        "first": Maybe(
            Record(
                {
                    "index": COUNT,
                    "output": COUNT,
                    "op": TEXT,
                    "module": _OPTIONAL_TEXT,
                    "site": _OPTIONAL_TEXT,
                    "nodes": TEXTS,
                    "difference": DIFFERENCE,
                },
                required=("index", "output", "op", "difference"),
            )
        ),
        "differing_ops": COUNT,
        "compared": COUNT,
        "nodes_per_op_known": Flag(),
        "notes": TEXTS,
        "error": _OPTIONAL_TEXT,
        "seconds": NUMBER,
    }
)


def _hex_word(text: str) -> bool:
    return 0 < len(text) <= 16 and len(text) % 2 == 0 and all(c in "0123456789abcdef" for c in text)


_WORD = Text("hex bytes, at most 8", _hex_word)
#: Kernel arguments that differ between two captures one step apart (analysis.numerics).
FROZEN = Record(
    {
        "compared": COUNT,
        "frozen": ListOf(
            Record(
                {
                    "node": TEXT,
                    "name": TEXT,
                    "arg": COUNT,
                    "offset": COUNT,
                    "size": COUNT,
                    "captured": _WORD,
                    "later": _WORD,
                    "kind": OneOf(("value", "pointer"), "a kind"),
                    "buffer": _OPTIONAL_TEXT,
                    "module": _OPTIONAL_TEXT,
                    "op": _OPTIONAL_TEXT,
                    "site": _OPTIONAL_TEXT,
                    "freed": Maybe(Flag()),
                    "written": Maybe(Flag()),
                },
                required=("node", "name", "arg", "offset", "size", "captured", "later", "kind"),
            )
        ),
        "unpaired": _OPTIONAL_TEXT,
        "unsteady": COUNT,
        "error": _OPTIONAL_TEXT,
    }
)

#: Graph metadata (``G.graph``, docs/FORMAT.md "Graph metadata").
GRAPH: dict[str, Rule] = {
    "schema_version": Int(1, I64),
    "root_graph_ids": ListOf(ID),
    "source": Record({"format": TEXT, "path": _OPTIONAL_TEXT, "dot": _OPTIONAL_TEXT}),
    "model": _OPTIONAL_TEXT,
    "model_description": _OPTIONAL_TEXT,
    "device": _OPTIONAL_TEXT,
    "driver": _OPTIONAL_TEXT,
    "cuda_driver_api": _OPTIONAL_COUNT,
    "batch_size": Maybe(Int(1, MAX_BATCH_SIZE)),
    "timing": Record(
        {
            "replays": COUNT,
            "timed_nodes": COUNT,
            "untimed_nodes": Maybe(TEXTS),
            "unjoined_records": COUNT,
            "graph_pool_bytes": Maybe(BYTES),
        },
        other=PLAIN,
    ),
    "replays": ListOf(_NUMBERS),
    "eager_trace": EAGER_TRACE,
    "eager_summary": _NUMBERS,
    "prefill": Maybe(_NUMBERS),  # null: the model has no prefill step (capture writes it so)
    "parity": PARITY,
    "buckets": Record({"sizes": ListOf(Int(1, MAX_BATCH_SIZE)), "padding": TEXT}),
    "attributed_nodes": COUNT,
    "eager_source": Record({"format": TEXT, "file": TEXT}),
    "recording": RECORDING_GRAPH,
    "numerics": NUMERICS,
    "frozen": FROZEN,
}
_GRAPH = Record(GRAPH)
_EDGE = Record({})  # edge attributes (a dump's headlabel) are plain JSON

#: A ``<model>.buckets.json`` (docs/FORMAT.md, after "Graph metadata").
_BATCH = Int(1, MAX_BATCH_SIZE)
BUCKET = Record(
    {
        "batch_size": _BATCH,
        "replay_us": DURATION_US,
        "nodes": COUNT,
        "graph_pool_bytes": BYTES,
        "eager_step_us": Maybe(DURATION_US),
        "bundle": Maybe(FILE_NAME),
    },
    required=("batch_size", "replay_us", "nodes", "graph_pool_bytes"),
)
BUCKETS = Record(
    {
        "model": _OPTIONAL_TEXT,
        "padding": _OPTIONAL_TEXT,
        "buckets": ListOf(BUCKET),
        "updates": ListOf(
            Record(
                {
                    "from": _BATCH,
                    "to": _BATCH,
                    "ok": Maybe(Flag()),
                    "result": _OPTIONAL_TEXT,
                    "error_node": _OPTIONAL_TEXT,
                    "error_from": _OPTIONAL_TEXT,
                    "error": _OPTIONAL_TEXT,
                }
            )
        ),
    },
    required=("buckets",),
)

#: The PyTorch profiler (Kineto) events ``graphscope import-trace`` reads: CUDA calls
#: (``cuda_runtime``, ``cuda_driver``) and GPU work (``kernel``, ``gpu_memcpy``, ``gpu_memset``).
TORCH_EVENT = Record(
    {
        "name": TEXT,
        "ts": US,
        "dur": DURATION_US,
        "tid": Int(0, U64),
        "args": Record(
            {
                "correlation": Int(-I64, U64),
                "stream": Int(0, U64),
                "grid": DIMS,
                "block": DIMS,
                "shared memory": BYTES,
                "bytes": BYTES,
            }
        ),
    },
    required=("name", "ts"),
)


def fail(
    error: type[InputError], path: Any, where: str, found: Problem, line: int | None = None
) -> InputError:
    """The one-line error for a problem ``found`` inside the value at ``where``.

    ``where`` is a path (``metadata``, ``graphs[2]``) the problem's own path continues, or a
    label with a space in it (``node graph_1_node_4``, ``bucket 0``) set off by a colon.
    """
    inner, message = found
    if " " in where:
        place = f"{where}: {inner.lstrip('.')}" if inner else where
    else:
        place = (where + inner).lstrip(".")
    return error(path, f"{place}: {message}" if place else message, line)


def check(
    value: Any, rule: Rule, path: Any, where: str = "", error: type[InputError] = InputError
) -> None:
    """Raise ``error`` naming the file and the field when ``value`` breaks ``rule``."""
    if not rule.column_ok([value]):
        found = rule.problem(value)
        if found is not None:
            raise fail(error, path, where, found)


def check_each(
    values: list[Any],
    rule: Rule,
    path: Any,
    where: Callable[[int], str],
    error: type[InputError] = InputError,
) -> None:
    """``check`` over many values at once, by column; ``where(i)`` names the i-th."""
    if not rule.column_ok(values):
        for i, value in enumerate(values):
            found = rule.problem(value)
            if found is not None:
                raise fail(error, path, where(i), found)


def check_nodes(
    nodes: Mapping[Any, Any],
    path: Any,
    error: type[InputError] = InputError,
    lines: Mapping[str, int] | None = None,
    fields_checked: bool = False,
) -> None:
    """Every node's attributes against ``NODE``, and its key against its ids.

    ``fields_checked``: the reader has checked the attributes by column already
    (``shaped_rows_ok``); only the keys are left.
    """
    datas = list(nodes.values())
    if not (set(map(type, nodes)) <= {str} and (fields_checked or _NODE.column_ok(datas))):
        for key, data in nodes.items():
            line = lines.get(key) if lines and type(key) is str else None
            if type(key) is not str:
                raise error(path, f"node key {show(key)} is not a string", line)
            found = _NODE.problem(data)
            if found is not None:
                raise fail(error, path, f"node {key}", found, line)
    ids = zip(_column(datas, "graph_id"), _column(datas, "local_id"), strict=True)
    if list(nodes) != [f"graph_{graph}_node_{local}" for graph, local in ids]:
        for key, data in nodes.items():
            if key != f"graph_{data['graph_id']}_node_{data['local_id']}":
                raise error(
                    path,
                    f"node {key}: its key is not graph_<graph_id>_node_<local_id> "
                    f"(graph_id {data['graph_id']}, local_id {data['local_id']})",
                    lines.get(key) if lines else None,
                )


def shaped_rows_ok(
    fields: list[list[str]],
    constants: list[dict[str, Any]],
    rows: list[Any],
    rule: Record,
    skip: Iterable[str] = (),
) -> bool:
    """Whether every record of a bundle's table passes ``rule``, judged by column.

    ``rows[i]`` is ``[shape, value, ...]`` (or null: no record), the values of
    ``fields[shape]``; ``constants[shape]`` are the fields every record of the shape shares,
    checked once. Taking a column from rows is far cheaper than gathering a field from records
    (a third of the contract's cost at 100,000 nodes). False also where a shape lacks a
    required field, which only the records can settle: the caller checks them one by one.
    """
    present: list[list[Any]] = list(filter(None, rows))  # a row is a non-empty list, or null
    used = set(map(itemgetter(0), present))
    if len(used) == 1:
        groups = {used.pop(): present}
    else:
        ordered = sorted(present, key=itemgetter(0))
        groups = {shape: list(group) for shape, group in groupby(ordered, itemgetter(0))}
    columns: dict[str, list[Any]] = {}
    ignored = set(skip)
    for shape, group in groups.items():
        names, shared = fields[shape], constants[shape]
        if not all(name in shared or name in names for name in rule.required):
            return False
        for name, value in shared.items():
            columns.setdefault(name, []).append(value)
        for j, name in enumerate(names, 1):
            if name not in ignored:
                columns.setdefault(name, []).extend(map(itemgetter(j), group))
    return all(
        rule.fields.get(name, rule.other).column_ok(values)
        for name, values in columns.items()
        if name not in ignored
    )


def check_structure(G: nx.DiGraph, path: Any, error: type[InputError] = InputError) -> None:
    """What no single field says: owners, edges within one graph, acyclic graphs; and the
    metadata, and the fields that point at trace rows or nodes.

    The nodes have passed ``check_nodes``.
    """
    nodes: dict[str, dict[str, Any]] = G._node
    datas = list(nodes.values())
    ids = dict(
        zip(
            nodes,
            zip(_column(datas, "graph_id"), _column(datas, "local_id"), strict=True),
            strict=True,
        )
    )
    _check_owners(nodes, datas, ids, path, error)
    succ: dict[str, dict[str, dict[str, Any]]] = G._succ
    # Edges as columns, built in C: the (graph id, local id) of their ends, their attributes.
    sources = list(
        map(ids.__getitem__, chain.from_iterable(map(repeat, succ, map(len, succ.values()))))
    )
    targets = list(map(ids.__getitem__, chain.from_iterable(succ.values())))
    if list(map(itemgetter(0), sources)) != list(map(itemgetter(0), targets)):
        a, b = next((a, b) for a, t in succ.items() for b in t if ids[a][0] != ids[b][0])
        raise error(path, f"edge {a} -> {b} joins two graphs")
    edges = list(chain.from_iterable(map(dict.values, succ.values())))
    if not _EDGE.column_ok(edges):
        for a, t in succ.items():
            for b, data in t.items():
                check(data, _EDGE, path, f"edge {a} -> {b}", error)
    # Stream capture creates a node after the nodes it depends on, and local ids grow in
    # creation order: where every edge runs from a lower id to a higher one, the ids are a
    # topological order and no cycle can exist, which is 10x faster to see than a sort.
    if not all(map(operator.lt, sources, targets)):
        _check_acyclic(G, path, error)
    check(G.graph, _GRAPH, path, "metadata", error)
    _check_references(G, path, error)


def check_graph(
    G: nx.DiGraph,
    path: Any,
    error: type[InputError] = InputError,
    lines: Mapping[str, int] | None = None,
    fields_checked: bool = False,
) -> None:
    """The whole contract on a graph a reader built; raise ``error`` naming file and field.

    ``lines`` gives the line each node was declared on, where the file has lines.
    """
    check_nodes(G._node, path, error, lines, fields_checked)
    check_structure(G, path, error)


def _check_owners(
    nodes: dict[str, dict[str, Any]],
    datas: list[dict[str, Any]],
    ids: dict[str, tuple[int, int]],
    path: Any,
    error: type[InputError],
) -> None:
    """Each graph has one owner (or none), a GRAPH or CONDITIONAL node that names it."""
    parents = map(dict.get, datas, repeat("parent"))
    owner: dict[int, str | None] = {}
    for gid, parent in set(zip(map(itemgetter(0), ids.values()), parents, strict=True)):
        if gid in owner:
            raise error(path, f"graph {gid} has nodes with parents {owner[gid]} and {parent}")
        owner[gid] = parent
    claims: dict[int, str] = {}
    kinds = map(itemgetter("type"), datas)
    for key in compress(nodes, map(_OWNERS.__contains__, kinds)):
        for gid in claimed_graphs(nodes[key]):
            if gid in claims:
                raise error(path, f"graph {gid} is claimed by both {claims[gid]} and {key}")
            claims[gid] = key
    for gid, parent in owner.items():
        if parent is not None and parent not in nodes:
            raise error(path, f"graph {gid}: parent {show(parent)} is not a node")
        if claims.get(gid) != parent:
            if parent is None:
                why = f"node {claims[gid]} owns it, yet its nodes have no parent"
            else:
                why = f"its nodes' parent {parent} is not a GRAPH or CONDITIONAL node naming it"
            raise error(path, f"graph {gid}: {why}")
    # Walking up from each graph must reach a root: an owner inside its own graph, or a ring
    # of graphs owning each other, would send any walk up the owners round forever.
    done: set[int] = set()
    for start in owner:
        seen: set[int] = set()
        up: int | None = start
        while up is not None and up not in done:
            if up in seen:
                raise error(path, f"graph {up} is nested inside itself through its owners")
            seen.add(up)
            parent = owner.get(up)
            up = None if parent is None else ids[parent][0]
        done |= seen


def _check_acyclic(G: nx.DiGraph, path: Any, error: type[InputError]) -> None:
    """Refuse a cycle, naming a node on it: Kahn's algorithm over networkx's own stores
    (networkx's own check is 4x slower)."""
    succ: dict[str, dict[str, Any]] = G._succ
    pending = {key: len(preds) for key, preds in G._pred.items()}
    ready = [key for key, count in pending.items() if count == 0]
    done = 0
    while ready:
        key = ready.pop()
        done += 1
        for target in succ[key]:
            pending[target] -= 1
            if pending[target] == 0:
                ready.append(target)
    if done != len(pending):
        left = [key for key, count in pending.items() if count > 0]
        import networkx as nx  # the recorder imports this module at start-up: not nx then

        cycle = nx.find_cycle(G.subgraph(left))
        raise error(path, f"edges form a cycle through {cycle[0][0]}: a CUDA graph is acyclic")


def _check_references(G: nx.DiGraph, path: Any, error: type[InputError]) -> None:
    """Fields that point elsewhere point at something: eager trace rows, nodes."""
    trace = G.graph.get("eager_trace")
    if trace is not None:
        rows = len(trace["gpu"]["rows"])
        joined = [
            (key, d["eager"]) for key, d in G.nodes(data=True) if "index" in d.get("eager", ())
        ]
        if joined and max(e["index"] for _, e in joined) >= rows:
            key, entry = next((k, e) for k, e in joined if e["index"] >= rows)
            raise error(
                path, f"node {key}: eager.index: {entry['index']} is past the trace's {rows} rows"
            )
    parity = G.graph.get("parity")
    if parity is not None:
        for name in ("only_in_graph", "config"):
            for i, entry in enumerate(parity.get(name, [])):
                if "node" in entry and entry["node"] not in G:
                    raise error(
                        path,
                        f"metadata.parity.{name}[{i}].node: {show(entry['node'])} is not a node",
                    )


# Bounds -----------------------------------------------------------------------------------

GZIP_MAGIC = b"\x1f\x8b"


def read_limited(
    path: str | os.PathLike[str], limit: int, *, decompress: bool = True, hint: str = ""
) -> bytes:
    """A file's bytes, gunzipped when it is gzip and ``decompress``; InputError past ``limit``."""
    p = Path(path)
    too_big = f"graphscope reads at most {limit} bytes{hint}"
    found = paths.stat(p)  # a name too long, a folder that cannot be searched: one line
    if found is None:
        raise InputError(p, "no such file")
    if stat.S_ISDIR(found.st_mode):
        raise InputError(p, "is a directory, not a file")
    if not stat.S_ISREG(found.st_mode):
        raise InputError(p, "not a regular file")
    try:
        size = found.st_size
        if size > limit:
            raise InputError(p, f"file is {size} bytes; {too_big}")
        with open(p, "rb") as fh:
            # read(n) allocates n bytes up front: ask for what stat saw, plus one byte to
            # notice a file that grew since, then read on in small steps up to the limit.
            raw = fh.read(size + 1)
            while size < len(raw) <= limit:
                more = fh.read(min(1 << 20, limit + 1 - len(raw)))
                if not more:
                    break
                raw += more
    except PermissionError:
        raise InputError(p, "permission denied") from None
    except OSError as exc:
        raise InputError(p, f"cannot read it ({exc.strerror or exc})") from None
    if len(raw) > limit:
        raise InputError(p, f"file is over {limit} bytes; {too_big}")
    if decompress and raw.startswith(GZIP_MAGIC):
        return gunzip(raw, p, limit, hint)
    return raw


def gunzip(raw: bytes, path: Any, limit: int, hint: str = "") -> bytes:
    """Decompress in bounded steps, so a small file cannot expand without limit."""
    # The trailer gives the size (modulo 4 GiB, of the last member): where it says the limit
    # is passed, a first pass counts without keeping anything, so a bomb costs no memory; a
    # truncated file's trailer is noise, and that pass finds the truncation instead.
    if len(raw) >= 18 and int.from_bytes(raw[-4:], "little") > limit:
        _inflate(raw, path, limit, hint, keep=False)
    return _inflate(raw, path, limit, hint, keep=True)


def _inflate(raw: bytes, path: Any, limit: int, hint: str, keep: bool) -> bytes:
    inflater = zlib.decompressobj(wbits=31)
    out = bytearray()
    total = 0
    data = raw
    try:
        while data:
            chunk = inflater.decompress(data, 1 << 24)
            total += len(chunk)
            if total > limit:
                raise InputError(
                    path, f"gzip stream expands past {limit} bytes, the most graphscope reads{hint}"
                )
            if keep:
                out += chunk
            data = inflater.unconsumed_tail
            if inflater.eof and inflater.unused_data:
                data = inflater.unused_data  # a multi-member gzip file
                inflater = zlib.decompressobj(wbits=31)
        if not inflater.eof:
            raise InputError(path, "gzip stream ends early (truncated file?)")
    except zlib.error as exc:
        raise InputError(path, f"corrupt gzip stream ({exc})") from None
    return bytes(out)


_STRING = re.compile(rb'"[^"]*"')
_PAIR = re.compile(rb"\[\]|\{\}")
_NOT_SKELETON = bytes(c for c in range(256) if c not in b'[]{}",:')


def _skeleton(data: bytes) -> bytes:
    """The brackets, commas and colons of JSON text (as bytes) that are outside its strings."""
    # Strings hold the brackets of kernel names and labels: they go before nesting is
    # measured, and so do the escapes that decide where a string ends. Backslash pairs go
    # first; a backslash left then escapes the character after it, as JSON reads it.
    text = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_SKELETON)
    # Two adjacent quotes end one string and start the next (or make an empty one): taking
    # them out keeps every other quote paired, and what lies between paired quotes is still
    # what is inside strings.
    text = text.replace(b'""', b"")
    if b'"' in text:
        text = _STRING.sub(b"", text)
    return text


def json_values(data: bytes) -> int:
    """How many values JSON text holds, within one: its commas and its lists and objects
    (outside strings), in time linear in its length."""
    return _count_values(_skeleton(data))


def _count_values(skeleton: bytes) -> int:
    return skeleton.count(b",") + skeleton.count(b"[") + skeleton.count(b"{")


def json_too_deep(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON text nests deeper than ``limit``, in time linear in its length."""
    return _too_deep(_skeleton(data).replace(b",", b"").replace(b":", b""), limit)


def _too_deep(text: bytes, limit: int) -> bool:
    """Whether brackets (``_skeleton`` without its commas) nest deeper than ``limit``.

    A pass deletes the innermost ``[]`` and ``{}`` pairs. Done with ``bytes.replace``, a pass
    takes one or two levels; ``limit / 2`` such passes empty any text within the limit, and
    only a text they leave is measured one level a pass, with a regular expression.
    """
    brackets = text
    for _ in range((limit + 1) // 2):
        shorter = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if not shorter:
            return False
        if len(shorter) == len(brackets):
            return False  # unbalanced: not JSON, which the parser will say
        brackets = shorter
    for _ in range(limit):
        shorter = _PAIR.sub(b"", text)
        if len(shorter) == len(text):
            return False
        text = shorter
    return _PAIR.search(text) is not None


class _Constant(ValueError):
    """NaN, Infinity or -Infinity: Python's json reads them, JSON has no such numbers."""


def _refuse_constant(name: str) -> Any:
    raise _Constant(name)


class JsonBudget:
    """JSON values that several texts of one file may hold in all (a DOT file's ``gs_``
    attributes): the limit is on the file's memory, not on each text's."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = MAX_JSON_VALUES if limit is None else limit
        self.used = 0
        self.memory = 0  # bytes the texts so far are estimated to take, parsed


def check_json(
    raw: bytes,
    path: Any,
    error: type[InputError] = InputError,
    what: str = "JSON",
    budget: JsonBudget | None = None,
) -> None:
    """Refuse JSON text (as bytes) nested deeper than ``MAX_DEPTH``, or holding more values
    than the budget (by default ``MAX_JSON_VALUES``) leaves."""
    skeleton = _skeleton(raw)
    budget = budget or JsonBudget()
    earlier = budget.used
    values = _count_values(skeleton)
    budget.used += values
    budget.memory += (values + skeleton.count(b":")) * JSON_VALUE_BYTES + len(raw)
    if budget.memory > MAX_JSON_MEMORY:
        raise error(
            path,
            f"{what} would take about {budget.memory / 2**30:.1f} GiB of memory to read "
            f"({budget.used:,} JSON values in {len(raw):,} bytes), more than the "
            f"{MAX_JSON_MEMORY / 2**30:.1f} GiB graphscope reads",
        )
    skeleton = skeleton.replace(b":", b"")
    if budget.used > budget.limit:
        before = f", {earlier:,} of them in the file's earlier JSON" if earlier else ""
        raise error(
            path,
            f"{what} holds more than {budget.limit:,} JSON values{before}: the most graphscope "
            "reads (each value takes tens of bytes of memory)",
        )
    if _too_deep(skeleton.replace(b",", b""), MAX_DEPTH):
        raise error(
            path, f"{what} nested deeper than {MAX_DEPTH} levels, the most graphscope reads"
        )


def parse_json(
    data: bytes | str,
    path: Any,
    error: type[InputError] = InputError,
    what: str = "JSON",
    *,
    budget: JsonBudget | None = None,
    checked: bool = False,
) -> Any:
    """Parse JSON text within the bounds: nesting, number of values (``budget``, by default
    ``MAX_JSON_VALUES``), integer length, finite numbers.

    ``checked``: the caller has run ``check_json`` on the text's bytes.
    """
    if not checked:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        check_json(raw, path, error, what, budget)
    try:
        return json.loads(data, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        text = exc.doc
        if exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string"):
            why = f"file ends inside the {what} (truncated file?)"
        elif exc.msg == "Extra data":
            why = f"more than one JSON value (JSON Lines?); expected a single {what} object"
        else:
            why = f"invalid {what}: {exc.msg}"
        raise error(path, why, exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise error(path, f"not UTF-8 text (byte {exc.start} is not UTF-8)") from None
    except _Constant as exc:
        raise error(
            path, f"{what} holds {exc}, which is not a JSON number (graphscope reads finite ones)"
        ) from None
    except RecursionError:
        raise error(path, f"{what} nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        if "digits" not in str(exc):
            raise
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
        raise error(path, f"{what} holds an integer literal longer than {limit} digits") from None
