"""A plan logged again with other accumulator ids is read from its text, not decoded again, and
is still checked: its ids must be Java longs like those of any other event."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest
from eventlog_samples import SAMPLES

from analyzer.errors import MalformedLineError, Strictness
from analyzer.eventlog.app_events import SparkPlanInfo
from analyzer.eventlog.events import EventReader, SQLExecutionStart
from analyzer.eventlog.plans import LoggedPlan
from analyzer.eventlog.source import resolve_log
from analyzer.replay.plan_graph import PlanParts, build_plan_graph

_LOG = SAMPLES / "local-1795320224872"
"""A plain sample log with one SQL execution."""
_ID = re.compile(rb'"accumulatorId":([0-9]+)')


def _start_line() -> bytes:
    return next(
        line
        for line in _LOG.read_bytes().splitlines()
        if line.startswith(
            b'{"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"'
        )
    )


def _again(line: bytes, execution_id: int, new_id: object) -> bytes:
    """The start line of another execution of the same plan, each id `new_id(old id)`."""
    line = line.replace(b'"executionId":0', b'"executionId":%d' % execution_id, 1)
    line = line.replace(b'"rootExecutionId":0', b'"rootExecutionId":%d' % execution_id, 1)
    return _ID.sub(lambda m: b'"accumulatorId":%s' % new_id(int(m.group(1))), line)  # type: ignore[operator]


def _starts(path: Path, strictness: Strictness = Strictness.STRICT) -> list[SQLExecutionStart]:
    return [
        e
        for e in EventReader(resolve_log(str(path)), strictness)
        if isinstance(e, SQLExecutionStart)
    ]


def test_a_plan_logged_again_is_not_decoded_again(tmp_path: Path) -> None:
    line = _start_line()
    log = tmp_path / "again"
    log.write_bytes(
        _LOG.read_bytes().rstrip(b"\n")
        + b"\n"
        + _again(line, 7, lambda i: b"%d" % (i + 5000))
        + b"\n"
    )
    first, second = _starts(log)
    assert first.plan is not None and second.plan is not None
    assert first.plan.decoded is not None and second.plan.decoded is None
    assert first.plan.digest == second.plan.digest
    # Decoded when asked, it is the plan a decoder gives for its text.
    whole = msgspec.json.decode(
        _again(line, 7, lambda i: b"%d" % (i + 5000)), type=dict[str, object]
    )["sparkPlanInfo"]
    assert second.plan.plan() == msgspec.convert(whole, SparkPlanInfo)
    parts = PlanParts()
    built, _ = build_plan_graph(first.plan, parts)
    again, _ = build_plan_graph(second.plan, parts)
    assert again.nodes is built.nodes
    assert list(again.all_accumulator_ids) == [i + 5000 for i in built.all_accumulator_ids]
    fresh, _ = build_plan_graph(second.plan.plan(), PlanParts())
    assert fresh.model_dump_json() == again.model_dump_json()


def test_an_id_past_a_java_long_in_a_known_plan_is_a_malformed_line(tmp_path: Path) -> None:
    line = _start_line()
    log = tmp_path / "huge-id"
    too_big = b"9" * 25
    log.write_bytes(
        _LOG.read_bytes().rstrip(b"\n") + b"\n" + _again(line, 8, lambda i: too_big) + b"\n"
    )
    n_lines = len(log.read_bytes().splitlines())
    with pytest.raises(MalformedLineError) as caught:
        _starts(log)
    assert caught.value.line == n_lines
    assert len(_starts(log, Strictness.LENIENT)) == 1


def test_a_plan_text_not_split_at_its_ids_is_still_built_right() -> None:
    """Ids the split does not see (a space before the colon) are read by decoding the plan."""
    line = _start_line()
    whole = msgspec.json.decode(line, type=dict[str, object])["sparkPlanInfo"]
    plan = msgspec.convert(whole, SparkPlanInfo)
    spaced = msgspec.json.encode(plan).replace(b'"accumulatorId":', b'"accumulatorId" : ')
    parts = PlanParts()
    logged = LoggedPlan.of(plan)
    odd = LoggedPlan(b"spaced", [], msgspec.Raw(spaced), None)
    built, _ = build_plan_graph(logged, parts)
    again, _ = build_plan_graph(odd, parts)
    twice, _ = build_plan_graph(odd, parts)
    assert again.model_dump_json() == built.model_dump_json() == twice.model_dump_json()
