"""Recordings made by ``graphscope record`` on the H200 (samples/recordings), read anywhere."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import graphscope
from graphscope.analysis.lifecycle import catalog, notes, pair_graphs, process_report
from graphscope.cli import _split_record, main
from graphscope.errors import BundleFormatError, InputError
from graphscope.recording import (
    Recording,
    Settings,
    is_recording,
    load_recording,
    load_recordings,
    process_label,
)

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "samples" / "recordings"
NAMES = ("torch-buckets", "spawn-worker", "hf-generate", "gpt-fast")


def _main_process(name: str) -> Recording:
    (rec,) = [r for r in load_recordings(RECORDINGS / name) if r.graphs]
    return rec


@pytest.mark.parametrize("name", NAMES)
def test_every_sample_recording_loads_with_its_bundles_and_dumps(name: str) -> None:
    folder = RECORDINGS / name
    assert is_recording(folder)
    run = json.loads((folder / "run.json").read_text())
    assert run["exit_status"] == 0 and run["device"].startswith(("NVIDIA H200", "NVIDIA H100"))
    manifest = [
        json.loads(line) for line in (RECORDINGS / "manifest.jsonl").read_text().splitlines()
    ]
    assert {"recording": name, **run} in manifest
    rec = _main_process(name)
    assert rec.process["status"] == "finished" and rec.settings["first"] == 20
    for g in rec.graphs:
        G = graphscope.load(rec.bundle_path(g))
        assert G.number_of_nodes() == g["nodes"]
        assert G.graph["recording"]["id"] == g["id"]
        dump = graphscope.load(rec.folder / g["dot"])
        assert set(dump) == set(G)
        if g["replays"]:
            assert G.graph["timing"]["replays"] > 0
            assert G.graph["timing"]["source"].startswith("the program's own replays")
            timed = [d for _, d in G.nodes(data=True) if "replay" in d]
            assert len(timed) == g["nodes"]


def test_the_bucket_recording_answers_which_batch_hits_which_graph() -> None:
    rec = _main_process("torch-buckets")
    rows = {row["batch"]: row for row in catalog(rec)}
    assert sorted(rows) == [1, 2, 4]
    assert sum(row["replays"] for row in rows.values()) == 400  # the program's 400 steps
    assert all(row["capturer"] == "torch.cuda.graph" for row in rows.values())
    assert all(row["site"].startswith("torch_buckets.py:") for row in rows.values())
    # one pool shared by all three (SGLang's discipline), counted once for the process
    assert all(len(row["pool_shared_with"]) == 2 for row in rows.values())
    report = process_report(rec)
    assert report.pool_bytes == rows[4]["pool_bytes"] > 0
    assert rows[2]["rerecord_of"] == rows[4]["id"]
    assert rows[2]["shape_changes"] == ["input 0: [4, 1] -> [2, 1]"]
    assert rows[2]["rerecord_reason"] == "new input shapes"
    shares = [row["gpu_share_pct"] for row in rows.values()]
    assert sum(shares) == pytest.approx(100.0)
    assert [n.code for n in notes(rec)] == ["graph-per-size"]


def test_a_graph_recorded_again_with_the_same_shapes_is_a_warning() -> None:
    rec = _main_process("hf-generate")
    found = {n.code: n for n in notes(rec)}
    same = found["same-shape-rerecord"]
    assert same.severity == "warning"
    # the second generate() call of batch 1: a new static cache, so the graph is recorded again
    (line,) = [d for d in same.details if " again after " in d]
    g = next(g for g in rec.graphs if line.startswith(g["id"] + " "))
    # torch's own reason: the static cache's tensors are new ones
    assert g["batch"] == 1
    assert g["rerecord_reason"].startswith("static input data pointer changed: 4 inputs moved")
    assert "cache_utils.py:482 in update: self.keys.index_copy_" in line
    assert all(g["capturer"] == "inductor" for g in rec.graphs)
    assert rec.graphs[0]["program_site"]["file"].endswith("hf_generate.py")


def test_gpt_fast_recording_holds_the_empty_graph_inductor_makes_first() -> None:
    rec = _main_process("gpt-fast")
    empty = [g for g in rec.graphs if g["nodes"] == 0]
    assert len(empty) == 1 and empty[0]["replays"] == 0
    assert graphscope.load(rec.bundle_path(empty[0])).number_of_nodes() == 0
    assert graphscope.load(rec.folder / empty[0]["dot"]).number_of_nodes() == 0
    real = {g["batch"]: g for g in rec.graphs if g["nodes"]}
    assert sorted(real) == [1, 2] and real[2]["rerecord_of"] == real[1]["id"]
    assert real[1]["site"]["function"] == "decode_one_token"
    G = graphscope.load(rec.bundle_path(real[1]))
    kernels = [d for _, d in G.nodes(data=True) if d["type"] == "KERNEL"]
    triton = [d["attribution"] for d in kernels if str(d["short_name"]).startswith("triton_")]
    # Every kernel Inductor generated was launched by its generated code, which names what
    # each fuses; a kernel it left to aten (gpt-fast's sampling: aten::randint) names its op.
    assert triton and all("compiled" in a for a in triton)
    fused = [
        d["attribution"]["compiled"]["source_nodes"]
        for d in kernels
        if "compiled" in d["attribution"]
    ]
    assert len(fused) >= 0.9 * len(kernels) and sum(1 for f in fused if f) >= 0.9 * len(fused)
    assert all("compiled" in d["attribution"] or d["attribution"]["op"] for d in kernels)
    # every other process of the run (Inductor's compile workers) made no graph
    others = [r for r in load_recordings(RECORDINGS / "gpt-fast") if not r.graphs]
    assert others and all("compile_worker" in process_label(r) for r in others)


def test_recordings_pair_graph_by_graph_for_diff() -> None:
    a, b = _main_process("torch-buckets"), _main_process("spawn-worker")
    pairs, only_a, only_b = pair_graphs(a, b)
    assert sorted(ga["batch"] for ga, _ in pairs) == [1, 2]
    assert all(ga["batch"] == gb["batch"] for ga, gb in pairs)
    assert [g["batch"] for g in a.graphs if g["id"] in only_a] == [4] and only_b == []


def test_the_cli_reads_recording_folders(capsys: pytest.CaptureFixture[str]) -> None:
    folder = str(RECORDINGS / "torch-buckets")
    assert main(["inspect", folder]) == 0
    out = capsys.readouterr().out
    assert "graphscope recording, 1 process" in out and "torch_buckets.py:" in out
    assert main(["report", folder]) == 0
    out = capsys.readouterr().out
    assert "the life of each graph" in out and "replayed 192 times" in out
    assert main(["inspect", "--json", folder]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert sorted(r["batch"] for r in entry["recording"][0]["rows"]) == [1, 2, 4]
    assert main(["diff", folder, str(RECORDINGS / "spawn-worker")]) == 0
    out = capsys.readouterr().out
    assert out.count("cudaGraphExecUpdate SUCCESS") == 2 and "only in A" in out
    bundle = str(RECORDINGS / "spawn-worker" / "pid1060" / "g2.json.gz")
    assert main(["diff", folder, bundle]) == 2
    assert "is a recording and the other is a graph file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda doc: doc["graphs"][0].update(replays="many"), 'graphs[0].replays: "many" is not'),
        (lambda doc: doc["graphs"][0].update(bundle="../x.json.gz"), "is not a file name"),
        (lambda doc: doc["process"].update(status="sleeping"), "process.status"),
        (lambda doc: doc.update(format="something-else"), "not a graphscope recording index"),
        (lambda doc: doc.update(schema_version=99), "read it with a newer graphscope"),
        (lambda doc: doc["graphs"].append(dict(doc["graphs"][0])), "the same id"),
    ],
)
def test_a_broken_index_is_one_line_naming_the_file_and_field(
    tmp_path: Path, edit: object, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "rec"
    shutil.copytree(RECORDINGS / "torch-buckets" / "pid959", folder / "pid959")
    index = folder / "pid959" / "recording.json"
    doc = json.loads(index.read_text())
    edit(doc)  # type: ignore[operator]
    index.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=re.escape(message)):
        load_recordings(folder)
    assert main(["inspect", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(index) in err[0] and "Traceback" not in err[0]


def test_a_truncated_index_and_a_folder_without_one(tmp_path: Path) -> None:
    index = tmp_path / "pid1" / "recording.json"
    index.parent.mkdir()
    index.write_text((RECORDINGS / "torch-buckets" / "pid959" / "recording.json").read_text()[:500])
    with pytest.raises(InputError, match=r"invalid JSON|truncated"):
        load_recording(index)
    with pytest.raises(InputError, match="not a recording folder"):
        load_recordings(tmp_path / "pid1" / "nothing")


def test_a_bundle_whose_recording_section_has_wrong_types_is_refused(tmp_path: Path) -> None:
    source = RECORDINGS / "torch-buckets" / "pid959" / "g2.json.gz"
    doc = json.loads(gzip.decompress(source.read_bytes()))
    doc["recording"]["graph"]["replays"] = [1, 2]
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(gzip.compress(json.dumps(doc).encode()))
    with pytest.raises(BundleFormatError, match=r"recording\.graph\.replays"):
        graphscope.load(bad)


def test_a_recording_bundle_round_trips(tmp_path: Path) -> None:
    G = graphscope.load(RECORDINGS / "torch-buckets" / "pid959" / "g8.json.gz")
    for suffix in (".json.gz", ".dot"):
        H = graphscope.load(graphscope.save(G, tmp_path / f"g{suffix}"))
        assert H.graph["recording"] == G.graph["recording"]
        assert dict(H.nodes(data=True)) == dict(G.nodes(data=True))


def test_settings_come_from_the_environment_safely() -> None:
    assert Settings.from_dict({"first": 5, "every_s": 2, "window": 3}).as_dict() == {
        "first": 5,
        "every_s": 2.0,
        "window": 3,
        "attribution": True,
        "ops": False,
    }
    assert Settings.from_dict({"ops": True, "attribution": False}).ops is True
    assert Settings.from_dict({"first": -1, "every_s": "x", "window": True}) == Settings()
    assert Settings.from_dict({"ops": "yes"}) == Settings()
    assert Settings.from_dict(None) == Settings()


def test_record_options_stop_where_the_program_begins() -> None:
    assert _split_record(["record", "--out", "d", "--first", "3", "--", "python", "-m", "x"]) == (
        ["record", "--out", "d", "--first", "3"],
        ["--", "python", "-m", "x"],
    )
    assert _split_record(["record", "-m", "pkg.mod", "--out", "x"]) == (
        ["record"],
        ["-m", "pkg.mod", "--out", "x"],
    )
    assert _split_record(["record", "--no-attribution", "train.py", "-v"]) == (
        ["record", "--no-attribution"],
        ["train.py", "-v"],
    )


def test_record_without_a_program_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", "--out", "x"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "record needs a program to run" in err


_FAKE_TORCH = """
import types
_queued = []
def _lazy_call(fn):
    _queued.append(fn)
