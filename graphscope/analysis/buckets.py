"""Batch-size buckets: one graph per bucket, and the rule that pads a batch into one."""

from __future__ import annotations

import bisect
import math
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import paths
from ..contract import (
    BUCKET,
    BUCKETS,
    MAX_BATCH_SIZE,
    JsonBudget,
    Num,
    Record,
    Text,
    check,
    check_each,
    parse_json,
    read_limited,
    show,
)
from ..errors import InputError

#: Batch sizes ``graphscope capture`` captures when none are given.
DEFAULT_BUCKETS = (1, 2, 4, 8)
#: How a batch finds its graph, as recorded in bundles and buckets.json.
PADDING_RULE = "a batch of n runs in the smallest bucket >= n, padded to it"
#: The largest memory budget a bucket choice takes, in MiB: 8 EiB, more than any GPU holds
#: (``graphscope buckets --budget-mib`` and the dashboard's buckets page).
MAX_BUDGET_MIB = 2**43
#: Largest buckets index or histogram read: either is a few KB.
MAX_INDEX_BYTES = 64 << 20
#: Most JSON values a buckets index or a JSON histogram may hold: a histogram names at most
#: MAX_BATCH_SIZE batch sizes, a bucket takes about ten values (the samples' indexes 12 to 53).
MAX_INDEX_VALUES = 1 << 20
#: Largest count a histogram may give a batch size: a million batches a second for 30 years.
#: The bound keeps every sum of counts, and each count times a batch size, finite (two counts
#: of 1e308 overflowed ``math.fsum``).
MAX_COUNT = 1e15


