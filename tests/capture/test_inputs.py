"""The input observer (capture/record/inputs.py) on a stand-in driver: which launches are
sampled, what is compared, and which blocks are filed as unchanged."""

from __future__ import annotations

import ctypes
from typing import Any

import networkx as nx
import pytest

from capture.record import inputs
from capture.record.blocks import Block, Watch
from capture.record.inputs import MIN_SAMPLES, InputCheck
from capture.record.lives import Life


class Device:
    """Device memory as byte arrays by first byte, and a driver that copies out of it."""

    def __init__(self) -> None:
        self.memory: dict[int, bytearray] = {}
        self.buffers: list[Any] = []
        self.copies: list[tuple[int, int, int]] = []  # (device, bytes, stream)
        self.recorded: list[tuple[int, int]] = []
        self.finished = True  # whether recorded events are done when asked
        self.fail_copy = False
        self.freed: list[int] = []

    def host(self, nbytes: int) -> tuple[int, memoryview]:
        buffer = ctypes.create_string_buffer(nbytes)
        self.buffers.append(buffer)
        return ctypes.addressof(buffer), memoryview(buffer).cast("B")

    def free(self, host: int) -> None:
        self.freed.append(host)

    def event(self) -> int:
        return 1000 + len(self.recorded)

    def copy(self, host: int, device: int, nbytes: int, stream: int) -> None:
        if self.fail_copy:
            raise RuntimeError("cuMemcpyDtoHAsync failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)")
        data = bytes(self.memory[device][:nbytes])
        ctypes.memmove(host, data, nbytes)
        self.copies.append((device, nbytes, stream))

    def record(self, event: int, stream: int) -> None:
        self.recorded.append((event, stream))

    def done(self, event: int) -> bool:
        return self.finished


class Rec:
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.torch = None

    def since_s(self, ns: int) -> float:
        return ns / 1e9

    def note(self, text: str) -> None:
        self.notes.append(text)


def _life(blocks: dict[int, int]) -> tuple[Life, dict[int, Watch]]:
    """A read graph whose node i points into the i-th block (first byte -> size)."""
    G = nx.DiGraph()
    watched = {}
    for i, (start, size) in enumerate(blocks.items()):
        G.add_node(
            f"graph_1_node_{i}",
            type="KERNEL",
            short_name=f"kernel{i}",
            attribution={"module": "embed"} if i == 0 else {},
        )
        watched[start] = Watch(Block(start, size, True, (0, 0)), [f"graph_1_node_{i}"], 1)
    life = Life("graph_1", 1, 1, None, 0, None)
    life.graph = G
    return life, watched


def _arm(check: InputCheck, device: Device, blocks: dict[int, int]) -> Life:
    """A graph reading ``blocks``, put in ``device``'s memory, armed in ``check``."""
    for start, size in blocks.items():
        device.memory[start] = bytearray(size)
    life, watched = _life(blocks)
    check.arm(life, watched)
    return life


def _armed(device: Device, blocks: dict[int, int]) -> tuple[InputCheck, Life]:
    check = InputCheck(Rec(), device)  # type: ignore[arg-type]
    return check, _arm(check, device, blocks)


def _launch(check: InputCheck, life: Life, at_s: float, stream: int = 7) -> None:
    life.replays += 1
    assert life.inputs is not None
    now = int(at_s * 1e9)
    if check.due(life.inputs, now):
        check.sample(life.inputs, stream, life.replays, now)
    check.collect([life])


