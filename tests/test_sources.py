"""The file list's names (app/sources.py): distinct, the file name in view, failures marked."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest
from graphscope.app import server
from graphscope.app.sources import (
    FAILED,
    LABEL_CHARS,
    SAMPLE,
    Registry,
    _suffixes,
    sample_files,
    sample_recordings,
)

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
LLAMA = SAMPLES / "bundles" / "tiny-llama-b1.json.gz"
TORCH_OPS = SAMPLES / "dot" / "torch-ops" / "flags-verbose.dot"


def _samples_as_the_server_adds_them() -> Registry:
    registry = Registry()
    for path in sample_files():
        registry.add_path(path, f"sample: {path.name}")  # as create_app() adds a sample
    return registry


def _labels(registry: Registry) -> list[str]:
    return [s.label for s in registry.sources.values()]


def _upload(payload: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(payload).decode()


def test_shortest_distinct_ends() -> None:
    paths = [
        ("/", "x", "a", "f.dot"),
        ("/", "y", "a", "f.dot"),
        ("/", "z", "b", "f.dot"),
        ("/", "q", "g.dot"),
        ("/", "q", "g.dot"),  # the same file twice: no end tells them apart
    ]
    assert _suffixes(paths) == [
        ("x", "a", "f.dot"),
        ("y", "a", "f.dot"),
        ("b", "f.dot"),
        ("/", "q", "g.dot"),
        ("/", "q", "g.dot"),
    ]


def test_the_samples_are_listed_under_distinct_names_their_file_name_first() -> None:
    registry = _samples_as_the_server_adds_them()
    files = sample_files()
    dots = [p for p in files if p.name == "flags-verbose.dot"]
    assert len(dots) >= 2  # the five DOT dumps share one file name
    labels = _labels(registry)
    assert len(set(labels)) == len(labels) == len(files)
    for path, label in zip(files, labels, strict=True):
        assert label.startswith(SAMPLE + path.name)  # marked a sample, its name first
        if path in dots:
            assert path.parent.name in label  # told apart by its folder
        else:
            assert label == SAMPLE + path.name  # a name no other file has, alone
    # "sample: stream-capture-misc/flags-verbose.dot" would be cut in the 420 px picker:
    assert max(len(SAMPLE + "/".join(p.parts[-2:])) for p in dots) > LABEL_CHARS
    assert SAMPLE + "flags-verbose.dot · torch-ops" in labels


def test_the_app_lists_the_registrys_names_unchanged() -> None:
    app = server.create_app()
    dropdown = app.layout().children[0].children[1]
    labels = [o["label"] for o in dropdown.options]
    assert labels[: len(sample_files())] == _labels(_samples_as_the_server_adds_them())
    assert len(set(labels)) == len(labels)
    assert not any(label.startswith(FAILED) for label in labels)
    recorded = [g for g in labels[len(sample_files()) :] if g.startswith(SAMPLE)]
    assert len(recorded) == len(labels) - len(sample_files())  # recordings' graphs, as named
    folders = {p.name for p in sample_recordings()}
    assert all(label.split()[1] in folders for label in recorded)


def test_a_few_files_are_named_folders_first(tmp_path: Path) -> None:
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        shutil.copy(TORCH_OPS, tmp_path / run / "flags-verbose.dot")
    registry = Registry()
    for path in (tmp_path / "a" / "flags-verbose.dot", tmp_path / "b" / "flags-verbose.dot"):
        registry.add_path(path, str(path))  # as create_app() adds a file it was given
    registry.add_path(LLAMA, str(LLAMA))
    assert _labels(registry) == ["a/flags-verbose.dot", "b/flags-verbose.dot", LLAMA.name]


def test_a_file_that_fails_to_load_is_marked(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(LLAMA.read_bytes()[:3000])
    registry = Registry()
    good = registry.add_path(LLAMA, str(LLAMA))
    bad = registry.add_path(cut, str(cut))
    assert bad.label == "cut.json.gz"  # not read yet: not known to fail
    registry.load(bad.id)
    registry.load(good.id)
    assert bad.error and "\n" not in bad.error
    assert bad.label == FAILED + "cut.json.gz"
    assert good.label == LLAMA.name
    # A path that is no file fails when added, so the list marks it from the start.
    gone = registry.add_path(tmp_path / "gone.dot", str(tmp_path / "gone.dot"))
    assert gone.error and gone.label == FAILED + "gone.dot"
    damaged = registry.add_upload("cut.json.gz", _upload(LLAMA.read_bytes()[:3000]), tmp_path)
    assert damaged.error and damaged.label == FAILED + "cut.json.gz (uploaded)"


def test_the_app_marks_a_file_that_failed(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(LLAMA.read_bytes()[:3000])
    app = server.create_app([cut, LLAMA])  # the page opens on the first, which fails
    labels = [o["label"] for o in app.layout().children[0].children[1].options]
    assert labels == [FAILED + "cut.json.gz", LLAMA.name]


def test_names_stay_distinct_as_colliding_files_come(tmp_path: Path) -> None:
    registry = _samples_as_the_server_adds_them()
    before = {s.id: s.label for s in registry.sources.values()}
    twin = tmp_path / "torch-ops" / "flags-verbose.dot"  # same folder and name as a sample's
    twin.parent.mkdir()
    shutil.copy(TORCH_OPS, twin)
    added = registry.add_path(twin, str(twin))
    labels = _labels(registry)
    assert len(set(labels)) == len(labels)
    assert added.label == f"flags-verbose.dot · {tmp_path.name}/torch-ops"
    sample = next(s for s in registry.sources.values() if s.path == TORCH_OPS)
    assert sample.label == SAMPLE + "flags-verbose.dot · dot/torch-ops"  # one folder more
    unchanged = [s for s in registry.sources.values() if s.id in before and s is not sample]
    assert all(s.label == before[s.id] for s in unchanged)
    # The same name uploaded twice, and the same file given twice, are told apart too.
    first = registry.add_upload("flags-verbose.dot", _upload(TORCH_OPS.read_bytes()), tmp_path)
    second = registry.add_upload("flags-verbose.dot", _upload(TORCH_OPS.read_bytes()), tmp_path)
    again = registry.add_path(twin, str(twin))
    assert first.error is None and first.label == "flags-verbose.dot (uploaded)"
    assert second.label == "flags-verbose.dot (uploaded 2)"
    labels = _labels(registry)
    assert len(set(labels)) == len(labels)
    assert again.label != added.label and str(twin.parent) in added.label


@pytest.mark.parametrize("name", ["flags-verbose.dot", "tiny-llama-b1.json.gz"])
def test_a_name_no_other_file_has_stays_alone(tmp_path: Path, name: str) -> None:
    registry = Registry()
    path = tmp_path / "deep" / "folder" / name
    path.parent.mkdir(parents=True)
    shutil.copy(TORCH_OPS if name.endswith(".dot") else LLAMA, path)
    source = registry.add_path(path, str(path))
    assert source.label == name


def test_an_upload_name_with_a_nul_or_past_the_file_system_limit_still_loads(
    tmp_path: Path,
) -> None:
    from graphscope.app.sources import NAME_LIMIT, Registry

    dot = Path(__file__).resolve().parent.parent / "samples" / "dot" / "torch-ops"
    contents = "data:;base64," + base64.b64encode((dot / "flags-verbose.dot").read_bytes()).decode()
    registry = Registry()
    nul = registry.add_upload("a\x00b.dot", contents, tmp_path)
    assert nul.error is None and nul.graph is not None and "\x00" not in nul.label
    long = registry.add_upload("x" * 5000 + ".dot", contents, tmp_path)
    assert long.error is None and long.graph is not None
    assert len(long.label) < NAME_LIMIT + 20 and long.label.startswith("x")
