"""The driver calls the program waits on at instantiation, made through ctypes
(``_cuda.libcuda``), driven here by a stand-in for libcuda: no GPU needed."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest
from graphscope.capture import _cuda, grab

from graphscope.errors import CaptureError


class _Driver:
    """Stands for libcuda: graph 7 has 12 nodes and clones into graph 0x5000."""

    def __init__(self) -> None:
        self.destroyed: list[int] = []
        self.fail = 0

    def cuGraphClone(self, out: Any, graph: int) -> int:
        if self.fail or graph != 7:
            return self.fail or 400  # CUDA_ERROR_INVALID_HANDLE
        out._obj.value = 0x5000  # what byref() points at
        return 0

    def cuGraphGetNodes(self, graph: int, nodes: Any, count: Any) -> int:
        assert nodes is None  # only the count is asked for
        count._obj.value = 12
        return 0 if graph == 7 else 400

    def cuGraphDestroy(self, graph: int) -> int:
        self.destroyed.append(graph)
        return 0

    def cuGetErrorName(self, code: int, name: Any) -> int:
        known = {400: b"CUDA_ERROR_INVALID_HANDLE", 2: b"CUDA_ERROR_OUT_OF_MEMORY"}
        if code not in known:
            return 1
        name._obj.value = known[code]
        return 0


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch) -> _Driver:
    fake = _Driver()
    monkeypatch.setattr(grab, "libcuda", lambda: fake)
    monkeypatch.setattr(_cuda, "libcuda", lambda: fake)
    return fake


def test_a_graph_is_counted_cloned_and_its_clone_destroyed(driver: _Driver) -> None:
    assert grab.node_count(7) == 12
    assert grab.clone(7) == 0x5000
    grab.destroy(0x5000)
    assert driver.destroyed == [0x5000]


def test_a_refused_call_is_one_error_naming_the_call_and_the_driver_error(driver: _Driver) -> None:
    with pytest.raises(
        CaptureError, match=r"cuGraphClone failed: CUDA_ERROR_INVALID_HANDLE \(400\)"
    ):
        grab.clone(8)
    driver.fail = 2
    with pytest.raises(CaptureError, match=r"CUDA_ERROR_OUT_OF_MEMORY \(2\)"):
        grab.clone(7)
    driver.fail = 999  # a code the driver has no name for
    with pytest.raises(CaptureError, match=r"cuGraphClone failed: CUresult 999 \(999\)"):
        grab.clone(7)
    with pytest.raises(CaptureError, match="cuGraphGetNodes failed"):
        grab.node_count(8)


def test_the_library_is_bound_with_its_signatures_where_a_driver_is_installed() -> None:
    try:
        lib = _cuda.libcuda()
    except OSError:
        pytest.skip("no CUDA driver on this machine")
    assert lib.cuGraphClone.argtypes[1] is ctypes.c_void_p
    assert lib.cuGraphGetNodes.restype is ctypes.c_int


class _InputDriver(_Driver):
    """Adds what the input observer calls: two contexts (one a device each), events in them."""

    def __init__(self) -> None:
        super().__init__()
        self.current = 0xC1
        self.events: dict[int, int] = {}  # event -> its context
        self.recorded: list[tuple[int, int]] = []
        self.copies: list[tuple[int, int, int, int]] = []
        self.not_ready: set[int] = set()

    def cuCtxGetCurrent(self, out: Any) -> int:
        out._obj.value = self.current
        return 0

    def cuCtxSetCurrent(self, context: Any) -> int:
        self.current = context.value
        return 0

    def cuEventCreate(self, out: Any, flags: int) -> int:
        assert flags == 2  # CU_EVENT_DISABLE_TIMING
        event = 0xE0 + len(self.events)
        self.events[event] = self.current
        out._obj.value = event
        return 0

    def cuMemcpyDtoHAsync_v2(self, host: int, device: int, nbytes: int, stream: int) -> int:
        self.copies.append((host, device, nbytes, stream))
        return 0

    def cuEventRecord(self, event: int, stream: int) -> int:
        self.recorded.append((event, stream))
        return 0

    def cuEventQuery(self, event: int) -> int:
        if self.events[event] != self.current:
            return 201  # CUDA_ERROR_INVALID_CONTEXT: asked under another device's context
        return 600 if event in self.not_ready else 0  # CUDA_ERROR_NOT_READY


def test_the_input_observer_asks_each_event_under_the_context_it_was_made_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from graphscope.capture.record.inputs import CudaDriver

    fake = _InputDriver()
    monkeypatch.setattr(_cuda, "libcuda", lambda: fake)
    driver = CudaDriver(torch=None)
    first = driver.event()  # at a launch on device 0
    fake.current = 0xC2
    second = driver.event()  # at a launch on device 1, another thread
    driver.copy(0x1000, 0x7F00, 512, 7)
    driver.record(second, 7)
    assert fake.copies == [(0x1000, 0x7F00, 512, 7)] and fake.recorded == [(second, 7)]
    fake.current = 0  # the worker's thread: no context of its own
    assert driver.done(first) and fake.current == 0xC1
    fake.not_ready.add(second)
    assert not driver.done(second) and fake.current == 0xC2
    fake.not_ready.clear()
    assert driver.done(second)
    fake.events[first] = 0xC3  # the context went away: an error, not a hang or a crash
    with pytest.raises(CaptureError, match=r"cuEventQuery failed: CUresult 201"):
        driver.done(first)