def test_a_block_nothing_writes_is_filed_and_one_written_each_step_is_not() -> None:
    device = Device()
    check, life = _armed(device, {0x1000: 16, 0x2000: 32})
    for step in range(40):
        device.memory[0x2000][0] = step % 256  # the program copies a new position in
        _launch(check, life, step * 0.01)
    (found,) = check.as_list([life])
    assert found["graph"] == "graph_1" and found["address"] == 0x1000 and found["bytes"] == 16
    assert found["buffer"] == "block 0x1000 (16 bytes)"
    assert found["nodes"] == ["graph_1_node_0"] and found["kernels"] == ["kernel0 in module embed"]
    # launches 1, 2, 4, 8, 16 and 32 are sampled: powers of two within the first second
    assert found["samples"] == 6 and (found["first_replay"], found["last_replay"]) == (1, 32)
    assert found["first_s"] == 0.0 and found["last_s"] == pytest.approx(0.31)
    assert {d for d, _, _ in device.copies} == {0x1000, 0x2000}
    assert {s for _, _, s in device.copies} == {7}  # on the launch's stream
    assert check.coverage() == {"graphs": 1, "blocks": 2, "samples": 6, "graphs_unarmed": 0}


def test_collect_says_when_the_findings_change_and_only_then() -> None:
    """The worker rewrites the index for a new finding, not for every sample compared."""
    device = Device()
    check, life = _armed(device, {0x1000: 8})
    assert life.inputs is not None
    said = []
    for step in range(2 ** (MIN_SAMPLES + 1)):
        life.replays += 1
        if check.due(life.inputs, step):
            check.sample(life.inputs, 7, life.replays, step)
        said.append(check.collect([life]))
        if step == 2 ** (MIN_SAMPLES - 1):  # the block has just been filed; now it changes
            device.memory[0x1000][0] = 1
    # filed at the launch whose sample was the MIN_SAMPLES-th, unfiled at the next sample
    assert [i for i, x in enumerate(said) if x] == [2 ** (MIN_SAMPLES - 1) - 1, 2**MIN_SAMPLES - 1]
    assert check.as_list([life]) == []


def test_a_block_written_once_then_never_again_is_not_filed() -> None:
    device = Device()
    check, life = _armed(device, {0x1000: 8})
    for step in range(64):
        if step == 3:
            device.memory[0x1000][:] = b"\x01" * 8
        _launch(check, life, step * 0.01)
    assert check.as_list([life]) == []


def test_too_few_samples_file_nothing() -> None:
    device = Device()
    check, life = _armed(device, {0x1000: 8})
    for step in range(2 ** (MIN_SAMPLES - 2)):  # MIN_SAMPLES - 1 samples
        _launch(check, life, step * 0.01)
    assert life.inputs is not None and life.inputs.blocks[0].samples == MIN_SAMPLES - 1
    assert check.as_list([life]) == []


def test_past_the_powers_of_two_a_graph_is_sampled_once_a_second() -> None:
    device = Device()
    check, life = _armed(device, {0x1000: 8})
    for step in range(1000):  # 100 launches a second for 10 s, after 2**6 a sample a second
        _launch(check, life, 0.5 + step * 0.01)
    samples = life.inputs.blocks[0].samples  # type: ignore[union-attr]
    assert 8 + 9 <= samples <= 8 + 11, samples


def test_a_sample_in_flight_holds_its_slot_and_launches_meanwhile_are_not_sampled() -> None:
    device = Device()
    device.finished = False
    check, life = _armed(device, {0x1000: 8})
    for step in range(8):
        _launch(check, life, step * 0.01)
    assert check.samples == inputs.SLOTS  # both slots taken: launches 1 and 2
    device.finished = True
    check.collect([life])
    assert life.inputs is not None and all(not s.busy for s in life.inputs.slots)
    assert life.inputs.blocks[0].samples == inputs.SLOTS


def test_large_blocks_are_not_armed_and_the_pinned_budget_is_kept(monkeypatch: Any) -> None:
    device = Device()
    check, life = _armed(device, {0x1000: inputs.BLOCK_BYTES + 1})
    assert life.inputs is None and check.graphs == 0
    monkeypatch.setattr(inputs, "PINNED_BYTES", 3 * inputs.SLOTS * 1024)
    check = InputCheck(Rec(), device)  # type: ignore[arg-type]
    lives = [_arm(check, device, {0x10000 * (i + 1): 1024}) for i in range(4)]
    assert [life.inputs is not None for life in lives] == [True, True, True, False]
    assert check.coverage()["graphs_unarmed"] == 1


