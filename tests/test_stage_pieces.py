"""The per-stage-attempt figures worked out a piece of whole stages at a time are those of the
whole task table: the stage statistics, walls and quantiles, the what-if, the self times and
the JSON report,
on real logs cut into many pieces (`aggregate.tables.stage_pieces`)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from eventlog_samples import SAMPLES, public

from analyzer import api
from analyzer.aggregate import tables
from analyzer.aggregate.analysis import Analysis
from analyzer.report.options import ReportOptions

RETRIED = SAMPLES / "app-20261122042434-0000.zstd"
"""A standalone-cluster run whose stages were retried: attempts 0 and 1 of one stage."""


def _figures(analysis: Analysis) -> dict[str, object]:
    return {
        "stats": analysis.stage_stats,
        "walls": analysis.stage_walls,
        "summaries": analysis.stage_summaries,
        "what_if": analysis.what_if(),
        "times": analysis.times,  # the run time outside each stage's pipelines, piece by piece
        "report": api.render_report(analysis, ReportOptions(fmt="json")),
    }


def _whole_and_cut(log: Path, rows: int, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict]:
    whole = _figures(api.analyze(str(log)))
    cut = api.analyze(str(log))
    monkeypatch.setattr(tables, "BATCH_TASK_ROWS", rows)
    assert len(tables.stage_ranges(cut.tasks)) > 2
    return whole, _figures(cut)


def test_pieces_of_a_log_of_many_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    whole, cut = _whole_and_cut(public("nds_q72_dataproc_2_2.zstd"), 1_000, monkeypatch)
    assert cut == whole


def test_pieces_of_a_log_of_retried_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    retried = api.analyze(str(RETRIED)).tasks.frame().filter(pl.col("stage_attempt_id") > 0)
    assert retried.height
    whole, cut = _whole_and_cut(RETRIED, 3, monkeypatch)
    assert cut == whole


def test_ranges_hold_whole_stages_in_order() -> None:
    frame = pl.DataFrame({"stage_id": [4, 1, 1, 2, 4, 3, 1, 9]})
    tasks = tables.TaskTable(frame)
    assert tables.stage_ranges(tasks, 3) == [(1, 1), (2, 4), (9, 9)]
    assert tables.stage_ranges(tasks, 100) == [(1, 9)]
    assert tables.stage_ranges(tables.TaskTable(frame.clear()), 3) == []
