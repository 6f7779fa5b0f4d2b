"""Hostile strings in a log reach no terminal and make no huge report (issue items 1 and 4).

The logs are real sample logs with their string fields rewritten: terminal control sequences
in every field a report shows, or one field of several megabytes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from eventlog_samples import SAMPLES

from analyzer import api
from analyzer.report.bounds import DISPLAY_CHARS
from analyzer.report.options import ReportOptions

SOURCE = "local-1795449716774.zstd"
"""sea-cause-failed-udf: a failed query with a Python traceback, jobs, stages, executors."""
MIB = 1 << 20
PAYLOAD = "\x1b]0;owned\x07\x1b[2J\r\x08\u202e\u009b31m\x00\x7f"
"""OSC retitle, erase screen, carriage return, backspace, bidi override, C1 CSI, NUL, DEL."""

FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""What text output may not hold: C0 (but newline), DEL, C1 and bidi controls."""
OWN_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def _lines() -> list[bytes]:
    path = SAMPLES / SOURCE
    if not path.exists():
        pytest.skip(f"sample log {path} not present")
    with path.open("rb") as f:
        reader = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)
        return reader.read().splitlines()


def _poison_plan(node: dict[str, Any]) -> None:
    stack = [node]
    while stack:
        current = stack.pop()
        current["nodeName"] = current.get("nodeName", "") + PAYLOAD
        current["simpleString"] = current.get("simpleString", "") + PAYLOAD
        for metric in current.get("metrics", []):
            metric["name"] = metric["name"] + PAYLOAD
        meta = current.get("metadata") or {}
        current["metadata"] = {k: v + PAYLOAD for k, v in meta.items()}
        stack.extend(current.get("children", []))


def _poison_map(values: dict[str, Any] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    return {k: v + PAYLOAD if isinstance(v, str) else v for k, v in values.items()}


def _poison(event: dict[str, Any]) -> dict[str, Any]:
    """Append `PAYLOAD` to every string of `event` that a report can show."""
    name = event["Event"]
    if name == "SparkListenerApplicationStart":
        for key in ("App Name", "User", "App ID"):
            if key in event:
                event[key] += PAYLOAD
    elif name == "SparkListenerEnvironmentUpdate":
        event["Spark Properties"] = _poison_map(event.get("Spark Properties"))
    elif name.endswith("SQLExecutionStart"):
        for key in ("description", "details", "physicalPlanDescription"):
            event[key] = event.get(key, "") + PAYLOAD
        _poison_plan(event["sparkPlanInfo"])
    elif name.endswith("SQLAdaptiveExecutionUpdate"):
        event["physicalPlanDescription"] = event.get("physicalPlanDescription", "") + PAYLOAD
        _poison_plan(event["sparkPlanInfo"])
    elif name.endswith("SQLExecutionEnd") and event.get("errorMessage"):
        event["errorMessage"] += PAYLOAD
    elif name == "SparkListenerJobStart":
        event["Properties"] = _poison_map(event.get("Properties"))
    elif name in ("SparkListenerStageSubmitted", "SparkListenerStageCompleted"):
        info = event["Stage Info"]
        for key in ("Stage Name", "Details", "Failure Reason"):
            if isinstance(info.get(key), str):
                info[key] += PAYLOAD
    elif name == "SparkListenerTaskEnd":
        event["Task Info"]["Host"] += PAYLOAD
        reason = event.get("Task End Reason", {})
        for key in ("Description", "Message", "Full Stack Trace"):
            if isinstance(reason.get(key), str):
                reason[key] += PAYLOAD
    elif name == "SparkListenerExecutorAdded":
        event["Executor Info"]["Host"] += PAYLOAD
    elif name == "SparkListenerExecutorRemoved":
        event["Removed Reason"] = event.get("Removed Reason", "") + PAYLOAD
    elif name == "SparkListenerJobEnd":
        result = event.get("Job Result", {})
        if isinstance(result.get("Exception"), dict):
            result["Exception"]["Message"] = result["Exception"].get("Message", "") + PAYLOAD
    return event


def _rewrite(target: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Path:
    lines = [orjson.dumps(change(orjson.loads(line))) for line in _lines()]
    target.write_bytes(b"\n".join(lines) + b"\n")
    return target


@pytest.fixture(scope="module")
def escapes_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _rewrite(tmp_path_factory.mktemp("escapes") / "local-escapes", _poison)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "spark-explain"), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
        timeout=600,
        check=False,
    )


def _forbidden_in(text: str) -> list[str]:
    return sorted({repr(m.group(0)) for m in FORBIDDEN.finditer(text)})


def test_terminal_escapes_the_log_really_carries_them(escapes_log: Path) -> None:
    raw = escapes_log.read_text(encoding="utf-8")
    assert "\\u001b]0;owned" in raw  # JSON-escaped in the file, real characters once decoded
    report = api.render_report(api.analyze(escapes_log), ReportOptions(fmt="json"))
    assert "\\u001b]0;owned" in report  # the JSON keeps the value, escaped by JSON itself


def test_terminal_escapes_never_reach_the_text_report(escapes_log: Path) -> None:
    for metrics in ("none", "summary", "full"):
        run = _cli("report", str(escapes_log), "--metrics", metrics)
        assert run.returncode == 0, run.stderr
        assert _forbidden_in(run.stdout) == []
        assert _forbidden_in(run.stderr) == []
        assert "\\x1b]0;owned" in run.stdout  # shown visibly, not acted on


