"""Readers and names stay bounded on hostile input (issue 24): kernel names that demangle to
terabytes, JSON whose values outgrow memory, histogram counts that overflow, and ``--json``
output that must stay JSON."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import graphscope
from graphscope import contract, names
from graphscope.analysis import buckets
from graphscope.analysis.buckets import read_buckets, read_distribution
from graphscope.analysis.torch_trace import read_torch_trace
from graphscope.cli import main
from graphscope.dotwrite import dumps_dot
from graphscope.errors import InputError
from graphscope.recording import load_recordings

DOT = Path(__file__).resolve().parents[2] / "samples" / "dot" / "explicit-all-types"
KERNEL = "_Z16graphscope_scaleIfEvPT_S0_i"  # a kernel of flags-verbose.dot


def _seq(i: int) -> str:
    """The Itanium substitution ``S<seq>_`` of candidate ``i`` (``S_`` is the first)."""
    if i == 0:
        return "S_"
    i -= 1
    digits = ""
    while True:
        digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 36] + digits
        i //= 36
        if not i:
            return f"S{digits}_"


def doubling(levels: int) -> str:
    """``f<A<int, int>, A<A<int, int>, A<int, int>>, ...>()``: each template argument names
    the one before twice, so the demangled name doubles every level (about 2^levels)."""
    parts = ["1AIiiE"]  # candidates: f (S_), A (S0_), A<int, int> (S1_), ...
    parts += [f"S0_I{_seq(k + 2)}{_seq(k + 2)}E" for k in range(levels)]
    return "_Z1fI" + "".join(parts) + "Evv"


# --- 1. kernel names ---------------------------------------------------------------------------


def test_a_dot_file_whose_kernel_name_doubles_loads_with_the_name_mangled(tmp_path: Path) -> None:
    # 58 levels: a 570-byte name, 2^58 characters demangled. Run apart, with a memory cap and a
    # time limit, so that a demangler without bounds fails this test instead of the machine.
    bomb = doubling(58)
    path = tmp_path / "bomb.dot"
    path.write_text((DOT / "flags-verbose.dot").read_text().replace(KERNEL, bomb))
    code = (
        "import json, resource, sys, graphscope\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY))\n"
        "G = graphscope.load(sys.argv[1])\n"
        "print(json.dumps([(d['name'], d['demangled'], d['short_name'])\n"
        "                  for _, d in G.nodes(data=True) if d['type'] == 'KERNEL']))\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=tmp_path,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("loading a DOT file with a doubling kernel name did not finish in 30 s")
    assert done.returncode == 0, done.stderr[-2000:]
    kernels = json.loads(done.stdout)
    assert [bomb, bomb, bomb] in [list(k) for k in kernels]  # shown mangled
    others = [k for k in kernels if k[0] != bomb]
    assert others and all(not demangled.startswith("_Z") for _, demangled, _ in others)


def test_a_name_past_the_input_bound_is_not_demangled(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_child(todo: list[str]) -> dict[str, str | None]:
        raise AssertionError(f"the child was asked to demangle {len(todo)} names")

    monkeypatch.setattr(names, "_in_child", no_child)
    long_name = "_Z1f" + "i" * names.MAX_MANGLED
    assert names.demangle(long_name) == long_name
    assert names.demangle("_Z1fv\x00") == "_Z1fv\x00"  # C would read it as a shorter name
    assert names.demangle("not_mangled") == "not_mangled"


def test_the_demangler_stops_on_a_doubling_name_and_goes_on() -> None:
    bomb = doubling(58)
    said = names._in_child([bomb, KERNEL])
    assert said == {bomb: None, KERNEL: "void graphscope_scale<float>(float*, float, int)"}


def test_every_sample_kernel_name_keeps_its_demangled_form(samples: Path) -> None:
    found = set()
    for path in samples.rglob("*.dot"):
        found.update(re.findall(r"_Z[A-Za-z0-9_]+", path.read_text()))
    assert len(found) > 40
    demangled = names.demangle_all(sorted(found))
    assert all(demangled[n] != n and "(" in demangled[n] for n in found)


def test_the_name_caches_are_bounded_by_characters() -> None:
    cache = names._Cache(max_chars=10_000, max_entries=1_000)
    for i in range(1_000):
        cache.put(f"name{i}", "x" * 100)
    assert cache.chars <= 10_000 and len(cache.items) < 100
    assert cache.get("name999") == "x" * 100 and cache.get("name0") is None
    for i in range(2_000):  # short_name of long, distinct names (any text, from a DOT file)
        names.short_name(f"kernel_{i}<" + "x" * 5_000 + ">")
    assert names._SHORT.chars <= names._SHORT.max_chars


def test_a_deeply_nested_name_is_shortened_to_its_base() -> None:
    assert names.short_name("f<" * 5_000 + "int" + ">" * 5_000) == "f"
    assert names.short_name("ns::kernel<" + "int, " * 5_000 + "int>(int)") == "kernel"


# --- 2. JSON values ----------------------------------------------------------------------------


def _dense(n: int) -> bytes:
    return b"[" + b"{}," * n + b"{}]"


def _refused_for_values(exc: pytest.ExceptionInfo[InputError], path: Path, limit: int) -> None:
    text = str(exc.value)
    assert "\n" not in text and str(path) in text
    assert f"holds more than {limit:,} JSON values" in text


def test_json_values_are_counted_outside_strings() -> None:
    assert contract.json_values(b'{"a": [1, 2, "x,[{"], "b": {}}') == 6  # 3 commas, 3 open
    assert contract.json_values(b'["\\"", ",", "\\\\", 1]') == 4
    assert contract.json_values(_dense(10)) == 11 + 1 + 10


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_a_bundle_of_dense_values_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    monkeypatch.setattr(contract, "MAX_JSON_VALUES", 1_000)
    path = tmp_path / f"dense{suffix}"
    path.write_bytes(gzip.compress(_dense(2_000)) if suffix.endswith("gz") else _dense(2_000))
    with pytest.raises(InputError) as exc:
        graphscope.load(path)
    _refused_for_values(exc, path, 1_000)


def test_the_gs_attributes_of_a_dot_file_count_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    G = graphscope.load(DOT / "flags-verbose.dot")
    path = tmp_path / "written.dot"
    path.write_text(dumps_dot(G))
    per_node = max(contract.json_values(json.dumps(d).encode()) for d in G.nodes.values())
    assert G.number_of_nodes() > 3
    # Each attribute is within the limit; together they are not.
    monkeypatch.setattr(contract, "MAX_JSON_VALUES", 2 * per_node)
    with pytest.raises(InputError) as exc:
        graphscope.load(path)
    assert "of them in the file's earlier JSON" in str(exc.value)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_indexes_histograms_and_traces_are_bounded_in_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, samples: Path
) -> None:
    monkeypatch.setattr(buckets, "MAX_INDEX_VALUES", 100)
    index = tmp_path / "m.buckets.json"
    index.write_text(json.dumps({"buckets": [{}] * 200}))
    with pytest.raises(InputError) as exc:
        read_buckets(index)
    _refused_for_values(exc, index, 100)
    histogram = tmp_path / "h.json"
    histogram.write_text(json.dumps({str(n): 1 for n in range(1, 300)}))
    with pytest.raises(InputError) as exc:
        read_distribution(histogram)
    _refused_for_values(exc, histogram, 100)

    import graphscope.recording as recording

    monkeypatch.setattr(recording, "MAX_INDEX_VALUES", 100)
    folder = tmp_path / "rec" / "pid1"
    folder.mkdir(parents=True)
    (folder / "recording.json").write_bytes(_dense(200))
    with pytest.raises(InputError) as exc:
        load_recordings(tmp_path / "rec")
    _refused_for_values(exc, folder / "recording.json", 100)

    monkeypatch.setattr(contract, "MAX_JSON_VALUES", 1_000)
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(gzip.compress(_dense(2_000)))
    with pytest.raises(InputError) as exc:
        read_torch_trace(trace)
    _refused_for_values(exc, trace, 1_000)


def test_the_largest_samples_hold_far_fewer_values_than_the_limit(samples: Path) -> None:
    raw = gzip.decompress((samples / "large" / "hf-deep-llama-b1.json.gz").read_bytes())
    assert contract.json_values(raw) * 10 < contract.MAX_JSON_VALUES


# --- 7. histogram counts -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("h.txt", "batch,count\n1,1e308\n2,1e308\n"),
        ("h.txt", "1," + "9" * 30 + "\n"),
        ("h.json", '{"1": 1e299, "2": 1e299}'),
        ("h.json", '{"1": 1e16}'),
    ],
)
def test_a_histogram_count_past_the_bound_is_refused(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        read_distribution(path)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_extreme_small_counts_still_make_a_distribution(tmp_path: Path) -> None:
    path = tmp_path / "h.txt"
    path.write_text(f"1,5e-324\n2,{buckets.MAX_COUNT:.0f}\n3,0\n")
    dist = read_distribution(path)
    assert set(dist) == {1, 2} and abs(sum(dist.values()) - 1) < 1e-12


# --- 8. --json is strict JSON ------------------------------------------------------------------


def _cli_json(argv: list[str]) -> Any:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0

    def refuse(name: str) -> Any:
        raise AssertionError(f"--json printed {name}, which is not JSON")

    return json.loads(out.getvalue(), parse_constant=refuse)


def test_buckets_json_prints_null_for_an_unknown_eager_time(tmp_path: Path) -> None:
    index = tmp_path / "m.buckets.json"
    bucket = {"batch_size": 1, "replay_us": 10.0, "nodes": 3, "graph_pool_bytes": 1 << 20}
    index.write_text(json.dumps({"model": "m", "buckets": [bucket]}))  # no eager_step_us
    histogram = tmp_path / "h.txt"
    histogram.write_text("1,10\n4,10\n")  # batches of 4 exceed every bucket
    doc = _cli_json(["buckets", str(index), "--histogram", str(histogram), "--json"])
    assert doc["captured"]["mean_step_us"] is None


def test_every_json_output_of_the_samples_is_strict(samples: Path) -> None:
    bundle = str(samples / "bundles" / "tiny-llama-b1.json.gz")
    other = str(samples / "bundles" / "tiny-llama-b2.json.gz")
    recording = str(samples / "recordings" / "torch-buckets")
    for argv in (
        ["inspect", "--json", bundle, recording],
        ["report", "--json", bundle],
        ["report", "--json", recording],
        ["diff", "--json", bundle, other],
        ["buckets", "--json", str(samples / "bundles" / "tiny-llama.buckets.json")],
    ):
        _cli_json(argv)


def test_a_dot_file_with_more_names_than_the_caches_hold_starts_one_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its short names once missed the (full) caches and demangled each name in a child of its
    # own: 1,500 distinct 16 KB names took 179 s to load. One child per file, whatever the caches.
    monkeypatch.setattr(names, "_DEMANGLED", names._Cache(max_chars=4_000, max_entries=4))
    monkeypatch.setattr(names, "_SHORT", names._Cache(max_chars=4_000, max_entries=4))
    starts: list[int] = []
    real = names._in_child

    def counted(todo: list[str]) -> dict[str, str | None]:
        starts.append(len(todo))
        return real(todo)

    monkeypatch.setattr(names, "_in_child", counted)
    kernels = [f"_Z{len(f'kernel_{i:03d}')}kernel_{i:03d}Pfi" for i in range(40)]
    node = (
        '"graph_1_node_{i}"[style="bold" shape="record" label="{{KERNEL\n'
        "| {{ID | {i} (topoId: {i}) | {name}\\<\\<\\<4,128,0\\>\\>\\>}}\n"
        "| {{{{node handle | func handle}} | {{0x000000003B9C41B0 | 0x000000002225DEC0}}}}\n"
        '}}"];\n'
    )
    body = "".join(node.format(i=i, name=name) for i, name in enumerate(kernels))
    edges = "".join(f'"graph_1_node_{i}" -> "graph_1_node_{i + 1}";\n' for i in range(39))
    path = tmp_path / "many.dot"
    path.write_text(
        f'digraph dot {{\nsubgraph cluster_1 {{\nlabel="graph_1";\n{body}}}\n{edges}}}\n'
    )
    for _ in range(2):  # a second load of the same file: the caches no longer hold its names
        starts.clear()
        G = graphscope.load(path)
        assert len(starts) == 1 and starts[0] >= 36  # one child; the caches keep 4 names
        got = {d["name"]: (d["demangled"], d["short_name"]) for _, d in G.nodes(data=True)}
        assert got == {n: (f"{n[4:-3]}(float*, int)", n[4:-3]) for n in kernels}


def test_names_past_the_wall_clock_bound_are_mangled_for_that_load_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "flags.dot"
    name = "_Z16graphscope_scaleIdEvPT_S0_i"  # not cached by another test
    path.write_text((DOT / "flags-verbose.dot").read_text().replace(KERNEL, name))
    monkeypatch.setattr(names, "CALL_WALL_S", 0.0)  # no time left: nothing is demangled

    def kernel() -> dict[str, Any]:
        G = graphscope.load(path)
        return next(d for _, d in G.nodes(data=True) if d.get("name") == name)

    assert (kernel()["demangled"], kernel()["short_name"]) == (name, name)
    monkeypatch.setattr(names, "CALL_WALL_S", 10.0)  # the next load demangles it
    got = kernel()
    assert (got["demangled"], got["short_name"]) == (
        "void graphscope_scale<double>(double*, double, int)",
        "graphscope_scale<double>",
    )
