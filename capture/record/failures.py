"""The failed-capture observer: which call broke a stream capture, and where in the program.

A capture fails far from its cause. A synchronising call, a blocking copy or an allocation
inside the captured region returns ``cudaErrorStreamCaptureUnsupported`` and invalidates the
capture; the program hears of it there, at a later call, or only at ``cudaStreamEndCapture``
(``cudaErrorStreamCaptureInvalidated``), often as an exception far from the line that did it.
While a capture runs, this observer watches the calls that may not run inside one (on any
thread: in CUDA's global capture mode another thread's call breaks it too). The first that
returns a capture error is noted with its Python stack, module, stream and thread, and filed
at once as a :class:`Failure`: the recorder writes it into ``recording.json`` straight away,
since the program may crash or hang next. A capture the driver refuses to begin is filed the
same way, and a capture that ends invalidated says how it ended, with its first offending call
or, where no watched call failed, that graphscope saw none (never a guess).

Outside captures a program makes these calls every step (a synchronize, a blocking copy), and
a Python callback for each would cost its loop. Where the C labeller is CUPTI's callback (the
usual install), they are asked of CUPTI once, as recording starts, and the C callback drops
them while no capture runs. Without it they are asked of CUPTI as each capture begins and
given back as it ends, which costs each capture (docs/RECORD.md).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphscope.errors import CaptureError

from .. import callbacks, sites
from .._cuda import cupti
from .calls import Calls, Subscription

if TYPE_CHECKING:
    from types import FrameType

    from .lives import Capture
    from .state import State

#: Calls that may not run inside a stream capture in CUDA's global or thread-local mode (the
#: CUDA programming guide's "prohibited and unhandled operations"), by name without CUPTI's
#: version suffix: synchronisation, queries, blocking copies and sets, allocation. (torch's
#: ``.item()`` copies asynchronously, then synchronizes: on the H200 the synchronize is what
#: returned the error, ``tests/record_programs/capture_fails.py``.)
UNSAFE_CALLS = (
    "cudaDeviceSynchronize",
    "cudaThreadSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaStreamQuery",
    "cudaEventQuery",
    "cudaMemcpy",
    "cudaMemcpy2D",
    "cudaMemcpy3D",
    "cudaMemcpyToSymbol",
    "cudaMemcpyFromSymbol",
    "cudaMemcpyPeer",
    "cudaMemset",
    "cudaMemset2D",
    "cudaMemset3D",
    "cudaMalloc",
    "cudaMallocHost",
    "cudaMallocManaged",
    "cudaMallocPitch",
    "cudaHostAlloc",
    "cudaFree",
    "cudaFreeHost",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "cuStreamQuery",
    "cuEventQuery",
    "cuMemcpy",
    "cuMemcpyHtoD",
    "cuMemcpyDtoH",
    "cuMemcpyDtoD",
    "cuMemcpy2D",
    "cuMemcpy3D",
    "cuMemcpyPeer",
    "cuMemsetD8",
    "cuMemsetD16",
    "cuMemsetD32",
    "cuMemAlloc",
    "cuMemAllocHost",
    "cuMemAllocManaged",
    "cuMemAllocPitch",
    "cuMemHostAlloc",
    "cuMemFree",
    "cuMemFreeHost",
)

#: cudaError_t and CUresult share these numbers and meanings.
CAPTURE_ERRORS = {
    900: "StreamCaptureUnsupported",
    901: "StreamCaptureInvalidated",
    902: "StreamCaptureMerge",
    903: "StreamCaptureUnmatched",
    904: "StreamCaptureUnjoined",
    905: "StreamCaptureIsolation",
    906: "StreamCaptureImplicit",
    907: "CapturedEvent",
    908: "StreamCaptureWrongThread",
}

_STACK_DEPTH = 16


def error_name(code: int, call: str) -> str:
    """``cudaErrorStreamCaptureUnsupported (900)`` for a runtime call (``cuda...``), or the
    driver's spelling for a driver call."""
    known = CAPTURE_ERRORS.get(code)
    if known is None:
        return f"CUDA error {code}"
    if call.startswith("cuda"):
        return f"cudaError{known} ({code})"
    spelled = "".join(f"_{c}" if c.isupper() else c.upper() for c in known).lstrip("_")
    return f"CUDA_ERROR_{spelled} ({code})"


