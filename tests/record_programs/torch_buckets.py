"""A decode loop as SGLang runs one: a graph per batch-size bucket, one shared memory pool.

A user's program, with nothing of graphscope in it: ``graphscope record`` is tried on it (and
on ``spawn_worker.py``, which runs it in a spawned process). A small Llama-like decoder
(RMSNorm, attention over a static KV cache, SiLU MLP) is captured with ``torch.cuda.graph``
for each bucket, all graphs in one pool from ``torch.cuda.graph_pool_handle()``, then decodes
``--steps`` tokens for batches of varying size, each padded up to its bucket and replayed.
Prints one JSON line with its own timings.

    python tests/record_programs/torch_buckets.py --buckets 1 2 4 --steps 300
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int, batch: int, length: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)
        shape = (batch, heads, length, self.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape), persistent=False)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        q, k, v = self.qkv(x).view(b, 1, 3, self.heads, self.head_dim).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        keys, values = self.k_cache[:b], self.v_cache[:b]
        keys.index_copy_(2, pos, k)
        values.index_copy_(2, pos, v)
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        return self.o_proj(out.transpose(1, 2).reshape(b, 1, -1))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, batch: int, length: int) -> None:
        super().__init__()
        self.attn_norm, self.mlp_norm = RMSNorm(dim), RMSNorm(dim)
        self.attn = Attention(dim, heads, batch, length)
        self.gate_up = nn.Linear(dim, 2 * 4 * dim, bias=False)
        self.down = nn.Linear(4 * dim, dim, bias=False)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), pos, mask)
        gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Decoder(nn.Module):
    def __init__(self, vocab: int, dim: int, heads: int, layers: int, batch: int, length: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(Block(dim, heads, batch, length) for _ in range(layers))
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.length = length

    def forward(self, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        mask = (torch.arange(self.length, device=tokens.device) <= pos).view(1, 1, 1, -1)
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, pos, mask)
        return self.lm_head(self.norm(x)).argmax(-1)


def deep_decoder(layers: int, device: str = "cuda") -> tuple[Decoder, torch.Tensor, torch.Tensor]:
    """The benchmarks' deep decoder (dim 256, batch 4, 256 positions; float16 on a GPU) in
    eval mode, with a decode step's tokens and position: ``model(tokens, pos)`` is one step.
    400 layers capture as a 10,411-node graph."""
    dtype = torch.float16 if device == "cuda" else torch.float32
    model = Decoder(4096, 256, 4, layers, 4, 256).to(device, dtype).eval()
    tokens = torch.zeros(4, 1, dtype=torch.long, device=device)
    pos = torch.zeros(1, dtype=torch.long, device=device)
    return model, tokens, pos


def warm_up(step: Callable[[], object], times: int) -> None:
    """Run ``step`` ``times`` times on a side stream, as torch asks before a capture (also
    used by the benchmarks that capture this decoder)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(times):
            step()
    torch.cuda.current_stream().wait_stream(side)


def capture(
    model: nn.Module, tokens: torch.Tensor, pos: torch.Tensor, buckets: list[int]
) -> tuple[dict[int, torch.cuda.CUDAGraph], dict[int, torch.Tensor], float]:
    """A graph per bucket, in one pool, each graph's output (``buckets`` ascending), and the
    seconds spent in the captures themselves (``torch.cuda.graph``, instantiation included)."""
    graph_s = 0.0
    outputs: dict[int, torch.Tensor] = {}
    graphs: dict[int, torch.cuda.CUDAGraph] = {}
    pool = torch.cuda.graph_pool_handle()
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for bs in buckets:  # warm up every shape before any capture
                for _ in range(3):
                    model(tokens[:bs], pos)
        torch.cuda.current_stream().wait_stream(side)
        for bs in reversed(buckets):  # largest first, as SGLang does, so the pool is reused
            graph = torch.cuda.CUDAGraph()
            torch.cuda.synchronize()
            started = time.perf_counter()
            with torch.cuda.graph(graph, pool=pool):
                outputs[bs] = model(tokens[:bs], pos)
            graph_s += time.perf_counter() - started
            graphs[bs] = graph
    torch.cuda.synchronize()
    return graphs, outputs, graph_s


def replay_for(graph: torch.cuda.CUDAGraph, seconds: float) -> int:
    """Replay ``graph`` back to back for ``seconds``, synchronising every 100 replays so the
    queue stays short; how many replays ran."""
    replays, until = 0, time.perf_counter() + seconds
    while time.perf_counter() < until:
        graph.replay()
        replays += 1
        if replays % 100 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return replays


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buckets", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument(
        "--rounds", type=int, default=1, help="capture the buckets this many times (the last kept)"
    )
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    buckets = sorted(args.buckets)
    largest = buckets[-1]
    model = Decoder(args.vocab, args.dim, args.heads, args.layers, largest, args.length)
    model = model.to("cuda", torch.float16).eval()
    tokens = torch.zeros(largest, 1, dtype=torch.long, device="cuda")  # static input
    pos = torch.zeros(1, dtype=torch.long, device="cuda")
    started = time.perf_counter()
    rounds_s = []
    for _ in range(max(1, args.rounds)):  # the first capture of a process, then later ones
        graphs, outputs, graph_s = capture(model, tokens, pos, buckets)
        rounds_s.append(graph_s)
    graph_s = rounds_s[0]
    capture_s = time.perf_counter() - started
    generator = torch.Generator().manual_seed(1)
    sizes = torch.randint(1, largest + 1, (args.steps,), generator=generator).tolist()
    started = time.perf_counter()
    for step, size in enumerate(sizes):
        bucket = next(b for b in buckets if b >= size)
        graphs[bucket].replay()
        tokens[:bucket].copy_(outputs[bucket])  # the next token, fed back in place
        if step % (args.length - 1) == args.length - 2:
            pos.zero_()
        else:
            pos.add_(1)
    torch.cuda.synchronize()
    decode_s = time.perf_counter() - started
    used = {b: sum(1 for s in sizes if next(x for x in buckets if x >= s) == b) for b in buckets}
    print(
        json.dumps(
            {
                "program": "torch_buckets",
                "capture_s": capture_s,
                "graph_capture_s": graph_s,
                "graph_capture_rounds_s": rounds_s,
                "decode_s": decode_s,
                "steps": args.steps,
                "step_us": decode_s / args.steps * 1e6,
                "replays_per_bucket": used,
                "ended_at": time.time(),  # the program's last statement: see bench_record
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
