"""Record every CUDA graph a program instantiates, whoever captures it, timed from its replays.

Usage, in code (``graphscope record -- python script.py`` does the same from outside)::

    from graphscope.capture import record
    with record.record("recording"):
        run_my_engine()

The process's one CUPTI subscriber (``callbacks``) hands events to observers, each a module:

* ``graphs``: stream captures beginning and ending (the user's line, who captures: Inductor,
  vLLM, SGLang, ``torch.cuda.graph``; the inputs' shapes where torch says them; the memory
  pool), each created node labelled with module, aten op and line while a capture runs,
  ``GRAPHEXEC_CREATED`` (the graph is cloned while it lives, ``grab.clone``, and read later),
  ``cudaGraphExecUpdate`` results and executable graphs destroyed;
* ``launches``: graph launches counted, and sampled for timing (``sampling``); traced
  launches' kernel records join nodes by graph node id;
* ``skips``: Inductor's messages when it runs a function without CUDA graphs.

The recorder's worker (``recorder``) builds bundles (``bundles``) and collects timing records
while the program rests, and rewrites ``recording.json`` (``index``) whole as the run goes, so
a killed program leaves a readable recording. A failure inside a callback is reported once on
stderr and recording stops; the program goes on. ``process`` keeps one recorder per process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .process import BOOTSTRAP, ENV_OUT, ENV_SETTINGS, child_environment, current, record, start

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = [
    "BOOTSTRAP",
    "ENV_OUT",
    "ENV_SETTINGS",
    "Recorder",
    "child_environment",
    "current",
    "record",
    "start",
]


def __getattr__(name: str) -> Any:
    # The recorder's machinery (CUPTI, grab, pointers) is imported when a recording starts,
    # not by graphscope record's own process, which needs child_environment alone.
    if name == "Recorder":
        from .recorder import Recorder

        return Recorder
    raise AttributeError(name)
