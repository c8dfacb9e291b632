"""One recorder per process: starting it, finding it, and finishing it however the process ends.

Light on purpose: ``graphscope record``'s own process imports this for
:func:`child_environment`, and the recorder's machinery is imported only by :func:`start`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from graphscope.errors import CaptureError
from graphscope.recording import Settings

if TYPE_CHECKING:
    from .recorder import Recorder

#: Environment variables a recorded program's child processes inherit.
ENV_OUT = "GRAPHSCOPE_RECORD_OUT"
ENV_SETTINGS = "GRAPHSCOPE_RECORD_SETTINGS"
BOOTSTRAP = Path(__file__).resolve().parent.parent / "bootstrap"

_recorder: Recorder | None = None
_hooked = False


def current() -> Recorder | None:
    """This process's recorder, if one runs."""
    return _recorder if _recorder is not None and _recorder.pid == os.getpid() else None


def start(run_dir: str | os.PathLike[str], settings: Settings | None = None) -> Recorder | None:
    """Start recording this process into ``run_dir``; None, with one line said, if refused."""
    global _recorder, _hooked
    if current() is not None:
        return _recorder
    from .recorder import Recorder

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
            recorder.write_index(ended=True)
        return None
    _recorder = recorder
    if not _hooked:
        atexit.register(_finish_at_exit)
        _finish_with_multiprocessing()
        _finish_on_sigterm()
        # A forked child inherits this object but not its thread or CUPTI state.
        os.register_at_fork(after_in_child=_forget_in_child)
        _hooked = True
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
    global _recorder
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
            if _recorder is recorder:
                _recorder = None
