"""Pointer integrity under ``graphscope record``, without a GPU: a graph whose parameters move
after it was made is found, named and counted; ``check`` and the catalog say so.

The parameters are stand-ins for torch's modules and tensors (as in test_modulewalk.py): the
check reads where they are through the same walk. tests/capture/test_gpu_record.py reloads a real
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


# -- allocator blocks (capture/record/blocks.py) ---------------------------------------------


def _segments(*blocks: tuple[int, int, str], pool: tuple[int, int] = (0, 0)) -> list[dict]:
    """One snapshot segment holding ``blocks`` ((address, size, state)), as torch gives it."""
    start = blocks[0][0]
    return [
        {
            "address": start,
            "total_size": sum(b[1] for b in blocks),
            "segment_pool_id": pool,
            "blocks": [{"address": a, "size": n, "state": state} for a, n, state in blocks],
        }
    ]


def test_a_graph_watches_the_allocated_blocks_outside_its_pool_and_the_parameters() -> None:
    from graphscope.capture.record.blocks import BlockMap, watches

    G = _graph()  # n4 reads 0x9000, the others parameters
    G.add_node("n5", pointers=[{"address": 0x9010}, {"address": 0x20_0000}])  # its own pool
    G.add_node("n6", pointers=[{"address": 0xA100}])  # a block free when the graph was read
    snapshot = _segments((0x9000, 0x200, "active_allocated"), (0x9200, 0x200, "inactive"))
    snapshot += _segments((0xA000, 0x200, "inactive"))
    snapshot += _segments((0x20_0000, 0x1000, "active_allocated"), pool=(1, 0))
    found = watches(G, BlockMap(snapshot), (1, 0))
    assert list(found) == [0x9000]
    assert found[0x9000].nodes == ["n4", "n5"] and found[0x9000].pointers == 2
    # with no pool known, a block of any pool is watched
    assert sorted(watches(G, BlockMap(snapshot), None)) == [0x9000, 0x20_0000]


def test_blocks_tile_their_segment_where_torch_gives_no_address() -> None:
    from graphscope.capture.record.blocks import BlockMap

    snapshot = _segments((0x9000, 0x200, "inactive"), (0x9200, 0x400, "active_allocated"))
    for b in snapshot[0]["blocks"]:
        del b["address"]
    found = BlockMap(snapshot).find(0x9300)
    assert found is not None and (found.start, found.size, found.active) == (0x9200, 0x400, True)
    assert BlockMap(snapshot).find(0x9600) is None


def test_a_block_freed_or_taken_by_another_allocation_is_filed_once() -> None:
    from graphscope.capture.record.blocks import BlockMap, watches

    life = _life(_model())
    life.blocks = watches(
        life.graph, BlockMap(_segments((0x9000, 0x200, "active_allocated"))), (1, 0)
    )
    check_ = IntegrityCheck()
    same = BlockMap(_segments((0x9000, 0x200, "active_allocated")))
    assert check_.run_blocks([life], same, 10) == []  # as it was
    life.replays = 7
    freed = BlockMap(_segments((0x9000, 0x400, "inactive")))  # merged with its neighbour
    (stale,) = check_.run_blocks([life], freed, 20)
    assert (stale.graph, stale.buffer, stale.was, stale.now, stale.why) == (
        "g5",
        "block 0x9000 (512 bytes)",
        0x9000,
        None,
        "was freed",
    )
    assert stale.nodes == ["n4"] and stale.replays_at == 7
    assert check_.run_blocks([life], freed, 30) == []  # filed once
    entry = stale.as_dict(lambda ns: ns / 10, 19)
    assert entry["why"] == "was freed" and entry["replays_since"] == 12
    # another graph whose block is now inside a larger allocation; one whose segment is gone
    other, gone = _life(_model(), "g8"), _life(_model(), "g9")
    other.blocks = dict(life.blocks)
    gone.blocks = dict(life.blocks)
    (taken,) = check_.run_blocks(
        [other], BlockMap(_segments((0x8E00, 0x800, "active_allocated"))), 40
    )
    assert taken.now == 0x8E00 and taken.why == (
        "was freed; its address is now in another allocation of 2,048 bytes"
    )
    (returned,) = check_.run_blocks([gone], BlockMap([]), 50)
    assert returned.why == "was freed and its memory returned to the driver"


def test_check_names_a_block_freed_under_a_graph_replayed_after(recording_with: Any) -> None:
    block = {
        **STALE,
        "buffer": "block 0x9000 (512 bytes)",
        "was": 0x9000,
        "now": None,
        "nodes": ["n4"],
        "pointers": 1,
        "why": "was freed",
    }
    rec = recording_with(stale_pointers=[block])
    (violation,) = check([rec]).violations
    assert violation.message == (
        "pid 42 (serve.py): g5 points into block 0x9000 (512 bytes), allocated when the graph "
        "was read; it was freed (1 pointers of nodes n4): the graph was replayed 12 times "
        "after, reading the old memory"
    )
    with pytest.raises(recording.InputError, match=r"stale_pointers\[0\]\.why"):
        recording_with(stale_pointers=[{**block, "why": 3}])


def test_a_block_freed_under_a_graph_never_launched_after_is_not_kept() -> None:
    from graphscope.capture.record.integrity import worth_keeping

    moved = {**STALE, "replays_since": 0}
    freed = {**STALE, "buffer": "block 0x9000 (512 bytes)", "why": "was freed"}
    assert worth_keeping([moved, {**freed, "replays_since": 0}, freed]) == [moved, freed]
