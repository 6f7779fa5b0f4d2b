"""`--redact`: no literal, path, host or user from the log survives in any format.

The values to hide are collected here from the raw log with this test's own reading (the events'
host fields, the application's user, paths in plans, call sites and errors, literals next to a
column in plan strings, numbers in Python exception lines), not with the redactor's patterns.
Each must be absent from the redacted text, HTML and JSON reports, and the same reports made
without `--redact` must show values of each kind, or the check would prove nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest
from eventlog_samples import PUBLIC, SAMPLES, version_dirs
from typer.testing import CliRunner

from analyzer import api
from analyzer.aggregate.analysis import Analysis
from analyzer.eventlog.lines import ReadStats, iter_lines
from analyzer.eventlog.source import resolve_log
from analyzer.insights import Finding
from analyzer.redact import REDACTION_NOTE, Pseudonyms, Redactor
from analyzer.redact.environment import MAX_HOST_CHARS, MAX_SCHEME_PARTS
from analyzer.report.options import ReportOptions

FORMATS = ("text", "html", "json", "markdown")

PUBLIC_LOGS = (
    "nds_q72_dataproc_2_2.zstd",
    "db_sim_eventlog",
    "python_udf_eventlog",
    "spark2-eventlog.zstd",
    "gpu_oom_eventlog.zstd",
    "local-1596020211915",
)
SAMPLE_APPS = (
    "sea-cause-failed-udf",
    "sea-partition-pruning",
    "sea-executor-lost",
    "sea-failed-query",
    "sea-cache-subquery-parquet",
    "sea-speculation",
)

VERSION_SAMPLE_APPS = ("sea-failed-query", "sea-python-udf-task-retry")
"""Taken from each older Spark version's samples too: their error messages are that version's."""

COMMON_USERS = {"root", "user", "admin", "spark", "hadoop", "test"}
"""User names that are also words of our own text: looked for only where they stand as a user."""

SPARK_WORDS = {"task", "stage", "tid", "executor", "line", "job", "attempt", "times", "partition"}
"""Words after which a number in an error message is Spark's id, not a value."""


def _sample(app_name: str, directory: Path = SAMPLES) -> Path | None:
    manifest = directory / ".manifest.json"
    if not manifest.is_file():
        return None
    for entry in json.loads(manifest.read_text())["logs"]:
        if entry["app_name"] == app_name:
            path = directory / entry["file"]
            return path if path.exists() else None
    return None


def _logs() -> list[Any]:
    params = []
    for name in PUBLIC_LOGS:
        path = PUBLIC / name
        marks = [] if path.exists() else [pytest.mark.skip(reason=f"{path} not present")]
        params.append(pytest.param(path, id=name, marks=marks))
    for app in SAMPLE_APPS:
        found = _sample(app)
        marks = [] if found else [pytest.mark.skip(reason=f"sample {app} not present")]
        params.append(pytest.param(found or SAMPLES / app, id=app, marks=marks))
    for directory in version_dirs():
        for app in VERSION_SAMPLE_APPS:
            found = _sample(app, directory)
            where = f"{directory.name}/{app}"
            marks = [] if found else [pytest.mark.skip(reason=f"sample {where} not present")]
            params.append(pytest.param(found or directory / app, id=where, marks=marks))
    return params


# --- the values to hide, read from the raw log --------------------------------------------------


@dataclass
class Secrets:
    """What a log says about its users, their machines, files and data."""

    hosts: set[str] = field(default_factory=set)
    users: set[str] = field(default_factory=set)
    paths: set[str] = field(default_factory=set)
    literals: set[str] = field(default_factory=set)
    """Literals with the words around them in the log (`amount#3 > 900.0`, `id 4242`)."""


