"""What XLA's optimized HLO says of the kernels its CUDA graphs launch: the op and the line.

XLA names each kernel it compiles after the HLO instruction it implements (a fusion,
``gemm_fusion_dot_general.8``), made a valid PTX name: every character outside
``[A-Za-z0-9_$]`` becomes ``_`` (``llvm_ir::SanitizeFunctionName``). The HLO dump XLA writes
after optimizations (``XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text``; ``graphscope
record`` asks for it) gives each instruction its ``metadata``: JAX's ``op_name``
(``jit(step)/jit(main)/dot_general``) and the Python line that made the op, as
``source_file``/``source_line`` or, in newer XLA, a ``stack_frame_id`` into the module's
``FileNames``/``FileLocations``/``StackFrames`` tables.

Where XLA reuses one compiled kernel for several identical fusions, every node launching it
carries the kernel's own (first) fusion's name: the match is by name, and says which fusion.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

# The dump files of optimized modules: module_0004.jit_step.sm_9.0_gpu_after_optimizations.txt
AFTER_OPTIMIZATIONS = "*after_optimizations.txt"
MAX_DUMP_BYTES = 256 << 20  # a module's text past this is not read (a dump, not a model)

_MODULE = re.compile(r"^HloModule\s+([^\s,]+)")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([A-Za-z_$][\w.\-$]*)\s*=\s*(.*)$")
_METADATA = re.compile(r"metadata=\{")
_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s}]+)')
_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_TABLE_ROW = re.compile(r"^\s*(\d+)\s+(.*)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_$]")
# A computation's header: "%fused_tanh (param_0: f32[8]) -> f32[8] {", "ENTRY %main.1 (...".
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([A-Za-z_$][\w.\-$]*)\s*[({].*\{\s*$")
# The instructions that launch a kernel of their own: fusions and custom calls (cuBLAS...).
_LAUNCH = re.compile(r"\s(?:fusion|custom-call)\(")
_CALLS = re.compile(r"\bcalls=%?([\w.\-$]+)")


class HloOrigin(TypedDict):
    """One HLO instruction as a node's attribution gives it."""

    module: str  # the HLO module: jit_step
    instruction: str  # gemm_fusion_dot_general.8
    op: str | None  # JAX's op_name: jit(step)/jit(main)/dot_general
    file: str | None  # the Python line that made the op
    line: int | None


def kernel_name(instruction: str) -> str:
    """The name XLA gives the kernel of an HLO instruction (``llvm_ir::SanitizeFunctionName``)."""
    name = _UNSAFE.sub("_", instruction)
    return "_" + name if name[:1].isdigit() else name


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


def _metadata(text: str) -> dict[str, str]:
    """The fields of an instruction's ``metadata={...}``, or {}."""
    found = _METADATA.search(text)
    if found is None:
        return {}
    fields: dict[str, str] = {}
    position = found.end()
    while position < len(text):
        while position < len(text) and text[position] in " ,":
            position += 1
        if position >= len(text) or text[position] == "}":
            break
        field = _FIELD.match(text, position)
        if field is None:
            break
        fields[field.group(1)] = _unquote(field.group(2))
        position = field.end()
    return fields


class _Frames:
    """The stack-frame tables of a module's text (newer XLA), read as they come."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[int, str]] = {name: {} for name in _TABLES}

    def line_of(self, frame_id: int) -> tuple[str | None, int | None]:
        """The file and line of a stack frame: its own location (the innermost frame)."""
        frame = _fields(self.tables["StackFrames"].get(frame_id, ""))
        location_id = _int(frame.get("file_location_id"))
        location = _fields(self.tables["FileLocations"].get(location_id or -1, ""))
        file_id = _int(location.get("file_name_id"))
        file = self.tables["FileNames"].get(file_id) if file_id is not None else None
        return (_unquote(file) if file else None), _int(location.get("line"))


def _fields(text: str) -> dict[str, str]:
    """A table row's ``{a=1 b="x"}``."""
    return {m.group(1): _unquote(m.group(2)) for m in _FIELD.finditer(text)}


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


@dataclass
class Module:
    """One optimized HLO module: each instruction's origin by kernel name, and the kernels its
    executable launches, in the order of the module's text (``launches``)."""

    name: str
    origins: dict[str, HloOrigin] = field(default_factory=dict)
    launches: list[HloOrigin] = field(default_factory=list)
    library: set[int] = field(default_factory=set)  # indexes in launches of custom calls


