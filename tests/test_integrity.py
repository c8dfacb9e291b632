"""Pointer integrity under ``graphscope record``, without a GPU: a graph whose parameters move
after it was made is found, named and counted; ``check`` and the catalog say so.

The parameters are stand-ins for torch's modules and tensors (as in test_modulewalk.py): the
check reads where they are through the same walk. tests/test_gpu_record.py reloads a real
model's weights under a live graph on the GPU.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from graphscope.capture import pointers
from graphscope.capture.record.integrity import IntegrityCheck, roots_of
from graphscope.capture.record.lives import Life

import graphscope
from graphscope import recording
from graphscope.analysis.check import check
from graphscope.analysis.lifecycle import notes


class Tensor:
    def __init__(self, start: int, nbytes: int) -> None:
        self.start, self.nbytes, self.is_cuda = start, nbytes, True

    def data_ptr(self) -> int:
        return self.start


class Module:
    def __init__(self, parameters: dict[str, Any] | None = None, **children: Any) -> None:
        self._parameters, self._buffers, self._modules = parameters or {}, {}, children


def _graph() -> nx.DiGraph:
    """Three kernels: two read layer 0's weight (one at an offset), one reads the embedding;
    a fourth reads only an allocator block."""
    G = nx.DiGraph()
    weight = {"buffer": "param:layers.0.weight", "arg": 0, "offset": 0}
    G.add_node("n1", pointers=[{**weight, "address": 0x3000, "buffer_offset": 0}])
    G.add_node("n2", pointers=[{**weight, "address": 0x3010, "buffer_offset": 16}] * 2)
    G.add_node("n3", pointers=[{"buffer": "param:embed", "address": 0x1000, "buffer_offset": 0}])
    G.add_node("n4", pointers=[{"segment": "segment 0 (large)", "address": 0x9000}])
    return G


def _model() -> Module:
    return Module(
        {"embed": Tensor(0x1000, 64)},
        layers=Module(**{"0": Module({"weight": Tensor(0x3000, 256)})}),
    )


def _life(model: Any, name: str = "g5") -> Life:
    life = Life(
        id=name, exec_id=5, graph_id=4, capture=None, instantiated_ns=0, instantiate_ns=None
    )
    trees = pointers.parameter_spans([model])
    life.parameters = [(prefix, spans) for prefix, _, spans in trees]
    life.param_roots = roots_of(trees)
    life.graph = _graph()
    return life


def test_a_parameter_rebound_under_a_live_graph_is_found_once_with_its_nodes(model: Module) -> None:
    life = _life(model)
    check_ = IntegrityCheck()
    assert check_.run([life], 10) == [] and life.param_moved == {}  # nothing moved
    model._modules["layers"]._modules["0"]._parameters["weight"] = Tensor(0x7000, 256)  # reload
    (stale,) = check_.run([life], 20)
    assert (stale.graph, stale.buffer, stale.was, stale.now) == (
        "g5",
        "param:layers.0.weight",
        0x3000,
        0x7000,
    )
    assert stale.nodes == ["n1", "n2"] and stale.pointers == 3
    assert check_.run([life], 30) == []  # filed once
    life.replays = 12
    entry = stale.as_dict(lambda ns: ns / 10, life.replays)
    assert entry["replays_since"] == 12 and entry["at_s"] == 2.0


def test_a_move_seen_before_the_graph_is_built_is_filed_when_it_is(model: Module) -> None:
    """A serving loop may not rest until it ends: the move is noted when seen, with the
    replays then, and filed once the worker has built the graph."""
    life = _life(model)
    graph, life.graph = life.graph, None
    check_ = IntegrityCheck()
    model._parameters["embed"] = Tensor(0x8000, 64)
    life.replays = 4
    assert check_.run([life], 10) == []  # not built: which nodes read it is not known yet
    life.replays, life.graph = 9, graph
    (stale,) = check_.run([life], 20)
    assert (stale.buffer, stale.was, stale.now, stale.at_ns) == ("param:embed", 0x1000, 0x8000, 10)
    assert stale.nodes == ["n3"] and stale.as_dict(lambda ns: ns, 9)["replays_since"] == 5


def test_a_model_dropped_as_the_program_ends_is_no_finding() -> None:
    model = _model()  # the test's own: a fixture's would be kept alive by pytest
    life = _life(model)
    del model
    gc.collect()
    assert IntegrityCheck().run([life], 10) == []


def test_graphs_destroyed_or_not_built_are_left_alone(model: Module) -> None:
    gone, unbuilt = _life(model, "g1"), _life(model, "g2")
    gone.destroyed_ns, unbuilt.graph = 5, None
    model._parameters["embed"] = Tensor(0x8000, 64)
    assert IntegrityCheck().run([gone, unbuilt], 10) == []


STALE = {
    "graph": "g5",
    "buffer": "param:layers.0.weight",
    "was": 0x3000,
    "now": 0x7000,
    "nodes": ["n1", "n2"],
    "pointers": 3,
    "at_s": 4.0,
    "replays_since": 12,
}


def test_check_fails_a_graph_replayed_after_its_weights_moved_and_notes_the_rest(
    recording_with: Any,
) -> None:
    rec = recording_with(stale_pointers=[STALE, {**STALE, "graph": "g8", "replays_since": 0}])
    (violation,) = check([rec]).violations
    assert violation.rule == "stale-pointer" and violation.graph == "g5"
    assert violation.message == (
        "pid 42 (serve.py): g5 points at param:layers.0.weight where it was, 0x3000; it moved to "
        "0x7000 (3 pointers of nodes n1, n2): the graph was replayed 12 times after, reading "
        "the old memory"
    )
    (note,) = [n for n in notes(rec) if n.code == "stale-pointers"]
    assert note.title.startswith("2 graph(s) kept pointing at parameters that moved")
    assert note.details[1].endswith("not replayed since")
    assert note.details[-1].startswith("checked: pointers into the parameters")
    # a finding never read again breaks no rule
    assert check([recording_with(stale_pointers=[{**STALE, "replays_since": 0}])]).violations == []


@pytest.fixture
def model() -> Module:
    return _model()


def test_a_move_noted_while_the_graph_lived_is_filed_after_it_and_its_model_are_gone() -> None:
    """The program's end drops the graph and the model before the worker has built the
    graph: what was noted while they lived is still filed."""
    model = _model()
    life = _life(model)
    graph, life.graph = life.graph, None
    check_ = IntegrityCheck()
    model._parameters["embed"] = Tensor(0x8000, 64)
    life.replays = 3
    assert check_.run([life], 10) == []
    life.destroyed_ns, life.replays = 50, 40
    del model
    gc.collect()
    life.graph = graph
    (stale,) = check_.run([life], 60)
    assert (stale.buffer, stale.now, stale.at_ns, stale.replays_at) == (
        "param:embed",
        0x8000,
        10,
        3,
    )


def test_the_recorded_sample_names_each_rebound_weight_its_graph_reads(samples: Path) -> None:
    """samples/recordings/weight-reload: weight_reload.py recorded on an H100. Every
    parameter was rebound to new memory while its graph lived and went on replaying; each is
    named with its old and new address and the graph's nodes that read it."""
    (rec,) = recording.load_recordings(samples / "recordings" / "weight-reload")
    (graph,) = rec.graphs
    G = graphscope.load(rec.bundle_path(graph))
    stale = rec.stale_pointers
    assert len(stale) > 1 and len({s["buffer"] for s in stale}) == len(stale)
    for s in stale:
        assert s["graph"] == graph["id"] and s["buffer"].startswith("param:")
        assert s["was"] != s["now"] and s["pointers"] >= len(s["nodes"]) >= 1
        assert all(node in G for node in s["nodes"])
        assert 0 < s["replays_since"] < graph["replays"]
    assert "param:embed.weight" in {s["buffer"] for s in stale}
    (violation,) = check([rec]).violations
    assert violation.rule == "stale-pointer" and f"and {len(stale) - 1} more" in violation.message
