"""Steps to capture: the factory protocol, tiny-gpt, tiny-llama, ``hf:PATH``, ``module:factory``.

A factory is called as ``factory(batch_size)`` and returns a :class:`Step`: a decode step that
reads and writes only static buffers (gpt-fast style), so it can be captured and replayed. No
weights are downloaded: the built-in models use random weights.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphscope.errors import CaptureError

from ._cuda import require


@dataclass
class Step:
    """One decode step over static buffers."""

    run: Callable[[], Any]  # the step; reads `inputs` and `state`, writes `outputs` and `state`
    inputs: dict[str, Any]  # static input tensors, updated in place between steps
    outputs: dict[str, Any] = field(default_factory=dict)  # static output tensors
    # The tensors a step mutates (KV cache, counters), asked for after prefill: timed replays
    # snapshot and restore them so that many replays stay within the cache.
    state: Callable[[], list[Any]] = field(default=lambda: [])
    prefill: Callable[[], Any] | None = None  # eager prompt processing before decode, if any
    model: Any = None  # the torch.nn.Module, for attribution hooks
    description: str = ""  # what the step is, for the bundle's metadata
    # Puts back state the step keeps outside tensors (a Python position counter), after each
    # restore of `state`; the step's branches may depend on it.
    reset: Callable[[], Any] | None = None
    # How many steps in a row `state` allows before it must be restored (free cache
    # positions); timed replays restore it at least this often. None: no limit of its own.
    capacity: int | None = None


def _tiny_gpt_module(
    torch: Any,
    layers: int,
    hidden: int,
    heads: int,
    vocab: int,
    max_len: int,
    batch: int,
    parallel: bool = False,
) -> Any:
    nn = torch.nn
    functional = torch.nn.functional
    # torch is imported lazily, so mypy has no types for it: the modules below subclass Any.
    Module: Any = nn.Module

    class Attention(Module):  # type: ignore[misc]  # Module is Any, see above
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
            self.proj = nn.Linear(hidden, hidden, bias=False)
            shape = (batch, heads, max_len, hidden // heads)
            self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
            self.register_buffer("v_cache", torch.zeros(shape), persistent=False)

        def forward(self, x: Any, pos: Any, mask: Any) -> Any:
            b, t, _ = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, heads, hidden // heads).unbind(2)
            q, k, v = (y.transpose(1, 2) for y in (q, k, v))
            self.k_cache.index_copy_(2, pos, k)
            self.v_cache.index_copy_(2, pos, v)
            y = functional.scaled_dot_product_attention(
                q, self.k_cache, self.v_cache, attn_mask=mask
            )
            return self.proj(y.transpose(1, 2).reshape(b, t, hidden))

    class Block(Module):  # type: ignore[misc]  # Module is Any, see above
        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(hidden)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(hidden)
            self.mlp = nn.Sequential(
                nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)
            )

        def forward(self, x: Any, pos: Any, mask: Any) -> Any:
            x = x + self.attn(self.ln_1(x), pos, mask)
            return x + self.mlp(self.ln_2(x))

    class ParallelBlock(Module):  # type: ignore[misc]  # Module is Any, see above
        """GPT-J's parallel residual, with the MLP on a second stream beside attention."""

        def __init__(self) -> None:
            super().__init__()
            self.ln = nn.LayerNorm(hidden)
            self.attn = Attention()
            self.mlp = nn.Sequential(
                nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)
            )
            self.side = torch.cuda.Stream()

        def forward(self, x: Any, pos: Any, mask: Any) -> Any:
            h = self.ln(x)
            main = torch.cuda.current_stream()
            self.side.wait_stream(main)  # captured, this forks the graph into two branches
            with torch.cuda.stream(self.side):
                m = self.mlp(h)
            a = self.attn(h, pos, mask)
            main.wait_stream(self.side)  # and this joins them
            m.record_stream(main)  # allocated on the side stream, used on this one
            return x + a + m

    class TinyGPT(Module):  # type: ignore[misc]  # Module is Any, see above
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(vocab, hidden)
            self.wpe = nn.Embedding(max_len, hidden)
            self.blocks = nn.ModuleList(
                (ParallelBlock if parallel else Block)() for _ in range(layers)
            )
            self.ln_f = nn.LayerNorm(hidden)
            self.lm_head = nn.Linear(hidden, vocab, bias=False)
            self.register_buffer("positions", torch.arange(max_len), persistent=False)

        def forward(self, tokens: Any, pos: Any) -> Any:
            # The mask comes from the position tensor on the GPU: no host sync in the step.
            mask = (self.positions <= pos).view(1, 1, 1, max_len)
            x = self.wte(tokens) + self.wpe(pos).unsqueeze(0)
            for block in self.blocks:
                x = block(x, pos, mask)
            return self.lm_head(self.ln_f(x))

    return TinyGPT()


