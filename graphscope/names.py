"""Kernel names: demangled (libstdc++'s ``__cxa_demangle``, in a bounded child process) and a
short form.

The short form is what a person scans in a list: the kernel's own name without namespaces,
return type or parameters, and only the template arguments that tell kernels apart (types and
functors; not literals, lambdas or PyTorch's offset-calculator plumbing). For example
``void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float,
false>(int, ...)`` becomes ``vectorized_layer_norm_kernel<Half, float>``.

Demangling is bounded in input, output, time and memory: each template substitution (``S_``,
``S0_``) or parameter (``T_``) repeats a name already printed, so a few hundred bytes of
mangled name can demangle to terabytes, and ``__cxa_demangle`` is C that no thread can stop.
It runs in a child process that the kernel stops when a name takes too much CPU time or memory;
a name past a bound is shown mangled, and the graph still loads.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable

#: Longest mangled name demangled; a longer one is shown as it is. The longest of the 58
#: distinct names in samples/ has 441 characters; CUTLASS kernels reach a few thousand.
MAX_MANGLED = 16 << 10
#: Longest demangled form kept (a longer one is shown mangled): the longest in samples/ has
#: 3,028 characters, 6.9 times its mangled name.
MAX_DEMANGLED = 64 << 10
#: CPU seconds ``__cxa_demangle`` may spend on one name. A real name takes 6 us on average
#: here; a 256-byte name whose substitutions double took 1.4 s and 143 MB, and each 10 bytes
#: more double both.
NAME_CPU_S = 0.1
#: Memory the child may add to its address space: what NAME_CPU_S of output can fill, and more.
CHILD_MEMORY = 256 << 20
#: Names stopped by a bound in one call before the rest are shown mangled: each costs up to
#: NAME_CPU_S and a new child (20 ms), so a file of many such names still loads in a second.
MAX_STOPPED = 4
#: Wall-clock seconds the children of one call may take, whatever the machine's load; names
#: not read by then are shown mangled. A DOT file's names are demangled in one call (``dot.py``),
#: so this bounds a load's demangling: the samples' 58 distinct names take 6 us each, and
#: starting the child took 20 ms idle, 100+ ms on a loaded 2-core machine. It was 10 s per call,
#: and a call per name: a file of 1,500 distinct 16 KB names took 179 s to load.
CALL_WALL_S = 2.5
#: Template nesting and length of a name's head (before its parameters) whose template
#: arguments ``short_name`` reads: its parser recurses, and scans the head once, per level.
#: The deepest of the real names in samples/ nests 4 deep; the longest head has 1,400 characters.
MAX_NESTING = 32
MAX_SHORT_HEAD = 8 << 10

# The child: names as a JSON list on stdin, a JSON line per name on stdout (the demangled
# form, or null). SIGPROF's default action ends the process, in C code too: that is the time
# bound. ctypes rather than cxxfilt: importing cxxfilt runs ctypes.util.find_library, which
# spawns ldconfig, and made each child 49 ms to start instead of 19 ms (measured here).
_CHILD = """
import ctypes, ctypes.util, json, resource, signal, sys
cpu_s, longest, memory = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
try:
    lib = ctypes.CDLL("libstdc++.so.6")
except OSError:
    found = ctypes.util.find_library("stdc++") or ctypes.util.find_library("c++")
    if found is None:
        sys.exit(3)
    lib = ctypes.CDLL(found)
cxa = getattr(lib, "__cxa_demangle")
cxa.restype = ctypes.c_void_p
cxa.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
free = ctypes.CDLL(None).free
free.argtypes = [ctypes.c_void_p]
try:
    with open("/proc/self/statm") as fh:
        size = int(fh.read().split()[0]) * resource.getpagesize()
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = size + memory
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
except (OSError, ValueError):
    pass
