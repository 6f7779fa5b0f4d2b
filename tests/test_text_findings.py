"""The Findings section of the text report: first, ranked, filtered with the executions, tunable."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from eventlog_samples import PUBLIC, SAMPLES
from reports import text_report
from typer.testing import CliRunner

from analyzer import api
from analyzer.aggregate.analysis import Analysis
from analyzer.cli import EXIT_USAGE, app
from analyzer.insights import Finding, Thresholds, detect_all
from analyzer.insights.finding import ev
from analyzer.render.terminal import visible_len
from analyzer.report.findings import build_finding_view


@cache
def _sample_paths() -> dict[str, str]:
    if not SAMPLES.is_dir():
        return {}
    return {i.name: i.path for i in api.list_applications(str(SAMPLES)) if i.name}


def sample_path(workload: str) -> str:
    """Return the path of the sample log of `workload` (app name `sea-<workload>`)."""
    path = _sample_paths().get(f"sea-{workload}")
    if path is None:
        pytest.skip(f"sample log of workload {workload!r} not in {SAMPLES}")
    return path


@cache
def _analysis(path: str) -> Analysis:
    return api.analyze(path)


def _public(name: str) -> str:
    path = PUBLIC / name
    if not path.exists():
        pytest.skip(f"public event log {path} not present")
    return str(path)


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, ["report", *args])
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout


def test_findings_come_first_ranked_and_referenced() -> None:
    text = text_report(_analysis(sample_path("executor-lost")))
    lines = text.splitlines()
    spent = next(i for i, line in enumerate(lines) if line.startswith("Where the time went"))
    start = lines.index("Findings · 3, largest estimated time lost first")
    first_execution = next(i for i, line in enumerate(lines) if line.startswith("SQL execution "))
    assert lines.index("Showing 2 of 2 SQL executions, by start time.") < spent < start
    assert start < first_execution
    headers = [line for line in lines[start:first_execution] if line[:3].strip().endswith(".")]
    # task-failures' delay is inside the failed attempt's wall stage-retry claims: 0 ms, last.
    assert [h.split(" · ")[-1] for h in headers] == [
        "stage-retry",
        "lost-executors",
        "task-failures",
    ]
    assert "    docs:     docs/findings.md#stage-retry" in lines
    # Under the execution: one line per finding of it, pointing back at the section.
    execution_1 = lines.index(next(x for x in lines if x.startswith("SQL execution 1 ·")))
    assert lines[execution_1:].index("⚠ stage-retry at stage 3.0 — see Findings 1") < 10
    assert "ℹ task-failures at stage 3.0 — see Findings 3" in lines


def test_a_failed_query_is_one_finding_with_its_root_cause() -> None:
    text = text_report(_analysis(sample_path("failed-query")))
    lines = text.splitlines()
    start = lines.index("Findings · 1, largest estimated time lost first")
    assert lines[start + 2].startswith(" 1. ✖ critical · est. ")
    assert lines[start + 2].endswith(" lost · failed-query")
    assert "bucket 3 is rejected" in lines[start + 3]
    assert "✖ failed-query — see Findings 1" in lines


def test_no_findings_says_so() -> None:
    text = text_report(_analysis(sample_path("join-agg-aqe-on")), metrics="none")
    assert "\nFindings\nNo findings.\n\n═" in text
    assert "see Findings" not in text


def test_plan_node_is_marked_and_lines_fit() -> None:
    text = text_report(
        _analysis(sample_path("skewed-join")),
        metrics="full",
        thresholds=Thresholds().with_overrides(["min_query_share=0", "min_lost_ms=0"]),
    )
    lines = text.splitlines()
    tree_line = next(line for line in lines if line.startswith("SortMergeJoin #7 "))
    assert tree_line.startswith("SortMergeJoin #7 ⚠1 ⚠2 ")
    join = lines.index("#7 SortMergeJoin · codegen 5 · stage 4 · self time 2.8 s, estimated")
    assert lines[join + 2] == "    ⚠ data-skew — see Findings 1"
    assert "smj-small-side — see Findings 2" in lines[join + 3]
    assert "⚠ data-skew at #7 SortMergeJoin — see Findings 1" in lines
    assert "    where:    SQL execution 0 · node #7 SortMergeJoin · stage 4.0 · task 11" in lines
    assert all(visible_len(line) <= 100 for line in lines)


def test_threshold_option_changes_what_is_shown() -> None:
    path = sample_path("skewed-join")
    default = _cli(path, "--metrics", "none")
    assert "Findings · 1, largest estimated time lost first\n" in default
    # The hot task ran beside the other three on the run's two slots: spreading its rows
    # saves only what the stage's wall exceeds its task time over two slots, so it is `info`.
    assert " 1. ℹ info · est. 622 ms lost · data-skew" in default
    assert "ℹ data-skew at #7 SortMergeJoin — see Findings 1" in default
    raised = _cli(path, "--metrics", "none", "--threshold", "min-query-share=0.5")
    assert "Findings · thresholds changed: min_query_share=0.5\n" in raised
    assert "data-skew" not in raised and "No findings." in raised


def test_unknown_threshold_is_a_one_line_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(app, ["report", sample_path("skewed-join"), "--threshold", "nope=1"])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.startswith("error: unknown threshold 'nope'")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert result.stdout == ""


def test_execution_filter_keeps_shown_and_application_findings() -> None:
    path = sample_path("executor-lost")
    found = detect_all(_analysis(path))
    app_level = [f for f in found if f.execution_id is None]
    of_1 = [f for f in found if f.execution_id == 1]
    assert app_level and of_1  # the log has both kinds
    everything = _cli(path, "--metrics", "none")
    assert f"Findings · {len(found)}, largest" in everything
    only_0 = _cli(path, "--metrics", "none", "-e", "0")
    assert (
        f"Findings · {len(app_level)} of {len(found)} (others belong to executions not shown), "
        "largest estimated time lost first"
    ) in only_0
    assert "· lost-executors" in only_0 and "· stage-retry" not in only_0
    # -e 1 keeps execution 1, where the executor was lost: its findings come back.
    one = _cli(path, "--metrics", "none", "-e", "1")
    assert f"Findings · {len(found)}, largest" in one
    assert "⚠ stage-retry at stage 3.0 — see Findings" in one


def test_only_failed_query_findings_of_shown_execution_when_none_left() -> None:
    text = text_report(_analysis(sample_path("failed-query")), executions=(0,))
    assert "Findings · 0 of 1 (others belong to executions not shown)\n" in text
    assert "No findings." in text


def test_colour_by_severity_only_when_asked() -> None:
    analysis = _analysis(sample_path("failed-query"))
    plain = text_report(analysis)
    coloured = text_report(analysis, color=True)
    assert "\x1b[31m✖ critical\x1b[0m" in coloured
    assert "\x1b[31m✖\x1b[0m failed-query — see Findings 1" in coloured
    assert "\x1b[" not in plain
    warned = text_report(_analysis(sample_path("executor-lost")), color=True)
    assert "\x1b[33m⚠ warning\x1b[0m" in warned
    info = text_report(_analysis(sample_path("speculation")), color=True)
    assert "ℹ info ·" in info  # info stays plain


def test_report_is_deterministic() -> None:
    analysis = _analysis(sample_path("spill-sort-agg-window"))
    assert text_report(analysis, now_ms=0) == text_report(analysis, now_ms=0)


def _finding(**changes: object) -> Finding:
    base: dict[str, object] = {
        "rule": "tiny-tasks",
        "severity": "info",
        "title": "Stage 3: 2,000 tasks",
        "suggestion": "Use fewer partitions.",
        "estimated_lost_ms": 0,
        "estimate_method": "not estimated",
    }
    return Finding(**{**base, **changes})  # type: ignore[arg-type]


def test_finding_view_where_and_lost() -> None:
    view = build_finding_view(_finding(), 3)
    assert view.where_str == "the application"
    assert view.lost_str == "no time cost estimated"
    assert view.ref_str == "tiny-tasks — see Findings 3"
    assert (view.mark, view.style, view.docs_anchor) == ("ℹ", "", "docs/findings.md#tiny-tasks")
    view = build_finding_view(
        _finding(
            severity="critical",
            estimated_lost_ms=754_000,
            execution_id=2,
            stage_id=5,
            stage_attempt_id=1,
            task_ids=(7, 9),
            evidence=(ev("n_failed", "failed attempts", 2, "count"),),
        ),
        1,
    )
    assert view.where_str == "SQL execution 2 · stage 5.1 · tasks 7, 9"
    assert view.lost_str == "est. 12m 34s lost"
    assert view.ref_str == "tiny-tasks at stage 5.1 — see Findings 1"
    assert [(e.label, e.value_str) for e in view.evidence] == [("failed attempts", "2")]
    assert (view.mark, view.style) == ("✖", "red")


def test_gold_files_hold_a_findings_section() -> None:
    gold = Path(__file__).resolve().parent / "gold"
    for path in gold.glob("*.txt"):
        text = path.read_text(encoding="utf-8")
        assert "\nFindings" in text, path.name
        if "\nSQL execution " in text:
            assert text.index("\nFindings") < text.index("\nSQL execution "), path.name
