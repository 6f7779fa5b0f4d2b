"""The plan-graph layout: no two boxes overlap and no operator sits in another cluster's box, on
every plan of the sample and public logs and on generated plans of any shape."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reports import analysis_of, html_of, parse_page, report_log_params

from analyzer.report.html.layout import NODE_HEIGHT, NODE_WIDTH, Box, Layout, layout_graph
from analyzer.report.html.plan_graph import fold_targets, layout_plan

LOGS = report_log_params()


def _check(layout: Layout, group_of: dict[int, int]) -> None:
    nodes = list(layout.nodes.items())
    for i, (a, box_a) in enumerate(nodes):
        for b, box_b in nodes[i + 1 :]:
            assert not box_a.overlaps(box_b), f"operators {a} and {b} overlap"
    groups = list(layout.groups)
    for i, (a, box_a) in enumerate(groups):
        for b, box_b in groups[i + 1 :]:
            assert not box_a.overlaps(box_b), f"cluster boxes {a} and {b} overlap"
    for cluster, box in groups:
        for node_id, node_box in nodes:
            if group_of.get(node_id) != cluster:
                assert not box.overlaps(node_box), f"operator {node_id} in the box of {cluster}"
    # A cluster's operators lie inside one of its boxes (one per part connected in the tree).
    for node_id, node_box in nodes:
        if node_id in group_of:
            assert any(
                cluster == group_of[node_id] and _inside(node_box, box) for cluster, box in groups
            ), f"operator {node_id} outside its cluster's boxes"


def _inside(inner: Box, outer: Box) -> bool:
    return (
        outer.x <= inner.x
        and inner.x + inner.width <= outer.x + outer.width
        and outer.y <= inner.y
        and inner.y + inner.height <= outer.y + outer.height
    )


@pytest.mark.parametrize("path", LOGS)
def test_no_box_overlaps_in_any_plan(path: Path) -> None:
    for execution in analysis_of(path).application.executions:
        for plan in execution.plans:
            graph = plan.graph
            labels = {
                n.node_id: n.name + " · self 12m 29s · stages 47, 55"
                for n in graph.nodes
                if n.is_cluster and n.member_ids
            }
            full, folded, fold = layout_plan(graph, labels)
            group_of = {
                n.node_id: n.cluster_id
                for n in graph.nodes
                if not n.is_cluster and n.cluster_id in labels and n.cluster_id is not None
            }
            _check(full, group_of)
            _check(folded, {})
            ops = {n.node_id for n in graph.nodes if not n.is_cluster}
            assert set(full.nodes) == ops
            assert set(folded.nodes) == ops - set(fold)
            assert fold == fold_targets(graph)


@st.composite
def _plans(draw: st.DrawFn) -> tuple[list[int], dict[int, list[int]], dict[int, int]]:
    """A random plan: a tree (each node reads up to 3 inputs), a few reused nodes read twice, and
    codegen clusters that are connected parts of the tree, as Spark makes them."""
    n = draw(st.integers(min_value=1, max_value=60))
    children: dict[int, list[int]] = {i: [] for i in range(n)}
    for i in range(1, n):
        parent = draw(st.integers(min_value=max(0, i - 8), max_value=i - 1))
        if len(children[parent]) < 3:
            children[parent].append(i)
        else:
            children[i - 1].append(i)
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        a = draw(st.integers(min_value=0, max_value=n - 1))
        b = draw(st.integers(min_value=0, max_value=n - 1))
        if a < b and b not in children[a]:
            children[a].append(b)  # a reused input: a second reader
    group_of: dict[int, int] = {}
    for i in range(n):
        parent = next((p for p in range(n) if i in children[p]), None)
        if parent is not None and parent in group_of and draw(st.booleans()):
            group_of[i] = group_of[parent]
        elif draw(st.booleans()):
            group_of[i] = 1000 + i
    return list(range(n)), children, group_of


@settings(max_examples=150, deadline=None)
@given(_plans(), st.floats(min_value=0, max_value=600))
def test_no_box_overlaps_on_generated_plans(
    plan: tuple[list[int], dict[int, list[int]], dict[int, int]], label_px: float
) -> None:
    ids, children, group_of = plan
    widths = {g: label_px for g in set(group_of.values())}
    layout = layout_graph(ids, lambda n: children[n], group_of, widths)
    assert set(layout.nodes) == set(ids)
    _check(layout, group_of)
    # Inputs are drawn above the operator that reads them (the tree edges).
    for child, parent in layout.tree_parent.items():
        assert layout.nodes[child].y + NODE_HEIGHT < layout.nodes[parent].y


def _chain(n: int) -> tuple[Sequence[int], dict[int, list[int]]]:
    return range(n), {i: [i + 1] if i + 1 < n else [] for i in range(n)}


def test_deep_and_wide_plans_lay_out_fast() -> None:
    ids, children = _chain(20_000)
    start = time.perf_counter()
    layout = layout_graph(ids, lambda n: children[n], {i: i // 4 for i in ids}, {})
    assert time.perf_counter() - start < 10
    assert layout.width < 2 * NODE_WIDTH + 100  # a chain stays one column
    wide = {0: list(range(1, 5001)), **{i: [] for i in range(1, 5001)}}
    start = time.perf_counter()
    layout = layout_graph(range(5001), lambda n: wide[n], {}, {})
    assert time.perf_counter() - start < 10


@pytest.mark.parametrize("path", LOGS)
def test_cluster_boxes_in_the_page_do_not_overlap(path: Path) -> None:
    """Read the boxes back from the page's SVG geometry."""
    boxes: dict[str, list[Box]] = {}
    for tag, attrs in parse_page(html_of(path)).tags:
        if tag == "g" and "cluster" in attrs.get("class", "").split():
            x, y, w, h = (float(v) for v in attrs["data-box"].split(","))
            boxes.setdefault(attrs["id"].rsplit("-n", 1)[0], []).append(Box(x, y, w, h))
    for plan, found in boxes.items():
        for i, a in enumerate(found):
            for b in found[i + 1 :]:
                assert not a.overlaps(b), plan
