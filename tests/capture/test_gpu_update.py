"""On a GPU: the predicted cudaGraphExecUpdate verdict against the driver's, on real pairs.

Pairs: two captures of one bucket, two buckets, two models, and explicit graphs whose memsets
and copies differ in what the CUDA rules allow and forbid. Each outcome is printed (run with
``-s``) so that a disagreement shows what the driver said.
"""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path
from typing import Any

import pytest

import graphscope
from graphscope.analysis.findings import findings
from graphscope.analysis.update import update_verdict

pytestmark = pytest.mark.gpu


def _read(handle: int, path: Path) -> Any:
    from graphscope.capture import grab

    G, _ = grab.read_graph(handle, path, None)
    return G


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Any]]:
    """(CUDA graph, graph model) per capture, all alive at once as the driver needs them."""
    import torch
    from graphscope.capture import grab, session

    out = tmp_path_factory.mktemp("update")
    made: dict[str, tuple[Any, Any]] = {}
    for name, model, batch in [
        ("llama-b1", "tiny-llama", 1),
        ("llama-b1-again", "tiny-llama", 1),
        ("llama-b8", "tiny-llama", 8),
        ("gpt-b1", "tiny-gpt", 1),
        ("gpt-parallel-b1", "tiny-gpt-parallel", 1),
    ]:
        step = session._build_step(model, batch)
        graph, _, attribution = session.capture_step(torch, step, what=name)
        G = _read(int(graph.raw_cuda_graph()), out / f"{name}.dot")
        grab.attach_labels(G, attribution.labels)
        made[name] = (graph, G)
    return made


def _compare(name: str, a: tuple[Any, Any], b: tuple[Any, Any]) -> dict[str, Any]:
    from graphscope.capture.update import driver_update

    predicted = update_verdict(a[1], b[1])
    real = driver_update(a[0], b[0])
    outcome = {
        "pair": name,
        "predicted": predicted.result,
        "driver": real["result"],
        "driver_node": real["error_node"],
        "predicted_nodes": sorted({o.node for o in predicted.obstacles if o.node}),
    }
    print(json.dumps(outcome))
    results = os.environ.get("GRAPHSCOPE_UPDATE_RESULTS")
    if results:
        with open(results, "a") as fh:
            fh.write(json.dumps(outcome) + "\n")
    assert predicted.ok == real["ok"], outcome
    if not real["ok"]:
        assert real["result"] in {o.result for o in predicted.obstacles}, outcome
    return outcome


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("llama-b1", "llama-b1-again"),
        ("llama-b1", "llama-b8"),
        ("llama-b8", "llama-b1"),
        ("gpt-b1", "gpt-parallel-b1"),
        ("gpt-b1", "llama-b1"),
    ],
)
def test_prediction_agrees_with_the_driver_on_captures(
    captures: dict[str, tuple[Any, Any]], a: str, b: str
) -> None:
    _compare(f"{a} -> {b}", captures[a], captures[b])


class _Explicit:
    """Small explicit graphs (runtime API): one memset or one copy each."""

    def __init__(self, tmp: Path) -> None:
        import torch
        from graphscope.capture._cuda import check, runtime

        self.rt, self.check, self.tmp = runtime(), check, tmp
        torch.cuda.init()
        self.dev = torch.zeros(4096, device="cuda")
        self.pinned = torch.zeros(4096, pin_memory=True)
        self.pageable = (ctypes.c_float * 4096)()
        self.graphs: list[Any] = []

    def _graph(self) -> Any:
        graph = self.check(self.rt.cudaGraphCreate(0))
        self.graphs.append(graph)
        return graph

    def memset(self, value: int, height: int) -> tuple[Any, Any]:
        graph = self._graph()
        p = self.rt.cudaMemsetParams()
        p.dst, p.value, p.elementSize = self.dev.data_ptr(), value, 4
        p.width, p.height, p.pitch = 256, height, 256 * 4
        self.check(self.rt.cudaGraphAddMemsetNode(graph, [], 0, p))
        return graph, _read(int(graph), self.tmp / f"memset-{value}-{height}.dot")

    def copy_in(self, source: str) -> tuple[Any, Any]:
        graph = self._graph()
        src = self.pinned.data_ptr() if source == "pinned" else ctypes.addressof(self.pageable)
        self.check(
            self.rt.cudaGraphAddMemcpyNode1D(
                graph,
                [],
                0,
                self.dev.data_ptr(),
                src,
                4096 * 4,
                self.rt.cudaMemcpyKind.cudaMemcpyHostToDevice,
            )
        )
        return graph, _read(int(graph), self.tmp / f"copy-{source}.dot")


@pytest.fixture(scope="module")
def explicit(tmp_path_factory: pytest.TempPathFactory) -> _Explicit:
    return _Explicit(tmp_path_factory.mktemp("explicit"))


def test_prediction_agrees_with_the_driver_on_memsets_and_copies(explicit: _Explicit) -> None:
    one_d = explicit.memset(0, 1), explicit.memset(7, 1)
    two_d = explicit.memset(0, 4), explicit.memset(7, 4)
    _compare("1D memset, value changed", *one_d)
    _compare("2D memset, value changed", *two_d)
    _compare(
        "pinned copy -> pageable copy", explicit.copy_in("pinned"), explicit.copy_in("pageable")
    )


def test_a_copy_from_pageable_memory_is_a_finding(explicit: _Explicit) -> None:
    _, G = explicit.copy_in("pageable")
    [copy] = [d for _, d in G.nodes(data=True) if d["type"] == "MEMCPY"]
    print("pageable copy as the dump gives it:", copy.get("src.memory_type"))
    codes = [f.code for f in findings(G)]
    assert "pageable-copy" in codes, copy
    _, pinned = explicit.copy_in("pinned")
    assert "pageable-copy" not in [f.code for f in findings(pinned)]


def test_bucket_capture_records_the_driver_verdicts(tmp_path: Path) -> None:
    from graphscope.capture import session

    from graphscope.analysis.diff import diff

    session.capture_buckets("tiny-gpt", [1, 2], tmp_path, replays=20)
    index = json.loads((tmp_path / "tiny-gpt.buckets.json").read_text())
    [update] = index["updates"]
    assert (update["from"], update["to"]) == (1, 2) and "result" in update
    A = graphscope.load(tmp_path / "tiny-gpt-b1.json.gz")
    B = graphscope.load(tmp_path / "tiny-gpt-b2.json.gz")
    verdict = diff(A, B).update
    assert verdict is not None and verdict.ok == update["ok"], (update, verdict)
