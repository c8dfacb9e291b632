"""Mutated real dumps and bundles either load or raise a GraphscopeError; none hangs or bloats."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphscope
from graphscope import GraphscopeError

DOT = Path(__file__).resolve().parent.parent / "samples" / "dot"
SEEDS = [
    (DOT / "torch-ops" / "flags-verbose.dot").read_bytes(),
    (DOT / "torch-ops" / "flags-all.dot").read_bytes(),
    (DOT / "explicit-all-types" / "flags-none.dot").read_bytes(),
    (DOT / "stream-capture-misc" / "flags-verbose.dot").read_bytes(),
    (DOT / "torch-multistream" / "flags-kernel-params.dot").read_bytes(),
]
_G = graphscope.load(DOT / "torch-multistream" / "flags-verbose.dot")
SEEDS.append(graphscope.bundle.dumps(_G).encode())
SEEDS.append(gzip.compress(SEEDS[-1], mtime=0))
_RECORDED = DOT.parent / "recordings" / "torch-buckets" / "pid505"
SEEDS.append(gzip.decompress((_RECORDED / "g8.json.gz").read_bytes()))  # a recording section
SEEDS.append((DOT.parent / "recordings" / "gpt-fast" / "pid923" / "g2.dot").read_bytes())  # empty


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "delete", "duplicate"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif op == "cut":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(
                st.sampled_from(
                    [
                        b"{",
                        b"}",
                        b"|",
                        b'"',
                        b"\\",
                        b"->",
                        b"[",
                        b"]",
                        b";",
                        b"\n",
                        b"\x00",
                        b"subgraph cluster_9 {",
                        b"graph_1_node_",
                        b"<<<",
                        b"0x",
                        b"99999999999",
                    ]
                )
            )
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif op == "duplicate":
            end = at + draw(st.integers(1, 512))
            data[at:at] = data[at:end]
    return bytes(data)


def _load_or_error(path: Path) -> None:
    try:
        G = graphscope.load(path)
    except GraphscopeError as exc:
        assert str(exc).startswith(str(path))
        return
    assert isinstance(G, nx.DiGraph)
    for _, data in G.nodes(data=True):
        assert data["type"] in graphscope.model.NODE_TYPES


@settings(
    max_examples=2500, deadline=2000, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(mutated())
def test_mutated_inputs_load_or_raise(tmp_path_factory: object, data: bytes) -> None:
    path = Path(str(tmp_path_factory.mktemp("fuzz"))) / "input"  # type: ignore[attr-defined]
    path.write_bytes(data)
    _load_or_error(path)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(mutated())
def test_memory_stays_in_proportion_to_input(tmp_path_factory: object, data: bytes) -> None:
    path = Path(str(tmp_path_factory.mktemp("fuzzmem"))) / "input"  # type: ignore[attr-defined]
    path.write_bytes(data)
    tracemalloc.start()
    try:
        _load_or_error(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A real dump's graph takes tens of bytes per input byte; 200x plus a fixed 8 MB for the
    # parser's caches is far above that and far below a runaway.
    assert peak < 200 * len(data) + 8_000_000
