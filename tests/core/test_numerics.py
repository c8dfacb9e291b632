"""Graph against eager by value (issue 28): the frozen-argument comparison, the findings and
the bundle sections, on the samples with planted edits; no GPU needed."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

import graphscope
from graphscope.analysis.findings import findings
from graphscope.analysis.numerics import (
    GROUP_NODES,
    Frozen,
    first_difference_text,
    frozen_values,
    grouped_lines,
    read_frozen,
)
from graphscope.errors import InputError

BUNDLES = Path(__file__).resolve().parents[2] / "samples" / "bundles"


@pytest.fixture(scope="module")
def llama() -> nx.DiGraph:
    return graphscope.load(BUNDLES / "tiny-llama-b1.json.gz")


def _set_word(data: dict[str, Any], arg: int, offset: int, word: str) -> None:
    args = copy.deepcopy(data["args"])
    value = args[arg]["value"]
    args[arg]["value"] = value[: 2 * offset] + word + value[2 * offset + len(word) :]
    data["args"] = args


def _node_with(G: nx.DiGraph, want: Any) -> str:
    return next(k for k, d in G.nodes(data=True) if d["type"] == "KERNEL" and want(d))


def test_two_identical_captures_freeze_nothing(llama: nx.DiGraph) -> None:
    report = frozen_values(llama, llama)
    kernels = sum(1 for _, d in llama.nodes(data=True) if d["type"] == "KERNEL")
    assert report.compared == kernels and report.frozen == [] and report.unpaired is None


def test_a_value_that_changes_a_step_later_is_frozen(llama: nx.DiGraph) -> None:
    later = copy.deepcopy(llama)
    # the first node's argument 0 is a 4-byte count (01000000 in the sample)
    key = _node_with(llama, lambda d: d["args"] and d["args"][0]["size"] == 4)
    _set_word(later.nodes[key], 0, 0, "02000000")
    [frozen] = frozen_values(llama, later).frozen
    assert (frozen.node, frozen.arg, frozen.kind) == (key, 0, "value")
    assert frozen.captured_int == int.from_bytes(
        bytes.fromhex(llama.nodes[key]["args"][0]["value"]), "little"
    )
    assert frozen.later_int == 2
    said = frozen.said()
    assert key in said and "is 1 in the graph, 2 when the step is captured one step later" in said
    assert frozen.module == llama.nodes[key]["attribution"]["module"]
    origin = llama.nodes[key]["attribution"]
    assert frozen.site == f"{Path(origin['file']).name}:{origin['line']} in {origin['function']}"


def test_a_pointer_into_the_captures_own_pool_is_no_finding_and_a_moved_input_is(
    llama: nx.DiGraph,
) -> None:
    later = copy.deepcopy(llama)
    # the capture's own memory: a pointer with no buffer, into a private pool
    pool = _node_with(llama, lambda d: any("buffer" not in p for p in d.get("pointers") or []))
    word = next(p for p in llama.nodes[pool]["pointers"] if "buffer" not in p)
    mine = copy.deepcopy(llama)
    for G in (mine, later):
        for p in G.nodes[pool]["pointers"]:
            p["segment"] = p["segment"].replace(")", ", private pool)")
    _set_word(later.nodes[pool], word["arg"], word["offset"], "00" * 8)
    assert frozen_values(mine, later).frozen == []
    # the input the step reads, at another address a step later: the step made it anew
    reads = _node_with(
        llama,
        lambda d: any(p.get("buffer", "").startswith("input:") for p in d.get("pointers") or []),
    )
    pointer = next(
        p for p in llama.nodes[reads]["pointers"] if p.get("buffer", "").startswith("input:")
    )
    moved = pointer["address"] + 4096
    _set_word(
        later.nodes[reads], pointer["arg"], pointer["offset"], moved.to_bytes(8, "little").hex()
    )
    [frozen] = frozen_values(mine, later).frozen
    assert (frozen.node, frozen.kind, frozen.buffer) == (reads, "pointer", pointer["buffer"])
    assert frozen.captured_int == pointer["address"] and frozen.later_int == moved
    assert "made the tensor anew" in frozen.said() and pointer["buffer"] in frozen.said()
    assert "nothing the step does writes" not in frozen.said()  # not looked at
    # One more eager step left the old buffer's bytes as they were: nothing writes the input
    # the graph reads between replays (issue 28); it round-trips through the contract.
    frozen.written = False
    assert frozen.said().endswith(
        "which nothing the step does writes: every replay reads the input it held at capture"
    )
    frozen.written = True
    assert "nothing the step does writes" not in frozen.said()
    mine.graph["frozen"] = frozen_values(mine, later).as_dict()
    mine.graph["frozen"]["frozen"][0]["written"] = False
    [read] = read_frozen(mine).frozen
    assert read.written is False and read.said().endswith("it held at capture")


def test_captures_of_other_work_are_not_compared(llama: nx.DiGraph) -> None:
    later = copy.deepcopy(llama)
    later.remove_node(next(iter(later)))
    report = frozen_values(llama, later)
    assert report.compared == 0 and report.frozen == []
    assert report.unpaired and "211 nodes" in report.unpaired and "212" in report.unpaired


def _difference(**extra: Any) -> dict[str, Any]:
    return {
        "dtype": "float16",
        "shape": [1, 512],
        "max_abs": 0.75,
        "max_rel": 0.1,
        "count": 3,
        "first_index": [0, 17],
        "graph_value": "1.5",
        "eager_value": "0.75",
        **extra,
    }


def _frozen_row(key: str, **extra: Any) -> dict[str, Any]:
    """A frozen-value row as capture writes it: a float scalar 7 at capture, 8 a step later."""
    return {
        "node": key,
        "name": "mul",
        "arg": 2,
        "offset": 0,
        "size": 4,
        "captured": "0000e040",
        "later": "00000041",
        "kind": "value",
        **extra,
    }


def _with_sections(G: nx.DiGraph, key: str, frozen_row: dict[str, Any]) -> nx.DiGraph:
    H = copy.deepcopy(G)
    H.graph["numerics"] = {
        "at": "the step after the capture's",
        "ops": 300,
        "copied_bytes": 1 << 20,
        "windows": 1,
        "tolerances": {"float16": [1e-2, 1e-3]},
        "outputs": [{"name": "output:logits", "difference": _difference()}],
        "first": {
            "index": 41,
            "output": 0,
            "op": "aten::mul",
            "module": "model.layers.0.mlp",
            "site": "step.py:12 in run",
            "nodes": [key],
            "difference": _difference(),
        },
        "differing_ops": 200,
        "compared": 250,
        "nodes_per_op_known": True,
        "notes": [],
        "seconds": 1.5,
    }
    H.graph["frozen"] = {"compared": 211, "frozen": [frozen_row], "unpaired": None}
    return H


def test_the_findings_name_the_first_differing_op_and_each_frozen_argument(
    llama: nx.DiGraph, tmp_path: Path
) -> None:
    key = _node_with(llama, lambda d: True)
    row = _frozen_row(key, module="model.layers.0.mlp", op="aten::mul", site="step.py:12 in run")
    H = _with_sections(llama, key, row)
    # through the bundle writer and reader, as capture leaves it
    path = graphscope.save(H, tmp_path / "planted.json.gz")
    H = graphscope.load(path)
    found = {f.code: f for f in findings(H)}
    differ = found["values-differ"]
    assert differ.severity == "warning" and differ.nodes == [key]
    assert "first at aten::mul in module model.layers.0.mlp (step.py:12 in run)" in differ.title
    assert differ.details[0].startswith(
        "first differs: op 41 [aten::mul in module model.layers.0.mlp]"
    )
    assert "3 of its 512 values differ (float16, max abs 0.75" in differ.details[0]
    assert "first at [0,17]: graph 1.5, eager 0.75" in differ.details[0]
    assert "200 of 250 op outputs compared differ" in differ.details[1]
    assert differ.details[2].startswith("output:logits: 3 of its 512 values differ")
    frozen = found["frozen-value"]
    assert frozen.nodes == [key]
    assert "as a float 7) in the graph, 1090519040 (as a float 8)" in frozen.details[0]
    assert read_frozen(H) is not None and read_frozen(H).frozen[0].later_int == 1090519040  # type: ignore[union-attr]
    first = H.graph["numerics"]["first"]
    assert first_difference_text(first).endswith(
        "eager 0.75"
    ) and f"at {key}" in first_difference_text(first)


def test_a_frozen_value_where_the_graph_matched_eager_is_told_as_info(llama: nx.DiGraph) -> None:
    """On the H100 a clean tiny-llama left a few 8-byte words that differed between the
    captures yet agreed among the later ones (host heap addresses in unfilled slots), while
    its values matched eager's: the finding then says so, as information."""
    key = _node_with(llama, lambda d: True)
    H = _with_sections(llama, key, _frozen_row(key))
    assert {f.code: f for f in findings(H)}["frozen-value"].severity == "warning"
    H.graph["numerics"].update(first=None, differing_ops=0, outputs=[{"name": "x"}])
    frozen = {f.code: f for f in findings(H)}["frozen-value"]
    assert frozen.severity == "info" and frozen.nodes == [key]
    assert frozen.title.endswith("yet the graph's values matched eager's at the step compared")
    assert "bytes the kernel never reads" in frozen.why
    H.graph["numerics"] = {"error": "not compared"}  # no evidence either way
    assert {f.code: f for f in findings(H)}["frozen-value"].severity == "warning"


