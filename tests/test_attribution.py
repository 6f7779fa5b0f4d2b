"""Time attribution: every node's self time, each millisecond of task time counted once.

The invariant holds on every sample and public log: an execution's node self times never add
up to more than its tasks' executor run time, and a stage's never to more than its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from eventlog_samples import public, public_log_params, sample_logs
from oracle.locations import PUBLIC_CORPUS

from analyzer import api
from analyzer.aggregate.attribution import cost_factor, task_cpus
from analyzer.aggregate.time_spent import covered_ms, critical_path
from analyzer.errors import Strictness


def _logs() -> list[object]:
    return [pytest.param(p, id=p.name) for p in sample_logs()] + public_log_params()


@pytest.mark.parametrize("log", _logs())
def test_self_times_never_exceed_task_run_time(log: Path) -> None:
    analysis = api.analyze(str(log), Strictness.LENIENT)
    for execution in analysis.application.executions:
        times = analysis.times[execution.execution_id]
        assert times.attributed_ms <= times.task_run_ms - times.failed_run_ms + 1e-6
        per_stage: dict[int, float] = {}
        for node in times.nodes.values():
            assert node.self_time_ms is None or node.self_time_ms >= 0
            assert node.driver_time_ms >= 0
            assert node.measured_ms <= (node.self_time_ms or 0.0) + 1e-6
        for stage in times.stages.values():
            total = stage.outside_ms + stage.measured_ms + stage.estimated_ms
            assert total <= stage.run_ms + 1e-6, (execution.execution_id, stage)
            per_stage[stage.stage_id] = total
        assert sum(per_stage.values()) >= times.attributed_ms - 1e-6


def test_q72_time_lands_in_the_stage_of_the_exploding_join() -> None:
    analysis = api.analyze(str(public("nds_q72_dataproc_2_2.zstd")))
    times = analysis.times[24]
    graph = next(e for e in analysis.application.executions if e.execution_id == 24)
    stage_50 = times.stages[50]
    assert stage_50.run_ms > 0.45 * times.task_run_ms  # the bulk of the query
    smj = times.nodes[30]
    assert graph.final_plan.graph.node(30).name == "SortMergeJoin"
    assert smj.stage_ids == (50,)
    assert smj.self_time_ms is not None and smj.self_time_ms > 60_000
    # Scan time, file-system API times and the codegen duration overlap: only scan time counts.
    scan = times.nodes[118]
    assert scan.measured_ms == 844_665
    assert scan.self_time_ms is not None and scan.self_time_ms <= times.stages[47].run_ms


def test_driver_time_is_kept_apart() -> None:
    analysis = api.analyze(str(public("nds_q72_dataproc_2_2.zstd")))
    times = analysis.times[24]
    broadcast = times.nodes[79]  # BroadcastExchange: time to build 299 ms + broadcast 201 ms
    assert broadcast.self_time_ms is None
    assert broadcast.driver_time_ms == 500


def test_python_evaluation_gets_the_time_of_its_stage() -> None:
    analysis = api.analyze(str(public("python_udf_eventlog")))
    times = analysis.times[0]
    top = max(times.nodes.values(), key=lambda n: n.self_time_ms or 0)
    graph = analysis.application.executions[0].final_plan.graph
    assert graph.node(top.node_id).name == "BatchEvalPython"


def test_cost_factors_and_task_cpus() -> None:
    assert cost_factor("ArrowEvalPython") > cost_factor("SortMergeJoin") > cost_factor("Project")
    analysis = api.analyze(str(public("local-1642039451826")))
    assert task_cpus(analysis.application) == 1  # Spark 3.3: run time is wall time


def test_critical_path_follows_the_stages_waited_for() -> None:
    analysis = api.analyze(str(public("nds_q72_dataproc_2_2.zstd")))
    execution = next(e for e in analysis.application.executions if e.execution_id == 24)
    path = [s.stage_id for s in critical_path(execution.stage_ids, analysis.application.stages)]
    assert path[-3:] == [50, 55, 61]
    assert covered_ms([(0, 10), (5, 20)]) == 20


def test_time_no_gpu_or_photon_timer_claims_is_not_given_to_their_operators() -> None:
    # nds_q66_gpu, query 24, stage 38: 35.0 s of task run time, 3.9 s of it measured by the
    # operators' op time; the two GpuHashAggregates measured 542 ms and 500 ms.
    gpu = api.analyze(str(PUBLIC_CORPUS / "nds_q66_gpu.zstd")).times[24]
    stage = gpu.stages[38]
    assert stage.estimated_ms == 0 and round(stage.unattributed_ms) == 31_086
    assert round(gpu.nodes[10].self_time_ms or 0) == 542
    assert round(gpu.nodes[47].self_time_ms or 0) == 500
    # The Photon q88 log, query 26, stage 33: its scan's exclusive time is 356 ms of the tasks'
    # 6.0 s (206 ms of CPU: they waited).
    photon = api.analyze(str(PUBLIC_CORPUS / "eventlog_v2_app-20240919162642-0000")).times[26]
    assert round(dict(photon.nodes[263].by_stage)[33]) == 356
    assert round(photon.stages[33].unattributed_ms) == 5678


def test_an_old_gpu_total_time_bounds_an_operator_estimate() -> None:
    # rapids_join_eventlog (spark-rapids 0.x: no op time), query 0. Stage 0: GpuRowToColumnar
    # #18 has a total time of 59 ms. Stage 2: GpuShuffledHashJoin #6 has 3.90 s of total time,
    # 3.64 s of it its children's (GpuCoalesceBatches 3.38 s, GpuShuffleCoalesce 0.26 s).
    times = api.analyze(str(PUBLIC_CORPUS / "rapids_join_eventlog.zstd")).times[0]
    assert round(dict(times.nodes[18].by_stage)[0]) == 59
    assert round(dict(times.nodes[6].by_stage)[2]) == 260
    assert times.stages[2].unattributed_ms > 4_000