def tiny_gpt(
    batch_size: int,
    *,
    layers: int = 4,
    hidden: int = 256,
    heads: int = 4,
    vocab: int = 4096,
    max_len: int = 256,
    parallel: bool = False,
) -> Step:
    """graphscope's own compact GPT-style decoder with a static KV cache (random weights).

    ``parallel``: GPT-J-style blocks whose attention and MLP run on two streams, so the
    captured graph has parallel branches.
    """
    torch = require("torch")
    torch.manual_seed(0)
    model = _tiny_gpt_module(torch, layers, hidden, heads, vocab, max_len, batch_size, parallel)
    model = model.to("cuda", torch.float16).eval()
    tokens = torch.zeros(batch_size, 1, dtype=torch.long, device="cuda")
    pos = torch.tensor([16], device="cuda")
    logits = torch.empty(batch_size, 1, vocab, device="cuda", dtype=torch.float16)

    def run() -> None:
        with torch.no_grad():
            logits.copy_(model(tokens, pos))

    prompt = torch.randint(0, vocab, (batch_size, 1), device="cuda")

    def prefill() -> None:
        # Fill the cache's first 16 positions one token at a time, eagerly.
        with torch.no_grad():
            for p in range(16):
                model(prompt, torch.tensor([p], device="cuda"))

    caches = [m.k_cache for m in model.modules() if hasattr(m, "k_cache")]
    caches += [m.v_cache for m in model.modules() if hasattr(m, "v_cache")]
    return Step(
        run=run,
        inputs={"tokens": tokens, "pos": pos},
        outputs={"logits": logits},
        state=lambda: caches,
        prefill=prefill,
        model=model,
        description=f"tiny-gpt{'-parallel' if parallel else ''}: {layers} "
        f"{'parallel-residual (attention and MLP on two streams) ' if parallel else ''}"
        f"layers, hidden {hidden}, {heads} heads, vocab {vocab}, fp16, random weights, "
        f"static KV cache {max_len}",
    )


