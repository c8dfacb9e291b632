"""A JAX decode loop: a jitted step XLA runs as CUDA graphs (command buffers), no torch.

    python tests/record_programs/jax_decode.py --steps 200

Prints one JSON line: steps run, and the loop's seconds.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp


@jax.jit
def step(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    for _ in range(8):  # eight small layers, fused by XLA into a handful of kernels
        x = jnp.tanh(x @ w + b)
    return x


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (8, 256))
    w = jax.random.normal(key, (256, 256)) * 0.05
    b = jnp.zeros((256,))
    start = time.perf_counter()
    for _ in range(args.steps):
        x = step(x, w, b)
    x.block_until_ready()
    seconds = time.perf_counter() - start
    print(json.dumps({"steps": args.steps, "loop_s": seconds, "checksum": float(x.sum())}))


if __name__ == "__main__":
    main()
