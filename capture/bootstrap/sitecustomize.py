"""graphscope record's start-up hook for the Python processes a recorded program starts.

``graphscope record`` puts this folder first on PYTHONPATH, so Python runs this file at
start-up in the program and in every Python process it starts (multiprocessing spawn and
forkserver workers, subprocesses). It does almost nothing until the process imports torch:
then it asks torch to start graphscope's recorder when CUDA is initialised, which is before
any graph can be captured, and never in a process that does not use CUDA (CUDA must not be
initialised in a process that will fork workers). A process without torch is watched for a
CUDA context from the first extension module it loads (``capture/contexts.py``). The
sitecustomize this file hides, if there is one, is run first.
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))


def _run_hidden_sitecustomize() -> None:
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None or spec.origin == __file__:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _start_recording() -> None:
    """Run by torch right after it initialises CUDA; never raises into torch."""
    try:
        from graphscope.capture import autostart
    except ImportError as exc:
        sys.stderr.write(
            f"graphscope record: pid {os.getpid()}: cannot import graphscope in {sys.executable} "
            f"({exc}); install graphscope[capture] in the environment that runs the program; "
            "this process runs unrecorded\n"
        )
        return
    autostart.start_from_environment()


def _torch_imported(torch: ModuleType) -> None:
    try:
        torch.cuda._lazy_call(_start_recording)
    except Exception as exc:  # a torch without _lazy_call: record from the start instead
        sys.stderr.write(f"graphscope record: torch.cuda._lazy_call is unavailable ({exc})\n")
        _start_recording()


class _Loader(importlib.abc.Loader):
    """torch's own loader, with a call after the module has run."""

    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        _torch_imported(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _WhenTorchIsImported(importlib.abc.MetaPathFinder):
    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def _watch_contexts() -> None:
    """Start recording when any framework makes a CUDA context (capture/contexts.py)."""
    try:
        from graphscope.capture import contexts
    except ImportError as exc:
        _say_at_exit_if_cuda_was_used(f"cannot import graphscope in {sys.executable} ({exc})")
        return
    cannot = contexts.watch()
    if cannot:
        _say_at_exit_if_cuda_was_used(cannot)


def _say_at_exit_if_cuda_was_used(why: str) -> None:
    """No CUDA context can be watched for here: say at exit, once, if the process loaded
    the CUDA driver after all, so that it is not missing from the recording unexplained. (A
    process in which torch initialised CUDA has said so then: _start_recording.)"""
    import atexit

    def check() -> None:
        torch = sys.modules.get("torch")
        try:
            if torch is not None and torch.cuda.is_initialized():
                return
            # The test graphscope/descendants.py makes of other processes, written again
            # here: this runs where graphscope itself may not be importable.
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
                if not any("/libcuda.so" in line for line in maps):
                    return
        except Exception:  # not Linux, or torch half torn down: nothing to say
            return
        sys.stderr.write(
            f"graphscope record: pid {os.getpid()}: this process loaded the CUDA driver and "
            f"ran unrecorded: {why}; install graphscope[capture] in the environment that "
            "runs the program\n"
        )

    atexit.register(check)


_STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
_INSTALLED = ("site-packages", "dist-packages")


class _WhenAnExtensionLoads:
    """Watches for CUDA contexts once the process loads compiled code from outside the standard
    library: an extension module of an installed package, or ctypes.

    CUDA is reached from Python through compiled code: JAX's, CuPy's, cuda-python's, Numba's,
    a C++ extension's, ctypes. Subscribing to CUPTI imports cupti-python (with numpy) and
    libcupti: 0.37 s of the 0.52 s that ``graphscope record`` added to ``python -c pass`` on the
    H200 (benchmarks/bench_record.py startup), which a process that never loads such code (an
    engine's front end, a tokenizer worker) is now spared.

    The watch starts when the import statement that loaded the extension has finished, not
    inside it: cupti-python imports numpy, and graphscope imports ctypes, either of which may
    be the package half-way through importing. That is before the program can call into the
    package; a package that makes a CUDA context while it is imported is not seen. torch keeps
    its own start (_WhenTorchIsImported): its contexts are recorded from there.
    """

    def __init__(self) -> None:
        self._create = importlib.machinery.ExtensionFileLoader.create_module
        self._import = builtins.__import__
        self._local = threading.local()  # this thread's depth in import statements
        self._pending = False
        self._done = False
        self._patched: Any = None
        self._wrapper: Any = None

    def install(self) -> None:
        hook = self

        def create_module(loader: Any, spec: importlib.machinery.ModuleSpec) -> Any:
            hook.loading(str(getattr(loader, "path", "") or ""))
            return hook._create(loader, spec)

        def importing(*args: Any, **kwargs: Any) -> Any:
            local = hook._local
            local.depth = getattr(local, "depth", 0) + 1
            try:
                return hook._import(*args, **kwargs)
            finally:
                local.depth -= 1
                if hook._pending and not local.depth:
                    hook.watch()

        loader_class: Any = importlib.machinery.ExtensionFileLoader
        loader_class.create_module = self._patched = create_module
        builtins.__import__ = self._wrapper = importing

    def loading(self, path: str) -> None:
        if self._pending or self._done:
            return
        stdlib = path.startswith(_STDLIB) and not any(part in path for part in _INSTALLED)
        if stdlib and "_ctypes" not in os.path.basename(path):
            return
        loader_class: Any = importlib.machinery.ExtensionFileLoader
        if loader_class.create_module is self._patched:
            loader_class.create_module = self._create
        self._pending = True
        if not getattr(self._local, "depth", 0):  # importlib.import_module, not a statement
            self.watch()

    def watch(self) -> None:
        if self._done:
            return
        self._done, self._pending = True, False
        if builtins.__import__ is self._wrapper:  # not if something wrapped ours since
            builtins.__import__ = self._import
        if "torch" not in sys.modules:
            _watch_contexts()


_XLA_ADDED = "GRAPHSCOPE_XLA_FLAGS_ADDED"  # what a recorded parent appended to XLA_FLAGS


def _ask_xla_for_its_hlo(out: str) -> None:
    """Ask XLA to dump each module it compiles, optimized, as text into this process's
    recording folder, where the recorder reads the HLO op and Python line of each kernel
    (graphscope/hlo.py). Set before the program can start XLA, which reads XLA_FLAGS once.

    The program's own flags are kept; what a recorded parent added for itself is replaced
    (children inherit it); a program that dumps already is left alone, and its dump read."""
    flags = os.environ.get("XLA_FLAGS", "")
    added = os.environ.get(_XLA_ADDED, "")
    if added:  # the program may have added flags of its own after ours since
        flags = flags.replace(added, "", 1)
    if "--xla_dump_to" in flags or any(c.isspace() for c in out):  # XLA splits on spaces
        os.environ["XLA_FLAGS"] = flags
        os.environ.pop(_XLA_ADDED, None)
        return
    # The process's folder, as the recorder names it (record/state.py process_folder_name).
    rank = os.environ.get("RANK", "")
    name = f"rank{rank}-pid{os.getpid()}" if rank.isdigit() else f"pid{os.getpid()}"
    added = f" --xla_dump_to={os.path.join(out, name, 'xla')} --xla_dump_hlo_as_text"
    os.environ["XLA_FLAGS"] = flags + added
    os.environ[_XLA_ADDED] = added


try:
    _run_hidden_sitecustomize()
finally:
    if os.environ.get("GRAPHSCOPE_RECORD_OUT"):
        _ask_xla_for_its_hlo(os.environ["GRAPHSCOPE_RECORD_OUT"])
        if "torch" in sys.modules:
            _torch_imported(sys.modules["torch"])
        else:
            sys.meta_path.insert(0, _WhenTorchIsImported())
        if "torch" not in sys.modules:
            _WhenAnExtensionLoads().install()
