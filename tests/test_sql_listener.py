"""The SQL listener keeps a finished execution compactly, and a later job that names it (Spark
reloads it from its store) gets back exactly what it had: no sample log does this, so the
listener is driven here through the calls the replay makes for such a log."""

from __future__ import annotations

from analyzer.replay.sql_listener import SqlListener, _LiveExecution


def _state(ex: _LiveExecution) -> tuple[object, ...]:
    return (
        ex.execution_id,
        sorted(ex.metric_types.items()),
        list(ex.jobs.items()),
        ex.stages.inserted(),
        ex.stages.ordered(),
        ex.driver_updates,
    )


def test_a_finished_execution_revives_as_it_was() -> None:
    listener = SqlListener()
    # Ids in several runs, out of order, with more types than one.
    metrics = [(i, "sum") for i in (41, 40, 7, 8, 9, 100)]
    metrics += [(12, "size"), (11, "timing"), (10, "nsTiming")]
    listener.add_metrics(3, metrics)
    listener.job_start(3, 5, [9, 8, 1, 4, 6, 2], [(9, 2), (8, 1)])
    listener.driver_updates(3, [(40, 5), (11, 7), (40, 6)])
    live = listener._live[3]
    listener.job_end(5, True)
    listener.execution_end(3)
    before = _state(live)
    assert 3 not in listener._live
    done = listener._done[3]
    assert done.types_dict is None  # kept as arrays
    revived = done.revive(listener._type_names)
    assert _state(revived) == before
    assert list(revived.jobs.values()) == ["SUCCEEDED"]

    # The reload itself: tracked again, counted as ended once per job and once for itself.
    listener.job_start(3, 6, [11], [(11, 3)])
    reloaded = listener._live[3]
    assert reloaded.end_events == 2
    assert list(reloaded.jobs.items()) == [(5, "SUCCEEDED"), (6, "RUNNING")]
    assert reloaded.stages.inserted() == [9, 8, 1, 4, 6, 2, 11]


def test_types_shared_with_a_tracked_stage_stay_shared() -> None:
    listener = SqlListener()
    listener.add_metrics(1, [(1, "sum")])
    listener.add_metrics(2, [(2, "sum")])
    listener.job_start(2, 1, [4], [(4, 1)])
    listener.job_start(1, 2, [4], [(4, 1)])  # stage 4 now tracks execution 1's metrics
    types = listener._live[1].metric_types
    listener.job_end(2, True)
    listener.execution_end(1)
    done = listener._done[1]
    assert done.types_dict is types
    listener.add_metrics(9, [])
    assert done.revive(listener._type_names).metric_types is types
