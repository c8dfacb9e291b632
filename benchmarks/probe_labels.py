"""Probe: where a recorded capture's labelling time goes, part by part.

``record`` labels each node a capture creates with the running module and the user's line:
a CUPTI ``GRAPHNODE_CREATED`` callback walks the Python frames once per node, in C
(``capture/_labeller.c``) where the install built it, else in Python, and reads both from
them (global module hooks kept the module stack before: "module hooks (no-op)" shows what
they cost). At instantiation the recorder reads where the model's parameters are
(``pointers.parameter_spans``). This captures the deep decoder of ``torch_buckets.py`` with
``torch.cuda.graph`` (instantiation included) under each part alone and all together, and
under the whole recorder, alternately, in one process, and prints one JSON line per variant
with the median capture time and its cost per node against the plain capture.

    python benchmarks/probe_labels.py --layers 400 --repeats 3      # on the GPU machine
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "record_programs"))


def _variants() -> dict[str, Callable[[], contextlib.AbstractContextManager[Any]]]:
    import torch
    from graphscope.capture import callbacks
    from graphscope.capture._cuda import cupti, libcupti
    from graphscope.capture.attribution import Attribution

    api = cupti()
    created = (api.CallbackDomain.RESOURCE, api.CallbackIdResource.GRAPHNODE_CREATED)
    hooks = torch.nn.modules.module

    @contextlib.contextmanager
    def plain() -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def module_hooks() -> Iterator[None]:  # no-op global hooks: torch's slow call path
        handles = [
            hooks.register_module_forward_pre_hook(lambda m, a: None),
            hooks.register_module_forward_hook(lambda m, a, o: None),
        ]
        yield
        for h in handles:
            h.remove()

    @contextlib.contextmanager
    def attribution_hooks() -> Iterator[None]:  # attribution active, no node callback
        attribution = Attribution(track_ops=False)
        attribution.activate()
        yield
        attribution.deactivate()

    def callback(handler: Callable[[Any], None]) -> Callable[[], Any]:
        @contextlib.contextmanager
        def run() -> Iterator[None]:
            sub = callbacks.subscriber()
            sub.on(*created, handler, lambda exc: print("handler failed:", exc))
            yield
            sub.off(*created, handler)

        return run

    frames = Attribution(track_ops=False).frames
    store: list[Any] = []

    def walk(cbdata: Any) -> None:
        store.append((callbacks.created_node_id(cbdata), frames.user_frame(sys._getframe(1))))

    def attribution(native: bool) -> Callable[[], Any]:
        @contextlib.contextmanager
        def run() -> Iterator[None]:
            with Attribution(track_ops=False, native=native) as labels:
                yield
            assert labels.labeller == ("C" if native else "Python"), labels.labeller

        return run

    def cupti_in_c(cbid: int) -> Callable[[], Any]:
        """A subscription of CUPTI's own, calling a C function that does nothing: libc's
        free(NULL) (CUPTI passes the NULL userdata first). What CUPTI itself costs."""

        @contextlib.contextmanager
        def run() -> Iterator[None]:
            lib = libcupti()
            assert lib is not None and not callbacks.subscriber().active
            handle = ctypes.c_void_p()
            free = ctypes.cast(ctypes.CDLL(None).free, ctypes.c_void_p)
            assert lib.cuptiSubscribe(ctypes.byref(handle), free, None) == 0
            assert lib.cuptiEnableCallback(1, handle, int(created[0]), cbid) == 0
            yield
            lib.cuptiUnsubscribe(handle)

        return run

    def c_walk(stage: int = 0) -> Callable[[], Any]:
        """The C labeller alone: its walk, the module's path; ``stage`` ends each label
        early (``_labeller.probe_stage``: 1 after taking the GIL, 2 after the node's id, 3
        after the walk)."""

        @contextlib.contextmanager
        def run() -> Iterator[None]:
            native = callbacks.native_labeller()
            sub = callbacks.subscriber()
            noop: Callable[[Any], None] = lambda cbdata: None  # noqa: E731
            sub.on(*created, noop, print)
            assert native is not None and sub.labels_natively
            names: dict[int, str] = {}

            def learn(module: Any, outermost: Any) -> str:
                names[id(module)] = type(module).__name__
                return names[id(module)]

            native.probe_stage(stage)
            native.start([], names, torch.nn.Module, {}, frames.kind, learn, print)
            try:
                yield
            finally:
                native.stop()
                native.probe_stage(0)
                sub.off(*created, noop)

        return run

    def recorder(
        attribution: bool, parameters: bool = True, clone: bool = True, collect: bool = True
    ) -> Callable[[], Any]:
        """The whole recorder of ``graphscope record``, started in this process; its bundles
        are built after the timed capture, when it finishes. ``parameters=False`` leaves out
        the walk of the model's parameters at instantiation (which names pointers),
        ``clone=False`` the graph's clone (nothing is then read), ``collect=False`` runs the
        capture with Python's cyclic garbage collector off."""
        from graphscope.capture.record import Recorder, graphs

        from graphscope.recording import Settings

        @contextlib.contextmanager
        def run() -> Iterator[None]:
            walk, cloner = graphs.parameter_spans, graphs.grab.clone
            if not parameters:
                graphs.parameter_spans = lambda roots: None  # type: ignore[assignment]
            if not clone:
                graphs.grab.clone = lambda graph: None  # type: ignore[assignment]
            try:
                with tempfile.TemporaryDirectory() as folder:
                    rec = Recorder(folder, Settings(attribution=attribution)).start()
                    if not collect:
                        gc.disable()
                    try:
                        yield
                    finally:
                        gc.enable()
                    rec.finish()
            finally:
                graphs.parameter_spans, graphs.grab.clone = walk, cloner

        return run

    @contextlib.contextmanager
    def no_collector() -> Iterator[None]:
        gc.disable()
        try:
            yield
        finally:
            gc.enable()

    def frame_objects(variant: Callable[[], Any]) -> Callable[[], Any]:
        """``variant`` with the C labeller walking frame objects through CPython's public
        API, as it must on versions other than 3.11 to 3.13."""

        @contextlib.contextmanager
        def run() -> Iterator[None]:
            native = callbacks.native_labeller()
            native.use_interpreter_frames(False)
            try:
                with variant():
                    yield
            finally:
                native.use_interpreter_frames(True)

        return run

    def ids_asked(variant: Callable[[], Any]) -> Callable[[], Any]:
        """``variant`` with the C labeller asking CUPTI for every node's id, none guessed."""

        @contextlib.contextmanager
        def run() -> Iterator[None]:
            native = callbacks.native_labeller()
            native.guess_ids(False)
            try:
                with variant():
                    yield
            finally:
                native.guess_ids(True)

        return run

    variants = {
        "plain": plain,
        "module hooks (no-op)": module_hooks,
        "attribution active, no node callback": attribution_hooks,
        "node callback (no-op)": callback(lambda cbdata: None),
        "node callback, id read": callback(
            lambda cbdata: store.append(callbacks.created_node_id(cbdata))
        ),
        "node callback, graph_data only": callback(
            lambda cbdata: store.append(callbacks.graph_data(cbdata))
        ),
        "node callback, id and user frame": callback(walk),
        "attribution, Python labeller": attribution(native=False),
    }
    if callbacks.native_labeller() is not None:
        variants["CUPTI subscribed, GRAPHEXEC_CREATED in C (no-op)"] = cupti_in_c(
            int(api.CallbackIdResource.GRAPHEXEC_CREATED)
        )
        variants["CUPTI node callback in C (no-op)"] = cupti_in_c(int(created[1]))
        variants["C labeller to the GIL taken"] = c_walk(1)
        variants["C labeller to the node's id"] = c_walk(2)
        variants["C labeller to the walk's end"] = c_walk(3)
        variants["C labeller alone (frames, module paths)"] = c_walk()
        variants["C labeller alone, frame objects"] = frame_objects(c_walk())
        variants["attribution, C labeller (record's default)"] = attribution(native=True)
    variants["recorder, --no-attribution"] = recorder(False)
    variants["recorder (default)"] = recorder(True)
    if callbacks.native_labeller() is not None:
        variants["recorder, frame objects"] = frame_objects(recorder(True))
    if callbacks.native_labeller() is not None:
        variants["recorder, every node id asked"] = ids_asked(recorder(True))
    variants["recorder, no parameter walk"] = recorder(True, parameters=False)
    variants["recorder, no clone"] = recorder(True, clone=False)
    variants["recorder, garbage collector off"] = recorder(True, collect=False)
    variants["plain, garbage collector off"] = no_collector
    return variants


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--only", nargs="*", default=None, help="variants whose names contain one of these words"
    )
    args = parser.parse_args()
    import torch
    from torch_buckets import deep_decoder

    model, tokens, pos = deep_decoder(args.layers)
    variants = _variants()
    if args.only:
        variants = {
            k: v for k, v in variants.items() if k == "plain" or any(w in k for w in args.only)
        }
    times: dict[str, list[float]] = {name: [] for name in variants}
    from graphscope.capture import callbacks

    native = callbacks.native_labeller()
    ids: dict[str, list[int]] = {name: [0, 0, 0] for name in variants}  # asked, guessed, missed
    nodes = 0
    with torch.no_grad():
        for _ in range(3):
            model(tokens, pos)
        for _ in range(args.repeats + 1):  # the first round warms every variant up
            for name, variant in variants.items():
                graph = torch.cuda.CUDAGraph()
                torch.cuda.synchronize()
                counted = native.id_counts() if native is not None else (0, 0, 0)
                with variant():
                    started = time.perf_counter()
                    with torch.cuda.graph(graph):
                        model(tokens, pos)
                    times[name].append(time.perf_counter() - started)
                if native is not None:
                    now = native.id_counts()
                    ids[name] = [a + n - c for a, n, c in zip(ids[name], now, counted, strict=True)]
                if not nodes:
                    from graphscope.capture import grab

                    probe = torch.cuda.CUDAGraph(keep_graph=True)
                    with torch.cuda.graph(probe):
                        model(tokens, pos)
                    nodes = grab.node_count(int(probe.raw_cuda_graph()))
                    del probe
                del graph
    base = statistics.median(times["plain"][1:])
    for name, runs in times.items():
        median = statistics.median(runs[1:])
        print(
            json.dumps(
                {
                    "variant": name,
                    "nodes": nodes,
                    "capture_s": round(median, 4),
                    "ratio": round(median / base, 3),
                    "added_us_per_node": round((median - base) / nodes * 1e6, 2),
                    "runs_s": [round(r, 4) for r in runs[1:]],
                    "node_ids_asked_guessed_missed": ids[name],
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
