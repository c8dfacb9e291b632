"""The process's one CUPTI subscriber, shared by attribution and recording.

CUPTI allows one subscriber per process (DESIGN.md): capture's node attribution, record's
graph grabbing, launch counting and capture tracking all register handlers here, per callback
domain and id, and the subscription lives while any handler does. A handler that raises is
passed to its ``on_error`` and never reaches CUPTI or the CUDA call that fired it.

Handlers get the address of CUPTI's callback data and read what they need from the C structs
with this module's functions (``param_words``, ``graph_data``...): cupti-python's objects
build a numpy record per callback and do not expose the API call's parameters.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Callable
from typing import Any

from graphscope.errors import CaptureError

from ._cuda import cupti, libcupti

Handler = Callable[[Any], None]
# Offsets in CUpti_CallbackData (cupti_callbacks.h, 64-bit; cupti-python's
# callback_data_dtype agrees): callbackSite (int, padded), functionName, functionParams,
# functionReturnValue, symbolName, context, contextUid (padded), correlationData,
# correlationId.
_SITE_OFFSET, _NAME_OFFSET, _PARAMS_OFFSET, _RETURN_OFFSET = 0, 8, 16, 24
_CORRELATION_OFFSET = 64
# void CUPTIAPI callback(void *userdata, CUpti_CallbackDomain, CUpti_CallbackId, const void *)
_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)
_CUPTI_SUCCESS = 0


class CallbackData:
    """What a handler gets: the address of CUPTI's callback data (``CUpti_CallbackData`` for
    API callbacks, ``CUpti_ResourceData`` for resource ones), read with this module's
    functions. cupti-python's own objects have the same ``ptr``."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class Subscriber:
    """Handlers by ``(domain, cbid)``; subscribes to CUPTI on the first, leaves on the last.

    The subscription is made with ctypes on the libcupti cupti-python loaded: cupti-python's
    ``subscribe`` builds a numpy-backed record object for every callback before calling
    Python, and a capture calls back once per node it creates. Where that library is not
    found, cupti-python's subscription serves, with the same handlers."""

    def __init__(self) -> None:
        self._handlers: dict[tuple[int, int], list[tuple[Handler, Callable[[BaseException], None]]]]
        self._handlers = {}
        self._handle: Any = None
        self._raw: Any = None  # the ctypes library while subscribed through it
        self._lock = threading.RLock()
        self._trampoline = _CALLBACK(self._dispatch_raw)  # kept: CUPTI holds its address
        # Whether CUPTI calls the C labeller (_labeller.c) first, which labels created nodes
        # itself while attribution asks it to and passes every other callback on.
        self.labels_natively = False

    @property
    def active(self) -> bool:
        return self._handle is not None

    @staticmethod
    def _call(handlers: list[tuple[Handler, Callable[[BaseException], None]]], data: Any) -> None:
        for handler, on_error in handlers:
            try:
                handler(data)
            except BaseException as exc:  # never into CUPTI: it would end the CUDA call
                with contextlib.suppress(BaseException):
                    on_error(exc)

    def _dispatch_raw(self, userdata: Any, domain: int, cbid: int, ptr: int | None) -> None:
        handlers = self._handlers.get((domain, cbid))
        if handlers:  # one lookup: this runs once per node a capture creates
            self._call(handlers, CallbackData(ptr or 0))

    def _dispatch(self, userdata: Any, domain: Any, cbid: Any, cbdata: Any) -> None:
        self._call(self._handlers.get((int(domain), int(cbid)), []), cbdata)

    def _subscribe(self) -> None:
        """Raises CaptureError when CUPTI refuses."""
        api = cupti()
        lib = libcupti()
        refused = None
        if lib is not None:
            handle = ctypes.c_void_p()
            front = _labelling_front(api, lib, self._trampoline)
            status = lib.cuptiSubscribe(ctypes.byref(handle), front or self._trampoline, None)
            if status == _CUPTI_SUCCESS:
                self._handle, self._raw = handle, lib
                self.labels_natively = front is not None
                return
            refused = _result_name(lib, status)
        else:
            try:
                self._handle = api.subscribe(self._dispatch, None)
                return
            except api.cuptiError as exc:
                refused = str(exc)
        raise CaptureError(
            f"CUPTI refused a subscriber ({refused}): another profiler (torch.profiler, "
            "Nsight Systems) holds this process's one CUPTI subscriber"
        )

    def _enable(self, enable: int, domain: int, cbid: int) -> None:
        """Raises CaptureError when CUPTI refuses."""
        if self._raw is not None:
            status = self._raw.cuptiEnableCallback(
                ctypes.c_uint32(enable), self._handle, ctypes.c_int(domain), ctypes.c_uint32(cbid)
            )
            if status != _CUPTI_SUCCESS:
                raise CaptureError(
                    f"CUPTI refused callback {cbid} of domain {domain}: "
                    f"{_result_name(self._raw, status)}"
                )
            return
        api = cupti()
        try:
            api.enable_callback(enable, self._handle, domain, cbid)
        except api.cuptiError as exc:
            raise CaptureError(f"CUPTI refused callback {cbid} of domain {domain}: {exc}") from None

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
                    self._enable(1, *key)
                except CaptureError:
                    self._handlers.pop(key, None)
                    self._leave_if_idle()
                    raise

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
                    with contextlib.suppress(CaptureError):
                        self._enable(0, *key)
            self._leave_if_idle()

    def _leave_if_idle(self) -> None:
        if not self._handlers and self._handle is not None:
            handle, self._handle = self._handle, None
            raw, self._raw = self._raw, None
            self.labels_natively = False
            with contextlib.suppress(Exception):
                if raw is not None:
                    raw.cuptiUnsubscribe(handle)
                else:
                    cupti().unsubscribe(handle)


