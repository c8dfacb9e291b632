"""What a recording says about a program's graphs: the catalog, and what deserves a look.

Answers, per process: are the graphs used at all, or did work fall back to eager? Why was a
graph recorded again? How much memory do the graphs hold? Which batch sizes hit which graph,
and how often? Pure functions over validated recordings (``graphscope.recording``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..recording import Recording, process_label
from . import coverage
from .memory import Ledger, ledger, pool_total

#: Above this share of kernel time outside graphs in the sampled windows, say so.
EAGER_SHARE_WARN_PCT = 50.0


def site_text(site: Any) -> str | None:
    """``file.py:LINE in function`` of a recorded site, or None."""
    if not isinstance(site, dict) or not site.get("file"):
        return None
    text = f"{Path(str(site['file'])).name}:{site.get('line') or '?'}"
    return text + (f" in {site['function']}" if site.get("function") else "")


#: What the recorder's pointer check covers (capture/record/integrity.py).
STALE_COVERAGE = (
    "checked: pointers into the parameters and buffers of the modules each graph was captured "
    "under, and into the other blocks of torch's allocator outside the graph's pool (static "
    "inputs, caches) every 10 s; not checked: memory torch's allocator does not hold, and a "
    "block freed and allocated again at the same address and size"
)


def failure_text(f: dict[str, Any]) -> str:
    """One failed capture (``RECORDING_CAPTURE_FAILURE``) in a sentence: which call broke it,
    where in the program, and how the capture ended."""
    capture = f.get("capture") or {}
    began = site_text(capture.get("site"))
    the_capture = f"the {capture.get('capturer') or 'stream'} capture" + (
        f" begun at {began}" if began else ""
    )
    if not f.get("call"):  # it ended invalidated and no watched call failed: the capture alone
        text = the_capture
    else:
        where = site_text(f.get("site"))
        program = site_text(f.get("program_site"))
        text = f"{f['call']} returned {f.get('error') or 'an error'}"
        text += f" at {where}" if where else ""
        text += f" (from {program})" if program and program != where else ""
        text += f", module {f['module']}" if f.get("module") is not None else ""
        text += f", thread {f['thread']}" if f.get("thread") else ""
        text += f", inside {the_capture}" if capture else ""
    ended = f.get("ended")
    if ended is None:
        return text + "; the capture had not ended when the recording did"
    return f"{text}; {ended}" if ended != "never began" else f"{text}: the capture never began"


# What capture/record/inputs.py arms (BLOCK_BYTES, BLOCKS_PER_GRAPH): graphscope/ reads
# recordings without importing the recorder.
UNCHANGED_COVERAGE = (
    "checked: the small blocks (64 KiB at most, 8 a graph) of torch's allocator that each graph "
    "reads outside its own pool and the model's parameters and buffers, read just before "
    "sampled replays; not checked: larger buffers, and memory torch's allocator does not hold"
)


def _nodes_shown(nodes: list[str]) -> str:
    """The first six of a finding's nodes, and "..." where there are more."""
    return ", ".join(nodes[:6]) + (", ..." if len(nodes) > 6 else "")


def unchanged_text(u: dict[str, Any]) -> str:
    """One unchanged input finding (``RECORDING_UNCHANGED_INPUT``) in a sentence."""
    nodes = list(u.get("nodes") or [])
    kernels = u.get("kernels") or []
    if len(kernels) == len(nodes):  # recordings since the recorder named them
        nodes = [f"{n} {k}" for n, k in zip(nodes, kernels, strict=True)]
    shown = _nodes_shown(nodes)
    samples = u["samples"]
    span = ""
    if "first_replay" in u and "last_replay" in u:
        span = f", from replay {u['first_replay']:,} to {u['last_replay']:,}"
        if "first_s" in u and "last_s" in u:
            span += f" ({u['last_s'] - u['first_s']:.1f} s)"
    return (
        f"{u['graph']} points into {u['buffer']} (nodes {shown}): it held the same bytes "
        f"before all {samples} replays sampled{span}"
    )


#: What an unchanged input means, said once under the findings.
UNCHANGED_ADVICE = (
    "if one is an input the program means to feed, nothing wrote it between replays: copy "
    "into it (x.copy_(new)) rather than bind a new tensor to its name (x = new); a constant, "
    "an input replayed unchanged on purpose, or an output the graph computes alike each time "
    "reads the same"
)


