"""`spark-explain diff`: the labelled run pairs, matching, the verdict, every format, the CLI.

The pairs in sample_eventlogs/pairs/ are the same nightly job run twice with one change each;
the manifest says which cause a comparison must name (docs/diff.md#the-verdict).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import zstandard
from eventlog_samples import PAIRS, SAMPLES, public
from hostile_inputs import deep_plan_line
from reports import NOW_MS, analysis_of, parse_page
from typer.testing import CliRunner

from analyzer import api
from analyzer.aggregate.fingerprint import canonical_tree, plan_fingerprint, shape_fingerprint
from analyzer.cli import EXIT_INPUT_ERROR, EXIT_USAGE, app
from analyzer.compare.result import DiffResult
from analyzer.errors import Strictness
from analyzer.render.markdown import MAX_MARKDOWN_CHARS
from analyzer.render.terminal import visible_len
from analyzer.report.options import ReportOptions

MANIFEST = PAIRS / ".manifest.json"


def _pairs() -> list[dict[str, Any]]:
    if not MANIFEST.exists():
        return []
    pairs: list[dict[str, Any]] = json.loads(MANIFEST.read_text(encoding="utf-8"))["pairs"]
    return pairs


PAIR_CASES = [pytest.param(p, id=p["pair"]) for p in _pairs()]
needs_pairs = pytest.mark.skipif(not PAIR_CASES, reason=f"no run pairs under {PAIRS}")


def pair_logs(name: str) -> tuple[Path, Path]:
    """The baseline and candidate logs of a labelled pair."""
    for p in _pairs():
        if p["pair"] == name:
            directory = SAMPLES / p["directory"]
            return directory / p["baseline"]["file"], directory / p["candidate"]["file"]
    pytest.skip(f"no run pair {name!r} under {PAIRS}")


_DIFFS: dict[tuple[Path, Path], DiffResult] = {}


def diff_of(baseline: Path, candidate: Path) -> DiffResult:
    """Compare two logs once per test session."""
    key = (baseline, candidate)
    if key not in _DIFFS:
        _DIFFS[key] = api.diff(analysis_of(baseline), analysis_of(candidate))
    return _DIFFS[key]


def pair_diff(name: str) -> DiffResult:
    return diff_of(*pair_logs(name))


def sample(name: str) -> Path:
    path = SAMPLES / name
    if not path.exists():
        pytest.skip(f"sample log {path} not present")
    return path


# --- the labelled pairs ---------------------------------------------------------------------


@needs_pairs
@pytest.mark.parametrize("pair", PAIR_CASES)
def test_verdict_names_the_labelled_cause(pair: dict[str, Any]) -> None:
    result = pair_diff(pair["pair"])
    verdict = result.verdict
    assert verdict.cause == pair["expect_cause"], verdict
    if pair["expect_cause"] == "faster":  # the candidate applied the baseline's advice
        assert verdict.candidate_sql_ms < verdict.baseline_sql_ms
    else:
        assert verdict.candidate_sql_ms > verdict.baseline_sql_ms
    # The runs are the same job: every execution pairs up.
    assert len(result.executions) == pair["baseline"]["sql_executions"]
    assert not result.baseline_only and not result.candidate_only
    text = api.render_diff(result)
    assert f"docs/diff.md#{pair['expect_cause']}" in text


@needs_pairs
def test_diff_recognizes_the_advice_the_candidate_applied() -> None:
    """The candidate set spark.sql.shuffle.partitions to the 2 the baseline's findings
    advised: the diff says so per advised stage, with the predicted and the measured time."""
    result = pair_diff("advised-partitions")
    applied = [a for a in result.advice if a.setting == "spark.sql.shuffle.partitions"]
    assert applied, result.advice
    for a in applied:
        assert (a.before, a.advised, a.after, a.status) == ("400", "2", "2", "applied")
        assert a.predicted_ms is not None and a.predicted_ms < a.before_ms
        assert a.after_ms is not None and a.after_ms < a.before_ms
        assert a.target_after is not None
    text = api.render_diff(result)
    assert "Advice applied" in text
    assert "spark.sql.shuffle.partitions 400 → 2 as advised (too-many-partitions):" in text
    assert "predicted" in text
    document = json.loads(api.render_diff(result, ReportOptions(fmt="json")))
    assert {a["status"] for a in document["advice_applied"]} == {"applied"}
    markdown = api.render_diff(result, ReportOptions(fmt="markdown"))
    assert "#### Advice applied" in markdown


@needs_pairs
def test_pair_reasons_carry_their_evidence() -> None:
    assert "1,000,000 → 4,000,000 rows read" in pair_diff("more-input").verdict.reason
    assert "BroadcastHashJoin → SortMergeJoin" in pair_diff("broadcast-off").verdict.reason
    aqe = pair_diff("aqe-off").verdict.reason
    assert "adaptive execution on → off" in aqe and "SortMergeJoin" in aqe
    assert "shuffle partitions" in pair_diff("partitions").verdict.reason
    skew = pair_diff("skew").verdict.reason
    assert "longest task" in skew and "data-skew" in skew
    assert "peak cores 2 → 1" in pair_diff("fewer-cores").verdict.reason


@needs_pairs
def test_a_switched_join_is_paired_and_reported() -> None:
    result = pair_diff("broadcast-off")
    ex = next(e for e in result.executions if e.plan.join_switches)
    switches = {(s.baseline_name, s.candidate_name) for s in ex.plan.join_switches}
    assert switches == {("BroadcastHashJoin", "SortMergeJoin")}
    assert len(ex.plan.join_switches) == 2
    assert dict(ex.plan.added) == {"Exchange": 3, "Sort": 4}
    assert dict(ex.plan.removed) == {"AQEShuffleRead": 1, "BroadcastExchange": 2}
    # The new sort-merge joins took more self time than the broadcast joins they replaced.
    joins = [d for d in ex.nodes if d.status == "switched"]
    assert all(d.change_ms > 0 for d in joins)
    # Every operator is in exactly one place: paired, added or removed.
    graph_b = analysis_of(pair_logs("broadcast-off")[0]).application.executions
    n_base = {e.execution_id: e for e in graph_b}[ex.baseline.execution_id]
    base_ids = [d.baseline.node_id for d in ex.nodes if d.baseline is not None]
    assert sorted(base_ids) == sorted(n.node_id for n in canonical_tree(n_base.final_plan.graph))


@needs_pairs
def test_aqe_decisions_that_differ() -> None:
    ex = pair_diff("aqe-off").executions
    daily = next(e for e in ex if "daily revenue" in e.description)
    assert daily.baseline.aqe.adaptive and not daily.candidate.aqe.adaptive
    assert daily.baseline.aqe.runtime_joins == ("SortMergeJoin → BroadcastHashJoin",)
    assert daily.candidate.aqe.runtime_joins == ()
    assert daily.baseline.aqe.n_coalesced_reads == 1 and daily.candidate.aqe.n_coalesced_reads == 0
    # AQE on and off plan the same query alike: the initial plans pair by shape.
    assert daily.tier in ("plan and description", "shape and description")


@needs_pairs
def test_settings_differences_leave_per_run_values_out() -> None:
    result = pair_diff("partitions")
    changed = {c.key: (c.baseline, c.candidate) for c in result.config}
    assert changed["spark.sql.shuffle.partitions"] == ("8", "400")
    assert "spark.app.id" not in changed and "spark.driver.port" not in changed
    assert result.n_config_per_run >= 4


@needs_pairs
def test_findings_new_and_resolved() -> None:
    forward = pair_diff("skew")
    # Both runs' too-many-partitions sits at the 1 s floor (977 ms, 1,029 ms): it may flip.
    new = [f.rule for f in forward.findings.new if f.rule != "too-many-partitions"]
    assert new == ["data-skew"]
    assert forward.findings.resolved == ()
    base, cand = pair_logs("skew")
    backward = diff_of(cand, base)
    resolved = [f.rule for f in backward.findings.resolved if f.rule != "too-many-partitions"]
    assert resolved == ["data-skew"]
    assert backward.verdict.cause == "faster"


@needs_pairs
def test_fewer_cores_reads_the_capacity() -> None:
    result = pair_diff("fewer-cores")
    assert (result.baseline_executors.peak_cores, result.candidate_executors.peak_cores) == (2, 1)


# --- same and unrelated -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["local-1795320703822.lz4", "local-1795449993021.zstd", "local-1795322404204"]
)
def test_a_log_diffed_with_itself_says_no_change(name: str) -> None:
    path = sample(name)
    again = api.analyze(path)  # another analysis of the same log, not the cached object
    result = api.diff(analysis_of(path), again)
    assert result.verdict.cause == "no-change"
    assert all(e.tier == "plan and description" for e in result.executions)
    assert all(e.change_ms == 0 and not e.plan.changed for e in result.executions)
    assert not result.findings.new and not result.findings.resolved
    assert result.config == ()
    assert "no significant change" in api.render_diff(result)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("local-1795449380338.zstd", "local-1795449483590.zstd"),  # python UDF vs nested loop
        ("local-1795449964384.zstd", "local-1795449993021.zstd"),  # two clean controls
        ("eventlog_v2_local-1795320584980", "local-1795322404204"),  # SQL vs RDD only
    ],
)
def test_unrelated_applications_say_so(a: str, b: str) -> None:
    result = diff_of(sample(a), sample(b))
    assert result.verdict.cause == "unrelated"
    assert "unrelated applications" in api.render_diff(result)


def _gpu_oom_vs_q72() -> DiffResult:
    """Two runs of applications both named `NDS - Power Run`: the baseline's query9 failed on a
    GPU, the candidate ran query72; only 24 `createOrReplaceTempView` executions pair up."""
    return diff_of(public("gpu_oom_eventlog.zstd"), public("nds_q72_dataproc_2_2.zstd"))


def test_alike_names_with_little_paired_time_are_unrelated() -> None:
    result = _gpu_oom_vs_q72()
    verdict = result.verdict
    assert len(result.executions) == 24
    assert verdict.cause == "unrelated"
    assert "they hold only 0.0 % of the baseline's and 0.0 % of the candidate's SQL time" in (
        verdict.reason
    )
    assert verdict.notes == (
        "the baseline's main work failed: SQL execution 24 failed, 1m 38s of its 1m 38s of SQL "
        "time (100.0 %); its time is that of a run cut short",
    )
    text = " ".join(api.render_diff(result).split())
    assert "Verdict · unrelated applications" in text
    assert "note: the baseline's main work failed" in text
    assert "faster by" not in text
    doc = json.loads(api.render_diff(result, ReportOptions(fmt="json")))
    assert doc["verdict"]["notes"] == list(verdict.notes)


@needs_pairs
def test_a_faster_verdict_states_one_measure() -> None:
    result = pair_diff("advised-partitions")
    text = api.render_diff(result)
    headline = re.search(r"Verdict · faster by (\S+ \S+) ", text)
    assert headline is not None
    assert f"the candidate's SQL executions took {headline.group(1)} less" in text


@needs_pairs
def test_diff_findings_wrap_under_their_text() -> None:
    options = ReportOptions(width=80)
    text = api.render_diff(pair_diff("skew"), options)
    findings = text.split("\nFindings · ")[1].split("\n\n")[0].splitlines()
    first = next(i for i, line in enumerate(findings) if "data-skew" in line)
    column = findings[first].index("data-skew")
    assert findings[first + 1] == " " * column + "stage 12.0 · task 82"
    assert not any(re.fullmatch(r"\s+\d+", line) for line in text.splitlines())
    coloured = api.render_diff(pair_diff("skew"), dataclasses.replace(options, color=True))
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == text


def test_aqe_on_and_off_fingerprint_alike() -> None:
    on = analysis_of(sample("local-1795320174558.zstd")).application.executions[0]
    off = analysis_of(sample("local-1795320224872")).application.executions[0]
    tree_on, tree_off = canonical_tree(on.plans[0].graph), canonical_tree(off.plans[0].graph)
    assert on.plans[0].graph.roots[0].name == "AdaptiveSparkPlan"
    assert plan_fingerprint(tree_on) == plan_fingerprint(tree_off)
    # Their final plans differ: AQE made the join a broadcast join at run time.
    assert shape_fingerprint(canonical_tree(on.final_plan.graph)) == shape_fingerprint(
        canonical_tree(off.final_plan.graph)
    )
    result = diff_of(sample("local-1795320224872"), sample("local-1795320174558.zstd"))
    (ex,) = result.executions
    assert [(s.baseline_name, s.candidate_name) for s in ex.plan.join_switches] == [
        ("SortMergeJoin", "BroadcastHashJoin")
    ]


def test_deep_plans_compare_without_recursion(tmp_path: Path) -> None:
    source = sample("local-1795320174558.zstd")
    lines = zstandard.ZstdDecompressor().stream_reader(source.read_bytes()).read().splitlines()
    path = tmp_path / "deep"
    path.write_bytes(b"\n".join([*lines[:6], deep_plan_line(400), *lines[6:]]) + b"\n")
    a, b = api.analyze(path), api.analyze(path)
    result = api.diff(a, b)
    deep = next(e for e in result.executions if e.baseline.execution_id == 99)
    assert deep.tier == "plan and description"
    assert len(deep.nodes) == 401 and all(d.status == "same" for d in deep.nodes)


# --- formats ------------------------------------------------------------------------------------


@needs_pairs
def test_text_diff_fits_the_width() -> None:
    text = api.render_diff(pair_diff("broadcast-off"), ReportOptions(width=80))
    assert all(visible_len(line) <= 80 for line in text.splitlines())
    assert "\x1b" not in text
    coloured = api.render_diff(pair_diff("broadcast-off"), ReportOptions(color=True))
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == api.render_diff(pair_diff("broadcast-off"))


@needs_pairs
def test_html_diff_is_self_contained() -> None:
    html = api.render_diff(pair_diff("skew"), ReportOptions(fmt="html", now_ms=NOW_MS))
    page = parse_page(html)
    metas = [a for t, a in page.tags if t == "meta" and a.get("http-equiv")]
    assert metas and metas[0]["content"].startswith("default-src 'none'")
    for tag, attrs in page.tags:
        for key in ("src", "href"):
            value = attrs.get(key, "")
            assert not value or value.startswith("#"), (tag, attrs)
    text = " ".join(page.text)
    assert "skew" in text and "data-skew" in text and "SQL execution 4" in text


@needs_pairs
def test_json_diff_document() -> None:
    doc = json.loads(api.render_diff(pair_diff("partitions"), ReportOptions(fmt="json")))
    assert doc["format_version"] == 1 and doc["kind"] == "diff"
    assert doc["verdict"]["cause"] == "partitions"
    assert doc["verdict"]["causes"][0]["cause"] == "partitions"
    first = doc["executions"][0]
    assert first["cause"] == "partitions"
    assert first["candidate"]["shuffle_partitions"] == 50 * first["baseline"]["shuffle_partitions"]
    assert first["wall_change_ms"] == first["candidate"]["wall_ms"] - first["baseline"]["wall_ms"]
    assert doc["settings"]["changed"][-1]["key"] == "spark.sql.shuffle.partitions"


@needs_pairs
def test_top_keeps_the_largest_changes() -> None:
    result = pair_diff("more-input")
    text = api.render_diff(result, ReportOptions(top=1))
    assert "1 more paired executions not shown" in text
    biggest = result.executions[0]
    assert abs(biggest.change_ms) >= abs(result.executions[1].change_ms)


# --- the command line ---------------------------------------------------------------------------


@needs_pairs
def test_cli_diff_of_two_logs_and_of_two_app_ids(runner: CliRunner, tmp_path: Path) -> None:
    base, cand = pair_logs("skew")
    result = runner.invoke(app, ["diff", str(base), str(cand)])
    assert result.exit_code == 0, result.output
    assert "Verdict · slower by" in result.stdout and ": skew" in result.stdout
    out = tmp_path / "diff.md"
    by_id = runner.invoke(
        app, ["diff", "--dir", str(base.parent), base.name[:-5], cand.name[:-5], "-o", str(out)]
    )
    assert by_id.exit_code == 0, by_id.output
    markdown = out.read_text(encoding="utf-8")
    assert markdown.startswith("### spark-explain diff:") and "**slower by" in markdown
    html = tmp_path / "diff.html"
    assert runner.invoke(app, ["diff", str(base), str(cand), "-o", str(html)]).exit_code == 0
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@needs_pairs
def test_cli_diff_errors_are_one_line(runner: CliRunner) -> None:
    base, cand = pair_logs("skew")
    missing = runner.invoke(app, ["diff", "--dir", str(base.parent), "local-1", "local-2"])
    assert missing.exit_code == EXIT_INPUT_ERROR
    assert missing.stderr.count("\n") == 1 and "[not-found]" in missing.stderr
    bad = runner.invoke(app, ["diff", str(base), str(cand), "--format", "pdf"])
    assert bad.exit_code == EXIT_USAGE and "[usage]" in bad.stderr
    gone = runner.invoke(app, ["diff", str(base), str(base.parent / "nope.zstd")])
    assert gone.exit_code == EXIT_INPUT_ERROR and "Traceback" not in gone.output


@needs_pairs
def test_markdown_diff_is_within_budget() -> None:
    text = api.render_diff(pair_diff("aqe-off"), ReportOptions(fmt="markdown"))
    assert len(text) < MAX_MARKDOWN_CHARS
    assert text.count("<details>") == text.count("</details>")
    assert Counter(text.split("\n"))["</details>"] == len(pair_diff("aqe-off").executions)


def test_a_finding_that_only_crossed_its_threshold_is_not_called_resolved_or_new() -> None:
    # more-input: stage 12 has 16 shuffle partitions for 31 KiB in both runs; the candidate's
    # query grew 2.9 times, so the same cost fell under its share of the query. Not resolved.
    result = pair_diff("more-input")
    findings = result.findings
    assert [f.rule for f in findings.only(findings.resolved)] == []
    crossed = findings.crossed_of(findings.resolved)
    assert [(f.rule, f.stage_id) for f in crossed] == [("too-many-partitions", 12)]
    text = api.render_diff(result, ReportOptions(fmt="text"))
    assert "0 resolved" in text and "1 over its threshold in one run only" in text
    assert "(in the candidate too, under its significance threshold there)" in " ".join(
        text.split()
    )
    doc = json.loads(api.render_diff(result, ReportOptions(fmt="json")))
    assert [(f["rule"], f["over_in"]) for f in doc["findings"]["crossed_threshold"]] == [
        ("too-many-partitions", "baseline")
    ]
    # partitions: 24 shuffle partitions made 1,200 cost many times more: new, though the rule
    # fires under its threshold on the baseline's 24.
    grown = pair_diff("partitions").findings
    assert not grown.crossed
    assert {f.rule for f in grown.new} >= {"too-many-partitions"}


def test_a_run_cut_before_its_querys_end_is_not_compared(tmp_path: Path) -> None:
    # The candidate is the first half of the baseline's log: its query's jobs completed but its
    # end event is missing, so its time is unknown, neither "faster" nor "unrelated".
    for name in ("local-1795449964384.zstd", "local-1795320428052"):
        log = Path(sample(name))
        data = log.read_bytes()
        if log.suffix == ".zstd":
            data = zstandard.ZstdDecompressor().stream_reader(data).read()
        cut = tmp_path / f"cut-{log.stem}"
        cut.write_bytes(data[: len(data) // 2])
        result = api.diff(analysis_of(str(log)), api.analyze(str(cut), Strictness.LENIENT))
        assert result.verdict.cause == "incomplete", result.verdict.reason
        assert "has no end event in its log where the other run's has one" in result.verdict.reason
        text = api.render_diff(result)
        assert "not comparable: a query's end is not logged" in text
        assert not re.search(r"SQL execution \d+ · [^\n]*→ 0 ms", text)
        assert "(no end event)" in text
        document = json.loads(api.render_diff(result, ReportOptions(fmt="json")))
        cut_pairs = [e for e in document["executions"] if not e["candidate"]["ended"]]
        assert cut_pairs
        assert all(e["wall_change_ms"] == 0 and e["wall_ratio"] is None for e in cut_pairs)


def test_sql_time_is_the_reports(tmp_path: Path) -> None:
    # A stream's micro-batches nest an execution in another: summing them counted the nested
    # ones twice (1m 21s of SQL time in a 37.5 s application); each run's SQL time is its
    # report's.
    path = sample("local-1795620233611.zstd")
    analysis = analysis_of(path)
    result = api.diff(analysis, api.analyze(path))
    assert result.verdict.baseline_sql_ms == analysis.time_spent.sql_ms
    assert result.verdict.baseline_sql_ms <= (analysis.application.duration_ms or 0)
    assert result.verdict.cause == "no-change"


def test_one_streaming_job_on_two_spark_versions_pairs_its_micro_batches() -> None:
    # Each run's micro-batch executions carry its own query and run ids in their descriptions:
    # folded, the same batches of the same query pair up instead of "unrelated applications".
    result = diff_of(
        SAMPLES / "spark-3.5" / "local-1795813930004.zstd",
        SAMPLES / "spark-4.0" / "local-1795813966694.zstd",
    )
    assert result.verdict.cause != "unrelated"
    assert len(result.executions) == 4 and not result.baseline_only and not result.candidate_only


def test_an_operator_at_another_place_is_said_to_have_moved() -> None:
    # Spark 3.5 broadcast one side of the join, 4.0 the other: one BroadcastExchange in each
    # plan, not "+1 BroadcastExchange, -1 BroadcastExchange".
    result = diff_of(
        SAMPLES / "spark-3.5" / "local-1795618803891.zstd",
        SAMPLES / "spark-4.0" / "local-1795620624534.zstd",
    )
    [execution] = result.executions
    assert execution.plan.moved == (("BroadcastExchange", 1),)
    assert execution.plan.only_in("candidate") == execution.plan.only_in("baseline") == ()
    text = api.render_diff(result)
    assert "operators changed: BroadcastExchange moved to another place in the plan" in text
    assert "+1 BroadcastExchange" not in text


def test_unrelated_runs_list_no_new_or_resolved_findings() -> None:
    result = diff_of(sample("local-1795449380338.zstd"), sample("local-1795449483590.zstd"))
    assert result.verdict.cause == "unrelated"
    text = api.render_diff(result)
    assert "Findings · not compared: the runs are unrelated" in text
    assert "    new " not in text and "    resolved " not in text


def test_a_rate_changes_by_the_difference_of_its_shown_values() -> None:
    result = diff_of(
        SAMPLES / "spark-3.5" / "local-1795813930004.zstd",
        SAMPLES / "spark-4.0" / "local-1795813966694.zstd",
    )
    lines = [line for line in api.render_diff(result).splitlines() if "rate " in line]
    assert lines
    assert "processing rate        1,453 rows/s → 1,279 rows/s −174 rows/s" in lines[1]
    for line in lines:
        numbers = [
            int(n.replace(",", "").replace("−", "-"))
            for n in re.findall(r"[−-]?[\d,]+(?= rows/s)", line)
        ]
        before, after, change = [*numbers, 0] if len(numbers) == 2 else numbers
        assert after - before == change, line


def test_a_nested_executions_time_counts_once_in_the_verdicts_shares() -> None:
    # sea-stream-fails: executions 5 and 6 failed, 6 nested in 5: 1.1 s of its 3.6 s of SQL
    # time failed, under half, so the run's main work did not fail (summed, 2.3 s read 63.6 %).
    path = sample("local-1795622263284.zstd")
    result = api.diff(analysis_of(path), api.analyze(path))
    assert not any("main work failed" in note for note in result.verdict.notes)
    assert result.verdict.cause == "no-change"
