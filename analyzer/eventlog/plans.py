"""Logged physical plans, read by their JSON text: a plan seen before is not decoded again.

An SQL execution logs its whole plan (`sparkPlanInfo`) when it starts and at every adaptive
update, and every run of a repeated query or micro-batch logs the same plan with new
accumulator ids: a log of thousands of short executions is mostly plan JSON, tens of KB a
plan. The plan of such an event is kept as its JSON (`msgspec.Raw`) and split at its accumulator
ids (`"accumulatorId":N`, a key: inside a JSON string a quote is escaped). The text between the
ids, hashed, names the plan less its ids. Text equal to a plan's decoded before is the same plan
with other ids, already validated; only the ids are read from it. Other text is decoded into a
`SparkPlanInfo` (and validated) as any other event field.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import msgspec

from analyzer.eventlog.app_events import SparkPlanInfo
from analyzer.eventlog.task_events import Long

_ACCUMULATOR_ID = re.compile(rb'"accumulatorId":(-?[0-9]+)')
"""An accumulator id in a plan's JSON text, the id as the group."""
_SAFE_ID_CHARS = 18
"""Longest id text that is surely a Java long (a sign and 17 digits, or 18 digits)."""
_PLAN = msgspec.json.Decoder(SparkPlanInfo)
_ENCODE = msgspec.json.Encoder().encode
NO_PLAN_JSON = msgspec.Raw(b"null")
"""What an event without a plan holds (`"sparkPlanInfo": null`, or no such key)."""


@dataclass(frozen=True, slots=True)
class LoggedPlan:
    """A logged plan: the digest of its JSON text less its accumulator ids, the ids in the
    order of the text, and the plan decoded the first time its digest was read."""

    digest: bytes
    """Names the plan less its ids: equal digests, equal plans but for the ids' values."""
    ids: list[bytes]
    """Every `accumulatorId` of the text, in text order, as logged (decimal digits)."""
    json: msgspec.Raw | bytes
    decoded: SparkPlanInfo | None
    """The plan, if this text was the first of its digest; else None (see `plan`)."""

    def plan(self) -> SparkPlanInfo:
        """The plan as decoded (a text of a digest read before is decoded now: it is valid)."""
        return self.decoded if self.decoded is not None else _PLAN.decode(self.json)

    @classmethod
    def of(cls, plan: SparkPlanInfo) -> LoggedPlan:
        """The plan as if logged in msgspec's encoding (for plans not read from a log)."""
        text = _ENCODE(plan)
        digest, ids = _split(text)
        return cls(digest, ids, text, plan)


def _split(text: msgspec.Raw | bytes) -> tuple[bytes, list[bytes]]:
    pieces = _ACCUMULATOR_ID.split(text)
    # NUL is no valid character of JSON text, so the pieces joined with it keep their bounds.
    digest = hashlib.blake2b(b"\0".join(pieces[0::2]), digest_size=16).digest()
    return digest, pieces[1::2]


class SQLExecutionStartJson(msgspec.Struct, frozen=True, gc=False):
    """`SQLExecutionStart` as decoded, its plan still JSON text."""

    execution_id: Long = msgspec.field(name="executionId")
    root_execution_id: Long | None = msgspec.field(name="rootExecutionId", default=None)
    description: str = ""
    details: str = ""
    physical_plan_description: str = msgspec.field(name="physicalPlanDescription", default="")
    plan_json: msgspec.Raw = msgspec.field(name="sparkPlanInfo", default=NO_PLAN_JSON)
    time_ms: Long = msgspec.field(name="time", default=0)
    modified_configs: dict[str, str] | None = msgspec.field(name="modifiedConfigs", default=None)
    job_tags: Any = msgspec.field(name="jobTags", default=None)
    """The tags of the execution's jobs (Spark 3.5+), a Spark Connect operation's among them;
    any JSON (a list of strings as Spark writes it), so that an odd value loses only the tags."""


class SQLAdaptiveExecutionUpdateJson(msgspec.Struct, frozen=True, gc=False):
    """`SQLAdaptiveExecutionUpdate` as decoded, its plan still JSON text."""

    execution_id: Long = msgspec.field(name="executionId")
    physical_plan_description: str = msgspec.field(name="physicalPlanDescription", default="")
    plan_json: msgspec.Raw = msgspec.field(name="sparkPlanInfo", default=NO_PLAN_JSON)


class SQLExecutionStart(msgspec.Struct, frozen=True, gc=False):
    """A SQL execution started, with its initial physical plan."""

    execution_id: int
    root_execution_id: int | None
    description: str
    details: str
    physical_plan_description: str
    plan: LoggedPlan | None
    time_ms: int
    modified_configs: dict[str, str] | None
    job_tags: Any


class SQLAdaptiveExecutionUpdate(msgspec.Struct, frozen=True, gc=False):
    """Adaptive query execution re-planned a running execution."""

    execution_id: int
    physical_plan_description: str
    plan: LoggedPlan | None


class PlanReader:
    """Reads the plans of a log's events, decoding each distinct plan less its ids once."""

    def __init__(self) -> None:
        self._decoded: set[bytes] = set()

    def read(self, text: msgspec.Raw) -> LoggedPlan | None:
        """The plan of an event's `sparkPlanInfo` JSON (None for null); `msgspec.ValidationError`
        if it is not a valid plan."""
        if text == NO_PLAN_JSON:
            return None
        digest, ids = _split(text)
        if digest in self._decoded and max(map(len, ids), default=0) <= _SAFE_ID_CHARS:
            return LoggedPlan(digest, ids, text, None)
        decoded = _PLAN.decode(text)
        self._decoded.add(digest)
        return LoggedPlan(digest, ids, text, decoded)

    def event(
        self, logged: SQLExecutionStartJson | SQLAdaptiveExecutionUpdateJson
    ) -> SQLExecutionStart | SQLAdaptiveExecutionUpdate:
        """The event with its plan read (`read`)."""
        plan = self.read(logged.plan_json)
        if type(logged) is SQLExecutionStartJson:
            return SQLExecutionStart(
                logged.execution_id,
                logged.root_execution_id,
                logged.description,
                logged.details,
                logged.physical_plan_description,
                plan,
                logged.time_ms,
                logged.modified_configs,
                logged.job_tags,
            )
        return SQLAdaptiveExecutionUpdate(
            logged.execution_id, logged.physical_plan_description, plan
        )


__all__ = [
    "NO_PLAN_JSON",
    "LoggedPlan",
    "PlanReader",
    "SQLAdaptiveExecutionUpdate",
    "SQLAdaptiveExecutionUpdateJson",
    "SQLExecutionStart",
    "SQLExecutionStartJson",
]