_PATH = re.compile(r"(?:\b[a-z][a-z0-9+.-]*:/+|(?<![\w./]))(/[\w.@%+~=-]+(?:/[\w.@%+~=-]+)+)")
_HOME = re.compile(r"/(?:home|user|Users)/([\w.-]+)")
_COMPARE = re.compile(r"(\w+#\d+L?) (=|<=>|<|>|<=|>=|!=) ([^()#,\]\[]+?)\)")
_IN = re.compile(r"(\w+#\d+L?) IN \(([^()]*)\)")
_PUSHED = re.compile(
    r"\b(EqualTo|GreaterThan|LessThan|GreaterThanOrEqual|LessThanOrEqual)\((\w+),([^()]+)\)"
)
_RANGE = re.compile(r"Range \((\d+), (\d+), step=")
_EXCEPTION_LINE = re.compile(r"^\s*\w+(?:Error|Exception): (.+)$", re.MULTILINE)
_WORD_NUMBER = re.compile(r"\b([A-Za-z]+) (\d+)\b")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _plan_strings(info: dict[str, Any]) -> Iterator[str]:
    yield info.get("simpleString", "")
    yield from _strings(info.get("metadata", {}))
    for child in info.get("children", []):
        yield from _plan_strings(child)


def _properties(event: dict[str, Any], key: str) -> dict[str, str]:
    value = event.get(key) or {}
    if isinstance(value, list):  # some writers log [[key, value], …]
        return {k: v for k, v in value}
    return dict(value)


@cache
def secrets_of(path: Path) -> Secrets:
    """Collect the hosts, users, paths and literals of a log from its raw events."""
    found = Secrets()
    texts: list[str] = []
    plans: list[str] = []
    for line in iter_lines(resolve_log(str(path)), ReadStats()):
        event = orjson.loads(line.data)
        kind = event.get("Event", "")
        if kind.endswith("ApplicationStart"):
            found.users.add(event.get("User", ""))
            texts.append(event.get("App Name", ""))
        elif kind.endswith("ExecutorAdded"):
            found.hosts.add(event["Executor Info"]["Host"])
        elif kind.endswith("BlockManagerAdded"):
            found.hosts.add(event["Block Manager ID"]["Host"])
        elif kind.endswith(("TaskStart", "TaskEnd")):
            found.hosts.add(event["Task Info"]["Host"])
        elif kind.endswith("EnvironmentUpdate"):
            spark = _properties(event, "Spark Properties")
            system = _properties(event, "System Properties")
            if "spark.driver.host" in spark:
                found.hosts.add(spark["spark.driver.host"])
            for key in ("spark.user", "user.name"):
                for props in (spark, system):
                    if key in props:
                        found.users.add(props[key])
        elif kind.endswith(("SQLExecutionStart", "SQLAdaptiveExecutionUpdate")):
            plans += _plan_strings(event.get("sparkPlanInfo", {}))
            plans.append(event.get("physicalPlanDescription", ""))
            texts.append(event.get("description", ""))
        elif kind.endswith("SQLExecutionEnd"):
            texts.append(event.get("errorMessage") or "")
        elif kind.endswith(("StageSubmitted", "StageCompleted")):
            info = event["Stage Info"]
            texts += [info.get("Stage Name", ""), info.get("Failure Reason") or ""]
        elif kind.endswith("JobEnd"):
            texts += list(_strings(event.get("Job Result", {})))
        elif kind.endswith("ExecutorRemoved"):
            texts.append(event.get("Removed Reason", ""))
    for text in texts + plans:
        found.paths.update(m.group(1).rstrip(".") for m in _PATH.finditer(text))
        found.users.update(_HOME.findall(text))
    for text in plans:
        found.literals.update(f"{a} {op} {lit}" for a, op, lit in _COMPARE.findall(text))
        found.literals.update(f"{a} IN ({items})" for a, items in _IN.findall(text))
        found.literals.update(f"{f}({c},{lit})" for f, c, lit in _PUSHED.findall(text))
        found.literals.update(f"{end}, step=" for _, end in _RANGE.findall(text))
    for text in texts:
        for message in _EXCEPTION_LINE.findall(text):
            found.literals.update(
                f"{word} {n}"
                for word, n in _WORD_NUMBER.findall(message)
                if word.lower() not in SPARK_WORDS
            )
    found.users.discard("")
    found.hosts.discard("")
    # Literals that are keywords rather than values (`isnotnull(x) = true`) are not data.
    found.literals = {v for v in found.literals if not v.endswith((" true", " false", " null"))}
    return found


