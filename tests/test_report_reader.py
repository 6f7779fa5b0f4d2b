"""`batch.report_reader.read_for_tables`: the fleet tables' rows and the history's fields of a
JSON report, read by its layout a stage attempt and an execution at a time, exactly as decoding
the whole file gives them."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from eventlog_samples import sample_id, sample_logs

import analyzer.batch.report_reader as report_reader
from analyzer import api
from analyzer.batch.fleet import (
    ReportDoc,
    ReportDocError,
    fleet_rows,
    parse_report,
    without_metrics,
)
from analyzer.batch.report_reader import read_for_tables
from analyzer.report.options import ReportOptions

GOLD = Path(__file__).resolve().parent / "gold"
NOW_MS = 1_700_000_000_000


def _for_tables_whole(path: Path) -> tuple[ReportDoc, object]:
    """What `read_for_tables` must give, from the whole file decoded at once."""
    whole = parse_report(path.read_bytes())
    kept = [without_metrics(ex) for ex in whole.executions]
    return msgspec.structs.replace(whole, stages=[], executions=kept), fleet_rows("key", whole)


def _read_counting_fallbacks(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, int]:
    """`read_for_tables(path, "key")` and how many times it fell back to decoding the whole
    file."""
    calls: list[int] = []
    whole = report_reader.parse_report

    def counted(data: bytes) -> object:
        calls.append(1)
        return whole(data)

    monkeypatch.setattr(report_reader, "parse_report", counted)
    return read_for_tables(path, "key"), len(calls)


@pytest.mark.parametrize("path", sorted(GOLD.glob("*.json")), ids=lambda p: p.name)
def test_gold_reports_are_read_by_their_layout(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read, fallbacks = _read_counting_fallbacks(path, monkeypatch)
    assert fallbacks == 0
    assert read == _for_tables_whole(path)


@pytest.mark.slow  # a JSON report of every sample log, and a redacted one
@pytest.mark.parametrize("log", sample_logs(), ids=sample_id)
def test_every_sample_report_reads_as_decoded_whole(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    analysis = api.analyze(log)
    for redact in (False, True):
        path = tmp_path / f"report-{redact}.json"
        api.write_report(analysis, path, ReportOptions(fmt="json", now_ms=NOW_MS, redact=redact))
        read, fallbacks = _read_counting_fallbacks(path, monkeypatch)
        assert fallbacks == 0
        assert read == _for_tables_whole(path)


def _outcome(read: object, path: Path) -> object:
    """What reading `path` gives: the rows and records, or the error's type and message."""
    try:
        return read(path)  # type: ignore[operator]
    except ReportDocError as error:
        return (type(error), str(error))


def test_other_layouts_and_damage_read_as_decoded_whole(tmp_path: Path) -> None:
    gold = max(GOLD.glob("*.json"), key=lambda p: p.stat().st_size)
    text = gold.read_text(encoding="utf-8")
    document = json.loads(text)
    # A description holding what the layout's lines start with, escaped as JSON escapes it.
    document["executions"][0]["description"] = '\n  "stages": [\n    {\n    }'
    variants = {
        "edited.json": json.dumps(document, indent=2),
        "compact.json": json.dumps(json.loads(text)),
        "indent4.json": json.dumps(json.loads(text), indent=4),
        "repeated.json": text.replace('{\n  "', '{\n  "log": {},\n  "', 1),
        "cut.json": text[: len(text) // 2],
        "empty.json": "",
        "trailing.json": text + "\n[]\n",
    }
    for name, variant in variants.items():
        path = tmp_path / name
        path.write_text(variant, encoding="utf-8")
        assert _outcome(lambda p: read_for_tables(p, "key"), path) == _outcome(
            _for_tables_whole, path
        ), name
    edited, _ = read_for_tables(tmp_path / "edited.json", "key")
    assert edited.executions[0].description == document["executions"][0]["description"]


def test_fleet_frames_hold_every_report_s_rows_in_table_order() -> None:
    """The tables gathered an application at a time equal every application's rows in one
    frame, sorted; a table no application has rows for is empty with its schema."""
    from analyzer.batch.fleet import TABLE_NAMES, FleetFrames, fleet_frame, sort_columns

    reports = sorted(GOLD.glob("*.json"))[:4]
    tables = FleetFrames()
    every: dict[str, list[tuple[object, ...]]] = {name: [] for name in TABLE_NAMES}
    for i, path in enumerate(reversed(reports)):
        _, rows = read_for_tables(path, f"app-{i}")
        tables.add(rows)
        for name, table_rows in rows.items():
            every[name].extend(table_rows)
    frames = tables.frames()
    assert set(frames) == set(TABLE_NAMES)
    for name in TABLE_NAMES:
        expected = fleet_frame(name, every[name]).sort(sort_columns(name))
        assert frames[name].equals(expected), name
        assert frames[name].schema == expected.schema
    assert FleetFrames().frames()["stages"].schema == fleet_frame("stages", []).schema
