"""Labelled cases: sample applications with one known cause each, and clean controls.

The sample script injects one cause per `sea-cause-*` application and writes what it injected
into `sample_eventlogs/.manifest.json` (`expect`: rule, operator, execution). The findings must
name that rule at that operator among the first two, clean applications must raise no warning,
and "Where the time went" must show the injected operator as the hottest of its query's
longest stage, except where the cost is by nature elsewhere (`COST_ELSEWHERE`).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from eventlog_samples import SAMPLES

from analyzer import api
from analyzer.aggregate.analysis import Analysis
from analyzer.insights.finding import Finding
from analyzer.report.options import ReportOptions
from analyzer.report.selection import select_executions
from analyzer.report.time_spent import build_time_spent_view

TOP_N = 2
"""The expected finding must be among this many first findings."""

COST_ELSEWHERE = {
    "sea-cause-failed-udf": "a failed task reports no metrics: the query has no self time",
    "sea-cause-large-broadcast": (
        "the broadcast is collected and built on the driver; the tasks' time is the Project "
        "that computes the broadcast rows"
    ),
    "sea-cause-skewed-files": (
        "the long task of the uneven scan spends its time in the join above the scan, "
        "in the same stage"
    ),
}
"""Labelled applications whose injected operator is not the hottest one, and why."""


def _manifest() -> list[dict[str, Any]]:
    path = SAMPLES / ".manifest.json"
    if not path.is_file():
        return []
    return list(json.loads(path.read_text())["logs"])


def _entries(kind: str) -> list[Any]:
    chosen = []
    for entry in _manifest():
        if kind == "cause" and entry.get("expect"):
            chosen.append(pytest.param(entry, id=entry["app_name"]))
        if kind == "clean" and entry.get("clean"):
            chosen.append(pytest.param(entry, id=entry["app_name"]))
    return chosen or [pytest.param(None, marks=pytest.mark.skip(reason="no labelled samples"))]


@cache
def _analyzed(file: str) -> tuple[Analysis, tuple[Finding, ...]]:
    analysis = api.analyze(SAMPLES / file)
    return analysis, tuple(api.find_issues(analysis))


def _node_name(analysis: Analysis, execution_id: int | None, node_id: int | None) -> str:
    execution = next(
        (e for e in analysis.application.executions if e.execution_id == execution_id), None
    )
    if execution is None or node_id is None:
        return ""
    return execution.final_plan.graph.node(node_id).name


@pytest.mark.parametrize("entry", _entries("cause"))
def test_injected_cause_is_named_at_its_operator(entry: dict[str, Any]) -> None:
    analysis, findings = _analyzed(entry["file"])
    shown = [
        (f.rule, f.execution_id, _node_name(analysis, f.execution_id, f.node_id))
        for f in findings[:TOP_N]
    ]
    for expected in entry["expect"]:
        wanted = (expected["rule"], expected["execution_id"], expected["node"])
        assert any(
            rule == wanted[0] and eid == wanted[1] and name.startswith(wanted[2])
            for rule, eid, name in shown
        ), f"{entry['app_name']}: expected {wanted} in the first findings, got {shown}"


@pytest.mark.parametrize("entry", _entries("cause"))
def test_failed_query_names_the_exception(entry: dict[str, Any]) -> None:
    _analysis, findings = _analyzed(entry["file"])
    for expected in entry["expect"]:
        if "message" not in expected:
            continue
        failed = [f for f in findings if f.rule == expected["rule"]]
        assert failed and expected["message"] in failed[0].title


@pytest.mark.parametrize("entry", _entries("clean"))
def test_clean_application_raises_no_warning(entry: dict[str, Any]) -> None:
    _analysis, findings = _analyzed(entry["file"])
    loud = [(f.rule, f.severity, f.title) for f in findings if f.severity != "info"]
    assert loud == [], f"{entry['app_name']}: {loud}"


@pytest.mark.parametrize("entry", _entries("cause"))
def test_time_spent_leads_with_the_injected_operator(entry: dict[str, Any]) -> None:
    if entry["app_name"] in COST_ELSEWHERE:
        pytest.skip(COST_ELSEWHERE[entry["app_name"]])
    analysis, _findings = _analyzed(entry["file"])
    selection = select_executions(analysis.application, ReportOptions())
    view = build_time_spent_view(analysis, selection, ())
    for expected in entry["expect"]:
        execution = next(e for e in view.executions if e.execution_id == expected["execution_id"])
        hottest = execution.stages[0].operators[0]
        assert hottest.name.startswith(expected["node"]), (
            f"{entry['app_name']}: hottest operator of stage {execution.stages[0].stage_id} is "
            f"{hottest.name} #{hottest.node_id}, expected {expected['node']}"
        )


def _first_lines(file: str, n: int = 6) -> str:
    analysis, findings = _analyzed(file)
    text = api.render_report(analysis, ReportOptions(color=False, width=200), list(findings))
    return "\n".join(text.splitlines()[:n])


@pytest.mark.parametrize("entry", _entries("cause"))
def test_verdict_lines_name_the_cause(entry: dict[str, Any]) -> None:
    head = _first_lines(entry["file"])
    for expected in entry["expect"]:
        if "message" in expected:
            assert head.splitlines()[2].startswith("FAILED")
            assert f"root cause: {expected['message']}" in head, head
            assert expected["node"] in head.split("root cause:")[1].splitlines()[0]
            return
    lines = [line for line in head.splitlines() if line.startswith("top finding: ")]
    _analysis, findings = _analyzed(entry["file"])
    named = [
        f
        for f in findings
        if any(f.rule == e["rule"] and f.execution_id == e["execution_id"] for e in entry["expect"])
    ]
    if named and all(f.severity == "info" for f in named):
        # The cause is told but costs little at this run's parallelism (the hot tasks of
        # sea-cause-skewed-files ran side by side on its two slots): nothing else leads instead.
        assert not lines, head
        return
    assert lines, head
    assert any(
        lines[0].startswith(f"top finding: {e['rule']} at SQL execution {e['execution_id']}")
        and e["node"] in lines[0]
        for e in entry["expect"]
    ), f"{entry['app_name']}: {lines[0]}"


@pytest.mark.parametrize("entry", _entries("clean"))
def test_clean_verdict_names_no_finding(entry: dict[str, Any]) -> None:
    head = _first_lines(entry["file"])
    assert head.splitlines()[2].startswith("COMPLETED")
    assert "top finding:" not in head and "root cause:" not in head
