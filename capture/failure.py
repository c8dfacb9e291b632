"""Why a capture failed, told as one line: the op, the module path and the user's source line.

Pure Python (no torch): the capture code passes in the exception and what the attribution
hooks saw. Errors raised while a stream captures mostly surface late, when PyTorch ends the
capture (``cudaErrorStreamCaptureInvalidated``); the first error, the one that names the cause,
is the innermost ``__context__`` of that exception.
"""

from __future__ import annotations

import functools
import linecache
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any

# What the messages of the errors met on the GPU machine mean (DESIGN.md), in the words a
# user can act on.
_HINTS = (
    (
        "Cannot copy between CPU and CUDA tensors",
        "it copies from CPU memory inside the step: create that tensor on the GPU before "
        "capture and update it in place, or pin it; where the op itself copies (met with "
        "aten::_grouped_mm, transformers' default MoE experts), that op cannot be captured: "
        "use another implementation",
    ),
    (
        "operation not permitted when stream is capturing",
        "it waits for the GPU or allocates outside the graph's pool (.item(), .tolist(), "
        ".cpu(), torch.cuda.synchronize(), printing a CUDA tensor, a Python branch on a GPU "
        "value, ops with data-dependent output shapes such as nonzero, or cudaMalloc): move it "
        "out of the step or keep the value on the GPU",
    ),
    (
        "cudaErrorStreamCaptureUnsupported",
        "it calls a CUDA function that cannot be captured (a host sync or an allocation "
        "outside the graph's pool): move it out of the step",
    ),
    (
        "cudaErrorStreamCaptureImplicit",
        "it uses the legacy default stream while another stream captures: run the work on "
        "the capturing stream",
    ),
)


@dataclass
class FailureSite:
    """Where in the user's model a capture broke."""

    op: str | None = None  # the aten op running when it broke ("aten::_local_scalar_dense")
    module: str | None = None  # named_modules() path of the innermost module running
    file: str | None = None  # the user's source file (innermost frame outside torch)
    line: int | None = None
    function: str | None = None
    code: str | None = None  # that source line's text

    def where(self) -> str:
        parts = []
        if self.op:
            parts.append(self.op)
        if self.module is not None:
            parts.append(f"in {self.module or 'the model itself'}")
        if self.file:
            at = f"at {self.file}:{self.line}"
            if self.function:
                at += f" in {self.function}"
            if self.code:
                at += f": {self.code}"
            parts.append(at)
        return " ".join(parts) or "an unknown place"

    def after_failed(self) -> str:
        """What follows "failed": " at aten::mm in layer at f.py:3 ...", " in layer ...", ""."""
        if self.op:
            return f" at {self.where()}"
        if self.module is not None or self.file:
            return f" {self.where()}"
        return ""


def first_error(exc: BaseException) -> BaseException:
    """The first error of a chain: the innermost ``__cause__`` or ``__context__``."""
    seen = {id(exc)}
    while True:
        inner = exc.__cause__ or exc.__context__
        if inner is None or id(inner) in seen:
            return exc
        seen.add(id(inner))
        exc = inner


def frames_of(tb: TracebackType | None) -> list[FrameType]:
    """The frames a traceback passed through, outermost first."""
    out = []
    while tb is not None:
        out.append(tb.tb_frame)
        tb = tb.tb_next
    return out


@functools.lru_cache(maxsize=4096)
def is_library(filename: str, skip: tuple[str, ...]) -> bool:
    """Whether a frame's file is, or lies in, one of the ``skip`` paths (torch, graphscope, ...).

    Cached: the attribution callback asks for every frame of the stack at every node.
    """
    path = os.path.abspath(filename)
    return filename.startswith("<") or any(path.startswith(d) for d in skip)


def user_site(frames: Iterable[FrameType], skip: Iterable[str]) -> FailureSite:
    """The innermost frame outside ``skip`` folders, as a FailureSite (op and module unset)."""
    skip = tuple(skip)
    chosen = None
    for frame in frames:
        if not is_library(frame.f_code.co_filename, skip):
            chosen = frame
    if chosen is None:
        return FailureSite()
    filename, line = chosen.f_code.co_filename, chosen.f_lineno
    return FailureSite(
        file=filename,
        line=line,
        function=chosen.f_code.co_name,
        code=linecache.getline(filename, line).strip() or None,
    )


def innermost_module(
    frames: Iterable[FrameType], name_of: Callable[[Any], str | None]
) -> str | None:
    """The path of the innermost frame whose ``self`` ``name_of`` knows, or None."""
    found = None
    for frame in frames:
        owner = frame.f_locals.get("self")
        if owner is not None:
            name = name_of(owner)
            if name is not None:
                found = name
    return found


def hint(exc: BaseException) -> str | None:
    text = f"{type(exc).__name__}: {exc}"
    for needle, advice in _HINTS:
        if needle in text:
            return advice
    return None


def _first_line(exc: BaseException) -> str:
    """The first line of an error's message (CUDA errors add lines of advice), or its type."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def is_cuda_error(exc: BaseException) -> bool:
    """Whether the GPU raised it (a CUDA error surfacing through torch), not Python code."""
    return type(exc).__name__ == "AcceleratorError" or "CUDA error" in str(exc)


def phase_failed(what: str, phase: str, exc: BaseException, site: FailureSite) -> str:
    """One line for an error after capture began: in the model's code, or on the GPU."""
    cause = first_error(exc)
    message = _first_line(cause)
    text = f"{what}: {phase} failed{site.after_failed()}: {type(cause).__name__}: {message}"
    if "device-side assert" in message:
        text += (
            "; a kernel of the step asserted on the GPU, most often an index out of bounds such "
            "as a step run past the end of its KV cache (give its Step a capacity, or a larger "
            "cache), and the CUDA context is lost: nothing more can run in this process"
        )
    elif (advice := hint(cause)) is not None:
        text += f"; {advice}"
    return text + f"; nothing was saved for {what}"


def describe(what: str, exc: BaseException, site: FailureSite) -> str:
    """One line: what failed, where, the first error, and what to do."""
    cause = first_error(exc)
    message = _first_line(cause)
    text = f"capture of {what} failed{site.after_failed()}: {type(cause).__name__}: {message}"
    advice = hint(cause)
    if advice:
        text += f"; {advice}"
    return text
