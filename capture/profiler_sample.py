"""Record a PyTorch profiler (Kineto) Chrome trace of one eager step, for the trace importer.

    python -m graphscope.capture.profiler_sample --model tiny-llama --batch-size 1 --out DIR

Writes ``<model>-b<n>.torch-trace.json.gz`` (what ``torch.profiler`` exports, gzipped) and
a ``manifest.jsonl`` line saying how it was made. It runs in a process of its own: Kineto and
graphscope's CUPTI tracing cannot subscribe to CUPTI at once (DESIGN.md).
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
from pathlib import Path

from graphscope.io import write_atomic

from ._cuda import require
from .session import _build_step, _metadata, _stem


def record(model: str, batch_size: int, out: Path, warmup: int = 3) -> Path:
    """Prefill, warm the decode step up, then profile one step with CPU and CUDA activities."""
    torch = require("torch")
    step = _build_step(model, batch_size)
    with torch.no_grad():
        if step.prefill is not None:
            step.prefill()  # as graphscope capture does before decode
        state = [t.clone() for t in step.state()]
        for _ in range(warmup):
            step.run()
        for saved, live in zip(state, step.state(), strict=True):
            live.copy_(saved)
        torch.cuda.synchronize()
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities) as prof:
            step.run()
            torch.cuda.synchronize()
    out.mkdir(parents=True, exist_ok=True)
    name = f"{_stem(model)}-b{batch_size}.torch-trace.json.gz"
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(raw))
        write_atomic(out / name, gzip.compress(raw.read_bytes()))
    line = {"file": name, "model": model, "batch_size": batch_size, **_metadata(torch, None)}
    with open(out / "manifest.jsonl", "a") as fh:
        fh.write(json.dumps(line) + "\n")
    return out / name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-llama")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    print(record(args.model, args.batch_size, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
