"""Graph against eager by value: where a graph's result first differs from the eager step's,
and which kernel arguments the capture froze (issue 28, parts 1 and 2).

Both are measured at capture (``graphscope.capture.numerics``) and kept in the bundle:

- ``numerics``: the graph is replayed at the step after the one it was captured at, and the
  same step is run eagerly from the same state and RNG. Every aten op's outputs are kept
  on both sides (a copy made right after the op, inside the graph on the graph's side), so
  one replay finds the first op whose output differs, beyond a tolerance for its dtype.
- ``frozen``: the step is captured a second time, one step later, and each kernel's
  arguments are compared word by word with the first capture's. A value that changes from
  one step to the next (a position, a length, a seed) is frozen in the graph: every replay
  runs with the value of the step it was captured at. A pointer to a named buffer (an input,
  the state, or any memory outside the graph's own pool) that moves from one step to the next
  means the step makes that tensor anew instead of copying into it: the graph keeps reading
  the old one, which may have been freed.

This module reads and words what capture measured; it needs no GPU.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import networkx as nx

from ..model import display_name, nodes_by_graph
from .arguments import WordChange, changed_words

#: (relative, absolute) tolerance per dtype for two values to count as one. A graph replays
#: the kernels eager launches, so most outputs agree to the bit; these admit a library that
#: picks another algorithm for the same op inside a capture (cuBLAS's workspace), not a
#: wrong value. Integer and boolean outputs must be equal.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-12),
    "float32": (1e-4, 1e-5),
    "tfloat32": (1e-3, 1e-4),
    "bfloat16": (2e-2, 1e-2),
    "float16": (1e-2, 1e-3),
    "float8_e4m3fn": (1.25e-1, 1e-1),
    "float8_e5m2": (2.5e-1, 1e-1),
}


def tolerance(dtype: str) -> tuple[float, float] | None:
    """(rtol, atol) for a dtype's name ("float16", "torch.float16"); None: exact."""
    return TOLERANCES.get(dtype.removeprefix("torch."))


@dataclass
class Frozen:
    """One kernel argument word that differs between two captures one step apart."""

    node: str  # the node of the graph that keeps the first capture's value
    name: str  # its kernel
    arg: int  # the argument's index
    offset: int  # the word's byte offset within the argument
    size: int  # bytes compared: the argument's size, or 8 inside a larger one
    captured: str  # the value the graph keeps (hex, little-endian as the kernel reads it)
    later: str  # the value the same launch takes one step later
    kind: str  # "value", or "pointer": a named buffer that moved
    buffer: str | None = None  # the buffer a moved pointer names (input:x)
    module: str | None = None
    op: str | None = None
    site: str | None = None  # file:line in function
    freed: bool | None = None  # a moved pointer's old memory is free now (None: not known)
    # whether one more eager step changed the bytes at a moved pointer's old address: False,
    # nothing the step does writes the buffer the graph reads (None: not looked at)
    written: bool | None = None

    @property
    def captured_int(self) -> int:
        return int.from_bytes(bytes.fromhex(self.captured), "little")

    @property
    def later_int(self) -> int:
        return int.from_bytes(bytes.fromhex(self.later), "little")

    def said(self) -> str:
        """The finding's line."""
        where = f" ({self.site})" if self.site else ""
        what = " ".join(x for x in (self.module, self.op) if x)
        head = f"{self.node} {self.name}{' [' + what + ']' if what else ''}{where}"
        if self.kind == "pointer":
            return (
                f"{head}: argument {self.arg} points to {self.buffer} at 0x{self.captured_int:x}; "
                f"one step later the same launch reads 0x{self.later_int:x}: the step made the "
                "tensor anew (a rebinding, not a copy into it), and the graph keeps reading the "
                "old one"
                + (", whose memory is free now" if self.freed else "")
                + (
                    ", which nothing the step does writes: every replay reads the input it "
                    "held at capture"
                    if self.written is False
                    else ""
                )
            )
        offset, captured, later = _narrowed(self.offset, self.captured, self.later)
        whole = offset == 0 and len(captured) // 2 == self.size
        return (
            f"{head}: argument {self.arg}"
            + ("" if whole else f" (bytes {offset}..{offset + len(captured) // 2 - 1})")
            + f" is {_number(captured)} in the graph, {_number(later)} when the "
            "step is captured one step later: every replay runs with the captured value"
        )


#: Nodes named in a grouped finding line (``grouped_lines``); the rest are counted.
GROUP_NODES = 6


