"""The graph lifecycle observer: stream captures, node labels, instantiation, updates, destruction.

Its handlers run on the program's threads, inside the CUDA call that fired them. They note
what the call says and what Python holds at that moment (the user's line, who captures, the
inputs, the memory pool), and hand a :class:`Life` to the recorder. At ``GRAPHEXEC_CREATED``
the graph is cloned (``grab.clone``), because the program may destroy it as soon as the call
returns; the worker reads the clone (the dump and the driver's read), parses and builds while
the program rests. A graph the driver will not clone is read there and then.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from .. import callbacks, grab, sites
from .._cuda import cupti
from ..pointers import parameter_spans
from .calls import Calls, Subscription
from .failures import FailureWatch
from .integrity import roots_of
from .lives import Capture, Life, pool_id, rerecord_reason, shape_changes
from .skips import torch_rerecord_reason

if TYPE_CHECKING:
    from .state import State

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

_PYTHON_LABELS = (
    "captured nodes were labelled in Python, about 15 us a node more than in C: the install "
    "did not build graphscope's C labeller (no C compiler or Python headers; see docs/RECORD.md)"
)


class GraphWatch:
    """Follows every graph from its capture (or explicit building) to its destruction."""

    def __init__(self, recorder: State) -> None:
        self.rec = recorder
        self.captures: dict[int, Capture] = {}  # stream handle -> capture running
        self.by_graph: dict[int, Capture] = {}  # graph handle -> capture that made it
        self.last_of_site: dict[tuple[Any, ...], Life] = {}
        self.last_of_function: dict[str, Life] = {}  # Inductor's function id -> its last graph
        self.instantiating: dict[int, int] = {}  # thread id -> ns the instantiation began
        self.capturing = 0  # stream captures running
        self.failures: FailureWatch | None = None  # told as captures begin and end
        # The C callback, where it was built: told how many captures run, it drops the
        # callbacks gated in it (the node callback, the failure watch's calls) outside them.
        self.native: Any = None
        self._gated: list[tuple[int, int]] = []

    def subscriptions(self, calls: Calls) -> list[Subscription]:
        api = cupti()
        res = api.CallbackDomain.RESOURCE
        # Each node created calls back (into C where the labeller was built, else into
        # Python): asked for only where nodes are labelled.
        labels: list[Subscription] = []
        self.native = callbacks.native_labeller()
        if self.native is not None:
            self.native.capturing(self.capturing)
        if self.rec.attribution is not None:
            created = api.CallbackIdResource.GRAPHNODE_CREATED
            labels.append((res, created, self._node_created))
            if self.native is not None:
                # Outside a capture no node is labelled, and the nodes a clone makes at each
                # instantiation (grab.clone) would each reach Python only to be dropped:
                # 1.6 us a node of a 10,411-node capture on the H100 (docs/RECORD.md).
                self._gated.append((int(res), int(created)))
                self.native.gate(*self._gated[-1])
        return [
            *labels,
            (res, api.CallbackIdResource.GRAPHEXEC_CREATE_STARTING, self._exec_starting),
            (res, api.CallbackIdResource.GRAPHEXEC_CREATED, self._exec_created),
            (res, api.CallbackIdResource.GRAPHEXEC_DESTROY_STARTING, self._exec_destroyed),
            *calls.watch(("cudaStreamBeginCapture", "cuStreamBeginCapture"), self._capture_begins),
            *calls.watch(("cudaStreamEndCapture", "cuStreamEndCapture"), self._capture_ends),
            *calls.watch(("cudaGraphExecUpdate", "cuGraphExecUpdate"), self._exec_update),
        ]

    # -- stream capture -------------------------------------------------------------------------

    def _node_created(self, cbdata: Any) -> None:
        attribution = self.rec.attribution
        if self.rec.stopped or not self.capturing or attribution is None:
            return
        attribution.label(callbacks.created_node_id(cbdata), sys._getframe(1))

    def _capture_begins(self, cbdata: Any, exiting: bool) -> None:
        (stream,) = callbacks.param_words(cbdata, 1)
        if exiting:
            code = callbacks.return_code(cbdata)
            if code and stream in self.captures:  # the capture never began
                began = self.captures.pop(stream)
                if self.failures is not None:
                    self.failures.refused(began.site, code, callbacks.function_name(cbdata))
                self._capture_done()
            return
        frame = sites.caller(1)
        frames = self.rec.frames
        assert frames is not None  # set before any observer is subscribed
        capture = Capture(
            began_ns=time.perf_counter_ns(),
            site=sites.site(frames.user_frame(frame)),
            capturer=sites.capturer(frame),
            program_site=sites.site(frames.program_frame(frame)),
            stream=stream,
            thread_id=threading.get_ident(),
        )
        _read_inputs(capture, frame)
        self.captures[stream] = capture
        self.capturing += 1
        if self.native is not None:
            self.native.capturing(self.capturing)
        if self.capturing == 1 and self.failures is not None:
            self.failures.capture_began()
        attribution = self.rec.attribution
        if self.capturing == 1 and attribution is not None:
            attribution.root_inputs = None
            attribution.activate()
            if attribution.labeller == "Python" and callbacks.native_labeller() is None:
                self.rec.note(_PYTHON_LABELS)

    def stop(self) -> None:
        """As recording stops: the gated node callback passes again, for whoever labels next
        (capture's labeller in Python)."""
        for domain, cbid in self._gated:
            with contextlib.suppress(ValueError):
                self.native.gate(domain, cbid, False)
        self._gated = []

    def _capture_done(self, ended_well: bool = True, graph: int = 0) -> None:
        self.capturing = max(0, self.capturing - 1)
        if self.native is not None:
            # The labeller's guessed node ids are checked while the graph the capture ended
            # with lives, or dropped with a capture that failed (_labeller.c's chain).
            self.native.capturing(self.capturing, ended_well, graph)
        if self.capturing == 0 and self.rec.attribution is not None:
            self.rec.attribution.deactivate()
        if self.capturing == 0 and self.failures is not None:
            self.failures.captures_over()
        if self.capturing == 0:
            self.rec.capture_ended()

    def _capture_ends(self, cbdata: Any, exiting: bool) -> None:
        if not exiting:
            return
        stream, graph_out = callbacks.param_words(cbdata, 2)
        capture = self.captures.pop(stream, None)
        if capture is None:
            return
        capture.ended_ns = time.perf_counter_ns()
        if self.failures is not None:
            self.failures.ended(
                stream, capture, callbacks.return_code(cbdata), callbacks.function_name(cbdata)
            )
        attribution = self.rec.attribution
        if capture.inputs is None and attribution is not None:
            capture.inputs = attribution.root_inputs
            if capture.batch is None and capture.inputs:
                capture.batch = sites.batch_of(capture.inputs)
        frame = sites.caller(1)
        kind = self.rec.cuda_graph_type
        holder = sites.find_local(  # the torch.cuda.graph context, given pool=... or not
            frame,
            "self",
            lambda v: kind is not None and isinstance(getattr(v, "cuda_graph", None), kind),
        )
        capture.pool = pool_id(getattr(holder, "pool", None))
        owner = getattr(holder, "cuda_graph", None) or sites.find_local(
            frame, "self", lambda v: kind is not None and isinstance(v, kind)
        )
        if owner is not None and capture.pool is None:
            # A private pool: its pool() refuses until capture_end returns (we are inside
            # it), so it is asked later, if the graph object takes a weak reference.
            with contextlib.suppress(TypeError):
                capture.owner = weakref.ref(owner)
        ended_well = not callbacks.return_code(cbdata)
        handle = callbacks.dereference(graph_out) if ended_well else 0
        self._capture_done(ended_well and bool(handle), handle)
        if handle:
            self.by_graph[handle] = capture

    # -- executable graphs ----------------------------------------------------------------------

    def _exec_starting(self, cbdata: Any) -> None:
        if not self.rec.stopped:
            self.instantiating[threading.get_ident()] = time.perf_counter_ns()

    def _exec_created(self, cbdata: Any) -> None:
        rec = self.rec
        if rec.stopped:
            return
        created = time.perf_counter_ns()
        api = cupti()
        graph, _, exe = callbacks.graph_data(cbdata)
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
        try:
            # A clone, read later by the worker: the program may destroy its graph as soon
            # as this call returns, and a clone costs it a tenth of a read (grab.clone).
            life.graph_id = int(api.get_graph_id(graph))
            life.nodes = grab.node_count(graph)
            life.clone = grab.clone(graph)
        except Exception:  # a graph the driver will not clone: read it now
            life.read(graph, rec.folder, rec.kernels)
        attribution = rec.attribution
        # The graph's labels wait in the attribution's sink, by graph id, until the worker
        # builds its bundle (Builder._build): sorting them here cost the program 1.9 to
        # 2.3 ms per 10,411-node capture on the H200.
        if attribution is not None and life.graph_id is not None and life.nodes:
            try:
                roots = attribution.live_roots()
                trees = parameter_spans(roots) if roots else []
                life.parameters = [(prefix, spans) for prefix, _, spans in trees] or None
                life.param_roots = roots_of(trees) or None
                # Buckets captured under the same parameters share one list: it is kept
                # for the integrity check, and a 3,200-tensor model's is 3,200 tuples.
                last = self.rec.lives[-1] if self.rec.lives else None
                if last is not None and last.parameters == life.parameters:
                    life.parameters = last.parameters
            except Exception:  # a module torn down mid-walk: named later, if still alive
                life.parameters = None
        if capture is not None and life.nodes:
            # An empty graph (CUDA graph trees make one first) is no earlier recording.
            earlier = self.last_of_site.get(capture.key())
            if earlier is None and capture.engine_reason and capture.function:
                # torch says it records this function again, called from elsewhere this time
                earlier = self.last_of_function.get(capture.function)
            if earlier is not None:
                life.rerecord_of = earlier.id
                life.shape_changes = shape_changes(earlier.capture, capture)
                life.rerecord_reason = rerecord_reason(earlier.capture, capture, life)
            self.last_of_site[capture.key()] = life
            if capture.function:
                self.last_of_function[capture.function] = life
        if capture is None and rec.frames is not None:
            frame = sites.caller(1)
            life.instantiated_site = sites.site(rec.frames.user_frame(frame))
            life.instantiated_program_site = sites.site(rec.frames.program_frame(frame))
        life.grab_ns = time.perf_counter_ns() - created
        rec.add_life(exe, life)

    def _exec_destroyed(self, cbdata: Any) -> None:
        if self.rec.stopped:
            return
        _, _, exe = callbacks.graph_data(cbdata)
        self.rec.destroyed(exe, time.perf_counter_ns())

    def _exec_update(self, cbdata: Any, exiting: bool) -> None:
        if not exiting:
            return
        exe, _, info = callbacks.param_words(cbdata, 3)
        code = callbacks.return_code(cbdata)
        result = None
        if info:  # CUDA 12+: cudaGraphExecUpdateResultInfo*, whose first field is the result
            value = callbacks.read_int(info)
            if 0 <= value < len(_EXEC_UPDATE_RESULTS):
                result = _EXEC_UPDATE_RESULTS[value]
        life = self.rec.by_exec.get(exe)
        if life is not None:
            life.updates.append(
                {
                    "at_s": self.rec.since_s(time.perf_counter_ns()),
                    "ok": code == 0,
                    "result": result or ("SUCCESS" if code == 0 else f"error {code}"),
                }
            )
            self.rec.dirty = True


def _read_inputs(capture: Capture, frame: Any) -> None:
    """The inputs' shapes and the batch, where the capturing code holds them."""
    node = sites.find_local(frame, "self", lambda v: type(v).__name__ == "CUDAGraphNode")
    if node is not None:  # Inductor's CUDA graph trees, inside CUDAGraphNode._record
        inputs = sites.find_local(frame, "inputs", lambda v: isinstance(v, list))
        wrapped = getattr(node, "wrapped_function", None)
        static = set(getattr(wrapped, "static_input_idxs", ()) or ())
        capture.function = str(getattr(wrapped, "id", "")) or None
        capture.engine_reason = torch_rerecord_reason(frame, inputs)
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
