"""A JSON read is bounded by the memory its text would take parsed, not only by its values;
a reader that runs out of memory all the same gives one line naming the file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import graphscope
from graphscope import contract, io
from graphscope.errors import InputError


def test_long_unique_strings_are_refused_by_their_estimated_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Few values, long strings: the value count passes, the text's bytes do not.
    strings = [f"{i:06d}" + "x" * 2000 for i in range(200)]
    path = tmp_path / "strings.json.gz"
    path.write_bytes(gzip.compress(json.dumps(strings).encode()))
    monkeypatch.setattr(contract, "MAX_JSON_MEMORY", 300_000)
    with pytest.raises(InputError) as caught:
        graphscope.load(path)
    assert str(path) in str(caught.value)
    assert "of memory to read (200 JSON values in 402,000 bytes)" in str(caught.value)


def test_object_members_count_as_more_memory_than_list_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same number of values as a list passes; as an object's keys, refused.
    items, members = tmp_path / "items.json", tmp_path / "members.json"
    items.write_text(json.dumps([str(i) for i in range(1000)]))
    members.write_text(json.dumps({str(i): 0 for i in range(1000)}))
    budget = 1000 * contract.JSON_VALUE_BYTES + members.stat().st_size + 10_000
    monkeypatch.setattr(contract, "MAX_JSON_MEMORY", budget)
    with pytest.raises(InputError, match="another schema"):  # read, then not a bundle
        graphscope.load(items)
    with pytest.raises(InputError, match="of memory to read"):
        graphscope.load(members)


def test_running_out_of_memory_in_a_reader_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "g.json"
    path.write_text("{}")

    def no_memory(*args: object, **kwargs: object) -> object:
        raise MemoryError

    monkeypatch.setattr(io, "_parse_json", no_memory)
    with pytest.raises(InputError) as caught:
        graphscope.load(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and "ran out of memory" in message
    assert "\n" not in message
