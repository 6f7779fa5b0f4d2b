"""Every public real-world event log reports in every format, and every metric type formats.

The logs are the repository's corpus (`sample_eventlogs/public/`: Databricks, Photon, RAPIDS GPU,
EMR, Dataproc, YARN, JDBC, UDFs, multiple attempts, dynamic allocation) and the public logs of
`../shared/eventlogs/public`. Their metric strings are checked against Spark's History Server
by the conformance suite (tests/test_conformance.py); here each one is read leniently and
rendered as text, JSON, HTML and Markdown, which must not raise, and the JSON must match the
published schema (docs/json-schema.json).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
import zstandard
from eventlog_samples import PUBLIC_CORPUS, public_log_params, public_logs
from json_contract import assert_matches_schema

from analyzer import api
from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.spark_format import (
    BUILTIN_TYPES,
    format_value,
    spark_metric_string,
    spark_string_from_stats,
)
from analyzer.errors import Strictness
from analyzer.report.options import FORMATS, ReportOptions

_METRIC_TYPE = re.compile(rb'"metricType":"([^"\\]{1,200})"')


@cache
def _analysis(log: Path) -> Analysis:
    return api.analyze(str(log), Strictness.LENIENT)


def test_the_corpus_is_in_the_repository() -> None:
    logs = [p for p in public_logs() if p.parent == PUBLIC_CORPUS]
    assert len(logs) >= 50
    assert (PUBLIC_CORPUS / "README.md").is_file()


@pytest.mark.parametrize("log", public_log_params())
def test_every_public_log_reports_in_every_format(log: Path) -> None:
    analysis = _analysis(log)
    findings = api.find_issues(analysis)
    for fmt in FORMATS:
        out = api.render_report(analysis, ReportOptions(fmt=fmt), findings)
        assert out, fmt
        if fmt == "json":
            doc = json.loads(out)
            assert len(doc["executions"]) == len(analysis.application.executions)
            assert_matches_schema(doc)


def _logged_metric_types(log: Path) -> set[str]:
    """Every `metricType` a log's plans declare, read from its raw (decompressed) bytes."""
    files = sorted(p for p in log.rglob("*") if p.is_file()) if log.is_dir() else [log]
    found: set[str] = set()
    for path in files:
        data = path.read_bytes()
        if data[:4] == b"\x28\xb5\x2f\xfd":
            reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
            data = reader.read()
        found.update(m.group(1).decode() for m in _METRIC_TYPE.finditer(data))
    return found


def test_every_metric_type_of_every_public_log_formats() -> None:
    """A type Spark does not define formats as `MetricUtils.stringValue` does, never raises."""
    types: set[str] = set()
    for log in public_logs():
        if log.suffix in ("", ".zstd"):
            types |= _logged_metric_types(log)
    # Databricks' vendor types and a DataSource V2 custom metric are among them.
    assert {"count", "maximum", "minimum"} <= types
    assert any(t.startswith("v2Custom_") for t in types)
    for metric_type in sorted(types):
        for values in ([], [7], [0, 3, -1, 12, 5]):
            text = spark_metric_string(metric_type, values, (1, 0, 42))
            n = len([v for v in values if v >= 0])
            stats = spark_string_from_stats(
                metric_type,
                n,
                sum(values),
                min(values, default=0),
                5,
                max(values, default=0),
                (1, 0, 42),
            )
            assert text and stats
            if metric_type not in BUILTIN_TYPES and not metric_type.startswith("v2Custom_"):
                assert text.startswith(("[unknown] ", "total (min, med, max")), text
    assert spark_metric_string("maximum", [0, 3, -1, 12, 5], (1, 0, 42)) == (
        "total (min, med, max (stageId: taskId))\n"
        "[unknown] 20 ([unknown] 0, [unknown] 5, [unknown] 12 (stage 1.0: task 42))"
    )
    assert format_value("count", 1_234_567) == "[unknown] 1,234,567"
