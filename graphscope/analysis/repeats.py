"""Repeated structure: runs of layers, or of node sequences, that launch the same kernels.

A decoder's graph is its layers over and over: 224 layers of 48 kernels make a 10,780-node
graph that says no more than one layer does. Where nodes carry module paths, a layer is the
module path up to its first index (``model.layers.3``) and consecutive layers whose nodes run
the same kernels in the same order form one run. Where they carry none (a DOT dump), each
graph's nodes in creation order are searched for a period: a sequence of node kinds that
repeats back to back.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from graphscope.model import origin_of

#: Fewest nodes in one repeated instance, in graphs without module paths: shorter periods
#: (three memsets in a row) are detail, not structure.
MIN_PERIOD = 4
#: Candidate periods tried, from the most common gaps between a kind's launches.
CANDIDATES = 6
# A layer: the module path up to and including its first index (model.layers.3).
_LAYER = re.compile(r"^(.*?)\.(\d+)(?:\.|$)")


@dataclass
class Repeat:
    """A run of instances, each the same sequence of node kinds."""

    prefix: str  # "model.layers", or "graph 0" where nodes carry no module path
    first: int  # the first layer's index; 0 for a run found in a sequence
    instances: list[list[str]] = field(default_factory=list)  # node keys, in order
    layers: bool = True  # found from module paths, each instance a layer
    span: tuple[int, int] = (0, 0)  # first and last local id, for a run found in a sequence

    @property
    def count(self) -> int:
        return len(self.instances)

    @property
    def per_instance(self) -> int:
        return len(self.instances[0]) if self.instances else 0

    @property
    def name(self) -> str:
        """``model.layers 0..223 x224``: no ``.N`` in it, so it never reads as a layer."""
        if not self.layers:
            a, b = self.span
            return f"{self.prefix}: nodes {a}..{b}, {self.count} x {self.per_instance}"
        return f"{self.prefix} {self.first}..{self.first + self.count - 1} x{self.count}"

    def rest_name(self) -> str:
        """The instances after the first, as one block."""
        if not self.layers:
            a, b = self.span
            return f"{self.prefix}: nodes {a}..{b}, repeats 2..{self.count}"
        last = self.first + self.count - 1
        return f"{self.prefix} {self.first + 1}..{last} x{self.count - 1}"


def kind(data: dict[str, Any]) -> str:
    """What must match for two nodes to count as the same: the kernel, or the node type."""
    if data.get("type") == "KERNEL":
        return str(data.get("short_name") or data.get("name") or "KERNEL")
    return str(data.get("type", "?"))


def layer_and_index(module: str) -> tuple[str, str, int] | None:
    """``("model.layers.3", "model.layers", 3)`` for a module path inside a layer."""
    match = _LAYER.match(module)
    if match is None:
        return None
    prefix, index = match.group(1), int(match.group(2))
    return f"{prefix}.{index}", prefix, index


def layer_repeats(G: nx.DiGraph) -> list[Repeat]:
    """Runs of consecutive layers (by module path) that launch the same kernels in order."""
    layers: dict[str, list[str]] = {}
    named: dict[str, tuple[str, int]] = {}
    for key, data in G.nodes(data=True):
        module = origin_of(data).get("module")
        found = layer_and_index(module) if isinstance(module, str) and module else None
        if found is None:
            continue
        layer, prefix, index = found
        layers.setdefault(layer, []).append(key)
        named[layer] = (prefix, index)

    def order(key: str) -> tuple[int, int]:
        data = G.nodes[key]
        return int(data.get("graph_id", 0)), int(data.get("local_id", 0))

    for keys in layers.values():
        keys.sort(key=order)
    # Layers in the order their first nodes run.
    ordered = sorted(layers, key=lambda layer: order(layers[layer][0]))
    runs: list[Repeat] = []
    current: Repeat | None = None
    signature: tuple[str, ...] = ()
    for layer in ordered:
        prefix, index = named[layer]
        sig = tuple(kind(G.nodes[k]) for k in layers[layer])
        if (
            current is not None
            and prefix == current.prefix
            and index == current.first + current.count
            and sig == signature
        ):
            current.instances.append(layers[layer])
            continue
        if current is not None and current.count > 1:
            runs.append(current)
        current, signature = Repeat(prefix, index, [layers[layer]]), sig
    if current is not None and current.count > 1:
        runs.append(current)
    return runs


def _runs(tokens: list[int], period: int) -> list[tuple[int, int]]:
    """``(start, instances)`` of each run of back-to-back copies of a ``period``-long span."""
    out = []
    i, n = 0, len(tokens)
    while i + 2 * period <= n:
        # The first element alone rules out most starts before any slice is taken.
        if (
            tokens[i] != tokens[i + period]
            or tokens[i : i + period] != tokens[i + period : i + 2 * period]
        ):
            i += 1
            continue
        block = tokens[i : i + period]
        count = 2
        while tokens[i + count * period : i + (count + 1) * period] == block:
            count += 1
        out.append((i, count))
        i += count * period
    return out


def sequence_repeats(G: nx.DiGraph, keys: list[str], prefix: str) -> list[Repeat]:
    """Runs of a repeated span of node kinds in ``keys`` (one graph, in creation order).

    The period is taken from the most common gaps between two launches of one kind (a
    kernel that runs once a layer recurs once a period) and from the gaps most kinds repeat
    at, and the one whose runs cover the most nodes wins; ties go to the shorter.
    """
    ids: dict[str, int] = {}
    tokens = [ids.setdefault(kind(G.nodes[k]), len(ids)) for k in keys]
    last: dict[int, int] = {}
    gaps: Counter[int] = Counter()
    by_kind: dict[int, Counter[int]] = {}
    for i, token in enumerate(tokens):
        if token in last:
            gaps[i - last[token]] += 1
            by_kind.setdefault(token, Counter())[i - last[token]] += 1
        last[token] = i
    # Each kind also votes once for its own most common gap. A kernel launched once a layer
    # recurs once a period, but the gaps of kernels launched many times a layer (a GEMV, a
    # copy) can outnumber it: in a 32-layer gpt-fast dump, 53 nodes a layer, the period was
    # the 7th most common gap and the dump was not folded (issue 27).
    votes = Counter(kinds.most_common(1)[0][0] for kinds in by_kind.values())
    candidates = dict.fromkeys(
        [p for p, _ in gaps.most_common(CANDIDATES)] + [p for p, _ in votes.most_common(CANDIDATES)]
    )
    best: tuple[int, int, list[tuple[int, int]]] | None = None  # covered, -period, runs
    for period in candidates:
        if period < MIN_PERIOD:
            continue
        runs = _runs(tokens, period)
        covered = sum(count * period for _, count in runs)
        if covered and (best is None or (covered, -period) > best[:2]):
            best = (covered, -period, runs)
    if best is None:
        return []
    period = -best[1]
    out = []
    for start, count in best[2]:
        instances = [keys[start + j * period : start + (j + 1) * period] for j in range(count)]
        ends = instances[0][0], instances[-1][-1]
        span = (int(G.nodes[ends[0]].get("local_id", 0)), int(G.nodes[ends[1]].get("local_id", 0)))
        out.append(Repeat(prefix, 0, instances, layers=False, span=span))
    return out
