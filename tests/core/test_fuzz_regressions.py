"""What the fuzz campaign (benchmarks/fuzz.py) found analyses and exports failing on, each on
the smallest valid graph that showed it: every graph here keeps the graph contract."""

from __future__ import annotations

import copy
import gzip
import itertools
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import networkx as nx
import pytest

import graphscope
from graphscope.analysis import buckets as bk
from graphscope.analysis.critical_path import critical_path
from graphscope.analysis.diff import LOOKAHEAD, _nearby_pairs, match_nodes
from graphscope.analysis.eager import eager_gpu, eager_summary
from graphscope.analysis.report import step_report
from graphscope.contract import check_graph
from graphscope.exports import chrome_trace
from graphscope.exports.perfetto import _lanes
from graphscope.text import render_buckets

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture(scope="module")
def b1() -> nx.DiGraph:
    return graphscope.load(SAMPLES / "bundles" / "tiny-llama-b1.json.gz")


def _add_graph(G: nx.DiGraph, gid: int, size: int, parent: str | None, **attrs: object) -> None:
    keys = [f"graph_{gid}_node_{i}" for i in range(size)]
    for i, key in enumerate(keys):
        G.add_node(key, graph_id=gid, local_id=i, type="KERNEL", parent=parent, **attrs)
    G.add_edges_from(itertools.pairwise(keys))


def test_critical_path_through_child_graphs_nested_past_the_recursion_limit() -> None:
    G = nx.DiGraph()
    depth = 1500  # Python's recursion limit is 1000: the path was found recursively
    for gid in range(depth):
        parent = f"graph_{gid - 1}_node_0" if gid else None
        G.add_node(f"graph_{gid}_node_0", graph_id=gid, local_id=0, type="GRAPH",
                   child_graph=gid + 1, parent=parent)  # fmt: skip
    _add_graph(G, depth, 3, f"graph_{depth - 1}_node_0", replay={"median_us": 2.0})
    check_graph(G, "nested")
    path, length = critical_path(G, lambda key: 2.0 if G.nodes[key]["type"] == "KERNEL" else 0)
    assert path == ["graph_0_node_0"] and length == 6.0  # the innermost chain, all the way up
    assert step_report(G).critical_path_us == 6.0


def test_a_null_correlation_id_joins_nothing(b1: nx.DiGraph) -> None:
    G = copy.deepcopy(b1)
    trace = G.graph["eager_trace"]
    for name in ("api", "gpu"):
        column = trace[name]["fields"].index("correlation_id")
        for row in trace[name]["rows"][:5]:
            row[column] = None
    check_graph(G, "nulls")
    assert not any("launch" in op for op in eager_gpu(trace)[:5])
    summary = eager_summary(trace)
    assert summary["launch_calls"] == eager_summary(b1.graph["eager_trace"])["launch_calls"] - 5
    events = chrome_trace(G)["traceEvents"]  # it raised TypeError on int(None)
    assert all(e["id"] is not None for e in events if e["ph"] in ("s", "f"))


def test_lanes_take_the_lowest_free_lane_in_time_linear_in_nodes() -> None:
    def lowest_free(spans: list[tuple[float, float, str]]) -> dict[str, int]:
        ends: list[float] = []
        lane_of = {}
        for start, end, key in sorted(spans):
            lane = next((i for i, last in enumerate(ends) if last <= start), len(ends))
            ends[lane:lane + 1] = [end]  # fmt: skip
            lane_of[key] = lane
        return lane_of

    rng = random.Random(0)
    for _ in range(50):
        spans = [(s := rng.uniform(0, 50), s + rng.uniform(0, 10), f"n{i}") for i in range(60)]
        assert _lanes(spans) == lowest_free(spans)
    started = time.perf_counter()
    lanes = _lanes([(0.0, 1.0, f"n{i}") for i in range(20_000)])  # all at once: 9 s before
    assert time.perf_counter() - started < 1.0
    assert sorted(lanes.values()) == list(range(20_000))


