"""The step report: what the graph saved over the eager step, and where replay time still goes."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import networkx as nx

from ..io import bulk
from ..model import display_name, module_of, module_text, replay_median
from .critical_path import critical_path
from .findings import findings, launch_figures
from .node_times import node_times
from .numerics import values_verdict
from .timing import step_timing

#: Module groups are cut to this many path components (``model.layers.3``), so that a layer's
#: submodules add up to the layer; ``module_depth=None`` keeps whole paths.
MODULE_DEPTH = 3
# A repeated module: the path before its first index (model.layers), the index, and the block
# under it (self_attn), if any.
_REPEATED = re.compile(r"^(.+?)\.\d+(?=\.|$)(?:\.([^.]+))?")


def _number(mapping: Any, key: str) -> float | None:
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


@dataclass
class StepReport:
    """Eager step against graph replay for one bundle; times in us, None where not recorded."""

    eager_step_us: float | None  # wall time of one eager step, untraced
    eager_traced_step_us: float | None  # wall time of the traced eager step
    eager_gpu_span_us: float | None  # first GPU start to last GPU end, traced eager step
    eager_cpu_launch_us: float | None  # CPU time in launch calls, traced eager step
    eager_gpu_busy_us: float | None  # GPU busy time of the traced eager step
    eager_gpu_idle_us: float | None  # GPU span minus busy time, traced eager step
    replay_us: float | None  # wall time of one graph replay, untraced
    replay_traced_us: float | None  # the same, traced
    replay_cpu_launch_us: float | None  # CPU time of the one graph launch call, untraced
    replay_gpu_span_us: float | None  # first node start to last node end, median of replays
    replay_gpu_busy_us: float | None  # union of node intervals, median of replays
    replay_gpu_idle_us: float | None  # replay_gpu_span_us minus replay_gpu_busy_us
    speedup: float | None  # eager_step_us / replay_us
    cpu_overhead_reduction_pct: float | None  # launch CPU time saved by the graph, in percent
    node_time_us: float | None  # sum of the nodes' replay medians
    critical_path_us: float | None  # longest dependency chain weighted by replay medians
    critical_path: list[str] = field(default_factory=list)  # its node keys, in order
    # span / critical path: 1.0 means replay is as short as its dependencies allow.
    span_over_critical: float | None = None
    # node time / critical path: how many nodes could run at once on average (1.0: a chain).
    parallelism: float | None = None
    top_nodes: list[dict[str, Any]] = field(default_factory=list)  # slowest nodes first
    top_modules: list[dict[str, Any]] = field(default_factory=list)  # module groups by time
    # Repeated modules summed over their instances (model.layers.*, model.layers.*.self_attn):
    # module, instances, nodes, replay_us, share_pct (of node time), per_instance_us.
    module_totals: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)  # see findings.py
    nodes: int = 0
    timed_nodes: int = 0
    # Where the timing came from (the bundle's timing.source: capture's own replays, or the
    # program's under graphscope record); None where the bundle does not say.
    timing_source: str | None = None
    # The launch call's CPU time traced, as the eager step's launch time is measured (older
    # bundles kept only this, as timing.cpu_launch_us).
    replay_cpu_launch_traced_us: float | None = None
    # Each node's replay median against its eager launch (node_times.NodeTimes.as_dict, its
    # rows cut to ``top``, slower in the graph first); None without both.
    graph_vs_eager: dict[str, Any] | None = None
    # The graph against eager by value (numerics.values_verdict); None where not compared.
    values: str | None = None
    # Why the graph has no timing at all, in words that fit where it came from; None when it
    # has some (replay, launch or eager figures, or node times).
    untimed_reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def has_step_timing(self) -> bool:
        """Whether any eager or replay figure of the step is known (a recorded graph has
        replay figures but no eager step)."""
        return any(
            value is not None
            for value in (
                self.eager_step_us,
                self.eager_traced_step_us,
                self.replay_us,
                self.replay_traced_us,
                self.replay_cpu_launch_us,
                self.replay_gpu_span_us,
                self.replay_gpu_busy_us,
            )
        )


def _module_group(data: dict[str, Any], depth: int | None) -> str:
    module = module_of(data)
    if not module:
        return module_text(module)
    parts = module.split(".")
    return ".".join(parts[:depth]) if depth else module


def _untimed_reason(G: nx.DiGraph) -> str:
    if G.number_of_nodes() == 0:
        return (
            "an empty graph: no nodes (torch.compile's CUDA graph trees instantiate one before "
            "the first real graph)"
        )
    if isinstance(G.graph.get("recording"), dict):
        return (
            "no timing: graphscope record saw no traced replay of this graph (the program "
            "never replayed it while tracing was on)"
        )
    return (
        "no timing in this file (a DOT dump has none): capture it with graphscope capture, or "
        "record the program with graphscope record"
    )


def module_totals(
    G: nx.DiGraph, medians: dict[str, float], node_time: float
) -> list[dict[str, Any]]:
    """Repeated modules summed over their instances, most time first: each layer stack
    (``model.layers.*``: every layer) and each block of its layers
    (``model.layers.*.self_attn``: every layer's attention). Only paths with two or more
    instances count; shares are of ``node_time``."""
    totals: dict[str, dict[str, Any]] = {}
    for key, value in medians.items():
        module = module_of(G.nodes[key]) or ""
        match = _REPEATED.match(module)
        if match is None:
            continue
        stack, block = match.group(1), match.group(2)
        instance = module[: match.end(0) - (len(block) + 1 if block else 0)]
        names = [f"{stack}.*"] + ([f"{stack}.*.{block}"] if block else [])
        for name in names:
            entry = totals.setdefault(
                name, {"module": name, "instances": set(), "nodes": 0, "replay_us": 0.0}
            )
            entry["instances"].add(instance)
            entry["nodes"] += 1
            entry["replay_us"] += value
    rows = []
    for entry in totals.values():
        count = len(entry["instances"])
        if count < 2:
            continue
        rows.append(
            {
                **entry,
                "instances": count,
                "share_pct": 100 * entry["replay_us"] / node_time if node_time else 0.0,
                "per_instance_us": entry["replay_us"] / count,
            }
        )
    return sorted(rows, key=lambda row: (-row["replay_us"], row["module"]))


def step_report(
    G: nx.DiGraph, top: int = 10, module_depth: int | None = MODULE_DEPTH
) -> StepReport:
    """The step report of a bundle's graph (a DOT graph gives counts and findings only)."""
    with bulk():
        return _step_report(G, top, module_depth)


def _step_report(G: nx.DiGraph, top: int, module_depth: int | None) -> StepReport:
    step = step_timing(G)
    timing, eager = step.timing, step.eager
    eager_step = timing.eager_step_us
    replay_wall = timing.replay_wall_us
    eager_launch = eager.cpu_launch_us
    replay_launch, maybe_traced = launch_figures(G)
    # Against the traced eager step, the traced launch: CUPTI lengthens both alike.
    launch_traced = timing.cpu_launch_traced_us or (replay_launch if maybe_traced else None)
    medians = {k: replay_median(d) for k, d in G.nodes(data=True)}
    timed = {k: m for k, m in medians.items() if m is not None}
    path, length = critical_path(G, lambda key: medians.get(key) or 0.0)
    node_time = sum(timed.values()) if timed else None
    span = timing.replay_us
    top_nodes = [
        {
            "node": key,
            "name": display_name(G.nodes[key]),
            "type": G.nodes[key].get("type"),
            "median_us": value,
            "p90_us": _number(G.nodes[key].get("replay"), "p90_us"),
            "eager_us": _number(G.nodes[key].get("eager"), "duration_us"),
            "module": (G.nodes[key].get("attribution") or {}).get("module"),
        }
        for key, value in sorted(timed.items(), key=lambda item: -item[1])[:top]
    ]
    groups: dict[str, dict[str, Any]] = defaultdict(lambda: {"nodes": 0, "replay_us": 0.0})
    for key, value in timed.items():
        group = groups[_module_group(G.nodes[key], module_depth)]
        group["nodes"] += 1
        group["replay_us"] += value
    top_modules = [
        {"module": name, **entry, "share_pct": 100 * entry["replay_us"] / node_time}
        for name, entry in sorted(groups.items(), key=lambda item: -item[1]["replay_us"])[:top]
        if node_time
    ]
    busy, source = timing.gpu_busy_us, (G.graph.get("timing") or {}).get("source")
    report = StepReport(
        eager_step_us=eager_step,
        eager_traced_step_us=eager.step_us,
        eager_gpu_span_us=eager.gpu_span_us,
        eager_cpu_launch_us=eager_launch,
        eager_gpu_busy_us=eager.gpu_busy_us,
        eager_gpu_idle_us=eager.gpu_idle_us,
        replay_us=replay_wall,
        replay_traced_us=timing.replay_wall_traced_us,
        replay_cpu_launch_us=None if maybe_traced else replay_launch,
        replay_gpu_span_us=span,
        replay_gpu_busy_us=busy,
        replay_gpu_idle_us=max(span - busy, 0.0) if span is not None and busy is not None else None,
        speedup=eager_step / replay_wall if eager_step and replay_wall else None,
        cpu_overhead_reduction_pct=(
            100 * (1 - launch_traced / eager_launch)
            if eager_launch and launch_traced is not None
            else None
        ),
        node_time_us=node_time,
        critical_path_us=length if timed else None,
        critical_path=path if timed else [],
        span_over_critical=span / length if span and timed and length > 0 else None,
        parallelism=node_time / length if node_time and length > 0 else None,
        top_nodes=top_nodes,
        top_modules=top_modules,
        module_totals=module_totals(G, timed, node_time)[:top] if node_time else [],
        findings=[f.as_dict() for f in findings(G)],
        nodes=G.number_of_nodes(),
        timed_nodes=len(timed),
        timing_source=source if isinstance(source, str) else None,
        replay_cpu_launch_traced_us=launch_traced,
        graph_vs_eager=None if (times := node_times(G, top)) is None else times.as_dict(),
        values=values_verdict(G),
    )
    if not timed and not report.has_step_timing:
        report.untimed_reason = _untimed_reason(G)
    return report
