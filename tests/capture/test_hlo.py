"""XLA's kernels named by their HLO op and line: the dump request and the dump's reader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from graphscope.capture.record.process import BOOTSTRAP
from graphscope.capture.record.state import process_folder_name

from graphscope import hlo

_SHOW = "import json, os; print(json.dumps([os.getpid(), os.environ.get('XLA_FLAGS')]))"


def _started(out: Path, env: dict[str, str], code: str = _SHOW) -> tuple[int, str | None]:
    """A Python process started as ``graphscope record`` starts one: its pid and XLA_FLAGS."""
    full = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "RANK")}
    full.update(env)
    full["GRAPHSCOPE_RECORD_OUT"] = str(out)
    full["PYTHONPATH"] = os.pathsep.join([str(BOOTSTRAP), full.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, check=True
    )
    pid, flags = json.loads(done.stdout.strip().splitlines()[-1])
    return pid, flags


def test_each_recorded_process_asks_xla_for_its_optimized_hlo_in_its_own_folder(
    tmp_path: Path,
) -> None:
    pid, flags = _started(tmp_path, {"XLA_FLAGS": "--xla_gpu_autotune_level=0"})
    folder = tmp_path / f"pid{pid}" / "xla"
    assert flags == f"--xla_gpu_autotune_level=0 --xla_dump_to={folder} --xla_dump_hlo_as_text"
    assert hlo.dump_folder(flags) == folder
    # torchrun's workers: the folder the recorder names after the rank
    pid, flags = _started(tmp_path, {"RANK": "3"})
    assert flags is not None and hlo.dump_folder(flags) == tmp_path / f"rank3-pid{pid}" / "xla"
    rank = os.environ.get("RANK")
    try:
        os.environ["RANK"] = "3"
        assert process_folder_name(pid) == f"rank3-pid{pid}"
    finally:
        os.environ.pop("RANK") if rank is None else os.environ.update(RANK=rank)


def test_a_child_gets_its_own_folder_and_keeps_what_its_parent_program_set(
    tmp_path: Path,
) -> None:
    child = (
        "import os, subprocess, sys\n"
        "os.environ['XLA_FLAGS'] += ' --xla_gpu_enable_command_buffer='\n"
        f"print(subprocess.run([sys.executable, '-c', {_SHOW!r}], capture_output=True,"
        " text=True).stdout)"
    )
    pid, flags = _started(tmp_path, {}, child)
    assert flags is not None and flags.split() == [
        "--xla_gpu_enable_command_buffer=",
        f"--xla_dump_to={tmp_path / f'pid{pid}' / 'xla'}",
        "--xla_dump_hlo_as_text",
    ]


def test_a_program_that_dumps_already_is_left_alone(tmp_path: Path) -> None:
    own = f"--xla_dump_to={tmp_path / 'mine'} --xla_dump_hlo_as_proto"
    _, flags = _started(tmp_path / "rec", {"XLA_FLAGS": own})
    assert flags == own
    assert hlo.dump_folder(own) == tmp_path / "mine"
    assert hlo.dump_folder("--xla_dump_to=sponge") is None and hlo.dump_folder("") is None


def test_kernel_names_are_xla_s_sanitized_instruction_names() -> None:
    assert hlo.kernel_name("gemm_fusion_dot_general.8") == "gemm_fusion_dot_general_8"
    assert hlo.kernel_name("loop_add-fusion.1") == "loop_add_fusion_1"
    assert hlo.kernel_name("1x") == "_1x"


_MODULE = """HloModule jit_f, is_scheduled=true

%fused (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %t = f32[4]{0} tanh(%p), metadata={op_name="jit(f)/tanh" source_file="/a \\"b\\".py" \
source_line=3}
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT loop_tanh_fusion.2 = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused, \
metadata={op_type="tanh" op_name="jit(f)/jit(main)/tanh" stack_frame_id=2}
}

