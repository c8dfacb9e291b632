"""Which graphs served which part of a recorded run, and when the graphs stopped being used.

Reads a recording's ``coverage`` bins (graph launches per interval, counted at every launch
by ``graphscope record``). A program that falls off its graphs (a batch larger than its
largest graph, a guard that fails for good) keeps running with no graph launched: the
sampled windows open only at graph launches, so the eager share cannot see it, but the bins
do. What the program did instead, the recorder's probes say (a bin's ``probe_*``): kernels
outside graphs mean it ran on eagerly; none, that the GPU sat idle (compiling, loading, done
with its steps). A recording without probes says neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from graphscope.recording import Recording, graph_label

#: A stop is reported when the run went on this long with no graph launched...
STOP_MIN_S = 3.0
#: ...and for at least this share of the time since the first launch.
STOP_MIN_SHARE = 0.2
#: Kernels a second after a stop that make it a fallback to eager. One eager decode step is
#: hundreds of kernels, at several steps a second; compiling the next function, loading or
#: sampling on the CPU leaves a few stray kernels a second at most.
EAGER_MIN_RATE = 100.0


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
    probe_s: float = 0.0  # how long the recorder's probes traced kernels after at_s
    probe_kernels: int = 0  # kernels they saw outside any graph
    probe_kernel_us: float = 0.0
    # the eager steps' batches the probes caught on the program's stack: batch -> samples
    batches: dict[int, int] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.until_s - self.at_s

    @property
    def eager_rate(self) -> float | None:
        """Kernels outside graphs a second after the stop, as the probes saw them; None where
        no probe traced then (an older recording, ``--every 0``)."""
        return self.probe_kernels / self.probe_s if self.probe_s > 0 else None

    @property
    def eager(self) -> bool | None:
        """Whether the program ran on eagerly after the stop (``EAGER_MIN_RATE``), rather
        than leaving the GPU (nearly) idle; None where no probe says."""
        rate = self.eager_rate
        return None if rate is None else rate >= EAGER_MIN_RATE


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
    bins, width = _bins_of(recording)
    with_launches = [i for i, b in enumerate(bins) if _launched(b)]
    if not with_launches:
        return None
    first, last = with_launches[0], with_launches[-1]
    until = float(bins[-1]["at_s"]) + width
    found = _stretch(bins, last, len(bins), float(bins[last]["at_s"]) + width, until)
    since_first = until - float(bins[first]["at_s"])
    if (
        found.seconds < STOP_MIN_S
        or since_first <= 0
        or found.seconds / since_first < STOP_MIN_SHARE
    ):
        return None
    return found


def lapses(recording: Recording) -> list[Stop]:
    """Stretches inside the run, between two bins with launches, of at least ``STOP_MIN_S``
    with no graph launched while the program ran on eagerly (the probes say so): a batch
    past the largest graph for a while, then graphs again. Quiet stretches with the GPU idle
    (a server between requests) are no lapse, nor is one that ends in a new graph's capture
    (torch.compile compiling, warming up eagerly and recording a function: the lead-up to a
    graph, not a fall from one); the end of the run is :func:`stop`'s."""
    bins, width = _bins_of(recording)
    with_launches = [i for i, b in enumerate(bins) if _launched(b)]
    captured = [
        float(g["captured_at_s"])
        for g in recording.graphs
        if isinstance(g.get("captured_at_s"), (int, float))
    ]
    out = []
    for i, j in pairwise(with_launches):
        at, until = float(bins[i]["at_s"]) + width, float(bins[j]["at_s"])
        if any(at <= t < until + width for t in captured):
            continue
        if until - at >= STOP_MIN_S:
            lapse = _stretch(bins, i, j, at, until)
            if lapse.eager:
                out.append(lapse)
    return out


def _bins_of(recording: Recording) -> tuple[list[dict[str, Any]], float]:
    cov = recording.coverage
    if not cov:
        return [], 1.0
    return cov.get("bins", []), float(cov["bin_s"])


def _stretch(bins: list[dict[str, Any]], last: int, end: int, at: float, until: float) -> Stop:
    """The stretch after bin ``last`` (the last with launches) up to bin ``end``, not
    included: the launches before it and what the probes saw in it."""
    gap = bins[last + 1 : end]
    return Stop(
        at_s=at,
        until_s=until,
        launches_before=sum(_launched(b) for b in bins[: last + 1]),
        last_graphs=sorted(g for g, n in bins[last]["launches"].items() if n > 0),
        probe_s=sum(float(b.get("probe_ms", 0)) for b in gap) / 1e3,
        probe_kernels=sum(int(b.get("probe_kernels", 0)) for b in gap),
        probe_kernel_us=sum(float(b.get("probe_kernel_us", 0)) for b in gap),
        batches=_batches(gap),
    )


def lapse_text(s: Stop, recording: Recording) -> str:
    """``no graph was launched from 12 s to 30 s while the program ran on eagerly: ...``."""
    batch = {g["id"]: g.get("batch") for g in recording.graphs}
    last = ", ".join(graph_label(g, batch.get(g)) for g in s.last_graphs)
    rate = s.eager_rate or 0.0
    return (
        f"no graph was launched from {s.at_s:.0f} s to {s.until_s:.0f} s ({s.seconds:.0f} s, "
        f"after {s.launches_before:,} launches; the last: {last}) while the program ran on "
        f"eagerly: {s.probe_kernels:,} kernels outside graphs in {s.probe_s * 1e3:,.0f} ms of "
        f"kernel tracing (about {rate:,.0f}/s){_batch_hint(s, batch)}; then graphs were "
        "launched again" + _add_bucket(s, batch)
    )


