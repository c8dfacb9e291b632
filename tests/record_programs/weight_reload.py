"""A weight reload under a live graph: the parameters rebound to new memory, the graph still
reading the old.

A user's program, with nothing of graphscope in it. The decoder of ``torch_buckets.py`` is
captured with ``torch.cuda.graph`` and replayed; then its weights are reloaded as some
serving and RL loops do it, each parameter rebound to a new tensor (``param.data = new``)
where it should have been copied into (``param.data.copy_(new)``, which keeps the address:
``--copy``). The graph keeps the old addresses: its output stops following the weights, and
nothing raises. The program replays on for ``--seconds`` and prints one JSON line with the
largest difference between the graph's logits and an eager step after the reload.

    python tests/record_programs/weight_reload.py --seconds 3
"""

from __future__ import annotations

import argparse
import json

import torch
from torch_buckets import Decoder, replay_for


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="replays after the reload")
    parser.add_argument("--copy", action="store_true", help="reload by copying in place")
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    batch = 4
    model = Decoder(1024, 256, 4, args.layers, batch, 64).to("cuda", torch.float16).eval()
    model.lm_head.register_forward_hook(lambda m, a, out: logits.copy_(out))  # the graph's too
    logits = torch.zeros(batch, 1, 1024, device="cuda", dtype=torch.float16)
    tokens = torch.zeros(batch, 1, dtype=torch.long, device="cuda")
    pos = torch.zeros(1, dtype=torch.long, device="cuda")
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(tokens, pos)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(tokens, pos)
        for _ in range(50):
            graph.replay()
        # The reload: new weights, half again as large.
        for param in model.parameters():
            new = param.detach() * 1.5
            if args.copy:
                param.data.copy_(new)
            else:
                param.data = new
        replays = replay_for(graph, args.seconds)
        from_graph = logits.clone()
        model(tokens, pos)  # eagerly, with the weights as they are now
        torch.cuda.synchronize()
        difference = (from_graph - logits).abs().max().item()
    result = {"reload": "copy" if args.copy else "rebind", "replays": replays}
    print(json.dumps({**result, "graph_against_eager_max_abs": difference}))


if __name__ == "__main__":
    main()