def _lazy_init():
    for fn in _queued:
        fn()
cuda = types.SimpleNamespace(_lazy_call=_lazy_call, _lazy_init=_lazy_init)
"""
_PROGRAM = """
import multiprocessing, sys
def work():
    import torch
    torch.cuda._lazy_init()
    print("worker ran")
if __name__ == "__main__":
    process = multiprocessing.get_context("spawn").Process(target=work)
    process.start()
    process.join()
    print("parent never initialised CUDA", process.exitcode)
"""


def test_python_processes_a_program_starts_reach_the_recorder(tmp_path: Path) -> None:
    """The start-up hook, on a machine without CUDA: a stand-in torch says when CUDA starts.

    Only the spawned worker, which initialises CUDA, reaches the recorder; where CUPTI is
    missing it says so once and runs on, and its recording says why it is empty.
    """
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(_FAKE_TORCH)
    program = tmp_path / "program.py"
    program.write_text(_PROGRAM)
    out = tmp_path / "rec"
    env = {**__import__("os").environ, "PYTHONPATH": str(fake)}
    done = subprocess.run(
        [sys.executable, "-m", "graphscope", "record", "--out", str(out), str(program)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "worker ran" in done.stdout and "parent never initialised CUDA 0" in done.stdout
    (rec,) = load_recordings(out)
    assert rec.process["pid"] != done.returncode and rec.graphs == []
    if rec.process["status"] == "stopped":  # no CUPTI here: said once, program unharmed
        said = [line for line in done.stderr.splitlines() if "runs unrecorded" in line]
        assert len(said) == 1 and str(rec.process["pid"]) in said[0]


def test_an_empty_graph_round_trips_and_an_empty_foreign_dot_is_refused(tmp_path: Path) -> None:
    from graphscope.errors import DotFormatError

    dump = RECORDINGS / "gpt-fast" / "pid1355" / "g2.dot"
    G = graphscope.load(dump)
    assert G.number_of_nodes() == 0 and G.graph["root_graph_ids"] == [1]
    for suffix in (".json.gz", ".dot"):
        H = graphscope.load(graphscope.save(G, tmp_path / f"empty{suffix}"))
        assert H.number_of_nodes() == 0 and H.graph["root_graph_ids"] == [1]
    foreign = tmp_path / "other.dot"
    foreign.write_text("digraph G {}\n")
    with pytest.raises(DotFormatError, match="the DOT graph has no nodes"):
        graphscope.load(foreign)


def _record(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``graphscope record ARGS`` in ``cwd``; the program writes ``ran`` in ``cwd``."""
    program = [sys.executable, "-c", "open('ran', 'w').close()"]
    return subprocess.run(
        [sys.executable, "-m", "graphscope", "record", *args, "--", *program],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_record_refuses_a_folder_that_holds_a_recording_and_force_replaces_it(
    tmp_path: Path,
) -> None:
    """Two runs never merge: the old recording is refused in one line, untouched, and the
    program does not run; ``--force`` removes that recording's parts and nothing else."""
    out = tmp_path / "rec"
    shutil.copytree(RECORDINGS / "spawn-worker", out)
    (out / "notes.txt").write_text("mine")
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    done = _record(["--out", str(out)], tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{out}: already holds a recording (1 process folder and run.json)" in done.stderr
    assert "--force" in done.stderr and "--out NEW_FOLDER" in done.stderr
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert not (tmp_path / "ran").exists()

    done = _record(["--out", str(out / "pid1060")], tmp_path)
    assert done.returncode == 2 and "is one process's folder of a recording" in done.stderr

    done = _record(["--force", "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ran").exists()
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "run.json"]
    assert (out / "notes.txt").read_text() == "mine"
    run = json.loads((out / "run.json").read_text())
    assert run["exit_status"] == 0 and "--force" in run["command"]
    assert run["unrecorded_processes"] == []  # its processes loaded no CUDA driver


def test_record_s_default_folder_is_new_for_each_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datetime

    from graphscope.cli import _record_folder

    class Frozen(datetime.datetime):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> Frozen:
            return cls(2026, 12, 4, 21, 0, 0)

    monkeypatch.setattr(datetime, "datetime", Frozen)
    monkeypatch.chdir(tmp_path)
    made = [_record_folder(None, force=False) for _ in range(3)]
    assert [str(p) for p in made] == [
        "graphscope-recording-20261204-210000",
        "graphscope-recording-20261204-210000-2",
        "graphscope-recording-20261204-210000-3",
    ]
    assert all(p.is_dir() for p in made)


RECORDED_BUNDLES = sorted(RECORDINGS.glob("*/*/g*.json.gz"))


@pytest.mark.parametrize(
    "path", RECORDED_BUNDLES, ids=[f"{p.parent.parent.name}/{p.name}" for p in RECORDED_BUNDLES]
)
def test_no_recorded_node_lasts_longer_than_the_longest_replay(path: Path) -> None:
    # Issue 25: the last traced launch came back stretched to a later flush, every node of it
    # 2 to 94 ms long against a 0.2 ms replay, and the panel showed that as a node's max.
    G = graphscope.load(path)
    timing = G.graph.get("timing") or {}
    if not timing.get("replays"):
        pytest.skip("never replayed while traced")
    longest = timing["replay_max_us"]
    assert timing["replay_us"] <= longest
    for key, data in G.nodes(data=True):
        replay = data.get("replay")
        if replay:
            assert replay["max_us"] <= longest + 1e-6, (key, replay, longest)


@pytest.mark.parametrize(
    ("name", "kernels", "site"),
    [
        ("jax-decode", "gemm_fusion_dot_general", "jax_decode.py"),  # XLA's fusion names
        ("cupy-graph", "cupy_", "cupy_graph.py"),
        ("cuda-python-graph", None, "cuda_python_graph.py"),
    ],
)
def test_a_program_without_torch_is_recorded_from_what_cuda_says(
    name: str, kernels: str | None, site: str
) -> None:
    # Issue 25: only processes where torch initialised CUDA were recorded.
    (rec,) = load_recordings(RECORDINGS / name)
    assert rec.process["status"] == "finished"
    (g,) = rec.graphs
    G = graphscope.load(rec.bundle_path(g))
    assert G.number_of_nodes() == g["nodes"] > 0 and g["replays"] > 0
    names = [str(d.get("short_name")) for _, d in G.nodes(data=True) if d["type"] == "KERNEL"]
    if kernels is None:
        assert not names and {d["type"] for _, d in G.nodes(data=True)} == {"MEMSET", "MEMCPY"}
    else:
        assert names and all(n.startswith(kernels) for n in names), names
    timing = G.graph["timing"]
    assert timing["replays"] >= 5 and timing["unjoined_records"] == 0
    assert all(d["replay"]["count"] == timing["replays"] for _, d in G.nodes(data=True))
    # module and op attribution are torch's; XLA's kernels get their HLO op (graphscope.hlo)
    labelled = [d["attribution"] for _, d in G.nodes(data=True) if d.get("attribution")]
    assert g["attributed_nodes"] == len(labelled) == (len(names) if name == "jax-decode" else 0)
    assert all(label["hlo"]["module"] == "jit_step" for label in labelled)
    assert g["site"]["file"].endswith(site)
    if name == "jax-decode":  # XLA builds its command buffers node by node: the jitted call
        assert g["capturer"] == "explicit"  # that instantiated one is its site
    else:
        assert g["capturer"] == "stream capture"


def test_the_memory_ledger_says_what_each_pool_holds_and_what_dropping_a_batch_frees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 26, part 5. The sample's three buckets share one pool: dropping one frees nothing.
    from graphscope.analysis.memory import ledger

    book = ledger(_main_process("torch-buckets"))
    ((pool),) = book.pools
    assert pool.shared and pool.graphs == ["g2", "g5", "g8"] and pool.batches == [4, 2, 1]
    assert book.total_bytes == pool.bytes == 34 * 2**20
    assert book.frees_by_batch == {"1": 0, "2": 0, "4": 0}
    # The same run with each graph in a pool of its own (torch.cuda.graph without pool=):
    # dropping a batch size frees its graph's pool.
    copy = tmp_path / "private"
    shutil.copytree(RECORDINGS / "torch-buckets", copy)
    (index,) = copy.glob("pid*/recording.json")
    doc = json.loads(index.read_text())
    for i, g in enumerate(doc["graphs"]):
        g["pool"] = {"id": [9, i], "bytes": (i + 1) << 20, "shared_with": []}
    index.write_text(json.dumps(doc))
    (rec,) = load_recordings(copy)
    book = ledger(rec)
    assert [p.graphs for p in book.pools] == [["g8"], ["g5"], ["g2"]]  # largest first
    assert book.frees_by_batch == {"1": 3 << 20, "2": 2 << 20, "4": 1 << 20}
    assert main(["inspect", str(copy)]) == 0
    out = capsys.readouterr().out
    assert "memory: 3 pool(s), 6.0 MiB in all" in out
    assert "dropping every graph of one batch size frees  batch 1: 3.0 MiB" in out
    assert "in use" not in out and "allocator reserved" not in out  # the recording lacks both


def test_the_ledger_sets_the_pools_against_all_the_process_reserved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Recordings made since the recorder writes them: each pool's bytes in use, and the
    allocator's totals, which the pools are a share of."""
    from graphscope.analysis.memory import ledger

    copy = tmp_path / "totals"
    shutil.copytree(RECORDINGS / "torch-buckets", copy)
    (index,) = copy.glob("pid*/recording.json")
    doc = json.loads(index.read_text())
    for g, active in zip(doc["graphs"], (30, 20, 10), strict=True):  # one shared pool, read 3x
        g["pool"]["active_bytes"] = active << 20
    doc["graphs"][0]["pool"]["bytes"] = 40 << 20  # the largest reading, and its bytes in use
    doc["memory"] = {"reserved_bytes": 160 << 20, "active_bytes": 100 << 20, "at_s": 12.5}
    index.write_text(json.dumps(doc))
    (rec,) = load_recordings(copy)
    book = ledger(rec)
    assert book.total_bytes == 40 << 20 and book.active_bytes == 30 << 20
    assert (book.process_reserved, book.process_active) == (160 << 20, 100 << 20)
    assert main(["inspect", str(copy)]) == 0
    out = capsys.readouterr().out
    assert "memory: 1 pool(s), 40.0 MiB in all (30.0 MiB in use)" in out
    assert (
        "the process's torch allocator reserved 160.0 MiB (100.0 MiB in use) at 12.5 s: graph "
        "pools are 25% of it" in out
    )
    doc["memory"] = {"reserved_bytes": "lots"}
    index.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="memory"):
        load_recordings(copy)


def test_inspect_names_the_run_s_processes_that_used_cuda_unrecorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rec"
    shutil.copytree(RECORDINGS / "cupy-graph", out)
    run = json.loads((out / "run.json").read_text())
    why = "pid 4242 (llama-server) loaded the CUDA driver but is not a Python process"
    run["unrecorded_processes"] = [
        {"pid": 4242, "name": "llama-server", "why": why},
        {"pid": "x", "name": 3, "why": None},  # of another shape: left out
    ]
    (out / "run.json").write_text(json.dumps(run))
    assert main(["inspect", str(out)]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "not recorded" in line]
    assert said == [f"not recorded: {why}"]
    assert main(["inspect", "--json", str(out)]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert [e["pid"] for e in entry["unrecorded_processes"]] == [4242]
    # A run.json that is not JSON adds nothing, and the recording still reads.
    (out / "run.json").write_text("{trunc")
    assert main(["inspect", str(out)]) == 0
    assert "not recorded" not in capsys.readouterr().out


def test_a_run_where_nothing_was_recorded_is_said_so_by_every_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """record leaves run.json alone when no process could be recorded (a native server did
    the GPU work): inspect, check, report, diff and serve say that, with the processes it
    names, in one line, not "not a recording folder" or "is a directory"."""
    from graphscope.cli import check_serve_files

    out = tmp_path / "rec"
    out.mkdir()
    why = "pid 4242 (llama-server) loaded the CUDA driver but is not a Python process"
    run = {"exit_status": 0, "unrecorded_processes": [{"pid": 4242, "name": "x", "why": why}]}
    (out / "run.json").write_text(json.dumps(run))
    other = str(RECORDINGS / "cupy-graph")
    for command in (["inspect"], ["inspect", "--json"], ["check"], ["report"], ["diff", other]):
        assert main([*command, str(out)]) == 2
        said = capsys.readouterr().err.strip().splitlines()
        assert said == [
            f"graphscope: error: {out}: a graphscope record run in which nothing was recorded: "
            f"no Python process of the program made a CUDA context; not recorded: {why}"
        ], said
    with pytest.raises(InputError, match=r"nothing was recorded: .*not recorded: pid 4242"):
        check_serve_files([str(out)])
    with pytest.raises(InputError, match="nothing was recorded"):
        load_recordings(out)
    # While the program runs (no exit status yet), nothing is recorded *yet*.
    (out / "run.json").write_text(json.dumps({**run, "exit_status": None}))
    assert main(["inspect", str(out)]) == 2
    assert "nothing recorded yet" in capsys.readouterr().err
    # A run.json that cannot be read is named, with what is wrong with it.
    (out / "run.json").write_text('{"exit_status": 0, "unrec')
    assert main(["check", str(out)]) == 2
    err = capsys.readouterr().err
    assert "nothing was recorded here, and" in err and "run.json:1: file ends inside" in err, err
    # A folder without run.json is no recording, as before.
    (out / "run.json").unlink()
    assert main(["inspect", str(out)]) == 2
    assert "is a directory" in capsys.readouterr().err


@pytest.mark.parametrize("where", [RECORDINGS, ROOT / "samples" / "large" / "recordings"])
def test_every_sample_recording_has_its_manifest_line_and_is_described(where: Path) -> None:
    """Each recording folder is what its manifest line says was made (its run.json, word for
    word), and samples/README.md says what it shows."""
    folders = sorted(p.name for p in where.iterdir() if p.is_dir())
    lines = [json.loads(line) for line in (where / "manifest.jsonl").read_text().splitlines()]
    manifest = {line["recording"]: line for line in lines}
    assert len(manifest) == len(lines) and sorted(manifest) == folders
    readme = (ROOT / "samples" / "README.md").read_text()
    for name in folders:
        run = json.loads((where / name / "run.json").read_text())
        assert manifest[name] == {"recording": name, **run}, name
        assert f"`{name}`" in readme or f"`large/recordings/{name}`" in readme, name
