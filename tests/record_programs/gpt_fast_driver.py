"""Decode with gpt-fast's own ``generate.py`` and ``model.py``, unchanged, under reduce-overhead.

gpt-fast (github.com/pytorch-labs/gpt-fast) is not part of this repository: point
``--gpt-fast`` (or ``GPT_FAST_DIR``) at a checkout. Its ``main()`` needs a downloaded
checkpoint and tokenizer, so this driver does what ``main()`` does around them: builds a
``Transformer`` from a ``ModelArgs`` (random weights, bfloat16), compiles ``decode_one_token``
with ``torch.compile(mode="reduce-overhead", fullgraph=True)`` exactly as ``main()`` does, and
calls gpt-fast's ``generate()`` once per ``--batch-sizes`` entry. Prints one JSON line per call.

    python tests/record_programs/gpt_fast_driver.py --gpt-fast ~/gpt-fast --batch-sizes 1 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpt-fast", default=os.environ.get("GPT_FAST_DIR"), metavar="DIR")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 1, 2])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--prompt", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=100)
    parser.add_argument("--no-compile", action="store_true", help="run decode eagerly")
    args = parser.parse_args()
    if not args.gpt_fast or not os.path.isfile(os.path.join(args.gpt_fast, "generate.py")):
        sys.exit("gpt_fast_driver: --gpt-fast DIR must hold gpt-fast's generate.py and model.py")
    sys.path.insert(0, os.path.abspath(args.gpt_fast))
    import generate as gpt_fast  # gpt-fast's generate.py, as it is
    import torch
    from model import ModelArgs, Transformer  # gpt-fast's model.py

    torch.manual_seed(1234)
    config = ModelArgs(
        block_size=1024, vocab_size=args.vocab, n_layer=args.layers, n_head=args.heads, dim=args.dim
    )
    with torch.device("cuda"):
        model = Transformer(config)
    model = model.to(dtype=torch.bfloat16).eval()
    if not args.no_compile:
        # What gpt-fast's main() does with --compile.
        gpt_fast.decode_one_token = torch.compile(
            gpt_fast.decode_one_token, mode="reduce-overhead", fullgraph=True
        )
    for batch in args.batch_sizes:
        prompt = torch.randint(0, args.vocab, (args.prompt,), device="cuda", dtype=torch.int)
        torch.cuda.synchronize()
        started = time.perf_counter()
        y, _ = gpt_fast.generate(
            model,
            prompt,
            args.new_tokens,
            batch_size=batch,
            interactive=False,
            draft_model=None,
            temperature=0.8,
            top_k=200,
        )
        torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        tokens = y.size(-1) - args.prompt
        print(
            json.dumps(
                {
                    "program": "gpt_fast",
                    "batch": batch,
                    "tokens": int(tokens),
                    "seconds": seconds,
                    "tokens_per_s": tokens / seconds,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
