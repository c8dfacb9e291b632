"""Two launches' kernel arguments compared word by word: what ``diff``'s update verdict counts
as changed and what capture's second capture calls frozen (``update``, ``numerics``).

An argument of at most 8 bytes is one word; a larger one (a struct: PyTorch's TensorInfo and
OffsetCalculator hold pointers and sizes side by side) is compared 8 bytes at a time, so that
a moved pointer is told from a changed size. A word is a pointer where either node's
``pointers`` names it (a word that points into known memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WordChange:
    """One argument word that differs between two launches."""

    arg: int  # the argument's index
    offset: int  # the word's byte offset within the argument
    before: str  # its bytes in the first launch, hex (little-endian, as the kernel reads it)
    after: str  # in the second
    pointer_before: dict[str, Any] | None  # the first node's ``pointers`` entry for the word
    pointer_after: dict[str, Any] | None

    @property
    def pointer(self) -> bool:
        return self.pointer_before is not None or self.pointer_after is not None


def words(value: str) -> list[tuple[int, str]]:
    """(byte offset, hex) of an argument's words (the module docstring)."""
    if len(value) <= 16:
        return [(0, value)]
    return [(at // 2, value[at : at + 16]) for at in range(0, len(value), 16)]


def _pointers(data: dict[str, Any]) -> dict[tuple[Any, Any], dict[str, Any]]:
    found = data.get("pointers")
    return {
        (p.get("arg"), p.get("offset")): p
        for p in (found if isinstance(found, list) else [])
        if isinstance(p, dict)
    }


def changed_words(a: dict[str, Any], b: dict[str, Any]) -> tuple[list[WordChange], bool]:
    """The words of node ``a``'s arguments that differ in node ``b``'s, and whether the two
    lists differ in shape (another number of arguments, or an argument of another size), where
    no word can be paired."""
    args_a, args_b = a.get("args"), b.get("args")
    if not isinstance(args_a, list) or not isinstance(args_b, list) or args_a == args_b:
        return [], False
    reshaped = len(args_a) != len(args_b)
    named_a, named_b = _pointers(a), _pointers(b)
    found = []
    for index, (x, y) in enumerate(zip(args_a, args_b, strict=False)):
        value_a = x.get("value") if isinstance(x, dict) else None
        value_b = y.get("value") if isinstance(y, dict) else None
        if not isinstance(value_a, str) or not isinstance(value_b, str) or value_a == value_b:
            continue
        if len(value_a) != len(value_b):
            reshaped = True
            continue
        after = dict(words(value_b))
        for offset, word in words(value_a):
            if after[offset] != word:
                found.append(
                    WordChange(
                        index,
                        offset,
                        word,
                        after[offset],
                        named_a.get((index, offset)),
                        named_b.get((index, offset)),
                    )
                )
    return found, reshaped
