"""Step factories for the gpu tests, loaded as ``--model gpu_models:NAME``.

Each ``breaks_*`` model runs eagerly but holds one op that cannot be captured; the line with
the marker comment ``# breaks capture`` is the one the failure report must name.
"""

from __future__ import annotations

from typing import Any

from graphscope.capture.models import Step


def _step(forward: Any) -> Step:
    import torch

    class Layer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(64, 64, device="cuda")

        def forward(self, x: Any) -> Any:
            return forward(self, x)

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = Layer()

        def forward(self, x: Any) -> Any:
            return self.layer(x)

    model = Model().eval()
    x = torch.ones(4, 64, device="cuda")
    out = torch.empty(4, 64, device="cuda")

    def run() -> None:
        with torch.no_grad():
            out.copy_(model(x))

    return Step(run=run, inputs={"x": x}, outputs={"out": out}, model=model)


def _item(self: Any, x: Any) -> Any:
    y = self.proj(x)
    scale = y.abs().max().item()  # breaks capture
    return y / scale


def _sync(self: Any, x: Any) -> Any:
    import torch

    y = self.proj(x)
    torch.cuda.synchronize()  # breaks capture
    return y


def _cpu_tensor(self: Any, x: Any) -> Any:
    import torch

    y = self.proj(x)
    return y + torch.tensor([1.0] * 64).to("cuda")  # breaks capture


def breaks_item(batch: int) -> Step:
    return _step(_item)


def breaks_sync(batch: int) -> Step:
    return _step(_sync)


def breaks_cpu_tensor(batch: int) -> Step:
    return _step(_cpu_tensor)


def breaking_line(factory: str) -> int:
    """The line number of the op that breaks ``factory``'s capture."""
    import inspect

    forward = {"breaks_item": _item, "breaks_sync": _sync, "breaks_cpu_tensor": _cpu_tensor}
    lines, start = inspect.getsourcelines(forward[factory])
    return next(start + i for i, text in enumerate(lines) if "# breaks capture" in text)


def compiled_parts(batch: int) -> tuple[Any, Any, Any]:
    """A small RMSNorm/SwiGLU stack run through ``torch.compile``: (compiled model, x, run)."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = torch.nn.RMSNorm(256)
            self.gate = torch.nn.Linear(256, 1024, bias=False)
            self.up = torch.nn.Linear(256, 1024, bias=False)
            self.down = torch.nn.Linear(1024, 256, bias=False)

        def forward(self, x: Any) -> Any:
            h = self.norm(x)
            return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))

    torch.manual_seed(0)
    model = torch.nn.Sequential(Block(), Block()).to("cuda", torch.float16).eval()
    compiled = torch.compile(model)
    x = torch.randn(batch, 256, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)

    def run() -> None:
        with torch.no_grad():
            out.copy_(compiled(x))

    return compiled, x, run


def compiled(batch: int) -> Step:
    model, x, run = compiled_parts(batch)
    return Step(run=run, inputs={"x": x}, model=model, description="torch.compile'd stack")