def grouped_lines(rows: Sequence[Frozen]) -> list[str]:
    """One line per finding, but one per argument word that several nodes of one kernel share
    (a length or position passed to every layer's launch): the first node's line, then the
    others, named up to ``GROUP_NODES``."""
    groups: dict[tuple[str, str, int, int], list[Frozen]] = {}
    for row in rows:
        groups.setdefault((row.kind, row.name, row.arg, row.offset), []).append(row)
    lines = []
    for first, *others in groups.values():
        if not others:
            lines.append(first.said())
            continue
        keys = [o.node for o in others]
        named = ", ".join(keys[:GROUP_NODES])
        if len(keys) > GROUP_NODES:
            named += f" and {len(keys) - GROUP_NODES:,} more"
        same = all((o.captured, o.later) == (first.captured, first.later) for o in others)
        lines.append(
            f"{first.said()}; the same word of {len(keys):,} more launch(es) of this kernel, "
            f"{'with the same values' if same else 'with other values'}: {named}"
        )
    return lines


def _narrowed(offset: int, captured: str, later: str) -> tuple[int, str, str]:
    """An 8-byte word narrowed to the 4-byte half that changed, where only one did: a functor
    passed by value packs a float scalar beside other bytes (PyTorch's ``AUnaryFunctor`` holds
    its scalar in bytes 4..7, after the functor's own), and the word read whole as a double
    says nothing."""
    a, b = bytes.fromhex(captured), bytes.fromhex(later)
    if len(a) != 8 or len(b) != 8:
        return offset, captured, later
    low, high = a[:4] != b[:4], a[4:] != b[4:]
    if low and not high:
        return offset, a[:4].hex(), b[:4].hex()
    if high and not low:
        return offset + 4, a[4:].hex(), b[4:].hex()
    return offset, captured, later


def _number(word: str) -> str:
    """A little-endian argument word as an integer, and as a float where it is 4 or 8 bytes
    that read as a plain one (a Python float scalar reaches a kernel as either)."""
    raw = bytes.fromhex(word)
    whole = int.from_bytes(raw, "little")
    if len(raw) not in (4, 8):
        return f"{whole}"
    (real,) = struct.unpack("<f" if len(raw) == 4 else "<d", raw)
    plain = math.isfinite(real) and real != 0 and 1e-6 <= abs(real) <= 1e9
    return f"{whole} (as a float {real:.6g})" if plain else f"{whole}"


@dataclass
class FrozenReport:
    """What the comparison of two captures one step apart found."""

    compared: int  # kernel node pairs whose arguments were compared
    frozen: list[Frozen] = field(default_factory=list)
    unpaired: str | None = None  # why nodes could not be paired, where they could not
    # words left out: they differ between two captures of the same step (memory an argument
    # holds that nothing wrote, such as the unused slots of a kernel's offset tables)
    unsteady: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _site(data: dict[str, Any]) -> str | None:
    origin = data.get("attribution")
    if not isinstance(origin, dict) or not origin.get("file"):
        return None
    file = str(origin["file"]).rsplit("/", 1)[-1]
    function = f" in {origin['function']}" if origin.get("function") else ""
    return f"{file}:{origin.get('line')}{function}"


def frozen_values(
    G: nx.DiGraph,
    later: nx.DiGraph,
    again: Sequence[nx.DiGraph] = (),
    first_again: Sequence[nx.DiGraph] = (),
    differing: Collection[str] = (),
) -> FrozenReport:
    """Compare each kernel's arguments in ``G`` with the same launch in ``later``, the step
    captured one step later (nodes paired in creation order, graph by graph). ``again``, the
    later step captured once or more again, and ``first_again``, G's step captured again,
    tell which words are unsteady: those that differ between captures of one step hold memory
    nothing wrote, and are left out (but for a pointer into held memory in both, a buffer the
    step makes anew at each run). On a node in ``differing``, the nodes of the first op
    whose values differ from eager's, with no steady word, the unsteady words stay: the step's
    own state may not repeat from one capture to the next (a Python counter the step does not
    reset), and that node's result shows an argument mattered."""
    graphs, graphs_later = nodes_by_graph(G), nodes_by_graph(later)
    shape = [len(v) for _, v in sorted(graphs.items())]
    shape_later = [len(v) for _, v in sorted(graphs_later.items())]
    if shape != shape_later:
        return FrozenReport(
            0,
            unpaired=f"the step captured one step later has {sum(shape_later):,} nodes in "
            f"{len(shape_later)} graph(s) against {sum(shape):,} in {len(shape)}: the step "
            "launches other work from one step to the next, so no argument was compared",
        )

    def paired(captures: Sequence[nx.DiGraph]) -> list[tuple[nx.DiGraph, list[list[str]]]]:
        # each capture again, its nodes graph by graph; one of another shape tells nothing
        found = []
        for other in captures:
            by_graph = [v for _, v in sorted(nodes_by_graph(other).items())]
            if [len(v) for v in by_graph] == shape:
                found.append((other, by_graph))
        return found

    # (the capture each one repeats, the captures again)
    checks = [(False, paired(again)), (True, paired(first_again))]
    report = FrozenReport(0)
    for n, (gid, gid_later) in enumerate(zip(sorted(graphs), sorted(graphs_later), strict=True)):
        for i, (key, key_later) in enumerate(
            zip(graphs[gid], graphs_later[gid_later], strict=True)
        ):
            a, b = G.nodes[key], later.nodes[key_later]
            if a.get("type") != "KERNEL" or a.get("name") != b.get("name"):
                continue
            args_a, args_b = a.get("args"), b.get("args")
            if not isinstance(args_a, list) or not isinstance(args_b, list):
                continue
            report.compared += 1
            if args_a == args_b or len(args_a) != len(args_b):
                continue
            unsteady: set[tuple[int, int]] = set()
            for first, others in checks:
                base = a if first else b
                for other, by_graph in others:
                    c = other.nodes[by_graph[n][i]]
                    if c.get("name") == base.get("name"):
                        unsteady |= {
                            (w.arg, w.offset) for w in changed_words(base, c)[0] if not _held(w)
                        }
            found = _differences(key, a, b)
            kept = [f for f in found if (f.arg, f.offset) not in unsteady]
            if not kept and key in differing:
                kept = found  # no steady word explains the difference: the unsteady ones may
            report.unsteady += len(found) - len(kept)
            report.frozen += kept
    return report