def call_name(name: str) -> str:
    """A CUPTI callback's name without its version suffix: ``cudaMemcpy_v3020`` is
    ``cudaMemcpy``, ``cuMemcpyDtoH_v2`` is ``cuMemcpyDtoH``."""
    return name.split("_")[0]


@dataclass
class Failure:
    """A capture that failed: its first offending call (``call``), or a begin refused."""

    at_ns: int
    call: str | None  # None: the capture ended invalidated and no watched call failed
    error: str | None
    thread: str | None
    stream: int | None  # the stream the call named, where its first argument is one
    site: sites.Site | None  # the user's line
    program_site: sites.Site | None  # the program's own line
    module: str | None  # the nn.Module running, where attribution knows it
    stack: list[str] = field(default_factory=list)  # innermost first
    capture: Capture | None = None  # the capture it broke (None: a begin refused)
    ended: str | None = None  # how the capture ended; None while it has not

    def as_dict(self, since_s: Any) -> dict[str, Any]:
        capture = self.capture
        return {
            "at_s": since_s(self.at_ns),
            "call": self.call,
            "error": self.error,
            "thread": self.thread,
            "stream": self.stream,
            "site": self.site,
            "program_site": self.program_site,
            "module": self.module,
            "stack": list(self.stack),
            "capture": None
            if capture is None
            else {"site": capture.site, "capturer": capture.capturer, "stream": capture.stream},
            "ended": self.ended,
        }


def stack_lines(frame: FrameType | None, skip: tuple[str, ...]) -> list[str]:
    """``file:line in function`` of each frame outward from ``frame``, innermost first,
    leaving out files under ``skip`` (graphscope's own)."""
    out: list[str] = []
    while frame is not None and len(out) < _STACK_DEPTH:
        code = frame.f_code
        if not code.co_filename.startswith(skip):
            out.append(f"{code.co_filename}:{frame.f_lineno} in {code.co_name}")
        frame = frame.f_back
    return out


