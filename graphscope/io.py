"""``load`` and ``save``: every supported format, recognised by content, written atomically."""

from __future__ import annotations

import contextlib
import gc
import gzip
import os
from collections.abc import Iterator
from pathlib import Path

import networkx as nx

from . import contract, dotwrite, paths, sizes
from .bundle import bounded_document, encode, from_document
from .dot import read_dot
from .dotwrite import dumps_dot
from .errors import BundleFormatError, InputError
from .output import write_atomic as write_atomic  # exports and capture write through io

#: Largest file, and largest decompressed bundle, that ``load`` reads unless told otherwise.
MAX_BYTES = contract.MAX_BYTES
_GZIP_MAGIC = contract.GZIP_MAGIC
_DOT_STARTS = ("digraph", "graph", "strict", "//", "/*", "#")
_LARGER = " (pass a larger max_bytes to load it)"


def _gunzip(raw: bytes, path: Path, limit: int) -> bytes:
    """Decompress in bounded steps, so a small file cannot expand without limit."""
    return contract.gunzip(raw, path, limit, _LARGER)


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of small objects are made.

    A 100,000-node bundle allocates a few million containers, none of them cyclic garbage;
    collections triggered by those allocations cost a third of the load time. Analyses of
    such a graph pause it too: each collection walks the whole graph (findings on 100,000
    nodes: 1.4 s with it, 0.4 s without).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse_json(text: str, path: Path) -> object:
    """A bundle's JSON, whose nesting and values ``load`` has counted on its bytes."""
    with bulk():
        return contract.parse_json(text, path, BundleFormatError, "bundle JSON", checked=True)


def _bundle_graph(doc: object, path: Path) -> nx.DiGraph:
    with bulk():
        G = from_document(doc, path)
    G.graph.setdefault("source", {"format": "bundle", "path": str(path)})
    return G


def load(path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES) -> nx.DiGraph:
    """Read a ``cudaGraphDebugDotPrint`` .dot file or a graphscope bundle (.json, .json.gz).

    The format is recognised by content, not by extension. Raises InputError (a
    GraphscopeError) naming the file, and the line where there is one, on bad input, and
    when the process runs out of memory reading it.
    """
    p = Path(path)
    try:
        return _load(p, max_bytes)
    except MemoryError:
        # The readers bound what a file may make (contract.MAX_JSON_MEMORY and the value
        # counts) from its text; a process given less memory than that still gets one line.
        raise InputError(
            p, "ran out of memory reading it: give the process more memory, or a smaller file"
        ) from None


def _load(p: Path, max_bytes: int) -> nx.DiGraph:
    raw = contract.read_limited(p, max_bytes, decompress=False, hint=_LARGER)
    gzipped = raw.startswith(_GZIP_MAGIC)
    if gzipped:
        raw = _gunzip(raw, p, max_bytes)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            p,
            f"not a text file (byte {exc.start} is not UTF-8); expected a DOT "
            "file or a graphscope bundle",
        ) from None
    kind = _kind(text[:4096])
    if kind == "bundle":
        # Nesting and values are counted on the bytes, before they go: the text is parsed.
        contract.check_json(raw, p, BundleFormatError, "bundle JSON")
        del raw
        doc = _parse_json(text, p)
        del text  # a large bundle's text would otherwise stay alive while its graph is built
        return _bundle_graph(doc, p)
    del raw  # the text is what is read from here on
    if gzipped:
        raise InputError(p, "gzip file does not hold a JSON bundle")
    if kind == "dot":
        with bulk():
            return read_dot(p, text)
    if not text.strip():
        raise InputError(p, "empty file")
    raise InputError(
        p,
        f"not a cudaGraphDebugDotPrint DOT file or a graphscope bundle "
        f"(it starts with {text.lstrip()[:12]!r})",
    )


def _kind(head: str) -> str:
    """What the first characters of a (decompressed) file say it is."""
    head = head.lstrip("\ufeff \t\r\n")
    if head.startswith(("{", "[")):
        return "bundle"
    return "dot" if head.startswith(_DOT_STARTS) else "unknown"


def detect_format(path: str | os.PathLike[str]) -> str:
    """``"bundle"``, ``"dot"`` or ``"unknown"``, from the first bytes of the file."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError as exc:
        raise InputError(path, f"cannot read it ({exc.strerror or exc})") from None
    if head.startswith(_GZIP_MAGIC):
        return "bundle"
    return _kind(head.decode("utf-8", errors="replace"))


_DOT_INSTEAD = (
    "DOT writes each node whole, so a value many nodes share is written once per node; write "
    "a .json.gz bundle instead, which stores it once"
)


def save(G: nx.DiGraph, path: str | os.PathLike[str]) -> Path:
    """Write ``G`` to ``path``: a bundle for .json or .json.gz, readable DOT for .dot.

    The file appears whole or not at all, keeps the mode of the file it replaces and writes
    through a symlink (``graphscope.output.write_atomic``). Its size is measured before it is
    built (``graphscope.sizes``): past the limit, one ``InputError`` line says what to do.
    """
    p = paths.output_path(path)
    name = p.name.lower()
    if name.endswith(".dot") or name.endswith(".gv"):
        sizes.check(p, lambda e: dotwrite.measure(G, e), "the DOT text", _DOT_INSTEAD, quoted=True)
        data = dumps_dot(G).encode("utf-8")
    elif name.endswith(".json.gz"):
        # mtime=0: the same graph gives the same bytes; level 6 balances size and the
        # 2 s save target for 100,000 nodes (benchmarks/bench_bundle.py).
        with bulk():
            text = encode(bounded_document(G, p))
        data = gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)
    elif name.endswith(".json"):
        with bulk():
            data = encode(bounded_document(G, p)).encode("utf-8")
    else:
        raise InputError(p, "unknown output format: use .json, .json.gz or .dot")
    return write_atomic(p, data)
