"""Advice with numbers: every setting a finding names has a value worked out from the run, or
docs/findings.md says why none can be computed; and the values are right on real runs."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
from eventlog_samples import PAIRS, REPO, public_log_params, sample_id, sample_logs

from analyzer import api
from analyzer.batch.fleet import parse_report
from analyzer.batch.history import History, RegressionRule, RunInput, new_records
from analyzer.errors import Strictness
from analyzer.insights import Finding
from analyzer.insights.advice import prediction_target, target_wall_ms
from analyzer.report.options import ReportOptions

SETTING = re.compile(r"spark\.[A-Za-z0-9_.<>]*[A-Za-z0-9_>]")


@cache
def _documented_without_value() -> frozenset[tuple[str, str]]:
    """(rule, setting) pairs the table "Settings a finding names with no value" lists."""
    text = (REPO / "docs" / "findings.md").read_text(encoding="utf-8")
    start = text.index("Settings a finding names with no value")
    out: set[tuple[str, str]] = set()
    for line in text[start:].splitlines()[3:]:
        if not line.startswith("|"):
            break
        cells = line.split("|")
        rules = re.findall(r"`([a-z-]+)`", cells[1])
        settings = re.findall(r"`(spark\.[^`]+)`", cells[2])
        out |= {(r, s) for r in rules for s in settings}
    return frozenset(out)


def _unvalued_settings(f: Finding) -> list[str]:
    """Settings the finding's suggestion names with no value, no advice, and no doc entry."""
    text = f.suggestion
    advised = {a.setting for a in f.advice}
    missing = []
    for m in SETTING.finditer(text):
        setting = m.group(0)
        after = text[m.end() : m.end() + 1]
        if after == "=" or setting in advised:
            continue
        if setting.endswith("."):
            setting = setting[:-1]
        if (f.rule, setting) in _documented_without_value():
            continue
        missing.append(setting)
    return missing


def _check(path: Path, strictness: Strictness = Strictness.STRICT) -> None:
    analysis = api.analyze(path, strictness)
    for f in api.find_issues(analysis):
        assert _unvalued_settings(f) == [], (f.rule, f.suggestion)
        for a in f.advice:
            assert a.arithmetic, (f.rule, a.setting)
            if a.value is None:
                assert a.predicted_ms is None
            if a.predicted_ms is not None:
                target = prediction_target(f)
                assert target is not None
                wall = target_wall_ms(analysis, target)
                assert wall is not None
                assert a.measured_ms == wall
                assert a.predicted_ms == max(0, wall - f.estimated_lost_ms)


@pytest.mark.parametrize("path", sample_logs(), ids=sample_id)
def test_every_named_setting_has_a_value_on_the_sample_logs(path: Path) -> None:
    _check(path)


@pytest.mark.parametrize("path", public_log_params())
def test_every_named_setting_has_a_value_on_the_public_logs(path: Path) -> None:
    _check(path, Strictness.LENIENT)


def _pair_log(pair: str, side: str) -> Path:
    manifest = json.loads((PAIRS / ".manifest.json").read_text())
    entry = next(p for p in manifest["pairs"] if p["pair"] == pair)
    return PAIRS / pair / entry[side]["file"]


def test_too_many_partitions_advises_a_count_from_the_bytes_shuffled() -> None:
    """400 shuffle partitions on 2 task slots for a few MiB: one partition per 64 MiB (AQE's
    default advisory size), at least one per slot → 2, with the arithmetic and a prediction."""
    path = _pair_log("partitions", "candidate")
    if not path.exists():
        pytest.skip(f"{path} not present")
    analysis = api.analyze(path)
    findings = [f for f in api.find_issues(analysis) if f.rule == "too-many-partitions"]
    assert findings
    for f in findings:
        (advice,) = f.advice
        assert advice.setting == "spark.sql.shuffle.partitions"
        assert advice.current == "400"
        assert advice.value == "2"
        assert "shuffled / 64.0 MiB target" in advice.arithmetic
        assert advice.predicted_of == f"stage {f.stage_id}"
        assert advice.measured_ms is not None and advice.predicted_ms is not None
        assert advice.predicted_ms < advice.measured_ms
    text = api.render_report(analysis)
    assert "advice:   spark.sql.shuffle.partitions 400 → 2: ⌈" in text
    document = json.loads(api.render_report(analysis, options=_json()))
    advised = [a for f in document["findings"] for a in f["advice"]]
    assert {"setting", "value", "current", "arithmetic", "kind", "predicted_ms"} <= set(advised[0])


def _json() -> ReportOptions:
    return ReportOptions(fmt="json")


def test_history_records_the_advice_a_later_run_applied() -> None:
    """Two runs of the nightly job recorded one after the other: the first advises
    spark.sql.shuffle.partitions=2, the second runs with it; the history's `advice` rows hold
    the first run's advice and its `advice_applied` rows the second run's use of it, with the
    query's predicted and measured wall time."""
    inputs = []
    for side in ("baseline", "candidate"):
        path = _pair_log("advised-partitions", side)
        if not path.exists():
            pytest.skip(f"{path} not present")
        analysis = api.analyze(path)
        doc = parse_report(api.render_report(analysis, _json()).encode())
        inputs.append(RunInput(side, "sea-nightly-orders", str(path), 0, doc))
    records = new_records(History(), inputs, RegressionRule(), 0)
    advised = [r for r in records.rows["advice"] if r.app_key == "baseline"]
    assert any(r.setting == "spark.sql.shuffle.partitions" and r.advised == "2" for r in advised)
    applied = records.rows["advice_applied"]
    assert applied and {r.app_key for r in applied} == {"candidate"}
    for row in applied:
        assert row.advised_app_key == "baseline"
        assert (row.before, row.after, row.status) == ("400", "2", "applied")
        assert row.before_ms is not None and row.after_ms is not None
        assert row.after_ms < row.before_ms
        assert row.predicted_ms is not None
    assert records.applied and records.applied[0].app_key == "candidate"