def test_an_error_in_either_comparison_is_said_not_raised(llama: nx.DiGraph) -> None:
    H = copy.deepcopy(llama)
    H.graph["numerics"] = {"error": "the step with every op's outputs copied could not be captured"}
    H.graph["frozen"] = {"error": "the step could not be captured a step later"}
    found = {f.code: f for f in findings(H)}
    assert found["values-not-compared"].severity == "info"
    assert "could not be captured" in found["values-not-compared"].why
    assert found["frozen-not-compared"].severity == "info"
    assert not {"values-differ", "frozen-value", "rebound-input"} & set(found)


@pytest.mark.parametrize(
    ("section", "value", "said"),
    [
        ("numerics", {"first": {"index": 1}}, "metadata.numerics.first.output"),
        # found by fuzzing the sections: a difference without max_rel reached the findings
        (
            "numerics",
            {
                "outputs": [
                    {
                        "name": "x",
                        "difference": {
                            "dtype": "float16",
                            "shape": [1],
                            "max_abs": 1.0,
                            "count": 1,
                            "first_index": [0],
                            "graph_value": "1",
                            "eager_value": "0",
                        },
                    }
                ]
            },
            "difference.max_rel",
        ),
        (
            "numerics",
            {"outputs": [{"name": "x", "difference": {"dtype": 3}}]},
            "numerics.outputs[0]",
        ),
        (
            "frozen",
            {"frozen": [_frozen_row("graph_1_node_1", captured="zz")]},
            "metadata.frozen.frozen[0].captured",
        ),
        (
            "frozen",
            {"frozen": [_frozen_row("graph_1_node_1", kind="other")]},
            "metadata.frozen.frozen[0].kind",
        ),
    ],
)
def test_a_bundle_with_sections_of_the_wrong_shape_is_refused_by_name(
    llama: nx.DiGraph, tmp_path: Path, section: str, value: Any, said: str
) -> None:
    path = graphscope.save(llama, tmp_path / "ok.json.gz")
    data = json.loads(gzip.decompress(path.read_bytes()))
    data["metadata"][section] = value
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(gzip.compress(json.dumps(data).encode()))
    with pytest.raises(InputError) as caught:
        graphscope.load(bad)
    assert str(bad) in str(caught.value) and said in str(caught.value)