def read_module(text: str) -> Module:
    """An HLO module's text, read: what each instruction says of where it came from."""
    module = Module("")
    frames = _Frames()
    table: str | None = None
    pending: list[tuple[str, dict[str, str], bool]] = []
    fused: set[str] = set()  # computations a fusion calls: their instructions are no kernels
    custom: set[int] = set()  # indexes into pending of custom calls
    computation = ""
    in_fused: dict[str, list[int]] = {}  # computation -> indexes into pending
    for line in text.splitlines():
        if not module.name:
            found = _MODULE.match(line)
            if found:
                module.name = found.group(1)
                continue
        stripped = line.strip()
        if stripped in _TABLES:
            table = stripped
            continue
        if table is not None:
            row = _TABLE_ROW.match(line)
            if row:
                frames.tables[table][int(row.group(1))] = row.group(2).strip()
                continue
            table = None
        header = _COMPUTATION.match(line)
        if header is not None:
            computation = header.group(1)
            continue
        instruction = _INSTRUCTION.match(line)
        if instruction is None:
            continue
        body = instruction.group(2)
        launch = _LAUNCH.search(body)
        launches = launch is not None
        if launches:
            called = _CALLS.search(body)
            if called is not None:
                fused.add(called.group(1))
        fields = _metadata(body) if "metadata=" in body else {}
        in_fused.setdefault(computation, []).append(len(pending))
        pending.append((instruction.group(1), fields, launches))
        if launch is not None and "custom-call" in launch.group(0):
            custom.add(len(pending) - 1)
    inner = {i for name in fused for i in in_fused.get(name, ())}
    for index, (name, fields, launches) in enumerate(pending):  # the tables come last
        file = fields.get("source_file")
        line_number = _int(fields.get("source_line"))
        frame_id = _int(fields.get("stack_frame_id"))
        if file is None and frame_id is not None:
            file, line_number = frames.line_of(frame_id)
        origin: HloOrigin = {
            "module": module.name,
            "instruction": name,
            "op": fields.get("op_name") or None,
            "file": file or None,
            "line": line_number,
        }
        if fields:
            module.origins[kernel_name(name)] = origin
        if launches and index not in inner:
            if index in custom:
                module.library.add(len(module.launches))
            module.launches.append(origin)
    return module


def match_kernels(kernels: list[str], modules: list[Module]) -> list[HloOrigin | None]:
    """The instruction behind each kernel launch of one graph (``kernels``: its kernel nodes'
    names, in the order they were made), or None.

    The graph is one module's: the one naming most of its kernels. Launches are matched in
    order against that module's kernel-launching instructions, because XLA compiles identical
    fusions once and launches the first one's kernel for all of them: a name met again stands
    for the next instruction in order (``gemm_fusion_dot_general_9`` launched seven times is
    ``gemm_fusion_dot_general.9`` to ``.15``). A name the order cannot place is matched by name
    alone."""
    wanted = set(kernels)
    best = max(
        reversed(modules),  # a tie goes to the module compiled last
        key=lambda m: sum(1 for k in wanted if k in m.origins),
        default=None,
    )
    if best is None or not any(k in best.origins for k in wanted):
        return [None] * len(kernels)
    sequence = best.launches
    names = [kernel_name(o["instruction"]) for o in sequence]
    out: list[HloOrigin | None] = []
    seen: set[str] = set()
    position = 0
    for kernel in kernels:
        own = names.index(kernel, position) if kernel in names[position:] else None
        if own is not None and (own == position or kernel not in seen):
            found: int | None = own
        elif position < len(sequence) and (
            kernel in seen or (kernel not in best.origins and position in best.library)
        ):
            # a reused kernel, or a library's kernel (cuBLAS) where a custom call comes next
            found = position
        else:
            found = None
        if found is not None:
            out.append(sequence[found])
            position = found + 1
        else:
            out.append(best.origins.get(kernel))
        seen.add(kernel)
    return out


def read_dumps(paths: Iterable[Path]) -> list[Module]:
    """The optimized modules dumped in ``paths``, in name order (XLA numbers them as it
    compiles). Unreadable or oversized files are skipped: a dump is evidence, not input the
    user gave."""
    modules = []
    for path in sorted(paths):
        try:
            if path.stat().st_size > MAX_DUMP_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        modules.append(read_module(text))
    return modules


_DUMP_TO = re.compile(r"--xla_dump_to=(\S+)")


def dump_folder(xla_flags: str) -> Path | None:
    """Where XLA dumps its modules, from ``XLA_FLAGS`` (the last ``--xla_dump_to`` wins), or
    None: not dumping, or dumping to a sponge or stdout."""
    found = _DUMP_TO.findall(xla_flags)
    if not found:
        return None
    folder = _unquote(found[-1])
    return None if folder in ("sponge", "-") or folder.startswith("sponge") else Path(folder)


class DumpFolder:
    """The optimized modules XLA has dumped into ``folder`` so far, each read once.

    XLA writes a module's files as it compiles it, before the first run of its executable
    (and so before any CUDA graph of it is instantiated); a file that grew since it was read
    is read again."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._modules: dict[Path, Module] = {}
        self._read: dict[Path, tuple[int, int]] = {}

    def update(self) -> list[Module]:
        """Every module dumped so far."""
        try:
            found = {p: p.stat() for p in self.folder.glob(AFTER_OPTIMIZATIONS)}
        except OSError:
            return list(self._modules.values())
        fresh = {p: (s.st_size, s.st_mtime_ns) for p, s in found.items()}
        changed = sorted(p for p, seen in fresh.items() if self._read.get(p) != seen)
        for path, module in zip(changed, read_dumps(changed), strict=False):
            self._modules[path] = module
            self._read[path] = fresh[path]
        return [self._modules[p] for p in sorted(self._modules)]
