"""The JSON report's contract: docs/json-schema.json, checked against every sample log's report.

The schema lists every key of every object (`additionalProperties: false`), so a key added,
renamed or dropped in `report/json_view.py` fails here until the schema and docs/json-format.md
say so. Byte-for-byte JSON gold is kept for a few small logs only (tests/test_gold.py); every
public log's JSON report is checked against the schema in tests/test_public_logs.py.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from eventlog_samples import REPO, sample_logs
from json_contract import assert_matches_schema, json_schema, schema_validator
from reports import analysis_of, json_of, json_report, report_log_params

FORMAT_DOC = REPO / "docs" / "json-format.md"


def _property_names(node: Any) -> set[str]:
    """Every key any object of the schema declares."""
    names: set[str] = set()
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            names |= set(props)
        for value in node.values():
            names |= _property_names(value)
    elif isinstance(node, list):
        for value in node:
            names |= _property_names(value)
    return names


def _one_sample() -> Path:
    """A small sample log with findings, several stages and one SQL execution."""
    return next(p for p in sample_logs() if p.name.startswith("local-1795449570708"))


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    assert json_schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    schema_validator()


def test_every_key_of_the_schema_is_documented() -> None:
    """docs/json-format.md names every key the schema has, and links the schema."""
    doc = FORMAT_DOC.read_text(encoding="utf-8")
    assert "(json-schema.json)" in doc
    spans = re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", doc, flags=re.S))
    documented = {word for span in spans for word in re.findall(r"[a-z_][a-z0-9_]*", span)}
    assert sorted(_property_names(json_schema()) - documented) == []


@pytest.mark.parametrize("log", report_log_params())
def test_sample_json_report_matches_the_schema(log: Path) -> None:
    assert_matches_schema(json_of(log))


def test_redacted_and_selected_reports_match_the_schema() -> None:
    analysis = analysis_of(_one_sample())
    redacted = json.loads(json_report(analysis, redact=True))
    assert redacted["redacted"] is True
    assert_matches_schema(redacted)
    first = redacted["executions"][0]["execution_id"]
    selected = json.loads(json_report(analysis, executions=(first,)))
    assert selected["selection"]["execution_ids"] == [first]
    assert_matches_schema(selected)
    top = json.loads(json_report(analysis, top=1))
    assert top["selection"]["top"] == 1
    assert_matches_schema(top)


CHANGES: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
    ("an unknown top-level key", lambda d: d.update(extra=1)),
    ("an unknown node key", lambda d: d["executions"][0]["nodes"][0].update(extra=1)),
    ("a missing key", lambda d: d["application"].pop("completed")),
    ("a wrong type", lambda d: d["log"].update(n_lines="3")),
    ("null where a value is always known", lambda d: d["jobs"][0].update(job_id=None)),
    ("an unknown status", lambda d: d["executions"][0].update(status="DONE")),
    ("redacted without redaction", lambda d: d.update(redacted=True)),
]


@pytest.mark.parametrize(("where", "change"), CHANGES, ids=[c[0] for c in CHANGES])
def test_the_schema_refuses(where: str, change: Callable[[dict[str, Any]], object]) -> None:
    doc = copy.deepcopy(json_of(_one_sample()))
    assert schema_validator().is_valid(doc)
    change(doc)
    assert not schema_validator().is_valid(doc), where
