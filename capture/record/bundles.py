"""The worker's first job: turn each graph's snapshot into a bundle, and rewrite it with timing.

Runs on the recorder's thread while the program rests (or at exit), never in a callback: it
parses dumps, reads torch's allocator and scans the process's objects for modules, all
holding the GIL the program's own threads need.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING, Any

import graphscope
from graphscope import pace
from graphscope.errors import GraphscopeError

from .. import grab
from ..environment import now_iso
from ..pointers import (
    PointerMap,
    Region,
    active_in,
    allocated_in,
    live_models,
    parameter_regions,
    regions_of,
    segment_regions,
)
from .blocks import BlockMap, watches
from .index import entry
from .lives import median_us

if TYPE_CHECKING:
    from .lives import Life
    from .state import State


class Builder:
    """Builds and writes the recorder's bundles."""

    def __init__(self, recorder: State) -> None:
        self.rec = recorder
        self._machine: dict[str, Any] | None = None

    def build_pending(self) -> None:
        """Build every grabbed graph not built yet, with one look at memory for all."""
        rec = self.rec
        pending = [life for life in list(rec.lives) if life.unread]
        if not pending:
            return
        for life in pending:
            pace.point()  # between graphs and stages too: each is milliseconds of the GIL
            self._read_clone(life)
        pace.point()
        torch = rec.torch
        if torch is None or not torch.cuda.is_initialized():
            segments, spans = [], None
            rec.note(
                "pointers are not named and pools not measured: both come from torch's "
                "allocator, and this process's CUDA memory is not torch's"
            )
        else:
            try:
                segments = torch.cuda.memory_snapshot()
                spans = segment_regions(segments)
                self.rec.memory = {
                    "reserved_bytes": sum(s["total_size"] for s in segments),
                    "active_bytes": active_in(segments),
                    "at_s": self.rec.since_s(time.perf_counter_ns()),
                }
            except Exception as exc:  # pointers go unnamed; the graphs are still worth having
                segments, spans = [], None
                rec.note(f"could not read the allocator's memory map: {exc}")
        found: list[Region] | None = None  # modules alive now, for graphs none ran in
        block_map: BlockMap | None = None
        for life in pending:
            pace.point()
            pointers = None
            if spans is not None:
                if life.parameters is None and found is None:
                    try:
                        found = parameter_regions(live_models(torch))
                    except Exception:
                        found = []
                regions = regions_of(life.parameters) if life.parameters is not None else found
                pointers = PointerMap(regions or [], spans)
            # kept: the integrity check compares it with where the parameters are later
            self._build(life, pointers, segments)
            if segments and life.graph is not None:
                try:
                    if block_map is None:
                        block_map = BlockMap(segments)
                    pool = life.capture.pool if life.capture is not None else None
                    life.blocks = watches(life.graph, block_map, pool)
                    if life.blocks and rec.inputs is not None:
                        rec.inputs.arm(life, life.blocks)
                except Exception as exc:  # the other checks and the bundle are still good
                    rec.note(f"allocator blocks not watched: {type(exc).__name__}: {exc}")

    def _read_clone(self, life: Life) -> None:
        """Dump and read the clone made at instantiation, then destroy it."""
        handle, life.clone = life.clone, None
        if handle is None:
            return
        try:
            life.read(handle, self.rec.folder, self.rec.kernels, as_graph=life.graph_id)
        finally:
            with contextlib.suppress(Exception):
                grab.destroy(handle)

    def _build(
        self, life: Life, pointers: PointerMap | None, segments: list[dict[str, Any]]
    ) -> None:
        """Turn a snapshot into a bundle on disk: parse the dump, add the driver's read."""
        snap, life.snapshot = life.snapshot, None
        if snap is None or life.dot_tmp is None:
            return
        folder = self.rec.folder
        started = time.perf_counter()
        try:
            G = grab.build(snap, life.dot_tmp, pointers)
            attribution = self.rec.attribution
            if attribution is not None and life.graph_id is not None:
                raws = attribution.take(life.graph_id)
                life.attributed = grab.attach_labels(G, attribution.make_labels(raws))
            modules = self.rec.hlo.update() if self.rec.hlo is not None else []
            if modules:  # XLA's kernels: the HLO op and line its dump gives
                life.attributed = (life.attributed or 0) + grab.attach_hlo(G, modules)
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
                life.pool_active_bytes = active_in(segments, capture.pool)
            G.graph.update(self._metadata(life))
            life.graph = G
            life.dot = f"{life.id}.dot"
            os.replace(life.dot_tmp, folder / life.dot)
            life.dot_tmp = None
        except GraphscopeError as exc:
            life.error = f"could not build the bundle: {exc}"
        except Exception as exc:  # a bug of ours: keep recording the rest, say what it was
            life.error = f"could not build the bundle: {type(exc).__name__}: {exc}"
        life.build_ms = (time.perf_counter() - started) * 1e3
        if life.graph is not None:
            self.write(life)
        self.rec.dirty = True

    def _metadata(self, life: Life) -> dict[str, Any]:
        if self._machine is None:  # asked once per process
            from ..environment import device_info, versions

            self._machine = {**versions()}
            with contextlib.suppress(Exception):
                self._machine.update(device_info(self.rec.torch))
        meta: dict[str, Any] = dict(self._machine)
        meta.update(
            command=" ".join(self.rec.process.get("argv") or []),
            model=life.id,
            batch_size=life.capture.batch if life.capture is not None else None,
            captured_at=now_iso(),
            attributed_nodes=life.attributed or 0,
        )
        return meta

    def write(self, life: Life, final: bool = False) -> None:
        """Write (or rewrite, with the timing that has arrived) the graph's bundle."""
        G = life.graph
        if G is None:
            return
        rec = self.rec
        with rec.records_lock:
            timed = life.timed.copy()
        signature = (timed.count, life.replays, len(life.updates), life.destroyed_ns)
        if signature == life.written and (final or life.written_with >= 0):
            return  # nothing new since it was written
        if timed.count and timed.count != life.written_with:
            timing, summary = timed.timing(life.local_ids)
            # What the program pays per launch is the untraced call; CUPTI makes a traced one
            # slower (83 against 119 us on the H200: hf-generate's 62-node graph, medians).
            summary["cpu_launch_traced_us"] = summary["cpu_launch_us"]
            summary["cpu_launch_us"] = median_us(life.launch_ns) or summary["cpu_launch_us"]
            for key in G:
                G.nodes[key].pop("replay", None)
            for key, stats in timing.nodes.items():
                G.nodes[key]["replay"] = stats
            G.graph["replays"] = timing.replays
            G.graph["timing"] = summary
            life.timing = summary
        elif life.written_with >= 0 and not final:
            return
        G.graph["recording"] = entry(rec, life)
        name = f"{life.id}.json.gz"
        try:
            graphscope.save(G, rec.folder / name)
            life.bundle = name
            life.written_with = timed.count
            life.written = signature
        except GraphscopeError as exc:
            life.error = f"could not write the bundle: {exc}"
        rec.dirty = True
