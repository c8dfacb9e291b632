"""Where a module tree's parameters are: the C walk (capture/_modulewalk.c) and its Python twin
(pointers.tree_spans) give one answer, on stand-ins for torch's modules and tensors.

The walk reads only what every ``nn.Module`` holds (``_parameters``, ``_buffers``,
``_modules``) and what every tensor answers (``is_cuda``, ``data_ptr()``, ``nbytes``), so
stand-ins with those serve without torch; tests/capture/test_gpu_record.py checks it against
``named_parameters()`` on a real model.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from graphscope.capture import pointers


class Tensor:
    def __init__(self, start: int, nbytes: int, cuda: bool = True) -> None:
        self.start, self.nbytes, self.is_cuda = start, nbytes, cuda

    def data_ptr(self) -> int:
        return self.start


class Module:
    def __init__(
        self,
        parameters: dict[str, Any] | None = None,
        buffers: dict[str, Any] | None = None,
        children: dict[str, Any] | None = None,
    ) -> None:
        self._parameters = parameters or {}
        self._buffers = buffers or {}
        self._modules = children or {}


def _model() -> tuple[Module, Module]:
    """A model as torch.compile wraps it: a shared layer, a tied weight, a CPU buffer, empty
    slots, and a module with neither parameters nor buffers."""
    tied = Tensor(0x1000, 256)
    shared = Module({"weight": Tensor(0x2000, 64)})
    layers = Module(
        children={
            "0": Module(
                {"weight": Tensor(0x3000, 128), "bias": None}, {"cache": Tensor(0x4000, 32)}
            ),
            "1": shared,
            "2": shared,  # the same module twice: walked once, under its first name
            "3": None,
            "4": Module(),
        }
    )
    inner = Module(
        {"embed": tied},
        {"steps": Tensor(0x10, 8, cuda=False)},
        {"layers": layers, "head": Module({"weight": tied})},  # tied: named once
    )
    return Module(children={"_orig_mod": inner}), layers


WANT = [
    (0x1000, 0x1100, "embed"),
    (0x3000, 0x3080, "layers.0.weight"),
    (0x4000, 0x4020, "layers.0.cache"),
    (0x2000, 0x2040, "layers.1.weight"),
]


@pytest.fixture(params=["C", "Python"])
def walker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "C":
        if pointers._native_walk() is None:
            pytest.skip("capture/_modulewalk.c was not built by this install (setup.py)")
    else:
        monkeypatch.setattr(pointers, "_native_walk", lambda: None)
    return str(request.param)


def test_each_tensor_once_in_named_modules_order_without_compile_levels(walker: str) -> None:
    model, layers = _model()
    spans, modules = pointers.tree_spans(model)
    assert spans == WANT
    inner = model._modules["_orig_mod"]
    assert id(model) in modules and id(inner) in modules and id(layers) in modules
    assert len(modules) == 7  # wrapper, model, layers, 0, the shared 1, 4, head; no None


def test_cpu_tensors_are_kept_when_asked(walker: str) -> None:
    model, _ = _model()
    spans, _ = pointers.tree_spans(model, cuda_only=False)
    assert (0x10, 0x18, "steps") in spans and len(spans) == len(WANT) + 1


def test_inner_trees_are_left_to_their_outer_tree_and_several_are_prefixed(walker: str) -> None:
    model, layers = _model()
    draft = Module({"w": Tensor(0x9000, 16)})
    trees = pointers.parameter_spans([layers, model, draft, model])
    assert trees == [("Module.", model, WANT), ("Module#2.", draft, [(0x9000, 0x9010, "w")])]
    (region, *_) = pointers.regions_of([(prefix, spans) for prefix, _, spans in trees])
    assert (region.start, region.end, region.name) == (0x1000, 0x1100, "param:Module.embed")
    alone = [
        (0x3000, 0x3080, "0.weight"),
        (0x4000, 0x4020, "0.cache"),
        (0x2000, 0x2040, "1.weight"),
    ]
    assert pointers.parameter_spans([layers]) == [("", layers, alone)]  # alone, the tree


def test_a_tensor_that_raises_is_raised_to_the_caller(walker: str) -> None:
    class Gone(Tensor):
        def data_ptr(self) -> int:
            raise RuntimeError("storage freed")

    with pytest.raises(RuntimeError, match="storage freed"):
        pointers.tree_spans(Module({"w": Gone(1, 1)}))
    with pytest.raises((TypeError, AttributeError)):
        pointers.tree_spans(object())


@pytest.mark.gpu
def test_a_real_model_walks_as_named_parameters_lists_it(walker: str) -> None:
    """On the GPU: torch's own tree (a tied weight, a compiled wrapper, non-persistent
    buffers, a CPU buffer) gives what named_parameters() and named_buffers() give."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "record_programs"))
    from torch_buckets import Decoder

    model = Decoder(512, 64, 4, 3, 2, 32).cuda()
    model.lm_head.weight = model.embed.weight
    model.register_buffer("steps", torch.zeros(1))  # stays on the CPU: left out
    compiled = torch.compile(model)  # walked without running: only its wrapper is wanted
    want = [
        (t.data_ptr(), t.data_ptr() + t.nbytes, name)
        for name, t in [*model.named_parameters(), *model.named_buffers()]
        if t.is_cuda
    ]
    spans, modules = pointers.tree_spans(compiled)
    assert sorted(spans) == sorted(want) and len(spans) == len(want)
    assert modules == {id(compiled)} | {id(m) for m in model.modules()}