FileNames
1 "/app/model.py"
FunctionNames
1 "f"
FileLocations
1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=4 end_column=9}
2 {file_name_id=1 function_name_id=1 line=12 end_line=12 column=4 end_column=9}
StackFrames
1 {file_location_id=2 parent_frame_id=0}
2 {file_location_id=1 parent_frame_id=1}
"""


def test_the_reader_takes_either_form_of_xla_s_source_lines(tmp_path: Path) -> None:
    module = hlo.read_module(_MODULE)
    assert module.name == "jit_f"
    origins = module.origins
    assert origins["loop_tanh_fusion_2"] == {
        "module": "jit_f",
        "instruction": "loop_tanh_fusion.2",
        "op": "jit(f)/jit(main)/tanh",
        "file": "/app/model.py",
        "line": 7,
    }
    assert origins["t"]["file"] == '/a "b".py' and origins["t"]["line"] == 3
    # the fused computation's tanh is no kernel of its own: one launch, the fusion
    assert [o["instruction"] for o in module.launches] == ["loop_tanh_fusion.2"]
    dump = tmp_path / "xla"
    dump.mkdir()
    folder = hlo.DumpFolder(dump)
    assert folder.update() == []
    path = dump / "module_0001.jit_f.sm_9.0_gpu_after_optimizations.txt"
    path.write_text(_MODULE.replace("jit_f", "jit_g", 1))
    (dump / "module_0001.jit_f.before_optimizations.txt").write_text("HloModule other")
    assert [m.name for m in folder.update()] == ["jit_g"]
    path.write_text(_MODULE + "\n")  # rewritten: read again
    assert [m.name for m in folder.update()] == ["jit_f"]


@pytest.mark.parametrize("text", ["", "not hlo at all", "HloModule m\n%a = f32[] add(, metadata={"])
def test_text_of_another_kind_gives_nothing_and_never_raises(text: str) -> None:
    module = hlo.read_module(text)
    assert module.launches == [] and all(o["op"] is None for o in module.origins.values())
    assert hlo.match_kernels(["add_1"], [module]) == [None]


JAX_DECODE = Path(__file__).resolve().parents[2] / "samples" / "recordings" / "jax-decode"


def test_each_launch_of_a_kernel_xla_reused_is_named_after_its_own_fusion() -> None:
    """jax_decode.py's eight layers are eight gemm fusions, .8 to .15; XLA compiled .9 once
    for .9 to .15, so seven nodes launch gemm_fusion_dot_general_9 (recorded on the H100)."""
    from graphscope.capture import grab

    import graphscope

    (folder,) = JAX_DECODE.glob("pid*")
    modules = hlo.DumpFolder(folder / "xla").update()
    G = graphscope.load(folder / "g2.dot")  # the dump: kernels, no attribution
    assert grab.attach_hlo(G, modules) == G.number_of_nodes() == 8
    nodes = sorted(G.nodes(data=True), key=lambda kd: kd[1]["local_id"])
    assert [d["name"] for _, d in nodes] == ["gemm_fusion_dot_general_8"] + [
        "gemm_fusion_dot_general_9"
    ] * 7
    assert [d["attribution"]["hlo"]["instruction"] for _, d in nodes] == [
        f"gemm_fusion_dot_general.{n}" for n in range(8, 16)
    ]
    for _, data in nodes:
        label = data["attribution"]
        assert label["hlo"]["module"] == "jit_step" and label["op"] == "jit(step)/dot_general"
        # the line of jax_decode.py that makes each layer: x = jnp.tanh(x @ w + b)
        assert label["file"].endswith("jax_decode.py") and label["line"] == 21
    assert grab.attach_hlo(G, modules) == 0  # labelled nodes keep their label


def test_the_recorded_bundle_carries_each_launch_s_own_fusion() -> None:
    """What ``graphscope record`` wrote (re-recorded once the matcher went in order) says the
    same as the dump read again above."""
    import graphscope

    (folder,) = JAX_DECODE.glob("pid*")
    G = graphscope.load(folder / "g2.json.gz")
    nodes = sorted(G.nodes(data=True), key=lambda kd: kd[1]["local_id"])
    assert [d["attribution"]["hlo"]["instruction"] for _, d in nodes] == [
        f"gemm_fusion_dot_general.{n}" for n in range(8, 16)
    ]