def _outside_pool(pointer: dict[str, Any] | None) -> bool:
    """Whether a word's ``pointers`` entry names memory the step reads from outside the
    capture's own pool (an input, a parameter, the state, or a block of the program's)."""
    if pointer is None:
        return False
    name = pointer.get("buffer") or pointer.get("segment")
    own = not pointer.get("buffer") and "private pool" in str(pointer.get("segment"))
    return isinstance(name, str) and not own and not name.startswith("output:")


def _held(w: WordChange) -> bool:
    """Whether a word that differs between two captures of one step is a pointer into held
    memory in both: the step read another buffer each time (a tensor it makes anew each
    step, allocated afresh before each capture), which is the finding, not stack bytes."""
    return _outside_pool(w.pointer_before) and _outside_pool(w.pointer_after)


def _differences(key: str, a: dict[str, Any], b: dict[str, Any]) -> list[Frozen]:
    attribution = a.get("attribution")
    origin: dict[str, Any] = attribution if isinstance(attribution, dict) else {}
    found = []
    args = a.get("args") or []
    for w in changed_words(a, b)[0]:
        kind, buffer = "value", None
        size = (
            args[w.arg].get("size") if w.arg < len(args) and isinstance(args[w.arg], dict) else None
        )
        if size == 1 and not {w.before, w.after} <= {"00", "01"}:
            # A one-byte argument that is no bool: an empty functor (a lambda that captures
            # nothing, as PyTorch's elementwise kernels take), whose one byte nothing writes.
            continue
        if w.pointer:
            # A pointer. Into the capture's own memory (its pool: each capture has its own),
            # it is no finding. To a buffer the step reads from outside (an input, a
            # parameter, the state) that the same launch no longer reads a step later, the
            # step made that buffer anew: the graph reads the old one.
            pa = w.pointer_before
            if pa is None or not _outside_pool(pa):
                continue  # points nowhere known, or into the capture's own memory
            kind, buffer = "pointer", pa.get("buffer") or pa.get("segment")
        found.append(
            Frozen(
                node=key,
                name=display_name(a),
                arg=w.arg,
                offset=w.offset,
                size=len(w.before) // 2,
                captured=w.before,
                later=w.after,
                kind=kind,
                buffer=buffer,
                module=origin.get("module"),
                op=origin.get("op"),
                site=_site(a),
            )
        )
    return found


@dataclass
class ValuesRead:
    """The bundle's ``numerics`` section as its readers need it (findings, verdict, panel)."""

    error: str | None  # why the values were not compared
    compared: int  # op outputs compared
    differing_ops: int
    outputs: list[dict[str, Any]]  # the step's outputs, each with its difference or None
    differing: list[dict[str, Any]]  # those with a difference
    first: Any  # the first op whose output differs (a dict), or None where none does
    notes: list[Any]

    @property
    def first_difference(self) -> dict[str, Any] | None:
        """``first`` where it names a difference, else None."""
        first = self.first
        if isinstance(first, dict) and isinstance(first.get("difference"), dict):
            return first
        return None

    @property
    def agree(self) -> bool:
        """The comparison ran and found the graph's values equal to eager's."""
        return (
            not self.error
            and self.first is None
            and self.compared > 0
            and not any(o.get("difference") for o in self.outputs)
        )


