"""Bad input gets one GraphscopeError naming the file (and line) and what is wrong."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import graphscope
from graphscope import BundleFormatError, DotFormatError, InputError
from graphscope.bundle import to_document
from graphscope.io import detect_format

VERBOSE = (
    Path(__file__).resolve().parents[2]
    / "samples"
    / "dot"
    / "torch-llama-decode"
    / "flags-verbose.dot"
)


def _write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)
    return path


def _bundle(**changes: object) -> str:
    doc = to_document(graphscope.load(VERBOSE))
    doc.update(changes)
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("name", "content", "error", "words"),
    [
        (
            "cut.dot",
            VERBOSE.read_text()[: len(VERBOSE.read_text()) // 2],
            DotFormatError,
            "truncated",
        ),
        (
            "other.dot",
            'digraph G {\n  a -> b;\n  a [label="start"];\n}\n',
            DotFormatError,
            "not written by cudaGraphDebugDotPrint",
        ),
        ("html.dot", "digraph G {\n a [label=<<b>x</b>>];\n}\n", DotFormatError, "HTML"),
        (
            "undirected.dot",
            'graph G { "graph_1_node_0"[label="0\nEMPTY\n"]; }',
            DotFormatError,
            "undirected",
        ),
        (
            "cluster.dot",
            'digraph dot {\nsubgraph cluster_2 {\n"graph_1_node_0"[label="0\nEMPTY"];\n}\n}\n',
            DotFormatError,
            "cluster_1",
        ),
        (
            "dangling.dot",
            'digraph dot {\n"graph_1_node_0"[label="0\nEMPTY"];\n'
            '"graph_1_node_0" -> "graph_1_node_7";\n}\n',
            DotFormatError,
            "not declared",
        ),
        (
            "cycle.dot",
            'digraph dot {\n"graph_1_node_0"[label="0\nEMPTY"];\n'
            '"graph_1_node_1"[label="1\nEMPTY"];\n"graph_1_node_0" -> "graph_1_node_1";\n'
            '"graph_1_node_1" -> "graph_1_node_0";\n}\n',
            InputError,
            "cycle",
        ),
        (
            "badtype.dot",
            'digraph dot {\n"graph_1_node_0"[shape="record" label="{FROB | {ID | 0}}"];\n}\n',
            DotFormatError,
            "unknown node type",
        ),
        (
            "deep.dot",
            'digraph dot {\n"graph_1_node_0"[shape="record" label="{KERNEL | '
            + "{" * 5000
            + "}" * 5000
            + '}"];\n}\n',
            DotFormatError,
            "nested deeper",
        ),
        ("empty.dot", "", InputError, "empty"),
        ("binary.dot", b"\x00\xff\xfe garbage", InputError, "not a text file"),
        ("notes.txt", "hello world\n", InputError, "not a cudaGraphDebugDotPrint DOT file"),
        ("cut.json", _bundle()[:5000], BundleFormatError, "truncated"),
        (
            "nodelink.json",
            json.dumps(
                {"directed": True, "multigraph": False, "graph": {}, "nodes": [], "edges": []}
            ),
            BundleFormatError,
            "node-link",
        ),
        ("trace.json", json.dumps({"traceEvents": []}), BundleFormatError, "Perfetto"),
        ("other.json", json.dumps({"hello": 1}), BundleFormatError, "another schema"),
        ("list.json", "[1, 2, 3]", BundleFormatError, "another schema"),
        (
            "newer.json",
            _bundle(schema_version=99, writer={"graphscope": "9.0"}),
            BundleFormatError,
            "or newer",
        ),
        ("lines.json", '{"a": 1}\n{"b": 2}\n', BundleFormatError, "JSON Lines"),
        (
            "deep.json",
            "[" * 100000 + "]" * 100000,
            BundleFormatError,
            "nested deeper than 64 levels",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 20 and "." in v else "",
)
def test_bad_input_names_file_and_problem(
    tmp_path: Path, name: str, content: str | bytes, error: type[Exception], words: str
) -> None:
    path = _write(tmp_path, name, content)
    with pytest.raises(error) as caught:
        graphscope.load(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    assert words in message
    assert "\n" not in message


def test_line_numbers_point_at_the_problem(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "x.dot",
        'digraph dot {\n\n\n"graph_1_node_0"[label="0\nEMPTY"];\n'
        '"graph_1_node_0" -> "graph_9_node_0";\n}\n',
    )
    with pytest.raises(DotFormatError) as caught:
        graphscope.load(path)
    assert caught.value.line == 6
    assert str(caught.value).startswith(f"{path}:6: ")


def test_newer_schema_says_which_graphscope_reads_it(tmp_path: Path) -> None:
    path = _write(tmp_path, "new.json", _bundle(schema_version=2, writer={"graphscope": "0.9"}))
    with pytest.raises(BundleFormatError) as caught:
        graphscope.load(path)
    assert "schema version 2, written by graphscope 0.9: read it with graphscope 0.9 or newer" in (
        str(caught.value)
    )


def test_bundle_field_errors_name_the_field(tmp_path: Path) -> None:
    doc = json.loads(_bundle())
    shape = doc["nodes"]["shapes"][0]
    assert shape["constants"]["type"] == "KERNEL"  # one shape: every node is a kernel
    shape["constants"]["type"] = "FROB"
    with pytest.raises(BundleFormatError, match=r"node graph_\d+_node_0: type: \"FROB\" is not"):
        graphscope.load(_write(tmp_path, "a.json", json.dumps(doc)))
    doc = json.loads(_bundle())
    doc["edges"][0][1] = "graph_99_node_0"
    with pytest.raises(BundleFormatError, match=r"edges\[0\]\.to"):
        graphscope.load(_write(tmp_path, "b.json", json.dumps(doc)))
    doc = json.loads(_bundle())
    doc["nodes"]["rows"][0].append(1)
    with pytest.raises(BundleFormatError, match=r"nodes\.rows\[0\]: not a \[shape, values"):
        graphscope.load(_write(tmp_path, "c.json", json.dumps(doc)))


def test_size_limits(tmp_path: Path) -> None:
    path = _write(tmp_path, "big.dot", VERBOSE.read_bytes())
    with pytest.raises(InputError, match="reads at most 1000"):
        graphscope.load(path, max_bytes=1000)
    bomb = _write(tmp_path, "bomb.json.gz", gzip.compress(b"{" + b" " * 50_000_000 + b"}"))
    assert bomb.stat().st_size < 100_000
    with pytest.raises(InputError, match="expands past"):
        graphscope.load(bomb, max_bytes=10_000_000)
    cut = _write(tmp_path, "cut.json.gz", gzip.compress(_bundle().encode())[:-200])
    with pytest.raises(InputError, match=r"truncated|corrupt"):
        graphscope.load(cut)


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        graphscope.load(tmp_path / "nope.dot")
    with pytest.raises(InputError, match="directory"):
        graphscope.load(tmp_path)
    with pytest.raises(InputError, match=r"nope\.dot: cannot read it"):
        detect_format(tmp_path / "nope.dot")