class FailureWatch:
    """Files a :class:`Failure` for each stream capture that fails or is refused."""

    def __init__(
        self,
        recorder: State,
        calls: Calls,
        captures: dict[int, Capture],
        on_error: Callable[[BaseException], None],
    ) -> None:
        self.rec = recorder
        self.captures = captures  # the graph observer's: stream handle -> capture running
        self.failures: list[Failure] = []
        self._open: dict[int, Failure] = {}  # capture stream -> its failure, until it ends
        self._lock = threading.Lock()
        self._calls = calls
        self._subscriptions: list[Subscription] | None = None  # found at the first capture
        self._on_error = on_error
        self._watching = False
        self._gate: Any = None  # the C labeller, where it gates the watched calls
        self._skip = (str(Path(__file__).resolve().parents[1]) + "/",)

    # -- while a capture runs -------------------------------------------------------------

    def start(self) -> None:
        """As recording starts: where the C callback can gate them, ask CUPTI for the watched
        calls once, for the whole run."""
        native = callbacks.native_labeller()
        if native is None or not callbacks.subscriber().labels_natively:
            return  # asked for at each capture instead
        self._gate = native  # which GraphWatch tells how many captures run
        self._watch(gated=True)

    def stop(self) -> None:
        """As recording stops."""
        self._unwatch()
        self._gate = None

    def capture_began(self) -> None:
        """The first capture running began: watch the calls that may break it."""
        if self.rec.stopped:
            return
        if self._gate is None and not self._watching:
            self._watch(gated=False)

    def captures_over(self) -> None:
        """No capture runs any more."""
        if self._gate is None and self._watching:
            self._unwatch()

    def _watch(self, gated: bool) -> None:
        sub = callbacks.subscriber()
        try:
            if self._subscriptions is None:
                self._subscriptions = self._calls.watch(UNSAFE_CALLS, self._call, exact=True)
            self._watching = True
            for domain, cbid, handler in self._subscriptions:
                if gated:  # before CUPTI is asked: never handed on outside a capture
                    self._gate.gate(domain, cbid)
                sub.on(domain, cbid, handler, self._on_error)
        except (CaptureError, ValueError) as exc:
            self._unwatch()
            self._gate = None
            self.rec.note(f"the calls that break a capture are not watched: {exc}")

    def _unwatch(self) -> None:
        if not self._watching:
            return
        sub = callbacks.subscriber()
        for domain, cbid, handler in self._subscriptions or ():
            sub.off(domain, cbid, handler)
            if self._gate is not None:
                with contextlib.suppress(ValueError):
                    self._gate.gate(domain, cbid, False)
        self._watching = False

    def _call(self, cbdata: Any, exiting: bool) -> None:
        if not exiting or self.rec.stopped:
            return
        code = callbacks.return_code(cbdata)
        if code not in CAPTURE_ERRORS:
            return
        captures = dict(self.captures)
        if not captures:
            return
        name = call_name(callbacks.function_name(cbdata))
        me = threading.get_ident()
        stream, capture = next(
            ((s, c) for s, c in captures.items() if c.thread_id == me),
            next(iter(captures.items())),
        )
        with self._lock:
            if stream in self._open:  # the capture is broken already: its first call stands
                return
            names_stream = "Stream" in name  # cudaStreamSynchronize(stream), ...
            failure = self._failure(
                name,
                error_name(code, name),
                callbacks.param_words(cbdata, 1)[0] if names_stream else None,
                capture,
            )
            self._open[stream] = failure
            self.failures.append(failure)
        self.rec.changed()

    # -- how captures end -----------------------------------------------------------------

    def refused(self, frame_site: sites.Site | None, code: int, name: str) -> None:
        """The driver would not begin a capture (``name`` returned ``code``)."""
        failure = self._failure(call_name(name), error_name(code, name), None, None)
        failure.site = failure.site or frame_site
        failure.ended = "never began"
        with self._lock:
            self.failures.append(failure)
        self.rec.changed()

    def ended(self, stream: int, capture: Capture, code: int | None, name: str) -> None:
        """Capture ``capture`` on ``stream`` ended; ``code`` is what ending it returned."""
        with self._lock:
            failure = self._open.pop(stream, None)
            if not code:
                if failure is not None:  # broken, yet ended well: CUDA said so at the call
                    failure.ended = f"{call_name(name)} succeeded"
                    self.rec.changed()
                return
            said = f"{call_name(name)} returned {error_name(code, name)}"
            if failure is None:
                failure = Failure(
                    at_ns=time.perf_counter_ns(),
                    call=None,
                    error=None,
                    thread=threading.current_thread().name,
                    stream=None,
                    site=capture.site,
                    program_site=capture.program_site,
                    module=None,
                    capture=capture,
                )
                said += ": no call graphscope watches failed inside it (see docs/RECORD.md)"
                self.failures.append(failure)
            failure.ended = said
        self.rec.changed()

    def _failure(
        self, call: str, error: str, stream: int | None, capture: Capture | None
    ) -> Failure:
        frame = sites.caller(2)
        frames = self.rec.frames
        user = frames.user_frame(frame) if frames is not None else None
        program = frames.program_frame(frame) if frames is not None else None
        module = None
        attribution = self.rec.attribution
        if attribution is not None:
            with contextlib.suppress(Exception):  # a module torn down mid-walk: no module
                module = attribution.module_at(frame)
        return Failure(
            at_ns=time.perf_counter_ns(),
            call=call,
            error=error,
            thread=threading.current_thread().name,
            stream=stream,
            site=sites.site(user),
            program_site=sites.site(program),
            module=module,
            stack=stack_lines(frame, self._skip),
            capture=capture,
        )

    def as_list(self) -> list[dict[str, Any]]:
        with self._lock:
            return [f.as_dict(self.rec.since_s) for f in self.failures]


def api_names() -> list[str]:
    """CUPTI's names of the watched calls in this CUDA release."""
    api = cupti()
    names: list[str] = []
    for enum in (api.runtime_api_trace_cbid, api.driver_api_trace_cbid):
        names += callbacks.callback_ids(enum, UNSAFE_CALLS, exact=True).values()
    return sorted(names)
