"""Failed captures under ``graphscope record``, without a GPU: the observer's bookkeeping,
driven as its CUPTI callbacks would drive it, and what ``check`` and the catalog say of it.

tests/capture/test_gpu_record.py records a real program whose capture fails on the GPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from graphscope.capture import callbacks, sites
from graphscope.capture.record import failures
from graphscope.capture.record.calls import Calls
from graphscope.capture.record.lives import Capture
from graphscope.capture.record.state import State

from graphscope import recording
from graphscope.analysis.check import check
from graphscope.analysis.lifecycle import notes

STREAM = 0x5000


@pytest.fixture
def watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A FailureWatch on a recorder's state, its CUPTI data read from stand-ins."""
    monkeypatch.setattr(callbacks, "return_code", lambda cb: cb.code)
    monkeypatch.setattr(callbacks, "function_name", lambda cb: cb.name)
    monkeypatch.setattr(callbacks, "param_words", lambda cb, n: cb.words[:n])
    rec = State(tmp_path)
    capture_dir = str(Path(failures.__file__).resolve().parents[1]) + "/"
    rec.frames = sites.Frames((capture_dir,), lambda: ())
    captures: dict[int, Capture] = {}
    errors: list[BaseException] = []
    w = failures.FailureWatch(rec, Calls(lambda: False), captures, errors.append)
    w.errors = errors
    return w


def _capture(thread_id: int | None = None) -> Capture:
    return Capture(
        began_ns=0,
        site={"file": "/srv/app/serve.py", "line": 40, "function": "capture"},
        capturer="torch.cuda.graph",
        stream=STREAM,
        thread_id=thread_id,
    )


def _call(name: str, code: int, *words: int) -> SimpleNamespace:
    return SimpleNamespace(name=name, code=code, words=list(words) or [0])


def read_back(watch: Any, name: str, code: int, *words: int) -> int:
    """The program's line that makes the call (the site the watch must name)."""
    watch._call(_call(name, code, *words), True)
    return read_back.__code__.co_firstlineno + 2


def test_the_first_call_that_breaks_a_capture_is_filed_with_its_line_and_how_it_ended(
    watch: Any,
) -> None:
    import threading

    capture = watch.captures[STREAM] = _capture(threading.get_ident())
    watch._call(_call("cudaMemcpyAsync_v3020", 0), True)  # succeeded: nothing
    watch._call(_call("cudaStreamSynchronize", 900, STREAM), False)  # its entry: nothing
    line = read_back(watch, "cudaMemcpyAsync_v3020", 900)
    read_back(watch, "cudaStreamSynchronize_v3020", 901, STREAM)  # a later one: not the first
    (failure,) = watch.failures
    assert failure.call == "cudaMemcpyAsync" and failure.stream is None
    assert failure.error == "cudaErrorStreamCaptureUnsupported (900)"
    assert failure.site["file"] == __file__ and failure.site["line"] == line
    assert failure.site["function"] == "read_back" and failure.thread == "MainThread"
    assert failure.capture is capture and failure.ended is None  # filed before the end
    assert failure.stack[0].startswith(f"{__file__}:{line} in read_back")
    assert watch.rec.dirty
    watch.ended(STREAM, capture, 901, "cudaStreamEndCapture")
    assert failure.ended == (
        "cudaStreamEndCapture returned cudaErrorStreamCaptureInvalidated (901)"
    )
    (entry,) = watch.as_list()
    assert entry["capture"] == {
        "site": capture.site,
        "capturer": "torch.cuda.graph",
        "stream": STREAM,
    }
    assert watch.errors == []


def test_a_stream_call_names_its_stream_and_a_driver_error_is_spelled_as_the_driver_does(
    watch: Any,
) -> None:
    watch.captures[STREAM] = _capture()
    read_back(watch, "cuStreamSynchronize_ptsz", 900, 0x77)
    (failure,) = watch.failures
    assert failure.call == "cuStreamSynchronize" and failure.stream == 0x77
    assert failure.error == "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900)"


def test_nothing_is_filed_outside_captures_or_for_errors_that_are_not_the_capture_s(
    watch: Any,
) -> None:
    read_back(watch, "cudaStreamSynchronize", 900)  # no capture running
    watch.captures[STREAM] = _capture()
    read_back(watch, "cudaMalloc", 2)  # out of memory: not a capture's failure
    assert watch.failures == []


def test_an_invalidated_end_with_no_watched_call_says_so_and_guesses_none(watch: Any) -> None:
    capture = _capture()
    watch.ended(STREAM, capture, 901, "cudaStreamEndCapture")
    (failure,) = watch.failures
    assert failure.call is None and failure.site == capture.site
    assert failure.ended.startswith("cudaStreamEndCapture returned cudaErrorStream")
    assert "no call graphscope watches failed inside it" in failure.ended
    watch.ended(STREAM, capture, 0, "cudaStreamEndCapture")  # a capture that ends well: none
    assert len(watch.failures) == 1


