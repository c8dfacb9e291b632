"""Record every CUDA graph a program instantiates, whoever captures it, timed from its replays.

Usage, in code (``graphscope record -- python script.py`` does the same from outside)::

    from graphscope.capture import record
    with record.record("recording"):
        run_my_engine()

One CUPTI subscriber (``callbacks``) watches the process:

* stream capture beginning and ending: the user's line, who captures (Inductor, vLLM,
  SGLang, ``torch.cuda.graph``), the inputs' shapes where torch says them, the memory pool;
  while a capture runs, each created node is labelled with module, aten op and line;
* ``GRAPHEXEC_CREATED``: the graph is read while it lives (``grab.snapshot``: the dump and
  the driver's read), everything else is deferred to the recorder's thread;
* graph launches: counted, and sampled for timing (``sampling``): traced launches' kernel
  records join nodes by graph node id;
* ``cudaGraphExecUpdate`` results, and executable graphs destroyed.

The recorder's thread builds bundles (``grab.build``) and collects timing records while the
program rests, and rewrites ``recording.json`` whole as the run goes, so a killed program
leaves a readable recording. A failure inside a callback is reported once on stderr and
recording stops; the program goes on.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypedDict

import graphscope
from graphscope import recording
from graphscope.errors import CaptureError, GraphscopeError
from graphscope.output import write_atomic

from . import callbacks, grab, introspect, sites
from ._cuda import cupti
from .environment import now_iso
from .pointers import (
    PointerMap,
    Region,
    allocated_in,
    live_models,
    named_roots,
    parameter_regions,
    segment_regions,
)
from .sampling import Replays, Schedule, Settings
from .trace import GPU_KINDS, enable_kinds, start_activities, stop_activities

if TYPE_CHECKING:
    import logging

    import networkx as nx

    from .attribution import Attribution, Label

#: Environment variables a recorded program's child processes inherit.
ENV_OUT = "GRAPHSCOPE_RECORD_OUT"
ENV_SETTINGS = "GRAPHSCOPE_RECORD_SETTINGS"
BOOTSTRAP = Path(__file__).resolve().parent / "bootstrap"
# Bundles are built, timing records collected and bundles rewritten with them while the
# program rests: no graph grabbed or launched for this long. That work parses dumps, scans
# the process's objects for modules and takes CUPTI's buffers, all holding the GIL the
# program's own thread needs. A program that never rests gets it done at exit, or once
# BUILD_LATEST_S have passed.
BUILD_QUIET_S = 1.0
BUILD_LATEST_S = 120.0
INDEX_EVERY_S = 2.0  # the index is rewritten at most this often while the program runs
LAUNCHES_KEPT = 512  # untraced launch calls timed per graph (the latest), for the median
TICK_S = 0.2  # the recorder thread's pace
_EXEC_UPDATE_RESULTS = (
    "SUCCESS",
    "ERROR",
    "ERROR_TOPOLOGY_CHANGED",
    "ERROR_NODE_TYPE_CHANGED",
    "ERROR_FUNCTION_CHANGED",
    "ERROR_PARAMETERS_CHANGED",
    "ERROR_NOT_SUPPORTED",
    "ERROR_UNSUPPORTED_FUNCTION_CHANGE",
    "ERROR_ATTRIBUTES_CHANGED",
)
# Where Inductor and torch say why a function ran without CUDA graphs (artifact loggers,
# silent unless enabled; a handler of ours still hears them).
_SKIP_LOGGERS = (
    "torch._inductor.cudagraph_utils.__cudagraphs",
    "torch._inductor.cudagraph_utils.__perf_hints",
    "torch._inductor.cudagraph_trees.__cudagraphs",
    "torch._inductor.cudagraph_trees.__perf_hints",
)


# An input whose shape changed between two captures from one site ("from" is a keyword).
ShapeChange = TypedDict("ShapeChange", {"input": int, "from": list[int] | None, "to": list[int]})


@dataclass
class Capture:
    """A stream capture, from its beginning to the graph it made."""

    began_ns: int
    site: sites.Site | None  # the innermost frame outside torch and graphscope
    capturer: str
    program_site: sites.Site | None = None  # the program's own line (not a package's)
    inputs: list[sites.TensorInput] | None = None  # the non-static tensor inputs
    batch: int | None = None
    function: str | None = None  # Inductor's function id: one compiled function's graphs
    ended_ns: int | None = None
    pool: tuple[int, ...] | None = None
    owner: Any = None  # weak reference to the torch.cuda.CUDAGraph, asked for its pool later

    def key(self) -> tuple[Any, ...]:
        """What makes two captures the same site: a new graph there is a re-record.

        Inductor's function id is left out: torch.compile recompiling for new shapes and then
        recording is, to the user, the same call site recording again.
        """
        where = [
            s.get(k) if s else None
            for s in (self.site, self.program_site)
            for k in ("file", "line")
        ]
        return (self.capturer, *where)


@dataclass
class Life:
    """One executable graph, from capture to destruction."""

    id: str
    exec_id: int
    graph_id: int | None
    capture: Capture | None
    instantiated_ns: int
    instantiate_ns: int | None
    grab_ns: int = 0
    dump_s: float | None = None  # of grab_ns: cudaGraphDebugDotPrint
    read_s: float | None = None  # of grab_ns: the driver's read of the nodes
    snapshot: grab.Snapshot | None = None
    labels: dict[int, Label] = field(default_factory=dict)
    # The parameters of the modules that ran in its capture, read at instantiation: the
    # bundle is built later, when a program's model may be gone (a main() that returned).
    parameters: list[Region] | None = None
    dot_tmp: Path | None = None
    bundle: str | None = None
    dot: str | None = None
    nodes: int | None = None
    kernels: int | None = None
    build_ms: float | None = None
    error: str | None = None
    local_ids: dict[int, str] = field(default_factory=dict)
    replays: int = 0
    traced: int = 0
    timed: Replays = field(default_factory=Replays)
    launch_ns: deque[int] = field(default_factory=lambda: deque(maxlen=LAUNCHES_KEPT))
    timing: dict[str, Any] | None = None
    written_with: int = -1  # traced replays the written bundle holds (-1: none written)
    written: tuple[Any, ...] = ()  # what the written bundle's recording section reflects
    updates: list[dict[str, Any]] = field(default_factory=list)
    destroyed_ns: int | None = None
    rerecord_of: str | None = None
    rerecord_reason: str | None = None
    shape_changes: list[ShapeChange] = field(default_factory=list)
    pool_bytes: int | None = None
    attributed: int | None = None
    graph: nx.DiGraph | None = None  # the built graph, kept to rewrite with timing
    # A graph built without stream capture (XLA's command buffers, cudaGraphAdd*): the
    # program's lines that instantiated it, where the instantiating thread runs Python.
    instantiated_site: sites.Site | None = None
    instantiated_program_site: sites.Site | None = None


class Recorder:
    """Records the graphs of this process into ``run_dir/<pid or rank>/``."""

    def __init__(self, run_dir: str | os.PathLike[str], settings: Settings | None = None):
        self.run_dir = Path(run_dir)
        self.settings = settings or Settings()
        self.pid = os.getpid()
        self.started_ns = time.perf_counter_ns()
        self.started_at = now_iso()
        self.folder = self.run_dir / _process_folder_name(self.pid)
        self.lives: list[Life] = []
        self.by_exec: dict[int, Life] = {}
        self.by_exec_id: dict[int, Life] = {}
        self.captures: dict[int, Capture] = {}  # stream handle -> capture running
        self.by_graph: dict[int, Capture] = {}  # graph handle -> capture that made it
        self.last_of_site: dict[tuple[Any, ...], Life] = {}
        self.instantiating: dict[int, int] = {}  # thread id -> ns the instantiation began
        self._local = threading.local()  # per thread: runtime-call depth, launch under way
        self.unknown_launches = 0  # launches of graphs instantiated before recording began
        self.eager_kernels = 0
        self.eager_kernel_ns = 0
        self.records = 0
        self.notes: list[str] = []
        self.skip_reasons: list[str] = []
        self.status = "running"
        self.stop_reason: str | None = None
        self._lock = threading.Lock()
        self._records_lock = threading.Lock()  # consume() runs on CUPTI's thread too
        self._schedule = Schedule(self.settings, 0.0)
        self._tracing = False
        # The launch traced last, (its graph, its correlation id): see _untime_last_traced.
        self._last_traced: tuple[Life, int] | None = None
        self._records_since_ns = 0  # when tracing last stopped with records not collected
        self._stopped = False
        self._finished = False
        self._capturing = 0
        self._last_grab_ns = 0
        self._last_launch_ns = 0
        self._dirty = True
        self._index_written_ns = 0
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._handlers: list[tuple[int, int, callbacks.Handler]] = []
        self._attribution: Attribution | None = None
        self._kernels = introspect.KernelReader()
        self._frames: sites.Frames | None = None
        self._torch: Any = None
        self._cuda_graph_type: Any = None
        self._log_handler: logging.Handler | None = None
        self._process: dict[str, Any] = {}
        self._machine: dict[str, Any] | None = None

    # -- starting and stopping ---------------------------------------------------------------

    def start(self) -> Recorder:
        """Subscribe to CUPTI and start the recorder's thread; raises CaptureError if refused.

        torch is used where the program imported it (module attribution, the allocator's
        memory map, ``torch.cuda.graph``'s pools), never imported here: a JAX, CuPy or
        cuda-python process is recorded with what CUDA itself says."""
        self._torch = sys.modules.get("torch")
        from .attribution import Attribution, generated_code_dirs, library_paths

        if self.settings.attribution and self._torch is not None:  # its frames serve ours too
            self._attribution = Attribution()
            self._frames = self._attribution.frames
        else:
            self._frames = sites.Frames(library_paths(self._torch), generated_code_dirs)
        self._cuda_graph_type = getattr(getattr(self._torch, "_C", None), "_CUDAGraph", None)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._process = self._process_info()
        api = cupti()
        res = api.CallbackDomain.RESOURCE
        handlers: list[tuple[int, int, callbacks.Handler]] = [
            (res, api.CallbackIdResource.GRAPHNODE_CREATED, self._node_created),
            (res, api.CallbackIdResource.GRAPHEXEC_CREATE_STARTING, self._exec_starting),
            (res, api.CallbackIdResource.GRAPHEXEC_CREATED, self._exec_created),
            (res, api.CallbackIdResource.GRAPHEXEC_DESTROY_STARTING, self._exec_destroyed),
        ]
        for domain, enum, runtime in (
            (api.CallbackDomain.RUNTIME_API, api.runtime_api_trace_cbid, True),
            (api.CallbackDomain.DRIVER_API, api.driver_api_trace_cbid, False),
        ):
            for prefixes, on_call in (
                (("cudaStreamBeginCapture", "cuStreamBeginCapture"), self._capture_begins),
                (("cudaStreamEndCapture", "cuStreamEndCapture"), self._capture_ends),
                (("cudaGraphLaunch", "cuGraphLaunch"), self._launch),
                (("cudaGraphExecUpdate", "cuGraphExecUpdate"), self._exec_update),
            ):
                wrapped = self._api_call(on_call, runtime)
                for cbid in callbacks.callback_ids(enum, prefixes):
                    handlers.append((domain, cbid, wrapped))
        sub = callbacks.subscriber()
        try:
            for domain, cbid, handler in handlers:
                sub.on(domain, cbid, handler, self._failed)
                self._handlers.append((domain, cbid, handler))
            start_activities(self, GPU_KINDS)
            enable_kinds(GPU_KINDS, enable=False)  # on only inside sampled windows
        except CaptureError:
            self._unsubscribe()
            raise
        self._listen_for_skips()
        self._write_index()
        self._thread = threading.Thread(target=self._run, name="graphscope-record", daemon=True)
        self._thread.start()
        return self

    def _unsubscribe(self) -> None:
        sub = callbacks.subscriber()
        for domain, cbid, handler in self._handlers:
            with contextlib.suppress(Exception):
                sub.off(domain, cbid, handler)
        self._handlers = []

    def finish(self) -> None:
        """Stop recording, build what is left, write final bundles and the index. Idempotent."""
        if self._finished:
            return
        self._finished = True
        self._stopped = True
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=60)
        try:
            self._unsubscribe()
            if self._tracing:
                self._untime_last_traced()
            with contextlib.suppress(Exception):
                stop_activities(self, GPU_KINDS)
            if self._attribution is not None:
                self._attribution.deactivate()
            self._build_pending()
            for life in list(self.lives):
                self._write_bundle(life, final=True)
        finally:
            if self.status == "running":
                self.status = "finished"
            self._write_index(ended=True)
            if self._log_handler is not None:
                import logging

                for name in _SKIP_LOGGERS:
                    logging.getLogger(name).removeHandler(self._log_handler)

    def _failed(self, exc: BaseException) -> None:
        """A callback raised: say so once, stop recording; the program goes on."""
        if self._stopped:
            return
        self._stopped = True
        self.status = "stopped"
        self.stop_reason = f"{type(exc).__name__}: {exc}"
        sys.stderr.write(
            f"graphscope record: pid {self.pid}: recording stopped ({self.stop_reason}); "
            "the program goes on unrecorded\n"
        )
        self._dirty = True
        self._wake.set()

    # -- CUPTI callbacks (the program's threads) ---------------------------------------------

    def _since_s(self, ns: int) -> float:
        return (ns - self.started_ns) / 1e9

    def _node_created(self, cbdata: Any) -> None:
        if self._stopped or not self._capturing or self._attribution is None:
            return
        api = cupti()
        node = api.GraphData.from_ptr(cbdata.resource_descriptor).node
        self._attribution.label(int(api.get_graph_node_id(int(node))), sys._getframe(1))

    def _api_call(self, handler: Callable[[Any, bool], None], runtime: bool) -> callbacks.Handler:
        """``handler(cbdata, exiting)`` for one domain's calls, never twice for one call.

        The runtime's ``cudaGraphLaunch`` calls the driver's ``cuGraphLaunch``, and CUPTI
        reports both (the first recording counted every replay twice); a driver call made
        while the same thread is inside a watched runtime call is that call's own.
        """
        local = self._local
        exit_site = int(cupti().ApiCallbackSite.API_EXIT)

        def on_call(cbdata: Any) -> None:
            if self._stopped:
                return
            exiting = int(cbdata.callback_site) == exit_site
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

    def _capture_begins(self, cbdata: Any, exiting: bool) -> None:
        (stream,) = callbacks.param_words(cbdata, 1)
        if exiting:
            code = callbacks.return_code(cbdata)
            if code and stream in self.captures:  # the capture never began
                self.captures.pop(stream)
                self._capture_done()
            return
        frame = sites.caller(1)
        assert self._frames is not None
        capture = Capture(
            began_ns=time.perf_counter_ns(),
            site=sites.site(self._frames.user_frame(frame)),
            capturer=sites.capturer(frame),
            program_site=sites.site(self._frames.program_frame(frame)),
        )
        self._read_inputs(capture, frame)
        self.captures[stream] = capture
        self._capturing += 1
        if self._capturing == 1 and self._attribution is not None:
            self._attribution.root_inputs = None
            self._attribution.activate()

    def _read_inputs(self, capture: Capture, frame: Any) -> None:
        """The inputs' shapes and the batch, where the capturing code holds them."""
        node = sites.find_local(frame, "self", lambda v: type(v).__name__ == "CUDAGraphNode")
        if node is not None:  # Inductor's CUDA graph trees, inside CUDAGraphNode._record
            inputs = sites.find_local(frame, "inputs", lambda v: isinstance(v, list))
            wrapped = getattr(node, "wrapped_function", None)
            static = set(getattr(wrapped, "static_input_idxs", ()) or ())
            capture.function = str(getattr(wrapped, "id", "")) or None
            if inputs is not None:
                capture.inputs = sites.tensor_inputs(inputs, static)
                capture.batch = sites.batch_of(capture.inputs)
            return
        if capture.capturer == "vllm":  # CUDAGraphWrapper holds its BatchDescriptor
            descriptor = sites.find_local(frame, "batch_descriptor", lambda v: True)
            tokens = getattr(descriptor, "num_tokens", None)
            if isinstance(tokens, int):
                capture.batch = tokens
        elif capture.capturer == "sglang":  # CudaGraphRunner.capture_one_batch_size(bs, ...)
            bs = sites.find_local(frame, "bs", lambda v: isinstance(v, int))
            if isinstance(bs, int):
                capture.batch = bs

    def _capture_done(self) -> None:
        self._capturing = max(0, self._capturing - 1)
        if self._capturing == 0 and self._attribution is not None:
            self._attribution.deactivate()

    def _capture_ends(self, cbdata: Any, exiting: bool) -> None:
        if not exiting:
            return
        stream, graph_out = callbacks.param_words(cbdata, 2)
        capture = self.captures.pop(stream, None)
        if capture is None:
            return
        capture.ended_ns = time.perf_counter_ns()
        if capture.inputs is None and self._attribution is not None:
            capture.inputs = self._attribution.root_inputs
            if capture.batch is None and capture.inputs:
                capture.batch = sites.batch_of(capture.inputs)
        frame = sites.caller(1)
        kind = self._cuda_graph_type
        holder = sites.find_local(  # the torch.cuda.graph context, given pool=... or not
            frame,
            "self",
            lambda v: kind is not None and isinstance(getattr(v, "cuda_graph", None), kind),
        )
        capture.pool = _pool_id(getattr(holder, "pool", None))
        owner = getattr(holder, "cuda_graph", None) or sites.find_local(
            frame, "self", lambda v: kind is not None and isinstance(v, kind)
        )
        if owner is not None and capture.pool is None:
            # A private pool: its pool() refuses until capture_end returns (we are inside
            # it), so it is asked later, if the graph object takes a weak reference.
            with contextlib.suppress(TypeError):
                capture.owner = weakref.ref(owner)
        self._capture_done()
        if not callbacks.return_code(cbdata):
            handle = callbacks.dereference(graph_out)
            if handle:
                self.by_graph[handle] = capture

    def _exec_starting(self, cbdata: Any) -> None:
        if not self._stopped:
            self.instantiating[threading.get_ident()] = time.perf_counter_ns()

    def _exec_created(self, cbdata: Any) -> None:
        if self._stopped:
            return
        created = time.perf_counter_ns()
        api = cupti()
        data = api.GraphData.from_ptr(cbdata.resource_descriptor)
        graph, exe = int(data.graph), int(data.graph_exec)
        exec_id = int(api.get_graph_exec_id(exe))
        began = self.instantiating.pop(threading.get_ident(), None)
        capture = self.by_graph.pop(graph, None)
        life = Life(
            id=f"g{exec_id}",
            exec_id=exec_id,
            graph_id=None,
            capture=capture,
            instantiated_ns=created,
            instantiate_ns=created - began if began is not None else None,
        )
        dot_tmp = self.folder / f".{life.id}.dot.tmp"
        try:
            life.snapshot = grab.snapshot(graph, dot_tmp, self._kernels)
            life.dump_s, life.read_s = life.snapshot.dump_seconds, life.snapshot.seconds
            life.graph_id = life.snapshot.graph_id
            life.nodes = life.snapshot.nodes
            life.kernels = len(life.snapshot.kernels)
            life.dot_tmp = dot_tmp
        except Exception as exc:  # this graph goes unread; the others are still recorded
            life.error = f"could not read the graph at instantiation: {exc}"
            dot_tmp.unlink(missing_ok=True)
        if self._attribution is not None and life.graph_id is not None:
            labels = self._attribution.labels
            mine = [k for k in labels if k >> 32 == life.graph_id]
            life.labels = {k: labels.pop(k) for k in mine}
            if life.nodes:
                try:
                    roots = self._attribution.live_roots()
                    life.parameters = parameter_regions(named_roots(roots)) if roots else None
                except Exception:  # a module torn down mid-walk: named later, if still alive
                    life.parameters = None
        if capture is not None and life.nodes:
            # An empty graph (CUDA graph trees make one first) is no earlier recording.
            earlier = self.last_of_site.get(capture.key())
            if earlier is not None:
                life.rerecord_of = earlier.id
                life.shape_changes = _shape_changes(earlier.capture, capture)
                life.rerecord_reason = _rerecord_reason(earlier.capture, capture, life)
            self.last_of_site[capture.key()] = life
        if capture is None and self._frames is not None:
            frame = sites.caller(1)
            life.instantiated_site = sites.site(self._frames.user_frame(frame))
            life.instantiated_program_site = sites.site(self._frames.program_frame(frame))
        life.grab_ns = time.perf_counter_ns() - created
        with self._lock:
            self.lives.append(life)
            self.by_exec[exe] = life
            self.by_exec_id[exec_id] = life
            self._last_grab_ns = time.perf_counter_ns()
            self._dirty = True

    def _exec_destroyed(self, cbdata: Any) -> None:
        if self._stopped:
            return
        exe = int(cupti().GraphData.from_ptr(cbdata.resource_descriptor).graph_exec)
        life = self.by_exec.pop(exe, None)
        if life is not None:
            life.destroyed_ns = time.perf_counter_ns()
            self._dirty = True

    def _launch(self, cbdata: Any, exiting: bool) -> None:
        local = self._local
        if exiting:
            entered = getattr(local, "launch", None)
            if entered is not None:
                local.launch = None
                life, traced, began = entered
                spent = time.perf_counter_ns() - began
                if traced:
                    life.timed.cpu_launch_ns[cbdata.correlation_id] = spent
                else:
                    life.launch_ns.append(spent)
            return
        (exe,) = callbacks.param_words(cbdata, 1)
        life = self.by_exec.get(exe)
        self._last_launch_ns = began = time.perf_counter_ns()
        if life is None:
            self.unknown_launches += 1
            return
        life.replays += 1
        wanted = self._schedule.wants(life.traced, self._since_s(began))
        if wanted != self._tracing:
            # Turned on before the launch is submitted; off at the first launch not traced,
            # so that the last traced one's records are all in flight by then.
            enable_kinds(GPU_KINDS, enable=wanted)
            self._tracing = wanted
            if wanted:
                # The first launch traced after tracing starts carries CUPTI's setup of the
                # executable graph (its kernels read as 100 ms long on the H200): not timed.
                life.timed.skip.add(cbdata.correlation_id)
            else:
                self._untime_last_traced()
                if not self._records_since_ns:  # collected when the program next rests
                    self._records_since_ns = began
        if wanted:
            if life.traced == 0:
                life.timed.skip.add(cbdata.correlation_id)
            life.traced += 1
            self._last_traced = (life, cbdata.correlation_id)
        local.launch = (life, wanted, time.perf_counter_ns())

    def _untime_last_traced(self) -> None:
        """Leave out the launch traced last, as tracing stops.

        The CPU runs ahead of the GPU: when tracing stops, at the next launch or at exit, the
        launch traced last may not have run yet. Its kernels' records then come back stretched
        to the time of a later flush, every node of that replay 2 to 94 ms long on the H200 (the
        last traced replay of 7 of the 10 recorded graphs in samples/ before this fix, each
        node's max against a 0.2 ms replay). One replay per window is the price."""
        if self._last_traced is not None:
            life, correlation = self._last_traced
            life.timed.skip.add(correlation)
            self._last_traced = None

    def _exec_update(self, cbdata: Any, exiting: bool) -> None:
        if not exiting:
            return
        exe, _, info = callbacks.param_words(cbdata, 3)
        life = self.by_exec.get(exe)
        code = callbacks.return_code(cbdata)
        result = None
        if info:  # CUDA 12+: cudaGraphExecUpdateResultInfo*, whose first field is the result
            value = callbacks.read_int(info)
            if 0 <= value < len(_EXEC_UPDATE_RESULTS):
                result = _EXEC_UPDATE_RESULTS[value]
        entry = {
            "at_s": self._since_s(time.perf_counter_ns()),
            "ok": code == 0,
            "result": result or ("SUCCESS" if code == 0 else f"error {code}"),
        }
        if life is not None:
            life.updates.append(entry)
            self._dirty = True

    # -- activity records (CUPTI's thread, or the recorder's at a flush) ---------------------

    def consume(self, activities: list[Any]) -> None:
        """Route kernel, copy and memset records to their graph; count the eager ones."""
        eager_ns = eager = count = 0
        with self._records_lock:
            for activity in activities:
                node = getattr(activity, "graph_node_id", 0)
                start, end = activity.start, activity.end
                count += 1
                if node:
                    life = self.by_exec_id.get(node >> 32)
                    if life is not None:
                        life.timed.add(node, start, end, activity.correlation_id)
                else:
                    eager += 1
                    eager_ns += end - start
        self.records += count
        self.eager_kernels += eager
        self.eager_kernel_ns += eager_ns
        if count:
            self._dirty = True

    # -- the recorder's thread ----------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stopped:
                self._wake.wait(TICK_S)
                self._wake.clear()
                if self._stopped:
                    break
                self._tick()
        except BaseException as exc:
            self._failed(exc)
        if self.status == "stopped":
            self._unsubscribe()
            with contextlib.suppress(Exception):
                stop_activities(self, GPU_KINDS)
            self._write_index()

    def _tick(self) -> None:
        now = time.perf_counter_ns()
        busy = max(self._last_grab_ns, self._last_launch_ns)
        idle = now - busy >= BUILD_QUIET_S * 1e9 and not self._capturing
        waited = [life for life in self.lives if life.snapshot is not None]
        overdue = bool(waited) and now - waited[0].instantiated_ns >= BUILD_LATEST_S * 1e9
        if self._records_since_ns and not self._tracing:
            overdue = overdue or now - self._records_since_ns >= BUILD_LATEST_S * 1e9
        if not (idle or overdue) or self._capturing:
            if self._dirty and now - self._index_written_ns >= INDEX_EVERY_S * 1e9:
                self._write_index()
            return
        self._build_pending()
        if self._records_since_ns and not self._tracing:
            # Collected only while the program rests: a flush takes CUPTI's locks and holds
            # the GIL while the records are read. Flushing every 0.2 s beside a decode loop
            # made it 54% slower on the H200; collected at rest, the default sampling costs
            # 2.5% (docs/RECORD.md).
            self._records_since_ns = 0
            with contextlib.suppress(Exception):
                cupti().activity_flush_all(0)
        for life in list(self.lives):
            with self._records_lock:  # CUPTI's thread may be adding records
                timed = life.timed.count
            first_timed = timed >= min(self.settings.first, life.traced) > 0
            if life.bundle is not None and life.written_with < self.settings.first and first_timed:
                self._write_bundle(life)
        if self._dirty and now - self._index_written_ns >= INDEX_EVERY_S * 1e9:
            self._write_index()

    def _build_pending(self) -> None:
        """Build every grabbed graph not built yet, with one look at memory for all."""
        pending = [life for life in list(self.lives) if life.snapshot is not None]
        if not pending:
            return
        torch = self._torch
        if torch is None or not torch.cuda.is_initialized():
            segments, spans = [], None
            self._note(
                "pointers are not named and pools not measured: both come from torch's "
                "allocator, and this process's CUDA memory is not torch's"
            )
        else:
            try:
                segments = torch.cuda.memory_snapshot()
                spans = segment_regions(segments)
            except Exception as exc:  # pointers go unnamed; the graphs are still worth having
                segments, spans = [], None
                self._note(f"could not read the allocator's memory map: {exc}")
        found: list[Region] | None = None  # modules alive now, for graphs none ran in
        for life in pending:
            pointers = None
            if spans is not None:
                if life.parameters is None and found is None:
                    try:
                        found = parameter_regions(live_models(torch))
                    except Exception:
                        found = []
                regions = life.parameters if life.parameters is not None else found
                pointers = PointerMap(regions or [], spans)
            life.parameters = None
            self._build(life, pointers, segments)

    def _note(self, text: str) -> None:
        if text not in self.notes and len(self.notes) < 100:
            self.notes.append(text)
            self._dirty = True

    def _build(
        self, life: Life, pointers: PointerMap | None, segments: list[dict[str, Any]]
    ) -> None:
        """Turn a snapshot into a bundle on disk: parse the dump, add the driver's read."""
        snap, life.snapshot = life.snapshot, None
        if snap is None or life.dot_tmp is None:
            return
        started = time.perf_counter()
        try:
            G = grab.build(snap, life.dot_tmp, pointers)
            life.attributed = grab.attach_labels(G, life.labels)
            life.labels = {}
            life.local_ids = {
                d["local_id"]: k for k, d in G.nodes(data=True) if d["graph_id"] == snap.graph_id
            }
            capture = life.capture
            if capture is not None and capture.pool is None and capture.owner is not None:
                owner = capture.owner()
                if owner is not None:
                    with contextlib.suppress(Exception):
                        capture.pool = tuple(int(x) for x in owner.pool())
            if capture is not None and capture.pool is not None:
                life.pool_bytes = allocated_in(segments, capture.pool)
            G.graph.update(self._metadata(life))
            life.graph = G
            life.dot = f"{life.id}.dot"
            os.replace(life.dot_tmp, self.folder / life.dot)
            life.dot_tmp = None
        except GraphscopeError as exc:
            life.error = f"could not build the bundle: {exc}"
        except Exception as exc:  # a bug of ours: keep recording the rest, say what it was
            life.error = f"could not build the bundle: {type(exc).__name__}: {exc}"
        life.build_ms = (time.perf_counter() - started) * 1e3
        if life.graph is not None:
            self._write_bundle(life)
        self._dirty = True

    def _metadata(self, life: Life) -> dict[str, Any]:
        if self._machine is None:  # asked once: device_info runs nvidia-smi
            from .environment import device_info, versions

            self._machine = {**versions()}
            with contextlib.suppress(Exception):
                self._machine.update(device_info(self._torch))
        meta: dict[str, Any] = dict(self._machine)
        meta.update(
            command=" ".join(self._process.get("argv") or []),
            model=life.id,
            batch_size=life.capture.batch if life.capture is not None else None,
            captured_at=now_iso(),
            attributed_nodes=life.attributed or 0,
        )
        return meta

    def _write_bundle(self, life: Life, final: bool = False) -> None:
        """Write (or rewrite, with the timing that has arrived) the graph's bundle."""
        G = life.graph
        if G is None:
            return
        with self._records_lock:
            timed = life.timed.copy()
        signature = (timed.count, life.replays, len(life.updates), life.destroyed_ns)
        if signature == life.written and (final or life.written_with >= 0):
            return  # nothing new since it was written
        if timed.count and timed.count != life.written_with:
            timing, summary = timed.timing(life.local_ids)
            # What the program pays per launch is the untraced call; CUPTI makes a traced one
            # slower (83 against 119 us on the H200: hf-generate's 62-node graph, medians).
            summary["cpu_launch_traced_us"] = summary["cpu_launch_us"]
            summary["cpu_launch_us"] = _median_us(life.launch_ns) or summary["cpu_launch_us"]
            for key in G:
                G.nodes[key].pop("replay", None)
            for key, stats in timing.nodes.items():
                G.nodes[key]["replay"] = stats
            G.graph["replays"] = timing.replays
            G.graph["timing"] = summary
            life.timing = summary
        elif life.written_with >= 0 and not final:
            return
        G.graph["recording"] = self._entry(life)
        name = f"{life.id}.json.gz"
        try:
            graphscope.save(G, self.folder / name)
            life.bundle = name
            life.written_with = timed.count
            life.written = signature
        except GraphscopeError as exc:
            life.error = f"could not write the bundle: {exc}"
        self._dirty = True

    # -- the index ----------------------------------------------------------------------------

    def _entry(self, life: Life) -> dict[str, Any]:
        capture = life.capture
        timing = life.timing or {}
        replay_us = timing.get("replay_us")
        pool = None
        if capture is not None and capture.pool is not None:
            shared = [
                other.id
                for other in self.lives
                if other is not life
                and other.capture is not None
                and other.capture.pool == capture.pool
            ]
            pool = {"id": list(capture.pool), "bytes": life.pool_bytes, "shared_with": shared}
        return {
            "id": life.id,
            "bundle": life.bundle,
            "dot": life.dot,
            "graph_id": life.graph_id,
            "exec_id": life.exec_id,
            "capturer": capture.capturer if capture is not None else "explicit",
            "site": capture.site if capture is not None else life.instantiated_site,
            "captured_at_s": self._since_s(capture.began_ns) if capture is not None else None,
            "capture_ms": (capture.ended_ns - capture.began_ns) / 1e6
            if capture is not None and capture.ended_ns is not None
            else None,
            "instantiated_at_s": self._since_s(life.instantiated_ns),
            "instantiate_ms": life.instantiate_ns / 1e6 if life.instantiate_ns else None,
            "grab_ms": life.grab_ns / 1e6,
            "build_ms": life.build_ms,
            "nodes": life.nodes,
            "kernels": life.kernels,
            "pool": pool,
            "inputs": capture.inputs if capture is not None else None,
            "batch": capture.batch if capture is not None else None,
            "rerecord_of": life.rerecord_of,
            "rerecord_reason": life.rerecord_reason,
            "program_site": (
                capture.program_site if capture is not None else life.instantiated_program_site
            ),
            "shape_changes": life.shape_changes,
            "replays": life.replays,
            "traced_replays": life.traced,
            "replay_us": replay_us,
            "cpu_launch_us": _median_us(life.launch_ns),
            "cpu_launch_traced_us": timing.get("cpu_launch_traced_us"),
            "gpu_time_us": replay_us * life.replays if replay_us is not None else None,
            "updates": list(life.updates),
            "destroyed_at_s": self._since_s(life.destroyed_ns)
            if life.destroyed_ns is not None
            else None,
            "attributed_nodes": life.attributed,
            "error": life.error,
        }

    def _process_info(self) -> dict[str, Any]:
        rank = _int_env("RANK")
        info: dict[str, Any] = {
            "pid": self.pid,
            "rank": rank,
            "world_size": _int_env("WORLD_SIZE"),
            "argv": [str(a) for a in sys.argv],
            "executable": sys.executable,
            "started_at": self.started_at,
        }
        return info

    def _fallbacks(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        utils = sys.modules.get("torch._dynamo.utils")
        counters = getattr(utils, "counters", None)
        if counters is not None:
            with contextlib.suppress(Exception):
                out["inductor_cudagraph_skips"] = int(counters["inductor"]["cudagraph_skips"])
        if self.skip_reasons:
            out["reasons"] = list(self.skip_reasons)
        return out

    def _write_index(self, ended: bool = False) -> None:
        dist = sys.modules.get("torch.distributed")
        with contextlib.suppress(Exception):
            if dist is not None and dist.is_available() and dist.is_initialized():
                self._process["rank"] = int(dist.get_rank())
                self._process["world_size"] = int(dist.get_world_size())
        with contextlib.suppress(Exception):
            torch = self._torch
            if "device" not in self._process and torch is not None and torch.cuda.is_initialized():
                self._process["device"] = self._torch.cuda.get_device_name()
        process = {
            **self._process,
            "updated_at": now_iso(),
            "ended_at": now_iso() if ended else None,
            "status": self.status,
            "stop_reason": self.stop_reason,
        }
        doc = recording.new_document(process, self.settings.as_dict())
        with self._lock:
            lives = list(self.lives)
        doc["graphs"] = [self._entry(life) for life in lives]
        doc["sampling"] = {
            "windows": self._schedule.windows,
            "records": self.records,
            # From the timed replays (busy time x launches traced), not the raw records: a
            # launch traced as tracing starts can carry records 100 ms long (CUPTI's setup).
            "graph_kernel_us": sum(
                life.timing["gpu_busy_us"] * life.traced
                for life in lives
                if life.timing and isinstance(life.timing.get("gpu_busy_us"), (int, float))
            ),
            "eager_kernels": self.eager_kernels,
            "eager_kernel_us": self.eager_kernel_ns / 1e3,
            "launches_of_unknown_graphs": self.unknown_launches,
        }
        doc["fallbacks"] = self._fallbacks()
        doc["notes"] = list(self.notes)
        path = self.folder / recording.INDEX_NAME
        try:
            write_atomic(path, recording.dumps_index(doc, path))
        except (GraphscopeError, OSError) as exc:
            if not self.notes or "index" not in self.notes[-1]:
                self.notes.append(f"could not write the index: {exc}")
        self._dirty = False
        self._index_written_ns = time.perf_counter_ns()

    def _listen_for_skips(self) -> None:
        """Hear Inductor say why it ran a function without CUDA graphs, where it says so."""
        import logging

        recorder = self

        class Skips(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                with contextlib.suppress(Exception):
                    text = record.getMessage().strip().splitlines()[0][:300]
                    if text not in recorder.skip_reasons and len(recorder.skip_reasons) < 50:
                        recorder.skip_reasons.append(text)
                        recorder._dirty = True

        self._log_handler = Skips(logging.WARNING)
        for name in _SKIP_LOGGERS:
            logging.getLogger(name).addHandler(self._log_handler)


def _median_us(values: Iterable[int]) -> float | None:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] / 1e3 if ordered else None


def _int_env(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None


def _process_folder_name(pid: int) -> str:
    rank = _int_env("RANK")
    return f"rank{rank}-pid{pid}" if rank is not None else f"pid{pid}"


def _shape_changes(before: Capture | None, after: Capture) -> list[ShapeChange]:
    """The non-static inputs whose shape differs between two captures from one site."""
    if before is None or before.inputs is None or after.inputs is None:
        return []
    old = {i["input"]: i for i in before.inputs}  # static inputs are left out of `inputs`
    changes: list[ShapeChange] = []
    for entry in after.inputs:
        was = old.get(entry["input"])
        if was is None or was["shape"] != entry["shape"]:
            changes.append(
                {
                    "input": entry["input"],
                    "from": was["shape"] if was else None,
                    "to": entry["shape"],
                }
            )
    return changes


def _pool_id(value: Any) -> tuple[int, ...] | None:
    """A memory pool id from what torch.cuda.graph was given: a handle (a pair of ints),
    ``(handle,)`` as older torch stores it, or a ``torch.cuda.MemPool``."""
    value = getattr(value, "id", value)
    if isinstance(value, tuple) and len(value) == 1:
        value = getattr(value[0], "id", value[0])
    if isinstance(value, tuple) and value and all(isinstance(x, int) for x in value):
        return tuple(value)
    return None


def _rerecord_reason(before: Capture | None, after: Capture, life: Life) -> str | None:
    """Why a site recorded again, as far as the two captures tell."""
    if life.shape_changes:
        return "new input shapes"
    if before is None or before.inputs is None or after.inputs is None:
        return None
    if (
        before.function is not None
        and after.function is not None
        and before.function != after.function
    ):
        return "same input shapes; torch.compile compiled the function again"
    return "same input shapes"


# -- one recorder per process ------------------------------------------------------------------

_recorder: Recorder | None = None
_fork_hook = False


def current() -> Recorder | None:
    """This process's recorder, if one runs."""
    return _recorder if _recorder is not None and _recorder.pid == os.getpid() else None


def start(run_dir: str | os.PathLike[str], settings: Settings | None = None) -> Recorder | None:
    """Start recording this process into ``run_dir``; None, with one line said, if refused."""
    global _recorder, _fork_hook
    if current() is not None:
        return _recorder
    recorder = Recorder(run_dir, settings)
    try:
        recorder.start()
    except CaptureError as exc:
        sys.stderr.write(
            f"graphscope record: pid {os.getpid()}: {exc}; this process runs unrecorded\n"
        )
        recorder.status = "stopped"
        recorder.stop_reason = str(exc)
        with contextlib.suppress(Exception):
            recorder._write_index(ended=True)
        return None
    _recorder = recorder
    if not _fork_hook:
        atexit.register(_finish_at_exit)
        _finish_with_multiprocessing()
        _finish_on_sigterm()
        # A forked child inherits this object but not its thread or CUPTI state.
        os.register_at_fork(after_in_child=_forget_in_child)
        _fork_hook = True
    return recorder


def _forget_in_child() -> None:
    global _recorder
    _recorder = None


def _finish_at_exit() -> None:
    recorder = current()
    if recorder is not None:
        try:
            recorder.finish()
        except Exception as exc:  # at exit: say it, never raise into the interpreter
            sys.stderr.write(f"graphscope record: could not finish the recording: {exc}\n")


def _finish_with_multiprocessing() -> None:
    """Also finish where a multiprocessing child ends with os._exit, skipping atexit."""
    with contextlib.suppress(Exception):
        from multiprocessing import util

        util.Finalize(None, _finish_at_exit, exitpriority=100)


def _finish_on_sigterm() -> None:
    """On SIGTERM with no handler of the program's, finish the recording, then die of it."""
    if threading.current_thread() is not threading.main_thread():
        return
    with contextlib.suppress(Exception):
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return

        def terminated(signum: int, frame: FrameType | None) -> None:
            _finish_at_exit()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

        signal.signal(signal.SIGTERM, terminated)


def child_environment(run_dir: str | os.PathLike[str], settings: Settings) -> dict[str, str]:
    """The variables that make Python processes started with them record into ``run_dir``."""
    path = os.environ.get("PYTHONPATH", "")
    parts = [str(BOOTSTRAP)] + [p for p in path.split(os.pathsep) if p and p != str(BOOTSTRAP)]
    return {
        ENV_OUT: str(Path(run_dir).resolve()),
        ENV_SETTINGS: json.dumps(settings.as_dict()),
        "PYTHONPATH": os.pathsep.join(parts),
    }


@contextlib.contextmanager
def record(
    out_dir: str | os.PathLike[str], settings: Settings | None = None
) -> Iterator[Recorder | None]:
    """Record this process, and the Python processes it starts, while the block runs.

    Yields the recorder (None when CUPTI refused, said in one line on stderr); on leaving,
    builds what is left and writes the final bundles and ``recording.json``.
    """
    settings = settings or Settings()
    outer = current()
    if outer is not None:  # already recorded (graphscope record runs this program)
        yield outer
        return
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    saved = {k: os.environ.get(k) for k in (ENV_OUT, ENV_SETTINGS, "PYTHONPATH")}
    os.environ.update(child_environment(out_dir, settings))
    recorder = start(out_dir, settings)
    try:
        yield recorder
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if recorder is not None:
            recorder.finish()
            global _recorder
            if _recorder is recorder:
                _recorder = None
