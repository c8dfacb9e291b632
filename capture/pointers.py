"""Resolve device pointers inside kernel arguments to allocations and named buffers."""

from __future__ import annotations

import bisect
import gc
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict


@dataclass
class Region:
    """A span of device memory with a name."""

    start: int  # first byte
    end: int  # one past the last byte
    name: str  # "input:tokens", "param:blocks.0.attn.qkv.weight", "segment 3", ...


class Place(TypedDict, total=False):
    """Where an address points: into an allocator segment, a named buffer, or both."""

    segment: str  # the segment's name: "segment 3 (large)"
    segment_offset: int  # bytes from the segment's start
    buffer: str  # the buffer's name: "input:tokens", "param:lm_head.weight"
    buffer_offset: int  # bytes from the buffer's start


class Pointer(Place):
    """A word of a kernel's arguments that points into known memory (a node's ``pointers``)."""

    arg: int  # which argument
    offset: int  # the word's offset in that argument, in bytes
    address: int


class PointerMap:
    """Looks up which named buffer, or failing that which allocator segment, holds an address."""

    def __init__(self, buffers: list[Region], segments: list[Region]) -> None:
        self._buffers = sorted(buffers, key=lambda r: r.start)
        self._segments = sorted(segments, key=lambda r: r.start)
        self._buffer_starts = [r.start for r in self._buffers]
        self._segment_starts = [r.start for r in self._segments]
        # The span of all known memory, computed once: scan() runs per kernel, and taking the
        # max over every parameter's end there cost more than the rest of the scan.
        everything = self._buffers + self._segments
        self._low = min((r.start for r in everything), default=0)
        self._high = max((r.end for r in everything), default=0)

    @staticmethod
    def _find(starts: list[int], regions: list[Region], address: int) -> Region | None:
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and address < regions[i].end:
            return regions[i]
        return None

    def resolve(self, address: int) -> Place | None:
        """Where ``address`` points, or None if no known allocation holds it."""
        segment = self._find(self._segment_starts, self._segments, address)
        buffer = self._find(self._buffer_starts, self._buffers, address)
        if segment is None and buffer is None:
            return None
        out: Place = {}
        if segment is not None:
            out["segment"] = segment.name
            out["segment_offset"] = address - segment.start
        if buffer is not None:
            out["buffer"] = buffer.name
            out["buffer_offset"] = address - buffer.start
        return out

    def scan(self, args: list[dict[str, Any]]) -> list[Pointer]:
        """Every 8-byte word of the arguments (as a bundle stores them) that points into known
        memory; see ``scan_raw``."""
        return self.scan_raw([bytes.fromhex(arg.get("value", "")) for arg in args])

    def scan_raw(self, args: list[bytes | None]) -> list[Pointer]:
        """Every 8-byte word of each argument's bytes that points into known memory.

        Most device pointers of PyTorch kernels sit inside struct arguments (TensorInfo,
        OffsetCalculator), so each aligned word of each argument is tried (DESIGN.md); words
        outside the span of all known memory are dropped before any lookup.
        """
        low, high = self._low, self._high
        found: list[Pointer] = []
        for index, raw in enumerate(args):
            if raw is None or len(raw) < 8:
                continue
            words = len(raw) // 8
            for slot, address in enumerate(struct.unpack_from(f"<{words}Q", raw)):
                if low <= address < high:
                    where = self.resolve(address)
                    if where is not None:
                        found.append(
                            {"arg": index, "offset": slot * 8, "address": address, **where}
                        )
        return found


def pointer_map(
    torch: Any,
    buffers: Mapping[str, Any],
    models: Iterable[tuple[str, Any]] = (),
    segments: list[dict[str, Any]] | None = None,
) -> PointerMap:
    """Named buffers (``input:x``, ``output:y``), the parameters and buffers of ``models``
    (``(prefix, module)`` pairs, named ``param:<prefix><path>``) and the allocator's segments
    (``segments``: a ``torch.cuda.memory_snapshot()`` already taken, else one is taken).
    """
    regions = [Region(t.data_ptr(), t.data_ptr() + t.nbytes, n) for n, t in buffers.items()]
    regions += parameter_regions(models)
    snapshot = torch.cuda.memory_snapshot() if segments is None else segments
    return PointerMap(regions, segment_regions(snapshot))


def segment_regions(segments: list[dict[str, Any]]) -> list[Region]:
    """The allocator's segments (``torch.cuda.memory_snapshot()``), named by their index;
    a segment of a private pool (a graph's) says so: ``segment 3 (small, private pool)``."""
    return [
        Region(
            s["address"],
            s["address"] + s["total_size"],
            f"segment {i} ({s['segment_type']}"
            + (", private pool)" if any(s.get("segment_pool_id") or ()) else ")"),
        )
        for i, s in enumerate(segments)
    ]


#: ``(first byte, one past the last, path)`` of one parameter or buffer in its module tree.
Span = tuple[int, int, str]
#: The spans of each outermost tree, with the prefix that names its paths (``named_roots``).
TreeSpans = list[tuple[str, list[Span]]]