def read_values(G: nx.DiGraph) -> ValuesRead | None:
    """The bundle's ``numerics`` section, or None where capture did not compare."""
    section = G.graph.get("numerics")
    if not isinstance(section, dict):
        return None
    outputs = [o for o in section.get("outputs") or [] if isinstance(o, dict)]
    return ValuesRead(
        error=str(section["error"]) if section.get("error") else None,
        compared=int(section.get("compared") or 0),
        differing_ops=int(section.get("differing_ops") or 0),
        outputs=outputs,
        differing=[o for o in outputs if isinstance(o.get("difference"), dict)],
        first=section.get("first"),
        notes=list(section.get("notes") or []),
    )


def read_frozen(G: nx.DiGraph) -> FrozenReport | None:
    """The bundle's ``frozen`` section, or None where capture did not compare."""
    raw = G.graph.get("frozen")
    if not isinstance(raw, dict) or not isinstance(raw.get("frozen"), list):
        return None
    rows = [Frozen(**f) for f in raw["frozen"] if isinstance(f, dict)]
    return FrozenReport(int(raw.get("compared") or 0), rows, raw.get("unpaired"))


@dataclass
class Difference:
    """Where the graph's value and eager's differ, for one tensor."""

    dtype: str
    shape: list[int]
    max_abs: float | None  # the largest absolute difference; None: not finite (a NaN)
    max_rel: float | None  # max_abs over the largest absolute eager value
    count: int  # elements beyond the tolerance
    first_index: list[int]  # the first such element, by index ([]: the shapes differ)
    graph_value: str  # the graph's value there ("nan" and "inf" as they are)
    eager_value: str

    def said(self) -> str:
        if not self.first_index and self.shape:
            return f"its shape or dtype differs from eager's ({self.dtype} {self.shape})"
        at = ",".join(map(str, self.first_index))
        size = (
            f"max abs {self.max_abs:.4g}, max rel {self.max_rel or 0:.3g}"
            if self.max_abs is not None
            else "some not finite"
        )
        return (
            f"{self.count:,} of its {_numel(self.shape):,} values differ ({self.dtype}, "
            f"{size}); first at [{at}]: graph {self.graph_value}, eager {self.eager_value}"
        )


def _numel(shape: list[int]) -> int:
    total = 1
    for n in shape:
        total *= n
    return total


def op_in_module(first: dict[str, Any]) -> str:
    """``aten::mm in module layers.0.mlp`` for an op of ``numerics.first`` (a module's path
    may be a bare index, ``0``, which beside the op's name reads as part of it)."""
    op, module = first.get("op"), first.get("module")
    if op and module:
        return f"{op} in module {module}"
    return str(op or (f"module {module}" if module else ""))


def first_difference_text(first: dict[str, Any]) -> str:
    """The line for the first op whose output differs (``numerics.first``)."""
    diff = Difference(**first["difference"])
    what = op_in_module(first)
    site = f" ({first['site']})" if first.get("site") else ""
    nodes = first.get("nodes") or []
    at = f" at {nodes[0]}" if nodes else ""
    return f"op {first['index']:,} [{what}]{site}{at}: output {first['output']} {diff.said()}"


def values_verdict(G: nx.DiGraph) -> str | None:
    """The graph against eager by value in one line, for ``report`` and ``inspect``: what was
    compared and whether it agreed, so that a clean graph says so; None where capture did not
    compare (``--no-numerics``, an older bundle, a recording)."""
    values = read_values(G)
    raw = G.graph.get("frozen")
    parts = []
    if values is not None:
        first = values.first_difference
        if values.error:
            parts.append(f"not compared ({values.error})")
        elif first is not None:
            parts.append(
                f"differ from eager's at the step after the capture's, first at "
                f"{op_in_module(first)} ({values.differing_ops:,} of {values.compared:,} op "
                "outputs; see the findings)"
            )
        elif values.differing:
            names = ", ".join(str(o.get("name")) for o in values.differing[:4])
            parts.append(f"{names} differ from eager's at the step after the capture's")
        elif values.compared:
            parts.append(
                f"equal to eager's at the step after the capture's ({values.compared:,} op "
                f"outputs and {len(values.outputs):,} step output(s) compared, each within its "
                "dtype's tolerance)"
            )
    if isinstance(raw, dict) and raw.get("error"):
        parts.append(f"kernel arguments not compared ({raw['error']})")
    else:
        report = read_frozen(G)
        if report is not None:
            frozen = len(report.frozen)
            parts.append(
                f"kernel arguments: {frozen:,} frozen (see the findings)"
                if frozen
                else f"kernel arguments: none of {report.compared:,} launches takes another "
                "value when the step is captured one step later"
            )
    return "; ".join(parts) or None
