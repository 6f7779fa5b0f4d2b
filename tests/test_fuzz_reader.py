"""Seeded, deterministic fuzzing of the reader and replay with inputs derived from real logs.

Every case starts from a real event log (sample_eventlogs/ and the public set) and breaks it one
way: byte flips and truncations of the on-disk bytes in every codec and in every part of the
multi-file logs; and, on the decompressed lines (written back in a codec chosen by the seed),
glued lines, invalid UTF-8, raw control bytes, numbers out of Java's range, deeply nested plans,
huge strings (a 16 MB app name, a 4 MB metric name, a 4 MB host), NULs and control characters in
every string field of an event, events out of order, timestamps at Java's extremes, settings
that are no numbers (superscript digits, thousands of digits, `inf`) and RDD scopes that are no
JSON object or nest thousands deep.

In-process, `api.analyze` (strict and lenient) must return an analysis or raise an
`AnalyzerError`; nothing else may escape. A subset also runs the CLI in a child process
(`spark-explain report LOG --format json`, and `spark-explain apps DIR` over all of them): exit
status 0 or 1, no traceback, at most one line on stderr.

A failing case is named by its id (kind, source, seed); `case_files` rebuilds it.
"""

from __future__ import annotations

import functools
import io
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec
import orjson
import pytest
from eventlog_samples import PUBLIC, SAMPLES
from hostile_inputs import (
    deep_plan_line,
    gzip_of,
    lz4_of,
    lzf_of,
    run_cli,
    snappy_of,
    zstd_of,
)

import analyzer.batch.report_reader as report_reader
from analyzer import api
from analyzer.batch.fleet import ReportDoc, fleet_rows, parse_report, without_metrics
from analyzer.batch.report_reader import read_for_tables
from analyzer.errors import AnalyzerError, Strictness
from analyzer.eventlog.codecs import DecodeReport, iter_decompressed
from analyzer.eventlog.source import Codec, codec_of

SEED = 20_26_11_23
MIB = 1 << 20

SINGLE_LOGS = [
    *(
        SAMPLES / name
        for name in (
            "app-20261122042339-0000.lz4",
            "app-20261122042434-0000.zstd",
            "local-1795320174558.zstd",
            "local-1795320224872",
            "local-1795320253957.snappy",
            "local-1795320291932.lzf",
            "local-1795320332402.lz4",
            "local-1795320380842.zstd",
            "local-1795320428052",
            "local-1795322404204",
        )
    ),
    *(
        PUBLIC / name
        for name in (
            "python_udf_eventlog",
            "local-1642039451826",
            "aqeshuffle_eventlog.zstd",
            "spark2-eventlog.zstd",
            "truncated_eventlog",
        )
    ),
]
MULTI_PART_LOGS = [
    SAMPLES / "eventlog_v2_local-1795320584980",
    PUBLIC / "eventlog_v2_local-1623876083964",
    PUBLIC / "db_sim_eventlog",
]
TEXT_SOURCES = [
    SAMPLES / "local-1795320224872",
    SAMPLES / "local-1795320428052",
    SAMPLES / "local-1795320253957.snappy",
    SAMPLES / "local-1795320524741.lzf",
    SAMPLES / "local-1795320703822.lz4",
    PUBLIC / "aqeshuffle_eventlog.zstd",
    PUBLIC / "python_udf_eventlog",
]
STREAM_TEXT_SOURCES = [
    SAMPLES / "local-1795813825097.zstd",  # idle stream, Spark 4.3: QueryIdleEvents
    SAMPLES / "spark-3.4" / "local-1795813877301.zstd",  # the same, Spark 3.4: idle progress
    SAMPLES / "local-1795815027641.zstd",  # a foreachBatch failure's py4j exception
]
"""Streaming logs broken the same ways as `TEXT_SOURCES`, each case seeded after theirs."""
CODECS: tuple[Codec, ...] = ("none", "zstd", "lz4", "lzf", "snappy")
EXTENSIONS = {"none": "", "zstd": ".zstd", "lz4": ".lz4", "lzf": ".lzf", "snappy": ".snappy"}


@dataclass(frozen=True)
class Case:
    """One fuzz case: how to break which log, with which seed."""

    kind: str
    source: Path
    seed: int

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.source.name}-{self.seed}"


# --- the real logs, decoded -----------------------------------------------------------------


@functools.cache
def _decoded(path: Path) -> bytes:
    codec = codec_of(path.name, str(path))
    with path.open("rb") as stream:
        return b"".join(iter_decompressed(stream, codec, DecodeReport(str(path))))


