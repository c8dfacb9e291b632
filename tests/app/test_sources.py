"""The file list's names (app/files/sources.py): distinct, the file name in view, failures
marked."""

from __future__ import annotations

import base64
import gzip
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from graphscope.app.files import sources
from graphscope.app.files.sources import (
    FAILED,
    LABEL_CHARS,
    SAMPLE,
    Registry,
    _suffixes,
    sample_files,
    sample_recordings,
)
from graphscope.app.serve import server

import graphscope

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
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
    from graphscope.app.files.sources import NAME_LIMIT, Registry

    dot = Path(__file__).resolve().parents[2] / "samples" / "dot" / "torch-ops"
    contents = "data:;base64," + base64.b64encode((dot / "flags-verbose.dot").read_bytes()).decode()
    registry = Registry()
    nul = registry.add_upload("a\x00b.dot", contents, tmp_path)
    assert nul.error is None and nul.graph is not None and "\x00" not in nul.label
    long = registry.add_upload("x" * 5000 + ".dot", contents, tmp_path)
    assert long.error is None and long.graph is not None
    assert len(long.label) < NAME_LIMIT + 20 and long.label.startswith("x")


# --- hardening: reads that do not wait for each other, uploads that fail as one line --------


def _gated_load(monkeypatch: pytest.MonkeyPatch, slow_name: str) -> threading.Event:
    """graphscope.load, held on ``slow_name`` until the returned event is set."""
    release = threading.Event()
    real = graphscope.load

    def load(path: str | os.PathLike[str], **kwargs: Any) -> nx.DiGraph:
        if Path(path).name == slow_name:
            assert release.wait(30)
        return real(path, **kwargs)

    monkeypatch.setattr(graphscope, "load", load)
    return release


def test_a_slow_read_holds_up_no_other_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = tmp_path / "slow.dot"
    shutil.copy(TORCH_OPS, slow)
    registry = Registry()
    fast = registry.add_path(LLAMA, str(LLAMA))
    held = registry.add_path(slow, str(slow))
    release = _gated_load(monkeypatch, "slow.dot")
    readers = [threading.Thread(target=registry.load, args=(held.id,)) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        start = time.perf_counter()
        assert registry.load(fast.id).graph is not None  # while slow.dot is being read
        assert time.perf_counter() - start < 10
        assert held.graph is None and all(r.is_alive() for r in readers)
    finally:
        release.set()
        for reader in readers:
            reader.join(30)
    assert held.graph is not None and held.error is None


def test_a_reader_that_raises_anything_fails_as_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(path: str | os.PathLike[str], **kwargs: Any) -> nx.DiGraph:
        raise RecursionError("maximum recursion depth exceeded\nwhile reading")

    registry = Registry()
    good = registry.add_path(LLAMA, str(LLAMA))
    registry.load(good.id)
    monkeypatch.setattr(graphscope, "load", broken)
    bad = registry.add_path(TORCH_OPS, str(TORCH_OPS))
    registry.load(bad.id)
    assert bad.error is not None and "\n" not in bad.error
    assert "RecursionError" in bad.error and "bug" in bad.error and str(TORCH_OPS) in bad.error
    assert bad.label.startswith(FAILED) and good.error is None
    upload = registry.add_upload("x.dot", _upload(TORCH_OPS.read_bytes()), tmp_path)
    assert upload.error is not None and upload.error.startswith("x.dot: graphscope failed")
    assert str(tmp_path) not in upload.error and not list(tmp_path.iterdir())


def test_a_gzip_bomb_upload_is_refused_by_the_readers_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "UPLOAD_EXPANDED_LIMIT", 1 << 20)
    bomb = gzip.compress(b" " * (16 << 20))  # 16 KB that expand to 16 MB
    assert len(bomb) < 100_000
    registry = Registry()
    source = registry.add_upload("bomb.json.gz", _upload(bomb), tmp_path)
    assert source.error is not None and source.error.startswith("bomb.json.gz: ")
    assert str(1 << 20) in source.error or f"{1 << 20:,}" in source.error  # the limit, named
    assert "graphscope serve FILE" in source.error
    assert source.graph is None and not list(tmp_path.iterdir())  # the file is gone too
    # The same file from the command line is read with the reader's own, larger, limit.
    path = tmp_path / "big.json.gz"
    path.write_bytes(bomb)
    assert "1048576" not in (registry.load(registry.add_path(path).id).error or "")