def test_diff_of_large_graphs_that_barely_match_ends_in_time() -> None:
    A, B = nx.DiGraph(), nx.DiGraph()
    _add_graph(A, 1, 20_000, None)
    _add_graph(B, 1, 20_000, None)
    for i in range(20_000):
        A.nodes[f"graph_1_node_{i}"]["name"] = f"k{i % 50}"
        B.nodes[f"graph_1_node_{i}"]["name"] = f"k{i * 7 % 53}"
    started = time.perf_counter()
    pairs = match_nodes(A, B)  # difflib took minutes on these
    assert time.perf_counter() - started < 5
    ids = [(A.nodes[a]["local_id"], B.nodes[b]["local_id"]) for a, b in pairs.items()]
    assert ids == sorted(ids) and len({j for _, j in ids}) == len(ids)  # in order, one each
    # Neither graph runs out early, leaving the other's rest unpaired.
    assert min(ids[-1]) > 20_000 - 2 * LOOKAHEAD


def test_diff_of_large_graphs_with_local_changes_pairs_nearly_all() -> None:
    # A decoder's layers repeat; B renames every 100th kernel and adds and cuts a few
    # nodes here and there: the middle that differs spans the whole graph.
    A = nx.DiGraph()
    _add_graph(A, 1, 20_000, None)
    for i in range(20_000):
        A.nodes[f"graph_1_node_{i}"]["name"] = f"k{i % 48}"
    B = copy.deepcopy(A)
    for i in range(0, 20_000, 100):
        B.nodes[f"graph_1_node_{i}"]["name"] = "renamed"
    B.remove_nodes_from([f"graph_1_node_{i}" for i in (5_001, 12_002, 17_003)])
    for i in (3_000, 9_000, 15_000):
        B.add_node(f"graph_1_node_{20_000 + i}", graph_id=1, local_id=i, type="MEMSET", parent=None)
    started = time.perf_counter()
    pairs = match_nodes(A, B)
    assert time.perf_counter() - started < 5
    assert sum(1 for a, b in pairs.items() if a == b) >= 19_900
    assert not [b for b in pairs.values() if B.nodes[b]["type"] == "MEMSET"]


def test_nearby_pairs_align_nodes_added_removed_and_changed() -> None:
    a = [("K", n) for n in "abcdefgh"]
    b = [("K", n) for n in "abXYcdfgZh"]  # X and Y added, e removed, Z added
    pairs = _nearby_pairs(a, b)
    assert [(a[i][1], b[j][1]) for i, j in pairs] == [
        ("a", "a"), ("b", "b"), ("c", "c"), ("d", "d"), ("f", "f"), ("g", "g"), ("h", "h")
    ]  # fmt: skip
    # Nothing alike within reach: nodes of one type pair one for one, others do not.
    assert _nearby_pairs([("K", 1), ("M", 2)], [("K", 3), ("E", 4)]) == [(0, 0)]


def test_diff_below_the_limit_still_aligns_with_difflib(b1: nx.DiGraph) -> None:
    B = copy.deepcopy(b1)
    B.remove_nodes_from([k for k in list(B) if B.nodes[k]["local_id"] in (50, 51, 52)])
    pairs = match_nodes(b1, B)
    assert len(pairs) == len(B) and all(a == b for a, b in pairs.items())


def _exhaustive(
    buckets: list[bk.Bucket], dist: dict[int, float], budget: int
) -> bk.BucketChoice | None:
    best = None
    for r in range(1, len(buckets) + 1):
        for kept in itertools.combinations(buckets, r):
            if sum(b.graph_pool_bytes for b in kept) > budget:
                continue
            choice = bk._evaluate_with_eager(list(kept), dist, buckets)
            if choice.mean_step_us != choice.mean_step_us:
                continue
            if (
                best is None
                or choice.mean_step_us < best.mean_step_us - 1e-9
                or (
                    choice.mean_step_us <= best.mean_step_us + 1e-9
                    and choice.pool_bytes < best.pool_bytes
                )
            ):
                best = choice
    return best


