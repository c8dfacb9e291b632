"""Start recording in a process ``graphscope record`` started, from its environment.

Called by ``bootstrap/sitecustomize.py`` once torch has initialised CUDA in the process.
Never raises: a process that cannot be recorded says so in one line and runs on.
"""

from __future__ import annotations

import json
import os
import sys

from .record import ENV_OUT, ENV_SETTINGS, start
from .sampling import Settings


def start_from_environment() -> None:
    """Record this process into the folder ``GRAPHSCOPE_RECORD_OUT`` names."""
    out = os.environ.get(ENV_OUT)
    if not out:
        return
    try:
        settings = Settings.from_dict(json.loads(os.environ.get(ENV_SETTINGS) or "{}"))
    except ValueError:
        settings = Settings()
    try:
        start(out, settings)
    except Exception as exc:  # a bug of ours must not stop torch from initialising CUDA
        sys.stderr.write(
            f"graphscope record: pid {os.getpid()}: could not start recording "
            f"({type(exc).__name__}: {exc}); this process runs unrecorded\n"
        )
