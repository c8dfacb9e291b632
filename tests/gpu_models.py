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


# Planted faults for graph-against-eager (issue 28, part 5): each step runs eagerly as it
# should, and its graph computes something else from the step after its capture on. The line
# with ``# planted`` is the one a report must name; ``clean`` is the same model without a fault.


class _Planted:
    """A two-layer model over a static input, and the step's Python state."""

    def __init__(self, batch: int) -> None:
        import torch

        torch.manual_seed(0)
        self.torch = torch
        self.model = torch.nn.Sequential(
            torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 64)
        ).to("cuda")
        self.x = torch.randn(batch, 64, device="cuda")
        self.out = torch.empty(batch, 64, device="cuda")
        self.position = 7  # a Python counter, advanced each step
        self.fed = self.x  # the tensor a step reads: rebound by feeds_by_rebinding
        self.bias = torch.randn(64, device="cuda")

    def reset(self) -> None:
        self.position = 7
        self.fed = self.x
        self.bias = self.torch.ones(64, device="cuda")

    def step(self, run: Any, description: str) -> Step:
        return Step(
            run=run,
            inputs={"x": self.x},
            outputs={"out": self.out},
            model=self.model,
            description=description,
            reset=self.reset,
        )


def clean(batch: int) -> Step:
    p = _Planted(batch)

    def run() -> None:
        with p.torch.no_grad():
            p.out.copy_(p.model(p.x))

    return p.step(run, "planted: no fault")


def python_scalar(batch: int) -> Step:
    p = _Planted(batch)

    def run() -> None:
        with p.torch.no_grad():
            h = p.model(p.x)
            p.out.copy_(h * p.position)  # planted
        p.position += 1

    return p.step(run, "planted: a Python counter scaled the output, baked in at capture")


def rng_offset(batch: int) -> Step:
    p = _Planted(batch)
    torch = p.torch
    lanes = torch.arange(batch * 64, device="cuda", dtype=torch.float32).view(batch, 64)

    def run() -> None:
        with torch.no_grad():
            h = p.model(p.x)
            # A counter-based RNG whose offset is passed by value, as a Philox offset read on
            # the CPU at capture is (flashinfer-ai/flashinfer#2432)
            noise = torch.sin((lanes + p.position * lanes.numel()) * 12.9898)  # planted
            p.out.copy_(h + 0.1 * noise)
        p.position += 1

    return p.step(run, "planted: an RNG offset passed by value, frozen at capture")


def feeds_by_rebinding(batch: int) -> Step:
    p = _Planted(batch)

    def run() -> None:
        with p.torch.no_grad():
            h = p.model(p.fed)  # planted
            p.out.copy_(h)
        p.fed = p.torch.tanh(h)  # the next step's input: a new tensor, not a copy into p.x

    return p.step(run, "planted: the next input bound as a new tensor instead of copied in")


def reads_freed(batch: int) -> Step:
    p = _Planted(batch)
    p.reset()

    def run() -> None:
        with p.torch.no_grad():
            p.out.copy_(p.model(p.x) + p.bias)  # planted
        # a weight update that replaces the tensor: the old one is freed
        p.bias = p.bias * 2 + 1

    return p.step(run, "planted: a tensor the graph reads replaced, and freed, after capture")


def planted_line(factory: str) -> int:
    """The line marked ``# planted`` in ``factory``'s source."""
    import inspect

    lines, start = inspect.getsourcelines(globals()[factory])
    return next(start + i for i, text in enumerate(lines) if "# planted" in text)