def stale_text(s: dict[str, Any]) -> str:
    """One stale pointer finding (``RECORDING_STALE_POINTER``) in a sentence."""
    nodes = s.get("nodes") or []
    pointers = f"({s.get('pointers', len(nodes))} pointers of nodes {_nodes_shown(nodes)})"
    if s.get("why"):  # an allocator block: a static input or cache freed under the graph
        text = (
            f"{s['graph']} points into {s['buffer']}, allocated when the graph was read; "
            f"it {s['why']} {pointers}"
        )
    else:
        now = "is gone" if s.get("now") is None else f"moved to {s['now']:#x}"
        text = (
            f"{s['graph']} points at {s['buffer']} where it was, {s['was']:#x}; it {now} {pointers}"
        )
    since = s.get("replays_since", 0)
    return text + (
        f": the graph was replayed {since:,} times after, reading the old memory"
        if since
        else ": not replayed since"
    )


def skip_texts(fallbacks: dict[str, Any]) -> list[str]:
    """Each reason torch.compile gave for running a function without CUDA graphs, with what its
    calls cost on the GPU where the recorder counted them (``RECORDING_SKIPPED``)."""
    cost = {str(s.get("reason")): s for s in fallbacks.get("skipped") or []}
    out = []
    for reason in [str(r) for r in fallbacks.get("reasons") or []]:
        s = cost.get(reason)
        if s is None:
            out.append(reason)
            continue
        calls = int(s.get("calls") or 0)
        said = f"{reason}: {calls:,} call{'s' if calls != 1 else ''} ran eagerly"
        if s.get("gpu_us_median") is not None:
            said += (
                f", {s['gpu_us_median']:,.1f} us of GPU time each (median of "
                f"{s.get('timed', 0):,} timed), about {s['gpu_ms_est']:,.2f} ms in all"
            )
        elif calls:
            said += ", none timed"
        out.append(said)
    return out


def _reason(g: dict[str, Any]) -> str:
    """Why a graph was recorded again, as its entry says, or as its inputs tell."""
    if g.get("rerecord_reason"):
        return str(g["rerecord_reason"])
    if g.get("shape_changes"):
        return "new input shapes"
    return "same input shapes" if g.get("inputs") else "why unknown"


def catalog(recording: Recording) -> list[dict[str, Any]]:
    """One row per graph: who captured it where, its batch, size, use, share, memory, history.

    ``gpu_share_pct`` is the graph's estimated GPU time (replays x median traced span) over
    that of every graph of the process; graphs never timed have None.
    """
    total = sum(g["gpu_time_us"] for g in recording.graphs if g.get("gpu_time_us"))
    rows = []
    for g in recording.graphs:
        pool = g.get("pool") or {}
        changes = g.get("shape_changes") or []
        rows.append(
            {
                "id": g["id"],
                "bundle": g.get("bundle"),
                "capturer": g.get("capturer"),
                "site": site_text(g.get("site")),
                "program_site": site_text(g.get("program_site")),
                "batch": g.get("batch"),
                "nodes": g.get("nodes"),
                "kernels": g.get("kernels"),
                "replays": g["replays"],
                "traced_replays": g["traced_replays"],
                "replay_us": g.get("replay_us"),
                "gpu_share_pct": 100 * g["gpu_time_us"] / total
                if total and g.get("gpu_time_us")
                else None,
                "pool_bytes": pool.get("bytes"),
                "pool_shared_with": list(pool.get("shared_with") or []),
                "rerecord_of": g.get("rerecord_of"),
                "rerecord_reason": _reason(g) if g.get("rerecord_of") else None,
                "shape_changes": [
                    f"input {c.get('input')}: {c.get('from')} -> {c.get('to')}" for c in changes
                ],
                "updates": len(g["updates"]),
                "destroyed": g.get("destroyed_at_s") is not None,
                "error": g.get("error"),
            }
        )
    return rows


def history(row: dict[str, Any]) -> list[str]:
    """A catalog row's history in words: recorded again and why, shared pool, updates, end."""
    parts = []
    if row["rerecord_of"]:
        why = "; ".join(row["shape_changes"]) or row["rerecord_reason"] or "why unknown"
        parts.append(f"recorded again after {row['rerecord_of']}: {why}")
    if row["pool_shared_with"]:
        parts.append(f"pool shared with {len(row['pool_shared_with'])} graphs")
    if row["updates"]:
        parts.append(f"{row['updates']} cudaGraphExecUpdate calls")
    if row["destroyed"]:
        parts.append("destroyed")
    if row["error"]:
        parts.append(f"no bundle: {row['error']}")
    return parts


