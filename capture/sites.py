"""What the Python stack says while CUDA works: the user's line, who captures, what torch holds.

These run inside CUPTI callbacks, once per created node while a graph is captured, so they
walk frames from the innermost outwards and stop at the first that answers, with per-file and
per-line caches: a whole-stack walk with a library check per frame cost more than PyTorch's
own capture of a node.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, TypedDict

# Who captured a graph, from the files on the stack (by path part), most specific first:
# Inductor's CUDA graph trees and the engines call torch.cuda.graph themselves.
_CAPTURERS = (
    ("/torch/_inductor/cudagraph_trees.py", "inductor"),
    ("/vllm/", "vllm"),
    ("/sglang/", "sglang"),
    ("/transformers/", "transformers"),
    ("/torch/cuda/graphs.py", "torch.cuda.graph"),
)
_INSTALLED = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
# Inductor's generated code names, above each kernel call, the graph nodes it fuses and
# their ATen ops ("# Topologically Sorted Source Nodes: [x, y], Original ATen: [aten.mm]").
_SOURCE_NODES = re.compile(
    r"#\s*(?:Topologically Sorted )?Source Nodes:\s*\[(.*?)\](?:,\s*Original ATen:\s*\[(.*?)\])?"
)
_LOOKBACK = 40  # lines searched upwards from a kernel call for that comment


class Site(TypedDict):
    """A line of Python code, as the recording stores a capture's."""

    file: str
    line: int
    function: str


class TensorInput(TypedDict):
    """One tensor argument of a captured function, as the recording stores it."""

    input: int  # its position among the arguments
    shape: list[int]
    dtype: str  # torch's name for it without the prefix: "float16"


class Frames:
    """Classifies frames as library (torch, CUDA, graphscope, Inductor's cache) or user code."""

    def __init__(
        self,
        library: tuple[str, ...],
        generated: Callable[[], tuple[str, ...]] = tuple,
    ) -> None:
        """``library``: folders and files never the user's; ``generated()``: Inductor's cache
        folders, library too, asked as frames are met (known once Inductor is imported)."""
        self._library = library
        self._generated = generated
        self._is_library: dict[str, bool] = {}
        self._is_generated: dict[str, bool] = {}
        self._compiled: dict[tuple[str, int], dict[str, str] | None] = {}

    def is_library(self, filename: str) -> bool:
        known = self._is_library.get(filename)
        if known is None:
            path = os.path.abspath(filename)
            known = filename.startswith("<") or path.startswith(self._library)
            known = known or self.is_generated(filename)
            self._is_library[filename] = known
        return known

    def is_generated(self, filename: str) -> bool:
        known = self._is_generated.get(filename)
        if known is None:
            generated = self._generated()
            known = bool(generated) and os.path.abspath(filename).startswith(generated)
            self._is_generated[filename] = known
        return known

    def user_frame(self, frame: FrameType | None) -> FrameType | None:
        """The innermost frame outside the library, or None."""
        return self.origin(frame)[0]

    def program_frame(self, frame: FrameType | None) -> FrameType | None:
        """The innermost frame of the program's own code: outside the library and outside
        installed packages (transformers' ``generate`` is where capture begins, the user's
        call of it is where the program asked for it)."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if not self.is_library(filename) and not any(p in filename for p in _INSTALLED):
                return frame
            frame = frame.f_back
        return None

    # What kind(filename) answers; the C labeller (_labeller.c) uses the same numbers.
    LIBRARY, USER, GENERATED = 0, 1, 2

    def kind(self, filename: str) -> int:
        """Whose a file is: ``USER``, ``GENERATED`` (Inductor's code) or other ``LIBRARY``."""
        if self.is_generated(filename):
            return self.GENERATED
        return self.LIBRARY if self.is_library(filename) else self.USER

    def origin(self, frame: FrameType | None) -> tuple[FrameType | None, FrameType | None]:
        """``(user, generated)``: the innermost frame outside the library, and the innermost
        frame of Inductor's generated code below it (the kernel call a node comes from)."""
        generated = None
        while frame is not None:
            filename = frame.f_code.co_filename
            if not self.is_library(filename):
                return frame, generated
            if generated is None and self.is_generated(filename):
                generated = frame
            frame = frame.f_back
        return None, generated

    def compiled_at(self, filename: str, line: int) -> dict[str, str] | None:
        """What Inductor's generated code says the kernel call at ``filename:line`` fuses."""
        key = (filename, line)
        if key not in self._compiled:
            self._compiled[key] = _source_nodes(filename, line)
        return self._compiled[key]


def _source_nodes(filename: str, line: int) -> dict[str, str] | None:
    for number in range(line, max(line - _LOOKBACK, 0), -1):
        text = linecache.getline(filename, number).strip()
        match = _SOURCE_NODES.search(text)
        if match:
            out = {"source_nodes": match.group(1).strip()}
            if match.group(2):
                out["aten"] = match.group(2).strip()
            return out if out["source_nodes"] or "aten" in out else None
        if number < line and text.startswith("def "):
            return None
    return None


def site(frame: FrameType | None) -> Site | None:
    """``{"file", "line", "function"}`` of a frame, or None."""
    if frame is None:
        return None
    return {
        "file": frame.f_code.co_filename,
        "line": frame.f_lineno,
        "function": frame.f_code.co_name,
    }


def capturer(frame: FrameType | None) -> str:
    """Who is capturing: the most specific known capturer with a frame on the stack."""
    found: set[str] = set()
    while frame is not None:
        filename = frame.f_code.co_filename.replace(os.sep, "/")
        for part, name in _CAPTURERS:
            if part in filename:
                found.add(name)
        frame = frame.f_back
    return next((name for _, name in _CAPTURERS if name in found), "stream capture")


def caller(depth: int = 1) -> FrameType | None:
    """The frame ``depth`` levels above the caller of this function."""
    try:
        return sys._getframe(depth + 1)
    except ValueError:
        return None


def find_local(frame: FrameType | None, name: str, test: Callable[[Any], bool]) -> Any:
    """The innermost local ``name`` for which ``test(value)`` holds, or None."""
    while frame is not None:
        if name in frame.f_code.co_varnames or name in frame.f_code.co_cellvars:
            value = frame.f_locals.get(name)
            if value is not None and test(value):
                return value
        frame = frame.f_back
    return None


def tensor_inputs(values: Any, static: set[int] | None = None) -> list[TensorInput]:
    """Index, shape and dtype of each tensor among ``values``, but the ``static`` ones.

    Static inputs (parameters and buffers, for torch.compile) keep their shapes from one
    graph to the next and can number thousands; only the others tell graphs apart.
    """
    out: list[TensorInput] = []
    for index, value in enumerate(values):
        shape = getattr(value, "shape", None)
        if shape is None or not hasattr(value, "dtype") or (static and index in static):
            continue
        out.append(
            {
                "input": index,
                "shape": [int(d) for d in shape],
                "dtype": str(value.dtype).removeprefix("torch."),
            }
        )
    return out


def batch_of(inputs: list[TensorInput]) -> int | None:
    """The batch size inputs' shapes say: dim 0 of the first input that has a dim."""
    for entry in inputs:
        if entry["shape"]:
            return int(entry["shape"][0])
    return None
