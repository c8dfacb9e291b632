"""Analyses as text for a terminal: what ``report``, ``diff``, ``buckets`` and ``inspect`` print."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .analysis.buckets import BucketReport
from .analysis.diff import GraphDiff
from .analysis.lifecycle import ProcessReport, history
from .analysis.memory import Ledger
from .analysis.report import StepReport
from .analysis.timing import read_eager_summary, read_timing
from .analysis.update import HAZARD_NOTE, changes_text, hazard_groups
from .errors import printable
from .recording import graph_label

Write = Callable[[str], Any]


def us(value: float | None) -> str:
    """A duration for people: us below a millisecond, ms above."""
    if value is None or value != value:
        return "-"
    return f"{value / 1000:,.2f} ms" if abs(value) >= 1000 else f"{value:.1f} us"


def mib(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.1f} MiB"


def step_rows(r: StepReport) -> list[list[str]]:
    """The eager-against-graph table of a step report: label, eager, graph.

    Untraced and traced figures sit on rows of their own: a traced step is longer, and its
    GPU busy and idle time add up to its GPU span, not to the untraced step time."""
    rows = [
        ("step time, untraced", r.eager_step_us, r.replay_us),
        ("step time, traced", r.eager_traced_step_us, r.replay_traced_us),
        ("GPU span, traced", r.eager_gpu_span_us, r.replay_gpu_span_us),
        ("  GPU busy", r.eager_gpu_busy_us, r.replay_gpu_busy_us),
        ("  GPU idle", r.eager_gpu_idle_us, r.replay_gpu_idle_us),
        ("CPU launch, traced", r.eager_cpu_launch_us, r.replay_cpu_launch_traced_us),
        ("CPU launch, untraced", None, r.replay_cpu_launch_us),
    ]
    return [[label, us(a), us(b)] for label, a, b in rows if a is not None or b is not None]


def render_findings(found: list[dict[str, Any]], w: Write, details: int = 5) -> None:
    """Findings, each with its nodes, why and what to do."""
    if not found:
        w("  findings: none\n")
        return
    w(f"  findings ({len(found):,}):\n")
    for f in found:
        cost = f" ({us(f['cost_us'])} of replay)" if f.get("cost_us") else ""
        w(f"  [{f['severity']}] {f['code']}: {f['title']}{cost}\n")
        w(f"      why: {f['why']}\n")
        w(f"      fix: {f['fix']}\n")
        for line in f["details"][:details]:
            w(f"      - {line}\n")
        if len(f["details"]) > details:
            w(f"      ... {len(f['details']) - details:,} more (--json for all)\n")
        if not f["details"]:
            nodes = f["nodes"]
            shown = ", ".join(nodes[:8]) + (
                f", ... ({len(nodes):,} in all)" if len(nodes) > 8 else ""
            )
            w(f"      nodes: {shown}\n")


def render_report(path: str, r: StepReport, w: Write) -> None:
    """The step report: what the graph saved, where replay time goes, how parallel it is."""
    w(f"{path}: {r.nodes:,} nodes, {r.timed_nodes:,} timed in replay\n")
    if r.has_step_timing:
        source = f" ({r.timing_source})" if r.timing_source else ""
        w(f"  eager step against graph replay{source}\n")
        w(f"    {'':<22}{'eager':>12}{'graph':>12}\n")
        for label, eager, graph in step_rows(r):
            w(f"    {label:<22}{eager:>12}{graph:>12}\n")
        if r.eager_step_us is None and r.eager_traced_step_us is None:
            w("    no eager step in this file: the program's own steps were not timed apart\n")
        if r.speedup is not None:
            w(f"    speedup {r.speedup:.1f}x")
            if r.cpu_overhead_reduction_pct is not None:
                w(f"; CPU launch overhead down {r.cpu_overhead_reduction_pct:.0f}%")
            w("\n")
    elif r.untimed_reason:
        w(f"  {r.untimed_reason}\n")
    if r.values:
        w(f"  values: {r.values}\n")
    if r.critical_path_us is not None:
        w(
            f"  critical path: {len(r.critical_path):,} nodes, {us(r.critical_path_us)} of "
            f"{us(r.node_time_us)} node time"
        )
        if r.parallelism is not None:
            w(f" (parallelism {r.parallelism:.2f}")
            w("; a chain: nothing runs side by side)" if r.parallelism < 1.01 else ")")
        w("\n")
        if r.span_over_critical is not None:
            gap = (r.replay_gpu_span_us or 0) - r.critical_path_us
            w(
                f"  replay span {us(r.replay_gpu_span_us)} is {r.span_over_critical:.2f}x the "
                f"critical path: {us(gap)} of it is gaps between dependent nodes\n"
            )
    if r.top_nodes:
        w("  slowest nodes (replay median)\n")
        for n in r.top_nodes:
            eager_text = f"  eager {us(n['eager_us'])}" if n.get("eager_us") is not None else ""
            module = f"  {n['module']}" if n.get("module") else ""
            w(f"    {us(n['median_us']):>9}  {n['node']:<18} {n['name']}{eager_text}{module}\n")
    g = r.graph_vs_eager
    if g is not None:
        w(
            f"  graph against eager, node by node ({g['compared']:,} nodes with both): "
            f"{us(g['graph_us'])} in replay against {us(g['eager_us'])} eagerly; "
            f"{g['slower']:,} slower in the graph by {us(g['slower_us'])} in all\n"
        )
        for row in [x for x in g["rows"] if x["delta_us"] > 0][:5]:
            module = f"  {row['module']}" if row.get("module") else ""
            w(
                f"    {row['delta_us']:+9,.2f} us  {row['ratio']:5.2f}x  {row['node']:<18} "
                f"{row['name']}{module}\n"
            )
    if r.module_totals:
        w("  repeated modules, summed over their instances\n")
        for m in r.module_totals:
            w(
                f"    {us(m['replay_us']):>9}  {m['share_pct']:5.1f}%  {m['nodes']:>6,} nodes  "
                f"{m['module']}  ({m['instances']:,} of them, {us(m['per_instance_us'])} each)\n"
            )
    if r.top_modules:
        w("  module groups by replay time\n")
        for m in r.top_modules:
            w(
                f"    {us(m['replay_us']):>9}  {m['share_pct']:5.1f}%  {m['nodes']:>6,} nodes  "
                f"{m['module']}\n"
            )
    render_findings(r.findings, w)


def render_diff(a: str, b: str, d: GraphDiff, w: Write, top: int = 15) -> None:
    """What changed from A to B, and whether an executable of A can be updated with B."""
    w(f"A: {a}\nB: {b}\n")
    w(
        f"  {d.matched:,} nodes matched, {len(d.added):,} added in B, {len(d.removed):,} removed "
        f"from A; {len(d.edges_added):,} edges added, {len(d.edges_removed):,} removed\n"
    )
    if d.replay_a_us is not None and d.replay_b_us is not None:
        delta = d.replay_b_us - d.replay_a_us
        pct = 100 * delta / d.replay_a_us if d.replay_a_us else 0.0
        change = f"{delta:+,.1f} us, {pct:+,.1f}%"
        w(f"  replay: {us(d.replay_a_us)} -> {us(d.replay_b_us)} ({change})\n")
    config, args_only = d.configured, d.args_only
    if config:
        w(f"  changed parameters ({len(config):,} nodes)\n")
        for c in config[:top]:
            # A changed kernel shows as its names in A and B (c.kernels), not as mangled names.
            fields = {k: v for k, v in c.fields.items() if k != "name"}
            changes = [f"kernel {c.kernels[0]} -> {c.kernels[1]}"] if c.kernels else []
            changes += [f"{k} {_short(x)} -> {_short(y)}" for k, (x, y) in fields.items()]
            w(f"    {c.a} -> {c.b}  {'' if c.kernels else c.name + ': '}{'; '.join(changes)}\n")
        if len(config) > top:
            w(f"    ... {len(config) - top:,} more (--json for all)\n")
    if args_only:
        w(
            f"  {len(args_only):,} nodes differ only in argument values (buffer addresses and "
            "scalars of the new capture)\n"
        )
    for label, keys in (("added in B", d.added), ("removed from A", d.removed)):
        if keys:
            shown = ", ".join(keys[:8]) + (f", ... ({len(keys):,} in all)" if len(keys) > 8 else "")
            w(f"  {label}: {shown}\n")
    timed = [c for c in d.timing if c.delta_us is not None]
    if timed:
        w("  largest timing changes (replay median)\n")
        for c in timed[:top]:
            w(
                f"    {c.delta_us:+8,.2f} us  {us(c.median_a_us):>9} -> {us(c.median_b_us):>9}  "
                f"{c.b}  {c.name}\n"
            )
    v = d.update
    if v is not None:
        if v.ok:
            w(
                f"  cudaGraphExecUpdate: B can update an executable graph of A in place "
                f"({v.paired:,} node pairs checked); {changes_text(v)}\n"
            )
            groups = hazard_groups(v)
            if groups:
                w(f"    hazards the driver does not report ({len(v.hazards):,} nodes):\n")
                for g in groups[:top]:
                    at = ", ".join(g.nodes[:3]) + (", ..." if len(g.nodes) > 3 else "")
                    w(f"      {g.kind} at {len(g.nodes):,} ({at}): {g.why}\n")
                if len(groups) > top:
                    w(f"      ... {len(groups) - top} more kinds (--json for all)\n")
                w(f"    {HAZARD_NOTE}\n")
            elif v.handles_compared is False:
                w(
                    "    kernel handles not compared: A and B come from different processes, "
                    "so a kernel of one name may be another function\n"
                )
        else:
            w(f"  cudaGraphExecUpdate: B cannot update an executable graph of A ({v.result}):\n")
            for o in v.obstacles[:top]:
                where = f"{o.node} (pairs with {o.pair})" if o.node else "graph"
                w(f"    {o.result}  {where}: {o.why}\n")
            if len(v.obstacles) > top:
                w(f"    ... {len(v.obstacles) - top} more (--json for all)\n")
            w("    so B must be instantiated anew (cudaGraphInstantiate)\n")


def _short(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(x, int) for x in value):
        return "x".join(map(str, value))
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def render_buckets(path: str, r: BucketReport, w: Write) -> None:
    """Per bucket time and memory, padding waste, and the best set under a budget."""
    model = (r.model or "?").replace("\n", "\\n")  # a value from the file, on the header line
    w(f"{path}: {model}, {len(r.buckets)} buckets; {r.padding_rule}\n")
    head = ("batch", 5), ("replay", 9), ("per seq", 9), ("nodes", 6), ("pool", 10), ("eager", 9)
    w("    " + "  ".join(f"{name:>{width}}" for name, width in head) + "\n")
    for b in r.buckets:
        w(
            f"    {b.batch_size:>5}  {us(b.replay_us):>9}  {us(b.per_sequence_us):>9}  "
            f"{b.nodes:>6,}  {mib(b.graph_pool_bytes):>10}  {us(b.eager_step_us):>9}\n"
        )
    c = r.captured
    w(
        f"  with every bucket: mean step {us(c.mean_step_us)}, padding {c.padding_pct:.1f}% of "
        f"real sequences, graph memory {mib(c.pool_bytes)}\n"
    )
    if r.budget_bytes is not None and r.searched:
        if r.best is None:
            w(f"  no set of buckets fits in {mib(r.budget_bytes)}\n")
        else:
            best = r.best
            w(
                f"  best within {mib(r.budget_bytes)}: buckets {' '.join(map(str, best.sizes))} "
                f"({mib(best.pool_bytes)}): mean step {us(best.mean_step_us)}, padding "
                f"{best.padding_pct:.1f}%"
                + (
                    f", {best.eager_share_pct:.0f}% of batches eager"
                    if best.eager_share_pct
                    else ""
                )
                + "\n"
            )
    for u in r.updates:
        if "error" in u:
            w(f"  b{u.get('from')} -> b{u.get('to')}: the update check failed: {u['error']}\n")
            continue
        said = "accepted" if u.get("ok") else f"refused ({u.get('result')}"
        said += "" if u.get("ok") else (f" at {u['error_node']})" if u.get("error_node") else ")")
        w(
            f"  b{u.get('from')} -> b{u.get('to')}: the driver {said} updating the executable "
            "graph in place (cudaGraphExecUpdate, at capture)\n"
        )
    for note in r.notes:
        w(f"  note: {note}\n")


def _count(value: Any) -> str:
    return "-" if value is None else f"{value:,}"


def render_recording(
    path: str,
    reports: list[ProcessReport],
    w: Write,
    top: int = 50,
    unrecorded: list[dict[str, Any]] | None = None,
) -> None:
    """The catalog of a recording: per process, every graph and what deserves a look; then
    the run's processes that used CUDA unrecorded (``recording.unrecorded_processes``)."""
    plural = "es" if len(reports) != 1 else ""
    w(f"{path}  (graphscope recording, {len(reports)} process{plural})\n")
    for entry in unrecorded or ():
        w(f"not recorded: {printable(entry['why'])}\n")
    for r in reports:
        share = (
            f"   outside graphs {r.eager_share_pct:.0f}%" if r.eager_share_pct is not None else ""
        )
        w(
            f"{r.label}  {r.status}   graphs {_count(r.graphs)}   replays {_count(r.replays)}   "
            f"pools {mib(r.pool_bytes)}{share}\n"
        )
        if r.rows:
            w(
                f"    {'graph':<8} {'capturer':<16} {'site':<34} {'batch':>5} {'nodes':>6} "
                f"{'replays':>8} {'replay':>9} {'share':>6} {'pool':>10}  history\n"
            )
        for row in r.rows[:top]:
            share_text = f"{row['gpu_share_pct']:.1f}%" if row["gpu_share_pct"] is not None else "-"
            pool = mib(row["pool_bytes"]) if row["pool_bytes"] is not None else "-"
            site = (row["site"] or "-")[:34]
            w(
                f"    {row['id']:<8} {(row['capturer'] or '-')[:16]:<16} {site:<34} "
                f"{_count(row['batch']):>5} {_count(row['nodes']):>6} {_count(row['replays']):>8} "
                f"{us(row['replay_us']):>9} {share_text:>6} {pool:>10}  {'; '.join(history(row))}\n"
            )
        if len(r.rows) > top:
            w(f"    ... {len(r.rows) - top:,} more (--json for all)\n")
        render_ledger(r.memory, w)
        if r.launched:
            spans = [
                f"{graph_label(s.graph, s.batch)} "
                f"{s.first_s:.0f}-{s.last_s:.0f} s ({_count(s.launches)})"
                for s in r.launched[:top]
            ]
            w(f"  launched over the run: {'; '.join(spans)}\n")
        for note in r.notes:
            w(f"  [{note.severity}] {note.code}: {note.title}\n")
            for line in note.details[:5]:
                w(f"      - {line}\n")