@dataclass
class Note:
    """Something a recording shows that deserves a look."""

    code: str  # stable id: unused-graph, same-shape-rerecord, eager-share, ...
    severity: str  # warning or info
    title: str  # one line
    details: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProcessReport:
    """One process's recording, for people."""

    label: str  # rank 0 (pid 123)
    status: str
    graphs: int
    replays: int
    pool_bytes: int | None  # distinct pools' bytes, added once each
    eager_share_pct: float | None  # kernel time outside graphs in the sampled windows
    rows: list[dict[str, Any]]
    notes: list[Note]
    memory: Ledger | None = None  # the pools and what dropping a batch frees
    launched: list[coverage.Span] = field(default_factory=list)  # each graph's span of the run

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["notes"] = [n.as_dict() for n in self.notes]
        out["memory"] = self.memory.as_dict() if self.memory is not None else None
        return out


def eager_share(recording: Recording) -> float | None:
    """Percent of GPU kernel time in the sampled windows that ran outside any graph."""
    s = recording.sampling
    graph, eager = s.get("graph_kernel_us"), s.get("eager_kernel_us")
    if not isinstance(graph, (int, float)) or not isinstance(eager, (int, float)):
        return None
    total = graph + eager
    return 100 * eager / total if total > 0 else None


def notes(recording: Recording) -> list[Note]:
    """What in this recording deserves a look, most pressing first."""
    out: list[Note] = []
    graphs = recording.graphs
    p = recording.process
    if p["status"] == "running":
        out.append(
            Note(
                "did-not-finish",
                "warning",
                f"the program did not finish while recorded: this is what it did until "
                f"{p.get('updated_at', '?')}",
            )
        )
    elif p["status"] == "stopped":
        out.append(
            Note("recording-stopped", "warning", f"recording stopped: {p.get('stop_reason')}")
        )
    stopped = coverage.stop(recording)
    if stopped is not None:
        level = "info" if stopped.eager is False else "warning"
        out.append(Note("graphs-stopped", level, coverage.stop_text(stopped, recording)))
    lapsed = coverage.lapses(recording)
    if lapsed:
        out.append(
            Note(
                "graphs-lapsed",
                "warning",
                f"{len(lapsed)} stretch(es) of the run went without graphs while the program "
                "ran eagerly, and graphs were launched again after",
                [coverage.lapse_text(s, recording) for s in lapsed[:10]],
            )
        )
    share = eager_share(recording)
    launches = sum(g["replays"] for g in graphs)
    if not graphs and recording.sampling.get("eager_kernels"):
        out.append(
            Note("no-graphs", "warning", "no CUDA graph was instantiated: all work ran eagerly")
        )
    elif graphs and launches == 0:
        out.append(
            Note("no-replays", "warning", f"{len(graphs)} graphs instantiated, none replayed")
        )
    if share is not None and share >= EAGER_SHARE_WARN_PCT:
        out.append(
            Note(
                "eager-share",
                "warning",
                f"{share:.0f}% of the GPU kernel time in the sampled windows ran outside graphs",
                [
                    "kernels launched eagerly between or instead of replays: a fallback to "
                    "eager, or work the graphs leave out (sampling, prefill)"
                ],
            )
        )
    failures = recording.capture_failures
    if failures:
        first = failures[0]
        out.append(
            Note(
                "capture-failed",
                "warning",
                f"{len(failures)} stream capture(s) failed or were refused",
                [failure_text(f) for f in failures[:10]]
                + (["the first one's Python stack, innermost first:"] if first.get("stack") else [])
                + [f"  {line}" for line in (first.get("stack") or [])[:8]],
            )
        )
    stale = recording.stale_pointers
    if stale:
        graphs_hit = sorted({s["graph"] for s in stale})
        out.append(
            Note(
                "stale-pointers",
                "warning",
                f"{len(graphs_hit)} graph(s) kept pointing at parameters that moved or went "
                "away, or at memory freed, while they lived (a weight reload that rebinds "
                "storage, a static input or cache made anew)",
                [stale_text(s) for s in stale[:10]] + [STALE_COVERAGE],
            )
        )
    unchanged = recording.unchanged_inputs
    if unchanged:
        graphs_hit = sorted({u["graph"] for u in unchanged})
        out.append(
            Note(
                "unchanged-inputs",
                "info",
                f"{len(unchanged)} buffer(s) that {len(graphs_hit)} graph(s) point into held "
                "the same bytes before every sampled replay: an input nothing feeds (a "
                "rebinding, not a copy into it), a constant, or an output that never changes",
                [unchanged_text(u) for u in unchanged[:10]]
                + [UNCHANGED_ADVICE, UNCHANGED_COVERAGE],
            )
        )
    skips = recording.fallbacks.get("inductor_cudagraph_skips")
    reasons = recording.fallbacks.get("reasons") or []
    if (isinstance(skips, int) and skips > 0) or reasons:
        out.append(
            Note(
                "cudagraphs-skipped",
                "warning",
                f"torch.compile ran {skips or len(reasons)} function(s) without CUDA graphs",
                skip_texts(recording.fallbacks)[:10],
            )
        )
    unused = [g["id"] for g in graphs if g["replays"] == 0 and g.get("nodes")]
    if unused and launches:
        out.append(
            Note(
                "unused-graph",
                "info",
                f"{len(unused)} graphs were never replayed (their memory is held for nothing)",
                unused[:20],
            )
        )
    same = [
        g for g in graphs if g.get("rerecord_of") and g.get("inputs") and not g.get("shape_changes")
    ]
    if same:
        out.append(
            Note(
                "same-shape-rerecord",
                "warning",
                f"{len(same)} graphs were recorded again from the same site with the same input "
                "shapes",
                [
                    f"{g['id']} again after {g['rerecord_of']} at {site_text(g.get('site'))}: "
                    f"{_reason(g)}"
                    for g in same[:10]
                ]
                + [
                    "the earlier graph could not be reused: torch.compile's CUDA graph trees "
                    "record again when a static input (a KV cache, a parameter) moved to a new "
                    "address, and compile again when a guard fails; both hold more memory"
                ],
            )
        )
    by_site: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    recorded_again = {g.get("rerecord_of") for g in graphs}
    for g in graphs:
        if g.get("rerecord_of") or g["id"] in recorded_again:
            by_site[site_text(g.get("site"))].append(g)
    for where, members in by_site.items():
        sizes = sorted({g["batch"] for g in members if isinstance(g.get("batch"), int)})
        if len(sizes) > 1:
            out.append(
                Note(
                    "graph-per-size",
                    "info",
                    f"{len(members)} graphs from {where}: one per input size ({len(sizes)} sizes: "
                    f"{', '.join(map(str, sizes[:12]))}{' ...' if len(sizes) > 12 else ''})",
                )
            )
    failed = [
        f"{g['id']}: {u.get('result')}" for g in graphs for u in g["updates"] if not u.get("ok")
    ]
    if failed:
        out.append(
            Note(
                "update-refused",
                "warning",
                f"cudaGraphExecUpdate refused {len(failed)} updates: the executable was "
                "instantiated anew",
                failed[:10],
            )
        )
    unknown = recording.sampling.get("launches_of_unknown_graphs")
    if isinstance(unknown, int) and unknown > 0:
        out.append(
            Note(
                "unknown-graphs",
                "info",
                f"{unknown} launches of graphs instantiated before recording began",
            )
        )
    errors = [f"{g['id']}: {g['error']}" for g in graphs if g.get("error")]
    if errors:
        out.append(Note("graph-errors", "warning", f"{len(errors)} graphs have no bundle", errors))
    out += [Note("recorder-note", "info", n) for n in recording.notes]
    return out


