"""The JSON report's published schema (docs/json-schema.json) as a test helper."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema
from eventlog_samples import REPO

SCHEMA_PATH = REPO / "docs" / "json-schema.json"
"""The JSON Schema of the JSON report, linked from docs/json-format.md."""


def json_schema() -> dict[str, Any]:
    """Return the published schema, as JSON."""
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


@cache
def schema_validator() -> jsonschema.protocols.Validator:
    """A validator of the published schema, for its draft; raises if the schema is invalid."""
    schema = json_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator


def assert_matches_schema(doc: Any) -> None:
    """Fail with the first differences when `doc` is not a JSON report the schema allows."""
    errors = sorted(schema_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    lines = [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors[:20]]
    assert not errors, "report does not match docs/json-schema.json:\n" + "\n".join(lines)