def test_a_capture_the_driver_refuses_to_begin_is_filed(watch: Any) -> None:
    site = {"file": "/srv/app/serve.py", "line": 12, "function": "warm"}
    watch.refused(site, 906, "cudaStreamBeginCapture_v10000")
    (failure,) = watch.failures
    assert failure.call == "cudaStreamBeginCapture" and failure.ended == "never began"
    assert failure.error == "cudaErrorStreamCaptureImplicit (906)"


def test_the_names_watched_are_exact_not_prefixes() -> None:
    enum = SimpleNamespace(
        __members__={
            "cudaMemcpy_v3020": 1,
            "cudaMemcpyAsync_v3020": 2,
            "cudaMemcpyPeerAsync_v4000": 3,
            "cuMemcpyDtoH_v2": 4,
            "cuMemcpyDtoHAsync_v2_ptsz": 5,
        }
    )
    found = callbacks.callback_ids(enum, ("cudaMemcpy", "cuMemcpyDtoHAsync"), exact=True)
    assert found == {1: "cudaMemcpy_v3020", 5: "cuMemcpyDtoHAsync_v2_ptsz"}
    assert set(callbacks.callback_ids(enum, ("cudaMemcpy",))) == {1, 2, 3}  # prefixes


FAILURE = {
    "at_s": 1.5,
    "call": "cudaMemcpyAsync",
    "error": "cudaErrorStreamCaptureUnsupported (900)",
    "thread": "MainThread",
    "stream": None,
    "site": {"file": "/srv/app/model.py", "line": 31, "function": "forward"},
    "program_site": {"file": "/srv/app/serve.py", "line": 60, "function": "main"},
    "module": "layers.0",
    "stack": ["/srv/app/model.py:31 in forward", "/srv/app/serve.py:60 in main"],
    "capture": {
        "site": {"file": "/srv/app/serve.py", "line": 55, "function": "capture"},
        "capturer": "torch.cuda.graph",
        "stream": STREAM,
    },
    "ended": "cudaStreamEndCapture returned cudaErrorStreamCaptureInvalidated (901)",
}


def test_check_names_the_call_the_line_the_module_and_the_capture(recording_with: Any) -> None:
    rec = recording_with(capture_failures=[FAILURE, {**FAILURE, "at_s": 9.0}])
    (violation,) = check([rec]).violations
    assert violation.rule == "failed-capture"
    assert violation.message == (
        "pid 42 (serve.py): a stream capture failed: cudaMemcpyAsync returned "
        "cudaErrorStreamCaptureUnsupported (900) at model.py:31 in forward (from serve.py:60 "
        "in main), module layers.0, thread MainThread, inside the torch.cuda.graph capture "
        "begun at serve.py:55 in capture; cudaStreamEndCapture returned "
        "cudaErrorStreamCaptureInvalidated (901) (and 1 more)"
    )
    (note,) = [n for n in notes(rec) if n.code == "capture-failed"]
    assert note.severity == "warning" and note.details[-1] == "  /srv/app/serve.py:60 in main"
    assert check([recording_with(capture_failures=[])]).violations == []


def test_a_capture_invalidated_by_no_watched_call_is_told_without_a_call() -> None:
    from graphscope.analysis.lifecycle import failure_text

    ended = "cudaStreamEndCapture returned cudaErrorStreamCaptureInvalidated (901): no call ..."
    unseen = {**FAILURE, "call": None, "error": None, "ended": ended}
    assert failure_text(unseen) == (
        f"the torch.cuda.graph capture begun at serve.py:55 in capture; {ended}"
    )
    assert failure_text({**unseen, "capture": {"capturer": None, "site": None}}) == (
        f"the stream capture; {ended}"
    )


def test_a_failure_of_the_wrong_shape_is_refused_naming_the_field(tmp_path: Path) -> None:
    doc = recording.new_document({"pid": 42, "status": "finished"}, {})
    doc["capture_failures"] = [{**FAILURE, "stack": "not a list"}]
    path = tmp_path / recording.INDEX_NAME
    path.write_text(json.dumps(doc))
    with pytest.raises(recording.InputError, match=r"capture_failures\[0\]"):
        recording.load_recording(path)


class _Native:
    """Stands for the C labeller's gate."""

    def __init__(self) -> None:
        self.gated: set[tuple[int, int]] = set()
        self.now = -1
        self.told: list[tuple[int, bool, int]] = []

    def gate(self, domain: int, cbid: int, on: bool = True) -> None:
        (self.gated.add if on else self.gated.discard)((domain, cbid))

    def capturing(self, count: int, ended_well: bool = True, graph: int = 0) -> None:
        self.now = count
        self.told.append((count, ended_well, graph))