def process_report(recording: Recording) -> ProcessReport:
    """The catalog and notes of one process."""
    return ProcessReport(
        label=process_label(recording),
        status=recording.process["status"],
        graphs=len(recording.graphs),
        replays=sum(g["replays"] for g in recording.graphs),
        pool_bytes=pool_total(recording),
        eager_share_pct=eager_share(recording),
        rows=catalog(recording),
        notes=notes(recording),
        memory=ledger(recording),
        launched=coverage.spans(recording),
    )


def graph_keys(recording: Recording) -> list[tuple[Any, ...]]:
    """Per graph, what pairs it with its counterpart in another recording of the program:
    who captured it, where, for which batch, and how many came before with the same."""
    seen: dict[tuple[Any, ...], int] = defaultdict(int)
    keys = []
    for g in recording.graphs:
        site = g.get("site") or {}
        base = (
            g.get("capturer"),
            Path(str(site.get("file") or "")).name,
            site.get("line"),
            g.get("batch"),
        )
        keys.append((*base, seen[base]))
        seen[base] += 1
    return keys


def pair_graphs(
    a: Recording, b: Recording
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[str], list[str]]:
    """Graphs of ``a`` and ``b`` paired by ``graph_keys``; ids only in ``a``, only in ``b``."""
    in_b = dict(zip(graph_keys(b), b.graphs, strict=True))
    pairs, only_a = [], []
    used = set()
    for key, g in zip(graph_keys(a), a.graphs, strict=True):
        other = in_b.get(key)
        if other is None:
            only_a.append(g["id"])
        else:
            pairs.append((g, other))
            used.add(other["id"])
    only_b = [g["id"] for g in b.graphs if g["id"] not in used]
    return pairs, only_a, only_b
