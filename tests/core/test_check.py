"""``graphscope check``: rules a recording must pass, on the recordings in samples/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from graphscope.analysis import coverage
from graphscope.analysis.check import DEFAULT_RULES, Rules, check
from graphscope.cli import main
from graphscope.recording import load_recordings

RECORDINGS = Path(__file__).resolve().parents[2] / "samples" / "recordings"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


@pytest.mark.parametrize("name", ["gpt-fast", "torch-buckets", "spawn-worker"])
def test_a_clean_recording_passes_the_default_rules_in_one_line(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run([str(RECORDINGS / name)], capsys)
    assert code == 0 and err == ""
    assert len(out) == 1 and out[0].startswith(f"{RECORDINGS / name}: passed: complete, ")
    assert "eager share <= 50%" in out[0] and "no torch.compile cudagraph skips" in out[0]


def test_generate_called_twice_fails_on_the_graph_recorded_again_and_names_the_program_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run([str(RECORDINGS / "hf-generate")], capsys)
    assert code == 1 and len(out) == 1
    head = (
        f"{RECORDINGS / 'hf-generate'}: rerecord: pid 942 (hf_generate.py): g10 was recorded "
        "again after g6 with the same input shapes at generic.py:933 in wrapper (from "
        "hf_generate.py:43 in main): static input data pointer changed: "
    )
    assert out[0].startswith(head), out[0]
    # torch's reason, read by the recorder: the static cache's tensors moved (a new cache for
    # the second call), grouped by the line of transformers that made them
    why = out[0][len(head) :]
    assert why.startswith("4 inputs moved, as arg10_1 moved 0x7fa1b1da6400 -> 0x7fa1b1da8800 ")
    assert "(cache_utils.py:482 in update: self.keys.index_copy_(2, cache_position, key_" in why
    assert "3 inputs moved, as arg11_1 moved" in why and "cache_utils.py:483 in update" in why


def test_naming_rules_checks_only_those_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(RECORDINGS / "gpt-fast")
    args = [path, "--max-graphs", "1", "--max-pool-mib", "100", "--max-eager-share", "1"]
    code, out, _ = _run(args, capsys)
    assert code == 1
    rules = [line.split(": ")[1] for line in out]
    assert rules == ["eager-share", "max-graphs", "max-pool"]
    assert (
        "3% of the GPU kernel time in the sampled windows ran outside graphs, more than 1%"
        in (out[0])
    )
    assert "3 graphs, more than 1: the first past the limit is g5 at generate.py:64" in out[1]
    assert "graph pools hold 122.0 MiB, more than 100 MiB; the largest is g8's" in out[2]
    # The same recording passes its named rules when they allow it; re-records are not asked.
    code, out, _ = _run([str(RECORDINGS / "hf-generate"), "--max-graphs", "4"], capsys)
    assert code == 0 and out[0].endswith(
        "passed: complete, <= 4 graphs a process (2 processes, 4 graphs)"
    )


def _planted(tmp_path: Path, name: str, change: dict[str, object]) -> Path:
    """A copy of a sample recording whose main process's index has ``change`` applied."""
    run = tmp_path / name
    shutil.copytree(RECORDINGS / name, run)
    (rec,) = [r for r in load_recordings(run) if r.graphs]
    doc = json.loads(rec.path.read_text())
    for key, value in change.items():
        section, _, field = key.partition(".")
        if field:
            doc.setdefault(section, {})[field] = value
        else:
            doc[section] = value
    rec.path.write_text(json.dumps(doc))
    return run


