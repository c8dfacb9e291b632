"""Telling why a capture failed (capture/failure.py), and dropping warm-up records; no GPU."""

from __future__ import annotations

import json
import json.decoder
import os

import pytest
from graphscope.capture import failure
from graphscope.capture.timing import _drop_first

# json plays the library here: frames inside it are never the user's line.
LIBRARY = (os.path.dirname(os.path.abspath(json.__file__)) + os.sep,)


class Layer:
    """Stands in for an nn.Module whose forward breaks inside a library call."""

    def forward(self, capture_error: bool) -> None:
        if capture_error:
            raise RuntimeError("operation not permitted when stream is capturing")
        json.loads("{")


def _raise_chain(capture_error: bool = False) -> BaseException:
    """The late error PyTorch raises at capture end, with the first error as its context."""
    try:
        try:
            Layer().forward(capture_error)
        except (RuntimeError, ValueError):
            raise RuntimeError("CUDA error: operation failed due to a previous error")  # noqa: B904
    except RuntimeError as late:
        return late
    raise AssertionError("unreachable")


def test_the_first_error_of_a_chain_is_the_cause() -> None:
    late = _raise_chain(capture_error=True)
    assert "previous error" in str(late)
    assert "not permitted" in str(failure.first_error(late))


def test_first_error_stops_on_a_cycle() -> None:
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__context__, b.__context__ = b, a
    assert failure.first_error(a) is b


def test_user_site_is_the_innermost_frame_outside_the_library() -> None:
    cause = failure.first_error(_raise_chain())
    frames = failure.frames_of(cause.__traceback__)
    site = failure.user_site(frames, LIBRARY)
    assert site.file == __file__ and site.function == "forward"
    assert site.code == 'json.loads("{")'
    assert failure.is_library(json.decoder.__file__, LIBRARY)
    assert not failure.is_library(__file__, LIBRARY)


def test_innermost_module_names_the_breaking_layer() -> None:
    cause = failure.first_error(_raise_chain())
    frames = failure.frames_of(cause.__traceback__)
    names = {Layer: "model.layers.3"}
    assert failure.innermost_module(frames, lambda m: names.get(type(m))) == "model.layers.3"
    assert failure.innermost_module(frames, lambda m: None) is None


def test_describe_is_one_line_with_op_module_line_and_advice() -> None:
    late = _raise_chain(capture_error=True)
    site = failure.FailureSite(
        op="aten::_local_scalar_dense",
        module="model.layers.3.mlp",
        file="/src/model.py",
        line=42,
        function="forward",
        code="if x.sum().item() > 0:",
    )
    text = failure.describe("my-model-b1", late, site)
    assert "\n" not in text
    assert text.startswith("capture of my-model-b1 failed at aten::_local_scalar_dense ")
    assert "in model.layers.3.mlp at /src/model.py:42 in forward: if x.sum().item()" in text
    assert "RuntimeError: operation not permitted when stream is capturing" in text
    assert ".item()" in text.split(";", 1)[1]  # the advice names what to move out


def test_root_module_and_unknown_places_read_as_words() -> None:
    assert failure.FailureSite(module="").where() == "in the model itself"
    assert failure.FailureSite().where() == "an unknown place"
    assert failure.FailureSite(module="").after_failed() == " in the model itself"
    assert failure.FailureSite(op="aten::mm").after_failed() == " at aten::mm"
    assert failure.FailureSite().after_failed() == ""


def test_hints_cover_the_capture_errors_met_on_the_gpu() -> None:
    cpu = RuntimeError("Cannot copy between CPU and CUDA tensors during CUDA graph capture")
    assert "CPU memory" in (failure.hint(cpu) or "")
    assert failure.hint(ValueError("shapes do not match")) is None


def test_warm_up_records_are_dropped_per_node_not_by_position() -> None:
    # Two nodes; node 2's records arrive first and out of order; one record has no node.
    records = [{"graph_node_id": 2, "start": s} for s in (30, 10, 20)]
    records += [{"graph_node_id": 1, "start": s} for s in (5, 15, 25)]
    records.append({"graph_node_id": 0, "start": 1})
    kept = _drop_first(records, 1)
    assert sorted((r["graph_node_id"], r["start"]) for r in kept) == [
        (0, 1),
        (1, 15),
        (1, 25),
        (2, 20),
        (2, 30),
    ]


