"""The process's one CUPTI subscriber, shared by attribution and recording.

CUPTI allows one subscriber per process (DESIGN.md): capture's node attribution, record's
graph grabbing, launch counting and capture tracking all register handlers here, per callback
domain and id, and the subscription lives while any handler does. A handler that raises is
passed to its ``on_error`` and never reaches CUPTI or the CUDA call that fired it.

cupti-python's ``CallbackData`` does not expose the API call's parameters; they are read with
ctypes from the C struct (``CUpti_CallbackData``: site, function name, then the pointer to the
call's parameter struct, then the pointer to its return value).
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Callable
from typing import Any

from graphscope.errors import CaptureError

from ._cuda import cupti

Handler = Callable[[Any], None]
# Offsets in CUpti_CallbackData (cupti_callbacks.h, 64-bit): callbackSite (int, padded),
# functionName, functionParams, functionReturnValue.
_NAME_OFFSET, _PARAMS_OFFSET, _RETURN_OFFSET = 8, 16, 24


class Subscriber:
    """Handlers by ``(domain, cbid)``; subscribes to CUPTI on the first, leaves on the last."""

    def __init__(self) -> None:
        self._handlers: dict[tuple[int, int], list[tuple[Handler, Callable[[BaseException], None]]]]
        self._handlers = {}
        self._handle: Any = None
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
        api = cupti()
        with self._lock:
            if self._handle is None:
                try:
                    self._handle = api.subscribe(self._dispatch, None)
                except api.cuptiError as exc:
                    raise CaptureError(
                        f"CUPTI refused a subscriber ({exc}): another profiler (torch.profiler, "
                        "Nsight Systems) holds this process's one CUPTI subscriber"
                    ) from None
            key = (int(domain), int(cbid))
            first = key not in self._handlers
            self._handlers.setdefault(key, []).append((handler, on_error))
            if first:
                try:
                    api.enable_callback(1, self._handle, domain, cbid)
                except api.cuptiError as exc:
                    self._handlers.pop(key, None)
                    self._leave_if_idle()
                    raise CaptureError(
                        f"CUPTI refused callback {cbid} of domain {domain}: {exc}"
                    ) from None

    def off(self, domain: int, cbid: int, handler: Handler) -> None:
        """Stop calling ``handler``; the subscription ends with its last handler."""
        api = cupti()
        with self._lock:
            key = (int(domain), int(cbid))
            kept = [h for h in self._handlers.get(key, []) if h[0] != handler]
            if kept:
                self._handlers[key] = kept
            elif key in self._handlers:
                del self._handlers[key]
                if self._handle is not None:
                    with contextlib.suppress(api.cuptiError):
                        api.enable_callback(0, self._handle, domain, cbid)
            self._leave_if_idle()

    def _leave_if_idle(self) -> None:
        if not self._handlers and self._handle is not None:
            handle, self._handle = self._handle, None
            with contextlib.suppress(Exception):
                cupti().unsubscribe(handle)


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