def test_planted_faults_each_break_their_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    killed = _planted(tmp_path, "torch-buckets", {"process.status": "running"})
    code, out, _ = _run([str(killed)], capsys)
    assert code == 1 and out[0].startswith(f"{killed}: incomplete: pid 959 (torch_buckets.py): ")
    assert "did not finish while recorded" in out[0]

    skipped = _planted(
        tmp_path,
        "gpt-fast",
        {
            "fallbacks": {
                "inductor_cudagraph_skips": 2,
                "reasons": ["skipping cudagraphs due to mutated inputs (1 instances)"],
            }
        },
    )
    code, out, _ = _run([str(skipped)], capsys)
    assert code == 1 and out == [
        f"{skipped}: skips: pid 1355 (gpt_fast_driver.py): torch.compile ran 2 function(s) "
        "without CUDA graphs: skipping cudagraphs due to mutated inputs (1 instances)"
    ]
    # With what the recorder counted and timed of the skipped function's calls.
    mutated = "skipping cudagraphs due to mutated inputs (1 instances): m.py:9 in f: t.add_(x)"
    counted = _planted(
        tmp_path / "counted",
        "gpt-fast",
        {
            "fallbacks": {
                "inductor_cudagraph_skips": 1,
                "reasons": [mutated],
                "skipped": [
                    {
                        "reason": mutated,
                        "calls": 1200,
                        "timed": 40,
                        "gpu_us_median": 31.25,
                        "gpu_ms_est": 37.5,
                    }
                ],
            }
        },
    )
    code, out, _ = _run([str(counted)], capsys)
    assert code == 1 and out[0].endswith(
        f"{mutated}: 1,200 calls ran eagerly, 31.2 us of GPU time each (median of 40 timed), "
        "about 37.50 ms in all"
    ), out

    eager = _planted(
        tmp_path, "spawn-worker", {"sampling.eager_kernel_us": 9e6, "sampling.graph_kernel_us": 1e6}
    )
    code, out, _ = _run([str(eager)], capsys)
    assert code == 1 and "eager-share" in out[0] and "90% of the GPU kernel time" in out[0]


