"""What graphscope reads from every file in samples/, as one digest a file.

``tests/sample_reads.json`` holds the digests as graphscope read the samples before the graph
contract was enforced; test_contract checks that every sample still reads the same. Where a
reader's result changes on purpose, regenerate the file (and say why in the commit):

    python tests/sample_reads.py > tests/sample_reads.json

Only graphscope's public readers are used, so this runs against any version of it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import networkx as nx

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
TRACE = ("bundles/tiny-llama-b1.json.gz", "traces/tiny-llama-b1.torch-trace.json.gz")


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=repr, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _graph(G: nx.DiGraph) -> Any:
    graph = dict(G.graph)
    source = graph.get("source")
    if isinstance(source, dict) and isinstance(source.get("path"), str):
        # A DOT file's source names the path it was read from: only its part under samples/
        # is the sample's, so that a checkout anywhere reads the same.
        where = source["path"].replace("\\", "/")
        graph["source"] = {**source, "path": where.split("/samples/", 1)[-1]}
    return {
        "nodes": sorted(G.nodes(data=True)),
        "edges": sorted(G.edges(data=True)),
        "graph": graph,
    }


def sample_files() -> list[str]:
    """Every sample a reader reads, relative to samples/."""
    return sorted(
        str(p.relative_to(SAMPLES))
        for p in SAMPLES.rglob("*")
        if p.name.endswith((".dot", ".json.gz", ".buckets.json")) or p.name == "recording.json"
    )


def read(name: str) -> Any:
    """What graphscope makes of one sample (a trace: joined to its bundle)."""
    import graphscope
    from graphscope.analysis.buckets import read_buckets
    from graphscope.analysis.torch_trace import with_torch_trace
    from graphscope.recording import load_recording

    path = SAMPLES / name
    if name == TRACE[1]:
        return _graph(with_torch_trace(graphscope.load(SAMPLES / TRACE[0]), path))
    if name.endswith(".buckets.json"):
        return repr(read_buckets(path))
    if name.endswith("recording.json"):
        r = load_recording(path)
        return [r.process, r.settings, r.graphs, r.sampling, r.fallbacks, r.notes]
    return _graph(graphscope.load(path))


def digests() -> dict[str, str]:
    """``{sample: digest of what graphscope read}``."""
    return {name: _digest(read(name)) for name in sample_files()}


if __name__ == "__main__":
    json.dump(digests(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
