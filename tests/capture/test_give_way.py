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
    """``time`` as give_way sees it: sleeping moves the clock on, and nothing else does."""

    def __init__(self) -> None:
        self.ns = 0
        self.slept_s = 0.0

    def perf_counter_ns(self) -> int:
        return self.ns

    def sleep(self, seconds: float) -> None:
        self.slept_s += seconds
        self.ns += round(seconds * 1e9)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(state, "time", fake)
    return fake


def test_no_capture_no_wait(tmp_path: Path, clock: FakeTime) -> None:
    rec = State(tmp_path)
    rec.give_way()
    assert clock.slept_s == 0


def test_the_worker_waits_until_the_capture_ends(tmp_path: Path, clock: FakeTime) -> None:
    rec = State(tmp_path)
    rec.captures_running = lambda: int(clock.ns < 0.2e9)
    rec.give_way()
    assert clock.ns >= 0.2e9
    assert clock.slept_s == pytest.approx(0.2, abs=2 * state.GIVE_WAY_POLL_S)


def test_a_capture_that_never_ends_holds_the_worker_back_only_so_long(
    tmp_path: Path, clock: FakeTime
) -> None:
    rec = State(tmp_path)
    rec.captures_running = lambda: 1
    rec.give_way()
    rec.give_way()  # the same stretch of captures: its allowance is spent
    assert clock.slept_s == pytest.approx(state.GIVE_WAY_S, abs=2 * state.GIVE_WAY_POLL_S)
    rec.captures_running = lambda: 0
    rec.give_way()  # the stretch ended: the next one gets the whole allowance again
    rec.captures_running = lambda: 1
    before = clock.slept_s
    rec.give_way()
    assert clock.slept_s - before == pytest.approx(state.GIVE_WAY_S, abs=2 * state.GIVE_WAY_POLL_S)


def test_a_stopping_recorder_does_not_wait(tmp_path: Path, clock: FakeTime) -> None:
    rec = State(tmp_path)
    rec.captures_running = lambda: 1
    rec.stopped = True  # finish() builds what is left on the program's thread, at exit
    rec.give_way()
    assert clock.slept_s == 0


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
