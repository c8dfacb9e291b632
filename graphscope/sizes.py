"""How large an output would be, estimated before it is built, and the most any writer writes.

A graph in memory can hold one object many times: a bundle stores a value that many nodes
share once (a shape's constant), and reading it gives every node the same string; a program
can put one list on every node. A writer that writes each node whole (DOT, node-link, the
exports) writes such a value once per node: a 98 KB bundle whose 20,000 rows share a 5 MB
constant becomes about 100 GB of DOT. So every writer measures what it would write first,
walking the values it would write and counting a shared one at each place it appears (each
distinct object is looked at once: the walk costs what the graph holds, not what it would
write), and refuses past ``LIMIT`` in one line with the figure and what to do instead.

The estimate errs high: a float counts as its longest form, a string that is not ASCII as if
each character took an escape (``\\u00e9``); only a short ASCII string is counted as if it
held nothing to escape. Long strings are measured exactly, once each.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

from .errors import InputError
from .pace import EVERY, paced

#: The most any writer writes, in bytes (of text, before gzip). Picked from measurement
#: (benchmarks/bench_output_sizes.py): the largest output of any file in samples/ is 54 MB
#: (the 10,780-node sample as DOT; its node-link export is 50 MB), and the 100,000-node
#: graph the benchmarks build writes 145 MiB of DOT. 256 MiB keeps all of them, with room
#: for the estimate's margin; it is half of what graphscope reads (contract.MAX_BYTES), so
#: a file it writes reads back; and building an output of that size takes about three times
#: it in memory (the text, its parts, its bytes), under a gigabyte.
LIMIT = 256 << 20
# Strings shorter than this are measured by their length; longer ones exactly, once each.
_SHORT = 64
# A string this long, met again, is one a writer that can store it once should: below it, a
# repeat costs less than a gather (a module path or a file name repeats in every graph).
_SHARED = 4096
# The longest JSON form of a float (-1.2345678901234567e-308) and of the constants.
_FLOAT = 24
_WORD = 5


# A container that only its parent holds can be reached through that parent alone, so it
# needs no memo entry: remembering every container took half the walk's time (0.5 s of 1.1 s
# for 100,000 nodes). In CPython, such a container, met in a loop, counts three references:
# its parent's, the loop variable's and getrefcount's own argument. Where more (or where
# there is no getrefcount), it is remembered.
_refs = getattr(sys, "getrefcount", lambda x: 1 << 30)
_ONE_OWNER = 3


class Estimate:
    """The JSON text size of values, each distinct object walked once.

    ``quoted``: the size once the JSON is put in a DOT string, as ``graphscope.dotwrite``
    does (each quote and backslash gains a backslash). A long string or a container met again
    is not walked again: the walk costs what the values hold, however often they are written.
    """

    def __init__(self, *, quoted: bool = False) -> None:
        self.quoted = quoted
        self.total = 0
        self._memo: dict[int, int] = {}  # id of a long string or a container -> its size
        self.repeated: set[int] = set()  # ids of strings of _SHARED chars met more than once
        self._plain = 4 if quoted else 2  # what a short plain string adds to its length
        self._rich = 7 if quoted else 6  # the most one character can become (\\u00e9)

    def add(self, value: Any, extra: int = 0) -> None:
        """Count ``value`` as written once more, and ``extra`` bytes around it (a container
        given here is walked again each time: it is what a writer writes, a node's data)."""
        kind = type(value)
        if kind is dict or kind is list:
            self.total += self._container(value, kind is dict) + extra
        else:
            self.total += self.size(value) + extra

    def add_each(self, values: list[Any], extra: int = 0) -> None:
        """``add`` each of ``values``, with ``extra`` bytes each."""
        for value in values:
            self.add(value, extra)

    def text(self, s: str, keep: bool = True) -> int:
        """``keep``: ``s`` lives as long as the walk (a temporary's id may come back)."""
        if len(s) < _SHORT:
            return len(s) + self._plain if s.isascii() else self._rich * len(s) + self._plain
        found = self._memo.get(id(s)) if keep else None
        if found is not None:
            if len(s) >= _SHARED:
                self.repeated.add(id(s))
        else:
            encoded = json.dumps(s)
            found = len(encoded)
            if self.quoted:
                found += encoded.count("\\") + encoded.count('"')
            if keep:
                self._memo[id(s)] = found
        return found

    def size(self, value: Any) -> int:
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is int:
            return int(value.bit_length()) * 31 // 100 + 2
        if kind is float:
            return _FLOAT
        if value is None or kind is bool:
            return _WORD
        if kind is not dict and kind is not list and kind is not tuple:
            return self._other(value)
        found = self._memo.get(id(value))
        if found is None:
            found = self._memo[id(value)] = self._container(value, kind is dict)
        return found

    def _container(self, value: Any, is_dict: bool) -> int:
        if is_dict:
            try:  # a graph's keys are short names, measured all at once
                n = sum(map(len, value))
                if not all(map(str.isascii, value)):
                    n *= self._rich
            except TypeError:  # a key that is no string: json.dumps writes str(key)
                n = sum(self.text(str(key), keep=False) for key in value)
            n += (2 + self._plain) * len(value) + 1  # quotes, colons, commas, braces
            items = value.values()
        else:
            n = 1 + len(value)  # brackets and commas
            items = value
        if len(value) > EVERY:  # a bundle's rows: the recorder's worker may pause in them
            items = paced(items)
        # The common leaves inline, without a call: most of a graph's values are these.
        plain, rich, memo = self._plain, self._rich, self._memo
        for x in items:
            kind = type(x)
            if kind is str:
                if len(x) >= _SHORT:
                    n += self.text(x)
                else:
                    n += len(x) + plain if x.isascii() else rich * len(x) + plain
            elif kind is float:
                n += _FLOAT
            elif kind is int:
                n += x.bit_length() * 31 // 100 + 2
            elif x is None or kind is bool:
                n += _WORD
            elif kind is dict or kind is list:
                if _refs(x) <= _ONE_OWNER:  # reached from here alone: walked only once
                    n += self._container(x, kind is dict)
                    continue
                found = memo.get(id(x))
                if found is None:
                    found = memo[id(x)] = self._container(x, kind is dict)
                n += found
            else:
                n += self.size(x)
        return n

    def _other(self, value: Any) -> int:
        """What json.dumps writes of a subclass (as its base), or of another object
        (``default=str``: its text)."""
        if isinstance(value, str):
            return self.text(str.__str__(value), keep=False)
        if value is None or isinstance(value, bool):
            return _WORD
        if isinstance(value, int):
            return int(value).bit_length() * 31 // 100 + 2
        if isinstance(value, float):
            return _FLOAT
        if isinstance(value, (dict, list, tuple)):
            return self._container(value, isinstance(value, dict))
        return self.text(str(value), keep=False)

    def refuse_past_limit(self, path: str | os.PathLike[str], what: str, instead: str) -> int:
        """The total, or one ``InputError`` line past ``LIMIT`` naming the file, the figure
        (``what`` it is) and what to do ``instead``."""
        if self.total > LIMIT:
            raise InputError(
                path,
                f"{what} would be about {human(self.total)}, more than the {human(LIMIT)} "
                f"graphscope writes: {instead}",
            )
        return self.total


def measure(
    path: str | os.PathLike[str], fill: Callable[[Estimate], Any], *, quoted: bool = False
) -> Estimate:
    """An ``Estimate`` that ``fill`` has given what a writer would write to ``path``."""
    estimate = Estimate(quoted=quoted)
    try:
        fill(estimate)
    except RecursionError:  # nested past Python's depth: json.dumps could not write it either
        raise InputError(path, "a value in the graph is nested too deep to write") from None
    return estimate


def check(
    path: str | os.PathLike[str],
    fill: Callable[[Estimate], Any],
    what: str,
    instead: str,
    *,
    quoted: bool = False,
) -> int:
    """``measure`` then ``refuse_past_limit``: the estimate, or one line past the limit."""
    return measure(path, fill, quoted=quoted).refuse_past_limit(path, what, instead)


def json_bytes(value: Any) -> int:
    """At most the size of ``json.dumps(value)``, measured without building it."""
    estimate = Estimate()
    estimate.add(value)
    return estimate.total


def human(n: float) -> str:
    """A size for people: 3.2 MiB, 93.1 GiB."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # the loop returns at GiB