def native_labeller() -> Any:
    """The C labeller (``_labeller.c``), or None where the install could not build it."""
    try:
        from . import _labeller  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _labeller


def _labelling_front(api: Any, lib: Any, trampoline: Any) -> ctypes.c_void_p | None:
    """The C labeller's CUPTI callback, passing all it does not serve to ``trampoline``; None
    where the labeller was not built (attribution then labels in Python)."""
    native = native_labeller()
    get_node_id = getattr(lib, "cuptiGetGraphNodeId", None)
    if native is None or get_node_id is None:
        return None
    address = native.install(
        ctypes.cast(trampoline, ctypes.c_void_p).value,
        ctypes.cast(get_node_id, ctypes.c_void_p).value,
        int(api.CallbackDomain.RESOURCE),
        int(api.CallbackIdResource.GRAPHNODE_CREATED),
    )
    return ctypes.c_void_p(address)


def _result_name(lib: Any, status: int) -> str:
    """CUPTI's name for a result code (``CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED``)."""
    text = ctypes.c_char_p()
    with contextlib.suppress(Exception):
        if lib.cuptiGetResultString(ctypes.c_int(status), ctypes.byref(text)) == 0 and text.value:
            return f"{text.value.decode(errors='replace')} ({status})"
    return f"CUPTI error {status}"


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


def created_node_id(cbdata: Any) -> int:
    """CUPTI's id of the node a ``GRAPHNODE_CREATED`` callback reports: ``(graph id << 32) |
    local id``."""
    _, node, _ = graph_data(cbdata)
    return int(cupti().get_graph_node_id(node))


def is_exit(cbdata: Any) -> bool:
    """Whether an API callback fires at the call's exit (``CUPTI_API_EXIT``), not its entry."""
    return ctypes.c_int.from_address(int(cbdata.ptr) + _SITE_OFFSET).value == 1


def correlation_id(cbdata: Any) -> int:
    """The API call's correlation id, which its activity records carry."""
    return ctypes.c_uint32.from_address(int(cbdata.ptr) + _CORRELATION_OFFSET).value


def return_code(cbdata: Any) -> int | None:
    """The API call's return value (CUresult or cudaError_t) at its exit, or None."""
    address = _word(int(cbdata.ptr) + _RETURN_OFFSET)
    return ctypes.c_int.from_address(address).value if address else None


# CUpti_ResourceData: context, resourceHandle (a one-pointer union), resourceDescriptor; for
# the graph callbacks that descriptor is a CUpti_GraphData: graph, originalGraph, node,
# originalNode, nodeType (int, padded), dependency, graphExec (cupti-python's dtypes agree).
_DESCRIPTOR_OFFSET = 16
_GRAPH_OFFSET, _NODE_OFFSET, _EXEC_OFFSET = 0, 16, 48


def graph_data(cbdata: Any) -> tuple[int, int, int]:
    """``(graph, node, graph_exec)`` of a RESOURCE domain graph callback, read in place.

    ``cupti.GraphData.from_ptr`` builds a numpy record per call: on a 10,411-node capture
    that was a third of the recorder's time in the node-created callback (py-spy, H100)."""
    base = _word(int(cbdata.ptr) + _DESCRIPTOR_OFFSET)
    if not base:
        return 0, 0, 0
    return _word(base + _GRAPH_OFFSET), _word(base + _NODE_OFFSET), _word(base + _EXEC_OFFSET)


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


def callback_ids(enum: Any, prefixes: tuple[str, ...], exact: bool = False) -> dict[int, str]:
    """The ids of every API callback whose name starts with one of ``prefixes`` or, with
    ``exact``, is one of them but for a version suffix (``cudaMemcpy`` is ``cudaMemcpy_v3020``,
    not ``cudaMemcpyAsync_v3020``).

    Version suffixes vary by CUDA release (``cudaGraphLaunch_v10000``, ``cuGraphLaunch_ptsz``),
    so ids are found by name rather than written in.
    """
    found = {}
    for name, member in enum.__members__.items():
        if name.split("_")[0] in prefixes if exact else name.startswith(prefixes):
            found[int(member)] = name
    return found
