"""Kernel names: demangled (libstdc++'s ``__cxa_demangle`` through cxxfilt) and a short form.

The short form is what a person scans in a list: the kernel's own name without namespaces,
return type or parameters, and only the template arguments that tell kernels apart (types and
functors; not literals, lambdas or PyTorch's offset-calculator plumbing). For example
``void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float,
false>(int, ...)`` becomes ``vectorized_layer_norm_kernel<Half, float>``.
"""

from __future__ import annotations

import re
from functools import lru_cache

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


@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The demangled C++ name, or ``name`` itself when it is not an Itanium-mangled symbol."""
    if not name.startswith("_Z"):
        return name
    try:
        import cxxfilt
    except ImportError:  # the dependency is declared; a broken install still loads graphs
        return name
    try:
        return str(cxxfilt.demangle(name))
    except Exception:  # cxxfilt raises its own InvalidName, or fails to find libstdc++
        return name


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


@lru_cache(maxsize=65536)
def short_name(name: str) -> str:
    """A short display name for a (mangled or demangled) kernel name."""
    text = demangle(name)
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
        return _short_component(scopes[-1]) if scopes else text
    except (IndexError, ValueError):  # a demangled form this parser did not expect
        return text


# What a kernel computes, where its short name says it: the functor or reduction inside the
# templates (the innermost wins: BinaryFunctor<..., MulFunctor<float>> is a multiply) ...
_FUNCTOR = re.compile(r"CUDAFunctor_(\w+)|(\w+?)Functor\b|(\w+?)Ops<|(\w+?)_kernel_(?:cuda|impl)\b")
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
