"""Typed Spark listener events, decoded from JSON lines with msgspec: the union of the events
the analysis uses, their decoders by class name, and the reader that checks and decodes every line.

The event structs live in `task_events` (task starts and ends), `app_events` (the application,
its executors, jobs, stages and SQL executions) and `streaming_events`; this module names them
all, as `analyzer.eventlog.events.X`. Only the events and fields the analysis uses are declared;
msgspec skips the rest of each line without building it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from analyzer.errors import MalformedLineError, NotAnEventLogError, Strictness
from analyzer.eventlog.app_events import (
    MAX_STAGE_TASKS,
    Accumulable,
    ApplicationEnd,
    ApplicationStart,
    BlockManagerAdded,
    BlockManagerId,
    ConnectOperationCanceled,
    DatabricksMetadata,
    DriverAccumUpdates,
    EnvironmentUpdate,
    ExecutorAdded,
    ExecutorInfo,
    ExecutorMetricsUpdate,
    ExecutorRemoved,
    JobEnd,
    JobResult,
    JobStart,
    JvmInfo,
    LogStart,
    PropertyMap,
    RddInfo,
    ResourceProfileAdded,
    SparkPlanInfo,
    SQLAdaptiveSQLMetricUpdates,
    SQLExecutionEnd,
    SqlPlanMetric,
    StageCompleted,
    StageExecutorMetrics,
    StageExecutorMetricsUpdate,
    StageInfo,
    StageSubmitted,
    TaskCount,
    TaskResourceRequest,
)
from analyzer.eventlog.lines import Line, ReadStats, iter_lines
from analyzer.eventlog.plans import (
    LoggedPlan,
    PlanReader,
    SQLAdaptiveExecutionUpdate,
    SQLAdaptiveExecutionUpdateJson,
    SQLExecutionStart,
    SQLExecutionStartJson,
)
from analyzer.eventlog.source import LogSource
from analyzer.eventlog.streaming_events import (
    Rate,
    StateOperatorProgress,
    StreamingQueryIdle,
    StreamingQueryProgress,
    StreamingQueryProgressEvent,
    StreamingQueryStarted,
    StreamingQueryTerminated,
    StreamingSinkProgress,
    StreamingSourceProgress,
)
from analyzer.eventlog.task_events import (
    LONG_MAX,
    LONG_MIN,
    AccumulableUpdate,
    ExecutorMetricsPeaks,
    InputMetrics,
    Long,
    OutputMetrics,
    PushShuffleReadMetrics,
    ShuffleReadMetrics,
    ShuffleWriteMetrics,
    TaskEnd,
    TaskEndReason,
    TaskInfo,
    TaskMetrics,
    TaskStart,
    TaskStartInfo,
)

Event = (
    LogStart
    | DatabricksMetadata
    | ApplicationStart
    | ApplicationEnd
    | EnvironmentUpdate
    | ExecutorAdded
    | ExecutorRemoved
    | BlockManagerAdded
    | ResourceProfileAdded
    | StageExecutorMetrics
    | ExecutorMetricsUpdate
    | JobStart
    | JobEnd
    | StageSubmitted
    | StageCompleted
    | TaskStart
    | TaskEnd
    | SQLExecutionStart
    | SQLAdaptiveExecutionUpdate
    | SQLAdaptiveSQLMetricUpdates
    | DriverAccumUpdates
    | SQLExecutionEnd
    | StreamingQueryStarted
    | StreamingQueryProgressEvent
    | StreamingQueryIdle
    | StreamingQueryTerminated
    | ConnectOperationCanceled
)

EVENT_TYPES: dict[str, type[Any]] = {
    "SparkListenerLogStart": LogStart,
    "DBCEventLoggingListenerMetadata": DatabricksMetadata,
    "SparkListenerApplicationStart": ApplicationStart,
    "SparkListenerApplicationEnd": ApplicationEnd,
    "SparkListenerEnvironmentUpdate": EnvironmentUpdate,
    "SparkListenerExecutorAdded": ExecutorAdded,
    "SparkListenerExecutorRemoved": ExecutorRemoved,
    "SparkListenerBlockManagerAdded": BlockManagerAdded,
    "SparkListenerResourceProfileAdded": ResourceProfileAdded,
    "SparkListenerStageExecutorMetrics": StageExecutorMetrics,
    "SparkListenerExecutorMetricsUpdate": ExecutorMetricsUpdate,
    "SparkListenerJobStart": JobStart,
    "SparkListenerJobEnd": JobEnd,
    "SparkListenerStageSubmitted": StageSubmitted,
    "SparkListenerStageCompleted": StageCompleted,
    "SparkListenerTaskStart": TaskStart,
    "SparkListenerTaskEnd": TaskEnd,
    "SparkListenerSQLExecutionStart": SQLExecutionStartJson,
    "SparkListenerSQLAdaptiveExecutionUpdate": SQLAdaptiveExecutionUpdateJson,
    "SparkListenerSQLAdaptiveSQLMetricUpdates": SQLAdaptiveSQLMetricUpdates,
    "SparkListenerDriverAccumUpdates": DriverAccumUpdates,
    "SparkListenerSQLExecutionEnd": SQLExecutionEnd,
    "StreamingQueryListener$QueryStartedEvent": StreamingQueryStarted,
    "StreamingQueryListener$QueryProgressEvent": StreamingQueryProgressEvent,
    "StreamingQueryListener$QueryIdleEvent": StreamingQueryIdle,
    "StreamingQueryListener$QueryTerminatedEvent": StreamingQueryTerminated,
    "SparkListenerConnectOperationCanceled": ConnectOperationCanceled,
}

_DECODERS: dict[bytes, msgspec.json.Decoder[Any]] = {
    name.encode(): msgspec.json.Decoder(cls) for name, cls in EVENT_TYPES.items()
}
_PLAN_EVENTS = frozenset(
    {b"SparkListenerSQLExecutionStart", b"SparkListenerSQLAdaptiveExecutionUpdate"}
)
"""Events whose plan is read by `PlanReader` (decoded once per distinct plan)."""
_ENVELOPE = msgspec.json.Decoder(dict[str, Any])
_PREFIX = b'{"Event":"'
_KEY = b'"Event'


class _Skipped(msgspec.Struct, gc=False):
    """No fields: decoding into it checks a whole line is valid JSON without building anything."""


_SKIP = msgspec.json.Decoder(_Skipped)

_DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
"""What decoding a hostile line can raise (msgspec.ValidationError is a DecodeError)."""


@dataclass
class DecodeStats:
    """Counts of what the decoder kept and skipped."""

    n_events: int = 0
    unknown_event_types: Counter[str] = field(default_factory=Counter)
    """Event classes the analysis does not use (skipped, as Spark's replay does)."""
    unknown_fields: dict[str, set[str]] = field(default_factory=dict)
    """Top-level fields not declared here, per event type, from the first event of each type."""


def event_name(data: bytes) -> bytes | None:
    """Return the short event class name of a JSON line, or None if the line has no `Event`.

    When `Event` is the first key and the only one, the name is sliced from the raw bytes,
    escapes included (see `parsed_event_name`); other lines are parsed to find it. A line with
    several `Event` keys names the event of the last one, as for every other key: Spark's
    reader (Jackson) and the decoder here both keep a repeated key's last value.
    """
    if data.startswith(_PREFIX):
        end = data.find(b'"', 10)
        # A second `"Event"` key (its opening quote unescaped) needs the parser to say which
        # one is last; `"Event` is looked for rather than `"Event"`, which `bytes.find` finds
        # 3 times slower, and a string merely starting with `Event` is parsed too: rare, and
        # the parser's answer is the same.
        if end > 0 and data.find(_KEY, end) < 0:
            name = data[10:end]
            dot = name.rfind(b".")
            return name[dot + 1 :] if dot >= 0 else name
    return parsed_event_name(data)


def parsed_event_name(data: bytes) -> bytes | None:
    """Return the short event class name of a JSON line by parsing it (escapes resolved:
    `"SparkListener\\u0054askEnd"` names TaskEnd), or None if it has no string `Event`."""
    try:
        obj = _ENVELOPE.decode(data)
    except _DECODE_ERRORS:
        return None
    value = obj.get("Event")
    if not isinstance(value, str):
        return None
    return value.rsplit(".", 1)[-1].encode("utf-8", errors="replace")


def event_decoder(name: bytes) -> msgspec.json.Decoder[Any] | None:
    """The decoder of an event class the analysis uses, by short name (`event_name`); None for
    the others."""
    return _DECODERS.get(name)


def is_json_object(data: bytes) -> bool:
    """Whether `data` is one valid JSON object (checked without building it)."""
    try:
        _SKIP.decode(data)
    except _DECODE_ERRORS:
        return False
    return True


def _why(error: BaseException) -> str:
    """Say in a few words why msgspec could not decode a line."""
    if isinstance(error, RecursionError):
        return "it is nested more deeply than the decoder follows (several hundred levels)"
    if isinstance(error, UnicodeDecodeError):
        return f"it is not valid UTF-8 (byte {error.start})"
    return str(error)


def _field_names(cls: type[Any]) -> set[str]:
    info = msgspec.structs.fields(cls)
    return {f.encode_name for f in info} | {"Event"}


class EventReader:
    """Decode the lines of a log into typed events, tracking what was skipped.

    Every line is checked, also those of events the analysis does not use: a line that is not
    valid UTF-8 or not one JSON object (two events glued by a lost newline, a control character
    in an event name) is malformed, as it is to Spark's replay.
    """

    def __init__(self, source: LogSource, strictness: Strictness = Strictness.STRICT) -> None:
        self.source = source
        self.strictness = strictness
        self.read_stats = ReadStats()
        self.decode_stats = DecodeStats()
        self._seen_types: set[bytes] = set()
        self._skipped_names: dict[bytes, str] = {}
        self._first = True
        self._plans = PlanReader()

    def __iter__(self) -> Iterator[Event]:
        decode = self.decode_line
        for line in iter_lines(self.source, self.read_stats, strictness=self.strictness):
            event = decode(line)
            if event is not None:
                yield event

    def decode_line(self, line: Line) -> Event | None:
        """Decode one line, in log order; None for a line that is skipped (an event class the
        analysis does not use, or a malformed line with LENIENT).

        Raises `NotAnEventLogError` if the first line is not an event, `MalformedLineError`
        for a malformed line with STRICT.
        """
        data = line.data
        if not data.isascii():
            # msgspec checks the UTF-8 of the strings it builds, not of those it skips.
            try:
                data.decode()
            except UnicodeDecodeError as error:
                self._malformed(line, _why(error))
                return None
        name = event_name(data)
        if name is None:
            if self._first:
                raise NotAnEventLogError(
                    "not a Spark event log (the first line is not a JSON event)",
                    path=line.path,
                    line=line.line_no,
                    hint="point at a file written with spark.eventLog.enabled=true",
                )
            try:
                _SKIP.decode(data)
            except _DECODE_ERRORS as error:
                self._malformed(line, _why(error))  # say what is wrong with the JSON
                return None
            self._malformed(line, 'not a JSON object with an "Event" field')
            return None
        self._first = False
        decoder = _DECODERS.get(name)
        if decoder is None and name.find(b"\\") >= 0:
            # An escape in the raw name: only a parser knows which event it names.
            name = parsed_event_name(data) or name
            decoder = _DECODERS.get(name)
        if decoder is None:
            try:
                _SKIP.decode(data)
            except _DECODE_ERRORS as error:
                self._malformed(line, _why(error))
                return None
            # Counted by raw name and decoded once per name: a log has a skipped
            # TaskStart for every task.
            skipped = self._skipped_names.get(name)
            if skipped is None:
                skipped = self._skipped_names[name] = name.decode(errors="replace")
            self.decode_stats.unknown_event_types[skipped] += 1
            return None
        return self._decoded(name, decoder, line)

    def decode_named(self, name: bytes, line: Line) -> Event | None:
        """Decode one line, in log order, whose UTF-8 was checked and whose event class `name`
        (`event_name`) was found elsewhere: an event the analysis uses. As `decode_line` for
        the rest."""
        self._first = False
        return self._decoded(name, _DECODERS[name], line)

    def _decoded(self, name: bytes, decoder: msgspec.json.Decoder[Any], line: Line) -> Event | None:
        """The event of a line of class `name` (`decoder`'s), counted; None when malformed."""
        data = line.data
        try:
            event: Event = decoder.decode(data)
            if name in _PLAN_EVENTS:
                event = self._plans.event(event)  # type: ignore[arg-type]
        except _DECODE_ERRORS as error:
            self._malformed(line, f"cannot decode {name.decode()}: {_why(error)}")
            return None
        if name not in self._seen_types:
            self._note_fields(name, data)
        self.decode_stats.n_events += 1
        return event

    def note_fields_once(self, name: bytes, data: bytes) -> None:
        """Note the undeclared fields of `data`, an event of class `name` decoded elsewhere (in
        log order), if it is the first of its class."""
        if name not in self._seen_types:
            self._note_fields(name, data)

    def _note_fields(self, name: bytes, data: bytes) -> None:
        self._seen_types.add(name)
        try:
            keys = set(_ENVELOPE.decode(data))
        except _DECODE_ERRORS:
            return
        extra = keys - _field_names(EVENT_TYPES[name.decode()])
        if extra:
            self.decode_stats.unknown_fields[name.decode()] = extra

    def _malformed(self, line: Line, why: str) -> None:
        if self.strictness is Strictness.STRICT:
            raise MalformedLineError(
                f"malformed event: {why}",
                path=line.path,
                line=line.line_no,
                hint="fix or remove the line, or pass --lenient to skip malformed lines",
            )
        self.read_stats.note_skipped(line.path, line.line_no)


def read_events(source: LogSource, strictness: Strictness = Strictness.STRICT) -> EventReader:
    """Return an iterable of the typed events of `source`, with read and decode statistics."""
    return EventReader(source, strictness)


__all__ = [
    "EVENT_TYPES",
    "LONG_MAX",
    "LONG_MIN",
    "MAX_STAGE_TASKS",
    "Accumulable",
    "AccumulableUpdate",
    "ApplicationEnd",
    "ApplicationStart",
    "BlockManagerAdded",
    "BlockManagerId",
    "ConnectOperationCanceled",
    "DatabricksMetadata",
    "DecodeStats",
    "DriverAccumUpdates",
    "EnvironmentUpdate",
    "Event",
    "EventReader",
    "ExecutorAdded",
    "ExecutorInfo",
    "ExecutorMetricsPeaks",
    "ExecutorMetricsUpdate",
    "ExecutorRemoved",
    "InputMetrics",
    "JobEnd",
    "JobResult",
    "JobStart",
    "JvmInfo",
    "LogStart",
    "LoggedPlan",
    "Long",
    "OutputMetrics",
    "PropertyMap",
    "PushShuffleReadMetrics",
    "Rate",
    "RddInfo",
    "ResourceProfileAdded",
    "SQLAdaptiveExecutionUpdate",
    "SQLAdaptiveSQLMetricUpdates",
    "SQLExecutionEnd",
    "SQLExecutionStart",
    "ShuffleReadMetrics",
    "ShuffleWriteMetrics",
    "SparkPlanInfo",
    "SqlPlanMetric",
    "StageCompleted",
    "StageExecutorMetrics",
    "StageExecutorMetricsUpdate",
    "StageInfo",
    "StageSubmitted",
    "StateOperatorProgress",
    "StreamingQueryIdle",
    "StreamingQueryProgress",
    "StreamingQueryProgressEvent",
    "StreamingQueryStarted",
    "StreamingQueryTerminated",
    "StreamingSinkProgress",
    "StreamingSourceProgress",
    "TaskCount",
    "TaskEnd",
    "TaskEndReason",
    "TaskInfo",
    "TaskMetrics",
    "TaskResourceRequest",
    "TaskStart",
    "TaskStartInfo",
    "event_decoder",
    "event_name",
    "is_json_object",
    "parsed_event_name",
    "read_events",
]