def _batch_size(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 6 and 1 <= int(text) <= MAX_BATCH_SIZE


# A histogram: batch size (as JSON keys or CSV cells are, text) -> how often it is seen.
_BATCH_TEXT = Text(f"a batch size in 1..{MAX_BATCH_SIZE}", _batch_size)
_HISTOGRAM = Record({}, other=Num(0, MAX_COUNT), says="an object of batch size -> count")
_COUNT_TEXT = re.compile(r"[0-9]{1,30}(?:\.[0-9]{0,30})?(?:[eE][+-]?[0-9]{1,3})?\Z")


def bucket_for(batch: int, buckets: Iterable[int]) -> int | None:
    """The bucket a batch of ``batch`` runs in, or None when it exceeds every bucket."""
    if batch < 1:
        raise ValueError(f"a batch has at least one sequence, got {batch}")
    fitting = [b for b in buckets if b >= batch]
    return min(fitting) if fitting else None


def padding(batch: int, buckets: Iterable[int]) -> int | None:
    """Padded sequences when a batch of ``batch`` runs in its bucket (None: no bucket)."""
    bucket = bucket_for(batch, buckets)
    return None if bucket is None else bucket - batch


@dataclass
class Bucket:
    """One captured batch size, as buckets.json records it."""

    batch_size: int
    replay_us: float  # one graph replay, untraced
    nodes: int
    graph_pool_bytes: int  # the graph's memory pool
    eager_step_us: float | None = None  # the same step run eagerly
    bundle: str | None = None  # file name beside buckets.json

    @property
    def per_sequence_us(self) -> float:
        return self.replay_us / self.batch_size


@dataclass
class BucketChoice:
    """A set of buckets and what serving a batch-size distribution with it costs."""

    sizes: list[int]  # the buckets kept
    pool_bytes: int  # their graph memory
    mean_step_us: float  # expected time of a step over the distribution
    padding_pct: float  # padded sequences per real sequence, in percent
    eager_share_pct: float  # batches larger than every kept bucket (run eagerly), percent


@dataclass
class BucketReport:
    """Buckets of one model against a batch-size distribution."""

    model: str | None
    padding_rule: str
    buckets: list[Bucket]
    distribution: dict[int, float]  # batch size -> probability
    captured: BucketChoice  # every captured bucket
    best: BucketChoice | None = None  # the fastest set within the memory budget
    budget_bytes: int | None = None
    # What the driver said, at capture, to updating each bucket's executable with the next.
    updates: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    searched: bool = True  # False: too many buckets to search for ``best`` (see notes)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for entry, bucket in zip(out["buckets"], self.buckets, strict=True):
            entry["per_sequence_us"] = bucket.per_sequence_us
        return out


_NOT_AN_INDEX = (
    "not a buckets index: graphscope buckets reads the <model>.buckets.json that graphscope "
    "capture --batch-sizes writes beside its bundles (graphscope report reads one graph)"
)


def _refuse_a_graph(where: Path) -> None:
    """A graph file given where a buckets index is asked for, named for what it is: a gzip
    bundle read as text said "not UTF-8 text", a DOT dump "invalid buckets index"."""
    try:
        if not where.is_file():  # a FIFO or device is never opened here: it could block
            return
        with open(where, "rb") as fh:
            head = fh.read(64)
    except (OSError, ValueError):
        return  # read_limited says why, in its one line
    if head.startswith(b"\x1f\x8b"):
        raise InputError(where, f"is gzip-compressed (a graphscope bundle?), {_NOT_AN_INDEX}")
    if head.lstrip().lower().startswith((b"digraph", b"strict digraph", b"graph")):
        raise InputError(where, f"is a DOT graph dump, {_NOT_AN_INDEX}")


def read_buckets(
    path: str | os.PathLike[str],
) -> tuple[str | None, str, list[Bucket], list[dict[str, Any]]]:
    """(model, padding rule, buckets, driver update verdicts) from a ``<model>.buckets.json``
    or a folder holding one."""
    where = Path(path)
    if paths.is_dir(where):  # a path the OS refuses to look up: one line, through paths
        found = [p for p in paths.entries(where) if p.name.endswith(".buckets.json")]
        if not found:
            raise InputError(where, "no *.buckets.json here: graphscope capture writes one")
        if len(found) > 1:
            names = ", ".join(p.name for p in found)
            raise InputError(where, f"several buckets files ({names}): name the one to read")
        where = found[0]
    _refuse_a_graph(where)
    raw = read_limited(where, MAX_INDEX_BYTES, decompress=False, hint=" for a buckets index")
    doc = parse_json(raw, where, InputError, "buckets index", budget=JsonBudget(MAX_INDEX_VALUES))
    if isinstance(doc, dict) and doc.get("format") == "graphscope-bundle":
        raise InputError(where, f"is a graphscope bundle (one graph), {_NOT_AN_INDEX}")
    if not isinstance(doc, dict) or not isinstance(doc.get("buckets"), list):
        raise InputError(where, 'not a buckets.json: expected an object with a "buckets" list')
    check_each(doc["buckets"], BUCKET, where, "bucket {}".format)
    check(doc, BUCKETS, where)
    buckets = [
        Bucket(
            batch_size=entry["batch_size"],
            replay_us=float(entry["replay_us"]),
            nodes=entry["nodes"],
            graph_pool_bytes=entry["graph_pool_bytes"],
            eager_step_us=(
                None if entry.get("eager_step_us") is None else float(entry["eager_step_us"])
            ),
            bundle=entry.get("bundle"),
        )
        for entry in doc["buckets"]
    ]
    if not buckets:
        raise InputError(where, "lists no buckets")
    sizes = [b.batch_size for b in buckets]
    if len(set(sizes)) != len(sizes):
        twice = next(n for n in sizes if sizes.count(n) > 1)
        raise InputError(where, f"buckets: two buckets have batch size {twice}")
    buckets.sort(key=lambda b: b.batch_size)
    return doc.get("model"), doc.get("padding") or PADDING_RULE, buckets, doc.get("updates", [])


def read_distribution(path: str | os.PathLike[str]) -> dict[int, float]:
    """A batch-size histogram: JSON ``{"1": 120, "4": 30}`` or lines of ``batch,count``."""
    where = Path(path)
    raw = read_limited(where, MAX_INDEX_BYTES, decompress=False, hint=" for a histogram")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(where, f"not UTF-8 text (byte {exc.start} is not UTF-8)") from None
    counts: dict[int, float] = {}
    if text.lstrip().startswith("{"):
        doc = parse_json(raw, where, InputError, "histogram", budget=JsonBudget(MAX_INDEX_VALUES))
        check(doc, _HISTOGRAM, where)
        for key in doc:
            if _BATCH_TEXT.problem(key):
                raise InputError(where, f"{show(key)} is not {_BATCH_TEXT.says}")
        for key, count in doc.items():
            counts[int(key)] = float(count)
    else:
        for number, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line or line.lower().startswith("batch"):
                continue
            parts = [part.strip() for part in line.split(",")]
            if len(parts) != 2 or _BATCH_TEXT.problem(parts[0]) or not _COUNT_TEXT.match(parts[1]):
                raise InputError(
                    where,
                    f'expected "batch,count" with a batch size in 1..{MAX_BATCH_SIZE} and a '
                    f"count >= 0, got {line[:60]!r}",
                    number,
                )
            count = float(parts[1])
            if not count <= MAX_COUNT:
                raise InputError(
                    where, f"count {parts[1][:20]!r} is not a number in 0..{MAX_COUNT:g}", number
                )
            counts[int(parts[0])] = counts.get(int(parts[0]), 0.0) + count
    total = math.fsum(counts.values())
    if not counts or not 0 < total < math.inf:
        raise InputError(where, "the histogram needs batch sizes >= 1 with counts >= 0, not all 0")
    return {b: c / total for b, c in sorted(counts.items()) if c > 0}


def uniform(buckets: list[Bucket]) -> dict[int, float]:
    """Every batch size from 1 to the largest bucket, equally likely."""
    top = max(b.batch_size for b in buckets)
    return {n: 1 / top for n in range(1, top + 1)}


#: Most steps ``best_buckets`` takes (sets extended by one bucket) before it gives up: about
#: a second here. 67 buckets (vLLM's default capture sizes) took 0.003 to 0.75 s by budget.
SEARCH_LIMIT = 1_000_000


class _Serving:
    """What serving a distribution costs, by intervals of batch sizes, each answered by a
    prefix sum: the share of batches, and of sequences, in ``(lo, hi]``."""

    def __init__(self, distribution: dict[int, float], captured: list[Bucket]) -> None:
        self.batches = sorted(distribution)
        self.mass = [0.0]  # mass[i]: share of batches among the first i sizes
        self.seqs = [0.0]  # seqs[i]: sum of p * batch over them
        for batch in self.batches:
            p = distribution[batch]
            self.mass.append(self.mass[-1] + p)
            self.seqs.append(self.seqs[-1] + p * batch)
        self.real = self.seqs[-1]
        self.captured = sorted(captured, key=lambda b: b.batch_size)

    def _at(self, size: float) -> int:
        return bisect.bisect_right(self.batches, size)

    def interval(self, lo: float, hi: float) -> tuple[float, float]:
        """(share of batches, of p * batch) with a size in ``(lo, hi]``."""
        a, b = self._at(lo), self._at(hi)
        return self.mass[b] - self.mass[a], self.seqs[b] - self.seqs[a]

    def served(self, lo: float, bucket: Bucket) -> tuple[float, float]:
        """(mean time, padded sequences) of the batches in ``(lo, bucket]``, run in it."""
        mass, seqs = self.interval(lo, bucket.batch_size)
        # Never below 0: a difference of prefix sums can come out a few ulp short of it.
        return mass * bucket.replay_us, max(0.0, bucket.batch_size * mass - seqs)

    def tails(self) -> list[tuple[float, float]]:
        """Per captured bucket i (in size order), and last for none kept: (mean time, share)
        of the batches above it, run eagerly at the eager step time of the captured bucket
        that would hold them (the largest, past every one); NaN where that time is unknown."""
        out: list[tuple[float, float]] = []
        mean, share, hi = 0.0, 0.0, math.inf
        holder = self.captured[-1] if self.captured else None
        for bucket in reversed(self.captured):
            mass, _ = self.interval(bucket.batch_size, hi)
            if mass > 0 and holder is not None:
                cost = holder.eager_step_us
                mean += mass * (cost if cost is not None else math.nan)
                share += mass
            out.append((mean, share))
            hi, holder = bucket.batch_size, bucket
        mass, _ = self.interval(0, hi)
        if mass > 0 and holder is not None:
            cost = holder.eager_step_us
            mean += mass * (cost if cost is not None else math.nan)
            share += mass
        out.reverse()
        return [*out, (mean, share)]


_Entry = tuple[int, float, float, int, Any]


def best_buckets(
    buckets: list[Bucket], distribution: dict[int, float], budget_bytes: int
) -> BucketChoice | None:
    """The subset of ``buckets`` within ``budget_bytes`` with the least mean step time
    (the smaller pool between equals); None when no subset fits or none can be ranked.

    Batches above the largest kept bucket run eagerly at the eager step time of the captured
    bucket that would have held them, which is what makes dropping a bucket cost; a subset
    that sends batches to a bucket with no eager time cannot be ranked. Exact: sets are built
    up bucket by bucket in size order, keeping for each largest bucket only the sets no other
    beats in both memory and time. Raises ``SearchTooLarge`` past ``SEARCH_LIMIT`` steps.
    """
    if len(buckets) * (len(buckets) - 1) // 2 > SEARCH_LIMIT:
        raise SearchTooLarge(len(buckets))
    serving = _Serving(distribution, buckets)
    ordered = serving.captured
    # Per largest kept bucket, the sets no other beats in both pool and time, each as
    # (pool, time, padded, index of its largest bucket, the entry of the rest or None).
    fronts: list[list[_Entry]] = []
    steps = 0
    for i, bucket in enumerate(ordered):
        made: list[_Entry] = []
        if bucket.graph_pool_bytes <= budget_bytes:
            time_us, padded = serving.served(0, bucket)
            made.append((bucket.graph_pool_bytes, time_us, padded, i, None))
        for j in range(i):
            steps += 1 + len(fronts[j])
            if steps > SEARCH_LIMIT:
                raise SearchTooLarge(len(buckets))
            time_us, padded = serving.served(ordered[j].batch_size, bucket)
            for entry in fronts[j]:
                pool = entry[0] + bucket.graph_pool_bytes
                if pool <= budget_bytes:
                    made.append((pool, entry[1] + time_us, entry[2] + padded, i, entry))
        made.sort(key=lambda e: (e[0], e[1]))
        front: list[_Entry] = []
        for entry in made:
            if not front or entry[1] < front[-1][1]:
                front.append(entry)
        fronts.append(front)
    best: tuple[float, int, float, float, Any] | None = None
    tails = serving.tails()
    for i, front in enumerate(fronts):
        tail, share = tails[i]
        if tail != tail:  # no eager time known for batches it leaves out: cannot rank
            continue
        for entry in front:
            rank = (entry[1] + tail, entry[0])
            if best is None or rank < best[:2]:
                best = (*rank, entry[2], share, entry)
    if best is None:
        return None
    mean, pool, padded, share, entry = best
    sizes = []
    while entry is not None:
        sizes.append(ordered[entry[3]].batch_size)
        entry = entry[4]
    return BucketChoice(
        sizes=sorted(sizes),
        pool_bytes=pool,
        mean_step_us=mean,
        padding_pct=100 * padded / serving.real if serving.real else 0.0,
        eager_share_pct=100 * share,
    )


class SearchTooLarge(Exception):
    """``best_buckets`` would take too long over this many buckets."""

    def __init__(self, buckets: int) -> None:
        super().__init__(f"{buckets} buckets: too many sets to search")
        self.buckets = buckets


def _evaluate_with_eager(
    kept: list[Bucket],
    distribution: dict[int, float],
    captured: list[Bucket],
) -> BucketChoice:
    """What serving ``distribution`` with ``kept`` costs.

    A batch above every kept bucket runs eagerly, at the eager step time of the captured
    bucket that would hold it (or the largest one); ``eager_share_pct`` says how much of the
    mean rests on that estimate (NaN where that time is unknown).
    """
    serving = _Serving(distribution, captured)
    ordered = sorted(kept, key=lambda b: b.batch_size)
    mean, padded, lo = 0.0, 0.0, 0
    for bucket in ordered:
        time_us, pad = serving.served(lo, bucket)
        mean, padded, lo = mean + time_us, padded + pad, bucket.batch_size
    sizes = [b.batch_size for b in serving.captured]
    largest = sizes.index(ordered[-1].batch_size) if ordered else -1  # -1: the last, none
    tail, share = serving.tails()[largest]
    return BucketChoice(
        sizes=[b.batch_size for b in ordered],
        pool_bytes=sum(b.graph_pool_bytes for b in kept),
        mean_step_us=mean + tail,
        padding_pct=100 * padded / serving.real if serving.real else 0.0,
        eager_share_pct=100 * share,
    )


def bucket_report(
    path: str | os.PathLike[str],
    distribution: dict[int, float] | None = None,
    budget_bytes: int | None = None,
) -> BucketReport:
    """The bucket report of a buckets.json (or its folder)."""
    model, rule, buckets, updates = read_buckets(path)
    dist = distribution or uniform(buckets)
    notes = []
    if distribution is None:
        top = max(b.batch_size for b in buckets)
        notes.append(f"batch sizes 1 to {top} taken as equally likely (give a histogram)")
    captured = _evaluate_with_eager(buckets, dist, buckets)
    if captured.eager_share_pct:
        notes.append(
            f"{captured.eager_share_pct:.0f}% of batches exceed every bucket and run eagerly"
        )
    pools = [b.graph_pool_bytes for b in buckets]
    if len(set(pools)) > 1 and max(pools) > 4 * min(pools):
        first = max(buckets, key=lambda b: b.graph_pool_bytes)
        extra = first.graph_pool_bytes - min(pools)
        notes.append(
            f"bucket {first.batch_size} holds {first.graph_pool_bytes / 2**20:.1f} MiB of graph "
            f"pool, {extra / 2**20:.1f} MiB more than the smallest ({min(pools) / 2**20:.1f} MiB)"
        )
    best, searched = None, True
    if budget_bytes is not None:
        try:
            best = best_buckets(buckets, dist, budget_bytes)
        except SearchTooLarge:
            searched = False
            notes.append(
                f"the best set within the budget is not shown: {len(buckets)} buckets give too "
                "many sets to search"
            )
    return BucketReport(
        model, rule, buckets, dist, captured, best, budget_bytes, updates, notes, searched
    )
