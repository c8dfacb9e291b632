"""Start recording in a process when a CUDA context is made in it, whatever made it.

``bootstrap/sitecustomize.py`` calls :func:`watch` in every Python process ``graphscope
record`` starts that has not imported torch, once the process loads compiled code from
outside the standard library (an installed package's extension module, or ctypes). It
subscribes the process's CUPTI subscriber (``callbacks``) to ``CONTEXT_CREATED`` alone: no
CUDA context is made, no device is touched, and a process that never uses CUDA (an engine's
front end that forks its workers) is never recorded and stays fork-safe
(benchmarks/probe_attach.py, on the H200: a child forked after the subscription initialises
CUDA as one forked without it does). JAX/XLA, CuPy, cuda-python, Numba and C++ extensions
make their contexts through the driver, so each is seen; the recorder starts inside that
callback, before the context can capture or launch a graph.

torch keeps its own start (``torch.cuda._lazy_call``, right after its CUDA initialisation),
and a process that has imported torch is left to it: in such a process a context made by
another framework is recorded only once torch initialises CUDA.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

from . import callbacks
from ._cuda import cupti


def _context_created(cbdata: Any) -> None:
    if "torch" in sys.modules:
        # torch's own start (bootstrap's _lazy_call) records a process that imported torch.
        # Starting the recorder here, inside whatever torch call made the context, broke
        # Dynamo's fake-tensor SDPA in transformers' generate (a SystemError from CPython's
        # tuple code): the callback ran Python in the middle of that call.
        return
    from . import record

    if record.current() is not None:
        return
    from .autostart import start_from_environment

    start_from_environment()


def _failed(exc: BaseException) -> None:
    sys.stderr.write(
        f"graphscope record: pid {os.getpid()}: could not start recording when a CUDA context "
        f"was made ({type(exc).__name__}: {exc}); this process runs unrecorded\n"
    )


def watch() -> str | None:
    """Start recording this process when a CUDA context is made in it; one line on stderr
    if CUPTI cannot be asked (another profiler holds it), and the program goes on. Where
    cupti-python is not installed, nothing can be watched: why, for the start-up hook to say
    at exit if the process used CUDA after all."""
    if importlib.util.find_spec("cupti") is None:
        return f"cupti-python is not installed for {sys.executable}"
    try:
        api = cupti()
        callbacks.subscriber().on(
            api.CallbackDomain.RESOURCE,
            api.CallbackIdResource.CONTEXT_CREATED,
            _context_created,
            _failed,
        )
    except Exception as exc:  # never into the program's start-up
        sys.stderr.write(
            f"graphscope record: pid {os.getpid()}: cannot watch for CUDA contexts "
            f"({type(exc).__name__}: {exc}); only a context torch makes is recorded\n"
        )
    return None
