"""On the GPU machine: where a recorded decode loop's time goes, one CUPTI setting at a time.

    python benchmarks/bench_cupti_sustained.py MODE   # prints JSON lines; STEPS=1500 by default

The loop of ``tests/record_programs/torch_buckets.py`` (8 layers, dim 1024, buckets 1 2 4, a
copy and an add between replays), run in one process per MODE:

- ``plain``: nothing of graphscope or CUPTI;
- ``cb_noop`` / ``cb_noop_rt``: a no-op Python callback on every graph launch (runtime and
  driver, or runtime only), through graphscope's subscriber;
- ``act_on`` / ``act_on_small``: CONCURRENT_KERNEL, MEMCPY and MEMSET traced throughout,
  no callbacks (64 MB host buffers, or 4 MB); ``_noeager`` drops the copy and add between
  replays, ``_onegraph`` replays one graph only;
- ``act_toggle``: tracing on for the first 60 launches only;
- ``rec_nowin``, ``rec_default``, ``rec_every``: ``graphscope.capture.record.record()`` with
  no sampling, the default sampling, and every replay traced; ``_prof`` adds a cProfile.

Each line gives the loop's wall and GPU time, the launch call's CPU time (median, p99, the
100 slowest), CUPTI buffer requests and completions, and the subscriber's dispatch time; then
500 more steps after a 2.5 s rest. docs/RECORD.md has the figures.
"""

import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "record_programs"))
import torch_buckets  # noqa: E402

mode = sys.argv[1]
STEPS = int(os.environ.get("STEPS", "1500"))
stats = {"mode": mode}

from cupti import cupti as api  # noqa: E402
from graphscope.capture import callbacks, trace  # noqa: E402

buf = {"req": 0, "req_s": 0.0, "done": 0, "done_s": 0.0, "records": 0}
orig_req, orig_done = trace._buffer_requested, trace._buffer_completed


def req():
    t = time.perf_counter()
    try:
        return orig_req()
    finally:
        buf["req"] += 1
        buf["req_s"] += time.perf_counter() - t


def done(acts):
    t = time.perf_counter()
    try:
        buf["records"] += len(acts)
        return orig_done(acts)
    finally:
        buf["done"] += 1
        buf["done_s"] += time.perf_counter() - t


trace._buffer_requested, trace._buffer_completed = req, done
if "small" in mode:
    trace._BUFFER_BYTES = 4 << 20
if "nodev" in mode:
    trace._DEVICE_BUFFER_BYTES = 3200000
disp = {"n": 0, "s": 0.0}
orig_dispatch = callbacks.Subscriber._dispatch


def timed_dispatch(self, *a):
    t = time.perf_counter()
    try:
        return orig_dispatch(self, *a)
    finally:
        disp["n"] += 1
        disp["s"] += time.perf_counter() - t


callbacks.Subscriber._dispatch = timed_dispatch


class Counter:
    def consume(self, acts):
        pass


torch.manual_seed(0)
buckets = [1, 2, 4]
model = torch_buckets.Decoder(4096, 1024, 8, 8, 4, 256).to("cuda", torch.float16).eval()
tokens = torch.zeros(4, 1, dtype=torch.long, device="cuda")
pos = torch.zeros(1, dtype=torch.long, device="cuda")
ctx = None
rec_dir = tempfile.mkdtemp()
if mode.startswith("rec"):
    from graphscope.capture import record

    from graphscope.recording import Settings

    settings = Settings()
    if "every" in mode:
        settings = Settings(first=10**9)
    if "nowin" in mode:
        settings = Settings(first=0, every_s=0)
    if "noattr" in mode:
        import dataclasses

        settings = dataclasses.replace(settings, attribution=False)
    ctx = record.record(rec_dir, settings)
    ctx.__enter__()
launches = {"n": 0}
toggle_state = {"on": False}


def noop(cbdata):
    launches["n"] += 1