def _ms(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:.1f} ms"


def render_ledger(book: Ledger | None, w: Write) -> None:
    """A process's graph memory: each pool, who holds it, what dropping a batch frees."""
    if book is None or not (book.pools or book.unknown):
        return
    if not book.pools:
        w(f"  memory: no pool recorded for {', '.join(book.unknown)} (pools are torch's)\n")
        return
    active = book.active_bytes
    in_use = f" ({mib(active)} in use)" if active is not None else ""
    w(f"  memory: {len(book.pools):,} pool(s), {mib(book.total_bytes)} in all{in_use}\n")
    if book.process_reserved:
        share = 100 * book.total_bytes / book.process_reserved
        used = f" ({mib(book.process_active)} in use)" if book.process_active is not None else ""
        when = f" at {book.process_at_s:.1f} s" if book.process_at_s is not None else ""
        w(
            f"    the process's torch allocator reserved {mib(book.process_reserved)}{used}{when}: "
            f"graph pools are {share:.0f}% of it\n"
        )
    for p in book.pools:
        held = ", ".join(graph_label(g, b) for g, b in zip(p.graphs, p.batches, strict=True))
        if p.shared:
            frees = f"shared: freed only once all {len(p.graphs)} graphs are gone"
        else:
            frees = "private: dropping its graph frees it"
        used = f" ({mib(p.active_bytes)} in use)" if p.active_bytes is not None else ""
        w(f"    pool {','.join(map(str, p.pool))}  {mib(p.bytes)}{used}  {held}; {frees}\n")
    own = {b: n for b, n in book.frees_by_batch.items() if n}
    if own:
        freed = ", ".join(f"batch {b}: {mib(n)}" for b, n in own.items())
        w(f"    dropping every graph of one batch size frees  {freed}\n")
    elif len(book.frees_by_batch) > 1:
        w("    no batch size holds memory of its own: dropping one frees nothing\n")
    if book.unknown:
        w(f"    no pool recorded for {', '.join(book.unknown)} (pools are torch's)\n")