# --- the reports ---------------------------------------------------------------------------------


@cache
def _analyzed(path: Path) -> tuple[Analysis, tuple[Finding, ...]]:
    analysis = api.analyze(path)
    return analysis, tuple(api.find_issues(analysis))


@cache
def reports(path: Path, redact: bool) -> dict[str, str]:
    analysis, findings = _analyzed(path)
    redactor = api.make_redactor(analysis) if redact else None
    out = {}
    for fmt in FORMATS:
        options = ReportOptions(fmt=fmt, metrics="full", redact=redact, now_ms=0)  # type: ignore[arg-type]
        out[fmt] = api.render_report(analysis, options, list(findings), redactor)
    return out


def _user_contexts(user: str) -> list[str]:
    return [f"user {user} ", f'"user": "{user}"', f"<dd>{user}</dd>", f"/{user}/", f"={user}"]


CUT_PREFIX_CHARS = 4
"""A value's first this many characters or more, then `…`: a value cut by a report."""


def _short_names(hosts: set[str]) -> set[str]:
    """The machines' short names (`worker-3` of `worker-3.c.project.internal`)."""
    return {
        h.split(".")[0]
        for h in hosts
        if not re.fullmatch(r"[\d.]+", h) and len(h.split(".")[0]) >= CUT_PREFIX_CHARS
    }


def _cut_leaks(kind: str, values: set[str], text: str) -> list[str]:
    """Values shown cut (`psarthi-nds-cpu-test-…`): a prefix of one, at a word's start, then `…`."""
    if "…" not in text:
        return []
    leaks = []
    for value in values:
        if len(value) < CUT_PREFIX_CHARS:
            continue
        prefixes = "|".join(
            re.escape(value[:n]) for n in range(len(value), CUT_PREFIX_CHARS - 1, -1)
        )
        found = re.search(rf"(?<![\w.-])(?:{prefixes})…", text)
        if found:
            leaks.append(f"{kind} {value!r} cut as {found.group(0)!r}")
    return leaks


def _leaks(secrets: Secrets, text: str) -> list[str]:
    leaks = [f"host {h!r}" for h in secrets.hosts if h in text]
    leaks += [f"host's short name {h!r}" for h in _short_names(secrets.hosts) if h in text]
    leaks += _cut_leaks("host", secrets.hosts, text)
    leaks += _cut_leaks("path", secrets.paths, text)
    leaks += _cut_leaks("user", {u for u in secrets.users if u.lower() not in COMMON_USERS}, text)
    leaks += [f"path {p!r}" for p in secrets.paths if p in text]
    leaks += [f"literal {v!r}" for v in secrets.literals if v in text]
    for user in secrets.users:
        if user.lower() in COMMON_USERS or len(user) < 3:
            leaks += [f"user {user!r} as {c!r}" for c in _user_contexts(user) if c in text]
        elif re.search(rf"(?<![\w-]){re.escape(user)}(?![\w-])", text):
            leaks.append(f"user {user!r}")
    return leaks


@pytest.mark.parametrize("path", _logs())
def test_no_value_from_the_log_survives_redaction(path: Path) -> None:
    secrets = secrets_of(path)
    plain = reports(path, redact=False)
    redacted = reports(path, redact=True)
    everything = "\n".join(plain.values())
    # Without --redact the reports show values of every kind the log has: the check is real.
    for kind in ("hosts", "users", "paths", "literals"):
        values: set[str] = getattr(secrets, kind)
        if values:
            assert _leaks(Secrets(**{kind: values}), everything), f"no {kind} shown unredacted"
    for fmt, text in redacted.items():
        assert not _leaks(secrets, text), f"{fmt}: {_leaks(secrets, text)[:10]}"