def test_a_factory_that_returns_no_step_is_told_so() -> None:
    from graphscope.capture import session

    from graphscope.errors import CaptureError

    def my_factory(batch: int) -> object:
        return {"run": None}

    with pytest.raises(CaptureError, match=r"my_factory returned dict, not a graphscope"):
        session._build_step(my_factory, 1)  # type: ignore[arg-type]
    assert session._stem(session._model_name(my_factory)).endswith("my_factory")
    assert session._stem("pkg.models:make") == "pkg-models-make"


def test_hf_models_are_named_by_their_folder_and_a_missing_folder_is_told(tmp_path) -> None:
    from graphscope.capture import models, session

    from graphscope.errors import CaptureError

    assert session._stem("hf:/models/Qwen3-0.6B") == "hf-Qwen3-0-6B"
    assert session._stem("hf:~/ckpt/my-llama/") == "hf-my-llama"
    factory = models.resolve(f"hf:{tmp_path}")
    assert models.resolve(f"hf:{tmp_path}") is factory  # loaded once for every batch size
    with pytest.raises(CaptureError, match=r"no config\.json there; --model hf:PATH takes"):
        factory(1)
    with pytest.raises(CaptureError, match=r"hf:PATH or package\.module:factory"):
        models.resolve("qwen3")


def test_compiled_modules_keep_the_paths_of_the_module_they_wrap() -> None:
    from graphscope.capture.attribution import module_path

    # torch.compile(model) is an OptimizedModule whose child _orig_mod is the model itself.
    assert module_path("_orig_mod") == ""
    assert module_path("_orig_mod.layers.0.mlp") == "layers.0.mlp"
    assert module_path("layers.3._orig_mod.attn") == "layers.3.attn"  # one compiled layer
    assert module_path("model.layers.1") == "model.layers.1"
    from graphscope.capture.attribution import module_names

    wrapper, model, layer = object(), object(), object()

    class Tree:  # stands for an OptimizedModule: named_modules() as torch gives it
        def named_modules(self) -> list[tuple[str, object]]:
            return [("", wrapper), ("_orig_mod", model), ("_orig_mod.layers.0", layer)]

    assert module_names(Tree()) == {id(wrapper): "", id(model): "", id(layer): "layers.0"}


def test_an_error_after_capture_names_its_phase_and_a_device_assert_says_the_context_is_lost():
    exc = RuntimeError("CUDA error: device-side assert triggered\nCUDA kernel errors might be")
    text = failure.phase_failed("m-b1", "timing the replays", exc, failure.FailureSite())
    assert text.startswith("m-b1: timing the replays failed: RuntimeError: CUDA error: device-")
    assert "past the end of its KV cache" in text and "context is lost" in text
    assert text.endswith("nothing was saved for m-b1") and "\n" not in text
    assert failure.is_cuda_error(exc) and not failure.is_cuda_error(ValueError("shape"))
    site = failure.FailureSite(file="model.py", line=3, function="forward", code="x = y @ z")
    text = failure.phase_failed("m-b1", "prefill (eager, traced)", ValueError("bad"), site)
    assert text == (
        "m-b1: prefill (eager, traced) failed at model.py:3 in forward: x = y @ z: "
        "ValueError: bad; nothing was saved for m-b1"
    )


class _Tensor:
    """Stands in for a state tensor: counts the restores copied into it."""

    def __init__(self) -> None:
        self.restores = 0

    def detach(self) -> _Tensor:
        return self

    def clone(self) -> _Tensor:
        return self

    def copy_(self, other: object) -> None:
        self.restores += 1


def test_replays_restore_the_state_within_its_capacity_and_reset_what_is_not_a_tensor() -> None:
    from graphscope.capture.timing import RESTORE_EVERY, State, timed_replays

    tensor, resets, since = _Tensor(), [], [0]

    def replay() -> None:
        since[0] += 1
        assert since[0] <= 7, "ran past the state's capacity"

    def reset() -> None:
        resets.append(1)
        since[0] = 0

    state = State([tensor], reset, capacity=7)
    _, cpu, _ = timed_replays(replay, lambda: None, state, 30, trace=False)
    assert len(cpu) == 30 and tensor.restores == len(resets) == 5  # 7 + 7 + 7 + 7 + 2
    assert State([], capacity=None).every == RESTORE_EVERY == State([], capacity=999).every