class _Subscriber:
    def __init__(self, natively: bool) -> None:
        self.labels_natively = natively
        self.enabled: list[tuple[int, int]] = []

    def on(self, domain: int, cbid: int, handler: Any, on_error: Any) -> None:
        self.enabled.append((domain, cbid))

    def off(self, domain: int, cbid: int, handler: Any) -> None:
        self.enabled.remove((domain, cbid))


SUBSCRIPTIONS = [(2, 131, None), (1, 245, None)]  # what Calls.watch finds on a GPU


@pytest.mark.parametrize("natively", [True, False])
def test_watched_calls_are_asked_once_and_gated_or_asked_at_each_capture(
    watch: Any, monkeypatch: pytest.MonkeyPatch, natively: bool
) -> None:
    native, sub = _Native(), _Subscriber(natively)
    monkeypatch.setattr(callbacks, "native_labeller", lambda: native)
    monkeypatch.setattr(callbacks, "subscriber", lambda: sub)
    monkeypatch.setattr(watch._calls, "watch", lambda names, handler, exact: SUBSCRIPTIONS)
    watched = {(d, c) for d, c, _ in SUBSCRIPTIONS}
    watch.start()
    if natively:  # for the whole run, dropped in C while no capture runs (GraphWatch counts)
        assert set(sub.enabled) == watched and native.gated == watched
        watch.capture_began()
        assert set(sub.enabled) == watched and native.gated == watched
        watch.captures_over()
        assert set(sub.enabled) == watched
    else:  # without the C callback, CUPTI is asked at each capture
        assert sub.enabled == [] and native.gated == set()
        watch.capture_began()
        assert set(sub.enabled) == watched
        watch.captures_over()
        assert sub.enabled == []
    watch.stop()
    assert sub.enabled == [] and native.gated == set()


def test_the_recorded_sample_names_the_read_back_that_broke_its_capture(samples: Path) -> None:
    """samples/recordings/capture-fails: capture_fails.py recorded on the H200. Its layer's
    .item() synchronized the capturing stream; the capture after it, with the scale kept on
    the GPU, is an ordinary graph."""
    (rec,) = recording.load_recordings(samples / "recordings" / "capture-fails")
    (failure,) = rec.capture_failures
    source = Path(failure["site"]["file"]).name
    assert (failure["call"], source, failure["module"]) == (
        "cudaStreamSynchronize",
        "capture_fails.py",
        "layers.0",
    )
    assert failure["stream"] == failure["capture"]["stream"]
    assert failure["ended"].endswith("cudaErrorStreamCaptureInvalidated (901)")
    (violation,) = check([rec]).violations
    assert (
        violation.rule == "failed-capture" and "capture_fails.py:31 in forward" in violation.message
    )
    (graph,) = rec.graphs
    assert graph["replays"] == 30 and graph["site"]["line"] == failure["capture"]["site"]["line"]


def test_the_c_callback_is_told_how_many_captures_run_and_the_node_callback_is_ungated_at_stop(
    watch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GraphWatch owns the count the C callback gates by: the node callback (gated where the
    recorder labels in C, so that a clone's nodes at instantiation never reach Python) and the
    failure watch's calls pass only while it is above 0."""
    from graphscope.capture.record.graphs import GraphWatch

    monkeypatch.setattr(callbacks, "dereference", lambda word: word + 0x1000 if word else 0)
    native = _Native()
    graphs = GraphWatch(watch.rec)
    graphs.native = native
    graphs._gated = [(1, 12)]  # as subscriptions() gates GRAPHNODE_CREATED
    native.gate(1, 12)
    seen = []
    for stream in (7, 8):  # two captures at once, then each ends
        graphs._capture_begins(SimpleNamespace(words=[stream], code=0, name="begin"), False)
        seen.append(native.now)
    for stream in (7, 8):
        graphs._capture_ends(SimpleNamespace(words=[stream, stream], code=0, name="end"), True)
        seen.append(native.now)
    assert seen == [1, 2, 1, 0] and graphs.capturing == 0
    # Each end names the graph it ended with: the labeller checks its guessed node ids
    # against that graph, alive, and drops those of any other.
    assert native.told[-2:] == [(1, True, 0x1007), (0, True, 0x1008)]
    # A capture that fails at its end is told as such: the labeller drops the node ids it
    # guessed and had not checked, as the graph may be gone.
    graphs._capture_begins(SimpleNamespace(words=[9], code=0, name="begin"), False)
    graphs._capture_ends(SimpleNamespace(words=[9, 9], code=901, name="end"), True)
    assert native.told[-2:] == [(1, True, 0), (0, False, 0)]
    graphs.stop()
    assert native.gated == set() and graphs._gated == []
