"""Rules a recording must pass, for CI: ``graphscope check RECORDING``.

Each rule reads what ``graphscope record`` wrote (``graphscope.recording``) and, where a
process breaks it, gives one line naming the process, the graph, the input and the line of the
program where the recording says them. The same findings are the Diagnosis section of the
dashboard's catalog page, under the default rules.

A rule is never guessed past its data: a recording whose sampled windows saw no kernel says
nothing about the eager share, and that rule is then reported as not checked, not as passed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..recording import Recording, process_label
from . import coverage
from .lifecycle import (
    EAGER_SHARE_WARN_PCT,
    eager_share,
    failure_text,
    site_text,
    skip_texts,
    stale_text,
    unchanged_text,
)
from .memory import pool_total


@dataclass(frozen=True)
class Rules:
    """What ``check`` enforces; None or False leaves a rule out.

    Completeness (the program finished while recorded, and recording did not stop) is always
    checked: the other rules mean nothing on a recording that ends early.
    """

    no_failed_captures: bool = True
    no_stale_pointers: bool = True
    max_eager_share_pct: float | None = EAGER_SHARE_WARN_PCT  # as the catalog warns
    no_graph_stop: bool = True
    no_rerecord: bool = True
    no_skips: bool = True
    max_graphs: int | None = None
    max_pool_mib: float | None = None
    # opt in: a benchmark replaying one input, or a constant table, would break it
    no_unchanged_inputs: bool = False

    def describe(self) -> list[str]:
        """The rules in words, in the order they are checked."""
        out = ["complete"]
        if self.no_failed_captures:
            out.append("no failed stream capture")
        if self.no_stale_pointers:
            out.append("no graph replayed after memory it reads moved or was freed")
        if self.max_eager_share_pct is not None:
            out.append(f"eager share <= {self.max_eager_share_pct:g}%")
        if self.no_graph_stop:
            out.append("graphs launched to the end")
        if self.no_rerecord:
            out.append("no re-record with the same input shapes")
        if self.no_skips:
            out.append("no torch.compile cudagraph skips")
        if self.max_graphs is not None:
            out.append(f"<= {self.max_graphs} graphs a process")
        if self.max_pool_mib is not None:
            out.append(f"<= {self.max_pool_mib:g} MiB of graph pools a process")
        if self.no_unchanged_inputs:
            out.append("no graph input left unchanged across its sampled replays")
        return out


DEFAULT_RULES = Rules()


@dataclass
class Violation:
    """One rule broken by one process: ``message`` is the line ``check`` prints."""

    # incomplete, failed-capture, stale-pointer, eager-share, graphs-stopped, rerecord, skips,
    # max-graphs, max-pool, unchanged-input
    rule: str
    process: str  # "pid 622 (hf_generate.py)"
    graph: str | None  # the first graph at fault, where one is
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CheckResult:
    violations: list[Violation]
    checked: list[str]  # the rules in words
    unchecked: list[str]  # "eager share: pid 1 (x.py): no kernel in the sampled windows"

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": not self.violations,
            "rules": self.checked,
            "violations": [v.as_dict() for v in self.violations],
            "not_checked": self.unchecked,
        }


def _more(items: list[str]) -> str:
    """``" (and 2 more: g11, g14)"`` after the first of ``items``."""
    rest = items[1:]
    if not rest:
        return ""
    shown = ", ".join(rest[:8]) + (", ..." if len(rest) > 8 else "")
    return f" (and {len(rest)} more: {shown})"


def _and(count: int) -> str:
    """``" (and 2 more)"`` after the first of ``count`` findings told in full."""
    return f" (and {count - 1} more)" if count > 1 else ""


def _where(g: dict[str, Any]) -> str:
    """Where a graph was captured, and the program's own line when that is elsewhere."""
    site, program = site_text(g.get("site")), site_text(g.get("program_site"))
    text = f" at {site}" if site else ""
    if program and program != site:
        text += f" (from {program})"
    return text


# What the recorder writes as a re-record's reason when torch said none: the shapes alone.
_SHAPES_ONLY = {None, "", "same input shapes", "new input shapes", "why unknown"}


