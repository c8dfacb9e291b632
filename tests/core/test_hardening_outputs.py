"""Issue 24, second round, what graphscope writes and the paths it is given: outputs bounded
against their input, special files never replaced, every OS refusal of a path one line,
names that name no file refused, paths with control characters printed escaped, and a
recording opened by its recording.json (graphscope/output.py, paths.py, sizes.py, errors.py).

Where the message's form is the point, the CLI runs as a user does (a child process): one line
on stderr, exit status 2, nothing else. Running as root, a folder the user cannot search is
tested in a forked child that drops to the nobody user; a mocked refusal covers the rest.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

import graphscope
from graphscope import paths, sizes
from graphscope.cli import check_serve_files, main
from graphscope.errors import InputError, printable
from graphscope.output import TMP_SUFFIX, write_atomic
from graphscope.recording import is_recording

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
BUNDLE = SAMPLES / "bundles" / "tiny-llama-b1.json.gz"
TRACE = SAMPLES / "traces" / "tiny-llama-b1.torch-trace.json.gz"
RECORDING = SAMPLES / "recordings" / "gpt-fast"
INDEX = RECORDING / "pid1355" / "recording.json"
BUCKETS = SAMPLES / "bundles" / "tiny-llama.buckets.json"
FORMATS = ["html", "perfetto", "model-explorer", "node-link"]
NOBODY = 65534


def _cli(*argv: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphscope.cli", *map(str, argv)],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        cwd=cwd,
    )


def _one_line(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The error line of a refused command: alone on stderr, nothing on stdout."""
    assert result.returncode == code, (result.returncode, result.stderr)
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("graphscope: error: ") and "Traceback" not in result.stderr
    return result.stderr


