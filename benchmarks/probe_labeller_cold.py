"""Probe, no GPU: what the C labeller costs per node with the CPU's caches warm and cold.

During a capture CUDA's own code runs between two created nodes (about 14 us a node on the
H100) and leaves little of the labeller's data in the caches; on the GPU machine a label
costs several times what it costs in a warm loop (docs/RECORD.md). This calls the labeller's
CUPTI callback (``capture/_labeller.c``) as CUPTI would, from a leaf module's ``forward``
inside a 200-block model (the leaf in a "library" file, so that the walk climbs to the
user's frame as it does from ``torch.nn.Linear``), after touching ``--touch`` MiB of memory
each time. It times the callback alone, labelled and not (it then only hands the callback
on), alternately, and prints the medians' difference per label.

    python benchmarks/probe_labeller_cold.py --touch 0 4 16
    python benchmarks/probe_labeller_cold.py --labeller /path/to/another/_labeller.so

A stand-in for ``cuptiGetGraphNodeId`` is compiled with the C compiler that built the
labeller. Needs torch (CPU is enough) and numpy.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

STUB = """#include <stdint.h>
static uint64_t next;
int node_id(void *node, uint64_t *id) { *id = ++next; return 0; }
void forward(void *u, int d, uint32_t c, const void *p) { (void)u; (void)d; (void)c; (void)p; }
"""

LEAF = """import time
TIMES = []

def make(base):
    class Leaf(base):
        def __init__(self, fire, args, memory):
            super().__init__()
            self.fire, self.args, self.memory = fire, args, memory

        def forward(self, x):
            if self.memory.size:
                self.memory += 1  # what CUDA's code does to the caches between two nodes
            start = time.perf_counter_ns()
            self.fire(*self.args)
            TIMES.append(time.perf_counter_ns() - start)
            return x

    return Leaf
"""

DOMAIN, CBID = 3, 42


def _labeller(path: str | None) -> Any:
    if path is None:
        from graphscope.capture import _labeller  # type: ignore[attr-defined]

        return _labeller
    spec = importlib.util.spec_from_file_location("_labeller", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python extension")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--touch", type=int, nargs="*", default=[0, 4, 16], help="MiB")
    parser.add_argument("--labeller", help="another build of _labeller.c to measure")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()

    import numpy as np
    import torch
    from graphscope.capture.sites import Frames

    labeller = _labeller(args.labeller)
    work = Path(tempfile.mkdtemp(prefix="graphscope-labeller-"))
    (work / "stub.c").write_text(STUB)
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    subprocess.run(
        [compiler, "-O2", "-shared", "-fPIC", "-o", str(work / "stub.so"), str(work / "stub.c")],
        check=True,
    )
    stub = ctypes.CDLL(str(work / "stub.so"))
    address = labeller.install(
        ctypes.cast(stub.forward, ctypes.c_void_p).value,
        ctypes.cast(stub.node_id, ctypes.c_void_p).value,
        DOMAIN,
        CBID,
    )
    signature = (None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)
    fire = ctypes.CFUNCTYPE(*signature)(address)
    # CUpti_ResourceData -> its descriptor, a CUpti_GraphData whose third word is the node
    graph_data = (ctypes.c_uint64 * 4)(0, 0, 0xABC, 0)
    resource = (ctypes.c_uint64 * 4)(0, 0, ctypes.addressof(graph_data), 0)
    fire_args = (None, DOMAIN, CBID, ctypes.c_void_p(ctypes.addressof(resource)))

    library = work / "library"
    library.mkdir()
    (library / "leaf.py").write_text(LEAF)
    sys.path.insert(0, str(library))
    import leaf  # type: ignore[import-not-found]

    Leaf = leaf.make(torch.nn.Module)
    frames = Frames((str(library), str(Path(torch.__file__).parent)), lambda: ())

    class Block(torch.nn.Module):
        def __init__(self, memory: Any) -> None:
            super().__init__()
            self.a = Leaf(fire, fire_args, memory)
            self.b = Leaf(fire, fire_args, memory)

        def forward(self, x: Any) -> Any:
            return self.b(self.a(x))

    for mib in args.touch:
        memory = np.zeros(mib << 20, dtype=np.uint8)
        model = torch.nn.Sequential(*[Block(memory) for _ in range(200)])
        x = torch.zeros(1)

        def run(labelled: bool, model: Any = model, x: Any = x) -> list[int]:
            sink: list[Any] = []
            leaf.TIMES.clear()
            if labelled:
                labeller.start(sink, {}, torch.nn.Module, {}, frames.kind, lambda m, o: "m", print)
            model(x)
            if labelled:
                labeller.stop()
                assert len(sink) == 400 and sink[0][1] == "m" and sink[0][4], sink[:1]
            return list(leaf.TIMES)

        run(False), run(True)
        plain: list[int] = []
        labelled: list[int] = []
        for _ in range(args.rounds):
            plain += run(False)
            labelled += run(True)
        cost = (statistics.median(labelled) - statistics.median(plain)) / 1e3
        print(
            f"{args.labeller or 'installed labeller'}: {mib} MiB touched between labels: "
            f"{cost:.2f} us per label (the callback handed on: "
            f"{statistics.median(plain) / 1e3:.2f} us)",
            flush=True,
        )
        time.sleep(0)


if __name__ == "__main__":
    main()
