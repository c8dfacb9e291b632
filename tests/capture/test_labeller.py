"""The C labeller (capture/_labeller.c), driven as CUPTI would drive it, without a GPU.

Its callback is called through ctypes with a CUpti_ResourceData laid out in memory, a stand-in
for ``cuptiGetGraphNodeId`` and a trampoline that stands for the subscriber's Python dispatch.
What it notes must be what attribution's Python labeller notes at the same frame.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path
from typing import Any

import pytest
from graphscope.capture import attribution, callbacks, sites
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

native = callbacks.native_labeller()
pytestmark = pytest.mark.skipif(
    native is None, reason="the C labeller was not built by this install (setup.py)"
)

DOMAIN, NODE_CREATED = 3, 7  # any numbers: the labeller is told which to serve
NODE = 0x5A5A
PACKED = (12 << 32) | 9  # what the stand-in cuptiGetGraphNodeId answers for NODE

_NODE_ID = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64))

GENERATED = """def call(fire):
    buf0 = None
    # Topologically Sorted Source Nodes: [linear, silu], Original ATen: [aten.mm, aten.silu]
    return fire()
"""


@pytest.fixture(params=["interpreter frames", "frame objects"])
def labeller(request: pytest.FixtureRequest) -> Any:
    """Each test runs on both walks: the interpreter's own frames (CPython 3.11 to 3.13) and
    frame objects through the public API (any other version, and the fallback)."""
    raw = request.param == "interpreter frames"
    if native.use_interpreter_frames(raw) != raw:
        pytest.skip(f"this CPython ({sys.version.split()[0]}) is walked through frame objects")
    forwarded: list[tuple[int, int, int]] = []

    def dispatch(userdata: Any, domain: int, cbid: int, data: int | None) -> None:
        forwarded.append((domain, cbid, data or 0))

    def node_id(node: int | None, out: Any) -> int:
        if node != NODE:
            return 1  # CUPTI_ERROR_INVALID_PARAMETER
        out[0] = PACKED
        return 0

    trampoline = callbacks._CALLBACK(dispatch)
    get_id = _NODE_ID(node_id)
    address = native.install(
        ctypes.cast(trampoline, ctypes.c_void_p).value,
        ctypes.cast(get_id, ctypes.c_void_p).value,
        DOMAIN,
        NODE_CREATED,
    )
    # CUpti_ResourceData -> its descriptor, a CUpti_GraphData whose third word is the node
    graph_data = (ctypes.c_uint64 * 7)(0, 0, NODE, 0, 0, 0, 0)
    resource = (ctypes.c_uint64 * 3)(0, 0, ctypes.addressof(graph_data))
    callback = callbacks._CALLBACK(address)
    state = type("Labeller", (), {})()
    state.forwarded = forwarded
    state.fire = lambda domain=DOMAIN, cbid=NODE_CREATED: callback(
        None, domain, cbid, ctypes.addressof(resource)
    )
    state.graph_data = graph_data
    state.keep = (trampoline, get_id, resource)
    yield state
    native.stop()
    native.drain()  # what a test left noted goes to its own sink, not into the next test's
    native.use_interpreter_frames(True)  # the default, where this build has it


class Module:
    """Stands for torch.nn.Module: the labeller asks only whether ``self`` is one."""


USER = """class Model(Module):
    def __init__(self):
        self.layer = Layer()

    def forward(self, fire):
        return self.layer.forward(fire)


class Layer(Module):
    def forward(self, fire):
        again = lambda: self.forward(fire)  # a closure over self: it lives in a cell
        return helper(fire)


def helper(fire):
    return call(fire)