@pytest.mark.parametrize("path", _logs())
def test_redacted_reports_say_so(path: Path) -> None:
    redacted = reports(path, redact=True)
    assert REDACTION_NOTE.split(";")[0][:40] in redacted["text"].replace("\n  ", " ")
    assert 'id="redacted"' in redacted["html"]
    assert REDACTION_NOTE in redacted["markdown"]
    document = json.loads(redacted["json"])
    assert document["redacted"] is True
    assert set(document["redaction"]["token_kinds"]) <= {"host", "path", "user", "num", "str"}
    assert document["redaction"]["token_kinds"]
    plain = reports(path, redact=False)
    assert "redacted" not in json.loads(plain["json"])
    assert 'id="redacted"' not in plain["html"]


def test_the_page_title_and_attributes_carry_no_host_or_path() -> None:
    path = PUBLIC / "nds_q72_dataproc_2_2.zstd"
    if not path.exists():
        pytest.skip(f"{path} not present")
    secrets = secrets_of(path)
    html = reports(path, redact=True)["html"]
    title = re.search(r"<title>(.*?)</title>", html, re.S)
    assert title is not None
    attributes = " ".join(re.findall(r'\s[\w-]+="([^"]*)"', html))
    for text in (title.group(1), attributes):
        assert not _leaks(secrets, text)


def test_our_own_numbers_stay() -> None:
    """Durations, rows, bytes and ids in our own text are not values from the log."""
    path = _sample("sea-cause-failed-udf") or _sample("sea-failed-query")
    if path is None:
        pytest.skip("no failing sample log")
    plain, redacted = reports(path, False)["text"], reports(path, True)["text"]
    ours = re.compile(r"\b\d[\d,.]* (?:ms|s|KiB|MiB|B|rows|tasks?|task attempts)\b")
    assert ours.findall(plain) == ours.findall(redacted)
    assert re.findall(r"SQL execution \d+", plain) == re.findall(r"SQL execution \d+", redacted)


def test_failed_udf_root_cause_is_redacted_but_readable() -> None:
    path = _sample("sea-cause-failed-udf")
    if path is None:
        pytest.skip("sample sea-cause-failed-udf not present")
    for fmt, text in reports(path, redact=True).items():
        assert "4242" not in text, fmt
        assert re.search(r"ValueError: bad customer id num-\d+", text), fmt


# --- the pseudonyms and the patterns --------------------------------------------------------------


def test_pseudonyms_are_stable_and_numbered_by_first_sight() -> None:
    p = Pseudonyms()
    first = [p.token("host", "a"), p.token("path", "/x"), p.token("host", "b")]
    again = [p.token("host", "a"), p.token("path", "/x"), p.token("host", "b")]
    assert first == again == ["host-1", "path-1", "host-2"]
    assert p.token("str", "abc") == "'str-1'" and p.token("num", "7") == "num-1"
    assert p.kinds == ("host", "path", "num", "str")
    q = Pseudonyms()
    assert [q.token("host", v) for v in ("a", "b", "a")] == ["host-1", "host-2", "host-1"]