def test_check_as_a_function_and_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    result = check(load_recordings(RECORDINGS / "hf-generate"), DEFAULT_RULES)
    assert [(v.rule, v.graph) for v in result.violations] == [("rerecord", "g10")]
    assert (
        check(load_recordings(RECORDINGS / "hf-generate"), Rules(no_rerecord=False)).violations
        == []
    )
    code, out, _ = _run([str(RECORDINGS / "hf-generate"), "--json"], capsys)
    doc = json.loads("\n".join(out))
    assert code == 1 and doc["passed"] is False and doc["violations"][0]["graph"] == "g10"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["samples/bundles"], "samples/bundles: not a recording folder"),
        (["README.md"], "README.md: a file, not a recording folder"),
        (["no/such/place"], "no/such/place: no such file or folder"),
        (["samples/recordings/gpt-fast", "--max-eager-share", "nan"], "is not a number from 0"),
        (["samples/recordings/gpt-fast", "--max-pool-mib", "-1"], "is not a number from 0"),
        (["samples/recordings/gpt-fast", "--max-graphs", "-2"], "--max-graphs -2 is below 0"),
    ],
)
def test_bad_input_is_one_line(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(RECORDINGS.parent.parent)
    code, out, err = _run(args, capsys)
    assert code == 2 and out == [] and err.count("\n") == 1 and said in err, err


def test_a_loop_outgrowing_its_largest_graph_fails_on_the_stop_the_probes_saw_run_eagerly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """samples/recordings/outgrow: graphs for batches 1, 2 and 4 for 3 s, then batches of 5
    to 8 eagerly for 6 s. No graph launch opens a sampled window then; the probes did."""
    code, out, _ = _run([str(RECORDINGS / "outgrow")], capsys)
    assert code == 1
    (stopped,) = [x for x in out if ": graphs-stopped: " in x]
    assert "graphs were launched 16,179 times until 4 s, then none in the last 6 s" in stopped
    assert "The program ran on eagerly: 7,929 kernels outside graphs in 281 ms" in stopped
    # The batches of the eager steps, sampled off the program's stack, and the graph that
    # would serve them: no guess at its memory.
    assert "eager steps' batches on the program's stack (samples): 5 (1), 6 (7), 7 (3), 8 (7)" in (
        stopped
    )
    assert "all larger than its largest graph, batch 4" in stopped
    assert "A graph for batch 8 would serve every sampled eager step" in stopped
    assert "its memory is known once captured" in stopped
    (rec,) = [r for r in load_recordings(RECORDINGS / "outgrow") if r.graphs]
    assert sorted(g["batch"] for g in rec.graphs) == [1, 2, 4]


def test_a_freed_input_block_under_a_live_graph_is_a_stale_pointer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """samples/recordings/freed-input: the program made its token buffer anew where it should
    have copied into it, and the old block went back to torch's allocator while the graph went
    on reading it (freed_input.py, recorded on an H100)."""
    code, out, _ = _run([str(RECORDINGS / "freed-input")], capsys)
    assert code == 1
    (stale,) = [x for x in out if ": stale-pointer: " in x]
    assert "g2 points into block 0x7f5dcffe2a00 (512 bytes)" in stale
    assert "it was freed" in stale and "nodes graph_1_node_2" in stale
    assert "the graph was replayed 17,900 times after, reading the old memory" in stale
    (rec,) = [r for r in load_recordings(RECORDINGS / "freed-input") if r.graphs]
    (entry,) = rec.stale_pointers
    assert entry["graph"] == rec.graphs[0]["id"] and entry["replays_since"] == 17_900


def test_compile_rerecord_names_the_moved_weight_and_the_mutating_line_and_no_stop(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """samples/recordings/compile-rerecord: the weight rebound under a compiled model, then a
    compiled function that mutates its input. Its graphs stop being launched while the next
    function compiles: the probes saw no kernel, so that is no fallback."""
    code, out, _ = _run([str(RECORDINGS / "compile-rerecord")], capsys)
    assert code == 1
    rules = [line.split(": ")[1] for line in out]
    assert rules == ["eager-share", "rerecord", "skips"]
    assert (
        "g10 was recorded again after g6 with the same input shapes at compile_rerecord.py:27 in "
        "forward: static input data pointer changed: arg0_1 moved 0x7fc48be00000 -> "
        "0x7fc48be41000 (compile_rerecord.py:28 in forward: return torch.relu(self.proj(x)) + x)"
    ) in out[1]
    assert (
        "mutated inputs (1 instances): compile_rerecord.py:32 in accumulate: total.add_(x)"
        in (out[2])
    )
    # what the skip cost, timed on the GPU: 5 eager calls, the first untimed
    assert out[2].endswith(
        "5 calls ran eagerly, 34.4 us of GPU time each (median of 4 timed), about 0.17 ms in all"
    )
    (rec,) = [r for r in load_recordings(RECORDINGS / "compile-rerecord") if r.graphs]
    found = coverage.stop(rec)
    assert found is not None and found.eager is False and found.probe_kernels == 0


def test_an_unchanged_input_breaks_only_the_rule_that_asks_and_is_a_diagnosis_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An index entry as the input observer writes it (capture/record/inputs.py): the opt-in
    rule names the graph, the block, its nodes and the replays sampled; the default rules do
    not ask it; inspect's notes tell it with what was checked."""
    from graphscope.analysis.lifecycle import notes

    entry = {
        "graph": "g2",
        "buffer": "block 0x7f5dcffe2a00 (32 bytes)",
        "address": 0x7F5DCFFE2A00,
        "bytes": 32,
        "nodes": ["graph_1_node_2"],
        "pointers": 1,
        "samples": 9,
        "first_replay": 1,
        "last_replay": 4_312,
        "first_s": 3.5,
        "last_s": 8.75,
    }
    checks = {"graphs": 1, "blocks": 2, "samples": 9, "graphs_unarmed": 0}
    run = _planted(tmp_path, "torch-buckets", {"unchanged_inputs": [entry], "input_checks": checks})
    code, out, _ = _run([str(run)], capsys)
    assert code == 0  # not a default rule
    code, out, _ = _run([str(run), "--no-unchanged-inputs"], capsys)
    assert code == 1 and len(out) == 1
    assert out[0].startswith(f"{run}: unchanged-input: pid 959 (torch_buckets.py): g2 points into ")
    assert (
        "block 0x7f5dcffe2a00 (32 bytes) (nodes graph_1_node_2): it held the same bytes before "
        "all 9 replays sampled, from replay 1 to 4,312 (5.2 s)"
    ) in out[0]
    assert out[0].endswith(
        "(5.2 s): if it is an input, nothing wrote it between replays (copy into it, "
        "x.copy_(new), not x = new)"
    )
    (rec,) = [r for r in load_recordings(run) if r.graphs]
    assert rec.unchanged_inputs == [entry] and rec.input_checks == checks
    (note,) = [n for n in notes(rec) if n.code == "unchanged-inputs"]
    assert note.severity == "info"
    assert note.title.startswith("1 buffer(s) that 1 graph(s) point into")
    assert note.details[-2].startswith("if one is an input the program means to feed")
    assert note.details[-1].startswith("checked: the small blocks")

    # a recording whose observer sampled nothing is not checked, not passed
    unarmed = _planted(tmp_path / "b", "torch-buckets", {"input_checks": {**checks, "blocks": 0}})
    code, out, _ = _run([str(unarmed), "--no-unchanged-inputs", "--json"], capsys)
    result = json.loads("\n".join(out))
    assert code == 0 and result["not_checked"] == [
        "unchanged inputs: pid 959 (torch_buckets.py): no graph input block was sampled"
    ]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"unchanged_inputs": {"graph": "g2"}}, "unchanged_inputs"),
        (
            {"unchanged_inputs": [{"graph": "g2", "buffer": "b", "address": -1, "samples": 2}]},
            "unchanged_inputs[0].address",
        ),
        (
            {"unchanged_inputs": [{"graph": "g2", "buffer": "b", "address": 1, "samples": "9"}]},
            "unchanged_inputs[0].samples",
        ),
        ({"input_checks": {"graphs": 1, "blocks": "2", "samples": 0}}, "input_checks.blocks"),
    ],
)
def test_an_unchanged_input_entry_of_the_wrong_type_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, object], field: str
) -> None:
    run = _planted(tmp_path, "torch-buckets", change)
    code, _, err = _run([str(run)], capsys)
    assert code != 0 and "Traceback" not in err
    assert f"{field}" in err and "recording.json" in err, err


