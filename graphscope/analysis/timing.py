"""A bundle's step timing, typed: the figures ``report``, ``inspect``, ``diff`` and the cards read.

Bundles keep them as JSON objects: ``G.graph["timing"]`` (graph replay and the untraced eager
step, from capture), ``G.graph["eager_summary"]`` (the one traced eager step) and, for a graph
of ``graphscope record``, ``G.graph["recording"]`` (how the program replayed it).
Read once here, each figure is a float or None where the bundle has no such number; the fields
are named as the bundle's keys, so ``timing.eager_step_us`` in the docs is ``.timing.eager_step_us``
here. docs/DASHBOARD.md ("Which figure is which") says what each one measures.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import networkx as nx

_T = TypeVar("_T", "ReplayTiming", "EagerSummary", "RecordedTiming")


def _read(cls: type[_T], mapping: Any) -> _T:
    """``cls`` with each field from the key of its name: a finite number, else None."""
    values: dict[str, float | None] = {}
    for f in fields(cls):
        value = mapping.get(f.name) if isinstance(mapping, dict) else None
        number = math.nan
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            with contextlib.suppress(OverflowError):  # an int past float's range: no time
                number = float(value)
        values[f.name] = number if math.isfinite(number) else None
    return cls(**values)


@dataclass(frozen=True)
class ReplayTiming:
    """``G.graph["timing"]``: times in us."""

    eager_step_us: float | None = None  # eager step, untraced median wall
    eager_cpu_us: float | None = None  # CPU time to issue the untraced step
    replay_wall_us: float | None = None  # one replay, untraced mean wall over a loop
    replay_wall_traced_us: float | None = None  # the same loop, traced
    replay_us: float | None = None  # one replay's GPU span, traced median
    replay_max_us: float | None = None  # the longest traced replay's GPU span
    gpu_busy_us: float | None = None  # one replay's GPU busy time, traced median
    # The graph launch call's CPU time, untraced median; bundles written before
    # cpu_launch_traced_us was kept hold the traced median here (docs/FORMAT.md).
    cpu_launch_us: float | None = None
    cpu_launch_traced_us: float | None = None  # the same, traced
    replays: float | None = None  # replays timed
    tracing_overhead_pct: float | None = None
    graph_pool_bytes: float | None = None


@dataclass(frozen=True)
class EagerSummary:
    """``G.graph["eager_summary"]``: the traced eager step; times in us."""

    step_us: float | None = None  # the traced step's wall time
    first_gpu_start_us: float | None = None
    gpu_span_us: float | None = None
    gpu_busy_us: float | None = None
    gpu_idle_us: float | None = None
    gpu_idle_pct: float | None = None
    cpu_api_us: float | None = None  # CPU time in CUDA calls
    cpu_launch_us: float | None = None  # CPU time in the calls that launched GPU work
    launch_calls: float | None = None
    api_calls: float | None = None


@dataclass(frozen=True)
class RecordedTiming:
    """``G.graph["recording"]``: a graph of ``graphscope record``, as the program ran it."""

    replays: float | None = None  # replays the program made
    traced_replays: float | None = None  # of those, the ones traced
    replay_us: float | None = None  # one replay's GPU span, traced median
    cpu_launch_us: float | None = None  # the launch call's CPU time, untraced median
    cpu_launch_traced_us: float | None = None  # the same, traced
    gpu_time_us: float | None = None  # GPU time of all traced replays


@dataclass(frozen=True)
class StepTiming:
    """The timing sections of one bundle."""

    timing: ReplayTiming
    eager: EagerSummary
    recording: RecordedTiming = RecordedTiming()

    def figure(self, field: str) -> float | None:
        """A figure by its bundle name: ``"timing.eager_step_us"``, ``"eager_summary.step_us"``."""
        section, _, name = field.partition(".")
        part: ReplayTiming | EagerSummary | RecordedTiming
        if section == "timing":
            part = self.timing
        elif section == "eager_summary":
            part = self.eager
        elif section == "recording":
            part = self.recording
        else:
            raise KeyError(field)
        if name not in {f.name for f in fields(part)}:
            raise KeyError(field)
        value: float | None = getattr(part, name)
        return value


def read_timing(mapping: Any) -> ReplayTiming:
    """The ``timing`` section as read from a bundle's graph or an ``inspect`` summary."""
    return _read(ReplayTiming, mapping)


def read_eager_summary(mapping: Any) -> EagerSummary:
    """The ``eager_summary`` section as read from a bundle's graph or an ``inspect`` summary."""
    return _read(EagerSummary, mapping)


def step_timing(G: nx.DiGraph) -> StepTiming:
    """A graph's step timing; every figure None for a DOT dump."""
    return StepTiming(
        read_timing(G.graph.get("timing")),
        read_eager_summary(G.graph.get("eager_summary")),
        _read(RecordedTiming, G.graph.get("recording")),
    )


#: Without the longest replay's span (bundles before ``replay_max_us``), a node's max past
#: this many median replay spans cannot be its own: the set-up artefact of issue 25 was 70x.
IMPLAUSIBLE_SPANS = 10


def plausible_max_us(G: nx.DiGraph) -> tuple[float, bool] | None:
    """The longest a node of ``G`` can have run in a replay, and whether that bound is exact:
    the longest traced replay's GPU span where the bundle keeps it, else ``IMPLAUSIBLE_SPANS``
    median spans; None without replay timing."""
    timing = read_timing(G.graph.get("timing"))
    if timing.replay_max_us:
        return timing.replay_max_us, True
    if timing.replay_us:
        return IMPLAUSIBLE_SPANS * timing.replay_us, False
    return None
