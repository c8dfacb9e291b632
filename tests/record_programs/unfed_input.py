"""A graph input that nothing feeds: the step rebinds a name instead of copying into the tensor.

A user's program, with nothing of graphscope in it. The decoder of ``torch_buckets.py`` is
captured with ``torch.cuda.graph`` on static buffers of tokens and a position, then scores a
random text one token a step, as a loop that feeds known tokens does. Each step copies the
position into its buffer, but binds the name ``tokens`` to the step's slice of the text
(``tokens = text[:, i]``) where it should copy it in (``tokens.copy_(...)``: ``--copy``). The
captured buffer is still held (``static``), so nothing frees it: the graph reads the first
tokens at every replay, and nothing raises. After a rest (the program's first graph is read
then), the loop runs for ``--seconds`` and prints one JSON line with the largest difference
between the last replay's logits and an eager step on the same tokens and position.

    python tests/record_programs/unfed_input.py --seconds 5
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch_buckets import Decoder, capture


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="how long the loop runs")
    parser.add_argument("--copy", action="store_true", help="copy the tokens in instead")
    parser.add_argument("--rest", type=float, default=2.0, help="seconds of rest after capture")
    args = parser.parse_args()
    torch.manual_seed(0)
    batch, vocab, length = 4, 1024, 64
    model = Decoder(vocab, 256, 4, 2, batch, length).to("cuda", torch.float16).eval()
    logits = torch.zeros(batch, 1, vocab, device="cuda", dtype=torch.float16)
    model.lm_head.register_forward_hook(lambda m, a, out: logits.copy_(out))  # the graph's too
    static = {
        "tokens": torch.zeros(batch, 1, dtype=torch.long, device="cuda"),
        "pos": torch.zeros(1, dtype=torch.long, device="cuda"),
    }
    graph = capture(model, static["tokens"], static["pos"], [batch])[0][batch]
    torch.cuda.synchronize()
    time.sleep(args.rest)
    text = torch.randint(0, vocab, (batch, 100_000), device="cuda")
    tokens, pos = static["tokens"], static["pos"]
    steps, until = 0, time.perf_counter() + args.seconds
    with torch.no_grad():
        while time.perf_counter() < until:
            at = steps % text.shape[1]
            step_tokens = text[:, at : at + 1]
            if args.copy:
                tokens.copy_(step_tokens)
            else:
                tokens = step_tokens  # planted: the graph reads static["tokens"], never fed
            pos.fill_(steps % length)
            graph.replay()
            torch.cuda.synchronize()  # a decode loop reads each step's result
            steps += 1
        from_graph = logits.clone()
        model(step_tokens, pos)  # eagerly, on the step's own tokens and position
        torch.cuda.synchronize()
        difference = (from_graph.float() - logits.float()).abs().max().item()
    result = {"input": "copy" if args.copy else "rebound", "replays": steps}
    print(json.dumps({**result, "graph_against_eager_max_abs": difference}))


if __name__ == "__main__":
    main()
