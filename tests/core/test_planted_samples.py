"""Issue 28's planted faults as an H100 captured them (samples/bundles/planted): what
`graphscope report` says of each, with no GPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import graphscope
from graphscope.analysis.findings import findings
from graphscope.cli import main

PLANTED = Path(__file__).resolve().parents[2] / "samples" / "bundles" / "planted"
MANIFEST = [json.loads(line) for line in (PLANTED / "manifest.jsonl").read_text().splitlines()]


def _line(fault: str) -> int:
    """The line marked ``# planted`` in tests/gpu_models.py. The samples were captured from
    that file as it is: a change that moves the line needs the samples captured again."""
    import gpu_models

    return gpu_models.planted_line(fault)


def _report(fault: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["report", str(PLANTED / f"gpu_models-{fault}-b1.json.gz")]) == 0
    return capsys.readouterr().out


def test_every_planted_sample_is_in_its_manifest_as_our_capture_wrote_it() -> None:
    names = {m["model"].split(":")[1] for m in MANIFEST}
    assert names == {"python_scalar", "rng_offset", "feeds_by_rebinding", "reads_freed", "clean"}
    for entry in MANIFEST:
        assert entry["command"].startswith("graphscope capture --model gpu_models:")
        assert (PLANTED / entry["file"]).exists() and (PLANTED / entry["dot"]).exists()
        G = graphscope.load(PLANTED / entry["file"])
        assert set(G) == set(graphscope.load(PLANTED / entry["dot"]))


@pytest.mark.parametrize(
    ("fault", "op", "code", "said"),
    [
        # a Python counter scaled the output: 10 in the graph, 8 captured a step later
        ("python_scalar", "aten::mul", "frozen-value", "1092616192 (as a float 10) in the graph"),
        # the RNG offset passed by value: 640 frozen, 512 a step later
        ("rng_offset", "aten::add", "frozen-value", "is 1142947840 (as a float 640) in the graph"),
        ("feeds_by_rebinding", "aten::addmm", "rebound-input", "whose memory is free now"),
        ("reads_freed", "aten::add", "rebound-input", "whose memory is free now"),
    ],
)
def test_the_report_names_each_planted_fault_at_its_line(
    fault: str, op: str, code: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _line(fault)
    G = graphscope.load(PLANTED / f"gpu_models-{fault}-b1.json.gz")
    first = G.graph["numerics"]["first"]
    assert first["op"] == op and first["site"] == f"gpu_models.py:{line} in run"
    out = _report(fault, capsys)
    warnings = [x.strip() for x in out.splitlines() if x.strip().startswith("[warning]")]
    # the wrong result first, at the planted line; then what the capture froze
    assert warnings[0].startswith("[warning] values-differ: ") and f":{line} in run" in warnings[0]
    assert warnings[1].startswith(f"[warning] {code}: ")
    details = [x for x in out.splitlines() if x.strip().startswith(f"- {first['nodes'][0]} ")]
    assert any(said in x and f"gpu_models.py:{line}" in x for x in details), details
    found = {f.code for f in findings(G)}
    assert {"values-differ", code} <= found
    # the one-line verdict under the step's timing, and in inspect
    (values,) = [x.strip() for x in out.splitlines() if x.strip().startswith("values: ")]
    assert values.startswith("values: differ from eager's at the step after the capture's, ")
    assert f"first at {op}" in values and "kernel arguments: " in values


def test_the_clean_model_raises_no_alarm() -> None:
    G = graphscope.load(PLANTED / "gpu_models-clean-b1.json.gz")
    assert G.graph["numerics"]["first"] is None and G.graph["numerics"]["compared"] > 0
    assert G.graph["frozen"]["frozen"] == [] and G.graph["frozen"]["compared"] > 0
    codes = {f.code for f in findings(G)}
    assert not codes & {"values-differ", "frozen-value", "rebound-input", "cpu-bound-launch"}


def test_the_clean_model_reports_parity_by_value_in_report_and_inspect(
    capsys: pytest.CaptureFixture[str],
) -> None:
    G = graphscope.load(PLANTED / "gpu_models-clean-b1.json.gz")
    compared, launches = G.graph["numerics"]["compared"], G.graph["frozen"]["compared"]
    outputs = len(G.graph["numerics"]["outputs"])
    said = (
        f"values: equal to eager's at the step after the capture's ({compared:,} op outputs and "
        f"{outputs:,} step output(s) compared, each within its dtype's tolerance); kernel "
        f"arguments: none of {launches:,} launches takes another value when the step is "
        "captured one step later"
    )
    assert said in _report("clean", capsys)
    assert main(["inspect", str(PLANTED / "gpu_models-clean-b1.json.gz")]) == 0
    assert f"  {said}\n" in capsys.readouterr().out
    # a bundle captured without the comparison says nothing of values
    assert main(["report", str(PLANTED.parent / "tiny-llama-b1.json.gz")]) == 0
    assert "values:" not in capsys.readouterr().out


PARITY = PLANTED.parent / "parity"


@pytest.mark.parametrize(
    "name",
    [
        "tiny-llama-b1",
        "tiny-llama-b2",
        "tiny-llama-b4",
        "tiny-llama-b8",
        "tiny-gpt-b1",
        "tiny-gpt-parallel-b1",
    ],
)
def test_a_clean_model_captured_on_a_gpu_reports_parity_by_value(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """samples/bundles/parity: the bundled models captured again with the comparison (an H100,
    2026-12-07). None raises an alarm, and the report says what was compared and that it
    agreed. Batch 2 of both models raised false frozen-argument alarms in earlier runs."""
    manifest = [json.loads(x) for x in (PARITY / "manifest.jsonl").read_text().splitlines()]
    (entry,) = [m for m in manifest if m["file"] == f"{name}.json.gz"]
    assert entry["command"].startswith("graphscope capture --model tiny-")
    G = graphscope.load(PARITY / entry["file"])
    numerics, frozen = G.graph["numerics"], G.graph["frozen"]
    assert numerics["first"] is None and numerics["compared"] > 0
    assert not any(o["difference"] for o in numerics["outputs"])
    assert frozen["frozen"] == [] and frozen["compared"] == G.number_of_nodes() - sum(
        1 for _, d in G.nodes(data=True) if d.get("type") != "KERNEL"
    )
    codes = {f.code for f in findings(G)}
    assert not codes & {"values-differ", "frozen-value", "rebound-input", "values-not-compared"}
    assert main(["report", str(PARITY / entry["file"])]) == 0
    said = (
        f"  values: equal to eager's at the step after the capture's ({numerics['compared']:,} "
        f"op outputs and {len(numerics['outputs']):,} step output(s) compared"
    )
    assert said in capsys.readouterr().out
