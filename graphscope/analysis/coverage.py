"""Which graphs served which part of a recorded run, and when the graphs stopped being used.

Reads a recording's ``coverage`` bins (graph launches per interval, counted at every launch
by ``graphscope record``). A program that falls off its graphs (a batch larger than its
largest graph, a guard that fails for good) keeps running with no graph launched: the
sampled windows open only at graph launches, so the eager share cannot see it, but the bins
do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphscope.recording import Recording, graph_label

#: A stop is reported when the run went on this long with no graph launched...
STOP_MIN_S = 3.0
#: ...and for at least this share of the time since the first launch.
STOP_MIN_SHARE = 0.2


@dataclass(frozen=True)
class Span:
    """When one graph was launched: its first and last bin, and how often."""

    graph: str
    batch: int | None
    first_s: float
    last_s: float  # the end of its last bin
    launches: int


@dataclass(frozen=True)
class Stop:
    """The graphs stopped being launched while the program went on."""

    at_s: float  # the end of the last bin with a launch
    until_s: float  # the end of the recording
    launches_before: int
    last_graphs: list[str]  # the graphs launched in the last bin that had launches

    @property
    def seconds(self) -> float:
        return self.until_s - self.at_s


def spans(recording: Recording) -> list[Span]:
    """Each graph's launches over the run, in the order of their first launch."""
    cov = recording.coverage
    if not cov:
        return []
    width = float(cov["bin_s"])
    batch = {g["id"]: g.get("batch") for g in recording.graphs}
    found: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for b in cov["bins"]:
        for graph, n in b["launches"].items():
            if n <= 0:
                continue
            at = float(b["at_s"])
            seen = found.setdefault(graph, [at, at + width])
            seen[1] = at + width
            counts[graph] = counts.get(graph, 0) + n
    return sorted(
        (Span(g, batch.get(g), first, last, counts[g]) for g, (first, last) in found.items()),
        key=lambda s: (s.first_s, s.graph),
    )


def stop(recording: Recording) -> Stop | None:
    """When graphs were launched and then, for the rest of a long enough run, none was."""
    cov = recording.coverage
    bins: list[dict[str, Any]] = cov.get("bins", []) if cov else []
    if not bins:
        return None
    width = float(cov["bin_s"])

    def launched(b: dict[str, Any]) -> int:
        return int(sum(b["launches"].values())) + int(b.get("unknown_launches") or 0)

    with_launches = [i for i, b in enumerate(bins) if launched(b)]
    if not with_launches:
        return None
    first, last = with_launches[0], with_launches[-1]
    at = float(bins[last]["at_s"]) + width
    until = float(bins[-1]["at_s"]) + width
    since_first = until - float(bins[first]["at_s"])
    if until - at < STOP_MIN_S or since_first <= 0 or (until - at) / since_first < STOP_MIN_SHARE:
        return None
    return Stop(
        at_s=at,
        until_s=until,
        launches_before=sum(launched(b) for b in bins[: last + 1]),
        last_graphs=sorted(g for g, n in bins[last]["launches"].items() if n > 0),
    )


def stop_text(s: Stop, recording: Recording) -> str:
    """``graphs were launched 2,140 times until 12 s, then none in the last 18 s of the run``,
    with the graphs last launched and their batches."""
    batch = {g["id"]: g.get("batch") for g in recording.graphs}
    last = ", ".join(graph_label(g, batch.get(g)) for g in s.last_graphs)
    biggest = max((b for b in batch.values() if isinstance(b, int)), default=None)
    hint = (
        f"; its largest graph is for batch {biggest}: a larger batch runs eagerly"
        if biggest is not None
        else ""
    )
    return (
        f"graphs were launched {s.launches_before:,} times until {s.at_s:.0f} s, then none in "
        f"the last {s.seconds:.0f} s of the run ({100 * s.seconds / s.until_s:.0f}% of it)"
        + (f"; the last launched: {last}" if last else "")
        + ". The program ran on without its graphs (eagerly, or idle) or stopped its steps"
        + hint
    )