def tree_spans(root: Any, cuda_only: bool = True) -> tuple[list[Span], set[int]]:
    """Where the parameters and buffers of ``root``'s module tree are now, and the ``id()`` of
    every module in it.

    In ``named_modules()`` order, each module and tensor once, paths without torch.compile's
    ``_orig_mod`` levels; CUDA tensors only unless ``cuda_only`` is False. Read in C
    (``capture/_modulewalk.c``) where the install built it: at every instantiation of a
    recorded capture, and in Python this walk cost 2.3 us per node of a 10,411-node graph.
    """
    native = _native_walk()
    if native is not None:
        return native.walk(root, cuda_only)  # type: ignore[no-any-return]
    spans: list[Span] = []
    modules: set[int] = set()
    tensors: set[int] = set()

    def walk(module: Any, path: str) -> None:
        if id(module) in modules:
            return
        modules.add(id(module))
        for table in (module._parameters, module._buffers):
            for name, tensor in list(table.items()):
                if tensor is None or id(tensor) in tensors:
                    continue
                tensors.add(id(tensor))
                if cuda_only and not tensor.is_cuda:
                    continue
                start = tensor.data_ptr()
                spans.append((start, start + tensor.nbytes, f"{path}.{name}" if path else name))
        for name, child in list(module._modules.items()):
            if child is not None:
                walk(child, path if name == "_orig_mod" else f"{path}.{name}" if path else name)

    walk(root, "")
    return spans, modules


def _native_walk() -> Any:
    try:
        from . import _modulewalk  # type: ignore[attr-defined]
    except ImportError:  # not built by this install: the walk runs in Python
        return None
    return _modulewalk


def parameter_spans(roots: Iterable[Any]) -> list[tuple[str, Any, list[Span]]]:
    """``(prefix, root, spans)`` of each tree of ``roots`` that is no part of another, its
    paths prefixed as :func:`named_roots` names them; cheap enough to run at each
    instantiation."""
    walked: dict[int, tuple[Any, list[Span], set[int]]] = {}
    for root in roots:
        if id(root) not in walked:
            walked[id(root)] = (root, *tree_spans(root))
    inner = {
        other
        for key, (_, _, modules) in walked.items()
        for other in modules
        if other != key and other in walked
    }
    outer = [(root, spans) for key, (root, spans, _) in walked.items() if key not in inner]
    by_root = {id(root): spans for root, spans in outer}
    return [
        (prefix, root, by_root[id(root)]) for prefix, root in named_roots([r for r, _ in outer])
    ]


def regions_of(trees: TreeSpans) -> list[Region]:
    """Regions named ``param:<prefix><path>``, from :func:`parameter_spans`."""
    return [
        Region(start, end, f"param:{prefix}{path}")
        for prefix, spans in trees
        for start, end, path in spans
    ]


def parameter_regions(models: Iterable[tuple[str, Any]]) -> list[Region]:
    """The CUDA parameters and buffers of ``models`` (``(prefix, module)`` pairs), each named
    ``param:<prefix><path>``: plain numbers, kept after the modules are gone."""
    return regions_of(
        [(prefix, tree_spans(model)[0]) for prefix, model in models if model is not None]
    )


def allocated_in(segments: list[dict[str, Any]], pool: tuple[int, ...]) -> int:
    """Bytes of the allocator segments (``torch.cuda.memory_snapshot()``) in a graph pool."""
    return sum(s["total_size"] for s in segments if tuple(s.get("segment_pool_id") or ()) == pool)


def active_in(segments: list[dict[str, Any]], pool: tuple[int, ...] | None = None) -> int | None:
    """Bytes in use (``active_size``) of the segments of a graph pool, or of all segments;
    None where the snapshot does not say (an older torch)."""
    chosen = [s for s in segments if pool is None or tuple(s.get("segment_pool_id") or ()) == pool]
    sizes = [s.get("active_size") for s in chosen]
    known = [size for size in sizes if isinstance(size, int)]
    return sum(known) if len(known) == len(sizes) else None


def live_models(torch: Any) -> list[tuple[str, Any]]:
    """The outermost ``nn.Module`` trees alive in the process that hold CUDA tensors.

    Named ``(prefix, module)`` for ``pointer_map``: no prefix when there is one such tree,
    ``ClassName.`` (``ClassName#2.`` for a second of a class) when there are several, as with
    a draft model beside the target. Found through the garbage collector's list of objects,
    so a graph recorded in a program that never told graphscope its model still gets
    ``param:`` names.
    """
    module_type = torch.nn.Module
    # type(), not isinstance(): isinstance asks objects for __class__, which proxies answer
    # (a dead weakref.proxy raises; torch's deprecated aliases warn on the user's stderr).
    modules = [o for o in gc.get_objects() if issubclass(type(o), module_type)]
    children = {id(c) for m in modules for c in m.children()}
    roots = []
    for module in modules:
        if id(module) in children:
            continue
        try:
            first = next(iter(module.parameters()), None)
            if first is None:
                first = next(iter(module.buffers()), None)
        except Exception:  # a module half-built or torn down
            continue
        if first is not None and getattr(first, "is_cuda", False):
            roots.append(module)
    return named_roots(roots)


def named_roots(roots: list[Any]) -> list[tuple[str, Any]]:
    """``(prefix, module)`` pairs for ``pointer_map``: no prefix for a lone tree, else
    ``ClassName.`` (``ClassName#2.`` for a second of a class)."""
    if len(roots) == 1:
        return [("", roots[0])]
    seen: dict[str, int] = {}
    named = []
    for module in roots:
        cls = type(module).__name__
        seen[cls] = seen.get(cls, 0) + 1
        named.append((f"{cls}." if seen[cls] == 1 else f"{cls}#{seen[cls]}.", module))
    return named