def test_the_same_value_gets_the_same_token_in_every_string() -> None:
    r = Redactor(hosts=["worker-7.example.internal"], users=["alice"])
    a = r.text("Lost executor 3 on worker-7.example.internal: heartbeat timed out")
    b = r.text("exec 3 @ worker-7.example.internal")
    c = r.text("file:/home/alice/data/x.parquet and /home/alice/data/x.parquet")
    assert "host-1" in a and b == "exec 3 @ host-1"
    assert c == "file:path-1 and path-1"
    assert r.text("alice") == "user-1"
    assert r.text(a) == a  # tokens are not redacted again


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "Filter (isnotnull(d_year#50) AND (d_year#50 = 2000))",
            "Filter (isnotnull(d_year#50) AND (d_year#50 = num-1))",
        ),
        (
            "Filter ((isnotnull(hd_buy_potential#466) AND (hd_buy_potential#466 = 1001-5000)))",
            "Filter ((isnotnull(hd_buy_potential#466) AND (hd_buy_potential#466 = 'str-1')))",
        ),
        ("Filter s#1 IN (CA,NY,TX)", "Filter s#1 IN ('str-1','str-2','str-3')"),
        (
            "PushedFilters: [IsNotNull(amount), GreaterThan(amount,990.0), EqualTo(s,TN)]",
            "PushedFilters: [IsNotNull(amount), GreaterThan(amount,num-1), EqualTo(s,'str-1')]",
        ),
        ("Range (0, 200000, step=1, splits=4)", "Range (num-1, num-2, step=num-3, splits=4)"),
        ("CollectLimit 21", "CollectLimit num-1"),
        (
            "Exchange hashpartitioning(customer_id#2L, 200), ENSURE_REQUIREMENTS, [plan_id=50]",
            "Exchange hashpartitioning(customer_id#2L, 200), ENSURE_REQUIREMENTS, [plan_id=50]",
        ),
        (
            "Project [cast(x#1 as decimal(7,2)) AS y#2, (z#3 * 1.1) AS w#4]",
            "Project [cast(x#1 as decimal(7,2)) AS y#2, (z#3 * num-1) AS w#4]",
        ),
        ("Output [2]: [a#1, b#2]", "Output [2]: [a#1, b#2]"),
        (
            "Project [reflect(java.lang.Thread, sleep, 150, true) AS p#5, concat(a#1, -) AS c#3]",
            "Project [reflect('str-1', 'str-2', num-1, true) AS p#5, concat(a#1, 'str-3') AS c#3]",
        ),
        (
            "Project [CASE WHEN (x#1 > 5) THEN high ELSE low END AS d#4]",
            "Project [CASE WHEN (x#1 > num-1) THEN 'str-1' ELSE 'str-2' END AS d#4]",
        ),
        (
            "InMemoryRelation [a#1], StorageLevel(disk, memory, deserialized, 1 replicas)",
            "InMemoryRelation [a#1], StorageLevel(disk, memory, deserialized, 1 replicas)",
        ),
        (
            "Window [rank(x#1) windowspecdefinition(y#2, z#3 DESC NULLS LAST, "
            "specifiedwindowframe(RowFrame, unboundedpreceding$(), currentrow$())) AS r#4]",
            "Window [rank(x#1) windowspecdefinition(y#2, z#3 DESC NULLS LAST, "
            "specifiedwindowframe(RowFrame, unboundedpreceding$(), currentrow$())) AS r#4]",
        ),
        (
            "HashAggregate(keys=[], functions=[count(1)])",
            "HashAggregate(keys=[], functions=[count(1)])",
        ),
    ],
)
def test_plan_literals(raw: str, expected: str) -> None:
    assert Redactor().text(raw) == expected


@pytest.mark.parametrize(
    "ours",
    [
        "Stage 3: spilled 1.2 GiB in node 5 Sort",
        "Node 7 BroadcastNestedLoopJoin: 1,000 × 2,000 = 2,000,000 row pairs compared",
        "stage 3.0 task 12 partition 4 exec 1",
        "docs/findings.md#failed-query",
        "shuffle write time 8 ms (min 2 ms, med 2 ms, p95 3 ms, max 3 ms)",
        "set spark.sql.shuffle.partitions=400 or spark.sql.adaptive.enabled=true",
        "memory / disk",
        "SQL execution 4 · 6.3 s (77.9 % of the application) · FAILED",
    ],
)
def test_our_own_text_is_left_alone(ours: str) -> None:
    r = Redactor(hosts=["10.0.0.1"], users=["root", "alice"])
    r.free_text("ValueError: bad customer id 4242")
    assert r.text(ours) == ours


