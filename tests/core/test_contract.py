"""The graph contract at every reader (graphscope/contract.py).

Each rule is broken in a mutated copy of a real sample and the reader must refuse the file with
one GraphscopeError line that names the file and the node or field; every real sample still
reads as it did before the contract; the bounds (size, gzip expansion, nesting, number length,
time) hold for every reader.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from sample_reads import SAMPLES, digests

import graphscope
from graphscope import GraphscopeError, contract
from graphscope.analysis.buckets import read_buckets, read_distribution
from graphscope.analysis.torch_trace import read_torch_trace, with_torch_trace
from graphscope.bundle import to_document
from graphscope.recording import load_recording

BUNDLE = SAMPLES / "bundles" / "tiny-llama-b1.json.gz"  # every section, an eager trace
ALL_TYPES = SAMPLES / "dot" / "explicit-all-types" / "flags-verbose.dot"  # child graphs, bodies
RECORDED = SAMPLES / "recordings" / "torch-buckets" / "pid959"
BUCKETS = SAMPLES / "bundles" / "tiny-llama.buckets.json"
TRACE = SAMPLES / "traces" / "tiny-llama-b1.torch-trace.json.gz"
DOT = SAMPLES / "dot" / "torch-ops"
KERNEL, COPY = "graph_1_node_0", "graph_1_node_211"  # in BUNDLE


def refused(path: Path, pattern: str, read: Callable[[Path], Any] = graphscope.load) -> str:
    """``read(path)`` raises one GraphscopeError line naming the file and matching ``pattern``."""
    with pytest.raises(GraphscopeError) as caught:
        read(path)
    message = str(caught.value)
    assert message.startswith(str(path)), message
    assert "\n" not in message, message
    assert re.search(pattern, message), message
    return message


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))  # allow_nan: a mutation may hold what JSON does not
    return path


@pytest.fixture(scope="module")
def bundle_graph() -> nx.DiGraph:
    return graphscope.load(BUNDLE)


@pytest.fixture(scope="module")
def all_types() -> nx.DiGraph:
    return graphscope.load(ALL_TYPES)


def _set(node: str, field: str, value: Any) -> Callable[[nx.DiGraph], None]:
    def mutate(G: nx.DiGraph) -> None:
        data = G.nodes[node]
        for part in field.split(".")[:-1]:
            data = data[part]
        data[field.split(".")[-1]] = value

    return mutate


def _delete(node: str, field: str) -> Callable[[nx.DiGraph], None]:
    return lambda G: G.nodes[node].pop(field)


def _first(node: str, section: str, field: str, value: Any) -> Callable[[nx.DiGraph], None]:
    return lambda G: G.nodes[node][section][0].__setitem__(field, value)


def _meta(change: Callable[[dict[str, Any]], None]) -> Callable[[nx.DiGraph], None]:
    return lambda G: change(G.graph)


def _parent_of_graph(gid: int, parent: str | None) -> Callable[[nx.DiGraph], None]:
    def mutate(G: nx.DiGraph) -> None:
        for data in G.nodes.values():
            if data["graph_id"] == gid:
                data["parent"] = parent

    return mutate


def _row(table: str, index: int, column: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(meta: dict[str, Any]) -> None:
        fields = meta["eager_trace"][table]["fields"]
        meta["eager_trace"][table]["rows"][index][fields.index(column)] = value

    return change


NODE_RULES = [
    ("graph_id", _set(KERNEL, "graph_id", "1"), rf'node {KERNEL}: graph_id: "1" is not an int'),
    ("local_id", _set(KERNEL, "local_id", -1), rf"node {KERNEL}: local_id: -1 is not an int"),
    ("type", _set(KERNEL, "type", "FROB"), rf'{KERNEL}: type: "FROB" is not a CUDA graph node'),
    ("type missing", _delete(KERNEL, "type"), rf"node {KERNEL}: type: is missing"),
    (
        "grid zero",
        _set(KERNEL, "grid", [0, 1, 1]),
        rf"{KERNEL}: grid\[0\]: 0 is not an integer in 1",
    ),
    ("block 2-D", _set(KERNEL, "block", [128, 1]), rf"{KERNEL}: block: a list of 2 is not"),
    ("grid huge", _set(KERNEL, "grid", [2**40, 1, 1]), rf"{KERNEL}: grid\[0\]: \d+ is not an"),
    ("shared_mem", _set(KERNEL, "shared_mem", -16), rf"{KERNEL}: shared_mem: -16 is not"),
    ("bytes text", _set(COPY, "bytes", "8192"), rf'node {COPY}: bytes: "8192" is not an int'),
    ("bytes 70 bits", _set(COPY, "bytes", 2**70), rf"node {COPY}: bytes: \d+ is not an int"),
    ("other field", _set(KERNEL, "node_handle", 2**70), rf"{KERNEL}: node_handle: .* 64 bits"),
    ("replay", _set(KERNEL, "replay", "fast"), rf'{KERNEL}: replay: "fast" is not an object'),
    ("replay us", _set(KERNEL, "replay.median_us", 1e300), r"replay.median_us: 1e\+300 is not"),
    ("replay count", _set(KERNEL, "replay.count", 1.5), r"replay.count: 1.5 is not an int"),
    ("eager index", _set(KERNEL, "eager.index", 10**6), r"eager.index: 1000000 is past the"),
    ("eager stream", _set(KERNEL, "eager.stream", "7"), r'eager.stream: "7" is not an int'),
    ("module", _set(KERNEL, "attribution.module", 5), r"attribution.module: 5 is not a str"),
    ("line", _set(KERNEL, "attribution.line", -3), r"attribution.line: -3 is not an int"),
    ("args", _first(KERNEL, "args", "offset", "0"), r'args\[0\].offset: "0" is not an int'),
    ("arg bytes", _first(KERNEL, "args", "value", "zz"), r'args\[0\].value: "zz" is not hex'),
    ("pointer", _first(KERNEL, "pointers", "address", -1), r"pointers\[0\].address: -1 is not"),
    ("key", _set(KERNEL, "local_id", 9999), rf"node {KERNEL}: its key is not graph_<graph_id>"),
    ("parent", _set(KERNEL, "parent", COPY), r"graph 1 has nodes with parents"),
    ("owner", _parent_of_graph(1, "graph_9_node_9"), r'graph 1: parent "graph_9_node_9" is not'),
    ("roots", _meta(lambda m: m.update(root_graph_ids=["1"])), r"metadata.root_graph_ids\[0\]"),
    ("batch", _meta(lambda m: m.update(batch_size=0)), r"metadata.batch_size: 0 is not an int"),
    ("timing", _meta(lambda m: m["timing"].update(replays=-1)), r"metadata.timing.replays: -1"),
    (
        "trace row",
        _meta(lambda m: m["eager_trace"]["gpu"]["rows"][3].append(1)),
        r"metadata.eager_trace.gpu.rows\[3\]: not a row of 12 values",
    ),
    (
        "trace field",
        _meta(lambda m: m["eager_trace"]["api"]["fields"].__setitem__(1, "begin_ns")),
        r"metadata.eager_trace.api.fields: lacks start_ns",
    ),
    (
        "trace time",
        _meta(_row("api", 0, "start_ns", "0")),
        r'metadata.eager_trace.api.rows\[0\]\[1\] \(start_ns\): "0" is not an int',
    ),
    (
        "trace span",
        _meta(_row("gpu", 5, "end_ns", 0)),
        r"metadata.eager_trace.gpu.rows\[5\]: end_ns 0 is before start_ns",
    ),
    (
        "trace type",
        _meta(_row("gpu", 0, "type", "COPY")),
        r'eager_trace.gpu.rows\[0\]\[0\] \(type\): "COPY" is not a GPU activity type',
    ),
    (
        "parity",
        _meta(lambda m: m["parity"]["only_in_graph"].append({"node": "graph_1_node_999"})),
        r'metadata.parity.only_in_graph\[0\].node: "graph_1_node_999" is not a node',
    ),
    (
        # found by the commands fuzz: parity without `matched` passed, and inspect raised
        "parity field",
        _meta(lambda m: m["parity"].pop("matched")),
        r"metadata.parity.matched: is missing",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "pattern"), [c[1:] for c in NODE_RULES], ids=[c[0] for c in NODE_RULES]
)
def test_a_bundle_that_breaks_a_rule_is_refused(
    bundle_graph: nx.DiGraph, tmp_path: Path, mutate: Callable[[nx.DiGraph], None], pattern: str
) -> None:
    G = copy.deepcopy(bundle_graph)
    mutate(G)
    refused(write_json(tmp_path / "mutated.json", to_document(G)), pattern)


def _add_edge(a: str, b: str) -> Callable[[nx.DiGraph], None]:
    return lambda G: G.add_edge(a, b)


def _ring(G: nx.DiGraph) -> None:
    # graph 5 is owned by graph_1_node_17 (in graph 1); make graph 1 owned by a node of graph 5
    G.nodes["graph_5_node_1"].update(type="GRAPH", child_graph=1)
    _parent_of_graph(1, "graph_5_node_1")(G)
    G.graph["root_graph_ids"] = []


STRUCTURE_RULES = [
    ("two graphs", _add_edge("graph_1_node_0", "graph_5_node_0"), r"edge graph_1_node_0 -> gr"),
    ("cycle", _add_edge("graph_1_node_5", "graph_1_node_0"), r"cycle through graph_1_node_"),
    ("self loop", _add_edge("graph_5_node_0", "graph_5_node_0"), r"cycle through graph_5_node_0"),
    ("owner", _set("graph_1_node_17", "child_graph", 40), r"graph 5: its nodes' parent graph_1"),
    ("claimed", _set("graph_1_node_17", "child_graph", 7), r"graph 7 is claimed by both"),
    ("ring", _ring, r"graph \d+ is nested inside itself through its owners"),
    ("bodies", _set("graph_1_node_18", "bodies", 7), r"node graph_1_node_18: bodies: 7 is not"),
]


@pytest.mark.parametrize(
    ("mutate", "pattern"), [c[1:] for c in STRUCTURE_RULES], ids=[c[0] for c in STRUCTURE_RULES]
)
def test_a_graph_whose_structure_breaks_the_contract_is_refused(
    all_types: nx.DiGraph, tmp_path: Path, mutate: Callable[[nx.DiGraph], None], pattern: str
) -> None:
    """Edges within one graph, acyclic graphs, one owner each (a child graph, bodies)."""
    G = copy.deepcopy(all_types)
    mutate(G)
    refused(write_json(tmp_path / "mutated.json", to_document(G)), pattern)


@pytest.mark.parametrize(
    ("edge", "pattern"),
    [
        (
            '"graph_1_node_0" -> "graph_5_node_0";',
            r":\d+: edge graph_1_node_0 -> graph_5_node_0 joi",
        ),
        ('"graph_1_node_7" -> "graph_1_node_0";', r": edges form a cycle through graph_1_node_"),
        ('"graph_6_node_1" -> "graph_6_node_1";', r": edges form a cycle through graph_6_node_1"),
    ],
    ids=["two graphs", "cycle", "self loop"],
)
def test_a_dump_whose_edges_break_the_contract_is_refused(
    tmp_path: Path, edge: str, pattern: str
) -> None:
    text = ALL_TYPES.read_text()
    end = text.rindex("}")
    path = tmp_path / "mutated.dot"
    path.write_text(text[:end] + edge + "\n" + text[end:])
    refused(path, pattern)


def _saved_dot(tmp_path: Path, old: str, new: str) -> Path:
    """graphscope's own DOT of the all-types sample, its gs_ attributes' JSON changed."""
    saved = graphscope.save(graphscope.load(ALL_TYPES), tmp_path / "saved.dot")
    return _replace(saved, old, new, tmp_path / "mutated.dot")


@pytest.mark.parametrize(
    ("old", "new", "pattern"),
    [
        ('\\"bodies\\":[7,8]', '\\"bodies\\":7', r"node graph_1_node_18: bodies: 7 is not a list"),
        ('\\"child_graph\\":5', '\\"child_graph\\":7', r"graph_7 is claimed by both"),
        ('\\"type\\":\\"KERNEL\\"', '\\"type\\":[]', r"type: a list of 0 is not a CUDA"),
        ('gs_graph="{', 'gs_graph="{\\"batch_size\\":-1,', r"metadata.batch_size: -1 is not"),
    ],
    ids=["bodies", "claimed", "type", "metadata"],
)
def test_graphscopes_own_dump_that_breaks_the_contract_is_refused(
    tmp_path: Path, old: str, new: str, pattern: str
) -> None:
    """Attributes read back from gs_attrs JSON meet the same rules (once TypeError in
    graph_from_dot)."""
    refused(_saved_dot(tmp_path, old, new), pattern)


def _replace(path: Path, old: str, new: str, out: Path, count: int = 1) -> Path:
    text = path.read_text()
    assert old in text, old
    out.write_text(text.replace(old, new, count))
    return out


LONG = "9" * 5000  # past Python's 4300-digit limit on int()


@pytest.mark.parametrize(
    ("source", "old", "new", "pattern"),
    [
        # each once raised ValueError from int() in the DOT reader
        (DOT / "flags-kernel-params.dot", r"\<\<\<64,", rf"\<\<\<{LONG},", "5000 digits"),
        (DOT / "flags-kernel-params.dot", r"\{32,4\}", r"\{32,4,1,1\}", "launch dimensions"),
        (DOT / "flags-verbose.dot", "(topoId: 6)", f"(topoId: {LONG})", "5000 digits"),
        (DOT / "flags-none.dot", "(HtoD,32768)", f"(HtoD,{LONG})", "5000 digits"),
        (DOT / "flags-verbose.dot", "0x0000000009C07E10", "0x" + "F" * 40, "40 digits"),
        (DOT / "flags-verbose.dot", "| 0 | 0 |", f"| {LONG} | 0 |", "5000 digits"),
        (ALL_TYPES, "{True | graph_7}", f"{{True | graph_{LONG}}}", "5000 digits"),
        (ALL_TYPES, '"graph_1_node_0"[', f'"graph_1_node_{LONG}"[', "not named graph_<G>_node_<N>"),
        (
            DOT / "flags-kernel-params.dot",
            "64,\\{32,4\\},24",
            "0,\\{32,4\\},24",
            r"grid\[0\]: 0 is",
        ),
    ],
    ids=["launch", "launch cell", "topoId", "copy size", "hex", "field", "body", "key", "grid 0"],
)
def test_a_dump_with_a_number_no_driver_prints_is_refused(
    tmp_path: Path, source: Path, old: str, new: str, pattern: str
) -> None:
    message = refused(_replace(source, old, new, tmp_path / "mutated.dot"), pattern)
    assert re.search(r"\.dot:\d+: ", message), "the line of the node is named"


def test_an_unquoted_attribute_list_is_read_in_linear_time(tmp_path: Path) -> None:
    """``[label=aa=bbb=bbb...`` once made the fast-path regex backtrack for over 10 s."""
    for pairs in (30, 200_000):
        path = _replace(
            DOT / "flags-verbose.dot",
            '"graph_14_node_0"[',
            '"graph_14_node_0"[label=aa' + "=bbb" * pairs + " x\n",
            tmp_path / f"unquoted{pairs}.dot",
        )
        start = time.perf_counter()
        refused(path, "expected")
        assert time.perf_counter() - start < 5


@pytest.mark.parametrize("depth", [70, 100_000])
def test_deep_json_in_a_dump_is_refused_not_a_recursion_error(tmp_path: Path, depth: int) -> None:
    """Once RecursionError in _node_attrs (a node's gs_attrs) and graph_from_dot (an edge's)."""
    deep = "[" * depth + "]" * depth
    node = _saved_dot(tmp_path, 'gs_attrs="{', f'gs_attrs="{{\\"x\\":{deep},')
    refused(node, r":\d+: node 'graph_1_node_0': gs_attrs: JSON nested deeper than 64 levels")
    edge = _saved_dot(tmp_path, ' [gs_attrs="{', f' [gs_attrs="{{\\"x\\":{deep},')
    refused(edge, r":\d+: edge gs_attrs: JSON nested deeper than 64 levels")
    meta = _saved_dot(tmp_path, 'gs_graph="{', f'gs_graph="{{\\"x\\":{deep},')
    refused(meta, r"gs_graph: JSON nested deeper than 64 levels")


def test_a_bundle_whose_encoding_is_broken_is_refused(tmp_path: Path) -> None:
    doc = json.loads(gzip.decompress(BUNDLE.read_bytes()))
    doc["kernel_names"] = []  # once IndexError in _node_entries
    refused(write_json(tmp_path / "names.json", doc), r"node graph_1_node_\d+: kernel name index 0")
    doc = json.loads(gzip.decompress(BUNDLE.read_bytes()))
    doc["schema_version"] = json.loads("[" * 900 + "]" * 900)  # once RecursionError
    refused(write_json(tmp_path / "version.json", doc), "nested deeper than 64 levels")
    text = gzip.decompress(BUNDLE.read_bytes()).decode()
    long = tmp_path / "long.json"
    long.write_text(text.replace('"schema_version":1', f'"schema_version":{LONG}', 1))
    refused(long, r"integer literal longer than \d+ digits")
    nan = tmp_path / "nan.json"
    nan.write_text(text.replace('"replay_us":', '"replay_us":NaN,"was":', 1))
    refused(nan, "holds NaN, which is not a JSON number")


def test_every_sample_still_reads_as_before_the_contract() -> None:
    """Every file in samples/ that loaded before still loads, to the same graph (or index)."""
    expected = json.loads((Path(__file__).resolve().parents[1] / "sample_reads.json").read_text())
    assert digests() == expected


def test_every_sample_graph_passes_the_contract_and_round_trips(tmp_path: Path) -> None:
    for path in sorted(SAMPLES.rglob("*")):
        if not path.name.endswith((".dot", ".json.gz")) or "large" in path.parts:
            continue
        if path.name.endswith("torch-trace.json.gz"):
            continue
        G = graphscope.load(path)
        contract.check_graph(G, path)
        for suffix in (".json.gz", ".dot"):
            H = graphscope.load(graphscope.save(G, tmp_path / f"copy{suffix}"))
            assert dict(H.nodes(data=True)) == dict(G.nodes(data=True)), path
            assert sorted(H.edges(data=True)) == sorted(G.edges(data=True)), path


def _bomb(path: Path, size: int) -> Path:
    """A gzip file of ``size`` zero bytes, made a MiB at a time: a few MB on disk."""
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    with open(path, "wb") as fh:
        for _ in range(size >> 20):
            fh.write(deflate.compress(zeros))
        fh.write(deflate.flush())
    return path


def test_a_gzip_bomb_is_refused_naming_the_limit_in_little_memory(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "bomb.json.gz", contract.MAX_BYTES + (16 << 20))
    assert bomb.stat().st_size < contract.MAX_BYTES // 100
    limit = rf"expands past {contract.MAX_BYTES} bytes"
    tracemalloc.start()
    try:
        refused(bomb, limit)
        refused(bomb, limit, read_torch_trace)  # import-trace once decompressed without a limit
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100 << 20, "the expansion is counted, not kept"
    # A trailer that lies about the size is caught by the count as the stream expands.
    lying = bytearray(_bomb(tmp_path / "lying.json.gz", 64 << 20).read_bytes())
    lying[-4:] = (1000).to_bytes(4, "little")
    (tmp_path / "lying.json.gz").write_bytes(lying)
    with pytest.raises(GraphscopeError, match="expands past 8388608 bytes"):
        graphscope.load(tmp_path / "lying.json.gz", max_bytes=8 << 20)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [65, 900, 100_000])
def test_json_nested_too_deep_is_refused_by_every_reader(tmp_path: Path, depth: int) -> None:
    limit = "nested deeper than 64 levels"
    refused(
        write_text(
            tmp_path / "b.json", '{"format": "graphscope-bundle", "x": ' + _deep(depth) + "}"
        ),
        limit,
    )
    index = json.loads((RECORDED / "recording.json").read_text())
    index["notes"] = json.loads(_deep(min(depth, 900)))
    (tmp_path / "rec").mkdir()
    refused(write_json(tmp_path / "rec" / "recording.json", index), limit, load_recording)
    buckets = json.loads(BUCKETS.read_text())
    buckets["updates"] = json.loads(_deep(min(depth, 900)))
    refused(write_json(tmp_path / "x.buckets.json", buckets), limit, read_buckets)
    refused(
        write_text(tmp_path / "h.json", '{"1": ' + _deep(depth) + "}"), limit, read_distribution
    )
    refused(
        write_text(tmp_path / "t.json", '{"traceEvents": ' + _deep(depth) + "}"),
        limit,
        read_torch_trace,
    )


def write_text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _buckets(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    doc = json.loads(BUCKETS.read_text())
    change(doc)
    return write_json(tmp_path / "x.buckets.json", doc)


def _bucket(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc["buckets"][0].__setitem__(field, value)


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (_bucket("batch_size", 0), r"bucket 0: batch_size: 0 is not an integer in 1..65536"),
        (_bucket("batch_size", 10**30), r"bucket 0: batch_size: \d+ is not an integer"),
        (_bucket("replay_us", float("inf")), "holds Infinity, which is not a JSON number"),
        (_bucket("graph_pool_bytes", 1.5), r"bucket 0: graph_pool_bytes: 1.5 is not an int"),
        (lambda doc: doc["buckets"][0].pop("replay_us"), r"bucket 0: replay_us: is missing"),
        (lambda doc: doc.update(updates=5), r"updates: 5 is not a list"),
        (lambda doc: doc["buckets"].append(doc["buckets"][0]), "two buckets have batch size 1"),
    ],
    ids=["batch 0", "batch huge", "infinite", "pool bytes", "missing", "updates", "twice"],
)
def test_a_buckets_index_that_breaks_its_rules_is_refused(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], pattern: str
) -> None:
    refused(_buckets(tmp_path, change), pattern, read_buckets)


def test_a_replay_time_past_a_float_is_refused(tmp_path: Path) -> None:
    text = BUCKETS.read_text().replace('"replay_us": 394.74345500000396', '"replay_us": 1e400')
    refused(
        write_text(tmp_path / "x.buckets.json", text),
        r"bucket 0: replay_us: inf is not",
        read_buckets,
    )


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("1,inf\n", r"expected \"batch,count\""),
        ("1,1e400\n", r"count '1e400' is not a number in 0\.\.1e\+15"),
        ("0,5\n", r"expected \"batch,count\""),
        (f"{LONG},1\n", r"expected \"batch,count\""),
        ('{"1": 1e400}', r"inf is not a finite number"),
        ('{"0": 1}', r'"0" is not a batch size'),
        ('{"1": [1]}', r"1: a list of 1 is not"),
    ],
)
def test_a_histogram_that_breaks_its_rules_is_refused(
    tmp_path: Path, text: str, pattern: str
) -> None:
    refused(write_text(tmp_path / "h.txt", text), pattern, read_distribution)


def _trace(tmp_path: Path, change: Callable[[list[dict[str, Any]]], None]) -> Path:
    doc = json.loads(gzip.decompress(TRACE.read_bytes()))
    change(doc["traceEvents"])
    return write_json(tmp_path / "trace.json", doc)


def _event(cat: str, change: Callable[[dict[str, Any]], None]) -> Callable[[list[Any]], None]:
    def mutate(events: list[dict[str, Any]]) -> None:
        change(next(e for e in events if e.get("cat") == cat and e.get("ph") == "X"))

    return mutate


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (_event("kernel", lambda e: e.update(ts="now")), r"traceEvents\[\d+\].ts: \"now\" is"),
        (_event("kernel", lambda e: e.pop("ts")), r"traceEvents\[\d+\].ts: is missing"),
        (_event("kernel", lambda e: e["args"].update(grid=[1, 1])), r"\].args.grid: a list of 2"),
        (_event("kernel", lambda e: e.update(dur=1e300)), r"traceEvents\[\d+\].dur: 1e\+300"),
        (_event("cuda_runtime", lambda e: e.update(tid="main")), r"\]\.tid: \"main\" is not"),
        (_event("gpu_memcpy", lambda e: e["args"].update(bytes=-1)), r"\.args\.bytes: -1 is"),
        (_event("cuda_runtime", lambda e: e.update(args=[])), r"\]\.args: a list of 0 is not an"),
    ],
    ids=["ts text", "ts missing", "grid", "dur", "tid", "bytes", "args"],
)
def test_a_profiler_trace_that_breaks_its_rules_is_refused(
    tmp_path: Path, change: Callable[[list[Any]], None], pattern: str
) -> None:
    """These once raised IndexError, KeyError, TypeError, ValueError or OverflowError in
    records_from_torch_trace or join_eager, some naming no file."""
    G = graphscope.load(BUNDLE)
    refused(_trace(tmp_path, change), pattern, lambda p: with_torch_trace(G, p))


def test_a_recording_index_that_breaks_its_rules_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pid1").mkdir()
    index = tmp_path / "pid1" / "recording.json"
    for change, pattern in [
        (
            lambda d: d["graphs"][0].update(replays=10**30),
            r"graphs\[0\].replays: \d+ is not an int",
        ),
        (lambda d: d["graphs"][0].update(updates=5), r"graphs\[0\].updates: 5 is not a list"),
        (
            lambda d: d["graphs"][0].update(captured_at_s=1e300),
            r"graphs\[0\].captured_at_s: 1e\+300",
        ),
        (
            lambda d: d["process"].update(status="zombie"),
            r'process.status: "zombie" is not a record',
        ),
    ]:
        doc = json.loads((RECORDED / "recording.json").read_text())
        change(doc)
        refused(write_json(index, doc), pattern, load_recording)


def test_metadata_capture_writes_as_null_loads(bundle_graph: nx.DiGraph, tmp_path: Path) -> None:
    """A model without a prefill step: capture writes ``prefill: null`` (the H200's capture
    tests caught the contract refusing it)."""
    G = bundle_graph.copy()
    G.graph["prefill"] = None
    path = graphscope.save(G, tmp_path / "no-prefill.json.gz")
    assert graphscope.load(path).graph["prefill"] is None