def test_the_node_panel_says_what_the_comparison_found_at_its_node(llama: nx.DiGraph) -> None:
    pytest.importorskip("dash")
    from dash_tree import by_id
    from dash_tree import text as shown_text
    from graphscope.app.render.panel import node_panel

    key = _node_with(llama, lambda d: True)
    row = _frozen_row(key)
    H = _with_sections(llama, key, row)
    shown = shown_text(node_panel(H, key))
    assert "Graph against eager" in shown
    assert "the graph's values first differ from eager's here: op 41" in shown
    assert "argument 2 is 1088421888 (as a float 7) in the graph" in shown
    other = next(k for k in H if k != key)
    assert "Graph against eager" not in shown_text(node_panel(H, other))

    def listed(G: nx.DiGraph) -> Any:
        return by_id(node_panel(G, key), "node-against-eager")

    assert listed(H).className == "error"
    # where the graph's values matched eager's, the frozen word is told, not raised
    H.graph["numerics"].update(first=None, differing_ops=0, outputs=[{"name": "x"}])
    calm = listed(H)
    assert calm.className == "" and "may be bytes the kernel never reads" in shown_text(calm)
    # a pointer the step rebinds is raised whatever the values did, as its finding is
    H.graph["frozen"]["frozen"][0].update(kind="pointer", buffer="input:x")
    assert listed(H).className == "error"


