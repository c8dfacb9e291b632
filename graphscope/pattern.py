"""A person's search pattern, run in time linear in the text searched, whatever the pattern.

Python's ``re`` backtracks: ``(\\w+)+!`` against one 60-character kernel name runs for hours,
and as ``re`` holds the GIL while it matches, every other thread of the dashboard (and its
Ctrl-C) waits with it. RE2 (the ``google-re2`` package) compiles a pattern to an automaton
that never backtracks, so a search costs at most a constant times pattern and text, and a
pattern that would need backtracking (lookaround, backreferences) is refused when it is
compiled, not found out while it runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import re2

#: Longest search text run as a pattern; RE2's own memory bound refuses patterns whose
#: automaton would be too large whatever their length.
MAX_PATTERN = 1000


def _options(*, literal: bool) -> Any:
    options = re2.Options()
    options.case_sensitive = False
    # A match never crosses a newline, so that the fields that ``search_any`` joins with
    # newlines are searched as if one by one, in a single call (a call costs ~4 us in the
    # wrapper, seven fields of 100,000 nodes made a search 3 s).
    options.never_nl = True
    options.literal = literal
    options.log_errors = False  # RE2 would print each refused pattern on the server's stderr
    return options


def _why(exc: Exception) -> str:
    why = exc.args[0] if exc.args else exc
    return why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)


def _text(value: str) -> str:
    """``value`` as RE2 takes it: a lone surrogate (JSON allows ``"\\udc80"``) is no UTF-8."""
    return value.encode("utf-8", "replace").decode("utf-8")


@dataclass(frozen=True)
class Pattern:
    """A compiled search: ``search`` and ``search_any`` say whether it matches."""

    text: str  # the search as typed, stripped
    warning: str | None  # one line for the page when the text was not run as typed
    regexp: Any = None  # the RE2 program; None matches nothing

    def search(self, value: str) -> bool:
        """Whether the pattern matches anywhere in ``value``, ignoring case."""
        if self.regexp is None:
            return False
        try:
            return self.regexp.search(value) is not None
        except UnicodeEncodeError:
            return self.regexp.search(_text(value)) is not None

    def search_any(self, fields: Iterable[object]) -> bool:
        """Whether the pattern matches within one of the ``fields`` that are strings.

        ``^`` and ``$`` match at each field's ends and no match spans two fields, as when
        each is searched alone.
        """
        return self.search("\n".join(f for f in fields if isinstance(f, str)))


def compile_pattern(text: str) -> Pattern:
    """``text`` as an RE2 regular expression, or as plain text when RE2 does not take it.

    Case is ignored. A text RE2 refuses (bad syntax, lookaround, backreferences, a program
    over RE2's memory bound) is searched for as it is, and ``warning`` says so; a text over
    ``MAX_PATTERN`` characters matches nothing and says that.
    """
    text = _text(text.strip())
    if len(text) > MAX_PATTERN:
        return Pattern(text, f"the search is over {MAX_PATTERN} characters; shorten it")
    if not text:
        return Pattern(text, None)
    try:
        re2.compile(text, _options(literal=False))  # refused as typed, the error reads right
        # (?m): ^ and $ match at each joined field's ends (see ``search_any``).
        return Pattern(text, None, re2.compile("(?m)" + text, _options(literal=False)))
    except re2.error as exc:
        refused = _why(exc)
    try:
        literal = re2.compile(text, _options(literal=True))
    except re2.error as exc:  # a literal past RE2's memory bound
        return Pattern(text, f"cannot search for this text ({_why(exc)})")
    if refused.startswith(("invalid perl operator", "invalid escape sequence")):
        refused += "; RE2 has no lookaround or backreferences"
    warning = f"not a regular expression RE2 runs ({refused}); searched for the text as it is"
    return Pattern(text, warning, literal)
