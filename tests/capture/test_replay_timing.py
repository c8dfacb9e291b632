"""Joining replay activity records to nodes, and their statistics (no GPU)."""

from __future__ import annotations

import random

import pytest
from graphscope.capture.pointers import PointerMap, Region

from graphscope.analysis.replay import busy_ns, percentile, replay_timing, summarize_replays

EXEC = 7 << 32  # records carry (graph_exec_id << 32) | local_id


def _records(replays: int, shuffle: bool) -> list[dict[str, int]]:
    # Three kernels a replay: node 0 then nodes 1 and 2 in parallel; replays 1000 ns apart.
    out = []
    for r in range(replays):
        base = 10_000 + r * 1000
        out.append({"graph_node_id": EXEC | 0, "start": base, "end": base + 100})
        out.append({"graph_node_id": EXEC | 1, "start": base + 100, "end": base + 300 + r})
        out.append({"graph_node_id": EXEC | 2, "start": base + 150, "end": base + 250})
    if shuffle:
        random.Random(0).shuffle(out)
    return out


@pytest.mark.parametrize("shuffle", [False, True])
def test_records_join_by_node_id_not_by_order(shuffle: bool) -> None:
    keys = {0: "g_n0", 1: "g_n1", 2: "g_n2", 3: "g_n3"}
    timing = replay_timing(_records(5, shuffle), keys, 5, cpu_launch_ns=[4000] * 5)
    assert set(timing.nodes) == {"g_n0", "g_n1", "g_n2"}
    assert timing.missing == ["g_n3"]
    n1 = timing.nodes["g_n1"]
    assert n1["count"] == 5
    assert n1["min_us"] == pytest.approx(0.2) and n1["max_us"] == pytest.approx(0.204)
    assert n1["median_us"] == pytest.approx(0.202)
    assert n1["start_us"] == pytest.approx(0.1)
    assert timing.nodes["g_n2"]["start_us"] == pytest.approx(0.15)
    first = timing.replays[0]
    assert first["gpu_span_us"] == pytest.approx(0.3)
    assert first["gpu_busy_us"] == pytest.approx(0.3)  # node 2 overlaps node 1
    assert first["cpu_launch_us"] == pytest.approx(4.0)
    assert summarize_replays(timing)["gpu_span_us"] == pytest.approx(0.302)


def test_records_of_other_graphs_are_counted_not_joined() -> None:
    records = [*_records(2, False), {"graph_node_id": EXEC | 99, "start": 1, "end": 2}]
    timing = replay_timing(records, {0: "a", 1: "b", 2: "c"}, 2)
    assert timing.unjoined == 1


def test_busy_time_merges_overlaps_and_keeps_gaps() -> None:
    assert busy_ns([(0, 10), (5, 15), (20, 30)]) == 25
    assert busy_ns([]) == 0


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90) == pytest.approx(9.1)
    with pytest.raises(ValueError):
        percentile([], 50)


def test_pointer_map_finds_pointers_inside_struct_arguments() -> None:
    pointers = PointerMap(
        [Region(0x1000, 0x1100, "input:tokens"), Region(0x2000, 0x3000, "param:wte.weight")],
        [Region(0x1000, 0x8000, "segment 0 (large)")],
    )
    tensor_info = (0x2010).to_bytes(8, "little") + (3).to_bytes(8, "little")
    args = [
        {"value": (0x1004).to_bytes(8, "little").hex()},
        {"value": tensor_info.hex()},
        {"value": (0x9000).to_bytes(8, "little").hex()},
    ]
    found = pointers.scan(args)
    assert [(f["arg"], f["offset"], f.get("buffer")) for f in found] == [
        (0, 0, "input:tokens"),
        (1, 0, "param:wte.weight"),
    ]
    assert found[1]["buffer_offset"] == 0x10 and found[1]["segment"] == "segment 0 (large)"