def test_a_word_that_differs_between_two_captures_of_one_step_is_left_out(
    llama: nx.DiGraph,
) -> None:
    """Offset tables hold slots nothing writes (on the H100, host stack addresses in unused
    slots of an elementwise kernel's argument): they differ from capture to capture. The later
    step captured twice tells them from a value the graph froze."""
    key = _node_with(llama, lambda d: d["args"] and d["args"][0]["size"] == 4)
    later, again = copy.deepcopy(llama), copy.deepcopy(llama)
    _set_word(later.nodes[key], 0, 0, "02000000")
    _set_word(again.nodes[key], 0, 0, "03000000")  # unsteady: another value each capture
    report = frozen_values(llama, later, [again])
    assert report.frozen == [] and report.unsteady == 1
    steady = copy.deepcopy(later)  # the same value in both later captures: frozen
    report = frozen_values(llama, later, [steady])
    assert [f.node for f in report.frozen] == [key] and report.unsteady == 0
    # A second capture of another shape says nothing about steadiness: the word stays.
    shorter = copy.deepcopy(again)
    shorter.remove_node(next(iter(shorter)))
    assert [f.node for f in frozen_values(llama, later, [shorter]).frozen] == [key]
    # Several captures again (at other depths of the host's stack): a word that any of them
    # sees otherwise is unsteady; one of another shape among them is passed over.
    report = frozen_values(llama, later, [shorter, steady, again])
    assert report.frozen == [] and report.unsteady == 1
    assert [f.node for f in frozen_values(llama, later, [steady, steady]).frozen] == [key]
    # A word the later captures all agree on, but the first step captured again does not (it
    # points at a host object made once after the first capture): unsteady too.
    first_again = copy.deepcopy(llama)
    _set_word(first_again.nodes[key], 0, 0, "05000000")
    report = frozen_values(llama, later, [steady], [first_again])
    assert report.frozen == [] and report.unsteady == 1
    report = frozen_values(llama, later, [steady], [copy.deepcopy(llama)])
    assert [f.node for f in report.frozen] == [key]
    # On a node of the first op whose values differ from eager's, with no steady word, the
    # unsteady word stays: a step that does not reset its Python counter captures another
    # value each time.
    report = frozen_values(llama, later, [again], [first_again], differing={key})
    assert [f.node for f in report.frozen] == [key] and report.unsteady == 0
    report = frozen_values(llama, later, [again], [first_again], differing={"graph_9_node_9"})
    assert report.frozen == [] and report.unsteady == 1
    # Where a steady word explains that node, its unsteady words (unfilled slots) stay out.
    pointers = {(p["arg"], p["offset"]) for p in llama.nodes[key].get("pointers") or []}
    wide, at = next(
        (i, o)
        for i, arg in enumerate(llama.nodes[key]["args"])
        if i > 0 and arg["size"] >= 16
        for o in range(0, arg["size"] - 7, 8)
        if (i, o) not in pointers
    )
    later2, again2 = copy.deepcopy(later), copy.deepcopy(later)  # argument 0 steady at 2
    _set_word(later2.nodes[key], wide, at, "11" * 8)
    _set_word(again2.nodes[key], wide, at, "22" * 8)
    report = frozen_values(llama, later2, [again2], [copy.deepcopy(llama)], differing={key})
    assert [(f.arg, f.offset) for f in report.frozen] == [(0, 0)] and report.unsteady == 1


