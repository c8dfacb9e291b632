"""Node ids on the report, compare and buckets pages open the node in the DAG, and the DAG of
B marks what changed from A (``?file=B&compare=A``); no browser needed."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dash")  # the GPU machine has no dash; the test extra brings it elsewhere

from dash_tree import text as shown_text
from graphscope.app.render import pages
from graphscope.app.serve.server import create_app

import graphscope
from graphscope.analysis.buckets import bucket_report
from graphscope.analysis.diff import diff

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "samples" / "bundles"
DEEP = ROOT / "samples" / "large" / "hf-deep-llama-b1.json.gz"
KEY = re.compile(r"graph_\d+_node_\d+")


def _bundle(name: str) -> Path:
    return BUNDLES / f"{name}.json.gz"


def _walk(component: Any, inside_link: bool = False) -> list[tuple[Any, bool]]:
    """Every component and string of a tree (as objects, or as JSON from a callback), each with
    whether it sits inside a link."""
    if isinstance(component, (list, tuple)):
        return [x for c in component for x in _walk(c, inside_link)]
    if isinstance(component, dict) and "props" in component:  # a component as Dash sends it
        found = [(component, inside_link)]
        children = component["props"].get("children")
        link = inside_link or component["type"] == "A"
        return found + (_walk(children, link) if children is not None else [])
    if component is None or isinstance(component, (str, int, float)):
        return [(component, inside_link)]
    found = [(component, inside_link)]
    children = getattr(component, "children", None)
    link = inside_link or type(component).__name__ == "A"
    return found + (_walk(children, link) if children is not None else [])


def _links(tree: Any) -> list[tuple[str, str]]:
    """(text, href) of every link in a tree, as objects or as JSON."""
    out = []
    for c, _ in _walk(tree):
        if isinstance(c, dict) and c.get("type") == "A":
            out.append((c["props"]["children"], c["props"]["href"]))
        elif type(c).__name__ == "A":
            out.append((c.children, c.href))
    return out


def _plain_keys(tree: Any) -> list[str]:
    """Node keys shown as text outside any link."""
    return [
        k for c, linked in _walk(tree) if isinstance(c, str) and not linked for k in KEY.findall(c)
    ]


def _by_id(tree: Any, component_id: str) -> Any:
    for c, _ in _walk(tree):
        if getattr(c, "id", None) == component_id:
            return c
    raise AssertionError(f"no #{component_id}")


def _call(
    app: Any, outputs: list[str], inputs: dict[str, Any], state: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A callback's outputs as the browser would get them, through Dash's own endpoint.

    ``outputs`` are ``"id.property"`` in the callback's order; ``inputs`` and ``state`` are
    ``{"id.property": value}``, in its order too. Returns ``{"id.property": value}``.
    """

    def spec(key: str, value: Any = None) -> dict[str, Any]:
        component, prop = key.split(".")
        return {"id": component, "property": prop, "value": value}

    many = len(outputs) > 1
    reply = app.server.test_client().post(
        "/_dash-update-component",
        json={
            "output": ".." + "...".join(outputs) + ".." if many else outputs[0],
            "outputs": [spec(o) for o in outputs] if many else spec(outputs[0]),
            "inputs": [spec(k, v) for k, v in inputs.items()],
            "state": [spec(k, v) for k, v in (state or {}).items()],
            "changedPropIds": [next(iter(inputs))],
        },
    )
    assert reply.status_code == 200, reply.get_data(as_text=True)
    response = reply.get_json()["response"]
    return {o: response[o.split(".")[0]][o.split(".")[1]] for o in outputs}


def test_the_report_links_every_node_id_to_its_node_in_the_dag() -> None:
    G = graphscope.load(_bundle("tiny-llama-b1"))
    page = pages.report_page(G, "f3")
    links = _links(page)
    top = _by_id(page, "top-nodes")
    findings = _by_id(page, "findings")
    assert len(_links(top)) == len(top.children) - 1  # a link in each row below the header
    # The findings' details name nodes inside their text: each name is a link of its own.
    assert _links(findings)[:3] == [
        (k, f"?file=f3&node={k}") for k in ("graph_1_node_26", "graph_1_node_27", "graph_1_node_28")
    ]
    assert links and all(href == f"?file=f3&node={key}" and key in G for key, href in links)
    assert not _plain_keys(page)
    # Without a source id, keys stay text.
    assert not _links(pages.report_page(G)) and _plain_keys(pages.report_page(G))


