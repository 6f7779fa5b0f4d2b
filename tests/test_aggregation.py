"""Invariants of the per-node statistics, on real logs and on generated values."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from eventlog_samples import public_log_params, sample_id, sample_logs
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer import api
from analyzer.aggregate import tables
from analyzer.aggregate.node_metrics import _metric_frame
from analyzer.aggregate.spark_format import valid_for_spark
from analyzer.errors import Strictness


def _logs() -> list[object]:
    return [pytest.param(p, id=sample_id(p)) for p in sample_logs()] + public_log_params()


@pytest.mark.parametrize("log", _logs())
def test_statistics_hold_their_invariants(log: Path) -> None:
    analysis = api.analyze(str(log), Strictness.LENIENT)
    slots = analysis.slots.frame()
    tasks = analysis.tasks.frame()
    for execution in analysis.application.executions:
        for node_stats in analysis.node_stats[execution.execution_id].values():
            for m in node_stats.metrics:
                values = slots.filter(
                    (pl.col("execution_id") == execution.execution_id)
                    & (pl.col("accumulator_id") == m.accumulator_id)
                )["value"].to_list()
                counted = [v for v in values if valid_for_spark(m.metric_type, v)]
                assert m.total == sum(counted)
                assert m.count == len(counted)
                assert m.min_value <= m.p25 <= m.median <= m.p75 <= m.p95 <= m.max_value
                if counted:
                    assert m.max_value == max(counted)
                at = m.max_at
                if at is not None and at.task_id is not None:
                    row = slots.filter(
                        (pl.col("execution_id") == execution.execution_id)
                        & (pl.col("accumulator_id") == m.accumulator_id)
                        & (pl.col("task_id") == at.task_id)
                    )
                    assert m.max_value in row["value"].to_list()
                    task = tasks.filter(pl.col("task_id") == at.task_id)
                    assert task["executor_id"].to_list()[0] == at.executor_id


def _batched_logs() -> list[object]:
    """Two logs with many SQL executions in the quick loop, every sample log in the slow one."""
    quick = {"local-1795630141481.zstd", "local-1795320224872"}
    return [
        pytest.param(p, id=sample_id(p))
        if p.name in quick
        else pytest.param(p, id=sample_id(p), marks=pytest.mark.slow)
        for p in sample_logs()
    ]


@pytest.mark.parametrize("log", _batched_logs())
def test_batches_of_executions_aggregate_as_the_whole_log(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Statistics and self times do not depend on how many executions are aggregated at once."""
    whole = api.analyze(str(log), Strictness.LENIENT)
    monkeypatch.setattr(tables, "BATCH_SLOT_ROWS", 5)
    batched = api.analyze(str(log), Strictness.LENIENT)
    assert repr(sorted(batched.node_stats.items())) == repr(sorted(whole.node_stats.items()))
    assert batched.times == whole.times


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["sum", "size", "timing", "average"]),
    st.lists(st.integers(min_value=-3, max_value=10**9), min_size=1, max_size=60),
)
def test_quantiles_follow_the_higher_rank(metric_type: str, values: list[int]) -> None:
    slots = pl.DataFrame(
        {
            "execution_id": [1] * len(values),
            "accumulator_id": [9] * len(values),
            "stage_id": [0] * len(values),
            "stage_attempt_id": [0] * len(values),
            "task_id": list(range(len(values))),
            "value": values,
        }
    )
    types = pl.DataFrame({"execution_id": [1], "accumulator_id": [9], "metric_type": [metric_type]})
    row = _metric_frame(slots.lazy(), types).row(0, named=True)
    valid = sorted(v for v in values if valid_for_spark(metric_type, v))
    if not valid:
        assert row["count"] is None
        return
    n = len(valid)
    assert row["count"] == n
    assert row["total"] == sum(valid)
    assert row["median"] == valid[n // 2]
    assert row["min_value"] <= row["p25"] <= row["median"] <= row["p75"] <= row["p95"]
    assert row["p95"] <= row["max_value"] == valid[-1]
