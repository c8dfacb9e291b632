"""The recorder's worker waits while the program captures a graph (State.give_way)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from graphscope.capture.record import state
from graphscope.capture.record.recorder import Recorder
from graphscope.capture.record.state import State

from graphscope import pace


class FakeTime:
    """``time`` as give_way sees it: the clock moves on only while the worker waits."""

    def __init__(self) -> None:
        self.ns = 0
        self.waited_s = 0.0
        self.wakes = 0

    def perf_counter_ns(self) -> int:
        return self.ns


class FakeEvent:
    """The event give_way waits on, waiting on the fake clock: each wait runs its timeout out,
    unless the event is set."""

    def __init__(self, clock: FakeTime) -> None:
        self.clock = clock
        self.flag = False

    def set(self) -> None:
        self.flag = True

    def clear(self) -> None:
        self.flag = False

    def wait(self, timeout: float) -> bool:
        self.clock.wakes += 1
        if not self.flag:
            self.clock.waited_s += timeout
            self.clock.ns += round(timeout * 1e9)
        return self.flag


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(state, "time", fake)
    return fake


def _state(tmp_path: Path, clock: FakeTime) -> State:
    rec = State(tmp_path)
    rec._capture_ended = FakeEvent(clock)  # type: ignore[assignment]
    return rec


def test_no_capture_no_wait(tmp_path: Path, clock: FakeTime) -> None:
    rec = _state(tmp_path, clock)
    rec.give_way()
    assert clock.waited_s == 0 and clock.wakes == 0


def test_the_worker_waits_until_the_capture_ends_without_polling(
    tmp_path: Path, clock: FakeTime
) -> None:
    rec = _state(tmp_path, clock)
    rec.captures_running = lambda: int(clock.ns < 0.2e9)
    rec.give_way()
    assert clock.ns >= 0.2e9
    assert clock.waited_s == pytest.approx(0.2, abs=state.GIVE_WAY_WAKE_S)
    # Woken a few times a second at most: a worker that woke every millisecond took the GIL
    # from the capturing thread at each of torch's ops.
    assert clock.wakes <= 0.2 / state.GIVE_WAY_WAKE_S + 1


def _waiting_worker(rec: State) -> threading.Thread:
    """A worker in give_way, once it waits on the capture's end."""
    entered = threading.Event()

    class Ended(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            entered.set()
            return super().wait(timeout)

    rec._capture_ended = Ended()
    worker = threading.Thread(target=rec.give_way, daemon=True)
    worker.start()
    assert entered.wait(30)
    return worker


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """give_way would wait 10 minutes unless woken."""
    monkeypatch.setattr(state, "GIVE_WAY_S", 600.0)
    monkeypatch.setattr(state, "GIVE_WAY_WAKE_S", 600.0)


def test_the_capture_s_end_wakes_the_worker(tmp_path: Path, patient: None) -> None:
    rec = State(tmp_path)
    running = [1]
    rec.captures_running = lambda: running[0]
    worker = _waiting_worker(rec)
    running[0] = 0
    rec.capture_ended()
    worker.join(10)
    assert not worker.is_alive()


def test_finish_wakes_a_worker_giving_way_to_a_capture_left_open(
    tmp_path: Path, patient: None
) -> None:
    rec = Recorder(tmp_path)
    rec.inputs.collect = lambda lives: False  # type: ignore[method-assign]  # reads through the driver
    rec.captures_running = lambda: 1  # a capture its thread never ended
    worker = _waiting_worker(rec)
    rec.finish()
    worker.join(10)
    assert not worker.is_alive()


def test_a_capture_that_never_ends_holds_the_worker_back_only_so_long(
    tmp_path: Path, clock: FakeTime
) -> None:
    rec = _state(tmp_path, clock)
    rec.captures_running = lambda: 1
    rec.give_way()
    rec.give_way()  # the same stretch of captures: its allowance is spent
    assert clock.waited_s == pytest.approx(state.GIVE_WAY_S, abs=state.GIVE_WAY_WAKE_S)
    rec.captures_running = lambda: 0
    rec.give_way()  # the stretch ended: the next one gets the whole allowance again
    rec.captures_running = lambda: 1
    before = clock.waited_s
    rec.give_way()
    assert clock.waited_s - before == pytest.approx(state.GIVE_WAY_S, abs=state.GIVE_WAY_WAKE_S)


def test_a_stopping_recorder_does_not_wait(tmp_path: Path, clock: FakeTime) -> None:
    rec = _state(tmp_path, clock)
    rec.captures_running = lambda: 1
    rec.stopped = True  # finish() builds what is left on the program's thread, at exit
    rec.give_way()
    assert clock.waited_s == 0


def test_the_worker_s_long_loops_give_way_and_the_program_s_do_not(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    ran = threading.Event()
    calls: list[str] = []

    def tick() -> None:
        list(pace.paced(range(pace.EVERY)))  # a loop the worker runs: a build's
        ran.set()
        rec.stopped = True

    rec.give_way = lambda: calls.append(threading.current_thread().name)  # type: ignore[method-assign]
    rec._tick = tick  # type: ignore[method-assign]
    worker = threading.Thread(target=rec._run, name="worker")
    worker.start()
    rec._wake.set()
    assert ran.wait(5)
    worker.join(5)
    list(pace.paced(range(pace.EVERY)))  # the same loop on this thread: no hook here
    assert calls == ["worker"]
    assert rec.captures_running() == rec.graphs.capturing == 0


def test_a_tick_waits_for_the_capture_before_it_writes_the_index(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    rec.graphs.capturing = 1
    rec.dirty = True
    rec.index_written_ns = 0
    seen: list[tuple[str, int]] = []

    def give_way() -> None:
        seen.append(("gave way", rec.graphs.capturing))
        rec.graphs.capturing = 0  # the capture ends while the worker waits

    rec.give_way = give_way  # type: ignore[method-assign]
    rec.write_index = lambda ended=False: seen.append(("index", rec.graphs.capturing))  # type: ignore[method-assign]
    rec._tick()
    assert seen[0] == ("gave way", 1)
    assert ("index", 0) in seen
    assert ("index", 1) not in seen