def test_the_report_page_from_the_server_links_to_the_file_shown() -> None:
    app = create_app([_bundle("tiny-gpt-b1"), _bundle("tiny-llama-b1")])
    [page] = _call(
        app, ["report-page.children"], {"page.value": "report", "source.value": "f1"}
    ).values()
    links = _links(page)
    assert links and all(href == f"?file=f1&node={key}" for key, href in links)


def test_the_compare_page_links_each_side_to_its_own_file() -> None:
    A, B = graphscope.load(_bundle("tiny-gpt-b1")), graphscope.load(_bundle("tiny-llama-b1"))
    d = diff(A, B)
    page = pages.compare_page(A, B, a="f0", b="f1")
    assert not _plain_keys(page)
    added, removed = (
        next(p for p in page if isinstance(p.children, list) and p.children[0] == start)
        for start in ("Added in B: ", "Removed from A: ")
    )
    assert _links(added) == [(k, f"?file=f1&node={k}") for k in d.added[:40]]
    assert _links(removed) == [(k, f"?file=f0&node={k}") for k in d.removed[:40]]
    assert _by_id(page, "compare-dag-link").href == "?file=f1&compare=f0"

    # A changed node is named in both: its key in A links to A, its key in B to B.
    A, B = graphscope.load(_bundle("tiny-llama-b1")), graphscope.load(_bundle("tiny-llama-b8"))
    page = pages.compare_page(A, B, a="f4", b="f5")
    row = _by_id(page, "compare-changed").children[1].children
    change = next(c for c in diff(A, B).changed if c.fields)
    assert (row[0].children.href, row[1].children.href) == (
        f"?file=f4&node={change.a}",
        f"?file=f5&node={change.b}",
    )
    assert not _plain_keys(page)


def test_the_compare_page_from_the_server_links_a_and_b() -> None:
    app = create_app([_bundle("tiny-gpt-b1"), _bundle("tiny-llama-b1")])
    [page] = _call(
        app,
        ["compare-page.children"],
        {"page.value": "compare", "compare-a.value": "f1", "compare-b.value": "f0"},
    ).values()
    hrefs = {href for _, href in _links(page)}
    assert "?file=f0&compare=f1" in hrefs
    A, B = graphscope.load(_bundle("tiny-llama-b1")), graphscope.load(_bundle("tiny-gpt-b1"))
    d = diff(A, B)
    assert f"?file=f0&node={d.added[0]}" in hrefs and f"?file=f1&node={d.removed[0]}" in hrefs


def test_buckets_link_to_the_bundles_the_app_has_and_the_node_the_driver_named(
    tmp_path: Path,
) -> None:
    for n in (1, 8):
        shutil.copy(_bundle(f"tiny-llama-b{n}"), tmp_path)
    doc = json.loads((BUNDLES / "tiny-llama.buckets.json").read_text())
    doc["updates"][2] = {
        "from": 4,
        "to": 8,
        "ok": False,
        "result": "ERROR_PARAMETERS_CHANGED",
        "error_node": "graph_1_node_7",
        "error_from": None,
    }
    buckets = tmp_path / "tiny-llama.buckets.json"
    buckets.write_text(json.dumps(doc))
    # b2 and b4 are not in the folder: their sizes stay text.
    app = create_app([tmp_path / "tiny-llama-b1.json.gz", tmp_path / "tiny-llama-b8.json.gz"])
    [page] = _call(
        app,
        ["buckets-page.children"],
        {"page.value": "buckets", "buckets-file.value": str(buckets), "budget.value": None},
    ).values()
    assert _links(page) == [
        ("1", "?file=f0"),
        ("8", "?file=f1"),
        ("graph_1_node_7", "?file=f1&node=graph_1_node_7"),
    ]
    assert not _plain_keys(page)
    # Without the app's files, nothing links.
    assert not _links(pages.buckets_page(bucket_report(buckets)))


def _dag(app: Any, query: str) -> tuple[Any, Any]:
    """The page an address opens, and its DAG's figure."""
    with app.server.test_request_context(query):
        page = app.layout()
    return page, _by_id(page, "dag").figure


