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
