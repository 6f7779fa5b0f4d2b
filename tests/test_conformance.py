"""Conformance: every SQL execution's plan graph and metric strings equal Spark's History Server's.

One History Server (from the pyspark wheel) replays sample_eventlogs/ and the public logs; for
each application it lists, our JSON report must have the same node ids, names, codegen ids,
edges and, for every metric, byte-identical `spark_ui` strings. Logs written by an older Spark
version (`sample_eventlogs/spark-<X.Y>/`) are compared the same way with the answers of that
version's own History Server, saved beside them (`tests/oracle/saved.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conformance_check import Comparison, compare_app
from eventlog_samples import version_dirs
from oracle import HistoryServer, OracleHTTPError
from oracle.locations import SAMPLE_EVENTLOGS
from oracle.saved import SavedHistoryServer

from analyzer import api
from analyzer.errors import Strictness
from analyzer.report.json_view import build_json_view


def compare_all(oracle: HistoryServer | SavedHistoryServer) -> tuple[int, Comparison]:
    """Compare every application attempt the oracle lists; return (attempts, comparison)."""
    total = Comparison()
    n_apps = 0
    for app in oracle.applications():
        for attempt in app["attempts"]:
            attempt_id = attempt.get("attemptId")
            path = oracle.log_path_of(app["id"], attempt_id)
            analysis = api.analyze(str(path), Strictness.LENIENT)
            try:
                expected = oracle.sql(app["id"], attempt_id)
            except OracleHTTPError as error:
                # Spark 1.x wrote no SQL execution events: the History Server has no SQL
                # store to answer from, and says the app is missing. Nothing to compare.
                if error.status == 404 and analysis.application.spark_major == 1:
                    continue
                raise
            ours = build_json_view(analysis, api.find_issues(analysis))
            total.merge(compare_app(f"{app['id']}/{attempt_id}", ours, expected))
            n_apps += 1
    return n_apps, total


def _assert_no_differences(total: Comparison) -> None:
    assert total.structure_diffs == []
    assert total.numeric_diffs == []
    assert total.annotation_diffs == []


@pytest.mark.spark
@pytest.mark.slow
def test_every_sample_log_is_replayed_by_the_history_server(history_server: HistoryServer) -> None:
    unreadable = [
        str(s.source) for s in history_server.unavailable if s.source.parent == SAMPLE_EVENTLOGS
    ]
    assert unreadable == []


@pytest.mark.spark
@pytest.mark.slow
def test_plan_graphs_and_metric_strings_match_the_history_server(
    history_server: HistoryServer, capsys: pytest.CaptureFixture[str]
) -> None:
    n_apps, total = compare_all(history_server)
    with capsys.disabled():
        print(f"\nconformance over {n_apps} applications: {total.summary()}")
    assert n_apps >= 10
    assert total.n_metrics > 500
    _assert_no_differences(total)


def _version_params() -> list[Any]:
    found = [pytest.param(d, id=d.name) for d in version_dirs()]
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no older-version samples"))]


@pytest.mark.parametrize("log_dir", _version_params())
def test_older_version_logs_match_their_own_history_server(
    log_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each older version's logs against the saved answers of that version's History Server."""
    saved = SavedHistoryServer(log_dir)
    assert [str(s.source) for s in saved.unavailable] == [], "rerun save_history_server_answers"
    assert saved.spark_version.startswith(log_dir.name.removeprefix("spark-") + ".")
    n_apps, total = compare_all(saved)
    with capsys.disabled():
        print(
            f"\n{log_dir.name}: SHS {saved.spark_version}, {n_apps} applications: {total.summary()}"
        )
    assert n_apps >= 8
    assert total.n_metrics > 300
    _assert_no_differences(total)