@pytest.mark.parametrize(
    ("a", "b", "marked"),
    [
        ("tiny-gpt-b1", "tiny-llama-b1", {"added in B (210)": 210}),
        ("tiny-llama-b1", "tiny-llama-b8", {"changed (130)": 130}),
    ],
)
def test_compare_marks_added_and_changed_nodes_in_the_dag_of_b(
    a: str, b: str, marked: dict[str, int]
) -> None:
    app = create_app([_bundle(a), _bundle(b)])
    page, fig = _dag(app, "/?file=f1&compare=f0")
    names = [t.name for t in fig.data]
    assert {n: len(t.x) for n, t in zip(names, fig.data, strict=True) if n in marked} == marked
    assert names[-1] == "selected"  # the ring the callbacks patch stays last
    assert _by_id(page, "rings").data["dag"] == len(fig.data) - 1
    A, B = graphscope.load(_bundle(a)), graphscope.load(_bundle(b))
    d = diff(A, B)
    ringed = {k for t in fig.data if t.name in marked for k in t.customdata}
    assert ringed == set(d.added or pages.changed_keys(d))
    # Removed nodes are drawn only in A: the note links them there.
    note = _by_id(page, "compare-note")
    assert _links(note) == [(k, f"?file=f0&node={k}") for k in d.removed[:40]]
    # Without ``compare`` the same page has no marks.
    _, plain = _dag(app, "/?file=f1")
    assert not {t.name for t in plain.data} & set(marked)


def test_marks_on_folded_nodes_ring_the_group_and_survive_a_redraw() -> None:
    app = create_app([_bundle("tiny-llama-b1"), DEEP])
    page, fig = _dag(app, "/?file=f1&compare=f0")
    [added] = [t for t in fig.data if t.name.startswith("added in B")]
    assert "group:model.layers 1..223 x223" in added.customdata  # 10,000 nodes in one square
    assert fig.data[-1].name == "selected"
    assert (
        "A collapsed group is ringed for the nodes it holds"
        in _by_id(page, "compare-note").children[-1]
    )
    # A redraw (a search typed here) keeps the marks: they ride in the grouping state.
    grouping = _by_id(page, "grouping").data
    redrawn = _call(
        app,
        [
            "dag.figure",
            "minimap.figure",
            "dag-pane.style",
            "status.children",
            "cards.children",
            "match-count.children",
            "rings.data",
        ],
        {
            "source.value": "f1",
            "colour.value": "type",
            "search.value": "sdpa",
            "grouping.data": grouping,
        },
        {"selected.data": None, "focus-request.data": None},
    )
    traces = redrawn["dag.figure"]["data"]
    names = [t.get("name", "") for t in traces]
    assert any(n.startswith("matches") for n in names)
    assert any(n.startswith("added in B") for n in names) and names[-1] == "selected"
    assert redrawn["rings.data"]["dag"] == len(traces) - 1
    notes = [c["props"].get("id") for c in redrawn["status.children"]]
    assert "compare-note" in notes  # redrawn with the rings


def test_the_compare_page_lists_the_update_hazards_with_links_into_b() -> None:
    A, B = graphscope.load(_bundle("tiny-llama-b1")), graphscope.load(_bundle("tiny-llama-b8"))
    page = pages.compare_page(A, B, a="a", b="b")
    shown = shown_text(page)
    assert "Hazards the driver does not report (24 nodes)" in shown
    assert "it would change kernel function at 24 nodes" in shown
    [table] = [c for c, _ in _walk(page) if getattr(c, "id", None) == "update-hazards"]
    assert ("graph_14_node_58", pages.address("b", node="graph_14_node_58")) in _links(table)
    same = shown_text(pages.compare_page(A, A, a="a", b="a"))
    assert "Hazards" not in same and "it would change nothing" in same


def test_the_node_where_values_first_differ_is_ringed_in_the_dag_and_the_html_export(
    tmp_path: Path,
) -> None:
    """Issue 28: the planted Python scalar's graph opens with its first differing node (the
    op that scales by the frozen counter) ringed, under the selection ring; the clean model's
    has no such ring; the HTML export rings it too."""
    from graphscope.cli import main

    planted = BUNDLES / "planted"
    scalar = planted / "gpu_models-python_scalar-b1.json.gz"
    app = create_app([scalar, planted / "gpu_models-clean-b1.json.gz"])
    page, fig = _dag(app, "/?file=f0")
    first = graphscope.load(scalar).graph["numerics"]["first"]
    (ring,) = [t for t in fig.data if t.name.startswith("values first differ from eager")]
    assert list(ring.customdata) == first["nodes"] and ring.name.endswith("(1)")
    assert fig.data[-1].name == "selected"
    assert _by_id(page, "rings").data["dag"] == len(fig.data) - 1
    _, clean = _dag(app, "/?file=f1")
    assert not [t for t in clean.data if t.name.startswith("values first differ")]
    out = tmp_path / "scalar.html"
    assert main(["export", str(scalar), "--format", "html", "-o", str(out)]) == 0
    assert "values first differ from eager (1)" in out.read_text()