@pytest.mark.parametrize(
    ("shown", "expected"),
    [
        ("Lost executor 3 on worker-17.c.proj.inte…", "Lost executor 3 on host-1"),
        ("3 · worker-1…", "3 · host-…"),
        ("1 · 10.0.4.1…", "1 · host-3"),
        ("Broadcas…", "Broadcas…"),
    ],
)
def test_a_host_cut_by_a_report_is_still_replaced(shown: str, expected: str) -> None:
    hosts = ["worker-17.c.proj.internal", "worker-18.c.proj.internal", "10.0.4.17"]
    assert Redactor(hosts=hosts).text(shown) == expected


def test_a_hostile_run_of_colons_before_a_cut_is_read_once() -> None:
    """A log's text of 100,000 `a:` and then a cut: each colon begins a word the cut-host
    search and the URL scheme search could try, and trying each to the run's end took minutes;
    a host is at most `MAX_HOST_CHARS` long and a scheme chain is read at most
    `MAX_SCHEME_PARTS` parts deep, so the run is read a bounded number of times."""
    hostile = "a:" * 100_000 + " b…"
    assert Redactor(hosts=["worker-1.example.internal"]).text(hostile) == hostile
    chained = "a:" * (MAX_SCHEME_PARTS + 1) + "http://host.example/p"
    assert Redactor(hosts=["h"]).text(chained) == "a:" * (MAX_SCHEME_PARTS + 1) + "http://path-1"
    long_cut = "w" * (MAX_HOST_CHARS + 1) + "…"
    assert Redactor(hosts=["w" * (MAX_HOST_CHARS + 5)]).text(long_cut) == long_cut


def test_the_timeline_cuts_its_lane_labels_after_redaction() -> None:
    """The lane label is cut from the redacted host, not the raw one (`1 · host-3`)."""
    path = PUBLIC / "nds_q72_dataproc_2_2.zstd"
    if not path.exists():
        pytest.skip(f"{path} not present")
    labels = re.findall(r'<text class="lane-label"[^>]*>([^<]*)<', reports(path, True)["html"])
    assert labels
    assert all(re.fullmatch(r"\d+ · host-\d+", label) for label in labels), labels


def test_a_bare_number_of_free_text_does_not_redact_our_counts() -> None:
    r = Redactor()
    assert r.free_text("4") == "num-1"
    assert r.text("4") == "4"
    assert r.text("4 tasks") == "4 tasks"


def test_free_text_literals_are_found_where_reports_quote_them() -> None:
    r = Redactor()
    error = (
        "Job aborted due to stage failure: Task 3 in stage 5.0 failed 4 times, most recent "
        "failure: Lost task 3.3 in stage 5.0 (TID 20) (10.0.0.5 executor 1): "
        "java.lang.IllegalStateException: order 77812 of 'ACME Corp' is invalid"
    )
    whole = r.free_text(error)
    assert "Task 3 in stage 5.0 failed 4 times" in whole and "(TID 20)" in whole
    assert "77812" not in whole and "ACME" not in whole and "10.0.0.5" not in whole
    # The report quotes the root cause, a part of the message, and cuts it.
    cause = "java.lang.IllegalStateException: order 77812 of 'ACME Corp' is invalid"
    assert r.text(f"Query 4 failed: {cause}") == "Query 4 failed: " + whole.split("): ")[-1]
    assert "778" not in r.text("Query 4 failed: java.lang.IllegalStateException: order 778…")
    assert r.text("Query 4 failed in task 77812") == "Query 4 failed in task 77812"


