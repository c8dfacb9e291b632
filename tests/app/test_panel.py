"""The node panel on real sample nodes of every type: labelled parameters, links to owners,
child graphs and bodies, and the buffer table in hex."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

pytest.importorskip("dash")  # the GPU machine has no dash; the test extra brings it elsewhere

from dash import dcc, html
from dash_tree import table_rows, text, walk
from graphscope.app.render.panel import node_panel

import graphscope


@pytest.fixture(scope="module")
def all_types(samples: Path) -> nx.DiGraph:
    """Every node type, a child graph inside a child graph, and IF, WHILE, SWITCH bodies."""
    return graphscope.load(samples / "dot" / "explicit-all-types" / "flags-verbose.dot")


@pytest.fixture(scope="module")
def llama(samples: Path) -> nx.DiGraph:
    """A captured decode step whose kernels carry resolved pointer arguments."""
    return graphscope.load(samples / "bundles" / "tiny-llama-b1.json.gz")


def _text(component: Any) -> str:
    """The text a component shows, its pieces joined as the browser joins them."""
    return text(component, sep="")


def _by_id(panel: list[Any], test_id: str) -> Any:
    [found] = [c for c in walk(panel) if getattr(c, "id", None) == test_id]
    return found


def _kv(panel: list[Any], test_id: str = "node-launch") -> dict[str, str]:
    """A label/value table of the panel as {label: value text}."""
    return {_text(label): _text(value) for label, value in table_rows(_by_id(panel, test_id))}


def _rows(panel: list[Any], test_id: str) -> list[list[Any]]:
    """The cells of a table, header row first."""
    return table_rows(_by_id(panel, test_id))


def _nav(component: Any) -> dict[str, str]:
    """{node key: button text} of the node-selecting link buttons in a tree."""
    return {
        c.id["key"]: _text(c)
        for c in walk(component)
        if isinstance(c, html.Button) and isinstance(c.id, dict) and c.id.get("type") == "nav"
    }


def _node(G: nx.DiGraph, kind: str, **fields: Any) -> str:
    """The first node of the root graph of type ``kind`` with ``fields``."""
    return next(
        k
        for k, d in G.nodes(data=True)
        if d["type"] == kind
        and d["parent"] is None
        and all(d.get(f) == v for f, v in fields.items())
    )


def test_every_node_type_shows_its_own_parameters_with_labels(all_types: nx.DiGraph) -> None:
    G = all_types

    def data(kind: str) -> dict[str, Any]:
        return dict(G.nodes[_node(G, kind)])

    expected: dict[str, dict[str, str]] = {
        "HOST": {"host function": hex(data("HOST")["fn"]), "user data": "0x0"},
        "EVENT_RECORD": {"event recorded": hex(data("EVENT_RECORD")["event"])},
        "WAIT_EVENT": {"event waited for": hex(data("WAIT_EVENT")["event"])},
        "EXT_SEMAS_SIGNAL": {"external semaphores": "0"},
        "EXT_SEMAS_WAIT": {"external semaphores": "0"},
        "MEM_ALLOC": {
            "bytes allocated": "1048576",
            "address allocated": hex(data("MEM_ALLOC")["dptr"]),
            "allocation type": "PINNED",
            "location": "DEVICE",
            "location id": "0",
        },
        "MEM_FREE": {"address freed": hex(data("MEM_FREE")["dptr"])},
        "BATCH_MEM_OP": {
            "operations": "1",
            "operation 0": f"WRITE_VALUE_32 at {hex(data('BATCH_MEM_OP')['param_array[0].addr'])}"
            ", value 7, flags DEFAULT",
        },
        "MEMSET": {"value": "0", "element size (bytes)": "4", "width (elements)": "4096"},
        "MEMCPY": {
            "copy kind": "HtoD",
            "bytes": "16384",
            "source memory": "HOST (HOST PINNED)",
            "destination memory": "DEVICE (DEVICE)",
            "extent (width bytes x height x depth)": "16384 x 1 x 1",
        },
        "KERNEL": {
            "kernel": "graphscope_scale<float>",
            "grid": "[16, 1, 1]",
            "function handle": hex(data("KERNEL")["func_handle"]),
            "access policy window": "none",
        },
        "GRAPH": {"child graph": "graph 5 (first node graph_5_node_0)"},
        "CONDITIONAL": {"conditional type": "IF", "conditional handle": "1"},
    }
    for kind, rows in expected.items():
        shown = _kv(node_panel(G, _node(G, kind)))
        for label, value in rows.items():
            assert shown.get(label) == value, (kind, label, shown)


def test_all_attributes_holds_only_what_the_main_tables_do_not(all_types: nx.DiGraph) -> None:
    G = all_types
    for kind, hidden in (
        ("HOST", {"fn", "user_data", "parent"}),
        ("MEM_ALLOC", {"dptr", "pool_props.alloc_type"}),
        ("MEMSET", {"dptr", "value"}),  # dptr: in the buffer table
        ("CONDITIONAL", {"bodies", "body_labels", "conditional_type"}),
        ("GRAPH", {"child_graph"}),
    ):
        rest = _kv(node_panel(G, _node(G, kind)), "node-all")
        assert not hidden & set(rest), kind
        assert rest["node_handle"].startswith("0x")  # handles in hex there too


def test_every_node_renders_with_unique_links_to_nodes_that_exist(all_types: nx.DiGraph) -> None:
    for key, data in all_types.nodes(data=True):
        panel = node_panel(all_types, key)
        ids = [str(c.id) for c in walk(panel) if getattr(c, "id", None) is not None]
        assert len(ids) == len(set(ids)), key  # Dash refuses duplicate ids in one page
        assert set(_nav(panel)) <= set(all_types), key
        if data["type"] != "EMPTY":
            assert _kv(panel), key


def test_a_child_graph_node_links_to_the_first_node_of_its_graph(all_types: nx.DiGraph) -> None:
    G = all_types
    outer = _node(G, "GRAPH")
    links = _nav(_by_id(node_panel(G, outer), "node-launch"))
    assert links == {"graph_5_node_0": "graph 5"}
    # The child graph holds another GRAPH node, whose own child is graph 6.
    assert _nav(_by_id(node_panel(G, "graph_5_node_2"), "node-launch")) == {
        "graph_6_node_0": "graph 6"
    }


def test_conditional_bodies_link_to_their_first_nodes_by_label(all_types: nx.DiGraph) -> None:
    G = all_types
    panel = node_panel(G, _node(G, "CONDITIONAL", conditional_type="IF"))
    assert _nav(_by_id(panel, "node-launch")) == {
        "graph_7_node_0": "graph 7",
        "graph_8_node_0": "graph 8",
    }
    shown = _kv(panel)
    assert shown["body 'True'"] == "graph 7 (first node graph_7_node_0)"
    assert shown["body 'False'"] == "graph 8 (first node graph_8_node_0)"
    switch = _kv(node_panel(G, _node(G, "CONDITIONAL", conditional_type="SWITCH")))
    assert [label for label in switch if label.startswith("body")] == [
        "body '0'",
        "body '1'",
        "body '2'",
    ]


@pytest.mark.parametrize(
    ("key", "words", "owner"),
    [
        ("graph_7_node_0", "in IF body 'True' of graph_1_node_18", "graph_1_node_18"),
        ("graph_8_node_0", "in IF body 'False' of graph_1_node_18", "graph_1_node_18"),
        ("graph_9_node_0", "in WHILE body 'True' of graph_1_node_19", "graph_1_node_19"),
        ("graph_11_node_0", "in SWITCH body '1' of graph_1_node_20", "graph_1_node_20"),
        ("graph_5_node_1", "in child graph 5 of graph_1_node_17", "graph_1_node_17"),
        ("graph_6_node_1", "in child graph 6 of graph_5_node_2", "graph_5_node_2"),
    ],
)
def test_a_node_in_a_child_graph_or_body_links_to_its_owner(
    all_types: nx.DiGraph, key: str, words: str, owner: str
) -> None:
    line = _by_id(node_panel(all_types, key), "node-owner")
    assert _text(line) == words
    assert _nav(line) == {owner: owner}


def test_a_root_node_has_no_owner_line(all_types: nx.DiGraph) -> None:
    panel = node_panel(all_types, _node(all_types, "KERNEL"))
    assert not [c for c in walk(panel) if getattr(c, "id", None) == "node-owner"]


def test_an_empty_child_graph_says_so_and_a_missing_node_0_falls_back(
    all_types: nx.DiGraph,
) -> None:
    G = all_types.copy()
    G.remove_node("graph_6_node_0")  # graph 6 now starts at local id 1
    assert _nav(_by_id(node_panel(G, "graph_5_node_2"), "node-launch")) == {
        "graph_6_node_1": "graph 6"
    }
    G.remove_node("graph_6_node_1")
    panel = node_panel(G, "graph_5_node_2")
    assert _kv(panel)["child graph"] == "graph 6 (no nodes)"
    assert not _nav(_by_id(panel, "node-launch"))


def _buffer_cells(panel: list[Any]) -> list[list[str]]:
    return [[_text(cell) for cell in row] for row in _rows(panel, "node-buffers")]


def test_kernel_pointers_form_a_table_in_hex_with_names_that_wrap(llama: nx.DiGraph) -> None:
    key = next(
        k
        for k, d in llama.nodes(data=True)
        if any(p.get("buffer", "").startswith("param:") for p in d.get("pointers") or [])
    )
    pointers = llama.nodes[key]["pointers"]
    panel = node_panel(llama, key)
    cells = _buffer_cells(panel)
    assert cells[0] == ["arg", "offset", "address", "buffer", "segment"]
    assert len(cells) == 1 + len(pointers)
    for row, p in zip(cells[1:], pointers, strict=True):
        assert row[:3] == [str(p["arg"]), str(p["offset"]), hex(p["address"])]
        buffer = p.get("buffer", "-")
        if p.get("buffer_offset"):
            buffer += f" +{hex(p['buffer_offset'])}"
        assert row[3] == buffer
        segment = p["segment"] + (f" +{hex(p['segment_offset'])}" if p["segment_offset"] else "")
        assert row[4] == segment
    # No decimal address anywhere in the panel.
    text = _text(panel)
    assert all(str(p["address"]) not in text for p in pointers)


def test_the_tiny_llama_embedding_kernel_names_its_buffers(llama: nx.DiGraph) -> None:
    cells = _buffer_cells(node_panel(llama, "graph_1_node_0"))
    assert cells[1:] == [
        ["0", "0", "0x7f357d200000", "-", "segment 8 (small)"],
        ["1", "0", "0x7f358e800000", "param:model.embed_tokens.weight", "segment 11 (large)"],
        ["2", "0", "0x7f358fd82a00", "input:input_ids", "segment 12 (small) +0x182a00"],
    ]
    # A long dotted name may wrap after its colon and dots (<wbr>), never inside a word.
    name = _rows(node_panel(llama, "graph_1_node_0"), "node-buffers")[2][3]
    link = name.children  # a link that finds every node touching the buffer
    assert link.id == {"type": "buffer", "name": "param:model.embed_tokens.weight", "at": 2}
    pieces = [c if isinstance(c, str) else "|" for c in walk(link.children)]
    assert pieces == ["param:", "|", "model.", "|", "embed_tokens.", "|", "weight"]


def test_a_copy_shows_its_addresses_in_hex_named_by_the_kernels_that_use_them(
    llama: nx.DiGraph,
) -> None:
    key = _node(llama, "MEMCPY")
    data = llama.nodes[key]
    panel = node_panel(llama, key)
    cells = _buffer_cells(panel)
    src = hex(data["src.device"])
    assert cells[1] == ["src (device)", "-", src, "-", "segment 8 (small) +0x1400"]
    assert cells[2][:3] == ["dst (device)", "-", hex(data["dst.device"])]
    assert str(data["src.device"]) not in _text(panel)  # never in decimal
    assert "the same address" in _text(panel)  # says where the names come from


def test_a_memset_and_a_runtime_types_copy_show_their_addresses(
    all_types: nx.DiGraph, samples: Path
) -> None:
    memset = all_types.nodes[_node(all_types, "MEMSET")]
    cells = _buffer_cells(node_panel(all_types, _node(all_types, "MEMSET")))
    assert cells[1] == ["dst", "-", hex(memset["dptr"]), "-", "-"]
    G = graphscope.load(samples / "dot" / "explicit-all-types" / "flags-all.dot")
    copy = G.nodes[_node(G, "MEMCPY")]
    assert "src_ptr.ptr" in copy  # the runtime-types dump names the pointers this way
    cells = _buffer_cells(node_panel(G, _node(G, "MEMCPY")))
    assert [row[:3] for row in cells[1:]] == [
        ["src", "-", hex(copy["src_ptr.ptr"])],
        ["dst", "-", hex(copy["dst_ptr.ptr"])],
    ]


def test_open_groups_get_collapse_buttons(llama: nx.DiGraph) -> None:
    key = _node(llama, "KERNEL")
    groups = ["model.embed_tokens", "model"]
    buttons = [
        c
        for c in walk(node_panel(llama, key, groups))
        if isinstance(c, html.Button) and c.id.get("type") == "collapse"
    ]
    assert [b.id for b in buttons] == [{"type": "collapse", "group": g} for g in groups]
    assert not [c for c in walk(node_panel(llama, key)) if getattr(c, "id", None) == "node-groups"]


def test_names_from_files_stay_text(llama: nx.DiGraph) -> None:
    G = llama.copy()
    key = "graph_1_node_0"
    G.nodes[key]["pointers"] = [dict(p) for p in G.nodes[key]["pointers"]]
    G.nodes[key]["pointers"][1]["buffer"] = "param:<b>x</b>.<script>alert(1)</script>"
    # Markup of every kind Markdown knows, in a field its text tables show.
    hostile = "**b** _i_ `c` [l](http://example.com) <i>x</i> | www.example.com \\ &amp; # h"
    G.nodes[key]["short_name"] = hostile
    panel = node_panel(G, key)
    assert "param:<b>x</b>.<script>alert(1)</script>" in _text(panel)
    assert _kv(panel)["kernel"] == hostile
    kinds = {type(c).__name__ for c in walk(panel) if not isinstance(c, str)}
    assert kinds <= {
        "H3", "H4", "Div", "P", "Span", "Table", "Tr", "Th", "Td", "Button", "Wbr",
        "Details", "Summary", "Markdown",
    }  # fmt: skip
    markdowns = [c for c in walk(panel) if isinstance(c, dcc.Markdown)]
    assert markdowns and not any(getattr(m, "dangerously_allow_html", False) for m in markdowns)
    # Every punctuation mark is a character reference, so none can open markup, a link or a
    # cell: past the references and the table's own pipes and rule, no punctuation is left.
    source = next(m.children for m in markdowns if "example" in m.children)
    bare = re.sub(r"&#\d+;", "", source).replace("| --- ", "").replace("|", "")
    assert re.search(r"[!-/:-@\[-`{-~]", bare) is None, bare


def test_a_pointer_entry_without_its_address_does_not_break_the_panel(llama: nx.DiGraph) -> None:
    G = llama.copy()
    kernel = next(k for k, d in G.nodes(data=True) if d.get("pointers"))
    G.nodes[kernel]["pointers"] = [{"arg": 0, "buffer": "param:w"}]  # as a bundle may hold it
    copy = _node(G, "MEMCPY")
    assert _text(node_panel(G, copy))  # the copy's panel looks its addresses up among kernels
    assert "param:w" in _text(node_panel(G, kernel))


def test_a_kernel_name_that_is_one_text_is_shown_once(llama: nx.DiGraph, samples: Path) -> None:
    # An nvjet kernel: its short, demangled and mangled names are one text.
    rows = _rows(node_panel(llama, "graph_1_node_26"), "node-launch")
    names = [r for r in rows if r[1] == "nvjet_sm90_hsh_8x64_64x16_4x1_v_bz_TNN"]
    assert names == [["kernel, demangled, mangled", "nvjet_sm90_hsh_8x64_64x16_4x1_v_bz_TNN"]]
    # A templated kernel's three names differ: three rows.
    G = graphscope.load(samples / "recordings" / "gpt-fast" / "pid1355" / "g8.json.gz")
    labels = [r[0] for r in _rows(node_panel(G, "graph_7_node_65"), "node-launch")]
    assert labels[:3] == ["kernel", "demangled", "mangled"]


def test_a_long_kernel_name_titles_the_panel_whole_on_hover(samples: Path) -> None:
    G = graphscope.load(samples / "recordings" / "gpt-fast" / "pid1355" / "g8.json.gz")
    title = _by_id(node_panel(G, "graph_7_node_65"), "node-title")
    assert len(title.children) > 300 and title.title == title.children


def test_every_buffer_link_of_a_panel_has_its_own_id(samples: Path) -> None:
    # Two of this kernel's arguments point into one segment: two links to it, and ids alike
    # made Dash refuse the page opened at this node (?node=graph_7_node_65).
    G = graphscope.load(samples / "recordings" / "gpt-fast" / "pid1355" / "g8.json.gz")
    links = [
        c.id
        for c in walk(node_panel(G, "graph_7_node_65"))
        if isinstance(getattr(c, "id", None), dict) and c.id.get("type") == "buffer"
    ]
    names = [link["name"] for link in links]
    assert len(set(names)) < len(names)  # a name twice
    assert len({(link["name"], link["at"]) for link in links}) == len(links)


def test_a_replay_max_that_cannot_be_true_is_flagged_not_shown_as_fact(
    llama: nx.DiGraph,
) -> None:
    # Issue 27: recordings made before issue 25's fix held nodes 2 to 94 ms long against a
    # 0.2 ms replay, and the panel showed that max as the node's time.
    G = llama.copy()
    G.graph = copy.deepcopy(llama.graph)
    key = "graph_1_node_26"
    G.nodes[key]["replay"] = {**llama.nodes[key]["replay"]}
    span = G.graph["timing"]["replay_us"]
    ok = _text(_by_id(node_panel(G, key), "node-timing"))
    assert "not a real time" not in ok
    G.nodes[key]["replay"]["max_us"] = 70 * span  # the artefact, on a bundle without the bound
    G.graph["timing"].pop("replay_max_us", None)
    flagged = _by_id(node_panel(G, key), "implausible-max")
    assert flagged.children.endswith("not a real time") and "10 median replays" in flagged.title
    # Where the bundle keeps its longest replay, that is the bound, exactly.
    G.graph["timing"]["replay_max_us"] = 80 * span
    assert "not a real time" not in _text(_by_id(node_panel(G, key), "node-timing"))
    G.graph["timing"]["replay_max_us"] = 60 * span
    assert "the longest traced replay" in _by_id(node_panel(G, key), "implausible-max").title
