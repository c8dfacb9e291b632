"""What ``graphscope record``'s watch of the program's processes costs its own process (CPU).

    python benchmarks/bench_watch.py [--others 1000] [--ours 10] [--looks 20]

``graphscope record`` looks at ``/proc`` once a second while the program runs
(``graphscope/descendants.py``), to name the processes of the program that used CUDA where
the recorder could not follow. This starts ``--others`` sleeping processes that are not the
program's and ``--ours`` that are (children of a stand-in program), then times the watch's
first look and its later ones, in milliseconds: the later looks read only the processes new
since the last, and each of the program's processes that has not loaded the driver. It runs
in graphscope record's process, not the program's, and needs no GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphscope.descendants import Watch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--others", type=int, default=1000, help="processes not the program's")
    parser.add_argument("--ours", type=int, default=10, help="native processes of the program")
    parser.add_argument("--looks", type=int, default=20, help="later looks timed")
    args = parser.parse_args()
    others = [subprocess.Popen(["sleep", "600"]) for _ in range(args.others)]
    # The stand-in program: a shell whose children sleep (native, no CUDA).
    program = subprocess.Popen(
        ["sh", "-c", " ".join(["sleep 600 &"] * args.ours) + " wait"], start_new_session=True
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            watch = Watch(program.pid)
            watch.poll()
            names = [s.name for s in watch.seen.values()]
            if names.count("sleep") >= args.ours:  # every child past its exec
                break
            time.sleep(0.1)
        watch = Watch(program.pid)
        began = time.perf_counter()
        watch.poll()
        first_ms = (time.perf_counter() - began) * 1e3
        later = []
        for _ in range(args.looks):
            began = time.perf_counter()
            watch.poll()
            later.append((time.perf_counter() - began) * 1e3)
        later.sort()
        print(
            json.dumps(
                {
                    "processes_listed": sum(1 for e in os.listdir("/proc") if e.isdigit()),
                    "ours": len(watch.seen),
                    "first_look_ms": round(first_ms, 2),
                    "later_look_ms_median": round(later[len(later) // 2], 2),
                    "later_look_ms_max": round(later[-1], 2),
                }
            )
        )
    finally:
        os.killpg(program.pid, signal.SIGKILL)
        program.wait()
        for p in others:
            p.kill()
        for p in others:
            p.wait()


if __name__ == "__main__":
    main()
