"""The process's one CUPTI subscriber, shared by attribution and recording.

CUPTI allows one subscriber per process (DESIGN.md): capture's node attribution, record's
graph grabbing, launch counting and capture tracking all register handlers here, per callback
domain and id, and the subscription lives while any handler does. A handler that raises is
passed to its ``on_error`` and never reaches CUPTI or the CUDA call that fired it.

The subscription is made through ctypes where libcupti can be found (``_cuda.libcupti``):
cupti-python builds numpy-backed objects for every callback, and a callback fires for every
node a capture creates and every graph launch. Handlers get a :class:`RawCallback`, which
reads the few fields they use in place, at the offsets of cupti-python's own layouts
(``callback_data_dtype``, ``resource_data_dtype``); elsewhere they get cupti-python's objects,
which have the same attributes.

cupti-python's ``CallbackData`` does not expose the API call's parameters; they are read with
ctypes from the C struct (``CUpti_CallbackData``: site, function name, then the pointer to the
call's parameter struct, then the pointer to its return value).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import threading
from collections.abc import Callable
from typing import Any

from graphscope.errors import CaptureError

from ._cuda import cupti, libcupti

Handler = Callable[[Any], None]
# Offsets in CUpti_CallbackData (cupti_callbacks.h, 64-bit): callbackSite (int, padded),
# functionName, functionParams, functionReturnValue.
_NAME_OFFSET, _PARAMS_OFFSET, _RETURN_OFFSET = 8, 16, 24


_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)
_CUPTI_SUCCESS = 0


@functools.cache
def _offsets() -> dict[str, int]:
    """Where the fields handlers read lie in CUPTI's callback structs (cupti-python's dtypes)."""
    api = cupti()
    calls, resources, graphs = (
        api.callback_data_dtype.fields,
        api.resource_data_dtype.fields,
        api.graph_data_dtype.fields,
    )
    return {
        "callback_site": calls["callback_site"][1],
        "correlation_id": calls["correlation_id"][1],
        "resource_descriptor": resources["resource_descriptor"][1],
        "graph": graphs["graph"][1],
        "node": graphs["node"][1],
        "graph_exec": graphs["graph_exec"][1],
    }


class RawCallback:
    """A callback's data as CUPTI passed it, read in place; valid during the callback only."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    @property
    def callback_site(self) -> int:
        return ctypes.c_int.from_address(self.ptr + _offsets()["callback_site"]).value

    @property
    def correlation_id(self) -> int:
        return ctypes.c_uint32.from_address(self.ptr + _offsets()["correlation_id"]).value

    @property
    def resource_descriptor(self) -> int:
        return _word(self.ptr + _offsets()["resource_descriptor"])


def graph_handles(cbdata: Any) -> tuple[int, int, int]:
    """``(graph, node, graph_exec)`` of a graph resource callback (``CUpti_GraphData``)."""
    base = int(cbdata.resource_descriptor)
    if not base:
        return 0, 0, 0
    at = _offsets()
    return _word(base + at["graph"]), _word(base + at["node"]), _word(base + at["graph_exec"])


