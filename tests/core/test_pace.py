"""Pause points in the loops that grow with a graph (graphscope.pace)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import graphscope
from graphscope import pace
from graphscope.dotparse import parse_dot

DEEP_DOT = Path(__file__).parents[2] / "samples/large/recordings/deep-decoder/pid744/g2.dot"


def test_without_a_hook_the_iterable_comes_back_as_it_is() -> None:
    items = [1, 2, 3]
    assert pace.paced(items) is items
    pace.point()  # no hook: nothing to call, nothing raised


def test_a_hook_is_called_every_so_many_items_and_every_item_still_comes() -> None:
    calls: list[int] = []
    with pace.giving_way(lambda: calls.append(1)):
        items = list(pace.paced(range(3 * pace.EVERY + 5)))
    assert items == list(range(3 * pace.EVERY + 5))
    assert len(calls) == 3
    assert pace.paced(items) is items  # the hook is gone with the block


def test_the_hook_is_the_setting_thread_s_alone() -> None:
    calls: list[str] = []
    seen_elsewhere: list[bool] = []
    entered, checked = threading.Event(), threading.Event()

    def other() -> None:
        entered.wait()
        seen_elsewhere.append(pace.paced([1]) == [1] and isinstance(pace.paced([1]), list))
        pace.point()
        checked.set()

    thread = threading.Thread(target=other)
    thread.start()
    with pace.giving_way(lambda: calls.append(threading.current_thread().name)):
        entered.set()
        checked.wait()
        pace.point()
    thread.join()
    assert seen_elsewhere == [True]
    assert calls == [threading.current_thread().name]


def test_parsing_building_and_saving_a_deep_graph_reach_pause_points(tmp_path: Path) -> None:
    text = DEEP_DOT.read_text()
    calls = {"parse": 0, "load": 0, "save": 0}
    stage = "parse"

    def hook() -> None:
        calls[stage] += 1

    with pace.giving_way(hook):
        parse_dot(text, DEEP_DOT)
        stage = "load"
        G = graphscope.load(DEEP_DOT)
        stage = "save"
        graphscope.save(G, tmp_path / "g.json.gz")
    nodes = G.number_of_nodes()
    assert nodes > 10_000
    # the parser: a point every EVERY statements (nodes and edges); the load parses and then
    # builds the graph; the save builds the bundle's document node by node
    assert calls["parse"] >= nodes // pace.EVERY
    assert calls["load"] >= calls["parse"] + 2 * (nodes // pace.EVERY)
    assert calls["save"] >= nodes // pace.EVERY
    assert graphscope.load(tmp_path / "g.json.gz").number_of_nodes() == nodes


def _mixed() -> dict[str, object]:
    """A value with the shapes a bundle has, and some it does not."""
    rows = [
        [i, f"k{i}", i / 7, None, i % 2 == 0, {"x": [i, "é"]}] for i in range(3 * pace.EVERY + 9)
    ]
    many = {f"n{i}": {"replay": [i, i + 0.5]} for i in range(pace.EVERY + 3)}
    return {
        "nodes": {"shapes": [{"fields": ["a"]}], "rows": rows},
        "edges": [[f"k{i}", f"k{i + 1}"] for i in range(2 * pace.EVERY)],
        "many": many,
        "numbered": {1: "a", 2: ["b"]},  # keys json.dumps makes into strings
        "empty": {},
        "none": [],
        "deep": {"a": {"b": {"c": {"d": {"e": list(range(pace.EVERY + 1))}}}}},
        "text": 'quote " and \\ and ✓',
    }


def test_dumps_writes_json_dumps_s_text_with_or_without_a_hook() -> None:
    value = _mixed()
    expected = json.dumps(value, separators=(",", ":"), allow_nan=False)
    assert pace.dumps(value) == expected
    calls: list[int] = []
    with pace.giving_way(lambda: calls.append(1)):
        assert pace.dumps(value) == expected
    # rows in 4 pieces, edges in 2, the many-keyed dict in 2; "deep" is past the depth looked into
    assert len(calls) == 4 + 2 + 2


def test_dumps_of_a_real_bundle_is_json_dumps_s_text_in_pieces() -> None:
    doc = graphscope.bundle.to_document(graphscope.load(DEEP_DOT))
    calls: list[int] = []
    with pace.giving_way(lambda: calls.append(1)):
        text = pace.dumps(doc)
    assert text == json.dumps(doc, separators=(",", ":"), allow_nan=False)
    assert len(calls) >= len(doc["nodes"]["rows"]) // pace.EVERY


def test_dumps_refuses_what_json_dumps_refuses() -> None:
    with pace.giving_way(lambda: None):
        for bad in ({"x": [float("nan")] * (pace.EVERY + 1)}, {"x": object()}):
            try:
                pace.dumps(bad)
            except (TypeError, ValueError):
                continue
            raise AssertionError(f"{bad!r:.40} was encoded")
