"""Hugging Face ``generate`` with a static cache, which compiles the forward by itself.

A user's program, with nothing of graphscope in it. A small Llama (random weights, built
from a config: nothing is downloaded) generates with ``cache_implementation="static"``;
transformers then compiles the decoding forward with ``torch.compile(mode="reduce-overhead")``
and Inductor captures CUDA graphs. ``--batches`` runs one generate call per entry, so a new
batch size makes torch record a new graph. Prints one JSON line per call.

    python tests/record_programs/hf_generate.py --batches 1 1 2 --new-tokens 48
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 1, 2])
    parser.add_argument("--new-tokens", type=int, default=48)
    parser.add_argument("--prompt", type=int, default=16)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=4096,
        hidden_size=512,
        intermediate_size=1376,
        num_hidden_layers=args.layers,
        num_attention_heads=8,
        num_key_value_heads=8,
        max_position_embeddings=512,
    )
    model = LlamaForCausalLM(config).to("cuda", torch.float16).eval()
    for batch in args.batches:
        prompt = torch.randint(0, config.vocab_size, (batch, args.prompt), device="cuda")
        started = time.perf_counter()
        out = model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=args.new_tokens,
            min_new_tokens=args.new_tokens,
            do_sample=False,
            cache_implementation="static",
            pad_token_id=0,
        )
        torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        print(
            json.dumps(
                {
                    "program": "hf_generate",
                    "batch": batch,
                    "new_tokens": int(out.shape[1] - prompt.shape[1]),
                    "seconds": seconds,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