def render_lifecycle(graphs: list[dict[str, Any]], w: Write) -> None:
    """Each graph's life: captured, instantiated, read, replayed, updated, destroyed."""
    for g in graphs:
        parts = []
        if g.get("captured_at_s") is not None:
            parts.append(
                f"capture began at {g['captured_at_s']:.2f} s, took {_ms(g.get('capture_ms'))}"
            )
        if g.get("instantiated_at_s") is not None:
            parts.append(
                f"instantiated at {g['instantiated_at_s']:.2f} s in {_ms(g.get('instantiate_ms'))}"
            )
        parts.append(
            f"graphscope read it in {_ms(g.get('grab_ms'))} (the program waited), built its "
            f"bundle in {_ms(g.get('build_ms'))} (later, in its own thread)"
        )
        timed = g.get("traced_replays") or 0
        use = f"replayed {g.get('replays', 0):,} times"
        if g.get("replay_us") is not None:
            use += (
                f"; {timed:,} traced: {us(g['replay_us'])} on the GPU, launch call "
                f"{us(g.get('cpu_launch_us'))} on the CPU (medians)"
            )
        parts.append(use)
        for u in g.get("updates") or []:
            said = "accepted" if u.get("ok") else f"refused ({u.get('result')})"
            parts.append(f"cudaGraphExecUpdate {said} at {u.get('at_s', 0):.2f} s")
        if g.get("destroyed_at_s") is not None:
            parts.append(f"destroyed at {g['destroyed_at_s']:.2f} s")
        w(f"  {g['id']}: " + "; ".join(parts) + "\n")


