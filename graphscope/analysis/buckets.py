"""Batch-size buckets: one graph per bucket, and the rule that pads a batch into one."""

from __future__ import annotations

from collections.abc import Iterable

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