status = ctypes.c_int()
for name in json.load(sys.stdin):
    signal.setitimer(signal.ITIMER_PROF, cpu_s)
    out = cxa(name.encode(), None, None, ctypes.byref(status))
    signal.setitimer(signal.ITIMER_PROF, 0)
    text = None
    if out:
        raw = ctypes.string_at(out)
        free(out)
        if status.value == 0 and len(raw) <= longest:
            text = raw.decode("utf-8", "replace")
    sys.stdout.write(json.dumps(text) + "\\n")
    sys.stdout.flush()
"""
_NO_LIBRARY = 3  # the child's exit status when it finds no __cxa_demangle

_OPEN = {"<": ">", "(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
# Template arguments that say how PyTorch moves data, not what the kernel computes.
_PLUMBING = {
    "array",
    "OffsetCalculator",
    "TrivialOffsetCalculator",
    "LoadWithCast",
    "StoreWithCast",
    "LoadWithoutCast",
    "StoreWithoutCast",
}
_LITERAL = re.compile(r"\A(?:-?\d+[a-z]*|true|false|\(.*\)-?\d+)\Z")


class _Cache:
    """Recently used names, bounded by entries and by the characters they hold (a server that
    reads many uploads keeps only so much of them)."""

    def __init__(self, max_chars: int, max_entries: int) -> None:
        self.max_chars, self.max_entries = max_chars, max_entries
        self.items: OrderedDict[str, str] = OrderedDict()
        self.chars = 0
        self.lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def put(self, key: str, value: str) -> None:
        size = len(key) + len(value)
        if size > self.max_chars // 64:  # one long name must not push out hundreds
            return
        with self.lock:
            old = self.items.pop(key, None)
            if old is not None:
                self.chars -= len(key) + len(old)
            self.items[key] = value
            self.chars += size
            while self.chars > self.max_chars or len(self.items) > self.max_entries:
                gone, text = self.items.popitem(last=False)
                self.chars -= len(gone) + len(text)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.chars = 0


# 8 Mi characters each: thousands of real names (the samples' average 150 mangled, 600
# demangled), a few tens of MB at most.
_DEMANGLED = _Cache(8 << 20, 1 << 16)
_SHORT = _Cache(8 << 20, 1 << 16)
_unavailable = False  # no libstdc++ to demangle with: names are shown as they are


def _demanglable(name: str) -> bool:
    """Whether ``name`` is one to demangle: an Itanium-mangled symbol within the input bound
    (mangled names are ASCII; a NUL would end the C string early)."""
    return (
        name.startswith("_Z") and len(name) <= MAX_MANGLED and name.isascii() and name.isprintable()
    )


def demangle_all(names: Iterable[str]) -> dict[str, str]:
    """Each name's demangled form (the name itself where it is not mangled, or is past a
    bound), demangling those not yet known in one child process."""
    wanted = list(dict.fromkeys(names))
    out: dict[str, str] = {}
    todo = []
    for name in wanted:
        known = _DEMANGLED.get(name) if _demanglable(name) else name
        if known is None:
            todo.append(name)
        else:
            out[name] = known
    if todo and not _unavailable:
        for name, text in _in_child(todo).items():
            out[name] = name if text is None else text
            _DEMANGLED.put(name, out[name])
    return {name: out.get(name, name) for name in wanted}


def demangle(name: str) -> str:
    """The demangled C++ name, or ``name`` itself when it is not an Itanium-mangled symbol or
    cannot be demangled within the bounds."""
    return demangle_all([name])[name]


def _in_child(names: list[str]) -> dict[str, str | None]:
    """What the child says of each name: its demangled form, or None where ``__cxa_demangle``
    refused it or a bound stopped it. A name the call's bounds left unread is not in it."""
    global _unavailable
    argv = [sys.executable, "-I", "-S", "-c", _CHILD, str(NAME_CPU_S), str(MAX_DEMANGLED)]
    argv.append(str(CHILD_MEMORY))
    said: dict[str, str | None] = {}
    deadline = time.monotonic() + CALL_WALL_S
    stopped = 0
    while names and stopped <= MAX_STOPPED and (left := deadline - time.monotonic()) > 0:
        try:
            done = subprocess.run(
                argv, input=json.dumps(names).encode(), capture_output=True, timeout=left
            )
        except subprocess.TimeoutExpired as exc:
            _read_answers(names, exc.stdout or b"", said)
            break
        except (OSError, ValueError):  # no Python to start (an embedded interpreter)
            _unavailable = True
            break
        read = _read_answers(names, done.stdout, said)
        if done.returncode == _NO_LIBRARY and not read:
            _unavailable = True
            break
        if read >= len(names):
            break
        said[names[read]] = None  # the child died on it: its CPU time or memory ran out
        stopped += 1
        names = names[read + 1 :]
    return said