"""


def _chain(tmp_path: Path) -> tuple[sites.Frames, Any]:
    """User code in app/serve.py (a model, its layer, a helper) calls Inductor's generated
    code, which calls ``fire``."""
    cache = tmp_path / "torchinductor_me"
    generated = cache / "ab" / "cab.py"
    generated.parent.mkdir(parents=True)
    generated.write_text(GENERATED)
    user = tmp_path / "app" / "serve.py"
    user.parent.mkdir(parents=True)
    user.write_text(USER)
    namespace: dict[str, Any] = {"Module": Module}
    exec(compile(GENERATED, str(generated), "exec"), namespace)
    exec(compile(user.read_text(), str(user), "exec"), namespace)
    library = (str(Path(__file__).resolve()), str(Path(sites.__file__).resolve().parent) + "/")
    return sites.Frames(library, lambda: (str(cache) + "/",)), namespace["Model"]()


def _start(
    sink: list[Any], names: dict[int, str], frames: sites.Frames, learn: Any, errors: Any
) -> None:
    native.start(sink, names, Module, {}, frames.kind, learn, errors)


def test_it_notes_what_python_notes_at_the_same_frame(labeller: Any, tmp_path: Path) -> None:
    frames, model = _chain(tmp_path)
    sink: list[Any] = []
    names: dict[int, str] = {}
    learned: list[tuple[Any, Any]] = []

    def learn(module: Any, outermost: Any) -> str:  # as Attribution._learn: once per module
        learned.append((module, outermost))
        names[id(module)] = "layers.0.attention"
        return names[id(module)]

    errors: list[BaseException] = []
    _start(sink, names, frames, learn, errors.append)

    def fire() -> Any:  # both labellers at one frame, on one line
        frame = sys._getframe()
        module = attribution.module_at(frame, Module, names, learn)
        return labeller.fire(), attribution.raw_label(frames, PACKED, module, None, frame)

    assert "self" in type(model.layer).forward.__code__.co_cellvars  # read through its cell
    _, expected = model.forward(fire)
    assert sink == []  # noted in C: tuples and lines are made when drained
    native.drain()
    # The innermost module running is the layer, met first by C: learned once, from the
    # outermost module running; Python then finds it by id().
    assert learned == [(model.layer, model)]
    assert errors == [] and labeller.forwarded == []  # served in C, not passed on
    assert sink == [expected]
    packed, module, op, code, line, generated_file, generated_line = sink[0]
    assert (packed, module, op) == (PACKED, "layers.0.attention", None)
    assert code.co_name == "helper" and code.co_filename.endswith("serve.py") and line == 16
    assert generated_file.endswith("cab.py") and generated_line == 4
    label = attribution.make_labels(frames, sink)[PACKED]
    assert label["function"] == "helper" and label["module"] == "layers.0.attention"
    assert label["compiled"] == {"source_nodes": "linear, silu", "aten": "aten.mm, aten.silu"}
    model.forward(labeller.fire)  # known now: no second lesson
    native.drain()
    assert len(sink) == 2 and sink[1][1] == "layers.0.attention" and len(learned) == 1


def test_python_learns_as_c_does(tmp_path: Path) -> None:
    _, model = _chain(tmp_path)
    names: dict[int, str] = {}
    learned: list[tuple[Any, Any]] = []

    def learn(module: Any, outermost: Any) -> str:
        learned.append((module, outermost))
        return "x"

    seen: list[Any] = []
    model.forward(lambda: seen.append(attribution.module_at(sys._getframe(), Module, names, learn)))
    assert seen == ["x"] and learned == [(model.layer, model)]
    assert attribution.module_at(sys._getframe(), Module, names, learn) is None  # no module here


def test_everything_else_goes_on_to_python_and_all_of_it_once_stopped(
    labeller: Any, tmp_path: Path
) -> None:
    frames, _ = _chain(tmp_path)
    labeller.fire()  # not started: passed on
    sink: list[Any] = []
    _start(sink, {}, frames, print, print)
    assert native.active()
    labeller.fire(cbid=NODE_CREATED + 1)
    labeller.fire(domain=DOMAIN + 1)
    labeller.fire()
    native.stop()
    assert not native.active()
    assert sink == []  # kept as noted until drained: a capture's end makes no tuple
    labeller.fire()
    native.drain()
    assert [(d, c) for d, c, _ in labeller.forwarded] == [
        (DOMAIN, NODE_CREATED),
        (DOMAIN, NODE_CREATED + 1),
        (DOMAIN + 1, NODE_CREATED),
        (DOMAIN, NODE_CREATED),
    ]
    assert len(sink) == 1 and sink[0][0] == PACKED
    assert sink[0][1] is None  # no module running


def test_a_failure_is_reported_and_never_reaches_the_caller(labeller: Any, tmp_path: Path) -> None:
    def classify(filename: str) -> int:
        raise RuntimeError(f"cannot classify {filename}")

    def learn(module: Any, outermost: Any) -> str:
        raise KeyError("no path")

    sink: list[Any] = []
    errors: list[BaseException] = []
    native.start(sink, {}, Module, {}, classify, learn, errors.append)
    labeller.fire()  # returns normally: no exception escapes into CUPTI
    assert sink == [] and len(errors) == 1
    assert isinstance(errors[0], RuntimeError) and "cannot classify" in str(errors[0])
    frames, model = _chain(tmp_path)
    _start(sink, {}, frames, learn, errors.append)
    model.forward(labeller.fire)  # a module to name, and naming it fails
    assert sink == [] and len(errors) == 2 and isinstance(errors[1], KeyError)
    labeller.graph_data[2] = NODE + 1  # a node CUPTI has no id for: no label, no error
    native.start(sink, {}, Module, {}, lambda f: sites.Frames.USER, learn, errors.append)
    labeller.fire()
    assert sink == [] and len(errors) == 2


def test_install_refuses_null_functions() -> None:
    with pytest.raises(ValueError, match="null function"):
        native.install(0, 0, DOMAIN, NODE_CREATED)


def test_the_walk_is_not_switched_while_labelling(labeller: Any) -> None:
    native.start([], {}, Module, {}, print, print, print)
    with pytest.raises(RuntimeError, match="running"):
        native.use_interpreter_frames(False)


def test_gated_callbacks_pass_on_only_while_a_capture_runs(labeller: Any) -> None:
    """The calls that may break a capture stay enabled in CUPTI; the C callback drops them
    while no capture runs (capture/record/failures.py)."""
    watched, other = NODE_CREATED + 5, NODE_CREATED + 6
    native.gate(DOMAIN, watched)
    try:
        native.capturing(0)
        labeller.fire(cbid=watched)  # no capture: dropped in C
        native.capturing(1)
        labeller.fire(cbid=watched)  # a capture runs: passed on
        native.capturing(0)
        labeller.fire(cbid=other)  # never gated: passed on
    finally:
        native.gate(DOMAIN, watched, False)
    labeller.fire(cbid=watched)  # ungated: passed on
    assert [c for _, c, _ in labeller.forwarded] == [watched, other, watched]
    with pytest.raises(ValueError, match="out of range"):
        native.gate(99, 1)


def test_labels_are_drained_where_they_were_noted(labeller: Any, tmp_path: Path) -> None:
    """Labels noted in C become tuples at drain(), never at stop() or a new start(): each into
    the sink it was noted for, with the line each frame was at when the node was created."""
    frames, model = _chain(tmp_path)
    first: list[Any] = []
    _start(first, {}, frames, lambda m, o: "layer", print)
    model.forward(labeller.fire)
    second: list[Any] = []
    _start(second, {}, frames, lambda m, o: "layer", print)  # the first's labels are kept
    labeller.fire()
    native.stop()
    assert first == [] and second == []
    third: list[Any] = []
    _start(third, {}, frames, lambda m, o: "layer", print)
    native.drain()  # those stopped, each to its own sink; then the current, which has none
    assert len(first) == 1 and first[0][4] == 16 and first[0][1] == "layer"
    assert len(second) == 1 and second[0][1] is None and third == []
    native.drain()  # nothing is handed twice
    assert len(first) == 1 and len(second) == 1 and third == []
    labeller.fire()
    native.drain()
    assert len(third) == 1


def test_a_module_renamed_by_a_later_lesson_is_named_anew(labeller: Any, tmp_path: Path) -> None:
    """Paths are cached by the module's address; a lesson (``learn``) may rename modules met
    before, as Attribution's does when it names a tree met first inside another, so each
    lesson empties that cache."""
    frames, model = _chain(tmp_path)
    names: dict[int, str] = {}
    other = type(model)()

    def learn(module: Any, outermost: Any) -> str:
        if names:  # a later tree names the first layer again
            names[id(model.layer)] = "renamed"
        names[id(module)] = f"learned {len(names)}"
        return names[id(module)]

    sink: list[Any] = []
    _start(sink, names, frames, learn, print)
    model.forward(labeller.fire)  # learned
    model.forward(labeller.fire)  # from the cache
    other.forward(labeller.fire)  # another lesson: the cache goes
    model.forward(labeller.fire)  # read again from names
    native.drain()
    assert [s[1] for s in sink] == ["learned 0", "learned 0", "learned 1", "renamed"]


@pytest.fixture
def nodes(labeller: Any, tmp_path: Path) -> Any:
    """The labeller, labelling, installed with a stand-in cuptiGetGraphNodeId that answers from
    ``state.ids`` (node -> packed id) and counts its calls; ``state.make(graph, node)`` fires
    GRAPHNODE_CREATED for a node of a graph."""
    state = labeller
    state.ids = {}
    state.asked = []

    def node_id(node: int | None, out: Any) -> int:
        state.asked.append(node)
        if node not in state.ids:
            return 1
        out[0] = state.ids[node]
        return 0

    state.get_id = _NODE_ID(node_id)
    native.install(
        ctypes.cast(state.keep[0], ctypes.c_void_p).value,
        ctypes.cast(state.get_id, ctypes.c_void_p).value,
        DOMAIN,
        NODE_CREATED,
    )

    def make(graph: int, node: int) -> None:
        state.graph_data[0], state.graph_data[2] = graph, node
        state.fire()

    state.make = make
    frames, _ = _chain(tmp_path)
    state.sink = []
    state.errors = []
    _start(state.sink, {}, frames, lambda m, o: "x", state.errors.append)
    native.capturing(0)
    native.guess_ids(True)
    yield state
    native.capturing(0, False)


def _graph(state: Any, graph_id: int, count: int, skip_at: int | None = None) -> list[int]:
    """Nodes 0x1000 * graph_id + i, whose local ids count up (skipping one at skip_at)."""
    packed = []
    for i in range(count):
        local = i + (1 if skip_at is not None and i >= skip_at else 0)
        state.ids[0x1000 * graph_id + i] = (graph_id << 32) | local
        packed.append((graph_id << 32) | local)
    return packed


def _captured(state: Any, graph: int, count: int) -> list[int]:
    """One capture that makes ``count`` nodes of ``graph`` and ends well: the ids handed over."""
    native.capturing(1)
    for i in range(count):
        state.make(graph, graph + i)
    native.capturing(0)
    native.drain()
    return [s[0] for s in state.sink]


def _counts() -> tuple[int, int, int]:
    return native.id_counts()  # type: ignore[no-any-return]


def test_within_one_capture_ids_are_guessed_and_checked(nodes: Any) -> None:
    """CUPTI is asked for one node id in 16 while one capture runs; each answer checks the
    guesses before it, and the capture's end checks the last."""
    expected = _graph(nodes, 5, 40)
    asked, guessed, missed = _counts()
    assert _captured(nodes, 0x5000, 40) == expected and nodes.errors == []
    now = _counts()
    assert now[0] - asked == len(nodes.asked) == 4  # nodes 0, 16, 32 and, at the end, 39
    assert now[1] - guessed == 37 and now[2] == missed


