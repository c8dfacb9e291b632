"""torch.compile(mode="reduce-overhead") recording again on a moved weight, and skipping CUDA
graphs on a mutated input.

A user's program, with nothing of graphscope in it. A small model is compiled and stepped;
then its weight is rebound to new memory (``param.data = new``), as some weight reloads do.
torch's CUDA graph trees find the static input at a new address and record the function
again, saying why only in a debug log. A second compiled function adds into a tensor it is
given (a mutated input): torch runs it without CUDA graphs. Prints one JSON line.

    python tests/record_programs/compile_rerecord.py --steps 5
"""

from __future__ import annotations

import argparse
import json

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(x)) + x


def accumulate(total: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    total.add_(x)  # a mutated input: no CUDA graph for this function
    return total * 2


def steps(step: object, x: torch.Tensor, count: int) -> torch.Tensor:
    y = x
    for _ in range(count):
        y = step(x)  # type: ignore[operator]
    return y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--dim", type=int, default=256)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Model(args.dim).cuda()
    step = torch.compile(model, mode="reduce-overhead")
    x = torch.randn(4, args.dim, device="cuda")
    with torch.no_grad():
        steps(step, x, args.steps)
        model.proj.weight.data = torch.randn_like(model.proj.weight)  # the weight moves
        after = steps(step, x, args.steps)
        matches = torch.allclose(after, model(x), atol=1e-3, rtol=1e-3)
        add = torch.compile(accumulate, mode="reduce-overhead")
        total = torch.zeros_like(x)
        for _ in range(args.steps):
            add(total, x)
    torch.cuda.synchronize()
    print(json.dumps({"steps": args.steps, "graph_follows_the_new_weight": bool(matches)}))


if __name__ == "__main__":
    main()
