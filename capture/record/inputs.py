"""The input observer: small buffers a graph reads that hold the same bytes at every replay.

A program feeds a graph by copying each step's values into the tensors it was captured with
(``x.copy_(new)``). One that binds the name to a new tensor instead (``x = new``), while
something still holds the old one, leaves the graph reading the old values: every replay
computes with the input of the step it was captured at, and nothing raises. (Where the old
tensor is freed instead, ``blocks.py`` files it.)

Once a graph is read, the small allocator blocks it points into (``blocks.watches``: outside
its own pool and outside the model's parameters and buffers, at most ``BLOCK_BYTES`` each) are
armed. At sampled launches of the graph (the first after arming, each power of two after, and
at least once every ``SAMPLE_EVERY_S``), the launch handler, on the program's thread, enqueues
a copy of each armed block into pinned host memory on the launch's own stream, then an event,
both just before the graph itself: the copies read only blocks the graph's own kernels are
about to read, in the same stream order, so they read nothing the graph would not. The worker
compares each finished sample with the one before. A block whose bytes did not change over at
least ``MIN_SAMPLES`` samples is filed. That says what was seen, not why: nothing wrote the
block between those replays, or something wrote the same values each time (a benchmark that
replays one input, a constant table kept outside any module). The finding says both.

Not sampled: a launch traced for timing (the copies would join its records), and any launch
while a stream capture runs in the process (a copy on a capturing stream would join its
graph). Graphs whose memory torch's allocator does not hold (JAX's, CuPy's) have no blocks to
arm: the index says how many graphs and blocks were checked.
"""

from __future__ import annotations

import ctypes
import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from graphscope.model import display_name, origin_of

from .blocks import Block, Watch, block_name

if TYPE_CHECKING:
    from .lives import Life
    from .state import State

#: Blocks larger than this are not sampled: an input a step feeds (tokens, positions, slot
#: maps) is small, while a KV cache is large and written by the graph itself in places.
BLOCK_BYTES = 64 * 1024
BLOCKS_PER_GRAPH = 8  # the first blocks in the graph's node order: its inputs come first
PINNED_BYTES = 16 * 1024 * 1024  # host memory for samples, all graphs told; past it, none armed
SLOTS = 2  # samples in flight per graph
SAMPLE_EVERY_S = 1.0
#: Samples that must agree before a block is filed (the first is compared with none).
MIN_SAMPLES = 4


class Driver(Protocol):
    """The CUDA calls the observer makes; :class:`CudaDriver`, or a stand-in in tests."""

    def host(self, nbytes: int) -> tuple[int, memoryview]: ...  # pinned: address, bytes
    def free(self, host: int) -> None: ...  # give back what ``host`` gave
    def event(self) -> int: ...
    def copy(self, host: int, device: int, nbytes: int, stream: int) -> None: ...
    def record(self, event: int, stream: int) -> None: ...
    def done(self, event: int) -> bool: ...