def _encode(text: bytes, codec: Codec) -> bytes:
    """Write `text` in one of Spark's framings, in Spark-like pieces (a zstd frame per 100 KiB)."""
    if codec == "none":
        return text
    if codec == "zstd":
        step = 100 << 10
        return b"".join(zstd_of([text[i : i + step]], level=1) for i in range(0, len(text), step))
    if codec == "lz4":
        return lz4_of([text], block_bytes=32 << 10)
    if codec == "snappy":
        return snappy_of([text], block_bytes=32 << 10)
    if codec == "lzf":
        return lzf_of([text])
    return gzip_of([text])


def _lines(path: Path) -> list[bytes]:
    return _decoded(path).rstrip(b"\n").split(b"\n")


# --- line mutations -------------------------------------------------------------------------

_NUMBER = re.compile(rb'":(-?\d+)')
_STRING_START = re.compile(rb'":"')
_CONTROL = "\u0000\u0007\u001b[2J\u001b]0;owned\u0007\r\n\t\u2028\u202e\ufeff"
_HUGE_NUMBERS = [
    b"9223372036854775808",
    b"-9223372036854775809",
    b"1" * 40,
    b"1e400",
    b"-0",
    b"1.5",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"true",
    b"null",
    b'"7"',
]


def _pick_line(rng: random.Random, lines: list[bytes], pattern: re.Pattern[bytes]) -> int:
    candidates = [i for i, line in enumerate(lines) if pattern.search(line)]
    return rng.choice(candidates)


def _glue(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines) - 1)
        lines[i : i + 2] = [lines[i] + lines[i + 1]]
    return lines


