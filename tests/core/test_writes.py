"""Every file graphscope writes: whole or not at all, never over the command's own input,
keeping an existing file's mode and symlink, with no temporary file left for ever, and every
failure one line (graphscope/output.py and the CLI's outputs)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import graphscope
from graphscope import output
from graphscope.cli import main
from graphscope.errors import InputError
from graphscope.output import TMP_SUFFIX, remove_stale, write_atomic

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
BUNDLE = SAMPLES / "bundles" / "tiny-llama-b1.json.gz"
TRACE = SAMPLES / "traces" / "tiny-llama-b1.torch-trace.json.gz"
DOT = SAMPLES / "dot" / "torch-ops" / "flags-verbose.dot"
UNTIMED = SAMPLES / "bundles" / "tiny-llama-b1.dot"  # a DOT dump: no replay times


def _temps(folder: Path) -> list[Path]:
    return sorted(folder.glob("*" + TMP_SUFFIX))


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("graphscope: error: "), err
    assert "Traceback" not in err
    return err


# Each command that writes a file, given its input files and its output path.
def _commands(out: Path) -> dict[str, list[str]]:
    return {
        "convert .json.gz": ["convert", str(BUNDLE), str(out)],
        "convert .dot": ["convert", str(BUNDLE), str(out)],
        "export perfetto": ["export", str(BUNDLE), "--format", "perfetto", "-o", str(out)],
        "export html": ["export", str(BUNDLE), "--format", "html", "-o", str(out)],
        "export node-link": ["export", str(BUNDLE), "--format", "node-link", "-o", str(out)],
        "export model-explorer": [
            "export",
            str(BUNDLE),
            "--format",
            "model-explorer",
            "-o",
            str(out),
            "--force",
        ],
        "import-trace": ["import-trace", str(BUNDLE), str(TRACE), "-o", str(out)],
    }


COMMANDS = list(_commands(Path("x")))


def _out_name(command: str) -> str:
    return "out.dot" if command.endswith(".dot") else "out.json.gz"


def test_a_save_that_fails_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "g.json"
    target.write_text("old")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(InputError, match=r"g\.json: cannot write it: no space left on device"):
        write_atomic(target, b"new")
    assert target.read_text() == "old" and _temps(tmp_path) == []

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, b"new")
    assert target.read_text() == "old" and _temps(tmp_path) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_every_output_keeps_the_mode_of_the_file_it_replaces(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / _out_name(command)
    out.write_text("old")
    out.chmod(0o600)
    assert main(_commands(out)[command]) == 0, capsys.readouterr().err
    assert out.read_bytes() != b"old"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert _temps(tmp_path) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_every_output_writes_through_a_symlink(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / _out_name(command)
    real.write_text("old")
    link = tmp_path / _out_name(command)
    link.symlink_to(real)
    assert main(_commands(link)[command]) == 0, capsys.readouterr().err
    assert link.is_symlink() and link.resolve() == real
    assert real.read_bytes() != b"old"
    assert _temps(tmp_path) == [] and _temps(real.parent) == []


def test_a_new_file_gets_the_mode_open_would_give_it(tmp_path: Path) -> None:
    path = write_atomic(tmp_path / "new.json", b"{}")
    plain = tmp_path / "plain.json"
    plain.write_bytes(b"{}")
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "target.json")
    write_atomic(link, b"{}")
    assert link.is_symlink() and (tmp_path / "target.json").read_bytes() == b"{}"


@pytest.mark.parametrize("command", COMMANDS)
def test_no_command_writes_over_its_own_input(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    words = _commands(tmp_path / "placeholder")[command]
    inputs = [Path(w) for w in words if w in (str(BUNDLE), str(TRACE))]
    for source in inputs:
        copy = tmp_path / source.name
        shutil.copy(source, copy)
        before = copy.read_bytes()
        args = [str(copy) if w == str(source) else w for w in words]
        # The input by its own path, through a symlink, and as a hard link.
        link = tmp_path / ("link-" + source.name)
        link.unlink(missing_ok=True)
        link.symlink_to(copy)
        hard = tmp_path / ("hard-" + source.name)
        hard.unlink(missing_ok=True)
        os.link(copy, hard)
        for out in (copy, link, hard):
            argv = [str(out) if w == str(tmp_path / "placeholder") else w for w in args]
            assert main(argv) == 2
            err = _one_error_line(capsys)
            assert "this command's input" in err and str(copy) in err
            assert copy.read_bytes() == before
        assert _temps(tmp_path) == []


def test_the_model_explorer_overlay_never_replaces_a_file_unasked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "g.json"
    beside = tmp_path / "g.node-data.json"
    beside.write_text("my notes")
    argv = ["export", str(BUNDLE), "--format", "model-explorer", "-o", str(out)]
    assert main(argv) == 2
    err = _one_error_line(capsys)
    assert str(beside) in err and "--force" in err
    assert beside.read_text() == "my notes" and not out.exists()  # nothing half done
    assert main([*argv, "--force"]) == 0
    assert str(beside) in capsys.readouterr().out  # the replaced file is named
    assert beside.read_text() != "my notes" and out.exists()
    # A graph with no replay times writes no overlay: nothing to refuse.
    beside.write_text("my notes")
    assert main(["export", str(UNTIMED), "--format", "model-explorer", "-o", str(out)]) == 0
    assert beside.read_text() == "my notes"


def test_the_overlay_is_not_written_over_the_input_either(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "g.node-data.json"
    shutil.copy(BUNDLE, source)  # a bundle whose name is the overlay's for -o g.json
    before = source.read_bytes()
    argv = ["export", str(source), "--format", "model-explorer", "-o", str(tmp_path / "g.json")]
    assert main([*argv, "--force"]) == 2
    assert "this command's input" in _one_error_line(capsys)
    assert source.read_bytes() == before


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_temporaries_are_removed_by_the_next_save(tmp_path: Path) -> None:
    target = tmp_path / "g.json"
    dead = tmp_path / f".g.json.{_dead_pid()}.abcdefgh{TMP_SUFFIX}"
    live = tmp_path / f".g.json.{os.getpid()}.ijklmnop{TMP_SUFFIX}"  # a save still running
    old = tmp_path / f".g.json.{os.getpid()}.qrstuvwx{TMP_SUFFIX}"
    other = tmp_path / f".g.json.gz.{_dead_pid()}.abcdefgh{TMP_SUFFIX}"  # another file's
    mine = tmp_path / ".g.json.notes.tmp"  # not a graphscope temporary
    for path in (dead, live, old, other, mine):
        path.write_bytes(b"x" * 1000)
    day_ago = time.time() - output.STALE_AFTER_S - 60
    os.utime(old, (day_ago, day_ago))
    write_atomic(target, b"{}")
    assert not dead.exists() and not old.exists()
    assert live.exists() and other.exists() and mine.exists()
    assert remove_stale(tmp_path / "g.json.gz") == [other]


def test_a_killed_save_leaves_a_temporary_that_the_next_save_removes(tmp_path: Path) -> None:
    target = tmp_path / "big.json"
    # A save stopped for good after writing its data, before the rename: then killed.
    script = textwrap.dedent(
        f"""
        import os, sys, time
        from graphscope.output import write_atomic
        def hang(fd):
            print("written", flush=True)
            time.sleep(60)
        os.fsync = hang
        write_atomic({str(target)!r}, b"x" * (1 << 20))
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "written\n"
        assert len(_temps(tmp_path)) == 1  # the killed save's file, a megabyte
    finally:
        child.kill()
        child.wait()
    assert len(_temps(tmp_path)) == 1 and not target.exists()
    graphscope.save(graphscope.load(BUNDLE), target)
    assert _temps(tmp_path) == [] and graphscope.load(target).number_of_nodes() == 212


@pytest.mark.parametrize("command", COMMANDS)
def test_writing_onto_a_folder_is_one_line(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / _out_name(command)
    folder.mkdir()
    assert main(_commands(folder)[command]) == 2
    assert "is a folder" in _one_error_line(capsys)
    assert folder.is_dir() and not any(folder.iterdir())


def test_writing_into_a_missing_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["convert", str(BUNDLE), str(tmp_path / "no" / "g.json")]) == 2
    assert "does not exist" in _one_error_line(capsys)


def test_a_folder_that_cannot_be_written_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Root writes into a read-only folder all the same, so the refusal is the file system's.
    def refused(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    assert main(["convert", str(BUNDLE), str(tmp_path / "g.json")]) == 2
    err = _one_error_line(capsys)
    assert f"cannot write into {tmp_path}: permission denied" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert main(["convert", str(BUNDLE), str(folder / "g.json")]) == 2
        assert "permission denied" in _one_error_line(capsys)
    finally:
        folder.chmod(0o755)