class Subscriber:
    """Handlers by ``(domain, cbid)``; subscribes to CUPTI on the first, leaves on the last."""

    def __init__(self) -> None:
        self._handlers: dict[tuple[int, int], list[tuple[Handler, Callable[[BaseException], None]]]]
        self._handlers = {}
        self._handle: Any = None
        self._lib: ctypes.CDLL | None = None  # set while subscribed through ctypes
        self._raw: Any = None  # the ctypes callback, kept referenced while subscribed
        self._lock = threading.RLock()

    @property
    def active(self) -> bool:
        return self._handle is not None

    def _dispatch(self, userdata: Any, domain: Any, cbid: Any, cbdata: Any) -> None:
        for handler, on_error in self._handlers.get((int(domain), int(cbid)), ()):
            try:
                handler(cbdata)
            except BaseException as exc:  # never into CUPTI: it would end the CUDA call
                with contextlib.suppress(BaseException):
                    on_error(exc)

    def _dispatch_raw(self, userdata: Any, domain: int, cbid: int, data: Any) -> None:
        self._dispatch(None, domain, cbid, RawCallback(int(data or 0)))

    def _subscribe(self) -> None:
        api = cupti()
        refused = (
            "another profiler (torch.profiler, Nsight Systems) holds this process's one "
            "CUPTI subscriber"
        )
        lib = libcupti()
        if lib is None:
            try:
                self._handle = api.subscribe(self._dispatch, None)
            except api.cuptiError as exc:
                raise CaptureError(f"CUPTI refused a subscriber ({exc}): {refused}") from None
            return
        handle = ctypes.c_void_p()
        raw = _CALLBACK(self._dispatch_raw)
        status = lib.cuptiSubscribe(ctypes.byref(handle), raw, None)
        if status != _CUPTI_SUCCESS:
            raise CaptureError(f"CUPTI refused a subscriber (status {status}): {refused}")
        self._handle, self._lib, self._raw = handle, lib, raw

    def _enable(self, enable: bool, domain: int, cbid: int) -> None:
        api = cupti()
        if self._lib is None:
            api.enable_callback(int(enable), self._handle, domain, cbid)
            return
        status = self._lib.cuptiEnableCallback(
            ctypes.c_uint32(int(enable)), self._handle, ctypes.c_int(domain), ctypes.c_uint32(cbid)
        )
        if status != _CUPTI_SUCCESS:
            raise OSError(f"cuptiEnableCallback returned {status}")

    def on(
        self,
        domain: int,
        cbid: int,
        handler: Handler,
        on_error: Callable[[BaseException], None],
    ) -> None:
        """Call ``handler(cbdata)`` for each callback of ``(domain, cbid)``.

        Raises CaptureError when CUPTI refuses the subscription, most often because another
        client (torch.profiler, Nsight Systems) holds the process's one subscriber.
        """
        with self._lock:
            if self._handle is None:
                self._subscribe()
            key = (int(domain), int(cbid))
            first = key not in self._handlers
            self._handlers.setdefault(key, []).append((handler, on_error))
            if first:
                try:
                    self._enable(True, int(domain), int(cbid))
                except Exception as exc:
                    self._handlers.pop(key, None)
                    self._leave_if_idle()
                    raise CaptureError(
                        f"CUPTI refused callback {cbid} of domain {domain}: {exc}"
                    ) from None

    def off(self, domain: int, cbid: int, handler: Handler) -> None:
        """Stop calling ``handler``; the subscription ends with its last handler."""
        with self._lock:
            key = (int(domain), int(cbid))
            kept = [h for h in self._handlers.get(key, []) if h[0] != handler]
            if kept:
                self._handlers[key] = kept
            elif key in self._handlers:
                del self._handlers[key]
                if self._handle is not None:
                    with contextlib.suppress(Exception):
                        self._enable(False, int(domain), int(cbid))
            self._leave_if_idle()

    def _leave_if_idle(self) -> None:
        if not self._handlers and self._handle is not None:
            handle, self._handle = self._handle, None
            lib, self._lib = self._lib, None
            with contextlib.suppress(Exception):
                if lib is None:
                    cupti().unsubscribe(handle)
                else:
                    lib.cuptiUnsubscribe(handle)
            # The ctypes callback stays referenced: CUPTI may still be inside it on another
            # thread as the subscription ends.


_subscriber: Subscriber | None = None


def subscriber() -> Subscriber:
    """The process's subscriber."""
    global _subscriber
    if _subscriber is None:
        _subscriber = Subscriber()
    return _subscriber


def _word(address: int) -> int:
    return ctypes.c_uint64.from_address(address).value


def params_address(cbdata: Any) -> int:
    """The address of an API callback's parameter struct (``functionParams``)."""
    return _word(int(cbdata.ptr) + _PARAMS_OFFSET)


def param_words(cbdata: Any, count: int) -> list[int]:
    """The first ``count`` 8-byte words of the call's parameter struct.

    Every call graphscope watches takes handles and pointers first (``cudaGraphLaunch``:
    exec, stream; ``cudaStreamEndCapture``: stream, graph pointer), each one word.
    """
    base = params_address(cbdata)
    return [_word(base + 8 * i) for i in range(count)] if base else [0] * count


def return_code(cbdata: Any) -> int | None:
    """The API call's return value (CUresult or cudaError_t) at its exit, or None."""
    address = _word(int(cbdata.ptr) + _RETURN_OFFSET)
    return ctypes.c_int.from_address(address).value if address else None


def function_name(cbdata: Any) -> str:
    """The API function's name, read from the struct (checks the offsets on a new CUPTI)."""
    address = _word(int(cbdata.ptr) + _NAME_OFFSET)
    return ctypes.string_at(address).decode() if address else ""


def read_int(address: int) -> int:
    """The 4-byte int at ``address`` (an enum output parameter)."""
    return ctypes.c_int.from_address(address).value


def dereference(address: int) -> int:
    """The 8-byte word at ``address`` (an output parameter), or 0 for a null pointer."""
    return _word(address) if address else 0


def callback_ids(enum: Any, prefixes: tuple[str, ...]) -> dict[int, str]:
    """The ids of every API callback whose name starts with one of ``prefixes``.

    Version suffixes vary by CUDA release (``cudaGraphLaunch_v10000``, ``cuGraphLaunch_ptsz``),
    so ids are found by name rather than written in.
    """
    found = {}
    for name, member in enum.__members__.items():
        if name.startswith(prefixes):
            found[int(member)] = name
    return found