def _read_answers(names: list[str], stdout: bytes, said: dict[str, str | None]) -> int:
    """Record the child's complete answers; how many names they cover."""
    lines = stdout.split(b"\n")[:-1]  # the last piece is empty, or a line cut short
    for name, line in zip(names, lines, strict=False):
        try:
            text = json.loads(line)
        except ValueError:
            text = None
        said[name] = text if isinstance(text, str) and len(text) <= MAX_DEMANGLED else None
    return min(len(lines), len(names))


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` on ``sep`` where no bracket is open."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _strip_scopes(text: str) -> list[str]:
    """Split a qualified name on top-level ``::``."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif depth == 0 and text.startswith("::", i):
            parts.append(text[start:i])
            start = i + 2
            i += 1
        i += 1
    parts.append(text[start:])
    return parts


def _matching(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``start``, or -1."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in _OPEN:
            depth += 1
        elif text[i] in _CLOSE:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _base_and_args(component: str) -> tuple[str, list[str] | None]:
    """``name<args>(params)`` to ``(name, [args])``; params and qualifiers are dropped."""
    lt = component.find("<")
    paren = component.find("(")
    if lt == -1 or (paren != -1 and paren < lt):
        return (component[:paren] if paren != -1 else component).strip(), None
    end = _matching(component, lt)
    if end == -1:
        return component[:lt].strip(), None
    return component[:lt].strip(), _split_top(component[lt + 1 : end])


def _short_type(arg: str) -> str | None:
    """Shorten one template argument; None drops it."""
    arg = arg.strip()
    if not arg or _LITERAL.match(arg):
        return None
    if "{lambda" in arg:
        # A lambda argument: name it by the function it was defined in, the part a person
        # recognises (``direct_copy_kernel_cuda``), not the lambda's numbering.
        owner = _strip_scopes(arg.split("::{lambda", 1)[0])
        for comp in reversed(owner):
            if "(" in comp:
                return _short_component(comp)
        return None
    scopes = [s for s in _strip_scopes(arg) if s]
    if not scopes:
        return None
    last = scopes[-1]
    suffix = ""
    while last and last[-1] in "*& ":
        suffix = last[-1] + suffix
        last = last[:-1]
    if last.endswith(" const"):
        last = last[: -len(" const")]
    base, _ = _base_and_args(last)
    if base in _PLUMBING:
        return None
    return _short_component(last) + suffix.replace(" ", "")


def _short_component(component: str) -> str:
    base, args = _base_and_args(component)
    if not args:
        return base
    kept = [a for a in (_short_type(x) for x in args) if a]
    return f"{base}<{', '.join(kept)}>" if kept else base


def short_name(name: str, demangled: str | None = None) -> str:
    """A short display name for a (mangled or demangled) kernel name: the name mangled where it
    cannot be demangled, its base alone where its templates pass the bounds.

    ``demangled`` is the name's demangled form where the caller has it (from ``demangle_all``):
    then no child process is started. Without it, a name not cached is demangled in a child of
    its own, so a caller with many names calls ``short_names_all`` (or ``demangle_all`` first)."""
    short = _SHORT.get(name)
    if short is None:
        text = demangle(name) if demangled is None else demangled
        short = _shorten(name, text)
        if text != name or not _demanglable(name):
            # A name left mangled by a bound of this call (its wall-clock time) may demangle in
            # the next: only its short form from a demangled text is kept.
            _SHORT.put(name, short)
    return short


def short_names_all(demangled: dict[str, str]) -> dict[str, str]:
    """Each name's short form, from ``demangle_all``'s answer (name to demangled form): no child
    process is started, whatever the caches hold."""
    return {name: short_name(name, text) for name, text in demangled.items()}


def _nests_deeper(text: str, limit: int) -> bool:
    depth = 0
    for ch in text:
        if ch in _OPEN:
            depth += 1
            if depth > limit:
                return True
        elif ch in _CLOSE:
            depth -= 1
    return False


def _shorten(name: str, text: str) -> str:
    if text == name and name.startswith("_Z"):
        return name
    text = text.replace("(anonymous namespace)::", "")
    try:
        if text.startswith("void "):
            text = text[len("void ") :]
        paren = -1
        depth = 0
        for i, ch in enumerate(text):
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
            elif ch == "(" and depth == 0:
                paren = i
                break
        head = text[:paren] if paren != -1 else text
        scopes = [s for s in _strip_scopes(head) if s]
        if not scopes:
            return text
        if len(head) > MAX_SHORT_HEAD or _nests_deeper(head, MAX_NESTING):
            # Reading the template arguments takes time per level of nesting: past the
            # bounds the name is shortened to its base.
            return scopes[-1].split("<", 1)[0].strip() or scopes[-1][:MAX_SHORT_HEAD]
        return _short_component(scopes[-1])
    except (IndexError, ValueError):  # a demangled form this parser did not expect
        return text


# What a kernel computes, where its short name says it: the functor or reduction inside the
# templates (the innermost wins: BinaryFunctor<..., MulFunctor<float>> is a multiply) ...
# The words before a suffix are at most 64 characters: with ``\w+?`` the search tried every
# start in a long word to its end, and a 40,000-character name took 30 s.
_FUNCTOR = re.compile(
    r"CUDAFunctor_(\w+)|(\w{1,64}?)Functor\b|(\w{1,64}?)Ops<|(\w{1,64}?)_kernel_(?:cuda|impl)\b"
)
_GENERIC_FUNCTORS = {"Binary", "Unary", "BinaryOp", "Opaque", "gpu"}
# Vendor kernels whose names say the library and tile, not the op.
_VENDOR = (
    ("nvjet_", "gemm (nvjet)"),
    ("cutlass", "gemm (cutlass)"),
    ("cudnn_generated_fort_native_sdpa", "sdpa (cudnn)"),
)
# ... or the ops an Inductor kernel fuses, less the ones that only move or view data.
_TRITON = re.compile(r"\Atriton_(?:poi|per|red|tem|for)_fused_+(.*?)(?:_\d+)?\Z")
_TRITON_NOISE = re.compile(
    r"(?:^|_)(?:to_copy|unsafe_view|view|t|transpose|unsqueeze|squeeze|slice|select|"
    r"scalar_tensor|where|expand|clone|permute|reshape|split_with_sizes|stack)(?=_|$)"
)


def kernel_label(short: str, op: str | None = None) -> str:
    """A few words for a kernel drawn in a picture: the aten op that launched it when known
    (``mul``), else what its short name says it computes (``Mul``, ``Mean``, ``index_copy``,
    ``add_mean_mul_rsqrt`` for a fused Inductor kernel), else its name before the templates.
    """
    if op:
        return op.removeprefix("aten::").lstrip("_") or op
    for prefix, label in _VENDOR:
        if short.startswith(prefix):
            return label
    fused = _TRITON.match(short)
    if fused:
        ops = re.sub(r"_+", "_", _TRITON_NOISE.sub("", fused.group(1))).strip("_")
        return ops or fused.group(1)
    base, _, args = short.partition("<")
    found = [
        next(g for g in m.groups() if g)
        for m in _FUNCTOR.finditer(args)
        if next(g for g in m.groups() if g) not in _GENERIC_FUNCTORS
    ]
    return found[-1] if found else base