def check_process(rec: Recording, rules: Rules) -> tuple[list[Violation], list[str]]:
    """The rules ``rec`` breaks, and those its data cannot answer."""
    label = process_label(rec)
    out: list[Violation] = []
    unchecked: list[str] = []
    graphs = rec.graphs

    def broke(rule: str, graph: str | None, message: str) -> None:
        out.append(Violation(rule, label, graph, f"{label}: {message}"))

    status = rec.process["status"]
    if status == "running":
        broke(
            "incomplete",
            None,
            "the program did not finish while recorded (killed, or still running): the "
            f"recording ends at {rec.process.get('updated_at') or 'an unknown time'}",
        )
    elif status == "stopped":
        broke("incomplete", None, f"recording stopped: {rec.process.get('stop_reason')}")

    if rules.no_failed_captures and rec.capture_failures:
        failures = rec.capture_failures
        text = failure_text(failures[0])
        broke("failed-capture", None, f"a stream capture failed: {text}{_and(len(failures))}")

    if rules.no_stale_pointers:
        read = [s for s in rec.stale_pointers if s.get("replays_since")]
        if read:
            broke("stale-pointer", read[0]["graph"], f"{stale_text(read[0])}{_and(len(read))}")

    if rules.no_unchanged_inputs:
        unchanged = rec.unchanged_inputs
        if unchanged:
            first = unchanged[0]
            broke(
                "unchanged-input",
                first["graph"],
                f"{unchanged_text(first)}{_and(len(unchanged))}: if it is an input, nothing "
                "wrote it between replays (copy into it, x.copy_(new), not x = new)",
            )
        elif not (rec.input_checks or {}).get("blocks") and graphs:
            unchecked.append(f"unchanged inputs: {label}: no graph input block was sampled")

    if rules.max_eager_share_pct is not None:
        share = eager_share(rec)
        if share is None:
            if graphs:  # a process with no graph and no kernel did no GPU work to judge
                unchecked.append(f"eager share: {label}: no kernel ran in the sampled windows")
        elif share > rules.max_eager_share_pct:
            launches = sum(g["replays"] for g in graphs)
            why = (
                "no CUDA graph was instantiated"
                if not graphs
                else f"{len(graphs)} graphs were instantiated and none replayed"
                if launches == 0
                else f"{launches:,} graph launches"
            )
            broke(
                "eager-share",
                None,
                f"{share:.0f}% of the GPU kernel time in the sampled windows ran outside "
                f"graphs, more than {rules.max_eager_share_pct:g}% ({why})",
            )

    if rules.no_graph_stop:
        stopped = coverage.stop(rec)
        lapsed = coverage.lapses(rec)
        # A GPU idle after the stop (the probes saw no kernel) is no fallback to eager.
        if stopped is not None and stopped.eager is not False:
            graph = stopped.last_graphs[0] if stopped.last_graphs else None
            broke("graphs-stopped", graph, coverage.stop_text(stopped, rec) + _and(1 + len(lapsed)))
        elif lapsed:
            graph = lapsed[0].last_graphs[0] if lapsed[0].last_graphs else None
            broke("graphs-stopped", graph, coverage.lapse_text(lapsed[0], rec) + _and(len(lapsed)))

    if rules.no_rerecord:
        same = [
            g
            for g in graphs
            if g.get("rerecord_of") and g.get("inputs") and not g.get("shape_changes")
        ]
        if same:
            g = same[0]
            reason = g.get("rerecord_reason")
            why = (
                "; the recording holds no reason from the engine"
                if reason in _SHAPES_ONLY
                else f": {reason}"
            )
            broke(
                "rerecord",
                g["id"],
                f"{g['id']} was recorded again after {g['rerecord_of']} with the same input "
                f"shapes{_where(g)}{why}{_more([s['id'] for s in same])}",
            )

    if rules.no_skips:
        skips = rec.fallbacks.get("inductor_cudagraph_skips")
        reasons = skip_texts(rec.fallbacks)
        if (isinstance(skips, int) and skips > 0) or reasons:
            count = skips if isinstance(skips, int) and skips > 0 else len(reasons)
            said = f": {reasons[0]}{_more(reasons)}" if reasons else " (torch said no reason)"
            broke(
                "skips",
                None,
                f"torch.compile ran {count} function(s) without CUDA graphs{said}",
            )

    if rules.max_graphs is not None and len(graphs) > rules.max_graphs:
        ids = [g["id"] for g in graphs]
        broke(
            "max-graphs",
            ids[rules.max_graphs],
            f"{len(graphs)} graphs, more than {rules.max_graphs}: the first past the limit is "
            f"{ids[rules.max_graphs]}{_where(graphs[rules.max_graphs])}",
        )

    if rules.max_pool_mib is not None:
        total = pool_total(rec) if graphs else 0
        if total is None:
            unchecked.append(f"graph pools: {label}: the recording has no pool sizes")
        elif total > rules.max_pool_mib * 2**20:
            sized = [g for g in graphs if isinstance((g.get("pool") or {}).get("bytes"), int)]
            largest = max(sized, key=lambda g: g["pool"]["bytes"])
            broke(
                "max-pool",
                largest["id"],
                f"graph pools hold {total / 2**20:.1f} MiB, more than {rules.max_pool_mib:g} "
                f"MiB; the largest is {largest['id']}'s, {largest['pool']['bytes'] / 2**20:.1f} "
                f"MiB{_where(largest)}",
            )
    return out, unchecked


def check(recordings: list[Recording], rules: Rules = DEFAULT_RULES) -> CheckResult:
    """Every process of a run against ``rules``: violations in process order."""
    violations: list[Violation] = []
    unchecked: list[str] = []
    for rec in recordings:
        broken, unknown = check_process(rec, rules)
        violations += broken
        unchecked += unknown
    return CheckResult(violations, rules.describe(), unchecked)