def test_a_wrong_guess_is_found_and_every_guess_since_the_last_answer_read_again(
    nodes: Any,
) -> None:
    expected = _graph(nodes, 5, 40, skip_at=20)  # CUDA's local ids jump once
    missed = _counts()[2]
    assert _captured(nodes, 0x5000, 40) == expected
    assert _counts()[2] == missed + 1


def test_a_wrong_last_guess_is_found_at_the_capture_end(nodes: Any) -> None:
    expected = _graph(nodes, 5, 20, skip_at=19)
    assert _captured(nodes, 0x5000, 20) == expected


def test_guesses_not_yet_checked_are_held_back_and_dropped_with_a_failed_capture(
    nodes: Any,
) -> None:
    expected = _graph(nodes, 5, 20)
    native.capturing(1)
    for i in range(20):
        nodes.make(0x5000, 0x5000 + i)
    native.drain()  # nodes 0 and 16 were asked; 17 to 19 are guesses not checked yet
    assert [s[0] for s in nodes.sink] == expected[:17]
    native.capturing(0, False)  # a failed capture: its graph may be gone, so nothing is asked
    asked = len(nodes.asked)
    native.drain()
    assert [s[0] for s in nodes.sink] == expected[:17] and len(nodes.asked) == asked


def test_two_graphs_interleaved_and_two_captures_at_once_are_asked_as_they_need(
    nodes: Any,
) -> None:
    first, second = _graph(nodes, 5, 30), _graph(nodes, 6, 30)
    native.capturing(1)
    for i in range(30):  # a capture that also adds to a child graph: each switch asks
        nodes.make(0x5000, 0x5000 + i)
        if i % 10 == 9:
            nodes.make(0x6000, 0x6000 + i // 10)
    native.capturing(2)  # another capture begins: every id is asked while two run
    asked = len(nodes.asked)
    for i in range(3, 30):
        nodes.make(0x6000, 0x6000 + i)
    assert len(nodes.asked) - asked == 27
    native.capturing(1)
    native.capturing(0)
    native.drain()
    got = [s[0] for s in nodes.sink]
    assert sorted(got) == sorted(first + second) and len(got) == 60
    assert [g for g in got if g >> 32 == 5] == first  # in the order they were made


def test_outside_a_capture_or_when_told_every_id_is_asked(nodes: Any) -> None:
    expected = _graph(nodes, 5, 10)
    for i in range(5):  # no capture runs (capture's own labeller)
        nodes.make(0x5000, 0x5000 + i)
    native.capturing(1)
    native.guess_ids(False)
    for i in range(5, 10):
        nodes.make(0x5000, 0x5000 + i)
    native.capturing(0)
    native.drain()
    assert [s[0] for s in nodes.sink] == expected and len(nodes.asked) == 10


_STEPS = st.lists(
    st.one_of(
        # a run of nodes of one graph, and where in it CUDA's local ids jump (0: nowhere)
        st.tuples(st.just("make"), st.sampled_from([5, 6]), st.integers(1, 40), st.integers(0, 40)),
        st.tuples(st.just("begin"), st.just(0), st.just(0), st.just(0)),
        st.tuples(st.just("end"), st.just(0), st.booleans(), st.just(0)),  # ended well
        st.tuples(st.just("drain"), st.just(0), st.just(0), st.just(0)),
    ),
    max_size=40,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=_STEPS)
def test_no_wrong_id_is_ever_handed_over(
    nodes: Any, steps: list[tuple[str, int, int, int]]
) -> None:
    """Whatever the order of nodes, id jumps, captures and drains: every id handed over is a
    node's true id, once; with no failed capture, every node's id is handed over."""
    native.drain()
    nodes.sink.clear()
    nodes.ids.clear()
    native.capturing(0, False)
    local = {5: 0, 6: 0}
    made: list[int] = []
    count, failed = 0, False
    for what, graph, flag, jump in steps:
        if what == "make":
            for i in range(1, flag + 1):
                local[graph] += 1 + (i == jump)
                node = 0x1000 * graph + len(made)
                nodes.ids[node] = (graph << 32) | local[graph]
                made.append(nodes.ids[node])
                nodes.make(0x1000 * graph, node)
        elif what == "begin":
            count += 1
            native.capturing(count)
        elif what == "end" and count:
            count -= 1
            failed = failed or not flag
            native.capturing(count, flag)
        elif what == "drain":
            native.drain()
    native.capturing(0, True)
    native.drain()
    handed = [s[0] for s in nodes.sink]
    assert len(handed) == len(set(handed)) and set(handed) <= set(made)
    if not failed:
        assert sorted(handed) == sorted(made)


def test_nodes_made_on_another_thread_are_each_asked(nodes: Any) -> None:
    """Only the thread that began the capture has its ids guessed: another thread may build a
    graph by hand and destroy it at once, and a guess would be checked against its nodes."""
    import threading

    expected = _graph(nodes, 5, 20)
    native.capturing(1)
    worker = threading.Thread(target=lambda: [nodes.make(0x5000, 0x5000 + i) for i in range(20)])
    worker.start()
    worker.join()
    native.capturing(0)
    native.drain()
    assert [s[0] for s in nodes.sink] == expected and len(nodes.asked) == 20


def test_only_the_captures_own_graph_is_chained_and_checked_against_the_graph_it_ended_with(
    nodes: Any,
) -> None:
    """The first graph the capturing thread adds to is the capture's; a graph a library builds
    by hand meanwhile is asked node by node (it may be destroyed at once). At the end, the
    guesses are checked only if the capture ended with the chained graph, else dropped."""
    captured, by_hand = _graph(nodes, 5, 20), _graph(nodes, 6, 20)
    native.capturing(1)
    for i in range(10):
        nodes.make(0x5000, 0x5000 + i)
    asked = len(nodes.asked)
    for i in range(20):
        nodes.make(0x6000, 0x6000 + i)
    assert len(nodes.asked) - asked == 21  # the capture's chain checked once, then each asked
    for i in range(10, 20):
        nodes.make(0x5000, 0x5000 + i)
    native.capturing(0, True, 0x5000)  # ended with the chained graph: its guesses are checked
    native.drain()
    got = [s[0] for s in nodes.sink]
    assert [g for g in got if g >> 32 == 5] == captured and [
        g for g in got if g >> 32 == 6
    ] == by_hand

    nodes.sink.clear()
    again = _graph(nodes, 7, 20)
    native.capturing(1)
    for i in range(20):
        nodes.make(0x7000, 0x7000 + i)
    asked = len(nodes.asked)
    native.capturing(0, True, 0x9000)  # another graph: the unchecked guesses go, unasked
    native.drain()
    assert [s[0] for s in nodes.sink] == again[:17] and len(nodes.asked) == asked
