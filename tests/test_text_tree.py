"""The text report's plan tree: it never restarts at the margin, and reads back as the plan.

Each tree is parsed back from the rendered text with the drawing rules alone (a line with a
connector is an input of the nearest line above whose name starts where the connector does; a
line without one is the only input of the line above it) and compared with the plan graph.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from reports import NOW_MS, Q72, analysis_of, report_log_params, text_report

from analyzer.aggregate.analysis import Analysis
from analyzer.model.plan import PlanEdge, PlanGraph, PlanNode
from analyzer.render.terminal import visible_len
from analyzer.report import text as text_views
from analyzer.report.options import ReportOptions

_HEADER = re.compile(r"^SQL execution (\d+) · ")
_LINE = re.compile(r"^(?P<prefix>(?:\[\+\d+\] *)?[│├└─ ]*)(?P<name>.+?) #(?P<id>\d+)(?: |$)")


def _trees(text: str) -> dict[int, list[list[tuple[str, int]]]]:
    """Return each execution's tree blocks (one per root) as (prefix, node id) lines."""
    trees: dict[int, list[list[tuple[str, int]]]] = {}
    execution: int | None = None
    inside = False
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            execution, inside = int(header.group(1)), False
        elif execution is not None and (line == "Plan" or line.startswith("Plan  ")):
            inside = True
            trees[execution] = [[]]
        elif inside and line.startswith(text_views.PLAN_LEGEND_NO_FIGURES[:20]):
            inside = False
        elif inside and not line:
            trees[execution].append([])  # type: ignore[index]
        elif inside:
            match = _LINE.match(line)
            assert match, f"not a tree line: {line!r}"
            trees[execution][-1].append((match["prefix"], int(match["id"])))  # type: ignore[index]
    return trees


_ELIDED = re.compile(r"^\[\+(\d+)\]")


def _expand(prefix: str) -> str:
    """Put the guide columns an elided prefix (`[+N]`) stands for back, as blanks."""
    match = _ELIDED.match(prefix)
    if not match:
        return prefix
    marker_end = match.end() + 1 + (-(match.end() + 1) % text_views.TREE_GUIDE)
    return " " * (text_views.TREE_GUIDE * int(match.group(1))) + prefix[marker_end:]


def _edges_read_back(block: list[tuple[str, int]]) -> list[tuple[int, int]]:
    """Return (consumer, input) pairs of one root's block, by the drawing rules."""
    pairs = []
    block = [(_expand(prefix), node_id) for prefix, node_id in block]
    for i, (prefix, node_id) in enumerate(block):
        column = len(prefix)
        if i == 0:
            assert prefix == "", f"the root #{node_id} is indented"
            continue
        if prefix.endswith(("├─ ", "└─ ")):
            parent = next(pid for p, pid in reversed(block[:i]) if len(p) == column - 3)
        else:
            before, parent = block[i - 1]
            assert len(before) == column, f"#{node_id} is not under the line above it"
        pairs.append((parent, node_id))
    return pairs


def _check_tree(graph: PlanGraph, blocks: list[list[tuple[str, int]]]) -> None:
    shown = [node_id for block in blocks for _, node_id in block]
    assert set(shown) == {n.node_id for n in graph.nodes if not n.is_cluster}
    assert [block[0][1] for block in blocks] == [r.node_id for r in graph.roots]
    for block in blocks:
        for parent, child in _edges_read_back(block):
            assert child in {c.node_id for c in graph.children_of(parent)}, (parent, child)


@pytest.mark.parametrize("log", report_log_params())
def test_tree_reads_back_as_the_plan_and_never_restarts(log: Path) -> None:
    analysis = analysis_of(log)
    text = text_report(analysis, now_ms=NOW_MS)
    assert "⤷" not in text
    assert all(visible_len(line) <= 100 for line in text.splitlines())
    trees = _trees(text)
    by_id = {e.execution_id: e for e in analysis.application.executions}
    assert set(trees) == set(by_id)
    for execution_id, blocks in trees.items():
        _check_tree(by_id[execution_id].final_plan.graph, blocks)


def test_q72_tree_is_shallow_and_names_its_hot_join() -> None:
    log = Q72
    if not log.exists():
        pytest.skip(f"public event log {log} not present")
    text = text_report(analysis_of(log), now_ms=NOW_MS)
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "SortMergeJoin #30 " in line and "│" in line)
    join = lines[at]
    # Nine joins deep: the guides take 27 columns, the figures stay in their columns.
    assert join.index("SortMergeJoin") == 27
    assert join.endswith("5m 33s   4.3 %  5,241,443,564")
    header = next(line for line in reversed(lines[:at]) if line.startswith("Plan  "))
    assert header.endswith("self time   share       rows out")
    assert len(header) == len(join)


def _deep_graph(depth: int) -> PlanGraph:
    """A plan where each join's left input is another join, `depth` joins deep."""
    nodes = []
    edges = []
    for level in range(depth):
        join, leaf = 2 * level, 2 * level + 1
        nodes += [
            PlanNode(node_id=join, name="BroadcastHashJoin", desc="BroadcastHashJoin [k], [k]"),
            PlanNode(node_id=leaf, name="Scan parquet", desc="FileScan parquet"),
        ]
        edges.append(PlanEdge(from_id=leaf, to_id=join))
        if level:
            edges.append(PlanEdge(from_id=join, to_id=join - 2))
    return PlanGraph(nodes=tuple(nodes), edges=tuple(edges))


@pytest.mark.parametrize("width", [60, 100, 160])
def test_any_depth_fits_the_width_without_restarting(width: int) -> None:
    graph = _deep_graph(200)
    options = ReportOptions(width=width)
    plan = text_views.build_plan_view(graph, {}, options)
    labels = [
        node.prefix_str + node.name_str + f" #{node.node_id}" + node.pad_str for node in plan.nodes
    ]
    assert all(len(label) <= width - 29 for label in labels)  # 29: the figures' columns
    assert [n.node_id for n in plan.nodes if not n.prefix_str] == [0]
    elided = [n.prefix_str for n in plan.nodes if n.prefix_str.startswith("[+")]
    assert elided and all(p[p.index("]") + 1 :].startswith((" ", "│")) for p in elided)
    _check_tree(graph, [[(n.prefix_str, n.node_id) for n in plan.nodes]])


def test_tree_fits_a_narrow_width() -> None:
    log = report_log_params()[0].values[0]
    analysis: Analysis = analysis_of(log)
    text = text_report(analysis, width=60, now_ms=NOW_MS)
    assert all(visible_len(line) <= 60 for line in text.splitlines())
    trees = _trees(text)
    for execution in analysis.application.executions:
        _check_tree(execution.final_plan.graph, trees[execution.execution_id])
