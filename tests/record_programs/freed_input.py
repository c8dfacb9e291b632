"""A static input freed under a live graph: the graph still reads the memory it had.

A user's program, with nothing of graphscope in it. The decoder of ``torch_buckets.py`` is
captured with ``torch.cuda.graph`` on a static buffer of tokens and replayed; after a pause
(the program rests), the program makes its input buffer anew (``tokens = new``, as a loop
that rebuilds its inputs does) where it should have copied into it (``tokens.copy_(new)``:
``--copy``). The old buffer goes back to the allocator, free for the next tensor; the graph
goes on reading it, and nothing raises. The program replays on for ``--seconds`` and prints
one JSON line with the largest difference between the graph's logits and an eager step on
the new input.

    python tests/record_programs/freed_input.py --seconds 12
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch_buckets import Decoder, capture, replay_for


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0, help="replays after the free")
    parser.add_argument("--copy", action="store_true", help="copy into the input instead")
    parser.add_argument("--rest", type=float, default=2.0, help="seconds of rest after capture")
    args = parser.parse_args()
    torch.manual_seed(0)
    batch, vocab = 4, 1024
    model = Decoder(vocab, 256, 4, 2, batch, 64).to("cuda", torch.float16).eval()
    logits = torch.zeros(batch, 1, vocab, device="cuda", dtype=torch.float16)
    model.lm_head.register_forward_hook(lambda m, a, out: logits.copy_(out))  # the graph's too
    tokens = torch.randint(0, vocab, (batch, 1), device="cuda")
    pos = torch.zeros(1, dtype=torch.long, device="cuda")
    graph = capture(model, tokens, pos, [batch])[0][batch]  # on tokens[:4]: tokens itself
    with torch.no_grad():
        for _ in range(50):
            graph.replay()
        torch.cuda.synchronize()
        time.sleep(args.rest)
        new = torch.randint(0, vocab, (batch, 1), device="cuda")
        if args.copy:
            tokens.copy_(new)
        else:
            tokens = new  # the buffer the graph reads is freed
        replays = replay_for(graph, args.seconds)
        from_graph = logits.clone()
        model(tokens, pos)  # eagerly, on the input as the program holds it now
        torch.cuda.synchronize()
        difference = (from_graph.float() - logits.float()).abs().max().item()
    result = {"input": "copy" if args.copy else "made anew", "replays": replays}
    print(json.dumps({**result, "graph_against_eager_max_abs": difference}))


if __name__ == "__main__":
    main()
