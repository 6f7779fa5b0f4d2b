"""What shortening stages and tasks saves: a stage off its query's critical path (how much sooner
it could have ended with the query ending no sooner, and what a finding about it keeps of its
estimate), and hot tasks laid out on their slots. On real logs."""

from __future__ import annotations

import dataclasses

from oracle.locations import PUBLIC_CORPUS, SAMPLE_EVENTLOGS

from analyzer import api
from analyzer.aggregate.stage_stats import end_saved_ms
from analyzer.aggregate.time_spent import critical_path, stage_slack_ms
from analyzer.insights.finding import Finding
from analyzer.insights.rules import _off_critical_path
from analyzer.insights.thresholds import Thresholds

# local[8]: query 4 maps stage 2 (8 tasks) and stage 3 (4 tasks) side by side, then joins them
# in stage 4, submitted when stage 2 ended: 17.308 s after its start, stage 3 after 13.265 s.
SLOTS_8 = SAMPLE_EVENTLOGS / "slots" / "local-1795632288285.zstd"


def test_a_map_stage_that_ended_first_has_the_wait_of_its_join_as_slack() -> None:
    analysis = api.analyze(str(SLOTS_8))
    stage_ids = analysis.executions_by_id[4].stage_ids
    stages = analysis.application.stages
    assert [span.stage_id for span in critical_path(stage_ids, stages)] == [2, 4]
    # Stage 3 ended at ...335,002 ms; its consumer, stage 4, was submitted at ...338,918.
    assert stage_slack_ms(stage_ids, stages) == {3: 3916}


def test_a_stage_estimate_keeps_what_exceeds_the_stage_slack() -> None:
    analysis = api.analyze(str(SLOTS_8))
    made = Finding(
        rule="data-skew",
        severity="warning",
        title="Stage 3",
        suggestion="",
        estimated_lost_ms=5000,
        estimate_method="the stage's estimate",
        execution_id=4,
        stage_id=3,
    )
    [kept] = _off_critical_path(analysis, [made], Thresholds())
    # 5.0 s less 3.9 s of slack; the share of the saving that frees busy slots for stage 2
    # (5.5 % of stage 3's wall with all 8 slots busy, over 8 slots) is less.
    assert kept.estimated_lost_ms == 5000 - 3916
    assert kept.severity == "info"  # 1.1 s of a 28.6 s query
    assert kept.number("slack_ms") == 3916
    assert "off the query's critical path" in kept.estimate_method
    # A finding about a stage on the path, or of a rule not about one stage's time, is kept.
    on_path = dataclasses.replace(made, stage_id=2)
    other = dataclasses.replace(made, rule="python-udf")
    assert _off_critical_path(analysis, [on_path, other], Thresholds()) == [on_path, other]


def test_shortening_one_of_four_hot_tasks_saves_nothing() -> None:
    # The public attempt_1 log (EMR), stage 3: four tasks read 91 % of the rows and ran 17.6 to
    # 18.6 s on 30 slots, one wave. The slowest alone at the median (3.0 s) ends the stage no
    # sooner; all four at the median end it when the next longest, 6.7 s tasks, end.
    analysis = api.analyze(str(PUBLIC_CORPUS / "attempt_1_eventlog.zstd"))
    hot = (64, 71, 78, 85)
    wall = analysis.stage_walls[(3, 0)]
    assert wall.peak_running == 30
    assert end_saved_ms(analysis.tasks, 3, 0, hot[0], 3022, 30) == 0
    assert end_saved_ms(analysis.tasks, 3, 0, hot, 3022, 30) == 11771
