"""The bucketed decode loop of ``torch_buckets.py``, run in a spawned worker process.

The parent never touches CUDA, as an engine's front end does (vLLM, SGLang): the model runs
in a process started with multiprocessing's ``spawn``. Arguments go to the worker.

    python tests/record_programs/spawn_worker.py --buckets 1 2 4 --steps 300
"""

from __future__ import annotations

import multiprocessing
import sys

import torch_buckets


def main() -> None:
    context = multiprocessing.get_context("spawn")
    worker = context.Process(target=torch_buckets.main, args=(sys.argv[1:],), name="model-worker")
    worker.start()
    worker.join()
    if worker.exitcode != 0:
        sys.exit(f"the worker exited with status {worker.exitcode}")


if __name__ == "__main__":
    main()