def test_a_graph_s_first_blocks_in_node_order_are_armed() -> None:
    device = Device()
    blocks = {0x1000 * (i + 1): 8 for i in range(inputs.BLOCKS_PER_GRAPH + 3)}
    _, life = _armed(device, dict(reversed(blocks.items())))
    assert life.inputs is not None
    armed = [b.start for b in life.inputs.blocks]
    # node i reads the i-th block of the reversed order: the highest addresses come first
    assert armed == sorted(blocks, reverse=True)[: inputs.BLOCKS_PER_GRAPH]


def test_a_block_filed_as_freed_is_read_no_more() -> None:
    device = Device()
    check, life = _armed(device, {0x1000: 8, 0x2000: 8})
    _launch(check, life, 0.0)
    life.blocks_filed.add(0x1000)  # by the worker's check_blocks, which a collect follows
    check.collect([life])
    del device.memory[0x1000]  # a copy of it would fail
    for step in range(1, 20):
        _launch(check, life, step * 0.01)
    assert [b.start for b in life.inputs.blocks] == [0x2000]  # type: ignore[union-attr]
    assert check.failed is None


def test_a_failed_driver_call_stops_sampling_once_with_a_note() -> None:
    device = Device()
    check, life = _armed(device, {0x1000: 8})
    device.fail_copy = True
    for step in range(10):
        _launch(check, life, step * 0.01)  # never raises into the program
    assert check.failed is not None and "ILLEGAL_ADDRESS" in check.failed
    assert len(check.rec.notes) == 1 and "no longer sampled" in check.rec.notes[0]  # type: ignore[attr-defined]
    assert check.coverage()["stopped"] == check.failed
    assert check.as_list([life]) == []


def test_a_slot_is_taken_before_the_driver_calls_and_asked_only_once_enqueued() -> None:
    """ctypes lets the GIL go during a driver call: a second thread's launch must not take the
    slot the first is filling, and the worker must not ask an event not yet recorded."""
    device = Device()
    check, life = _armed(device, {0x1000: 8})
    assert life.inputs is not None
    armed = life.inputs
    seen: list[tuple[bool, bool]] = []
    copy = device.copy

    def copy_and_look(host: int, start: int, nbytes: int, stream: int) -> None:
        # what another thread and the worker would see while this copy is under way
        seen.append((armed.slots[0].busy, armed.slots[0].in_flight))
        check.collect([life])
        copy(host, start, nbytes, stream)

    device.copy = copy_and_look  # type: ignore[method-assign]
    assert check.due(armed, 0)
    check.sample(armed, 7, 1, 0)
    assert seen == [(True, False)]  # taken, not yet asked
    assert armed.blocks[0].samples == 0  # the worker did not compare a sample in the making
    assert armed.slots[0].in_flight
    check.collect([life])
    assert armed.blocks[0].samples == 1 and not armed.slots[0].busy


def test_a_destroyed_graph_gives_its_pinned_memory_to_the_graphs_made_after_it(
    monkeypatch: Any,
) -> None:
    """A program that makes its graphs anew (a re-record each step, a server's new buckets)
    must not use the budget up with graphs gone: their findings stay, their memory goes."""
    monkeypatch.setattr(inputs, "PINNED_BYTES", inputs.SLOTS * 1024)  # room for one graph
    device = Device()
    check = InputCheck(Rec(), device)  # type: ignore[arg-type]
    armed = []
    for i in range(3):
        life = _arm(check, device, {0x10000 * (i + 1): 1024})
        assert life.inputs is not None, i  # each one armed: the one before gave its room back
        for step in range(8):
            _launch(check, life, step * 0.01)
        life.destroyed_ns = 1
        check.collect([life])
        assert life.inputs.slots == [] and check.pinned == 0
        armed.append(life)
    assert len(device.freed) == 3 * inputs.SLOTS
    # the findings of the graphs gone are still told
    assert [f["address"] for f in check.as_list(armed)] == [0x10000, 0x20000, 0x30000]