def _launched(b: dict[str, Any]) -> int:
    return int(sum(b["launches"].values())) + int(b.get("unknown_launches") or 0)


def _largest(batch: dict[str, Any]) -> int | None:
    """The largest batch among the graphs' (``graph id -> batch``), None where none says."""
    return max((b for b in batch.values() if isinstance(b, int)), default=None)


def _batch_hint(s: Stop, batch: dict[str, Any]) -> str:
    """What the eager steps' batches say against the graphs' (empty without samples)."""
    if not s.batches:
        return ""
    sizes = {b for b in batch.values() if isinstance(b, int)}
    biggest = max(sizes, default=None)
    caught = ", ".join(f"{b} ({n})" for b, n in list(s.batches.items())[:8])
    caught += ", ..." if len(s.batches) > 8 else ""
    hint = f"; eager steps' batches on the program's stack (samples): {caught}"
    if biggest is None:
        return hint
    if min(s.batches) > biggest:
        return hint + f": all larger than its largest graph, batch {biggest}"
    covered = sorted(b for b in s.batches if b in sizes)
    if covered:
        return hint + (
            f": batch {', '.join(map(str, covered))} has a graph, so batch size is not the "
            "whole reason"
        )
    return hint + f"; its largest graph is for batch {biggest}"


def _add_bucket(s: Stop, batch: dict[str, Any]) -> str:
    """Which graph would have served the sampled eager steps, where all were larger than the
    largest graph ("" otherwise): the largest batch sampled serves them all; a smaller one,
    those up to it. Samples are stack samples, not step counts: the shares are of samples,
    said so. A graph's memory is not known before it is captured, so none is guessed."""
    biggest = _largest(batch)
    if not s.batches or biggest is None or min(s.batches) <= biggest:
        return ""
    total = sum(s.batches.values())
    largest = max(s.batches)
    line = f". A graph for batch {largest} would serve every sampled eager step"
    smaller = sorted(b for b in s.batches if b < largest)
    if smaller:
        part = sum(n for b, n in s.batches.items() if b <= smaller[0])
        line += f" (one for batch {smaller[0]}, {100 * part / total:.0f}% of the samples)"
    return line + (
        "; its memory is known once captured (graphscope capture --batch-sizes ... measures "
        "each graph's pool)"
    )


def _batches(bins: list[dict[str, Any]]) -> dict[int, int]:
    seen: dict[int, int] = {}
    for b in bins:
        for batch, n in (b.get("probe_batches") or {}).items():
            seen[int(batch)] = seen.get(int(batch), 0) + int(n)
    return dict(sorted(seen.items()))


def stop_text(s: Stop, recording: Recording) -> str:
    """``graphs were launched 2,140 times until 12 s, then none in the last 18 s of the run``,
    with the graphs last launched and their batches, and what the probes saw after."""
    batch = {g["id"]: g.get("batch") for g in recording.graphs}
    last = ", ".join(graph_label(g, batch.get(g)) for g in s.last_graphs)
    head = (
        f"graphs were launched {s.launches_before:,} times until {s.at_s:.0f} s, then none in "
        f"the last {s.seconds:.0f} s of the run ({100 * s.seconds / s.until_s:.0f}% of it)"
        + (f"; the last launched: {last}" if last else "")
    )
    probed = f"{s.probe_s * 1e3:,.0f} ms of kernel tracing after the stop"
    rate = s.eager_rate or 0.0
    if s.eager is False:
        seen = (
            f"Only {s.probe_kernels:,} kernels ran in {probed} (about {rate:,.0f}/s): the GPU "
            "was nearly idle"
            if s.probe_kernels
            else f"No kernel ran in {probed}: the GPU sat idle"
        )
        return (
            f"{head}. {seen}, so the program stopped its steps or worked on the CPU "
            "(compiling, loading), rather than running eagerly"
        )
    biggest = _largest(batch)
    hint = (
        f"; its largest graph is for batch {biggest}: a larger batch runs eagerly"
        if biggest is not None
        else ""
    )
    if s.batches and s.eager:
        hint = _batch_hint(s, batch)
    if s.eager:
        # The probes trace a share of the stop; their GPU time per second, over the whole
        # stop, is what running eagerly cost the GPU (an estimate: said so).
        cost = s.probe_kernel_us / 1e6 / s.probe_s * s.seconds if s.probe_s else 0.0
        return (
            f"{head}. The program ran on eagerly: {s.probe_kernels:,} kernels outside graphs "
            f"in {probed} (about {rate:,.0f}/s, {s.probe_kernel_us / 1e3:,.1f} ms of GPU time; "
            f"about {cost:,.2f} s of eager GPU time over the {s.seconds:.0f} s, at that rate)"
            + hint
            + _add_bucket(s, batch)
        )
    return (
        f"{head}. The program ran on without its graphs (eagerly, or idle) or stopped its "
        "steps; the recording has no probe of the GPU after the stop to tell which" + hint
    )
