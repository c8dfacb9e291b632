"""A person's search pattern (graphscope/pattern.py): bounded time, the meaning ``re`` gives it."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import graphscope
from graphscope.analysis import search
from graphscope.pattern import MAX_PATTERN, compile_pattern

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

# Each backtracks exponentially in Python's re on a long text it does not match (the first
# hung the dashboard, every request and Ctrl-C with it), and a text each matches.
CATASTROPHIC = [
    (r"(\w+)+!", "word!"),
    (r"(a*)*c", "aac"),
    (r"(a|aa)+c", "aac"),
    (r"(x+x+)+y", "xxy"),
    (r"^(([a-z])+.)+[A-Z]([a-z])+$", "ab.Cd"),
]


@pytest.mark.parametrize(("text", "matched"), CATASTROPHIC)
def test_a_catastrophic_pattern_runs_in_linear_time(text: str, matched: str) -> None:
    pattern = compile_pattern(text)
    assert pattern.warning is None  # run as the regular expression it is
    hostile = ["a" * 5000 + "1", "x" * 5000 + "1", "_" * 5000 + "1", "ab" * 2500 + "1"]
    start = time.perf_counter()
    assert not any(pattern.search(value) for value in hostile * 20)
    assert time.perf_counter() - start < 2.0  # 80 searches of 5,000 characters
    assert pattern.search(matched) and pattern.search_any([None, 7, matched])


PATTERNS = [
    "mm",
    "GEMM",
    "^void",
    "kernel$",
    r"layers\.\d+\.self_attn",
    "KERNEL|MEMCPY",
    "elementwise.*float",
    r"\bmm\b",
    "o_proj$",
    "^graph_1_node_5$",
    r"\d{3}",
    "[^a-z]",
]


@pytest.mark.parametrize(
    "sample", ["bundles/tiny-llama-b1.json.gz", "dot/torch-ops/flags-verbose.dot"]
)
def test_it_finds_what_pythons_re_finds_field_by_field(sample: str) -> None:
    G = graphscope.load(SAMPLES / sample)
    for text in PATTERNS:
        pattern = compile_pattern(text)
        assert pattern.warning is None, text
        expected = re.compile(text, re.IGNORECASE)
        for key, data in G.nodes(data=True):
            fields = search.fields(data, key)
            want = any(isinstance(f, str) and expected.search(f) for f in fields)
            assert pattern.search_any(fields) == want, (text, key)


def test_no_match_spans_two_fields() -> None:
    assert compile_pattern("^mm$").search_any(["gemm", "mm", None, 3])
    assert not compile_pattern("^gemm$").search_any(["xgemm", "mm"])
    assert not compile_pattern(r"gemm\smm").search_any(["gemm", "mm"])
    assert not compile_pattern("m[^x]m").search_any(["gem", "mm"])
    assert compile_pattern("m[^x]m").search_any(["gem", "m-m"])


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("a(?=b)", "no lookaround or backreferences"),
        (r"(a)\1", "no lookaround or backreferences"),
        ("mm(", "missing )"),
        ("*", "repetition"),
        ("a{5000}", "repetition"),
    ],
)
def test_a_pattern_re2_refuses_is_searched_as_plain_text(text: str, why: str) -> None:
    pattern = compile_pattern(text)
    assert pattern.warning is not None and why in pattern.warning
    assert "searched for the text as it is" in pattern.warning and "\n" not in pattern.warning
    assert pattern.search(f"x {text.upper()} y")  # the text itself, case ignored
    assert not pattern.search("ab")


def test_a_search_too_long_matches_nothing_and_says_so() -> None:
    pattern = compile_pattern("a" * (MAX_PATTERN + 1))
    assert pattern.warning is not None and str(MAX_PATTERN) in pattern.warning
    assert not pattern.search("a" * 5000)
    assert compile_pattern("a" * MAX_PATTERN).search("a" * 5000)


def test_text_that_is_no_utf_8_is_searched_too() -> None:
    # JSON may carry a lone surrogate ("\udc80"), the page's search box too.
    assert compile_pattern("mm").search("gemm\udc80")
    assert compile_pattern("mm\ud800").warning is None
    assert compile_pattern("").search_any(["anything"]) is False
