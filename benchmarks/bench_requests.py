"""What checking each callback request costs a valid one (serve/protocol.py, view/inputs.py).

    python benchmarks/bench_requests.py [--rounds 30]

The page's own requests for every server callback (made as ``benchmarks/_fuzz_server.py``
makes them, with no hostile value) are sent through Flask's test client, in rounds that
alternate the app as it runs (the body's shape checked before Dash reads it, each value
before its callback runs) with the same app with both checks taken out. Prints, per
callback, the median time of a request each way, and the time of the checks alone on the
same bodies.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fuzz_server import Pool, _short, callback_body, served


def _checks(app: Any) -> tuple[Any, dict[str, tuple[Any, Any]]]:
    """The app's request check (a before_request function) and each callback's function,
    checked and not."""
    from graphscope.app.serve.protocol import Requests

    [hook] = [f for f in app.server.before_request_funcs[None] if isinstance(f, Requests)]
    functions = {
        output: (cb["callback"], cb["callback"].__wrapped__)
        for output, cb in app.callback_map.items()
        if getattr(cb.get("callback"), "checked", False)
    }
    return hook, functions


def _switch(app: Any, hook: Any, functions: dict[str, tuple[Any, Any]], on: bool) -> None:
    hooks = app.server.before_request_funcs[None]
    if on and hook not in hooks:
        hooks.append(hook)
    if not on and hook in hooks:
        hooks.remove(hook)
    for output, (checked, bare) in functions.items():
        app.callback_map[output]["callback"] = checked if on else bare


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    from graphscope.app.view.inputs import VALUES, key

    server = served()
    app, client = server.app, server.client
    app.server.config["PROPAGATE_EXCEPTIONS"] = False
    hook, functions = _checks(app)
    rng = random.Random(0)
    pool = Pool(server, rng)
    pool.source = pool.sources()[0]
    bodies: dict[str, list[bytes]] = {}
    for output in sorted(server.callbacks):
        pool.page = next((p for p in server.constants["pages"] if f"{p}-page" in output), "graph")
        made = [callback_body(pool, output, rng, 0, []) for _ in range(4)]
        bodies[output] = [json.dumps(b).encode() for b in made]
        for body in made:  # what the page learns from its answers, for the next bodies
            pool.harvest(client.post("/_dash-update-component", json=body))

    times: dict[tuple[str, bool], list[float]] = {}
    for i in range(args.rounds):
        for on in (i % 2 == 0, i % 2 != 0):
            _switch(app, hook, functions, on)
            for output, sent in bodies.items():
                for data in sent:
                    start = time.perf_counter()
                    client.post(
                        "/_dash-update-component", data=data, content_type="application/json"
                    )
                    times.setdefault((output, on), []).append(time.perf_counter() - start)
    _switch(app, hook, functions, True)

    alone: list[float] = []
    for output, sent in bodies.items():
        cb = server.callbacks[output]
        names = [key(d) for d in cb["inputs"] + cb["state"]]
        for data in sent:
            body = json.loads(data)
            start = time.perf_counter()
            for _ in range(100):
                hook.body_problem(body)
                flat = [
                    [x.get("value") for x in i] if isinstance(i, list) else i.get("value")
                    for i in body["inputs"] + body["state"]
                ]
                for name, value in zip(names, flat, strict=True):
                    VALUES[name](value)
            alone.append((time.perf_counter() - start) / 100)

    print(f"{'callback':44} {'checked':>10} {'unchecked':>10} {'difference':>11}")
    for output in bodies:
        on = statistics.median(times[(output, True)]) * 1e3
        off = statistics.median(times[(output, False)]) * 1e3
        print(f"{_short(output)[:44]:44} {on:8.2f} ms {off:8.2f} ms {on - off:+8.3f} ms")
    print(
        f"the checks alone, per request: median {statistics.median(alone) * 1e6:.1f} us, "
        f"most {max(alone) * 1e6:.1f} us ({len(alone)} bodies, {args.rounds} rounds)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