def test_an_upload_is_decoded_in_steps_and_refused_before_decoding_when_too_big(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[int] = []
    real = base64.b64decode

    def spy(data: str, validate: bool = False) -> bytes:
        steps.append(len(data))
        return real(data, validate=validate)

    monkeypatch.setattr(sources, "_B64_STEP", 4096)
    monkeypatch.setattr(sources.base64, "b64decode", spy)
    registry = Registry()
    payload = TORCH_OPS.read_bytes()
    good = registry.add_upload("ops.dot", _upload(payload), tmp_path / "up")
    assert good.error is None and good.graph is not None
    assert max(steps) == 4096 and sum(steps) == len(base64.b64encode(payload))
    steps.clear()
    monkeypatch.setattr(sources, "UPLOAD_LIMIT", len(payload) - 1)
    big = registry.add_upload("ops.dot", _upload(payload), tmp_path / "up")
    assert big.error is not None and "upload limit" in big.error
    assert steps == [] and len(list((tmp_path / "up").iterdir())) == 1  # good's file only


@pytest.mark.parametrize(
    ("filename", "contents", "error"),
    [
        (None, _upload(b"digraph {}"), "not a graph file"),
        (["a.dot"], _upload(b"digraph {}"), "not a graph file"),
        ("a.dot", None, "arrived damaged"),
        ("a.dot", ["data:;base64,AAAA"], "arrived damaged"),
        ("a.dot", "no comma at all", "arrived damaged"),
        ("a.dot", "data:;base64,@@@@", "arrived damaged"),
        ("a.dot", "data:;base64," + "QUFB" * 5000 + "é", "arrived damaged"),
        ("a.dot", "data:;base64,QUFBQ", "arrived damaged"),
        ("a.dot", "data:;base64,", "empty"),
    ],
)
def test_whatever_an_upload_sends_it_is_listed_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filename: object, contents: object, error: str
) -> None:
    monkeypatch.setattr(sources, "_B64_STEP", 4096)  # the bad character comes in a later step
    registry = Registry()
    source = registry.add_upload(filename, contents, tmp_path)
    assert source.error is not None and error in source.error and "\n" not in source.error
    assert source.label.startswith(FAILED) and source.id in registry.sources
    assert not list(tmp_path.iterdir())  # nothing left on disk


def test_an_upload_that_cannot_be_stored_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "not-a-folder"
    folder.write_text("a file where the upload folder should be")
    source = Registry().add_upload("a.dot", _upload(TORCH_OPS.read_bytes()), folder)
    assert source.error is not None and source.error.startswith("a.dot: cannot store the upload")


def test_sources_added_from_many_threads_get_distinct_ids(tmp_path: Path) -> None:
    registry = _samples_as_the_server_adds_them()
    stop = threading.Event()
    seen: list[BaseException] = []

    def lister() -> None:  # as the page's file list does, on another request's thread
        try:
            while not stop.is_set():
                [s.label for s in registry.sources.values()]
        except BaseException as exc:
            seen.append(exc)

    watcher = threading.Thread(target=lister)
    watcher.start()
    contents = _upload(TORCH_OPS.read_bytes())
    try:
        with ThreadPoolExecutor(8) as pool:
            added = list(
                pool.map(lambda i: registry.add_upload(f"{i}.dot", contents, tmp_path), range(16))
            )
    finally:
        stop.set()
        watcher.join()
    assert seen == []
    assert len({s.id for s in added}) == 16 and all(s.graph is not None for s in added)
    assert all(registry.sources[s.id] is s for s in added)
    labels = _labels(registry)
    assert len(set(labels)) == len(labels)