def _bad_utf8(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    i = _pick_line(rng, lines, _STRING_START)
    starts = [m.end() for m in _STRING_START.finditer(lines[i])]
    at = rng.choice(starts)
    bad = rng.choice([b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf8\x88\x80\x80"])
    lines[i] = lines[i][:at] + bad + lines[i][at:]
    return lines


def _raw_control(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    i = _pick_line(rng, lines, _STRING_START)
    at = rng.choice([m.end() for m in _STRING_START.finditer(lines[i])])
    lines[i] = lines[i][:at] + rng.choice([b"\x00", b"\x1b[31m", b"\x07", b"\x1f"]) + lines[i][at:]
    return lines


def _huge_number(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    for _ in range(rng.randint(1, 3)):
        i = _pick_line(rng, lines, _NUMBER)
        match = rng.choice(list(_NUMBER.finditer(lines[i])))
        value = rng.choice(_HUGE_NUMBERS)
        lines[i] = lines[i][: match.start(1)] + value + lines[i][match.end(1) :]
    return lines


def _extreme_timestamps(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    keys = (b"Timestamp", b"time", b"Launch Time", b"Finish Time", b"Submission Time")
    value = rng.choice([b"9223372036854775807", b"-9223372036854775808", b"-1", b"0"])
    pattern = re.compile(rb'"(' + b"|".join(keys) + rb')":-?\d+')
    return [pattern.sub(lambda m: b'"' + m.group(1) + b'":' + value, line) for line in lines]


def _deep_plan(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    depth = rng.choice([50, 300, 450, 700, 5000, 200_000])
    at = rng.randrange(1, len(lines))
    return [*lines[:at], deep_plan_line(depth, execution_id=rng.randrange(1000, 2000)), *lines[at:]]


def _event_indexes(lines: list[bytes], event: bytes) -> list[int]:
    return [i for i, line in enumerate(lines) if event in line[:120]]


def _mutate_json(line: bytes, change: Callable[[object], object]) -> bytes:
    return orjson.dumps(change(orjson.loads(line)))


def _huge_string(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    which = rng.choice(["app name", "metric name", "host"])
    if which == "app name":
        big = "n" * (16 * MIB)
        [i] = _event_indexes(lines, b"SparkListenerApplicationStart")[:1]

        def change(event: object) -> object:
            assert isinstance(event, dict)
            event["App Name"] = big
            return event

        lines[i] = _mutate_json(lines[i], change)
    elif which == "metric name":
        big = "m" * (4 * MIB)
        indexes = _event_indexes(lines, b"SQLExecutionStart")
        if not indexes:
            return _huge_string(rng, lines)
        i = rng.choice(indexes)

        def change(event: object) -> object:
            assert isinstance(event, dict)
            metrics = []
            stack = [event["sparkPlanInfo"]]
            while stack:
                node = stack.pop()
                metrics += node.get("metrics", [])
                stack.extend(node.get("children", []))
            if metrics:
                rng.choice(metrics)["name"] = big
            return event

        lines[i] = _mutate_json(lines[i], change)
    else:
        big = "h" * (4 * MIB)
        for i in _event_indexes(lines, b"SparkListenerTaskEnd")[:3]:

            def change(event: object) -> object:
                assert isinstance(event, dict)
                event["Task Info"]["Host"] = big
                return event

            lines[i] = _mutate_json(lines[i], change)
    return lines


def _in_strings(rng: random.Random, lines: list[bytes], text: str) -> list[bytes]:
    """Put `text` at a random place of every string value of one event type."""
    names = sorted({orjson.loads(line)["Event"] for line in lines})
    target = rng.choice(names).encode()

    def poison(value: object) -> object:
        if isinstance(value, str):
            at = rng.randrange(len(value) + 1)
            return value[:at] + text + value[at:]
        if isinstance(value, list):
            return [poison(v) for v in value]
        if isinstance(value, dict):
            return {k: (v if k == "Event" else poison(v)) for k, v in value.items()}
        return value

    return [
        orjson.dumps(poison(orjson.loads(line))) if b'"' + target + b'"' in line[:120] else line
        for line in lines
    ]


def _control_in_strings(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    """Put NULs and terminal control sequences into every string value of one event type."""
    return _in_strings(rng, lines, _CONTROL)


def _reorder(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    """Events out of order: a window shuffled, some lines duplicated, some dropped."""
    start = rng.randrange(1, max(2, len(lines) - 40))
    window = lines[start : start + 40]
    rng.shuffle(window)
    lines[start : start + 40] = window
    for _ in range(5):
        i = rng.randrange(1, len(lines))
        if rng.random() < 0.5:
            lines.insert(i, lines[rng.randrange(1, len(lines))])
        else:
            del lines[i]
    return lines


def _inverted_times(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    """Ends before starts: the end times of the application, SQL executions, jobs and stages
    moved back by up to a month."""
    back = rng.choice([1, 1000, 30 * 24 * 3600 * 1000])
    pattern = re.compile(rb'"(Completion Time|time|Timestamp)":(\d+)')
    ends = (b"ApplicationEnd", b"SQLExecutionEnd", b"JobEnd", b"StageCompleted")

    def earlier(match: re.Match[bytes]) -> bytes:
        return b'"%s":%d' % (match.group(1), int(match.group(2)) - back)

    return [
        pattern.sub(earlier, line) if any(end in line[:120] for end in ends) else line
        for line in lines
    ]


_EVENT_NAMES = [b"SparkListenerTaskEnd", b"SparkListenerJobEnd", b"SparkListenerX", b"x\\u0041"]


def _duplicate_event_key(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    """A second `Event` key, last, on some lines: the last one names the event."""
    out = list(lines)
    for _ in range(rng.randint(1, 10)):
        i = rng.randrange(1, len(out))
        line = out[i].rstrip()
        if line.endswith(b"}"):
            name = rng.choice([*_EVENT_NAMES, orjson.loads(line)["Event"].encode()])
            out[i] = line[:-1] + b',"Event":"' + name + b'"}'
    return out


_SPOOF = "\u202e\u2066\u200f\U000e0041\u3164\u115f\u034f\u2800\u00ad\ufeff"


def _spoof_in_strings(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    """Bidi controls and invisible characters in every string value of one event type."""
    return _in_strings(rng, lines, _SPOOF)


_LAYOUT = '\n  "executions": [\n    {\n    },\n    {"n": 1}\n  ],\n  "log": {}\n}\n'
"""What a batch run's driver takes for a JSON report's structure (`batch.report_reader`), were
it not escaped in the report."""


def _layout_in_strings(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    """A JSON report's key and item lines in every string value of one event type."""
    return _in_strings(rng, lines, _LAYOUT)


_ID_KEY = re.compile(rb'"accumulatorId":(-?[0-9]+)')


def _plans_logged_again(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    """Each SQL execution's start logged again by a new execution, its plan's text changed the
    ways a plan read by its text (`eventlog.plans`) must not be fooled: every id moved (read
    from the text), an accumulator key inside the plan's strings, a space before ids' colons,
    an id past a Java long, the ids of two metrics swapped."""
    starts = _event_indexes(lines, b"SQLExecutionStart")
    out = list(lines)
    next_id = 10_000
    for i in reversed(starts):
        again = [lines[i]]
        for how in rng.sample(["moved", "in-strings", "spaced", "huge", "swapped"], 3):
            event = orjson.loads(lines[i])
            event["executionId"] = event["rootExecutionId"] = next_id
            next_id += 1
            if how == "in-strings":
                plan = event["sparkPlanInfo"]
                plan["simpleString"] = f'{plan.get("simpleString", "")}"accumulatorId":7'
                plan["nodeName"] = '"accumulatorId":8 ' + plan["nodeName"]
            text = orjson.dumps(event)
            if how == "moved":
                text = _ID_KEY.sub(lambda m: b'"accumulatorId":%d' % (int(m[1]) + 500_000), text)
            elif how == "spaced":
                text = text.replace(b'"accumulatorId":', b'"accumulatorId" : ')
            elif how == "huge":
                text = _ID_KEY.sub(b'"accumulatorId":99999999999999999999999', text, count=1)
            elif how == "swapped":
                ids = _ID_KEY.findall(text)
                if len(ids) >= 2:
                    a, b = rng.sample(range(len(ids)), 2)
                    ids[a], ids[b] = ids[b], ids[a]
                    text = _ID_KEY.sub(lambda _, it=iter(ids): b'"accumulatorId":' + next(it), text)
            again.append(text)
        out[i : i + 1] = again
    return out


_NUMBER_LIKE = ["\u00b2", "\u2460", "1" + "0" * 5000, "9" * 400, "inf", "1e308", "-1", ""]
"""Setting values that look like numbers to `str.isdigit` or `float` but are none Spark holds."""
_READ_SETTINGS = [
    "spark.executor.cores",
    "spark.task.cpus",
    "spark.driver.memory",
    "spark.executor.memory",
    "spark.executor.memoryOverhead",
    "spark.memory.offHeap.size",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes",
    "spark.sql.files.maxPartitionBytes",
    "spark.dynamicAllocation.executorIdleTimeout",
    "spark.dynamicAllocation.maxExecutors",
]


def _hostile_values(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    """Values read from text later than the decoder: settings that are no numbers, and RDD
    scopes that are no JSON object or nest deep."""

    def change(event: object) -> object:
        assert isinstance(event, dict)
        name = event["Event"]
        if name == "SparkListenerEnvironmentUpdate":
            props = event["Spark Properties"]
            for key in rng.sample(_READ_SETTINGS, 4):
                props[key] = rng.choice(_NUMBER_LIKE)
            props["spark.master"] = f"local[{rng.choice(_NUMBER_LIKE)}]"
        elif name in ("SparkListenerJobStart", "SparkListenerStageSubmitted"):
            infos = event.get("Stage Infos") or [event.get("Stage Info") or {}]
            for info in infos:
                for rdd in info.get("RDD Info", []):
                    rdd["Scope"] = rng.choice(
                        ['{"name":' + "[" * 5000 + "]" * 5000 + "}", "[1]", "{", '{"name":NaN}']
                    )
        return event

    wanted = (b"EnvironmentUpdate", b"JobStart", b"StageSubmitted")
    return [
        _mutate_json(line, change) if any(w in line[:120] for w in wanted) else line
        for line in lines
    ]


LINE_MUTATIONS: dict[str, Callable[[random.Random, list[bytes]], list[bytes]]] = {
    "glued": _glue,
    "bad-utf8": _bad_utf8,
    "raw-control": _raw_control,
    "huge-number": _huge_number,
    "extreme-timestamps": _extreme_timestamps,
    "deep-plan": _deep_plan,
    "huge-string": _huge_string,
    "control-in-strings": _control_in_strings,
    "reorder": _reorder,
    "inverted-times": _inverted_times,
    "duplicate-event-key": _duplicate_event_key,
    "spoof-in-strings": _spoof_in_strings,
    "layout-in-strings": _layout_in_strings,
    "plans-logged-again": _plans_logged_again,
    "hostile-values": _hostile_values,
}
RENDERED_KINDS = frozenset(
    {
        "inverted-times",
        "duplicate-event-key",
        "spoof-in-strings",
        "layout-in-strings",
        "plans-logged-again",
        "hostile-values",
    }
)
"""Kinds whose logs are also rendered in every format: their failures were in the reports. Their
JSON report is also read back as a batch run's driver reads it (`_tables_read_by_layout`)."""
_NEGATIVE_TIME = re.compile(r"(?<![\w.-])-\d[\d,.]*\s?(?:ms|s|m|h|d|%)(?!\w)")
"""A negative duration or share as the reports word them (`-3.2 s`, `-12.0 %`)."""
_SHOWN_RAW = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\U000e0000-\U000e0fff\u3164\u115f]")


# --- byte mutations -------------------------------------------------------------------------


def _flip(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


# --- the cases ------------------------------------------------------------------------------


def _cases() -> list[Case]:
    cases: list[Case] = []
    seed = SEED
    for path in SINGLE_LOGS:
        for kind in ("flip", "flip", "truncate", "truncate"):
            cases.append(Case(kind, path, seed))
            seed += 1
    for path in MULTI_PART_LOGS:
        for kind in ("part-truncate", "part-truncate", "part-truncate", "part-flip", "part-flip"):
            cases.append(Case(kind, path, seed))
            seed += 1
    for kind in LINE_MUTATIONS:
        for path in TEXT_SOURCES:
            cases.append(Case(kind, path, seed))
            seed += 1
    for kind in LINE_MUTATIONS:
        for path in STREAM_TEXT_SOURCES:
            cases.append(Case(kind, path, seed))
            seed += 1
    return cases


CASES = _cases()


def case_files(case: Case, out_dir: Path) -> Path:
    """Write the broken log of `case` under `out_dir` and return the path to analyze."""
    rng = random.Random(case.seed)
    if not case.source.exists():
        pytest.skip(f"{case.source} not present")
    if case.kind in ("flip", "truncate"):
        mutate = _flip if case.kind == "flip" else _truncate
        out = out_dir / case.source.name
        out.write_bytes(mutate(rng, case.source.read_bytes()))
        return out
    if case.kind.startswith("part-"):
        out = out_dir / case.source.name
        shutil.copytree(case.source, out)
        parts = sorted(p for p in out.iterdir() if p.is_file() and p.stat().st_size > 0)
        part = rng.choice(parts)
        part.chmod(0o644)
        mutate = _flip if case.kind == "part-flip" else _truncate
        part.write_bytes(mutate(rng, part.read_bytes()))
        return out
    codec = rng.choice(CODECS)
    lines = LINE_MUTATIONS[case.kind](rng, _lines(case.source))
    out = out_dir / f"app-{case.seed}{EXTENSIONS[codec]}"
    out.write_bytes(_encode(b"\n".join(lines) + b"\n", codec))
    return out


def _analyze(path: Path, strictness: Strictness, render: bool = False) -> str:
    """Analyze in-process (and with `render`, render every format: no invisible character
    raw, no negative duration); return `ok` or the error slug. Anything else propagates (a bug)."""
    try:
        analysis = api.analyze(str(path), strictness)
    except AnalyzerError as error:
        return error.slug
    if render:
        from analyzer.report.options import FORMATS, ReportOptions

        for fmt in FORMATS:
            out = api.render_report(analysis, ReportOptions(fmt=fmt, now_ms=0))
            assert _SHOWN_RAW.search(out) is None, (path, fmt)
            if fmt in ("text", "markdown"):
                assert _NEGATIVE_TIME.search(out) is None, (path, fmt, _NEGATIVE_TIME.search(out))
            if fmt == "json":
                _tables_read_by_layout(out, path)
    return "ok"


def _tables_read_by_layout(report: str, log: Path) -> None:
    """A batch run's driver reads the JSON report `report` by its layout, exactly as decoding it
    whole: no string of the log, escaped in the report, is taken for its structure."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        path = Path(tmp) / "report.json"
        path.write_text(report, encoding="utf-8")
        whole = parse_report(path.read_bytes())
        fallbacks: list[int] = []

        def counted(data: bytes) -> ReportDoc:
            fallbacks.append(1)
            return parse_report(data)

        patch.setattr(report_reader, "parse_report", counted)
        doc, rows = read_for_tables(path, "key")
    assert fallbacks == [], log
    kept = [without_metrics(ex) for ex in whole.executions]
    assert doc == msgspec.structs.replace(whole, stages=[], executions=kept), log
    assert rows == fleet_rows("key", whole), log


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fuzz_analyze_raises_only_analyzer_errors(case: Case, tmp_path: Path) -> None:
    path = case_files(case, tmp_path)
    start = time.perf_counter()
    strict = _analyze(path, Strictness.STRICT, render=case.kind in RENDERED_KINDS)
    lenient = _analyze(path, Strictness.LENIENT)
    elapsed_s = time.perf_counter() - start
    # Huge strings must be read in linear time: 16 MB is a few tenths of a second of work.
    assert elapsed_s < 30, (case.id, elapsed_s)
    if strict == "ok":
        assert lenient == "ok", case.id
    if case.kind in ("glued", "bad-utf8", "raw-control"):
        assert strict == "malformed-line", (case.id, strict)
        assert lenient == "ok", (case.id, lenient)


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.kind == "plans-logged-again"], ids=lambda c: c.id
)
def test_fuzz_plans_read_by_text_equal_plans_built_each_time(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan taken from a plan seen before (its text but for its ids) gives the report that
    building every plan from its own decoding gives; an id past a Java long is a malformed line."""
    from analyzer.replay.plan_graph import PlanParts
    from analyzer.report.options import ReportOptions

    path = case_files(case, tmp_path)
    options = ReportOptions(fmt="json", now_ms=0)
    huge = b"99999999999999999999999" in _lines_of(path)
    assert _analyze(path, Strictness.STRICT) == ("malformed-line" if huge else "ok"), case.id
    by_text = api.render_report(api.analyze(str(path), Strictness.LENIENT), options)
    monkeypatch.setattr(PlanParts, "_learn", lambda self, *args: None)
    each_built = api.render_report(api.analyze(str(path), Strictness.LENIENT), options)
    assert by_text == each_built, case.id


def _lines_of(path: Path) -> bytes:
    """The decompressed text of a one-file log."""
    from analyzer.eventlog.lines import ReadStats, iter_lines
    from analyzer.eventlog.source import resolve_log

    return b"\n".join(
        line.data
        for line in iter_lines(resolve_log(str(path)), ReadStats(), strictness=Strictness.LENIENT)
    )


CLI_KINDS = {"flip", "truncate", "part-truncate", "glued", "bad-utf8", "huge-number"}
CLI_CASES = [c for c in CASES if c.kind in CLI_KINDS][::10]


@pytest.fixture(scope="module")
def cli_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[Case, Path]]]:
    """The CLI subset's broken logs, side by side in one log directory."""
    out = tmp_path_factory.mktemp("fuzz-cli")
    built = []
    for case in CLI_CASES:
        case_dir = out / "work" / case.id
        case_dir.mkdir(parents=True)
        path = case_files(case, case_dir)
        target = out / "logs" / f"{case.seed}-{path.name}"
        target.parent.mkdir(exist_ok=True)
        shutil.move(path, target)
        built.append((case, target))
    return out / "logs", built


def _assert_clean(run_returncode: int, stderr: str, what: str) -> None:
    assert run_returncode in (0, 1), (what, run_returncode, stderr[-2000:])
    assert "Traceback" not in stderr, (what, stderr[-2000:])
    assert len(stderr.splitlines()) <= 1, (what, stderr[-2000:])


@pytest.mark.slow  # a child process per case
@pytest.mark.parametrize("index", range(len(CLI_CASES)), ids=lambda i: CLI_CASES[i].id)
def test_fuzz_cli_report_is_one_line_or_a_report(
    cli_dir: tuple[Path, list[tuple[Case, Path]]], index: int
) -> None:
    case, path = cli_dir[1][index]
    run = run_cli(["report", str(path), "--format", "json"], timeout_s=120)
    _assert_clean(run.returncode, run.stderr, case.id)
    if run.returncode == 0:
        assert isinstance(orjson.loads(run.stdout), dict)
    else:
        assert run.stderr.startswith("error: ")


@pytest.mark.slow  # a child process listing every broken log
def test_fuzz_cli_apps_lists_every_broken_log(
    cli_dir: tuple[Path, list[tuple[Case, Path]]],
) -> None:
    log_dir, built = cli_dir
    run = run_cli(["apps", str(log_dir), "--json"], timeout_s=300)
    _assert_clean(run.returncode, run.stderr, "apps")
    listed = {Path(info["path"]).name for info in orjson.loads(run.stdout)}
    assert {path.name for _, path in built} <= listed


def test_fuzz_cases_are_deterministic(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for case in [c for c in CASES if c.kind != "huge-string"][::13]:
        first, second = case_files(case, a), case_files(case, b)
        if first.is_file():
            assert first.read_bytes() == second.read_bytes(), case.id


def test_fuzz_encodings_round_trip() -> None:
    text = _decoded(SAMPLES / "local-1795320224872")
    for codec in CODECS:
        data = _encode(text, codec)
        out = b"".join(iter_decompressed(io.BytesIO(data), codec, DecodeReport("mem")))
        assert out == text, codec
