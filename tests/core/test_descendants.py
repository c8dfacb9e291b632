"""``graphscope record``'s watch of the processes a program starts (graphscope/descendants.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from graphscope.descendants import Watch


def _process(proc: Path, pid: int, ppid: int, exe: str, maps: str = "") -> None:
    folder = proc / str(pid)
    folder.mkdir()
    # comm may hold spaces and parentheses: the parent is read after the last ")".
    (folder / "stat").write_text(f"{pid} (odd (name) x) S {ppid} {pid} 0 0\n")
    (folder / "comm").write_text(Path(exe).name[:15] + "\n")
    (folder / "exe").symlink_to(exe)
    (folder / "maps").write_text(maps)


def test_a_native_descendant_that_loads_libcuda_is_named(tmp_path: Path) -> None:
    libcuda = "7f00-7f10 r-xp 0 08:01 12 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04\n"
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


def test_a_child_seen_before_its_exec_is_renamed_and_checked(tmp_path: Path) -> None:
    # Seen between fork and exec, a Python program's child still reads as Python; once it
    # has exec'd a native server that loads the driver, it must be named as unrecorded.
    libcuda = "7f00-7f10 r-xp 0 08:01 12 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04\n"
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
