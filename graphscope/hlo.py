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


def read_module(text: str) -> dict[str, HloOrigin]:
    """Each instruction of an HLO module's text, by the name of the kernel XLA would give it."""
    module = ""
    frames = _Frames()
    table: str | None = None
    pending: list[tuple[str, dict[str, str]]] = []
    for line in text.splitlines():
        if not module:
            found = _MODULE.match(line)
            if found:
                module = found.group(1)
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
        instruction = _INSTRUCTION.match(line)
        if instruction is None or "metadata=" not in line:
            continue
        fields = _metadata(instruction.group(2))
        if fields:
            pending.append((instruction.group(1), fields))
    origins: dict[str, HloOrigin] = {}
    for name, fields in pending:  # the tables may follow the computations
        file = fields.get("source_file")
        line_number = _int(fields.get("source_line"))
        frame_id = _int(fields.get("stack_frame_id"))
        if file is None and frame_id is not None:
            file, line_number = frames.line_of(frame_id)
        origins[kernel_name(name)] = {
            "module": module,
            "instruction": name,
            "op": fields.get("op_name") or None,
            "file": file or None,
            "line": line_number,
        }
    return origins


def read_dumps(paths: Iterable[Path]) -> dict[str, HloOrigin]:
    """The instructions of every optimized module dumped in ``paths``, by kernel name.

    A kernel name two modules both use keeps the later module's instruction (files are read
    in name order, which XLA numbers by compilation). Unreadable or oversized files are
    skipped: a dump is evidence, not input the user gave."""
    origins: dict[str, HloOrigin] = {}
    for path in sorted(paths):
        try:
            if path.stat().st_size > MAX_DUMP_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        origins.update(read_module(text))
    return origins


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
        self.origins: dict[str, HloOrigin] = {}
        self._read: dict[Path, tuple[int, int]] = {}

    def update(self) -> dict[str, HloOrigin]:
        """Every instruction dumped so far, by kernel name."""
        try:
            found = {p: p.stat() for p in self.folder.glob(AFTER_OPTIMIZATIONS)}
        except OSError:
            return self.origins
        fresh = {p: (s.st_size, s.st_mtime_ns) for p, s in found.items()}
        changed = [p for p, seen in fresh.items() if self._read.get(p) != seen]
        if changed:
            self.origins.update(read_dumps(changed))
            self._read.update({p: fresh[p] for p in changed})
        return self.origins