def test_batch_redacts_every_report_the_index_and_the_tables(
    runner: CliRunner, tmp_path: Path
) -> None:
    import shutil

    import polars as pl

    from analyzer.cli import app

    chosen = [PUBLIC / "python_udf_eventlog", _sample("sea-executor-lost")]
    logs = [p for p in chosen if p is not None and p.is_file()]
    if not logs:
        pytest.skip("no log to run a batch on")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    for log in logs:
        shutil.copy(log, log_dir / log.name)
    out = tmp_path / "out"
    result = runner.invoke(app, ["batch", str(log_dir), "-o", str(out), "-j", "1", "--redact"])
    assert result.exit_code == 0, result.output
    secrets = Secrets()
    for log in logs:
        found = secrets_of(log)
        for kind in ("hosts", "users", "paths", "literals"):
            getattr(secrets, kind).update(getattr(found, kind))
    written = [out / "index.html", *sorted((out / "apps").rglob("report.*"))]
    assert len(written) == 1 + 3 * len(logs)
    for path in written:
        text = path.read_text()
        assert not _leaks(secrets, text), (path.name, _leaks(secrets, text)[:5])
    for table in sorted((out / "tables").glob("*.parquet")):
        frame = pl.read_parquet(table)
        cells = "\n".join(
            str(v) for name in frame.columns if frame[name].dtype == pl.String for v in frame[name]
        )
        assert not _leaks(secrets, cells), (table.name, _leaks(secrets, cells)[:5])
    for report in (out / "apps").rglob("report.json"):
        assert json.loads(report.read_text())["redacted"] is True


def test_tokens_agree_between_formats_and_runs() -> None:
    path = _sample("sea-partition-pruning") or PUBLIC / "python_udf_eventlog"
    if not path.exists():
        pytest.skip(f"{path} not present")
    analysis, findings = _analyzed(path)
    options = ReportOptions(fmt="json", redact=True, now_ms=0)
    first = api.render_report(analysis, options, list(findings))
    assert api.render_report(analysis, options, list(findings)) == first
    document = json.loads(first)
    text = reports(path, redact=True)["text"]
    # A call site (its path a token) and an executor's host read the same in both formats.
    call_site = next(s["name"] for s in document["stages"] if "path-" in s["name"])
    assert call_site in text
    host = next(
        m["max_at"]["host"]
        for e in document["executions"]
        for n in e["nodes"]
        for m in n["metrics"]
        if m["max_at"]
    )
    assert host.startswith("host-") and f"@ {host}" in text


def test_sql_description_literals_in_a_shortened_quote() -> None:
    r = Redactor()
    sql = "SELECT * FROM t WHERE x IN (101,202,303) AND y = 'abc'"
    assert r.free_text(sql) == "SELECT * FROM t WHERE x IN (num-1,num-2,num-3) AND y = 'str-1'"
    shown = r.text("SQL execution 1 · SELECT * FROM t WHERE x IN (101,202,30…")
    assert shown == "SQL execution 1 · SELECT * FROM t WHERE x IN (num-1,num-2,num-3…"


def test_a_diff_is_redacted_with_one_mapping_for_both_runs() -> None:
    pair = sorted((Path(__file__).parent.parent / "sample_eventlogs" / "pairs" / "skew").glob("*"))
    baseline, candidate = (api.analyze(p) for p in pair)
    result = api.diff(baseline, candidate)
    secrets = Secrets()
    for p in pair:
        found = secrets_of(p)
        for kind in ("hosts", "users", "paths", "literals"):
            getattr(secrets, kind).update(getattr(found, kind))
    assert secrets.hosts
    for fmt in FORMATS:
        options = ReportOptions(fmt=fmt, redact=True, now_ms=0)  # type: ignore[arg-type]
        text = api.render_diff(result, options)
        assert not _leaks(secrets, text), f"{fmt}: {_leaks(secrets, text)[:10]}"
        if fmt == "json":
            assert json.loads(text)["redacted"] is True
        else:
            assert REDACTION_NOTE in text.replace("\n  ", " ") or 'id="redacted"' in text
