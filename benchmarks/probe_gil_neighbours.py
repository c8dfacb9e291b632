"""Probe (CPU): what another thread of the process costs a thread running torch's small ops.

Torch's Python bindings release the GIL around each op, so a capturing thread gives the GIL
up thousands of times a capture and must take it back each time. This times a loop of small
CPU ops (the capturing thread's pattern, without a GPU) beside one other thread doing one of:

- ``none``: no other thread;
- ``wait``: waiting on an event, woken twice a second (the recorder's worker giving way);
- ``poll``: sleeping 1 ms at a time (the worker's give_way before the twelfth round);
- ``sample``: reading every thread's stack every 2 ms (``probe_capture_parts.py``'s sampler);
- ``busy``: running Python for 50 ms of every 200 ms (a build that did not give way);
- ``build``: a build-like job (the largest sample's JSON loaded and dumped, 300,000 dicts)
  run in a thread and joined *between* timings, the deep decoder timed after it: does the
  heap a build leaves behind slow what follows?

    python benchmarks/probe_gil_neighbours.py none wait poll sample busy    # needs torch
    python benchmarks/probe_gil_neighbours.py plain-decoder build

Prints each mode's times; RECORD.md's thirteenth round gives the figures measured.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "record_programs"))
SAMPLE = ROOT / "samples" / "large" / "hf-deep-llama-b1.json.gz"


def neighbour(mode: str, stop: threading.Event) -> Callable[[], None] | None:
    """The other thread's body for ``mode``."""
    woken = threading.Event()

    def wait() -> None:
        while not stop.is_set():
            woken.wait(0.5)

    def poll() -> None:
        while not stop.is_set():
            time.sleep(0.001)

    def sample() -> None:
        while not stop.is_set():
            time.sleep(0.002)
            threading.enumerate()
            sys._current_frames()

    def busy() -> None:
        while not stop.is_set():
            began = time.perf_counter()
            while time.perf_counter() - began < 0.05:
                sum(range(100))
            time.sleep(0.15)

    return {"none": None, "wait": wait, "poll": poll, "sample": sample, "busy": busy}[mode]


def small_ops(mode: str, repeats: int) -> list[float]:
    import torch

    torch.set_num_threads(1)
    x, w = torch.zeros(4, 256), torch.zeros(256, 256)

    def step() -> None:
        y = x
        for _ in range(2000):
            y = torch.nn.functional.silu(y @ w)

    stop = threading.Event()
    body = neighbour(mode, stop)
    other = threading.Thread(target=body, daemon=True) if body is not None else None
    if other is not None:
        other.start()
    step()
    out = []
    for _ in range(repeats):
        began = time.perf_counter()
        step()
        out.append(round(time.perf_counter() - began, 4))
    stop.set()
    if other is not None:
        other.join()  # gone before the next mode is timed
    return out


def build_like(raw: bytes) -> None:
    document = json.loads(raw)
    text = json.dumps(document)
    rows = [{"a": i, "b": str(i)} for i in range(300_000)]
    del document, text, rows


def decoder(mode: str, repeats: int) -> list[float]:
    import torch
    from torch_buckets import deep_decoder

    torch.set_num_threads(1)
    model, tokens, pos = deep_decoder(400, device="cpu")
    with gzip.open(SAMPLE) as sample:
        raw = sample.read()
    out = []
    with torch.no_grad():
        for _ in range(3):
            model(tokens, pos)
        for _ in range(repeats):
            if mode == "build":
                job = threading.Thread(target=build_like, args=(raw,))
                job.start()
                job.join()
            for _ in range(3):
                model(tokens, pos)
            began = time.perf_counter()
            model(tokens, pos)
            out.append(round(time.perf_counter() - began, 4))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    modes = ["none", "wait", "poll", "sample", "busy", "plain-decoder", "build"]
    parser.add_argument("modes", nargs="+", choices=modes)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for mode in args.modes:
        if mode in ("plain-decoder", "build"):
            times = decoder(mode, args.repeats)
        else:
            times = small_ops(mode, args.repeats)
        print(f"{mode}: median {sorted(times)[len(times) // 2]} s, all {times}", flush=True)


if __name__ == "__main__":
    main()