def test_best_buckets_is_the_exhaustive_search_s_answer() -> None:
    rng = random.Random(1)
    for _ in range(200):
        sizes = sorted(rng.sample(range(1, 40), rng.randint(1, 8)))
        buckets = [
            bk.Bucket(s, rng.uniform(10, 200), 5, rng.choice([1, 2, 3, 5, 8]),
                      None if rng.random() < 0.2 else rng.uniform(100, 900))
            for s in sizes
        ]  # fmt: skip
        counts = {n: rng.random() for n in rng.sample(range(1, 50), rng.randint(1, 10))}
        dist = {n: c / sum(counts.values()) for n, c in counts.items()}
        budget = rng.randint(0, 20)
        found, expected = bk.best_buckets(buckets, dist, budget), _exhaustive(buckets, dist, budget)
        assert (found is None) == (expected is None)
        if found is not None and expected is not None:
            assert found.mean_step_us == pytest.approx(expected.mean_step_us)
            assert found.pool_bytes == expected.pool_bytes
            assert found.eager_share_pct == pytest.approx(expected.eager_share_pct)


def test_many_buckets_are_searched_or_said_not_to_be(tmp_path: Path) -> None:
    # vLLM's default capture sizes: 67 buckets (more than 20 raised ValueError).
    sizes = [1, 2, 4, *range(8, 513, 8)]
    buckets = [bk.Bucket(s, 10 + s / 2, 5, (1 + s // 8) << 20, 100.0 + s) for s in sizes]
    best = bk.best_buckets(buckets, bk.uniform(buckets), 512 << 20)
    assert best is not None and best.pool_bytes <= 512 << 20
    path = tmp_path / "m.buckets.json"
    rows = ",".join(
        f'{{"batch_size": {n}, "replay_us": 10.0, "nodes": 5, "graph_pool_bytes": 1}}'
        for n in range(1, 3001)
    )
    path.write_text(f'{{"buckets": [{rows}]}}')
    started = time.perf_counter()
    report = bk.bucket_report(path, budget_bytes=100)
    assert time.perf_counter() - started < 5
    assert report.best is None and not report.searched
    assert any("too many sets to search" in note for note in report.notes)
    lines: list[str] = []
    render_buckets(str(path), report, lines.append)
    assert not any("no set of buckets fits" in line for line in lines)


def test_a_lone_surrogate_in_a_name_saves_as_dot_and_reads_back(
    b1: nx.DiGraph, tmp_path: Path
) -> None:
    G = copy.deepcopy(b1)
    key = next(k for k, d in G.nodes(data=True) if d["type"] == "KERNEL")
    G.nodes[key]["short_name"] = "\ud800x"  # a bundle's JSON can hold "\ud800"
    check_graph(G, "surrogate")
    H = graphscope.load(graphscope.save(G, tmp_path / "g.dot"))
    assert H.nodes[key]["short_name"] == "\ud800x"


# What the long campaign (docs/FUZZING.md, "The long run") found in the readers and the CLI.


def test_bodies_on_a_kernel_round_trip_through_dot(b1: nx.DiGraph, tmp_path: Path) -> None:
    G = copy.deepcopy(b1)
    key = next(k for k, d in G.nodes(data=True) if d["type"] == "KERNEL")
    G.nodes[key]["bodies"] = [0, 0]  # owns nothing on a kernel, as the contract counts owners
    path = graphscope.save(G, tmp_path / "g.json")
    H = graphscope.load(graphscope.save(graphscope.load(path), tmp_path / "g.dot"))
    assert H.nodes[key]["bodies"] == [0, 0]


def test_a_metadata_schema_version_reads_as_the_document_s(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    doc = json.loads(gzip.decompress((SAMPLES / "bundles" / "tiny-llama-b1.json.gz").read_bytes()))
    doc["metadata"]["schema_version"] = 4294967297
    path.write_text(json.dumps(doc))
    G = graphscope.load(path)
    assert G.graph["schema_version"] == doc["schema_version"]
    H = graphscope.load(graphscope.save(G, tmp_path / "again.json.gz"))
    assert H.graph == G.graph


def test_a_newer_bundle_s_writer_version_is_shown_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    doc = json.loads(gzip.decompress((SAMPLES / "bundles" / "tiny-llama-b1.json.gz").read_bytes()))
    doc["schema_version"] = 2
    doc["writer"] = {"graphscope": "0.1.0\n0.1.0"}
    path.write_text(json.dumps(doc))
    with pytest.raises(graphscope.GraphscopeError) as caught:
        graphscope.load(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_a_dot_recording_section_reads_with_the_defaults_a_bundle_s_gets(
    b1: nx.DiGraph, tmp_path: Path
) -> None:
    index_path = SAMPLES / "recordings" / "gpt-fast" / "pid1355" / "recording.json"
    index = json.loads(index_path.read_text())
    G = copy.deepcopy(b1)
    G.graph["recording"] = {k: v for k, v in index["graphs"][0].items() if k != "updates"}
    dot = graphscope.load(graphscope.save(G, tmp_path / "g.dot"))
    assert dot.graph["recording"]["updates"] == []
    assert graphscope.load(graphscope.save(dot, tmp_path / "g.json.gz")).graph == dot.graph


def test_a_recording_setting_past_float_range_reads_as_the_default(tmp_path: Path) -> None:
    from graphscope.recording import Settings

    assert Settings.from_dict({"first": 10**5000, "every_s": float("nan")}) == Settings()


def test_a_name_the_terminal_cannot_encode_is_printed_escaped(tmp_path: Path) -> None:
    doc = json.loads((SAMPLES / "bundles" / "tiny-gpt.buckets.json").read_text())
    doc["model"] = "tiny\ud800gpt"
    path = tmp_path / "m.buckets.json"
    path.write_text(json.dumps(doc))
    code = (
        f"import sys; from graphscope.cli import main; sys.exit(main(['buckets', {str(path)!r}]))"
    )
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"tiny\\ud800gpt" in done.stdout


def test_import_trace_with_a_kernel_without_its_mangled_name(tmp_path: Path) -> None:
    from graphscope.analysis.torch_trace import with_torch_trace

    G = graphscope.load(SAMPLES / "bundles" / "tiny-llama-b1.json.gz")
    key = next(k for k, d in G.nodes(data=True) if isinstance(d.get("static_shared_mem"), int))
    del G.nodes[key]["name"]  # optional in the contract
    H = with_torch_trace(G, SAMPLES / "traces" / "tiny-llama-b1.torch-trace.json.gz")
    assert H.number_of_nodes() == G.number_of_nodes() and "eager_trace" in H.graph


def test_the_timeline_of_a_node_whose_eager_section_has_no_index(b1: nx.DiGraph) -> None:
    pytest.importorskip("dash")
    from graphscope.app.render.timeline import build_timeline

    G = copy.deepcopy(b1)
    key = next(k for k, d in G.nodes(data=True) if isinstance(d.get("eager"), dict))
    G.nodes[key]["eager"] = {k: v for k, v in G.nodes[key]["eager"].items() if k != "index"}
    check_graph(G, "no index")  # optional in the contract
    assert build_timeline(G, None, G).data


def test_an_html_export_of_a_graph_with_a_lone_surrogate(b1: nx.DiGraph, tmp_path: Path) -> None:
    pytest.importorskip("dash")
    from graphscope.app.render.report_html import report_html

    from graphscope.output import write_atomic

    G = copy.deepcopy(b1)
    G.graph["captured_at"] = "\ud800"  # a bundle's JSON can carry it
    check_graph(G, "surrogate")
    out = write_atomic(tmp_path / "g.html", report_html(G, "g"))
    assert "\\ud800" in out.read_text(encoding="utf-8")


def test_gs_attribute_unescaping_is_the_pattern_s_in_string_methods() -> None:
    # The fuzz campaign's 23 KB bundle dumped to 92 MB of DOT, 4.8 million escapes in its
    # gs_attrs; the substitution's template expansion took 46 s to read it.
    import re

    from graphscope.dot import _gs_value

    rng = random.Random(3)
    for _ in range(20_000):
        text = "".join(rng.choice('\\\\ab"\n\x00') for _ in range(rng.randint(0, 14)))
        assert _gs_value(text) == re.sub(r"\\(.)", r"\1", text, flags=re.DOTALL), repr(text)
    value = {"a": "\\" * 1000 + '"x"'}
    written = json.dumps(value).replace("\\", "\\\\").replace('"', '\\"')  # as dotwrite does
    assert json.loads(_gs_value(written)) == value


def test_a_bundle_node_without_parent_gets_the_dot_reader_s(tmp_path: Path) -> None:
    G = graphscope.load(SAMPLES / "dot" / "explicit-all-types" / "flags-verbose.dot")
    inner = next(k for k, d in G.nodes(data=True) if d["parent"] is not None)
    doc_path = graphscope.save(G, tmp_path / "g.json")
    doc = json.loads(doc_path.read_text())
    for shape in doc["nodes"]["shapes"]:  # no node says where it sits
        if "parent" in shape["fields"]:
            shape["fields"][shape["fields"].index("parent")] = "elsewhere"
        shape["constants"].pop("parent", None)
    doc_path.write_text(json.dumps(doc))
    H = graphscope.load(doc_path)
    assert H.nodes[inner]["parent"] == G.nodes[inner]["parent"]
    assert (
        graphscope.load(graphscope.save(H, tmp_path / "g.dot")).nodes(data=True)[inner]
        == (H.nodes[inner])
    )


def test_inspect_of_a_replay_of_0_us_shows_no_ratio(b1: nx.DiGraph, tmp_path: Path) -> None:
    from graphscope.analysis.summary import summarize
    from graphscope.text import render_summary

    G = copy.deepcopy(b1)
    G.graph["timing"] = {**G.graph["timing"], "replay_wall_us": 0}
    check_graph(G, "replay 0")
    lines: list[str] = []
    render_summary("g", summarize(G), lines.append)
    text = "".join(lines)
    assert "graph replay: " in text and "faster than eager" not in text


def test_a_dot_gs_graph_schema_version_reads_as_the_reader_s(
    b1: nx.DiGraph, tmp_path: Path
) -> None:
    G = copy.deepcopy(b1)
    G.graph["schema_version"] = 2147483648  # the writer's stamp, mutated
    dot = graphscope.load(graphscope.save(G, tmp_path / "g.dot"))
    from graphscope.model import SCHEMA_VERSION

    assert dot.graph["schema_version"] == SCHEMA_VERSION  # as the bundle reader reads it
    again = graphscope.load(graphscope.save(dot, tmp_path / "g.json.gz"))
    assert again.graph == dot.graph


def test_the_possessive_string_pattern_reads_what_the_plain_one_does() -> None:
    """The DOT tokenizer's quoted strings repeat possessively (a 298 MB dump of escape-dense
    strings read slowly with plain repeats): on random text of quotes, backslashes and
    letters, both patterns match the same span, or both fail."""
    import re

    from graphscope import dotparse

    plain = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
    fast = re.compile(dotparse._STRING, re.DOTALL)
    rng = random.Random(15)
    for _ in range(20_000):
        text = '"' + "".join(rng.choice('ab\\"\n') for _ in range(rng.randrange(12)))
        got, want = fast.match(text), plain.match(text)
        assert (got and got.group()) == (want and want.group()), text


def test_a_run_json_nested_thousands_deep_leaves_inspect_standing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """run.json is optional context: one nested past Python's recursion limit (fuzz recording
    input 555) is ignored, and inspect reads the process folders as ever."""
    import shutil

    from graphscope.cli import main
    from graphscope.recording import unrecorded_processes

    rec = tmp_path / "rec"
    samples = Path(__file__).resolve().parents[2] / "samples"
    shutil.copytree(samples / "recordings" / "capture-fails", rec)
    (rec / "run.json").write_text('{"program": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert unrecorded_processes(rec) == []
    assert main(["inspect", str(rec)]) == 0
    assert "capture-failed" in capsys.readouterr().out
