"""Estimates that add up: on every sample and public log, the findings' estimated time lost never
sums past the wall time it claims, per stage, per SQL execution and per application.

A time estimate is a claim about the wall clock: two findings about the same stage, or about
stages that ran side by side, cannot together have cost more than that stretch took
(docs/findings.md, "Estimates that add up").
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from test_stage_wall import analyzed, every_log

from analyzer.insights import detect_all


@pytest.mark.parametrize("log", every_log())
def test_estimates_never_sum_past_the_wall(log: Path) -> None:
    analysis = analyzed(log)
    findings = detect_all(analysis)
    app = analysis.application
    walls = {e.execution_id: e.duration_ms for e in app.executions}
    # A finding about a whole streaming query run points at one of its micro-batches' executions
    # but claims time over the run: it is bounded by the run's wall, not that execution's.
    run_walls: dict[str, int] = defaultdict(int)
    for fig in analysis.streaming:
        if fig.query.start_ms is not None and fig.query.end_ms is not None:
            wall_ms = fig.query.end_ms - fig.query.start_ms
            run_walls[fig.query.label] = max(run_walls[fig.query.label], wall_ms)
    per_execution: dict[int, int] = defaultdict(int)
    per_run: dict[str, int] = defaultdict(int)
    per_stage: dict[int, int] = defaultdict(int)
    for f in findings:
        assert f.estimated_lost_ms >= 0, f
        whole_run = f.rule.startswith("streaming-") or any(
            e.key == "n_batches_with_finding" for e in f.evidence
        )
        batch = (
            analysis.streaming_batches.get(f.execution_id) if f.execution_id is not None else None
        )
        if whole_run and batch is not None:
            per_run[batch[0]] += f.estimated_lost_ms
        elif f.execution_id is not None:
            per_execution[f.execution_id] += f.estimated_lost_ms
        if (
            f.stage_id is not None
            and not (whole_run and batch is not None)
            and "stage_ids" not in {e.key for e in f.evidence}
        ):
            per_stage[f.stage_id] += f.estimated_lost_ms
    for execution_id, lost in per_execution.items():
        wall = walls.get(execution_id)
        bound = wall if wall is not None else app.duration_ms
        if bound is not None:
            assert lost <= max(bound, 0), (execution_id, lost, bound, findings)
    for label, lost in per_run.items():
        if label in run_walls:
            assert lost <= run_walls[label], (label, lost, run_walls[label], findings)
    for stage_id, lost in per_stage.items():
        stage_walls = [w.wall_ms for (sid, _), w in analysis.stage_walls.items() if sid == stage_id]
        if stage_walls:
            assert lost <= sum(stage_walls), (stage_id, lost, findings)
    if app.duration_ms is not None:
        total = sum(f.estimated_lost_ms for f in findings)
        assert total <= max(app.duration_ms, 0), (total, app.duration_ms)


@pytest.mark.parametrize("log", every_log())
def test_warnings_claim_a_share_of_the_wall(log: Path) -> None:
    """Severity by cost: a time-cost warning claims at least `min_query_share` of its wall."""
    analysis = analyzed(log)
    app = analysis.application
    walls = {e.execution_id: e.duration_ms for e in app.executions}
    for f in detect_all(analysis):
        if f.severity != "warning" or f.estimated_lost_ms == 0:
            continue
        wall = walls.get(f.execution_id) if f.execution_id is not None else None
        if wall is None:
            wall = app.duration_ms
        if wall:
            assert f.estimated_lost_ms >= 0.05 * wall, (f.rule, f.title, f.estimated_lost_ms, wall)
