"""CUDA API calls as observers see them: once per call, whether the runtime or the driver made it.

An observer names the calls it watches by prefix (``cudaGraphLaunch``, ``cuGraphLaunch``) and
gets ``handler(cbdata, exiting)`` at each one's entry and exit. The runtime's
``cudaGraphLaunch`` calls the driver's ``cuGraphLaunch``, and CUPTI reports both (the first
recording counted every replay twice): a driver call made while the same thread is inside a
watched runtime call is that call's own, and is not handed on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .. import callbacks
from .._cuda import cupti

CallHandler = Callable[[Any, bool], None]
#: ``(domain, cbid, handler)``: what an observer asks the subscriber for.
Subscription = tuple[int, int, callbacks.Handler]


class Calls:
    """Wraps observers' call handlers; one per recorder (the nesting depth is shared: a
    driver call inside any watched runtime call belongs to that call)."""

    def __init__(self, stopped: Callable[[], bool]) -> None:
        self._stopped = stopped
        self._local = threading.local()

    def watch(
        self, prefixes: tuple[str, ...], handler: CallHandler, exact: bool = False
    ) -> list[Subscription]:
        """Subscriptions for every runtime and driver call whose name starts with one of
        ``prefixes`` or, with ``exact``, is one of them but for its version suffix (suffixes
        vary by CUDA release, so ids are found by name)."""
        api = cupti()
        out: list[Subscription] = []
        for domain, enum, runtime in (
            (api.CallbackDomain.RUNTIME_API, api.runtime_api_trace_cbid, True),
            (api.CallbackDomain.DRIVER_API, api.driver_api_trace_cbid, False),
        ):
            wrapped = self._wrap(handler, runtime)
            out += [
                (domain, cbid, wrapped) for cbid in callbacks.callback_ids(enum, prefixes, exact)
            ]
        return out

    def _wrap(self, handler: CallHandler, runtime: bool) -> callbacks.Handler:
        local = self._local
        stopped = self._stopped

        def on_call(cbdata: Any) -> None:
            if stopped():
                return
            exiting = callbacks.is_exit(cbdata)
            if not runtime:
                if not getattr(local, "depth", 0):
                    handler(cbdata, exiting)
                return
            if not exiting:
                local.depth = getattr(local, "depth", 0) + 1
            try:
                handler(cbdata, exiting)
            finally:
                if exiting:
                    local.depth = max(0, getattr(local, "depth", 1) - 1)

        return on_call
