"""Conformance: every SQL execution's plan graph and metric strings equal Spark's History Server's.

One History Server (from the pyspark wheel) replays sample_eventlogs/ and the public logs; for
each application it lists, our JSON report must have the same node ids, names, codegen ids,
edges and, for every metric, byte-identical `spark_ui` strings.
"""

from __future__ import annotations

import pytest
from conformance_check import Comparison, compare_app
from oracle import HistoryServer
from oracle.locations import SAMPLE_EVENTLOGS

from analyzer import api
from analyzer.errors import Strictness
from analyzer.report.json_view import build_json_view

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_every_sample_log_is_replayed_by_the_history_server(history_server: HistoryServer) -> None:
    unreadable = [
        str(s.source) for s in history_server.unavailable if s.source.parent == SAMPLE_EVENTLOGS
    ]
    assert unreadable == []


def test_plan_graphs_and_metric_strings_match_the_history_server(
    history_server: HistoryServer, capsys: pytest.CaptureFixture[str]
) -> None:
    total = Comparison()
    n_apps = 0
    for app in history_server.applications():
        for attempt in app["attempts"]:
            attempt_id = attempt.get("attemptId")
            oracle = history_server.sql(app["id"], attempt_id)
            path = history_server.log_path_of(app["id"], attempt_id)
            analysis = api.analyze(str(path), Strictness.LENIENT)
            ours = build_json_view(analysis, api.find_issues(analysis))
            total.merge(compare_app(f"{app['id']}/{attempt_id}", ours, oracle))
            n_apps += 1
    with capsys.disabled():
        print(f"\nconformance over {n_apps} applications: {total.summary()}")
    assert n_apps >= 10
    assert total.n_metrics > 500
    assert total.structure_diffs == []
    assert total.numeric_diffs == []
    assert total.annotation_diffs == []