def _refused(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    """``main(argv)`` in this process: exit status 2 and one error line."""
    assert main([str(a) for a in argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("graphscope: error: ")
    return captured.err


def _temps(folder: Path) -> list[Path]:
    return sorted(folder.glob("*" + TMP_SUFFIX))


# ---------------------------------------------------------------------------------------------
# 3. Output amplification: measured before it is built, refused with the figure


def _shared(nodes: int, size: int) -> nx.DiGraph:
    """A valid graph whose nodes all hold one long string: what a bundle's shape constant
    reads back as."""
    big = "x" * size
    G = nx.DiGraph(schema_version=1, root_graph_ids=[0])
    for i in range(nodes):
        G.add_node(f"graph_0_node_{i}", graph_id=0, local_id=i, type="EMPTY", parent=None, note=big)
    return G


@pytest.fixture(scope="module")
def amplified(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real 212-node bundle whose attribution shares one 3 MB module path: a constant of
    its table, stored once; every writer writes it per node (about 600 MiB)."""
    G = graphscope.load(BUNDLE)
    module = "layer." * 500_000
    for _, data in G.nodes(data=True):
        data["attribution"] = {**data.get("attribution", {}), "module": module}
    path = tmp_path_factory.mktemp("amplified") / "shared.json.gz"
    graphscope.save(G, path)
    assert path.stat().st_size < 200_000
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["convert", "{in}", "{out}.dot"],
        *(["export", "{in}", "--format", fmt, "-o", "{out}.json"] for fmt in FORMATS),
    ],
    ids=["convert-dot", *FORMATS],
)
def test_an_output_that_repeats_a_shared_value_per_node_is_refused_with_its_size(
    amplified: Path, tmp_path: Path, argv: list[str]
) -> None:
    out = tmp_path / "out"
    words = [w.format(**{"in": amplified, "out": out}) for w in argv]
    err = _one_line(_cli(*words))
    written = Path(words[-1])
    assert f"{written}: " in err and re.search(r"would be about \d\.\d GiB|\d{3}\.\d MiB", err)
    assert "256.0 MiB" in err and (".json.gz bundle" in err or "graphscope serve" in err)
    assert not written.exists() and _temps(tmp_path) == []


def test_the_html_report_is_bounded_by_the_names_it_draws(tmp_path: Path) -> None:
    G = graphscope.load(BUNDLE)
    name = "k" * 400_000
    for _, data in G.nodes(data=True):
        data["short_name"] = name
    source = tmp_path / "long-names.json.gz"
    graphscope.save(G, source)  # the bundle stores the name once
    assert source.stat().st_size < 200_000
    err = _one_line(_cli("export", source, "--format", "html", "-o", tmp_path / "r.html"))
    assert "the HTML report would be about" in err and "graphscope serve" in err


def test_a_bundle_stores_a_long_value_many_nodes_share_once(tmp_path: Path) -> None:
    G = _shared(20_000, 5_000_000)  # 100 GB, written once per node
    keys = list(G)
    G.nodes[keys[7]]["note"] = "short"  # the field is no longer one constant for all
    G.nodes[keys[9]]["note"] = "y" * 10_000
    for name in ("g.json", "g.json.gz"):
        graphscope.save(G, tmp_path / name)
    assert (tmp_path / "g.json").stat().st_size < 6_000_000
    H = graphscope.load(tmp_path / "g.json")
    assert all(H.nodes[k]["note"] == G.nodes[k]["note"] for k in (keys[0], keys[7], keys[9]))
    assert len({id(d["note"]) for _, d in H.nodes(data=True)}) == 3


def test_a_value_repeated_where_a_bundle_cannot_share_it_is_refused(tmp_path: Path) -> None:
    G = _shared(2_000, 10)
    big = ["z" * 300_000]
    for _, data in G.nodes(data=True):
        data["args"] = big  # one list on every node: written per node in any format
    for name in ("g.json", "g.json.gz", "g.dot"):
        with pytest.raises(InputError, match=rf"{name}: the .* would be about 5\d\d\.\d MiB"):
            graphscope.save(G, tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_the_real_samples_are_all_within_the_limit() -> None:
    from graphscope import dotwrite, exports
    from graphscope.bundle import to_document

    for path in (SAMPLES / "large" / "hf-deep-llama-b1.json.gz", BUNDLE):
        G = graphscope.load(path)
        dot = sizes.measure(path, lambda e, G=G: dotwrite.measure(G, e), quoted=True).total
        written = len(dotwrite.dumps_dot(G).encode())
        assert written <= dot < sizes.LIMIT  # an estimate that errs high, under the limit
        for doc in (to_document(G), exports.node_link(G)):
            estimate = sizes.json_bytes(doc)
            assert len(json.dumps(doc, separators=(",", ":"))) <= estimate < sizes.LIMIT


def test_the_model_explorer_export_makes_one_text_of_a_value_nodes_share() -> None:
    from graphscope.exports import model_explorer_graph

    G = _shared(3, 10)
    shared = [{"blob": "b" * 1000}] * 3  # unhashable: its text was made once per node
    for _, data in G.nodes(data=True):
        data["blob"] = shared
    cells = [c for g in model_explorer_graph(G)["graphs"] for n in g["nodes"] for c in n["attrs"]]
    blobs = [c for c in cells if c["key"] == "blob"]
    assert len(blobs) == 3 and len({id(c) for c in blobs}) == 1


# ---------------------------------------------------------------------------------------------
# 4. Special files named as the output: written in place, never replaced


def test_a_fifo_with_a_reader_is_written_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    G = graphscope.load(BUNDLE)
    got = tmp_path / "got"
    with open(got, "wb") as sink:  # a file: a pipe back to this process would fill and block
        reader = subprocess.Popen(["cat", str(fifo)], stdout=sink)
    try:
        for _ in range(1000):  # until the reader has opened it: before, the save refuses
            try:
                graphscope.save(G, fifo)
                break
            except InputError as exc:
                assert "no process is reading" in str(exc)
                threading.Event().wait(0.01)
        assert reader.wait(timeout=60) == 0
    finally:
        reader.kill()
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and _temps(tmp_path) == []
    assert json.loads(got.read_bytes())["format"] == "graphscope-bundle"


def test_a_fifo_no_one_reads_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "out.trace.json"
    os.mkfifo(fifo)
    err = _one_line(_cli("export", BUNDLE, "--format", "perfetto", "-o", fifo))
    assert f"{fifo}: is a FIFO that no process is reading" in err
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and _temps(tmp_path) == []


@pytest.fixture
def null_clone(tmp_path: Path) -> Path:
    """A character device with /dev/null's numbers, made in the test's folder."""
    device = tmp_path / "null.json"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError as exc:
        pytest.skip(f"mknod refused: {exc.strerror}")
    return device


@pytest.mark.parametrize("fmt", FORMATS[:2] + FORMATS[3:])
def test_a_character_device_is_written_and_stays_one(
    null_clone: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(BUNDLE), "--format", fmt, "-o", str(null_clone)]) == 0
    assert stat.S_ISCHR(null_clone.lstat().st_mode)
    assert null_clone.stat().st_rdev == os.makedev(1, 3) and _temps(null_clone.parent) == []
    assert main(["convert", str(BUNDLE), str(null_clone)]) == 0
    assert stat.S_ISCHR(null_clone.lstat().st_mode)


def test_the_model_explorer_overlay_is_not_written_beside_a_device(
    null_clone: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(capsys, "export", BUNDLE, "--format", "model-explorer", "-o", null_clone)
    assert "is a FIFO or a device" in err and "write to a file" in err
    assert sorted(p.name for p in null_clone.parent.iterdir()) == ["null.json"]


def test_a_symlink_to_a_device_writes_the_device(
    null_clone: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = null_clone.parent / "link.json"
    link.symlink_to(null_clone)
    assert main(["convert", str(BUNDLE), str(link)]) == 0
    assert link.is_symlink() and stat.S_ISCHR(null_clone.lstat().st_mode)


def test_a_block_device_and_a_socket_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sock = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock))
        assert "is a socket" in _refused(capsys, "convert", BUNDLE, sock)
    block = tmp_path / "disk.json"
    with contextlib.suppress(OSError):
        os.mknod(block, 0o600 | stat.S_IFBLK, os.makedev(7, 0))  # a loop device's numbers
        assert "is a block device" in _refused(capsys, "convert", BUNDLE, block)
        assert stat.S_ISBLK(block.lstat().st_mode)


def test_dev_stdout_writes_to_stdout_and_keeps_it_clean(tmp_path: Path) -> None:
    result = _cli("export", BUNDLE, "--format", "node-link", "-o", "/dev/stdout")
    assert result.returncode == 0 and result.stderr == ""
    assert json.loads(result.stdout)["directed"] is True  # no "wrote" line in it
    log = tmp_path / "log.json"
    log.write_text("kept\n")
    with open(log, "a") as fh:  # the shell's >>: appended to, not replaced
        code = subprocess.run(
            [sys.executable, "-m", "graphscope.cli", "export", str(BUNDLE), "--format",
             "perfetto", "-o", "/dev/stdout"],
            stdout=fh,
        ).returncode  # fmt: skip
    assert code == 0
    text = log.read_text()
    assert text.startswith("kept\n{") and json.loads(text[5:])["traceEvents"]


# ---------------------------------------------------------------------------------------------
# 5. Paths the OS refuses: one line naming the path, for every command


def _long(tmp_path: Path) -> Path:
    return tmp_path / ("n" * 300 + ".json.gz")


def test_a_name_over_255_bytes_is_one_line_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = _long(tmp_path)
    for argv in (
        ["inspect", long],
        ["report", long],
        ["diff", long, BUNDLE],
        ["buckets", long],
        ["convert", BUNDLE, long],
        ["export", BUNDLE, "--format", "node-link", "-o", long],
        ["import-trace", BUNDLE, TRACE, "-o", long],
        ["serve", long],
    ):
        err = _refused(capsys, *argv)
        assert f"{long}: a name in it is 308 bytes" in err and "255" in err, argv
    assert list(tmp_path.iterdir()) == []


def test_a_path_over_4096_bytes_is_one_line() -> None:
    deep = "/".join(["d" * 200] * 25) + "/g.json"
    err = _one_line(_cli("inspect", deep))
    assert "the path is 5031 bytes" in err and "4096" in err
    err = _one_line(_cli("convert", BUNDLE, deep))
    assert "the path is 5031 bytes" in err


def test_the_overlay_name_past_255_bytes_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / ("m" * 245 + ".json")  # 250 bytes: the overlay's name is 260
    err = _one_line(_cli("export", BUNDLE, "--format", "model-explorer", "-o", out))
    assert ".node-data.json: a name in it is 260 bytes" in err and "shorter -o" in err
    assert not out.exists()


def test_a_symlink_loop_is_one_line_as_input_and_refused_as_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop.name)
    for argv in (["inspect", loop], ["report", loop], ["diff", loop, loop], ["buckets", loop]):
        assert f"{loop}: is a symlink loop" in _refused(capsys, *argv)
    for argv in (
        ["convert", BUNDLE, loop],
        ["export", BUNDLE, "--format", "perfetto", "-o", loop],
        ["import-trace", BUNDLE, TRACE, "-o", loop],
    ):
        assert f"{loop}: is a symlink loop" in _refused(capsys, *argv)
        assert loop.is_symlink() and os.readlink(loop) == loop.name


@pytest.mark.parametrize("code", [errno.EACCES, errno.ENAMETOOLONG, errno.ELOOP, errno.EIO])
def test_any_refusal_of_a_lookup_is_one_line(
    code: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refused(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if str(path).startswith("/refused"):
            raise OSError(code, os.strerror(code), str(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    real = os.stat
    monkeypatch.setattr(os, "stat", refused)
    monkeypatch.setattr(os, "lstat", refused)
    for argv in (
        ["inspect", "/refused/g.json"],
        ["report", "/refused/rec"],
        ["diff", "/refused/a", str(BUNDLE)],
        ["buckets", "/refused/b"],
        ["convert", str(BUNDLE), "/refused/g.json"],
        ["export", str(BUNDLE), "--format", "html", "-o", "/refused/r.html"],
    ):
        assert "graphscope: error: /refused/" in _refused(capsys, *argv), argv
    with pytest.raises(InputError, match=r"^/refused/x: "):
        check_serve_files(["/refused/x"])


@contextlib.contextmanager
def _world_folder() -> Iterator[Path]:
    """A folder outside pytest's (which only root may enter), that anyone may search."""
    folder = Path(tempfile.mkdtemp(prefix="graphscope-nobody-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for child in folder.rglob("*"):
            with contextlib.suppress(OSError):
                child.chmod(0o755)
        shutil.rmtree(folder)


def _as_nobody(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` in a forked child that has dropped to the nobody user: exit status,
    stdout, stderr (root is not refused a folder's search; nobody is)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing but main, then out
        code = 99
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False))
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False))
            code = main(argv)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(out_w)
    os.close(err_w)
    with open(out_r, "rb") as out, open(err_r, "rb") as err:
        said, wrong = out.read(), err.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), said.decode(), wrong.decode()


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="drops privileges: needs root")


@needs_root
def test_a_folder_the_user_cannot_search_or_write_is_one_line_for_every_command() -> None:
    with _world_folder() as base:
        locked = base / "locked"
        (locked / "rec" / "pid1").mkdir(parents=True)
        shutil.copy(BUNDLE, locked / "g.json.gz")
        shutil.copy(INDEX, locked / "rec" / "pid1" / "recording.json")
        shutil.copy(BUCKETS, locked / "b.buckets.json")
        locked.chmod(0o000)
        for argv in (
            ["inspect", f"{locked}/g.json.gz"],
            ["inspect", f"{locked}/rec"],
            ["report", f"{locked}/rec/pid1/recording.json"],
            ["diff", f"{locked}/rec", f"{locked}/rec"],
            ["buckets", f"{locked}"],
            ["buckets", f"{locked}/b.buckets.json"],
            ["convert", str(BUNDLE), f"{locked}/out.json"],
            ["export", str(BUNDLE), "--format", "node-link", "-o", f"{locked}/out.json"],
            ["serve", f"{locked}/g.json.gz"],
        ):
            code, out, err = _as_nobody(argv)
            assert code == 2 and out == "" and err.count("\n") == 1, (argv, code, err)
            assert err.startswith(f"graphscope: error: {locked}"), (argv, err)
            assert "permission denied" in err, (argv, err)
        (base / "ro").mkdir()
        (base / "ro").chmod(0o555)  # searchable, not writable: the temporary file is refused
        code, out, err = _as_nobody(["convert", str(BUNDLE), f"{base}/ro/g.json"])
        assert code == 2 and out == "" and err.count("\n") == 1
        assert f"cannot write into {base}/ro: permission denied" in err
        assert list((base / "ro").iterdir()) == []


def test_paths_keep_absent_apart_from_refused(tmp_path: Path) -> None:
    assert paths.stat(tmp_path / "nothing") is None
    assert paths.stat(tmp_path / "nothing" / "deeper") is None
    (tmp_path / "file").write_text("x")
    assert paths.stat(tmp_path / "file" / "under") is None  # ENOTDIR: nothing there
    with pytest.raises(InputError, match="a name in it is 256 bytes"):
        paths.stat(tmp_path / ("a" * 256))
    with pytest.raises(InputError, match="NUL"):
        paths.stat("a\0b")


# ---------------------------------------------------------------------------------------------
# 6. -o that names no file: "", ".", "/", a trailing slash


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("out", ["", ".", "/", "..", "sub/", "out.json/"])
def test_an_output_that_names_no_file_is_one_line(
    fmt: str,
    out: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    err = _refused(capsys, "export", BUNDLE, "--format", fmt, "-o", out)
    assert "names a folder" in err or "no file named" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]


def test_the_other_writers_refuse_them_too(tmp_path: Path) -> None:
    err = _one_line(_cli("convert", BUNDLE, ""))
    assert err == 'graphscope: error: "": no file named: name a file\n'
    out = tmp_path / "out.json"
    err = _one_line(_cli("convert", BUNDLE, f"{out}/"))
    assert f"{out}/: ends in a slash" in err and not out.exists()
    err = _one_line(_cli("import-trace", BUNDLE, TRACE, "-o", f"{tmp_path}/"))
    assert "ends in a slash" in err
    with pytest.raises(InputError, match="names a folder"):
        write_atomic(tmp_path / "..", b"x")


# ---------------------------------------------------------------------------------------------
# 9. Control characters and lone surrogates in paths: escaped in every line printed


def test_printable_escapes_what_would_break_a_line() -> None:
    assert printable("plain name é.json") == "plain name é.json"
    assert printable("a\nb\rc\x1b[31m\x85\u2028\u202e\udcff") == (
        "a\\nb\\rc\\x1b[31m\\x85\\u2028\\u202e\\udcff"
    )
    assert printable(printable("a\nb")) == "a\\nb"
    assert str(InputError("x\ny", "bad\nthing")) == "x\\ny: bad\\nthing"


def test_a_control_character_in_a_path_stays_on_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "a\nb\x1b[2Jc.json"
    err = _one_line(_cli("inspect", bad))
    assert "a\\nb\\x1b[2Jc.json: no such file" in err and "\x1b" not in err
    raw = os.fsencode(tmp_path) + b"/caf\xe9.json"  # not UTF-8: a lone surrogate in Python
    err = _one_line(_cli("report", os.fsdecode(raw)))
    assert "caf\\udce9.json" in err


def test_success_lines_show_the_path_escaped(tmp_path: Path) -> None:
    out = tmp_path / "new\nline\x07.json"
    result = _cli("convert", BUNDLE, out)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.count("\n") == 1 and "new\\nline\\x07.json" in result.stdout
    assert out.exists()
    trace = tmp_path / "trace\x1b[1m.json"
    result = _cli("export", BUNDLE, "--format", "perfetto", "-o", trace)
    assert result.stdout == f"wrote {printable(str(trace))}\n" and "\x1b" not in result.stdout
    result = _cli("inspect", out)
    assert result.returncode == 0 and "\x07" not in result.stdout
    assert result.stdout.startswith(printable(str(out)))


# ---------------------------------------------------------------------------------------------
# 13. A recording by its recording.json; a trailing slash; a symlink loop as -o


def test_a_recording_opens_by_its_recording_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert is_recording(INDEX)
    assert main(["inspect", str(INDEX)]) == 0
    assert "graphscope recording, 1 process" in capsys.readouterr().out
    assert main(["report", str(INDEX)]) == 0
    assert "the life of each graph" in capsys.readouterr().out
    assert main(["diff", str(INDEX), str(INDEX.parent)]) == 0
    assert "graphs paired" in capsys.readouterr().out
    check_serve_files([str(INDEX)])


def test_a_trailing_slash_or_a_loop_as_output_is_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("mine")
    err = _one_line(_cli("convert", BUNDLE, f"{target}/"))
    assert "ends in a slash" in err and target.read_text() == "mine"
    loop = tmp_path / "loop.json.gz"
    loop.symlink_to("loop.json.gz")
    err = _one_line(_cli("convert", BUNDLE, loop))
    assert f"{loop}: is a symlink loop" in err
    assert loop.is_symlink() and os.readlink(loop) == "loop.json.gz" and _temps(tmp_path) == []