def test_the_unfed_input_sample_names_the_token_buffer_and_the_embedding_that_reads_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """samples/recordings/unfed-input: the step bound its tokens anew each step while the
    captured buffer stayed held (unfed_input.py, recorded on an H100): the tokens' block, read
    by the embedding's gather, held the same bytes at every sampled replay; the position, which
    the step copies in, changed. So did the logits the graph writes (the same token at every
    position, in a decoder without positional encoding)."""
    import graphscope

    path = RECORDINGS / "unfed-input"
    (rec,) = [r for r in load_recordings(path) if r.graphs]
    (graph,) = rec.graphs
    assert rec.input_checks == {"graphs": 1, "blocks": 3, "samples": 9, "graphs_unarmed": 0}
    tokens, logits = rec.unchanged_inputs
    G = graphscope.load(rec.bundle_path(graph))
    assert [G.nodes[n]["short_name"] for n in tokens["nodes"]] == [
        "indexSelectSmallIndex<Half, long, unsigned int>"
    ]
    assert G.nodes[tokens["nodes"][0]]["attribution"]["module"] == "embed"
    assert tokens["bytes"] == 512 and tokens["samples"] == 9
    assert (tokens["first_replay"], tokens["last_replay"]) == (21, 21_302)
    assert tokens["last_replay"] <= graph["replays"] == 23_455
    assert logits["bytes"] == 4 * 1024 * 2  # batch 4 x vocab 1024, float16
    assert rec.stale_pointers == []  # nothing was freed
    code, out, _ = _run([str(path)], capsys)
    assert code == 0  # the default rules do not ask
    code, out, _ = _run([str(path), "--no-unchanged-inputs"], capsys)
    assert code == 1 and len(out) == 1
    assert (
        "unchanged-input: pid 1190 (unfed_input.py): g2 points into block 0x7f5caffe2a00 "
        "(512 bytes) (nodes graph_1_node_2): it held the same bytes before all 9 replays sampled, "
        "from replay 21 to 21,302 (4.5 s)"
    ) in out[0]
    assert "(4.5 s) (and 1 more): if it is an input, nothing wrote it" in out[0]
