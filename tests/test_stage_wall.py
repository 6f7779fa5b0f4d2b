"""Capacity as Spark's scheduler sees it, and every stage's wall time taken apart, on real logs.

The cases are public real-world logs whose raw events were read by hand: a dynamic-allocation
application whose first stages waited with no executor alive, a resource-profile application,
a local-mode one, and a GPU query whose single-task stages were held 11 s by the driver.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from eventlog_samples import PUBLIC_CORPUS, public, public_logs, sample_logs
from reports import text_report

from analyzer import api
from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.capacity import ProfileSlots
from analyzer.errors import Strictness
from analyzer.report.options import parse_sections

_BIG_LOG_BYTES = 2 << 20


def _size(log: Path) -> int:
    return sum(p.stat().st_size for p in log.rglob("*")) if log.is_dir() else log.stat().st_size


def every_log() -> list[object]:
    """Every sample and public log as a test parameter, the big ones marked slow."""
    return [
        pytest.param(
            log,
            id=f"{log.parent.name}/{log.name}",
            marks=[pytest.mark.slow] if _size(log) > _BIG_LOG_BYTES else [],
        )
        for log in [*sample_logs(), *public_logs()]
    ]


@cache
def analyzed(log: Path) -> Analysis:
    """The lenient analysis of `log`, once per test session."""
    return api.analyze(str(log), Strictness.LENIENT)


def _public(name: str) -> Analysis:
    return analyzed(PUBLIC_CORPUS / name)


def test_slots_without_any_executor_are_counted_as_none() -> None:
    p = ProfileSlots(0, (10, 20, 30), (4, 0, 8), 0, 8)
    assert (p.at(5), p.at(10), p.at(25), p.at(35)) == (0, 4, 0, 8)
    assert p.without_slots_ms(0, 40) == 10 + 10
    assert p.most(21, 29) == 0 and p.most(15, 31) == 8


def test_dynamic_allocation_stages_waited_for_executors() -> None:
    analysis = _public("eventlog_4nodes_8cores_dynamic_alloc.zstd")
    cap = analysis.capacity
    assert cap.dynamic_allocation and not cap.local_mode
    assert cap.executor_cores == 4 and cap.peak_slots == 28
    # Both executors were removed (idle timeout) 45 s before stages 0 and 1 were submitted.
    assert cap.slots_at(1727966085560) == 0
    for stage_id in (0, 1):
        wall = analysis.stage_walls[(stage_id, 0)]
        assert wall.wait_executor_ms >= 10_000
        assert wall.wait_executor_ms > wall.run_ms


def test_resource_profile_stage_waits_for_its_own_executors() -> None:
    analysis = _public("rp_sql_eventlog.zstd")
    stage0 = next(s for s in analysis.application.stages if s.stage_id == 0)
    assert stage0.resource_profile_id == 1
    # A profile-0 executor was alive when stage 0 was submitted: not a slot for profile 1.
    assert analysis.capacity.slots_at(stage0.submission_ms, 0) == 4
    assert analysis.capacity.slots_at(stage0.submission_ms, 1) == 0
    assert analysis.stage_walls[(0, 0)].wait_executor_ms > 6_000


def test_local_mode_slots_are_the_drivers() -> None:
    analysis = _public("pandas_execs_eventlog.zstd")
    assert analysis.capacity.local_mode and not analysis.capacity.dynamic_allocation
    assert analysis.capacity.peak_slots == 8


def test_driver_stall_is_scheduler_delay_not_run_time() -> None:
    analysis = _public("nds_q66_gpu.zstd")
    assert analysis.capacity.peak_slots == 128
    for stage_id in range(31, 36):
        wall = analysis.stage_walls[(stage_id, 0)]
        assert wall.scheduler_delay_ms > 11_000
        assert wall.run_ms < 1_000 and wall.wait_executor_ms == 0


@pytest.mark.parametrize("log", every_log())
def test_stage_parts_add_up_to_its_wall(log: Path) -> None:
    for key, wall in analyzed(log).stage_walls.items():
        parts = (
            wall.wait_executor_ms,
            wall.queued_ms,
            wall.not_launched_ms,
            wall.scheduler_delay_ms,
            wall.deserialize_ms,
            wall.run_ms,
            wall.result_ms,
            wall.tail_ms,
        )
        assert min(parts) >= 0, (key, parts)
        assert sum(parts) == wall.wall_ms, (key, parts, wall.wall_ms)
        assert wall.gc_ms + wall.fetch_wait_ms <= wall.run_ms


def test_a_stage_that_launched_no_task_is_not_scheduler_delay() -> None:
    # gpu_oom: stage 37 (1 task) was submitted at +113.8 s while stage 34 held 31 of the 32
    # slots, launched no task, and ended at +135.8 s "Stage cancelled because SparkContext was
    # shut down": no driver held a task of it.
    analysis = analyzed(public("gpu_oom_eventlog.zstd"))
    wall = analysis.stage_walls[(37, 0)]
    assert wall.n_tasks == 0 and wall.first_launch_ms is None
    assert wall.scheduler_delay_ms == 0
    assert wall.not_launched_ms > 21_000
    text = text_report(analysis, sections=parse_sections("time"), width=200)
    line = next(li for li in text.splitlines() if "stage 37:" in li)
    assert line.endswith(
        "mostly no task launched (cancelled: Stage cancelled because SparkContext was shut down)"
    )
    assert "scheduler delay" not in line


@pytest.mark.parametrize("log", every_log())
def test_no_executor_runs_more_tasks_than_its_slots(log: Path) -> None:
    # A task's logged finish comes after its slot was offered again, so its interval overlaps
    # the next task's; counted raw, local[2] ran 8 tiny tasks at once and a GPU cluster's
    # 16-slot executors 29. Each executor's count is capped at its slots.
    analysis = analyzed(log)
    slots = analysis.task_slots
    if not slots:
        pytest.skip("no executor's task slots are logged")
    assert analysis.peak_running_tasks <= max(1, sum(slots.values()))
    for wall in analysis.stage_walls.values():
        assert wall.peak_running <= max(1, sum(slots.values())), wall
