"""The Findings section of the text report: first, ranked, filtered with the executions, tunable."""

from __future__ import annotations

import doctest
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
from analyzer.report import findings as finding_views
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
    text = text_report(_analysis(sample_path("failed-query")))
    lines = text.splitlines()
    start = lines.index("Findings · 3, largest estimated time lost first")
    first_execution = next(i for i, line in enumerate(lines) if line.startswith("SQL execution "))
    assert lines.index("Showing 3 of 3 SQL executions, by start time.") < start < first_execution
    assert lines[start + 2] == " 1. ✖ critical · est. 4.0 s lost · failed-query"
    headers = [line for line in lines[start:first_execution] if line[:3].strip().endswith(".")]
    assert [h.split(" · ")[-1] for h in headers] == ["failed-query", "task-failures", "stage-retry"]
    assert "    docs:     docs/findings.md#failed-query" in lines
    # Under the failed execution: one line per finding, pointing back at the section.
    execution_1 = lines.index(next(x for x in lines if x.startswith("SQL execution 1 ·")))
    assert lines[execution_1:].index("✖ failed-query — see Findings 1") < 10
    assert "⚠ task-failures at stage 5.0 — see Findings 2" in lines


def test_no_findings_says_so() -> None:
    text = text_report(_analysis(sample_path("join-agg-aqe-on")), metrics="none")
    assert "\nFindings\nNo findings.\n\n═" in text
    assert "see Findings" not in text


def test_plan_node_is_marked_and_lines_fit() -> None:
    text = text_report(
        _analysis(sample_path("skewed-join")),
        metrics="full",
        thresholds=Thresholds().with_overrides(["data_skew_min_rows=100000"]),
    )
    lines = text.splitlines()
    join = next(i for i, line in enumerate(lines) if "─ SortMergeJoin #7 " in line)
    assert lines[join + 1].endswith("│ ⚠ data-skew — see Findings 1")
    assert lines[join + 2].endswith("│ ℹ smj-small-side — see Findings 2")
    assert "⚠ data-skew at #7 SortMergeJoin — see Findings 1" in lines
    assert "    where:    SQL execution 0 · node #7 SortMergeJoin · stage 4.0 · task 11" in lines
    assert all(visible_len(line) <= 100 for line in lines)


def test_threshold_option_changes_what_is_shown() -> None:
    path = sample_path("skewed-join")
    default = _cli(path, "--metrics", "none")
    assert "data-skew" not in default
    assert "Findings · 1, largest estimated time lost first\n" in default
    lowered = _cli(path, "--metrics", "none", "--threshold", "data-skew-min-rows=100_000")
    assert (
        "Findings · 2, largest estimated time lost first; "
        "thresholds changed: data_skew_min_rows=100000\n"
    ) in lowered
    assert " 1. ⚠ warning · est. 2.7 s lost · data-skew" in lowered
    assert "⚠ data-skew at #7 SortMergeJoin — see Findings 1" in lowered


def test_unknown_threshold_is_a_one_line_usage_error() -> None:
    result = CliRunner().invoke(
        app, ["report", sample_path("skewed-join"), "--threshold", "nope=1"]
    )
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.startswith("error: unknown threshold 'nope'")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert result.stdout == ""


def test_execution_filter_keeps_shown_and_application_findings() -> None:
    path = _public("nds_q72_dataproc_2_2.zstd")
    found = detect_all(_analysis(path))
    app_level = [f for f in found if f.execution_id is None]
    of_24 = [f for f in found if f.execution_id == 24]
    assert app_level and of_24  # the log has both kinds
    everything = _cli(path, "--metrics", "none")
    assert f"Findings · {len(found)}, largest" in everything
    only_0 = _cli(path, "--metrics", "none", "-e", "0")
    assert (
        f"Findings · {len(app_level)} of {len(found)} (others belong to executions not shown), "
        "largest estimated time lost first"
    ) in only_0
    assert "tiny-tasks" in only_0 and "small-files" not in only_0
    # --top 1 keeps execution 24 (the slowest): its findings come back.
    top = _cli(path, "--metrics", "none", "--top", "1")
    assert f"Findings · {len(found)}, largest" in top
    assert "⚠ small-files at #118 Scan parquet — see Findings" in top


def test_only_failed_query_findings_of_shown_execution_when_none_left() -> None:
    text = text_report(_analysis(sample_path("failed-query")), executions=(0,))
    assert "Findings · 0 of 3 (others belong to executions not shown)\n" in text
    assert "No findings." in text


def test_colour_by_severity_only_when_asked() -> None:
    analysis = _analysis(sample_path("failed-query"))
    plain = text_report(analysis)
    coloured = text_report(analysis, color=True)
    assert "\x1b[31m✖ critical\x1b[0m" in coloured
    assert "\x1b[33m⚠ warning\x1b[0m" in coloured
    assert "\x1b[31m✖\x1b[0m failed-query — see Findings 1" in coloured
    assert "\x1b[" not in plain
    info = text_report(_analysis(sample_path("join-agg-aqe-off")), color=True)
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


def test_view_doctests() -> None:
    assert doctest.testmod(finding_views).failed == 0


def test_gold_files_hold_a_findings_section() -> None:
    gold = Path(__file__).resolve().parent / "gold"
    for path in gold.glob("*.txt"):
        text = path.read_text(encoding="utf-8")
        assert "\nFindings" in text, path.name
        if "\nSQL execution " in text:
            assert text.index("\nFindings") < text.index("\nSQL execution "), path.name
