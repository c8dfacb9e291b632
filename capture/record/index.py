"""The worker's second job: ``recording.json``, rewritten whole as the run goes.

The document is made by ``graphscope.recording`` (``new_document``) and checked against the
schema the reader uses (``graphscope.contract``'s ``RECORDING_*``) before each write, so what
the recorder writes is what ``inspect`` and the app read back.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import TYPE_CHECKING, Any

from graphscope import recording
from graphscope.errors import GraphscopeError
from graphscope.output import write_atomic

from ..environment import now_iso
from .lives import median_us
from .state import int_env

if TYPE_CHECKING:
    from .lives import Life
    from .state import State


def entry(rec: State, life: Life) -> dict[str, Any]:
    """One graph's entry (``RECORDING_GRAPH``), in the index and in its bundle."""
    capture = life.capture
    timing = life.timing or {}
    replay_us = timing.get("replay_us")
    pool = None
    if capture is not None and capture.pool is not None:
        shared = [
            other.id
            for other in rec.lives
            if other is not life
            and other.capture is not None
            and other.capture.pool == capture.pool
        ]
        pool = {
            "id": list(capture.pool),
            "bytes": life.pool_bytes,
            "active_bytes": life.pool_active_bytes,
            "shared_with": shared,
        }
    return {
        "id": life.id,
        "bundle": life.bundle,
        "dot": life.dot,
        "graph_id": life.graph_id,
        "exec_id": life.exec_id,
        "capturer": capture.capturer if capture is not None else "explicit",
        "site": capture.site if capture is not None else life.instantiated_site,
        "captured_at_s": rec.since_s(capture.began_ns) if capture is not None else None,
        "capture_ms": (capture.ended_ns - capture.began_ns) / 1e6
        if capture is not None and capture.ended_ns is not None
        else None,
        "instantiated_at_s": rec.since_s(life.instantiated_ns),
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
        "cpu_launch_us": median_us(life.launch_ns),
        "cpu_launch_traced_us": timing.get("cpu_launch_traced_us"),
        "gpu_time_us": replay_us * life.replays if replay_us is not None else None,
        "updates": list(life.updates),
        "destroyed_at_s": rec.since_s(life.destroyed_ns) if life.destroyed_ns is not None else None,
        "attributed_nodes": life.attributed,
        "error": life.error,
    }


def process_info(pid: int, started_at: str) -> dict[str, Any]:
    """The index's ``process`` section as the recorder starts."""
    return {
        "pid": pid,
        "rank": int_env("RANK"),
        "world_size": int_env("WORLD_SIZE"),
        "argv": [str(a) for a in sys.argv],
        "executable": sys.executable,
        "started_at": started_at,
    }


def write_index(
    rec: State,
    sampling: dict[str, Any],
    fallbacks: dict[str, Any],
    failures: list[dict[str, Any]],
    stale: list[dict[str, Any]],
    coverage: dict[str, Any],
    unchanged: list[dict[str, Any]] | None = None,
    input_checks: dict[str, Any] | None = None,
    ended: bool = False,
) -> None:
    """Rewrite the process's ``recording.json``; a failure becomes a note, never an error."""
    process = rec.process
    dist = sys.modules.get("torch.distributed")
    with contextlib.suppress(Exception):
        if dist is not None and dist.is_available() and dist.is_initialized():
            process["rank"] = int(dist.get_rank())
            process["world_size"] = int(dist.get_world_size())
    with contextlib.suppress(Exception):
        torch = rec.torch
        if "device" not in process and torch is not None and torch.cuda.is_initialized():
            process["device"] = torch.cuda.get_device_name()
    doc = recording.new_document(
        {
            **process,
            "updated_at": now_iso(),
            "ended_at": now_iso() if ended else None,
            "status": rec.status,
            "stop_reason": rec.stop_reason,
        },
        rec.settings.as_dict(),
    )
    lives = rec.lives_now()
    doc["graphs"] = [entry(rec, life) for life in lives]
    doc["sampling"] = sampling
    doc["fallbacks"] = fallbacks
    doc["capture_failures"] = failures
    doc["stale_pointers"] = stale
    doc["unchanged_inputs"] = unchanged or []
    doc["input_checks"] = input_checks or {}
    doc["memory"] = dict(rec.memory)
    doc["coverage"] = coverage
    doc["notes"] = list(rec.notes)
    path = rec.folder / recording.INDEX_NAME
    try:
        write_atomic(path, recording.dumps_index(doc, path))
    except (GraphscopeError, OSError) as exc:
        if not rec.notes or "index" not in rec.notes[-1]:
            rec.notes.append(f"could not write the index: {exc}")
    rec.dirty = False
    rec.index_written_ns = time.perf_counter_ns()
