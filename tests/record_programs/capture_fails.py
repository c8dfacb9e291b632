"""A capture that fails: a layer reads a value back to the CPU inside the captured region.

A user's program, with nothing of graphscope in it. Each MLP of a small model scales its
activations by their largest value, read with ``.item()``: a copy to the CPU and a
synchronize, which a stream capture may not hold. The capture fails; torch raises as the
capture ends, far from the line that did it. The program says so and runs its steps eagerly;
then it keeps the scale on the GPU, and the same model captures and replays.
Prints one JSON line.

    python tests/record_programs/capture_fails.py --steps 50
"""

from __future__ import annotations

import argparse
import json

import torch
from torch import nn


class ScaledMLP(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.scale_on_gpu = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.up(x))
        # The fault: .item() reads the scale back inside the capture. Kept on the GPU, it works.
        scale = h.abs().amax() if self.scale_on_gpu else h.abs().max().item()
        return self.down(h / (scale + 1e-6))


class Model(nn.Module):
    def __init__(self, dim: int, layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(ScaledMLP(dim) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = x + layer(x)
        return x


def capture(model: Model, x: torch.Tensor) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up off the default stream, as torch asks
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = model(x)
    return graph, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=256)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Model(args.dim, args.layers).cuda().eval()
    x = torch.randn(8, args.dim, device="cuda")
    failed = None
    with torch.no_grad():
        try:
            capture(model, x)
        except RuntimeError as exc:  # as an engine would: fall back to eager
            failed = str(exc).strip().splitlines()[0]
        for _ in range(args.steps):
            model(x)
        for layer in model.layers:
            layer.scale_on_gpu = True
        graph, _ = capture(model, x)
        for _ in range(args.steps):
            graph.replay()
    torch.cuda.synchronize()
    print(json.dumps({"capture_failed": failed, "eager_steps": args.steps, "replays": args.steps}))


if __name__ == "__main__":
    main()