def test_terminal_escapes_with_colour_only_our_own_sequences(escapes_log: Path) -> None:
    analysis = api.analyze(escapes_log)
    text = api.render_report(analysis, ReportOptions(color=True))
    own = OWN_COLOUR.findall(text)
    assert own  # the report's own colours still work
    assert _forbidden_in(OWN_COLOUR.sub("", text)) == []


def test_terminal_escapes_never_reach_the_apps_table(escapes_log: Path) -> None:
    run = _cli("apps", str(escapes_log.parent))
    assert run.returncode == 0, run.stderr
    assert _forbidden_in(run.stdout + run.stderr) == []
    assert "\\x1b]0;owned" in run.stdout


def test_terminal_escapes_never_reach_batch_output(escapes_log: Path, tmp_path: Path) -> None:
    run = _cli("batch", str(escapes_log.parent), "-o", str(tmp_path / "out"), "-j", "1")
    assert run.returncode == 0, run.stderr
    assert _forbidden_in(run.stdout + run.stderr) == []
    texts = list((tmp_path / "out" / "apps").rglob("report.txt"))
    assert texts
    for path in texts:
        assert _forbidden_in(path.read_text(encoding="utf-8")) == []


# -- Pathological sizes --------------------------------------------------------------------------


def _huge_app_name(event: dict[str, Any]) -> dict[str, Any]:
    if event["Event"] == "SparkListenerApplicationStart":
        event["App Name"] = "n" * (16 * MIB)
    return event


def _huge_host(event: dict[str, Any]) -> dict[str, Any]:
    if event["Event"] == "SparkListenerTaskEnd":
        event["Task Info"]["Host"] = "h" * (4 * MIB)
    if event["Event"] == "SparkListenerExecutorAdded":
        event["Executor Info"]["Host"] = "h" * (4 * MIB)
    return event


def _huge_metric_name(event: dict[str, Any]) -> dict[str, Any]:
    if event["Event"].endswith(("SQLExecutionStart", "SQLAdaptiveExecutionUpdate")):
        stack = [event["sparkPlanInfo"]]
        while stack:  # the first metric of every plan
            node = stack.pop()
            if node.get("metrics"):
                node["metrics"][0]["name"] = "m" * (4 * MIB)
                break
            stack.extend(node.get("children", []))
    return event


HUGE = {"app-name": _huge_app_name, "host": _huge_host, "metric-name": _huge_metric_name}


@cache
def _huge_reports(kind: str, directory: Path) -> dict[str, str]:
    log = _rewrite(directory / f"local-huge-{kind}", HUGE[kind])
    analysis = api.analyze(log)
    findings = api.find_issues(analysis)
    return {
        fmt: api.render_report(analysis, ReportOptions(fmt=fmt, now_ms=0), findings)
        for fmt in ("text", "html")
    }


@pytest.mark.parametrize("kind", sorted(HUGE))
def test_pathological_sizes_give_bounded_reports(
    kind: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    reports = _huge_reports(kind, tmp_path_factory.mktemp(kind))
    # Every value is clipped to DISPLAY_CHARS: a report holds a bounded number of copies.
    assert len(reports["text"]) < 100 * DISPLAY_CHARS
    assert len(reports["html"]) < 300 * DISPLAY_CHARS
    assert "more characters; the JSON report has them all" in reports["text"] + reports["html"]


# -- A host name in a finding's title ------------------------------------------------------------

GC_HOST_LOG = SAMPLES / "public" / "application_1472176676028_407508_1.zstd"
"""The public Spark 1.6 log whose stage 1 carried most of its GC on one host, which
memory-pressure names in its title and suggestion."""


def _poisoned_hosts(tmp_path: Path, host_suffix: str) -> Path:
    if not GC_HOST_LOG.exists():
        pytest.skip(f"public log {GC_HOST_LOG} not present")
    with GC_HOST_LOG.open("rb") as f:
        raw = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()
    out = []
    for line in raw.splitlines():
        event = orjson.loads(line)
        if event["Event"] == "SparkListenerTaskEnd":
            event["Task Info"]["Host"] += host_suffix
        elif event["Event"] == "SparkListenerExecutorAdded":
            event["Executor Info"]["Host"] += host_suffix
        out.append(orjson.dumps(event))
    target = tmp_path / "application_1472176676028_407508_1"
    target.write_bytes(b"\n".join(out) + b"\n")
    return target


def test_a_hostile_host_named_by_a_gc_finding_reaches_no_terminal(tmp_path: Path) -> None:
    log = _poisoned_hosts(tmp_path, PAYLOAD)
    [memory] = [f for f in api.find_issues(api.analyze(log)) if f.rule == "memory-pressure"]
    assert "gdoop-worker201.snc1" in memory.title  # the host's own name, with the payload
    run = _cli("report", str(log), "--sections", "summary,findings")
    assert run.returncode == 0, run.stderr
    assert _forbidden_in(run.stdout + run.stderr) == []
    assert "\\x1b]0;owned" in run.stdout


def test_a_huge_host_named_by_a_gc_finding_is_clipped(tmp_path: Path) -> None:
    log = _poisoned_hosts(tmp_path, "h" * (2 * MIB))
    run = _cli("report", str(log), "--sections", "findings")
    assert run.returncode == 0, run.stderr
    assert "gdoop-worker201.snc1" in run.stdout
    assert len(run.stdout) < 100 * DISPLAY_CHARS