def _dims(d: Any) -> str:
    return "x".join(str(x) for x in d) if isinstance(d, list) else "?"


def _render_timing(s: dict[str, Any], w: Write) -> None:
    """Eager step against graph replay, parity and attribution, where the bundle has them."""
    timing, traced = read_timing(s.get("timing")), read_eager_summary(s.get("eager"))
    eager, replay = timing.eager_step_us, timing.replay_wall_us
    if eager is not None:
        issue = timing.eager_cpu_us
        w(f"  eager step: {us(eager)}" + (f" (CPU issues it in {us(issue)})" if issue else ""))
        if traced.gpu_idle_pct is not None:
            w(f"; traced, the GPU idles {traced.gpu_idle_pct:.0f}% of its span")
        w("\n")
    if replay is not None:
        w(f"  graph replay: {us(replay)}")
        if timing.cpu_launch_us is not None:
            w(f" (CPU launch {us(timing.cpu_launch_us)})")
        if eager and replay:  # a replay of 0 us gives no ratio: none shown
            w(f"; {eager / replay:.1f}x faster than eager")
        w("\n")
    elif timing.replay_us is not None:
        w(f"  graph replay: {us(timing.replay_us)}\n")
    parity = s.get("parity")
    if parity:
        if parity["ok"]:
            w(f"  parity: eager and graph run the same {parity['matched']:,} GPU ops\n")
        else:
            diffs = parity["differences"]
            w(f"  parity: {len(diffs):,} differences between the eager step and the graph\n")
            for line in diffs[:10]:
                w(f"    {line}\n")
            if len(diffs) > 10:
                w(f"    ... {len(diffs) - 10:,} more (--json for all)\n")
    if s.get("values"):
        w(f"  values: {s['values']}\n")
    if s.get("attributed_nodes"):
        w(
            f"  attribution: {s['attributed_nodes']:,} of {s['nodes']:,} nodes labelled, "
            f"{s['attributed_with_module']:,} inside a module, {s['attributed_with_op']:,} with an "
            "aten op\n"
        )


