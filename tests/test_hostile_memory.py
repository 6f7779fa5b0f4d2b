"""Memory bounded by what is shown: an HTML page draws at most `MAX_SHOWN_NODES` operators per
plan (the rest folded into `… N more` nodes with their totals) and lists at most 500 executors
(the rest counted); the JSON report keeps everything, written a piece at a time. The big hostile
logs are generated here from a real sample log, never stored."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from eventlog_samples import SAMPLES
from hostile_inputs import (
    WIDE_EXECUTION_ID,
    run_cli,
    write_many_executors_log,
    write_wide_plan_log,
)

from analyzer import api
from analyzer.aggregate.plan_bounds import MAX_SHOWN_INPUTS, MAX_SHOWN_NODES
from analyzer.report.options import ReportOptions

SOURCE = SAMPLES / "local-1795449716774.zstd"
MIB = 1 << 20


def _source() -> Path:
    if not SOURCE.exists():
        pytest.skip(f"sample log {SOURCE} not present")
    return SOURCE


def _drawn_nodes(html: str, execution_id: int) -> list[str]:
    """The `data-name` of every operator box of the execution's plan graphs."""
    return re.findall(rf'id="e{execution_id}-p\d+-n\d+"[^>]*data-name="([^"]*)"', html)


def test_a_wide_plan_is_folded_in_the_page_and_whole_in_the_json(tmp_path: Path) -> None:
    n_children = 2_000
    log = write_wide_plan_log(_source(), tmp_path / "wide", n_children)
    analysis = api.analyze(log)
    html = api.render_report(analysis, ReportOptions(fmt="html", now_ms=0))
    names = _drawn_nodes(html, WIDE_EXECUTION_ID)
    n_folded = n_children - MAX_SHOWN_INPUTS
    assert names, "the wide execution has a section"
    assert len(names) == 1 + MAX_SHOWN_INPUTS + 1  # the Union, its first inputs, one fold
    assert f"… {n_folded:,} more" in names
    # The fold's panel has the folded operators' total rows: children i + 1 for i >= 50.
    folded_rows = sum(range(MAX_SHOWN_INPUTS + 1, n_children + 1))
    assert f"{folded_rows:,}" in html
    assert f"The final plan has {n_children + 1:,} operators" in html
    # The text report embedded in the page draws the same.
    assert f"… {n_folded:,} more" in html.split('id="text-report"')[-1]
    # The JSON report has every operator.
    document = json.loads(api.render_report(analysis, ReportOptions(fmt="json")))
    wide = next(e for e in document["executions"] if e["execution_id"] == WIDE_EXECUTION_ID)
    assert len(wide["nodes"]) == n_children + 1


def test_a_plan_within_the_bound_is_drawn_whole(tmp_path: Path) -> None:
    log = write_wide_plan_log(_source(), tmp_path / "narrow", MAX_SHOWN_INPUTS)
    analysis = api.analyze(log)
    html = api.render_report(analysis, ReportOptions(fmt="html", now_ms=0))
    names = _drawn_nodes(html, WIDE_EXECUTION_ID)
    assert len(names) == MAX_SHOWN_INPUTS + 1
    assert not any(name.startswith("… ") for name in names)
    assert (
        analysis.shown_plan(
            next(e for e in analysis.application.executions if e.execution_id == WIDE_EXECUTION_ID),
            next(
                e for e in analysis.application.executions if e.execution_id == WIDE_EXECUTION_ID
            ).final_plan,
        )
        is None
    )


def test_a_deep_plan_is_folded_below_the_bound(tmp_path: Path) -> None:
    from analyzer.aggregate.plan_bounds import bound_plan
    from analyzer.model.plan import PlanEdge, PlanGraph, PlanNode

    depth = 3 * MAX_SHOWN_NODES
    nodes = tuple(PlanNode(node_id=i, name="Project", desc="Project") for i in range(depth))
    edges = tuple(PlanEdge(from_id=i + 1, to_id=i) for i in range(depth - 1))
    shown = bound_plan(PlanGraph(nodes=nodes, edges=edges), lambda n: None, lambda n: 1.0)
    assert shown is not None
    assert shown.n_hidden == depth - MAX_SHOWN_NODES
    assert len(shown.graph.nodes) == MAX_SHOWN_NODES + 1
    (fold_id,) = shown.fold_self_time_ms
    assert shown.fold_self_time_ms[fold_id] == depth - MAX_SHOWN_NODES
    assert shown.graph.parent_of(fold_id) == shown.graph.node(MAX_SHOWN_NODES - 1)


def test_many_executors_are_counted_in_the_page_and_whole_in_the_json(tmp_path: Path) -> None:
    n_executors = 2_000
    log = write_many_executors_log(_source(), tmp_path / "execs", n_executors)
    analysis = api.analyze(log)
    html = api.render_report(analysis, ReportOptions(fmt="html", now_ms=0))
    # The sample's executors offer 2 cores each, and run no task here.
    assert "… and 1,501 more executors: 3,002 cores, 0 tasks (all in the JSON report)" in html
    document = json.loads(api.render_report(analysis, ReportOptions(fmt="json")))
    assert len(document["executors"]) == n_executors + 1  # and the driver
    assert [e["executor_id"] for e in document["executors"][1:4]] == ["1", "2", "3"]


@pytest.mark.slow
def test_a_plan_of_100000_siblings_makes_a_small_page_in_bounded_memory(tmp_path: Path) -> None:
    log = write_wide_plan_log(_source(), tmp_path / "wide", 100_000)
    assert log.stat().st_size > 19 * MIB
    out = tmp_path / "wide.html"
    run = run_cli(["report", str(log), "-o", str(out)], timeout_s=600)
    assert run.returncode == 0, run.stderr
    assert out.stat().st_size < 16 * MIB
    assert run.peak_rss_mb < 500, run.peak_rss_mb
    assert "… 99,950 more" in out.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_million_executors_take_less_than_a_gigabyte(tmp_path: Path, fmt: str) -> None:
    log = write_many_executors_log(_source(), tmp_path / "execs", 1_000_000)
    out = tmp_path / f"report.{'txt' if fmt == 'text' else fmt}"
    run = run_cli(["report", str(log), "-o", str(out), "--format", fmt], timeout_s=900)
    assert run.returncode == 0, run.stderr
    assert run.peak_rss_mb < 1024, run.peak_rss_mb
    if fmt == "json":
        with out.open("rb") as handle:
            assert sum(1 for line in handle if line.startswith(b'      "executor_id": ')) == (
                1_000_001
            )
