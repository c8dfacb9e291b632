"""``graphscope record``'s watch of the processes a program starts (graphscope/descendants.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from record_cli import not_recorded, run_record

from graphscope.descendants import Watch

HOOK = {"GRAPHSCOPE_RECORD_OUT": "/runs/rec", "PYTHONPATH": "/gs/capture/bootstrap"}
HOOKED = {"GRAPHSCOPE_RECORD_OUT": "/runs/rec", "PYTHONPATH": "/gs/capture/bootstrap:/srv/lib"}
LIBCUDA = "7f00-7f10 r-xp 0 08:01 12 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04\n"


def _process(
    proc: Path,
    pid: int,
    ppid: int,
    exe: str,
    maps: str = "",
    argv: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> None:
    folder = proc / str(pid)
    folder.mkdir()
    # comm may hold spaces and parentheses: the parent is read after the last ")".
    (folder / "stat").write_text(f"{pid} (odd (name) x) S {ppid} {pid} 0 0\n")
    (folder / "comm").write_text(Path(exe).name[:15] + "\n")
    (folder / "exe").symlink_to(exe)
    (folder / "maps").write_text(maps)
    (folder / "cmdline").write_bytes(b"\0".join(a.encode() for a in (exe, *argv)) + b"\0")
    env = HOOKED if env is None else env
    (folder / "environ").write_bytes(b"".join(f"{k}={v}\0".encode() for k, v in env.items()))


def test_a_native_descendant_that_loads_libcuda_is_named(tmp_path: Path) -> None:
    libcuda = LIBCUDA
    _process(tmp_path, 1, 0, "/sbin/init")
    _process(tmp_path, 100, 1, "/usr/bin/python3.12", maps=libcuda)  # the program
    _process(tmp_path, 101, 100, "/opt/srv/llama-server", maps=libcuda)  # its server
    _process(tmp_path, 102, 100, "/usr/bin/sh")  # no CUDA
    _process(tmp_path, 103, 102, "/opt/bin/trt-worker")  # loads the driver later
    _process(tmp_path, 200, 1, "/opt/other/gpu-app", maps=libcuda)  # not the program's
    (tmp_path / "self").mkdir()  # entries that are no process are skipped
    watch = Watch(100, proc=tmp_path)
    watch.poll()
    assert sorted(watch.seen) == [100, 101, 102, 103]
    (tmp_path / "103" / "maps").write_text(libcuda)
    watch.poll()
    missed = watch.stop()
    assert [(s.pid, s.name) for s in missed] == [(101, "llama-server"), (103, "trt-worker")]
    assert "not a Python process" in missed[0].why_unrecorded()
    assert watch.seen[100].python and not watch.seen[102].cuda


def test_orphans_stay_the_program_s_and_a_pid_used_again_is_a_new_process(
    tmp_path: Path,
) -> None:
    _process(tmp_path, 100, 1, "/usr/bin/python3.12")  # the program
    _process(tmp_path, 101, 100, "/opt/srv/llama-server", maps=LIBCUDA)
    _process(tmp_path, 102, 100, "/usr/bin/sh")
    _process(tmp_path, 103, 102, "/opt/bin/daemon")
    _process(tmp_path, 200, 1, "/opt/other/gpu-app", maps=LIBCUDA)  # not the program's
    watch = Watch(100, proc=tmp_path)
    watch.poll()
    assert sorted(watch.seen) == [100, 101, 102, 103]
    # The shell exits and its daemon is handed to init: still the program's, and checked.
    shutil.rmtree(tmp_path / "102")
    (tmp_path / "103" / "stat").write_text("103 (daemon) S 1 103 0 0\n")
    (tmp_path / "103" / "maps").write_text(LIBCUDA)
    # The server exits and its pid goes to a process of another program; pid 200 goes to
    # one of this program's.
    # (The old folder is kept aside until the new one is made: /proc never gives a new
    # process its predecessor's inode, where a disk's file system may.)
    (tmp_path / "101").rename(tmp_path / "gone-101")
    _process(tmp_path, 101, 1, "/usr/bin/top")
    (tmp_path / "200").rename(tmp_path / "gone-200")
    _process(tmp_path, 200, 100, "/opt/bin/trt-worker", maps=LIBCUDA)
    watch.poll()
    assert sorted(watch.seen) == [100, 103, 200]
    missed = [(s.pid, s.name) for s in watch.stop()]
    assert missed == [(101, "llama-server"), (103, "daemon"), (200, "trt-worker")]


def test_a_child_seen_before_its_exec_is_renamed_and_checked(tmp_path: Path) -> None:
    # Seen between fork and exec, a Python program's child still reads as Python; once it
    # has exec'd a native server that loads the driver, it must be named as unrecorded.
    libcuda = LIBCUDA
    _process(tmp_path, 100, 1, "/usr/bin/python3.12", maps=libcuda)
    _process(tmp_path, 101, 100, "/usr/bin/python3.12")  # forked, not yet exec'd
    watch = Watch(100, proc=tmp_path)
    watch.poll()
    assert watch.seen[101].python
    (tmp_path / "101" / "exe").unlink()
    (tmp_path / "101" / "exe").symlink_to("/opt/srv/llama-server")
    (tmp_path / "101" / "maps").write_text(libcuda)
    watch.poll()
    assert [(s.pid, s.name) for s in watch.stop()] == [(101, "llama-server")]


def test_a_python_process_started_without_the_hook_is_named(tmp_path: Path) -> None:
    python = "/usr/bin/python3.12"
    _process(tmp_path, 100, 1, python, maps=LIBCUDA, argv=("serve.py",))  # the program
    _process(tmp_path, 101, 100, python, LIBCUDA, ("-m", "w"), env={"PATH": "/bin"})
    _process(tmp_path, 102, 100, python, LIBCUDA, ("-u", "-Is", "w.py"))
    _process(tmp_path, 103, 100, python, LIBCUDA, ("-X", "dev", "-E", "w.py"))
    _process(tmp_path, 104, 100, python, LIBCUDA, ("-S", "-c", "import torch"))
    _process(tmp_path, 105, 100, python, LIBCUDA, ("-c", "x", "-I"))  # -I is the script's
    _process(tmp_path, 106, 100, python, LIBCUDA, ("-W", "error", "w.py"))
    _process(tmp_path, 107, 100, python, env={"PATH": "/bin"})  # no CUDA: nothing to say
    _process(tmp_path, 108, 100, python, LIBCUDA, env={"PYTHONPATH": "/srv/lib", **HOOK})
    watch = Watch(100, proc=tmp_path, hook=HOOK)
    watch.poll()
    missed = {s.pid: s.why_unrecorded() for s in watch.stop()}
    assert sorted(missed) == [101, 102, 103, 104]
    assert "lacks graphscope record's GRAPHSCOPE_RECORD_OUT" in missed[101]
    assert "pass os.environ on to it" in missed[101]
    assert "started with -I" in missed[102]
    assert "started with -E" in missed[103]
    assert "started with -S" in missed[104]
    assert all("start-up hook could not run in it" in why for why in missed.values())
    # Without a hook to check, Python processes are taken to run it, as before.
    plain = Watch(100, proc=tmp_path)
    plain.poll()
    assert plain.stop() == []


def test_a_python_process_whose_start_cannot_be_read_is_not_blamed(tmp_path: Path) -> None:
    _process(tmp_path, 100, 1, "/usr/bin/python3.12", maps=LIBCUDA, env={})
    (tmp_path / "100" / "environ").unlink()  # another user's process
    watch = Watch(100, proc=tmp_path, hook=HOOK)
    watch.poll()
    assert watch.stop() == [] and watch.seen[100].hookless is None


@pytest.mark.skipif(not Path("/proc/self/environ").is_file(), reason="needs Linux's /proc")
def test_a_real_python_child_without_the_hook_is_told_apart(tmp_path: Path) -> None:
    # Two real Python children: one with the hook's variables, one started with an
    # environment of its own. Neither loads CUDA here; what the watch notes of each is checked.
    hook = {"GRAPHSCOPE_RECORD_OUT": str(tmp_path), "PYTHONPATH": str(tmp_path / "bootstrap")}
    code = "import subprocess, sys, time; time.sleep(30)"
    env = {**os.environ, **hook}
    with_hook = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)
    own_env = {"PATH": os.environ.get("PATH", "/usr/bin")}
    without = subprocess.Popen([sys.executable, "-c", code], env=own_env, start_new_session=True)
    try:
        for child, hookless in ((with_hook, False), (without, True)):
            watch = Watch(child.pid, hook=hook)
            watch.poll()
            seen = watch.seen[child.pid]
            assert seen.python, seen
            assert (seen.hookless is not None) == hookless, seen
    finally:
        for child in (with_hook, without):
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs Linux's /proc")
def test_the_real_process_table_is_read(tmp_path: Path) -> None:
    # A shell that starts a child: both are seen as the program's, neither loaded CUDA.
    # The sleep outlives any wait below: on a loaded machine (CI beside other jobs) a 2-s
    # sleep once ended before the watch's first look. Its process group is ended at the end.
    child = subprocess.Popen(["sh", "-c", "sleep 30 & wait"], start_new_session=True)
    try:
        watch = Watch(child.pid, poll_s=0.05).start()
        deadline = time.monotonic() + 5
        # Two processes, and the child past its exec: a look between the shell's fork and
        # the exec sees a second "dash" (or "sh"), which a later look must rename.
        while time.monotonic() < deadline:
            names = {s.name for s in list(watch.seen.values())}
            if len(watch.seen) >= 2 and "sleep" in names:
                break
            time.sleep(0.05)
        assert watch.stop() == []
        names = {s.name for s in watch.seen.values()}
        assert "sleep" in names, names
        assert all(not s.python for s in watch.seen.values())
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()


_STARTS_PROCESSES_THE_HOOK_CANNOT_REACH = """
import os, subprocess, sys
fake, out = sys.argv[1], sys.argv[2]
# Each child maps a library named libcuda.so.1 (a copy of ctypes' own) and outlives a few
# of the watch's once-a-second looks, on a loaded machine too.
loads = f"import ctypes, os, sys, time; ctypes.CDLL({fake!r}); time.sleep(4)"
own_env = {"PATH": os.environ.get("PATH", "/usr/bin")}
# The third leaves a process folder, so it was recorded, whatever the watch thought of it.
left = loads + f"; os.mkdir(os.path.join({out!r}, 'pid' + str(os.getpid())))"
children = [
    subprocess.Popen([sys.executable, "-c", loads], env=own_env),
    subprocess.Popen([sys.executable, "-I", "-c", loads]),
    subprocess.Popen([sys.executable, "-c", left], env=own_env),
]
assert [child.wait() for child in children] == [0, 0, 0]
"""


@pytest.mark.skipif(not Path("/proc/self/environ").is_file(), reason="needs Linux's /proc")
def test_record_names_the_python_processes_its_hook_could_not_reach(tmp_path: Path) -> None:
    import _ctypes

    library = getattr(_ctypes, "__file__", None)
    if library is None:
        pytest.skip("this Python's ctypes is built in: no shared library to stand in")
    fake = tmp_path / "lib" / "libcuda.so.1"
    fake.parent.mkdir()
    shutil.copy(library, fake)
    out = tmp_path / "rec"
    program = [sys.executable, "-c", _STARTS_PROCESSES_THE_HOOK_CANNOT_REACH, str(fake), str(out)]
    done = run_record(out, program)
    assert done.returncode == 0, done.stderr[-4000:]
    said = not_recorded(done.stderr)
    assert len(said) == 2, done.stderr[-4000:]
    assert sum("environment lacks graphscope record's" in why for why in said) == 1, said
    assert sum("started with -I" in why for why in said) == 1, said
    entries = json.loads((out / "run.json").read_text())["unrecorded_processes"]
    assert [e["why"] for e in entries] == said


def test_record_warns_before_running_a_python_that_cannot_run_the_hook(tmp_path: Path) -> None:
    done = run_record(tmp_path / "rec", [sys.executable, "-u", "-I", "-c", "print('ran')"])
    assert done.returncode == 0 and done.stdout == "ran\n", done.stderr
    warned = [line for line in done.stderr.splitlines() if "warning:" in line]
    assert len(warned) == 1 and "is run with -I, isolated mode" in warned[0], done.stderr
    quiet = run_record(tmp_path / "rec2", [sys.executable, "-u", "-c", "import sys"])
    assert quiet.returncode == 0 and "warning:" not in quiet.stderr, quiet.stderr
