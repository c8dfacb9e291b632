"""``load`` and ``save``: every supported format, recognised by content, written atomically."""

from __future__ import annotations

import contextlib
import gc
import gzip
import json
import os
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import networkx as nx

from .bundle import dumps, from_document
from .dot import read_dot
from .dotwrite import dumps_dot
from .errors import BundleFormatError, InputError

#: Largest file, and largest decompressed bundle, that ``load`` reads unless told otherwise.
MAX_BYTES = 2 << 30
_GZIP_MAGIC = b"\x1f\x8b"
# The process's umask, read once at import (os.umask can only be read by setting it).
_UMASK = os.umask(0o022)
os.umask(_UMASK)
_DOT_STARTS = ("digraph", "graph", "strict", "//", "/*", "#")


def _gunzip(raw: bytes, path: Path, limit: int) -> bytes:
    """Decompress in bounded steps, so a small file cannot expand without limit."""
    inflater = zlib.decompressobj(wbits=31)
    chunks, total = [], 0
    data = raw
    try:
        while data:
            chunk = inflater.decompress(data, 1 << 24)
            total += len(chunk)
            if total > limit:
                raise InputError(
                    path,
                    f"gzip stream expands past {limit} bytes; pass a larger max_bytes to load it",
                )
            chunks.append(chunk)
            data = inflater.unconsumed_tail
            if inflater.eof and inflater.unused_data:
                data = inflater.unused_data  # a multi-member gzip file
                inflater = zlib.decompressobj(wbits=31)
        if not inflater.eof:
            raise InputError(path, "gzip stream ends early (truncated file?)")
    except zlib.error as exc:
        raise InputError(path, f"corrupt gzip stream ({exc})") from None
    return b"".join(chunks)


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
    try:
        with bulk():
            return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string"):
            why = "file ends inside the JSON (truncated file?)"
        elif exc.msg == "Extra data":
            why = "more than one JSON value (JSON Lines?); a bundle is a single JSON object"
        else:
            why = f"invalid JSON: {exc.msg}"
        raise BundleFormatError(path, why, exc.lineno) from None
    except RecursionError:
        raise BundleFormatError(path, "JSON nested too deeply") from None


def _bundle_graph(doc: object, path: Path) -> nx.DiGraph:
    with bulk():
        G = from_document(doc, path)
    G.graph.setdefault("source", {"format": "bundle", "path": str(path)})
    return G


def load(path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES) -> nx.DiGraph:
    """Read a ``cudaGraphDebugDotPrint`` .dot file or a graphscope bundle (.json, .json.gz).

    The format is recognised by content, not by extension. Raises InputError (a
    GraphscopeError) naming the file, and the line where there is one, on bad input.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        if not p.is_file():
            raise InputError(p, "not a regular file")
        if size > max_bytes:
            raise InputError(
                p,
                f"file is {size} bytes; graphscope reads at most {max_bytes} "
                "(pass a larger max_bytes to load it)",
            )
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(p, "no such file") from None
    except IsADirectoryError:
        raise InputError(p, "is a directory, not a graph file") from None
    except PermissionError:
        raise InputError(p, "permission denied") from None
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
    del raw  # the text is what is read from here on
    kind = _kind(text[:4096])
    if kind == "bundle":
        doc = _parse_json(text, p)
        del text  # a large bundle's text would otherwise stay alive while its graph is built
        return _bundle_graph(doc, p)
    if gzipped:
        raise InputError(p, "gzip file does not hold a JSON bundle")
    if kind == "dot":
        with bulk():
            G = read_dot(p, text)
        _check_acyclic(G, p)
        return G
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
    with open(path, "rb") as fh:
        head = fh.read(64)
    if head.startswith(_GZIP_MAGIC):
        return "bundle"
    return _kind(head.decode("utf-8", errors="replace"))


def _check_acyclic(G: nx.DiGraph, path: Path) -> None:
    if not nx.is_directed_acyclic_graph(G):
        cycle = nx.find_cycle(G)
        raise InputError(path, f"edges form a cycle through {cycle[0][0]}: a CUDA graph is acyclic")


def save(G: nx.DiGraph, path: str | os.PathLike[str]) -> Path:
    """Write ``G`` to ``path``: a bundle for .json or .json.gz, readable DOT for .dot.

    The file appears whole or not at all: it is written to a temporary file beside the
    target and renamed over it.
    """
    p = Path(path)
    name = p.name.lower()
    if name.endswith(".dot") or name.endswith(".gv"):
        data = dumps_dot(G).encode("utf-8")
    elif name.endswith(".json.gz"):
        # mtime=0: the same graph gives the same bytes; level 6 balances size and the
        # 2 s save target for 100,000 nodes (benchmarks/bench_bundle.py).
        with bulk():
            text = dumps(G)
        data = gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)
    elif name.endswith(".json"):
        with bulk():
            data = dumps(G).encode("utf-8")
    else:
        raise InputError(p, "unknown output format: use .json, .json.gz or .dot")
    return write_atomic(p, data)


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` to ``path`` whole or not at all: a temporary file beside it, renamed."""
    p = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = p.parent if str(p.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(p, f"directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=directory)
    try:
        # mkstemp makes the file private; give it the mode a plain open() would.
        os.chmod(tmp, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p