def test_read_graphs_are_let_go_past_the_node_budget_and_read_again(tmp_path: Path) -> None:
    # Issue 24: every graph read stayed in memory for the server's life.
    registry = Registry(nodes_kept=300)  # tiny-llama b1 and b8 have 212 and 302 nodes
    b1 = registry.add_path(LLAMA)
    b8 = registry.add_path(SAMPLES / "bundles" / "tiny-llama-b8.json.gz")
    held, error = registry.graph_of(b1.id)
    assert held is not None and error is None and registry.kept() == [b1.id]
    assert registry.graph_of(b8.id)[0] is not None
    # b8 alone is over the budget but stays, the one just read; b1 is let go.
    assert registry.kept() == [b8.id] and b1.graph is None
    assert held.number_of_nodes() == 212  # a caller holding it keeps it whole
    again, _ = registry.graph_of(b1.id)  # read again from its file
    assert again is not None and again is not held and again.number_of_nodes() == 212
    assert registry.kept() == [b1.id] and b8.graph is None


def test_only_the_last_uploads_stay_listed_an_older_one_goes_with_its_file(
    tmp_path: Path,
) -> None:
    from graphscope.app.view import callbacks
    from graphscope.app.view.state import ViewState

    folder = tmp_path / "up"
    registry = Registry(uploads_kept=3)
    registry.add_path(LLAMA)
    payload = _upload(TORCH_OPS.read_bytes())
    first = registry.add_upload("a.dot", payload, folder)
    failed = registry.add_upload("b.dot", _upload(b"not a graph"), folder)
    assert first.error is None and failed.error is not None
    stored = first.path
    assert stored.is_file()
    later = [registry.add_upload("c.dot", payload, folder) for _ in range(2)]
    ids = list(registry.sources)
    assert first.id not in ids and failed.id in ids and all(s.id in ids for s in later)
    assert not stored.exists() and len(list(folder.iterdir())) == 2  # the two c.dot kept
    assert [s.label for s in registry.sources.values() if s.uploaded] == [
        f"{FAILED}b.dot (uploaded)",
        "c.dot (uploaded)",
        "c.dot (uploaded 2)",
    ]
    assert registry.get(first.id) is None and registry.gone(LLAMA) is None
    # A page still showing the upload that went says so, and what to do.
    view = ViewState(registry=registry)
    drawn = callbacks.draw(view, first.id, "type", None, None, None)
    assert drawn.status.id == "load-error"
    assert drawn.status.children == registry.gone(first.id)
    assert "keeps the last 3 uploads" in drawn.status.children


def test_each_open_file_is_one_object_that_goes_when_its_graph_is_let_go() -> None:
    """``ViewState.open``: one ``OpenFile`` per file, owning its folds, views and searches;
    when the registry lets the graph go, what was made from it goes too, and a file read
    again opens afresh."""
    from graphscope.app.view.state import ViewState

    registry = Registry(nodes_kept=300)  # b1 has 212 nodes, b8 302: reading b8 lets b1 go
    b1 = registry.add_path(LLAMA)
    b8 = registry.add_path(SAMPLES / "bundles" / "tiny-llama-b8.json.gz")
    view = ViewState(registry=registry)
    first = view.open(b1.id)
    assert first is not None and first is view.open(b1.id) and first.graph is view.graph(b1.id)
    shown, _ = first.view(first.expanded(None))
    assert first.view(first.expanded(None))[0] is shown  # kept by the file
    assert first.matches("gemm")[0] and first.matches("gemm") is first.matches(" gemm ")
    assert view.open(b8.id) is not None and b1.graph is None  # b1 let go
    again = view.open(b1.id)
    assert again is not None and again is not first and again.graph is not first.graph
    assert view.open("no such id") is None and view.open(None) is None
