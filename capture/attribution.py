"""Label every node a capture creates with the nn.Module path, the aten op and the source line.

Works on a 13.0 driver, where PyTorch's own node annotations need 13.1 (DESIGN.md): a CUPTI
callback on the RESOURCE domain's GRAPHNODE_CREATED fires inside the CUDA call that creates
each node, on the thread running the step, while a ``TorchDispatchMode`` knows the running
aten op. The callback reads it and, from that thread's Python frames, the innermost module
whose method runs (a frame whose ``self`` is an ``nn.Module``) and the innermost frame outside
torch. Global module hooks kept the module stack once, and made torch run every module call
through its slow path: one hook is left, removed at its first call, for the capture's inputs.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FrameType, TracebackType
from typing import Any, TypedDict

from graphscope.errors import CaptureError
from graphscope.pace import paced

from ._cuda import cupti, require
from .callbacks import created_node_id, native_labeller, subscriber
from .failure import FailureSite, frames_of, innermost_module, user_site
from .sites import Frames, TensorInput, tensor_inputs

_HERE = os.path.dirname(os.path.abspath(__file__))
_MODELS = str((Path(_HERE) / "models.py").resolve())


def library_paths(torch: Any) -> tuple[str, ...]:
    """Folders and files whose frames are never the user's line.

    torch (``torch`` None where it is not imported), JAX, CuPy, Numba, CUDA and CUPTI, and
    graphscope's own machinery; not ``capture/models.py``, whose
    built-in models are the user's code when the CLI captures them.
    """
    import graphscope

    paths = [os.path.join(os.path.dirname(os.path.abspath(graphscope.__file__)), "cli.py")]
    if torch is not None:
        paths.append(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    # The frameworks whose own frames launch graphs: the user's line is the one calling them.
    for name in ("cupti", "cuda", "triton", "jax", "jaxlib", "cupy", "cupy_backends", "numba"):
        module = sys.modules.get(name)
        paths += [os.path.abspath(p) + os.sep for p in getattr(module, "__path__", None) or []]
    # The code torch.compile generates (and Triton's launchers) lives in Inductor's cache
    # folder; the user's line is the frame that called the compiled model. That folder is
    # known once the program imports Inductor: see generated_code_dirs.
    paths += generated_code_dirs()
    for folder in {os.path.dirname(os.path.abspath(graphscope.__file__)), _HERE}:
        for file in Path(folder).rglob("*.py"):
            if str(file.resolve()) != _MODELS:
                paths.append(str(file))
    return tuple(paths)


def module_path(name: str) -> str:
    """A ``named_modules()`` path without the ``_orig_mod`` levels torch.compile adds.

    ``torch.compile(model)`` wraps a module in an ``OptimizedModule`` whose one child,
    ``_orig_mod``, is the module itself: ``_orig_mod.layers.0`` is the user's ``layers.0``.
    """
    return ".".join(part for part in name.split(".") if part != "_orig_mod")


def module_names(model: Any) -> dict[int, str]:
    """``id(module)`` to its path, for every module of ``model`` (compiled wrappers included).

    Runs inside the first capture, once per model: only the paths with a wrapper in them are
    split and joined (3,205 modules of a 400-layer decoder: 5.8 ms to 2.2 ms on the
    development VM, against a capture of about 10,000 nodes)."""
    return {
        id(m): module_path(name) if "_orig_mod" in name else name
        for name, m in model.named_modules()
    }


def _stack(frame: FrameType | None) -> list[FrameType]:
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    frames.reverse()  # outermost first, like a traceback
    return frames


class _Label(TypedDict):
    module: str | None  # the innermost module running (see Attribution)
    op: str | None  # the aten op running: "aten::mm"
    file: str | None  # the user's line that was running (innermost frame outside torch)
    line: int | None
    function: str | None


class Label(_Label, total=False):
    """What was running when a node was created (a node's ``attribution``)."""

    compiled: dict[str, str]  # what Inductor's generated code says the kernel call fuses
    hlo: dict[str, str]  # XLA's kernels: the HLO module and instruction (graphscope.hlo)


# What the node-created callback notes, made into a Label later, off the program's path:
# (node id, module, op, the user's code, its line, generated code's file, its line). The C
# labeller (_labeller.c) appends the same tuples.
RawLabel = tuple[int, str | None, str | None, CodeType | None, int | None, str | None, int | None]


def _self_of(frame: FrameType) -> Any:
    """The first argument of the method ``frame`` runs, if it is named ``self``."""
    code = frame.f_code
    if code.co_argcount and code.co_varnames[0] == "self":
        return frame.f_locals.get("self")
    return None


def module_at(
    frame: FrameType | None,
    module_type: type,
    names: dict[int, str],
    learn: Callable[[Any, Any], str],
) -> str | None:
    """The path of the innermost module whose method runs at ``frame``, or None: by ``id()``
    in ``names``, else ``learn(module, outermost module running)``. What the C labeller
    reads, in Python."""
    found = None
    while frame is not None:
        owner = _self_of(frame)
        # type(), as C's PyObject_TypeCheck: not the __class__ a proxy may answer
        if owner is not None and issubclass(type(owner), module_type):
            found = owner
            break
        frame = frame.f_back
    if found is None:
        return None
    name = names.get(id(found))
    if name is not None:
        return name
    outermost = found
    while frame is not None:
        owner = _self_of(frame)
        if owner is not None and issubclass(type(owner), module_type):
            outermost = owner
        frame = frame.f_back
    return learn(found, outermost)


def raw_label(
    frames: Frames, packed: int, module: str | None, op: str | None, frame: FrameType | None
) -> RawLabel:
    """What the node-created callback notes of node ``packed``, created under ``frame``."""
    user, generated = frames.origin(frame)
    return (
        packed,
        module,
        op,
        user.f_code if user is not None else None,
        user.f_lineno if user is not None else None,
        generated.f_code.co_filename if generated is not None else None,
        generated.f_lineno if generated is not None else None,
    )


def make_labels(frames: Frames, raws: list[RawLabel]) -> dict[int, Label]:
    """Labels by node id, from what the callback noted (Python's or C's)."""
    labels: dict[int, Label] = {}
    for packed, module, op, code, line, generated, generated_line in paced(raws):
        label: Label = {
            "module": module,
            "op": op,
            "file": code.co_filename if code is not None else None,
            "line": line,
            "function": code.co_name if code is not None else None,
        }
        if generated is not None and generated_line is not None:
            compiled = frames.compiled_at(generated, generated_line)
            if compiled is not None:
                label["compiled"] = compiled
        labels[packed] = label
    return labels


class Attribution:
    """While active, records a label per created node; keyed by CUPTI's packed node id.

    ``labels[(graph_id << 32) | local_id]`` is a :class:`Label`: its ``module`` is the
    ``named_modules()`` path of the innermost module running (``""`` for the model itself,
    None when no module ran: code of the step around the model), and ``compiled`` what
    Inductor's generated code says a kernel call fuses. ``failure`` is set when an aten op
    raised.

    Without a ``model``, paths are named from the outermost module that runs while active:
    what ``graphscope record`` does, knowing nothing of the program. ``root_inputs`` then holds
    the shapes of that module's tensor arguments.
    """

    def __init__(self, model: Any = None, track_ops: bool = True, native: bool = True) -> None:
        self.torch = require("torch")
        self.names: dict[int, str] = module_names(model) if model is not None else {}
        self._fixed_model = model is not None
        self.op: str | None = None
        # The callback appends RawLabels to _sink; they are sorted by graph as they are taken.
        self._sink: list[RawLabel] = []
        self._taken: dict[int, list[RawLabel]] = {}
        self._take_lock = threading.Lock()
        self._labels: dict[int, Label] = {}
        self.failure: FailureSite | None = None
        self.root_inputs: list[TensorInput] | None = None
        # The outermost modules seen running, by id: their parameters name pointers while
        # they live (weak: graphscope keeps no model alive).
        self.roots: dict[int, weakref.ref[Any]] = {}
        self._library = library_paths(self.torch)
        self.frames = Frames(self._library, generated_code_dirs)
        self._handles: list[Any] = []
        self._mode: Any = None
        # The op tracker puts every aten op through Python (a TorchDispatchMode), the most
        # costly part of recording a capture (docs/RECORD.md). ``record`` asks for it only
        # with --ops; without it a label's op is None.
        self.track_ops = track_ops
        # The C labeller serves where it was built, the op is not wanted (it comes from the
        # dispatch mode, in Python) and the subscription runs through it (callbacks.py).
        self._native = native and not track_ops
        self._kinds: dict[str, int] = {}  # the C labeller's cache of Frames.kind
        self.labeller = "none"  # which labelled the last capture: "C", "Python" or "none"
        self._labelling_natively = False
        self._labelled_natively = False  # its labels may wait in the C labeller's stash
        self._subscribed = False
        self._warnings: Any = None

    def live_roots(self) -> list[Any]:
        """The outermost modules seen running that are still alive. One may have become part
        of another since it ran: ``pointers.parameter_spans`` leaves such trees out."""
        return [m for m in (r() for r in list(self.roots.values())) if m is not None]

    def name_of(self, module: Any) -> str | None:
        return self.names.get(id(module))

    def module_at(self, frame: FrameType | None) -> str | None:
        """The path of the innermost module whose method runs at ``frame``, or None."""
        return module_at(frame, self.torch.nn.Module, self.names, self._learn)

    def _learn(self, module: Any, outermost: Any) -> str:
        """The path of ``module``, met for the first time: the tree of ``outermost``, the
        outermost module running, is named (once per tree) and kept as a root."""
        if not self._fixed_model and id(outermost) not in self.names:
            self.names.update(module_names(outermost))
            self.roots[id(outermost)] = weakref.ref(outermost)
        name = self.names.get(id(module))
        if name is None:  # held outside the tree it runs in: its class names it
            name = self.names[id(module)] = type(module).__name__
        return name

    def _first_module(self, module: Any, args: Any) -> None:
        """A global pre-hook for the first module called while active: its tensor arguments
        are the capture's inputs. It removes itself, so that torch's fast path serves every
        later module call (a registered global hook sends each through the slow one)."""
        if self.root_inputs is None:
            self.root_inputs = tensor_inputs(args if isinstance(args, tuple) else (args,))
        self._unhook()

    def _unhook(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def label(self, packed: int, frame: FrameType | None) -> None:
        """Label node ``packed`` (CUPTI's graph node id) with what runs at ``frame`` now."""
        self._sink.append(raw_label(self.frames, packed, self.module_at(frame), self.op, frame))

    def _node_created(self, cbdata: Any) -> None:
        self.label(created_node_id(cbdata), sys._getframe(1))

    def take(self, graph_id: int) -> list[RawLabel]:
        """The labels of graph ``graph_id``'s nodes, taken out (cheap: at instantiation)."""
        with self._take_lock:
            self._drain()
            sink = self._sink
            count = len(sink)  # the callback may append more meanwhile: those stay
            taken = self._taken
            for raw in sink[:count]:
                taken.setdefault(raw[0] >> 32, []).append(raw)
            del sink[:count]
            return taken.pop(graph_id, [])

    def _drain(self) -> None:
        """Have the C labeller append what it noted to the sink: it makes no tuple, and reads
        no line, while the program captures, nor when a capture ends (its stop() keeps the
        labels for this)."""
        if self._labelled_natively:
            native = native_labeller()
            if native is not None:
                native.drain()

    def make_labels(self, raws: list[RawLabel]) -> dict[int, Label]:
        """Labels by node id, from what the callback noted."""
        return make_labels(self.frames, raws)

    @property
    def labels(self) -> dict[int, Label]:
        """Every label not taken by :meth:`take`, by node id."""
        with self._take_lock:
            self._drain()
            count = len(self._sink)
            raws = [r for rs in self._taken.values() for r in rs] + self._sink[:count]
            self._taken.clear()
            del self._sink[:count]
        self._labels.update(self.make_labels(raws))
        return self._labels

    def note_failure(self, tb: TracebackType | None) -> None:
        """Remember where an op raised; the first failure wins."""
        if self.failure is not None:
            return
        frames = frames_of(tb)
        frames = _stack(frames[0].f_back) + frames if frames else _stack(sys._getframe(1))
        site = user_site(frames, self._library + generated_code_dirs())
        site.op = self.op
        site.module = innermost_module(frames, self.name_of)
        self.failure = site

    def site_of(self, exc: BaseException) -> FailureSite:
        """Where ``exc`` (or the first error of its chain) came from in the user's code."""
        from .failure import first_error

        if self.failure is not None:
            return self.failure
        cause = first_error(exc)
        frames = frames_of(cause.__traceback__)
        site = user_site(frames, self._library + generated_code_dirs())
        site.module = innermost_module(frames, self.name_of)
        return site

    def activate(self) -> None:
        """Start tracking modules and ops (on the calling thread, for the op)."""
        torch = self.torch
        hooks = torch.nn.modules.module
        # Our global hooks make torch.compile warn that they fire for its OptimizedModule too;
        # the user can do nothing about that, and the extra entry is harmless (module_names).
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.filterwarnings("ignore", message=r"Using `torch\.compile\(module\)` when there")
        self._handles = [hooks.register_module_forward_pre_hook(self._first_module)]
        if self.track_ops:
            self._mode = _op_tracker(self)
            self._mode.__enter__()
        self.labeller = "Python"
        native = native_labeller() if self._native else None
        # One C labeller per process: a second Attribution active at once labels in Python.
        if native is not None and subscriber().labels_natively and not native.active():
            native.start(
                self._sink,
                self.names,
                torch.nn.Module,
                self._kinds,
                self.frames.kind,
                self._learn,
                self._failed,
            )
            self.labeller = "C"
            self._labelling_natively = self._labelled_natively = True

    def deactivate(self) -> None:
        """Stop tracking; labels stay."""
        if self._labelling_natively:
            self._labelling_natively = False
            native = native_labeller()
            if native is not None:
                native.stop()
        if self._mode is not None:
            mode, self._mode = self._mode, None
            # Raises when another mode was pushed above ours and is still active.
            with contextlib.suppress(Exception):
                mode.__exit__(None, None, None)
        self._unhook()
        if self._warnings is not None:
            self._warnings.__exit__(None, None, None)
            self._warnings = None
        self.op = None

    def __enter__(self) -> Attribution:
        api = cupti()
        try:  # subscribed first: activate() asks whether the C labeller can serve
            subscriber().on(
                api.CallbackDomain.RESOURCE,
                api.CallbackIdResource.GRAPHNODE_CREATED,
                self._node_created,
                self._failed,
            )
        except CaptureError as exc:
            raise CaptureError(f"CUPTI could not watch node creation: {exc}") from None
        self._subscribed = True
        try:
            self.activate()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _failed(self, exc: BaseException) -> None:
        """The node-created callback raised: the first failure is kept, as an op's is."""
        if self.failure is None:
            self.failure = FailureSite(op=f"graphscope attribution: {type(exc).__name__}: {exc}")

    def __exit__(self, *exc: object) -> None:
        if self._subscribed:
            api = cupti()
            subscriber().off(
                api.CallbackDomain.RESOURCE,
                api.CallbackIdResource.GRAPHNODE_CREATED,
                self._node_created,
            )
            self._subscribed = False
        self.deactivate()


_generated: tuple[str, ...] | None = None


def generated_code_dirs() -> tuple[str, ...]:
    """Where Inductor writes the Python it generates (its cache folder); ``()`` until the
    program has imported Inductor, which it does before it runs any generated code.

    Asking Inductor earlier would import it, and torch._dynamo with it, into every recorded
    process: seconds of start-up in a program that never compiles (issue 25)."""
    global _generated
    if _generated is None:
        if "torch._inductor" not in sys.modules:
            return ()
        try:
            from torch._inductor.runtime.cache_dir_utils import cache_dir

            _generated = (os.path.abspath(cache_dir()) + os.sep,)
        except Exception:  # an older or newer torch: compiled code is then user code
            _generated = ()
    return _generated


def dispatch_mode(handle: Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]) -> Any:
    """A TorchDispatchMode that runs every aten op as ``handle(func, args, kwargs)``, made to
    sit beside torch.compile (the attribution's op tracker and the value comparison's tape,
    ``capture.numerics``, are two)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    # TorchDispatchMode wraps a subclass's __torch_dispatch__ in torch._disable_dynamo unless
    # the subclass opts out, and that wrapper imports torch._dynamo (sympy, fsdp, Inductor's
    # custom ops) at its first call: 4.9 s in a program that never compiles (issue 25), 7.6 s
    # of a 5,211-node capture on the H100 where nothing had compiled the modules' bytecode
    # yet. Where the program has not imported Dynamo, nothing can compile into this frame.
    compiling = "torch._dynamo" in sys.modules

    class Mode(TorchDispatchMode):  # type: ignore[misc]  # torch is untyped here: Any
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return compiling

        @classmethod
        def ignore_compile_internals(cls) -> bool:
            # While a dispatch mode without this is active, torch.compile runs every compiled
            # frame eagerly: the graph captured would hold aten's kernels, not the compiled
            # ones the user runs. With it the mode is off while Dynamo compiles and on while
            # the compiled code runs, seeing the ops that code calls through aten.
            return True

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            return handle(func, args, kwargs or {})

    return Mode()


def _op_tracker(attribution: Attribution) -> Any:
    """A TorchDispatchMode that keeps ``attribution.op`` set to the running aten op."""

    def track(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        previous = attribution.op
        attribution.op = func._schema.name  # "aten::mm"
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            attribution.note_failure(exc.__traceback__)
            raise
        finally:
            attribution.op = previous

    return dispatch_mode(track)