def causal_lm(
    model: Any,
    batch_size: int,
    *,
    prompt_len: int = 16,
    max_len: int = 256,
    description: str = "",
) -> Step:
    """The decode step of a Hugging Face causal LM (``model``, on the GPU) with a StaticCache.

    The prefill runs a random prompt of ``prompt_len`` tokens; the step decodes one token per
    sequence at position ``prompt_len`` into a cache of ``max_len`` positions (of
    ``sliding_window`` for a sliding-window model, when that is smaller). Its ``state`` is every
    tensor the cache holds, counters included, and ``reset`` puts back the cache's Python
    counters: a sliding-window layer picks its branch from one.
    """
    torch = require("torch")
    transformers = require("transformers")
    config = model.config
    text = config.get_text_config()
    vocab = text.vocab_size
    window = min(max_len, getattr(text, "sliding_window", None) or max_len)
    prompt_len = min(prompt_len, window // 4)
    if prompt_len < 1:
        raise CaptureError(f"a cache of {window} positions leaves no room for a prompt")
    try:
        cache = transformers.StaticCache(config=config, max_cache_len=max_len)
    except TypeError:  # transformers before 5 took batch size, device and dtype up front
        cache = transformers.StaticCache(
            config=config,
            max_batch_size=batch_size,
            max_cache_len=max_len,
            device=model.device,
            dtype=model.dtype,
        )
    device = model.device
    prompt = torch.randint(0, vocab, (batch_size, prompt_len), device=device)
    token = torch.zeros(batch_size, 1, dtype=torch.long, device=device)
    position = torch.tensor([prompt_len], device=device)
    logits = torch.empty(batch_size, 1, vocab, device=device, dtype=model.dtype)

    def prefill() -> None:
        with torch.no_grad():
            model(
                input_ids=prompt,
                past_key_values=cache,
                use_cache=True,
                cache_position=torch.arange(prompt_len, device=device),
            )

    def run() -> None:
        with torch.no_grad():
            out = model(
                input_ids=token,
                past_key_values=cache,
                use_cache=True,
                cache_position=position,
                position_ids=position.expand(batch_size, 1),
            )
        logits.copy_(out.logits)

    counters: list[tuple[Any, str, int]] = []

    def state() -> list[Any]:
        # Every tensor the cache holds, counters included: StaticCache advances a device-side
        # length on every step whatever cache_position says (DESIGN.md), so timed replays
        # restore it. transformers 5 allocates them lazily, at prefill, after which this runs.
        # A sliding-window layer also counts in a Python int (cumulative_length_int), which
        # picks between its "filling" and "full" branches: reset() puts it back.
        found = []
        counters.clear()
        for layer in getattr(cache, "layers", []):
            for name, value in vars(layer).items():
                if torch.is_tensor(value):
                    found.append(value)
                elif type(value) is int:
                    counters.append((layer, name, value))
        return found

    def reset() -> None:
        for layer, name, value in counters:
            setattr(layer, name, value)

    return Step(
        run=run,
        inputs={"input_ids": token, "cache_position": position},
        outputs={"logits": logits},
        state=state,
        prefill=prefill,
        model=model,
        description=description,
        reset=reset,
        # Steps at positions prompt_len, prompt_len + 1, ... must stay inside the cache.
        capacity=window - prompt_len,
    )


def tiny_llama(
    batch_size: int,
    *,
    layers: int = 4,
    hidden: int = 512,
    heads: int = 8,
    vocab: int = 4096,
    max_len: int = 256,
) -> Step:
    """Hugging Face ``LlamaForCausalLM`` from a small config, random weights, StaticCache."""
    torch = require("torch")
    transformers = require("transformers")
    config = transformers.LlamaConfig(
        hidden_size=hidden,
        intermediate_size=int(hidden * 8 / 3 // 64 * 64) or hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        vocab_size=vocab,
        max_position_embeddings=max_len,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to("cuda", torch.float16).eval()
    return causal_lm(
        model,
        batch_size,
        max_len=max_len,
        description=f"tiny-llama: transformers LlamaForCausalLM, {layers} layers, "
        f"hidden {hidden}, {heads} heads, vocab {vocab}, fp16, random "
        f"weights, StaticCache {max_len}",
    )


#: ``--model hf:PATH``: a Hugging Face model folder.
HF_PREFIX = "hf:"
_HALF = ("float16", "bfloat16")


@functools.cache
def huggingface(path: str) -> Callable[[int], Step]:
    """A factory for the causal LM saved in folder ``path`` (what ``save_pretrained`` writes).

    With weights there (``*.safetensors`` or ``pytorch_model*.bin``) they are loaded; with
    only ``config.json`` the weights are random. The model runs in the dtype its config names
    when that is float16 or bfloat16, else in float16. It is loaded once, on the first call,
    and each batch size gets its own cache and buffers.
    """
    folder = Path(path).expanduser()
    loaded: list[Any] = []

    def load() -> Any:
        if not (folder / "config.json").is_file():
            raise CaptureError(
                f"{folder}: no config.json there; --model hf:PATH takes a folder written by "
                "save_pretrained (config.json, and the weights if any)"
            )
        torch = require("torch")
        transformers = require("transformers")
        try:
            config = transformers.AutoConfig.from_pretrained(folder)
            named = str(getattr(config, "dtype", None) or "").removeprefix("torch.")
            dtype = getattr(torch, named) if named in _HALF else torch.float16
            auto = transformers.AutoModelForCausalLM
            weights = any(folder.glob("*.safetensors")) or any(folder.glob("pytorch_model*.bin"))
            if weights:
                model = auto.from_pretrained(folder, dtype=dtype)
            else:
                torch.manual_seed(0)
                model = auto.from_config(config)
        except (ValueError, OSError, KeyError) as exc:
            raise CaptureError(
                f"{folder}: transformers cannot load it as a causal LM: {exc}"
            ) from None
        return model.to("cuda", dtype).eval(), weights, dtype

    def factory(batch_size: int) -> Step:
        if not loaded:
            loaded.append(load())
        model, weights, dtype = loaded[0]
        max_len = min(256, getattr(model.config, "max_position_embeddings", 256) or 256)
        return causal_lm(
            model,
            batch_size,
            prompt_len=min(16, max_len // 2),
            max_len=max_len,
            description=f"{folder.name}: transformers {type(model).__name__}, "
            f"{'its weights' if weights else 'random weights'}, "
            f"{str(dtype).removeprefix('torch.')}, StaticCache {max_len}",
        )

    return factory


def tiny_gpt_parallel(batch_size: int) -> Step:
    """tiny-gpt with parallel-residual blocks on two streams: a multi-stream graph."""
    return tiny_gpt(batch_size, parallel=True)


BUILTIN: dict[str, Callable[[int], Step]] = {
    "tiny-gpt": tiny_gpt,
    "tiny-gpt-parallel": tiny_gpt_parallel,
    "tiny-llama": tiny_llama,
}


def resolve(spec: str) -> Callable[[int], Step]:
    """A factory from a built-in name or ``package.module:function``."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    if spec.startswith(HF_PREFIX) and spec[len(HF_PREFIX) :]:
        return huggingface(spec[len(HF_PREFIX) :])
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        names = ", ".join(BUILTIN)
        raise CaptureError(
            f"unknown model {spec!r}: use one of {names}, hf:PATH or package.module:factory"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CaptureError(f"cannot import {module_name!r} for --model {spec}: {exc}") from None
    factory: Callable[[int], Step] | None = getattr(module, attr, None)
    if not callable(factory):
        raise CaptureError(f"{module_name} has no callable {attr!r} for --model {spec}")
    return factory
