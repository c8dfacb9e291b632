"""Coverage over the whole run: how many launches each graph served, interval by interval.

The launch callback counts every graph launch already (``Life.replays``); the worker reads
those counts as it ticks and closes a bin each ``bin_s`` seconds, so this costs the program
nothing. The windows' eager kernels are not binned (``sampling`` keeps their totals); the
probes' are (launches.py): while no graph is launched, a bin says how long probes traced
and how many kernels they saw, counted as their records arrive (a flush, up to a few
seconds after they ran: a probe's kernels can land in a later bin than the probe). A run
longer than ``MAX_BINS`` bins has its bins merged in pairs and ``bin_s`` doubled: an hour is
450 bins of 8 s. The index is rewritten while the program runs, so it stays small: 600 bins
of a process launching 67 graphs (vLLM's sizes) are under half a megabyte of JSON.

``graphscope.analysis.coverage`` reads the bins: when the graphs stopped being launched, and
which graph served which part of the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Protocol

BIN_S = 1.0
MAX_BINS = 600
#: What a bin says of the probes that traced in it, where any did.
PROBE_KEYS = ("probe_ms", "probe_kernels", "probe_kernel_us")


class Counted(Protocol):
    id: str
    replays: int


class Coverage:
    """Bins of launches per graph, oldest first."""

    def __init__(self, bin_s: float = BIN_S, max_bins: int = MAX_BINS) -> None:
        self.bin_s = bin_s
        self.max_bins = max_bins
        self.bins: list[dict[str, Any]] = []
        self._seen: dict[str, int] = {}  # graph id -> its replays when the last bin closed
        self._unknown = 0
        self._probed = (0, 0, 0)  # probe ns, kernels, kernel ns when the last bin closed
        self._batches: Counter[int] = Counter()  # the probes' batch samples then
        self._open_at_s = 0.0

    def tick(
        self,
        now_s: float,
        lives: Iterable[Counted],
        unknown_launches: int,
        final: bool = False,
        probed: tuple[int, int, int] = (0, 0, 0),
        batches: Counter[int] | None = None,
    ) -> bool:
        """Close the bin open since ``_open_at_s`` if ``bin_s`` has passed (or ``final``);
        whether one closed. Launches counted since the last close are the closed bin's, and
        so are the probes' counts (``probed``: ns traced, kernels seen, their GPU ns, all
        told; ``batches``: the eager steps' batches the probes saw, all told)."""
        if not final and now_s - self._open_at_s < self.bin_s:
            return False
        if (
            final
            and now_s <= self._open_at_s
            and not self._pending(lives, unknown_launches)
            and probed == self._probed
            and (batches or Counter()) == self._batches
        ):
            return False
        launches: dict[str, int] = {}
        for life in lives:
            before = self._seen.get(life.id, 0)
            if life.replays > before:
                launches[life.id] = life.replays - before
            self._seen[life.id] = life.replays
        closed: dict[str, Any] = {
            "at_s": round(self._open_at_s, 3),
            "launches": launches,
            "unknown_launches": max(0, unknown_launches - self._unknown),
        }
        probe_ns, kernels, kernel_ns = (
            max(0, now - then) for now, then in zip(probed, self._probed, strict=True)
        )
        if probe_ns or kernels:
            closed["probe_ms"] = round(probe_ns / 1e6, 3)
            closed["probe_kernels"] = kernels
            closed["probe_kernel_us"] = round(kernel_ns / 1e3, 3)
        seen = Counter(batches or {})
        new = seen - self._batches
        if new:
            closed["probe_batches"] = {str(b): n for b, n in sorted(new.items())}
        self.bins.append(closed)
        self._unknown = unknown_launches
        self._probed = probed
        self._batches = seen
        # Bins start on whole intervals from the recorder's start. A tick that comes late
        # (the program held the GIL) leaves no gap: what it counted is the closed bin's.
        self._open_at_s += self.bin_s
        while now_s - self._open_at_s >= self.bin_s:
            self._open_at_s += self.bin_s
        if len(self.bins) > self.max_bins:
            self._merge()
        return True

    def _pending(self, lives: Iterable[Counted], unknown_launches: int) -> bool:
        return unknown_launches > self._unknown or any(
            life.replays > self._seen.get(life.id, 0) for life in lives
        )

    def _merge(self) -> None:
        """Halve the bins: each pair becomes one of twice the width."""
        merged = []
        for i in range(0, len(self.bins), 2):
            pair = self.bins[i : i + 2]
            launches: dict[str, int] = {}
            for b in pair:
                for graph, n in b["launches"].items():
                    launches[graph] = launches.get(graph, 0) + n
            one: dict[str, Any] = {
                "at_s": pair[0]["at_s"],
                "launches": launches,
                "unknown_launches": sum(b["unknown_launches"] for b in pair),
            }
            for key in PROBE_KEYS:
                if any(key in b for b in pair):
                    one[key] = round(sum(b.get(key, 0) for b in pair), 3)
            seen: Counter[str] = Counter()
            for b in pair:
                seen.update(b.get("probe_batches") or {})
            if seen:
                one["probe_batches"] = dict(sorted(seen.items(), key=lambda kv: int(kv[0])))
            merged.append(one)
        self.bins = merged
        self.bin_s *= 2

    def as_dict(self) -> dict[str, Any]:
        """The index's ``coverage`` section."""
        return {"bin_s": self.bin_s, "bins": [dict(b) for b in self.bins]}