def test_a_pointer_to_a_new_buffer_at_each_capture_is_no_unsteady_word(
    llama: nx.DiGraph,
) -> None:
    """A step that binds its next input as a new tensor reads another buffer at each capture
    of the same step (each is allocated afresh): on the H100 the captures made to find
    unsteady words hid the finding. A pointer into held memory in both is the finding."""
    reads = _node_with(
        llama,
        lambda d: any(p.get("buffer", "").startswith("input:") for p in d.get("pointers") or []),
    )
    pointer = next(
        p for p in llama.nodes[reads]["pointers"] if p.get("buffer", "").startswith("input:")
    )
    later, again = copy.deepcopy(llama), copy.deepcopy(llama)
    for G, moved in ((later, 4096), (again, 8192)):
        word = (pointer["address"] + moved).to_bytes(8, "little").hex()
        _set_word(G.nodes[reads], pointer["arg"], pointer["offset"], word)
    [frozen] = frozen_values(llama, later, [again]).frozen
    assert (frozen.node, frozen.kind, frozen.buffer) == (reads, "pointer", pointer["buffer"])
    # the same word where the later captures name no memory for it: unsteady
    for G in (later, again):
        G.nodes[reads]["pointers"] = [q for q in G.nodes[reads]["pointers"] if q != pointer]
    report = frozen_values(llama, later, [again])
    assert report.frozen == [] and report.unsteady == 1


def test_an_empty_functors_byte_is_no_frozen_value(llama: nx.DiGraph) -> None:
    """PyTorch's elementwise kernels take their functor by value; a lambda that captures
    nothing is one byte nothing writes (0x90 at one capture, 0x00 at the next on the H100).
    A one-byte argument that reads as a bool is still compared."""
    key = _node_with(llama, lambda d: d["args"] and d["args"][0]["size"] == 4)
    G = copy.deepcopy(llama)
    args = copy.deepcopy(G.nodes[key]["args"])
    args.append({"offset": args[-1]["offset"] + args[-1]["size"], "size": 1, "value": "90"})
    G.nodes[key]["args"] = args
    later = copy.deepcopy(G)
    _set_word(later.nodes[key], len(args) - 1, 0, "00")
    assert frozen_values(G, later).frozen == []
    _set_word(G.nodes[key], len(args) - 1, 0, "01")
    [flag] = frozen_values(G, later).frozen
    assert (flag.arg, flag.captured, flag.later) == (len(args) - 1, "01", "00")


def test_a_capture_again_is_made_deeper_on_the_stack() -> None:
    """The further captures of the later step run under more frames, each entered from C (a
    struct's unwritten slots then hold other bytes); what they return comes back whole."""
    import sys

    from graphscope.capture.numerics import AGAIN_DEPTHS, at_depth

    def depth(extra: int) -> tuple[int, int]:
        frame, n = sys._getframe(), 0
        while frame is not None:
            frame, n = frame.f_back, n + 1
        return n, extra

    here, _ = depth(0)
    for levels in AGAIN_DEPTHS:
        there, extra = at_depth(levels, depth, 7)
        assert extra == 7 and there >= here + 2 * levels


def test_a_capture_again_with_the_heap_moved_gets_other_blocks() -> None:
    """The second further capture runs with the small blocks the allocator would hand back
    taken: a temporary made inside lives elsewhere (its address, left in a struct's unwritten
    slot, then differs)."""
    import ctypes

    from graphscope.capture.numerics import heap_moved

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]

    def temporary() -> int:
        block = libc.malloc(48)
        libc.free(block)
        return int(block)

    outside = temporary()
    assert temporary() == outside  # the same block back, along the same path
    inside = heap_moved(temporary)
    assert inside != outside


def test_a_word_frozen_in_many_launches_of_one_kernel_is_one_line() -> None:
    """A length passed to every layer's launch is frozen in each: one line names the first
    launch's values and the other launches, up to GROUP_NODES of them."""

    def row(node: str, later: str = "08000000", arg: int = 2) -> Frozen:
        return Frozen(node, "attention_kernel", arg, 0, 4, "07000000", later, "value")

    layers = [row(f"graph_1_node_{i}") for i in range(10)]
    lines = grouped_lines([*layers, row("graph_1_node_99", arg=3)])
    assert len(lines) == 2
    assert lines[0].startswith("graph_1_node_0 attention_kernel: argument 2 is 7 in the graph")
    assert "; the same word of 9 more launch(es) of this kernel, with the same values: " in lines[0]
    named = [f"graph_1_node_{i}" for i in range(1, 1 + GROUP_NODES)]
    assert lines[0].endswith(", ".join(named) + f" and {9 - GROUP_NODES:,} more")
    assert lines[1] == row("graph_1_node_99", arg=3).said()
    mixed = grouped_lines([row("a"), row("b", later="09000000")])
    assert mixed == [
        row("a").said() + "; the same word of 1 more launch(es) of this kernel, "
        "with other values: b"
    ]
