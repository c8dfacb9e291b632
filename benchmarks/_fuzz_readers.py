"""The fuzz campaign's families for the readers' bounds (issue 24): ``demangle`` and ``json``.

- ``demangle``: kernel names made to be hard on ``__cxa_demangle`` (template substitutions
  and parameters that double at every level, long, deep and wide templates, random Itanium
  grammar), put into a DOT dump, or into a bundle with demangled forms to match, then
  ``load`` (the demangled names must keep ``graphscope.names``' bounds), the round trips,
  ``inspect``, ``report``, ``export --format html`` and the dashboard's upload.
- ``json``: dense JSON of random shapes and sizes (empty objects and lists, small numbers,
  short strings, one-key objects, extreme floats, nested or inside a real document), plain
  or gzip, through every JSON reader: a bundle, a DOT file's ``gs_`` attributes, a
  recording's index, a buckets index, a JSON histogram and a profiler trace, then the
  commands that read each. Most inputs run with the value limits scaled down (to cross them
  in a few KB), some at the real limits.

The cases have fuzz.py's ``_case_*`` signature and run every step through its ``Runner``,
which tells the parent when a step starts (a step past its time is a hang) and caps the
memory a step may add; fuzz.py registers them in ``FAMILIES`` and ``_CASES``.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from random import Random
from typing import Any

_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_KERNEL = re.compile(rb"_Z[A-Za-z0-9_]+")
_BUILTIN = "vbcahstijlmxyfdezn"


def _seq(i: int) -> str:
    """Substitution ``S<seq>_`` of candidate ``i`` (``S_`` the first)."""
    if i <= 0:
        return "S_"
    i -= 1
    digits = ""
    while True:
        digits = _DIGITS[i % 36] + digits
        i //= 36
        if not i:
            return f"S{digits}_"


def _param(i: int) -> str:
    return "T_" if i <= 0 else f"T{i - 1}_"


def _ident(rng: Random, longest: int = 12) -> str:
    word = "".join(
        rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(1, longest))
    )
    return f"{len(word)}{word}"


def _type(rng: Random, depth: int, refs: int) -> str:
    """A random Itanium type: builtins, pointers, references, const, names, templates, and
    substitutions and template parameters that may or may not exist."""
    roll = rng.random()
    if depth <= 0 or roll < 0.3:
        return rng.choice(_BUILTIN)
    if roll < 0.45:
        return rng.choice("PRK") + _type(rng, depth - 1, refs)
    if roll < 0.6:
        return _seq(rng.randint(0, refs + 1)) if rng.random() < 0.7 else _param(rng.randint(0, 3))
    if roll < 0.8:
        args = "".join(_type(rng, depth - 1, refs) for _ in range(rng.randint(1, 4)))
        return f"{_ident(rng)}I{args}E"
    inner = "".join(_ident(rng) for _ in range(rng.randint(1, 3)))
    return f"N{inner}E"


def mangled_name(rng: Random, said: list[str]) -> str:
    """A name made to be hard on a demangler (ASCII letters, digits and ``_``, as a DOT label
    holds a kernel's name)."""
    kind = rng.choice(["doubling", "tripling", "params", "random", "long", "deep", "wide", "junk"])
    levels = rng.randint(1, 80)
    if kind in ("doubling", "tripling"):
        # f<A<int, int>, A<prev, prev>, ...>: candidates f (S_), A (S0_), A<int, int> (S1_), ...
        times = 2 if kind == "doubling" else 3
        parts = ["1AIiiE", *(f"S0_I{_seq(k + 2) * times}E" for k in range(levels))]
        name = "_Z1fI" + "".join(parts) + "Evv"
    elif kind == "params":
        # Template parameters and substitutions named again in nested argument lists.
        refs = [
            _param(rng.randint(0, 2)) if rng.random() < 0.4 else _seq(k + 1) for k in range(levels)
        ]
        name = "_Z1fI1AIiiE1BIiEEv" + "".join(f"S0_I{r}{r}E" for r in refs)
    elif kind == "random":
        refs = rng.randint(0, 40)
        params = "".join(_type(rng, rng.randint(1, 8), refs) for _ in range(rng.randint(1, 12)))
        name = f"_Z{_ident(rng)}I{_type(rng, 6, refs)}E{params}"
    elif kind == "long":
        word = "k" * rng.choice([100, 5_000, 16_000, 17_000, 40_000])
        name = f"_Z{len(word)}{word}v"
    elif kind == "deep":
        depth = rng.choice([10, 100, 250, 300, 1_000, 3_000])
        name = "_Z1fI" + "1AI" * depth + "i" + "E" * depth + "Evv"
    elif kind == "wide":
        args = "".join(rng.choice(_BUILTIN[1:]) for _ in range(rng.choice([10, 1_000, 8_000])))
        name = f"_Z1fI{args}Evv"
    else:
        name = "_Z" + "".join(
            rng.choice("NISTE_0123456789vifPRK") for _ in range(rng.randint(1, 600))
        )
    said.append(f"kernel name: {kind}, {len(name)} characters")
    return name


def _dot_seed(rng: Random, seeds: Any) -> Any:
    kernels = [s for s in seeds.dot if not s.large and _KERNEL.search(s.data)]
    return rng.choice([s for s in kernels if not s.name.startswith("written:")] or kernels)


def case_demangle(family: str, rng: Random, seeds: Any, run: Any, config: dict[str, Any]) -> None:
    import graphscope
    from graphscope.names import short_name

    seed = _dot_seed(rng, seeds)
    run.result.seed = seed.name
    said = run.result.mutations
    made = [mangled_name(rng, said) for _ in range(rng.randint(1, 4))]
    found = list(dict.fromkeys(m.group(0) for m in _KERNEL.finditer(seed.data)))
    swap = {
        old: made[i % len(made)].encode()
        for i, old in enumerate(rng.sample(found, min(len(found), len(made))))
    }
    data = _KERNEL.sub(lambda m: swap.get(m.group(0), m.group(0)), seed.data)
    path = "input.dot"
    Path(path).write_bytes(data)
    if rng.random() < 0.3:
        # A bundle holds demangled and short forms as given: hostile ones reach the analyses,
        # the exports and the app, which read them without the demangler.
        G = graphscope.load(path)
        hostile = [
            "f<" * 5_000 + "int" + ">" * 5_000,
            "k" * 100_000 + "Functor",
            "x<" + "a" * 60_000 + ">",
        ]
        for _, data_ in G.nodes(data=True):
            if data_.get("type") == "KERNEL" and rng.random() < 0.5:
                text = rng.choice([*hostile, data_["name"]])
                data_["demangled"], data_["short_name"] = text, short_name(text)
        path = rng.choice(["input.json.gz", "input.json"])
        graphscope.save(G, path)
        said.append(f"saved as {path} with hostile demangled names")
    kind = "dot" if path.endswith(".dot") else "bundle"
    G = run.load(path, kind)
    if G is not None:
        _check_names(run, G, path)
        run.round_trips(G, path)
    run.cli(["inspect", path], [path])
    if G is not None:
        run.cli(["report", path], [path])
        run.cli(["export", path, "--format", "html", "-o", "out.html"], [path], 3.0)
    if config.get("upload"):
        from fuzz import _upload

        _upload(run, path)


def _check_names(run: Any, G: Any, path: str) -> None:
    """A kernel read from a DOT dump: its demangled name within the bound, or mangled."""
    from fuzz import _py

    from graphscope.names import MAX_DEMANGLED

    if not path.endswith(".dot"):
        return
    for key, data in G.nodes(data=True):
        name, demangled = data.get("name"), data.get("demangled")
        if (
            data.get("type") == "KERNEL"
            and demangled != name
            and len(demangled or "") > MAX_DEMANGLED
        ):
            line = _py(f"import graphscope; graphscope.load({path!r})")
            why = f"{key}: a demangled name of {len(demangled)} characters"
            run._defect(line, "bound", "demangled past MAX_DEMANGLED", "?", "reader:dot", why)
            return


# ---------------------------------------------------------------------------------------------
# json


_UNITS = [
    "{}", "[]", "0", "1.5", '"ab"', '{"a":0}', "[[[]]]", "1e308", "-1e308", "5e-324",
    "123456789012345678901234567890", "true", "null", '{"a":{"b":[]}}',
]  # fmt: skip
#: Most values a dense document has below the real limits: 4 million one-key objects take
#: 0.8 GB, within the campaign's memory cap.
_MOST_BELOW = 4_000_000


def dense_json(rng: Random, n: int, said: list[str]) -> str:
    """JSON text of about ``n`` values of a random shape."""
    shape = rng.choice(["list", "mixed", "nested", "object", "rows"])
    unit = rng.choice(_UNITS)
    if shape == "list":
        text = "[" + ",".join([unit] * n) + "]"
    elif shape == "mixed":
        units = [rng.choice(_UNITS) for _ in range(8)]
        text = "[" + ",".join(units * (n // 8 + 1)) + "]"
    elif shape == "nested":
        depth = rng.randint(1, 40)
        text = '{"x":' * depth + "[" + ",".join([unit] * n) + "]" + "}" * depth
    elif shape == "object":
        text = "{" + ",".join(f'"{i}":{unit}' for i in range(n)) + "}"
    else:
        row = "[" + ",".join([unit] * 8) + "]"
        text = "[" + ",".join([row] * (n // 9 + 1)) + "]"
    said.append(f"dense JSON: {shape} of {unit}, about {n} values")
    return text


@contextlib.contextmanager
def _limits(scale: int | None) -> Iterator[None]:
    """The readers' value limits divided by ``scale`` for one input (None: the real ones);
    restored after it, as the worker goes on to other inputs."""
    from graphscope import contract, recording
    from graphscope.analysis import buckets

    saved = contract.MAX_JSON_VALUES, buckets.MAX_INDEX_VALUES, recording.MAX_INDEX_VALUES
    if scale is not None:
        contract.MAX_JSON_VALUES = max(1, saved[0] // scale)
        buckets.MAX_INDEX_VALUES = max(1, saved[1] // scale)
        recording.MAX_INDEX_VALUES = max(1, saved[2] // scale)
    try:
        yield
    finally:
        contract.MAX_JSON_VALUES, buckets.MAX_INDEX_VALUES, recording.MAX_INDEX_VALUES = saved


def case_json(family: str, rng: Random, seeds: Any, run: Any, config: dict[str, Any]) -> None:
    from graphscope.contract import MAX_JSON_VALUES

    said = run.result.mutations
    reader = rng.choice(["bundle", "dot", "recording", "buckets", "histogram", "trace"])
    roll = rng.random()
    if roll < 0.8:  # scaled-down limits: crossed, or not, in a few KB
        scale = rng.choice([1 << 10, 1 << 12, 1 << 14, 1 << 16])
        n = int(10 ** rng.uniform(0, 5.5))
        said.append(f"value limits divided by {scale}")
    elif roll < 0.99:
        scale, n = None, int(10 ** rng.uniform(1, 6.6))
    else:  # the real limit crossed: tens of MB, refused before anything is built
        scale, n = None, MAX_JSON_VALUES + rng.randint(1, 1 << 20)
    if scale is None and n <= MAX_JSON_VALUES:
        n = min(n, _MOST_BELOW)
    run.result.seed = f"dense JSON for the {reader} reader"
    text = (
        "[" + "{}," * n + "{}]" if n > MAX_JSON_VALUES else dense_json(rng, n, said)
    )  # the real limit crossed: the cheapest shape to write
    run.factor = 1 + len(text) / (32 << 20)  # as fuzz.py's readers: time by input size
    # Round trips only at the real limits: at scaled-down ones a graph near the limit in one
    # format passes it in the other (DOT writes per node what a bundle's tables share, 1.02 to
    # 1.07 times the values on the samples); at the real ones that takes 31 million values.
    config = {**config, "round_trips": scale is None}
    with _limits(scale):
        _JSON_READERS[reader](rng, seeds, run, config, text)


def _packed(rng: Random, text: str, said: list[str], suffix: str) -> tuple[str, bytes]:
    """A file name with ``suffix`` and its bytes: plain, or gzip half the time."""
    data = text.encode()
    if rng.random() < 0.5:
        said.append("gzip")
        return f"{suffix}.gz", gzip.compress(data, compresslevel=1, mtime=0)
    return suffix, data


def _json_bundle(rng: Random, seeds: Any, run: Any, config: dict[str, Any], text: str) -> None:
    said = run.result.mutations
    if rng.random() < 0.5:  # inside a real bundle: a metadata value (plain JSON is allowed)
        seed = rng.choice([s for s in seeds.bundle if not s.large])
        raw = gzip.decompress(seed.data) if seed.data[:2] == b"\x1f\x8b" else seed.data
        doc = json.loads(raw)
        doc.setdefault("metadata", {})["dense"] = "@DENSE@"
        text = json.dumps(doc).replace('"@DENSE@"', text)
        said.append(f"as a metadata value of {seed.name}")
    name, data = _packed(rng, text, said, "input.json")
    Path(name).write_bytes(data)
    G = run.load(name, "bundle")
    if G is not None and config["round_trips"]:
        run.round_trips(G, name)
        run.cli(["report", name], [name])
    run.cli(["inspect", "--json", name], [name])
    if config.get("upload"):
        from fuzz import _upload

        _upload(run, name)


def _json_dot(rng: Random, seeds: Any, run: Any, config: dict[str, Any], text: str) -> None:
    said = run.result.mutations
    seed = rng.choice([s for s in seeds.dot if s.name.startswith("written:")])
    run.result.seed = seed.name
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').encode()
    attrs = [m for m in re.finditer(rb'gs_(attrs|graph)="((?:[^"\\]|\\.)*)"', seed.data)]
    target = rng.choice(attrs)
    data = seed.data[: target.start(2)] + escaped + seed.data[target.end(2) :]
    said.append(f"as a gs_{target.group(1).decode()} value")
    Path("input.dot").write_bytes(data)
    G = run.load("input.dot", "dot")
    if G is not None and config["round_trips"]:
        run.round_trips(G, "input.dot")
    run.cli(["inspect", "input.dot"], ["input.dot"])


def _json_recording(rng: Random, seeds: Any, run: Any, config: dict[str, Any], text: str) -> None:
    from fuzz import _py

    from graphscope.recording import load_recordings

    source = rng.choice(seeds.recordings)
    shutil.copytree(source, "rec")
    index = rng.choice(sorted(Path("rec").glob("*/recording.json")))
    if rng.random() < 0.5:
        doc = json.loads(index.read_bytes())
        doc[rng.choice(["notes", "graphs", "sampling", "extra"])] = "@DENSE@"
        text = json.dumps(doc).replace('"@DENSE@"', text)
    index.write_text(text)
    run.result.mutations.append(f"{index.parent.name}/recording.json replaced")
    code = "from graphscope.recording import load_recordings as r; r('rec')"
    read = run.reader(_py(code), "reader:recording", ["rec"], lambda: load_recordings("rec"))
    run.result.loaded = read is not None
    for argv in (["inspect", "rec"], ["report", "--json", "rec"]):
        run.cli(argv, ["rec"])


def _json_buckets(rng: Random, seeds: Any, run: Any, config: dict[str, Any], text: str) -> None:
    from fuzz import _py

    from graphscope.analysis.buckets import read_buckets

    if rng.random() < 0.5:
        text = '{"model": "m", "buckets": ' + text + "}"
    Path("m.buckets.json").write_text(text)
    code = "from graphscope.analysis.buckets import read_buckets as r; r('m.buckets.json')"
    names = ["m.buckets.json"]
    read = run.reader(_py(code), "reader:buckets", names, lambda: read_buckets("m.buckets.json"))
    run.result.loaded = read is not None
    run.cli(["buckets", "m.buckets.json", "--json"], names)


def _json_histogram(rng: Random, seeds: Any, run: Any, config: dict[str, Any], text: str) -> None:
    from fuzz import SAMPLES, _py

    from graphscope.analysis.buckets import read_distribution

    if not text.startswith("{"):
        text = '{"1": 5, "x": ' + text + "}"
    Path("h.json").write_text(text)
    code = "from graphscope.analysis.buckets import read_distribution as r; r('h.json')"
    read = run.reader(_py(code), "reader:buckets", ["h.json"], lambda: read_distribution("h.json"))
    run.result.loaded = read is not None
    index = str(SAMPLES / "bundles" / "tiny-llama.buckets.json")
    run.cli(["buckets", index, "--histogram", "h.json", "--json"], ["h.json"])


def _json_trace(rng: Random, seeds: Any, run: Any, config: dict[str, Any], text: str) -> None:
    from fuzz import SAMPLES, _py

    from graphscope.analysis.torch_trace import read_torch_trace

    said = run.result.mutations
    if rng.random() < 0.5:
        text = '{"traceEvents": ' + text + "}"
    name, data = _packed(rng, text, said, "trace.json")
    Path(name).write_bytes(data)
    code = f"from graphscope.analysis.torch_trace import read_torch_trace as r; r({name!r})"
    read = run.reader(_py(code), "reader:trace", [name], lambda: read_torch_trace(name))
    run.result.loaded = read is not None
    bundle = str(SAMPLES / "bundles" / "tiny-llama-b1.json.gz")
    run.cli(["import-trace", bundle, name, "-o", "out.json.gz"], [name, bundle])


_JSON_READERS = {
    "bundle": _json_bundle,
    "dot": _json_dot,
    "recording": _json_recording,
    "buckets": _json_buckets,
    "histogram": _json_histogram,
    "trace": _json_trace,
}


def not_strict_json(data: bytes) -> str | None:
    """Why ``--json`` output is not strict JSON (NaN and the infinities are not), or None."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        json.loads(data, parse_constant=refuse)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return str(exc)[:300]
    except RecursionError:
        return None  # nested past Python's reader, which says nothing of strictness
    return None