def render_summary(path: str, s: dict[str, Any], w: Write, top: int = 25) -> None:
    """What ``inspect`` prints of a graph's summary (``analysis.summary.summarize``)."""
    kind = {"dot": "DOT", "bundle": "graphscope bundle"}.get(s.get("format", ""), "?")
    w(f"{path}  ({kind})\n")
    w(
        f"  nodes {s['nodes']:,}   edges {s['edges']:,}   graphs {len(s['graphs']):,}"
        f"   depth {s['depth']:,}   widest level {s['widest_level']:,}\n"
    )
    if not s["nodes"]:
        w("  an empty graph: no nodes (torch.compile's CUDA graph trees make one first)\n")
        return
    w("  types  " + "  ".join(f"{t} {n:,}" for t, n in s["types"].items()) + "\n")
    nested = [g for g in s["graphs"] if g["parent"] is not None]
    if nested:
        w(f"  nested graphs ({len(nested)}):\n")
        for g in nested:
            w(f"    graph_{g['graph_id']}  in {g['parent']}  {g['nodes']:,} nodes\n")
    if s["timed_nodes"]:
        w(
            f"  replay: {s['timed_nodes']:,} nodes timed, node times add up to "
            f"{us(s['replay_node_time_us'])}\n"
        )
    _render_timing(s, w)
    kernels = s["kernels"]
    if not kernels:
        return
    order = "replay time" if s["timed_nodes"] else "count"
    w(f"  kernels: {len(kernels):,} distinct, by {order}\n")
    w(f"    {'count':>5}  {'replay':>9}  {'grid':>10} {'block':>10} {'smem':>6}  name\n")
    for k in kernels[:top]:
        configs = k["launch_configs"]
        first = configs[0] if configs else None
        grid = _dims(first["grid"]) if first else "-"
        block = _dims(first["block"]) if first else "-"
        smem = str(first["shared_mem"]) if first else "-"
        more = f"  (+{len(configs) - 1} configs)" if len(configs) > 1 else ""
        w(
            f"    {k['count']:>5,}  {us(k['replay_us']):>9}  {grid:>10} {block:>10} {smem:>6}"
            f"  {k['short_name']}{more}\n"
        )
    if len(kernels) > top:
        w(f"    ... {len(kernels) - top:,} more (--top N, or --json for all)\n")
