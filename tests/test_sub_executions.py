"""Databricks sub-executions (`rootExecutionId`): shown under their root, counted once."""

from __future__ import annotations

import re

from eventlog_samples import PUBLIC_CORPUS

from analyzer import api
from analyzer.errors import Strictness
from analyzer.report.options import ReportOptions

LOG = PUBLIC_CORPUS / "db_subExecution_id.zstd"


def test_sub_executions_are_nested_under_their_root() -> None:
    app = api.analyze(str(LOG), Strictness.LENIENT).application
    assert app.sub_executions == {5: (6, 7, 8, 9, 10)}
    parents = {e.execution_id: app.parent_of(e) for e in app.executions}
    assert parents[8] == 5
    assert parents[5] is None and parents[11] is None


def test_where_the_time_went_counts_a_root_with_its_sub_executions_once() -> None:
    analysis = api.analyze(str(LOG), Strictness.LENIENT)
    text = api.render_report(analysis, ReportOptions(fmt="text", sections=("time",)))
    listed = re.findall(r"^ *\d+\. SQL execution (\d+) ", text, flags=re.MULTILINE)
    assert listed[0] == "5"
    assert not {"6", "7", "8", "9", "10"} & set(listed)
    assert "sub-executions 6, 7, 8, 9, 10 ran inside it" in text
    # The root's time is spent in sub-execution 8's scan stage: its hot operators are named.
    assert "stage 7: 3m 57s wall" in text
    assert "Scan parquet spark_catalog.default.people_large_2 #2" in text


def test_every_format_says_where_an_execution_is_nested() -> None:
    analysis = api.analyze(str(LOG), Strictness.LENIENT)
    for fmt in ("text", "html"):
        out = api.render_report(analysis, ReportOptions(fmt=fmt))
        assert "sub-execution of SQL execution 5" in out, fmt
        assert "sub-executions 6, 7, 8, 9, 10" in out, fmt
