"""Large inputs for the benchmarks, built by repeating real captured structure.

The unit is the real 211-kernel Llama decode graph in samples/dot (captured on an H200); copies
are chained one after another with node ids renumbered, as a longer model's decode step
would be.
"""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx

import graphscope

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "dot" / "torch-llama-decode"


def big_verbose_dot(min_nodes: int) -> str:
    """A verbose cudaGraphDebugDotPrint-style dump of at least ``min_nodes`` nodes."""
    text = (SAMPLE / "flags-verbose.dot").read_text()
    match = re.search(
        r'subgraph cluster_(\d+) \{\nlabel="graph_\d+" graph\[style="dashed"\];\n', text
    )
    assert match, "unexpected sample layout"
    gid = match.group(1)
    body = text[match.end() : text.rindex("}", 0, text.rindex("}"))]
    per = len(re.findall(rf'^"graph_{gid}_node_\d+"\[', body, re.MULTILINE))
    node = re.compile(rf"graph_{gid}_node_(\d+)")
    parts = []
    copies = -(-min_nodes // per)
    for k in range(copies):
        off = k * per
        parts.append(node.sub(lambda m, o=off: f"graph_{gid}_node_{int(m.group(1)) + o}", body))
        if k:
            parts.append(
                f'"graph_{gid}_node_{off - 1}" -> "graph_{gid}_node_{off}" [headlabel=0];\n'
            )
    head = (
        f'digraph dot {{\nsubgraph cluster_{gid} {{\nlabel="graph_{gid}" graph[style="dashed"];\n'
    )
    return head + "".join(parts) + "}\n}\n"


def big_bundle_graph(min_nodes: int) -> nx.DiGraph:
    """A graph of at least ``min_nodes`` nodes with every section a capture bundle holds.

    Structure and node attributes are the real sample's; replay statistics, eager timings and
    attribution are synthetic values of the shape the capture writes, to give the bundle a
    real bundle's size.
    """
    unit = graphscope.load(SAMPLE / "flags-verbose.dot")
    order = list(nx.topological_sort(unit))
    per = len(order)
    G = nx.DiGraph()
    G.graph.update(unit.graph)
    copies = -(-min_nodes // per)
    previous = None
    for k in range(copies):
        for i, key in enumerate(order):
            data = dict(unit.nodes[key])
            lid = k * per + data["local_id"]
            new = f"graph_{data['graph_id']}_node_{lid}"
            data["local_id"] = lid
            n = k * per + i
            data["replay"] = {
                "count": 200,
                "min_us": 1.0 + n % 7,
                "median_us": 1.5 + n % 7,
                "p90_us": 2.0 + n % 7,
                "max_us": 4.0 + n % 7,
                "start_us": 2.1 * n,
            }
            data["eager"] = {"duration_us": 1.7 + n % 7, "launch_us": 5.5, "gap_us": 12.0}
            data["attribution"] = {
                "module": f"model.layers.{n % 32}.self_attn.o_proj",
                "op": "aten::mm",
            }
            G.add_node(new, **data)
            if previous is not None:
                G.add_edge(previous, new, headlabel=0)
            previous = new
    return G


DECODE = Path(__file__).resolve().parent.parent / "samples" / "bundles" / "tiny-llama-b1.json.gz"


def big_decode_bundle(min_nodes: int, eager: bool = False) -> nx.DiGraph:
    """A deep model's decode graph: the real tiny-llama b1 bundle chained copy after copy.

    Each copy's layers are numbered on from the last (copy k holds model.layers.4k to 4k+3)
    and its replay starts are shifted by the replay span, so attribution and timing read as
    one model of many layers; every value comes from the real capture. With ``eager`` the
    real eager trace is chained the same way (2,988 CUDA calls and 212 GPU ops per copy: about
    1.4 million calls at 100,000 nodes) and each node keeps its join to it.
    """
    unit = graphscope.load(DECODE)
    order = list(nx.topological_sort(unit))
    per = len(order)
    layers = 4
    span = max(d["replay"]["start_us"] + d["replay"]["median_us"] for d in unit.nodes.values())
    layer = re.compile(r"^model\.layers\.(\d+)")
    G = nx.DiGraph()
    G.graph.update({k: v for k, v in unit.graph.items() if k not in ("eager_trace", "parity")})
    copies = -(-min_nodes // per)
    trace = unit.graph["eager_trace"]
    ops = len(trace["gpu"]["rows"])
    if eager:
        G.graph["eager_trace"] = _chained_trace(trace, copies)
    previous = None
    for k in range(copies):
        for key in order:
            data = dict(unit.nodes[key])
            lid = k * per + data["local_id"]
            new = f"graph_{data['graph_id']}_node_{lid}"
            data["local_id"] = lid
            data["replay"] = {**data["replay"], "start_us": data["replay"]["start_us"] + k * span}
            label = dict(data["attribution"])
            if label.get("module"):
                label["module"] = layer.sub(
                    lambda m, k=k: f"model.layers.{int(m.group(1)) + k * layers}", label["module"]
                )
            data["attribution"] = label
            join = data.pop("eager", None)
            if eager and isinstance(join, dict):
                data["eager"] = {**join, "index": join["index"] + k * ops}
            G.add_node(new, **data)
            if previous is not None:
                G.add_edge(previous, new)
            previous = new
    return G


def _chained_trace(trace: dict, copies: int) -> dict:
    """``trace`` repeated ``copies`` times, each copy after the last, correlation ids renumbered."""
    api, gpu = trace["api"]["rows"], trace["gpu"]["rows"]
    fields = trace["api"]["fields"], trace["gpu"]["fields"]
    a_start, a_end, a_id = (fields[0].index(f) for f in ("start_ns", "end_ns", "correlation_id"))
    g_start, g_end, g_id = (fields[1].index(f) for f in ("start_ns", "end_ns", "correlation_id"))
    span = max(row[a_end] for row in api) + 1000
    ids = max(row[a_id] for row in api) - min(row[a_id] for row in api) + 1

    def shifted(rows: list, start: int, end: int, cid: int, k: int) -> list:
        out = []
        for row in rows:
            row = list(row)
            row[start] += k * span
            row[end] += k * span
            row[cid] += k * ids
            out.append(row)
        return out

    return {
        **trace,
        "api": {
            "fields": fields[0],
            "rows": [r for k in range(copies) for r in shifted(api, a_start, a_end, a_id, k)],
        },
        "gpu": {
            "fields": fields[1],
            "rows": [r for k in range(copies) for r in shifted(gpu, g_start, g_end, g_id, k)],
        },
    }