def toggler(cbdata):
    if int(cbdata.callback_site) != 0:
        return
    launches["n"] += 1
    want = launches["n"] <= 60
    if want != toggle_state["on"]:
        trace.enable_kinds(trace.GPU_KINDS, enable=want)
        toggle_state["on"] = want


if mode in ("cb_noop", "cb_noop_rt"):
    sub = callbacks.subscriber()
    doms = [(api.CallbackDomain.RUNTIME_API, api.runtime_api_trace_cbid)]
    if mode == "cb_noop":
        doms.append((api.CallbackDomain.DRIVER_API, api.driver_api_trace_cbid))
    for dom, enum in doms:
        for cbid in callbacks.callback_ids(enum, ("cudaGraphLaunch", "cuGraphLaunch")):
            sub.on(dom, cbid, noop, print)
if mode.startswith("act_on"):
    trace.start_activities(Counter(), trace.GPU_KINDS)
if mode == "act_toggle":
    trace.start_activities(Counter(), trace.GPU_KINDS)
    trace.enable_kinds(trace.GPU_KINDS, enable=False)
    sub = callbacks.subscriber()
    for cbid in callbacks.callback_ids(api.runtime_api_trace_cbid, ("cudaGraphLaunch",)):
        sub.on(api.CallbackDomain.RUNTIME_API, cbid, toggler, print)

t0 = time.perf_counter()
graphs, outputs, _ = torch_buckets.capture(model, tokens, pos, buckets)
stats["capture_s"] = time.perf_counter() - t0
gen = torch.Generator().manual_seed(1)
sizes = torch.randint(1, 5, (STEPS,), generator=gen).tolist()
prof = cProfile.Profile() if "prof" in mode else None
marks = []
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
if prof:
    prof.enable()
start = time.perf_counter()
e0.record()
for step, size in enumerate(sizes):
    b = 4 if "onegraph" in mode else next(x for x in buckets if x >= size)
    t = time.perf_counter()
    graphs[b].replay()
    marks.append(time.perf_counter() - t)
    if "noeager" in mode:
        continue
    tokens[:b].copy_(outputs[b])
    if step % 255 == 254:
        pos.zero_()  # pos stays below the cache length (256)
    else:
        pos.add_(1)
e1.record()
torch.cuda.synchronize()
stats["decode_s"] = time.perf_counter() - start
if prof:
    prof.disable()
stats["gpu_s"] = e0.elapsed_time(e1) / 1e3
marks.sort()
stats["replay_call_us"] = {
    "median": marks[len(marks) // 2] * 1e6,
    "p99": marks[int(len(marks) * 0.99)] * 1e6,
    "max": marks[-1] * 1e6,
    "sum_s": sum(marks),
    "top100_s": sum(marks[-100:]),
}
stats["buffers_loop"] = dict(buf)
stats["dispatch_loop"] = dict(disp)
print(json.dumps(stats), flush=True)
# steady state: another 500 steps after 2.5 s rest (recorder's build done)
time.sleep(2.5)
pos.zero_()
start = time.perf_counter()
for step, size in enumerate(sizes[:500]):
    b = next(x for x in buckets if x >= size)
    graphs[b].replay()
    tokens[:b].copy_(outputs[b])
    pos.add_(1) if step % 255 != 254 else pos.zero_()
torch.cuda.synchronize()
stats["steady500_s"] = time.perf_counter() - start
stats["buffers"] = buf
stats["dispatch"] = disp
stats["launch_cb"] = launches["n"]
if ctx is not None:
    from graphscope.capture import record as rmod

    r = rmod.current()
    if r is not None:
        stats["traced"] = {life.id: life.traced for life in r.lives}
        stats["replays"] = {life.id: life.replays for life in r.lives}
    ctx.__exit__(None, None, None)
if prof:
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
    stats["profile"] = s.getvalue()[-6000:]
print(json.dumps(stats), flush=True)
