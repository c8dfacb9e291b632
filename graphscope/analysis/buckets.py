"""Batch-size buckets: one graph per bucket, and the rule that pads a batch into one."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError

#: Batch sizes ``graphscope capture`` captures when none are given.
DEFAULT_BUCKETS = (1, 2, 4, 8)
#: How a batch finds its graph, as recorded in bundles and buckets.json.
PADDING_RULE = "a batch of n runs in the smallest bucket >= n, padded to it"


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

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for entry, bucket in zip(out["buckets"], self.buckets, strict=True):
            entry["per_sequence_us"] = bucket.per_sequence_us
        return out


def read_buckets(
    path: str | os.PathLike[str],
) -> tuple[str | None, str, list[Bucket], list[dict[str, Any]]]:
    """(model, padding rule, buckets, driver update verdicts) from a ``<model>.buckets.json``
    or a folder holding one."""
    where = Path(path)
    if where.is_dir():
        found = sorted(where.glob("*.buckets.json"))
        if not found:
            raise InputError(where, "no *.buckets.json here: graphscope capture writes one")
        if len(found) > 1:
            names = ", ".join(p.name for p in found)
            raise InputError(where, f"several buckets files ({names}): name the one to read")
        where = found[0]
    try:
        doc = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(where, "no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(where, f"not a buckets.json ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("buckets"), list):
        raise InputError(where, 'not a buckets.json: expected an object with a "buckets" list')
    buckets = []
    for i, entry in enumerate(doc["buckets"]):
        try:
            buckets.append(
                Bucket(
                    batch_size=int(entry["batch_size"]),
                    replay_us=float(entry["replay_us"]),
                    nodes=int(entry["nodes"]),
                    graph_pool_bytes=int(entry["graph_pool_bytes"]),
                    eager_step_us=(
                        float(entry["eager_step_us"])
                        if entry.get("eager_step_us") is not None
                        else None
                    ),
                    bundle=entry.get("bundle"),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(where, f"bucket {i} lacks or mangles {exc}") from None
    if not buckets:
        raise InputError(where, "lists no buckets")
    buckets.sort(key=lambda b: b.batch_size)
    updates = [u for u in doc.get("updates") or [] if isinstance(u, dict)]
    return doc.get("model"), str(doc.get("padding", PADDING_RULE)), buckets, updates


def read_distribution(path: str | os.PathLike[str]) -> dict[int, float]:
    """A batch-size histogram: JSON ``{"1": 120, "4": 30}`` or lines of ``batch,count``."""
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(where, f"cannot read the histogram ({exc})") from None
    counts: dict[int, float] = {}
    if text.lstrip().startswith("{"):
        try:
            counts = {int(k): float(v) for k, v in json.loads(text).items()}
        except (ValueError, AttributeError) as exc:
            raise InputError(where, f"not a JSON object of batch size -> count ({exc})") from None
    else:
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line or line.lower().startswith("batch"):
                continue
            try:
                batch, count = (part.strip() for part in line.split(","))
                counts[int(batch)] = counts.get(int(batch), 0.0) + float(count)
            except ValueError:
                raise InputError(where, f'expected "batch,count", got {line!r}', number) from None
    if not counts or any(b < 1 or c < 0 for b, c in counts.items()) or sum(counts.values()) <= 0:
        raise InputError(where, "the histogram needs batch sizes >= 1 with counts >= 0, not all 0")
    total = sum(counts.values())
    return {b: c / total for b, c in sorted(counts.items()) if c > 0}


def uniform(buckets: list[Bucket]) -> dict[int, float]:
    """Every batch size from 1 to the largest bucket, equally likely."""
    top = max(b.batch_size for b in buckets)
    return {n: 1 / top for n in range(1, top + 1)}


def best_buckets(
    buckets: list[Bucket], distribution: dict[int, float], budget_bytes: int
) -> BucketChoice | None:
    """The subset of ``buckets`` within ``budget_bytes`` with the least mean step time.

    Batches above the largest kept bucket run eagerly at the eager step time of the captured
    bucket that would have held them, which is what makes dropping a bucket cost.
    Exhaustive over subsets: a model has a few dozen buckets at most (capped at 20 here).
    """
    if len(buckets) > 20:
        raise ValueError(f"{len(buckets)} buckets: choosing among more than 20 is not supported")
    eager = {b.batch_size: b.eager_step_us for b in buckets}
    best: BucketChoice | None = None
    for mask in range(1, 1 << len(buckets)):
        kept = [b for i, b in enumerate(buckets) if mask >> i & 1]
        if sum(b.graph_pool_bytes for b in kept) > budget_bytes:
            continue
        choice = _evaluate_with_eager(kept, distribution, buckets, eager)
        if choice.mean_step_us != choice.mean_step_us:  # no eager time known: cannot rank
            continue
        if best is None or (choice.mean_step_us, choice.pool_bytes) < (
            best.mean_step_us,
            best.pool_bytes,
        ):
            best = choice
    return best


def _evaluate_with_eager(
    kept: list[Bucket],
    distribution: dict[int, float],
    captured: list[Bucket],
    eager: dict[int, float | None],
) -> BucketChoice:
    """What serving ``distribution`` with ``kept`` costs.

    A batch above every kept bucket runs eagerly, at the eager step time of the captured
    bucket that would hold it (or the largest one); ``eager_share_pct`` says how much of the
    mean rests on that estimate.
    """
    sizes = sorted(b.batch_size for b in kept)
    by_size = {b.batch_size: b for b in kept}
    all_sizes = sorted(b.batch_size for b in captured)
    mean, padded, real, share = 0.0, 0.0, 0.0, 0.0
    for batch, p in distribution.items():
        real += p * batch
        bucket = bucket_for(batch, sizes)
        if bucket is not None:
            mean += p * by_size[bucket].replay_us
            padded += p * (bucket - batch)
            continue
        share += p
        holder = bucket_for(batch, all_sizes) or all_sizes[-1]
        cost = eager.get(holder)
        mean += p * (cost if cost is not None else float("nan"))
    return BucketChoice(
        sizes=sizes,
        pool_bytes=sum(b.graph_pool_bytes for b in kept),
        mean_step_us=mean,
        padding_pct=100 * padded / real if real else 0.0,
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
    captured = _evaluate_with_eager(
        buckets, dist, buckets, {b.batch_size: b.eager_step_us for b in buckets}
    )
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
    best = best_buckets(buckets, dist, budget_bytes) if budget_bytes is not None else None
    return BucketReport(model, rule, buckets, dist, captured, best, budget_bytes, updates, notes)