class CudaDriver:
    """The driver through ctypes (``_cuda.libcuda``): no cuda-python import on the program's
    thread. Pinned memory comes from torch's host allocator, on the worker's thread."""

    def __init__(self, torch: Any) -> None:
        from .._cuda import libcuda

        self._torch = torch
        self._lib = libcuda()
        self._held: dict[int, Any] = {}  # the pinned tensors by address, until freed
        # Each event's context, current on the thread that made it: the worker makes it
        # current before asking (a process may drive graphs on several devices).
        self._contexts: dict[int, ctypes.c_void_p] = {}

    def host(self, nbytes: int) -> tuple[int, memoryview]:
        tensor = self._torch.empty(nbytes, dtype=self._torch.uint8, pin_memory=True)
        self._held[tensor.data_ptr()] = tensor
        return tensor.data_ptr(), memoryview(tensor.numpy())

    def free(self, host: int) -> None:
        self._held.pop(host, None)  # back to torch's host allocator

    def event(self) -> int:
        from .._cuda import check_status

        handle, context = ctypes.c_void_p(), ctypes.c_void_p()
        # The program's thread, at a launch: the graph's device's context is current.
        check_status(self._lib.cuCtxGetCurrent(ctypes.byref(context)), "cuCtxGetCurrent")
        check_status(self._lib.cuEventCreate(ctypes.byref(handle), 2), "cuEventCreate")
        event = int(handle.value or 0)
        self._contexts[event] = context
        return event

    def copy(self, host: int, device: int, nbytes: int, stream: int) -> None:
        from .._cuda import check_status

        check_status(
            self._lib.cuMemcpyDtoHAsync_v2(host, device, nbytes, stream), "cuMemcpyDtoHAsync"
        )

    def record(self, event: int, stream: int) -> None:
        from .._cuda import check_status

        check_status(self._lib.cuEventRecord(event, stream), "cuEventRecord")

    def done(self, event: int) -> bool:
        from .._cuda import check_status

        context = self._contexts.get(event)
        if context is not None and context.value:
            check_status(self._lib.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        code = self._lib.cuEventQuery(event)
        if code == 600:  # CUDA_ERROR_NOT_READY
            return False
        check_status(code, "cuEventQuery")
        return True


@dataclass
class Sampled:
    """One armed block of one graph, and what its samples showed."""

    start: int
    nbytes: int
    offset: int  # where its bytes go in a slot
    nodes: list[str]
    kernels: list[str]  # what each of ``nodes`` runs: its kernel, and module where known
    pointers: int
    digest: bytes | None = None  # the last sample's
    samples: int = 0
    changes: int = 0
    first_replay: int = 0
    last_replay: int = 0
    first_ns: int = 0
    last_ns: int = 0


@dataclass
class Slot:
    """Pinned memory for one sample of all of a graph's armed blocks, and its event."""

    host: int
    view: memoryview
    event: int = 0
    # Taken by a launch before its driver calls (ctypes lets the GIL go during them, so another
    # thread's launch could pick the same slot), freed by the worker once compared.
    busy: bool = False
    in_flight: bool = False  # its copies and event are enqueued: the worker may ask the event
    replay: int = 0
    at_ns: int = 0


@dataclass
class Armed:
    """A graph's armed blocks and the samples of them in flight."""

    blocks: list[Sampled]
    slots: list[Slot]
    nbytes: int = 0  # pinned bytes of one slot
    launches: int = 0  # since armed
    last_ns: int = 0  # the last sample's launch
    dropped: set[int] = field(default_factory=set)  # blocks filed freed since: not read


class InputCheck:
    """Arms graphs as they are read, samples their blocks at launches, compares samples."""

    def __init__(self, rec: State, driver: Driver | None = None) -> None:
        self.rec = rec
        self._driver = driver
        self.pinned = 0
        self.graphs = 0  # graphs armed
        self.blocks = 0  # blocks armed, all graphs told
        self.unarmed = 0  # graphs with blocks to arm, left out for want of pinned memory
        self.samples = 0
        self.failed: str | None = None  # why sampling stopped, once a driver call failed

    def driver(self) -> Driver:
        if self._driver is None:
            self._driver = CudaDriver(self.rec.torch)
        return self._driver

    # -- the worker ---------------------------------------------------------------------------

    def arm(self, life: Life, watched: dict[int, Watch]) -> None:
        """Arm the small blocks a graph just read points into (the worker's thread)."""
        if self.failed is not None or life.inputs is not None:
            return
        chosen = [w for w in watched.values() if w.block.size <= BLOCK_BYTES]
        if not chosen:
            return
        order = _node_order(life)
        chosen.sort(key=lambda w: min((order.get(n, len(order)) for n in w.nodes), default=0))
        chosen = chosen[:BLOCKS_PER_GRAPH]
        nbytes = sum(w.block.size for w in chosen)
        if self.pinned + SLOTS * nbytes > PINNED_BYTES:
            self.unarmed += 1
            return
        driver = self.driver()
        try:
            slots = [Slot(*driver.host(nbytes)) for _ in range(SLOTS)]
        except Exception as exc:
            self._stop(exc)
            return
        self.pinned += SLOTS * nbytes
        blocks, offset = [], 0
        for w in chosen:
            kernels = [_kernel(life, n) for n in w.nodes]
            blocks.append(
                Sampled(w.block.start, w.block.size, offset, list(w.nodes), kernels, w.pointers)
            )
            offset += w.block.size
        life.inputs = Armed(blocks, slots, nbytes)
        self.graphs += 1
        self.blocks += len(blocks)

    def collect(self, lives: list[Life]) -> bool:
        """Compare every finished sample with the one before it (the worker's thread); whether
        the findings changed (a block newly filed, or one filed that changed since)."""
        if self.failed is not None:
            return False
        driver = self.driver()
        changed = False
        for life in lives:
            armed = life.inputs
            if armed is None:
                continue
            if life.blocks_filed - armed.dropped:  # freed under the graph: read no more
                armed.dropped |= life.blocks_filed
                armed.blocks = [b for b in armed.blocks if b.start not in armed.dropped]
            finished = []
            for slot in armed.slots:
                try:
                    if slot.in_flight and driver.done(slot.event):
                        finished.append(slot)
                except Exception as exc:
                    self._stop(exc)
                    return True  # the index says sampling stopped
            for slot in sorted(finished, key=lambda s: s.replay):
                for block in armed.blocks:
                    was = _filed(block)
                    _compare(block, slot)
                    changed = changed or _filed(block) != was
                slot.in_flight = slot.busy = False
            if (
                life.destroyed_ns is not None
                and armed.slots
                and not any(s.in_flight for s in armed.slots)
            ):
                # Its findings stay; its pinned memory goes to the graphs made after it (a
                # program that makes graphs anew would otherwise use the budget up).
                for slot in armed.slots:
                    driver.free(slot.host)
                self.pinned -= SLOTS * armed.nbytes
                armed.slots = []
        return changed

    def as_list(self, lives: list[Life]) -> list[dict[str, Any]]:
        """The index's ``unchanged_inputs``: the blocks whose samples all agreed."""
        out = []
        for life in lives:
            armed = life.inputs
            if armed is None:
                continue
            for block in armed.blocks:
                if not _filed(block):
                    continue
                out.append(
                    {
                        "graph": life.id,
                        "buffer": block_name_of(block),
                        "address": block.start,
                        "bytes": block.nbytes,
                        "nodes": list(block.nodes),
                        "kernels": list(block.kernels),
                        "pointers": block.pointers,
                        "samples": block.samples,
                        "first_replay": block.first_replay,
                        "last_replay": block.last_replay,
                        "first_s": round(self.rec.since_s(block.first_ns), 3),
                        "last_s": round(self.rec.since_s(block.last_ns), 3),
                    }
                )
        return out

    def coverage(self) -> dict[str, Any]:
        """What was checked, for the index (``input_checks``)."""
        out: dict[str, Any] = {
            "graphs": self.graphs,
            "blocks": self.blocks,
            "samples": self.samples,
            "graphs_unarmed": self.unarmed,
        }
        if self.failed is not None:
            out["stopped"] = self.failed
        return out

    # -- the program's thread -----------------------------------------------------------------

    def due(self, armed: Armed, now_ns: int) -> bool:
        """Count an untraced launch of an armed graph; whether a sample of it is due: the
        first launch after arming, each power of two after, and once ``SAMPLE_EVERY_S`` has
        passed since the last sample, while a slot is free."""
        armed.launches += 1
        n = armed.launches
        if n & (n - 1) and now_ns - armed.last_ns < SAMPLE_EVERY_S * 1e9:
            return False
        return self.failed is None and bool(armed.blocks) and any(not s.busy for s in armed.slots)

    def sample(self, armed: Armed, stream: int, replay: int, now_ns: int) -> None:
        """Enqueue copies of the armed blocks and an event on the launch's stream, before the
        launch (the launch handler, on the program's thread, with no capture running)."""
        slot = next((s for s in armed.slots if not s.busy), None)
        if slot is None:
            return
        slot.busy = True  # taken before any call that lets the GIL go
        driver = self.driver()
        try:
            if not slot.event:
                slot.event = driver.event()
            for block in armed.blocks:
                driver.copy(slot.host + block.offset, block.start, block.nbytes, stream)
            driver.record(slot.event, stream)
        except Exception as exc:
            self._stop(exc)  # the slot stays taken: sampling has stopped
            return
        slot.replay, slot.at_ns = replay, now_ns
        slot.in_flight = True
        armed.last_ns = now_ns
        self.samples += 1

    def _stop(self, exc: BaseException) -> None:
        self.failed = f"{type(exc).__name__}: {exc}"
        self.rec.note(f"graph inputs no longer sampled: {self.failed}")


def block_name_of(block: Sampled) -> str:
    return block_name(Block(block.start, block.nbytes, True, ()))


def _filed(block: Sampled) -> bool:
    """Whether a block's samples make it a finding: enough of them, all alike."""
    return block.samples >= MIN_SAMPLES and not block.changes


def _compare(block: Sampled, slot: Slot) -> None:
    digest = hashlib.blake2b(
        slot.view[block.offset : block.offset + block.nbytes], digest_size=16
    ).digest()
    if block.samples == 0:
        block.first_replay, block.first_ns = slot.replay, slot.at_ns
    elif digest != block.digest:
        block.changes += 1
    block.digest = digest
    block.samples += 1
    block.last_replay, block.last_ns = slot.replay, slot.at_ns


def _kernel(life: Life, key: str) -> str:
    """What node ``key`` of a read graph runs: ``indexSelectSmallIndex<...> in module embed``."""
    G = life.graph
    data = G.nodes[key] if G is not None and key in G else {}
    module = origin_of(data).get("module")
    return display_name(data) + (f" in module {module}" if module else "")


def _node_order(life: Life) -> dict[str, int]:
    G = life.graph
    return {} if G is None else {str(k): i for i, k in enumerate(G.nodes)}
