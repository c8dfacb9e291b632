"""A serving loop whose batches outgrow its largest graph: graphs for batches 1, 2 and 4, and
from some point on batches of 5 to 8, which run eagerly with no word said (as SGLang and
vLLM fall back when a batch is past their largest captured size).

A user's program, with nothing of graphscope in it. It decodes with the graphs of
``torch_buckets.py`` for ``--graphed-seconds``, then with batches too large for any graph
for ``--eager-seconds`` (and with graphs again for ``--graphed-again-seconds``), and prints
one JSON line.

    python tests/record_programs/outgrow.py --graphed-seconds 3 --eager-seconds 6
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch_buckets import Decoder, capture


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buckets", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--graphed-seconds", type=float, default=3.0)
    parser.add_argument("--eager-seconds", type=float, default=6.0)
    parser.add_argument(
        "--graphed-again-seconds", type=float, default=0.0, help="then batches with graphs again"
    )
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    buckets = sorted(args.buckets)
    model = Decoder(4096, 256, 4, args.layers, args.max_batch, 256).to("cuda", torch.float16)
    model = model.eval()
    tokens = torch.zeros(args.max_batch, 1, dtype=torch.long, device="cuda")
    pos = torch.zeros(1, dtype=torch.long, device="cuda")
    graphs, outputs, _ = capture(model, tokens, pos, buckets)
    sizes = torch.Generator().manual_seed(1)
    replays = eager = 0
    with torch.no_grad():
        for seconds, low, high in (
            (args.graphed_seconds, 1, buckets[-1]),  # every batch has a graph
            (args.eager_seconds, buckets[-1] + 1, args.max_batch),  # none has
            (args.graphed_again_seconds, 1, buckets[-1]),
        ):
            ends = time.perf_counter() + seconds
            while time.perf_counter() < ends:
                size = int(torch.randint(low, high + 1, (1,), generator=sizes))
                bucket = next((b for b in buckets if b >= size), None)
                if bucket is None:  # past the largest graph: the model runs eagerly
                    model(tokens[:size], pos)
                    eager += 1
                else:
                    graphs[bucket].replay()
                    tokens[:bucket].copy_(outputs[bucket])
                    replays += 1
                pos.remainder_(250).add_(1)
                torch.cuda.synchronize()
    print(json.dumps({"replays": replays, "eager_steps": eager, "largest_graph": buckets[-1]}))


if __name__ == "__main__":
    main()
