"""The recorder's worker waits while the program captures a graph (State.give_way)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from graphscope.capture.record import state
from graphscope.capture.record.recorder import Recorder
from graphscope.capture.record.state import State

from graphscope import pace


def test_no_capture_no_wait(tmp_path: Path) -> None:
    rec = State(tmp_path)
    started = time.perf_counter()
    rec.give_way()
    assert time.perf_counter() - started < 0.05


def test_the_worker_waits_until_the_capture_ends(tmp_path: Path) -> None:
    rec = State(tmp_path)
    ends = time.perf_counter() + 0.2
    rec.captures_running = lambda: int(time.perf_counter() < ends)
    rec.give_way()
    assert time.perf_counter() >= ends


def test_a_capture_that_never_ends_holds_the_worker_back_only_so_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "GIVE_WAY_S", 0.2)
    rec = State(tmp_path)
    rec.captures_running = lambda: 1
    started = time.perf_counter()
    rec.give_way()
    rec.give_way()  # the same stretch of captures: its allowance is spent
    assert 0.2 <= time.perf_counter() - started < 0.4
    rec.captures_running = lambda: 0
    rec.give_way()  # the stretch ended: the next one gets the whole allowance again
    rec.captures_running = lambda: 1
    started = time.perf_counter()
    rec.give_way()
    assert time.perf_counter() - started >= 0.2


def test_a_stopping_recorder_does_not_wait(tmp_path: Path) -> None:
    rec = State(tmp_path)
    rec.captures_running = lambda: 1
    rec.stopped = True  # finish() builds what is left on the program's thread, at exit
    started = time.perf_counter()
    rec.give_way()
    assert time.perf_counter() - started < 0.05


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
