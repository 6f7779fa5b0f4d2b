"""Redaction applied to what a format shows: every string of a report's view models, or of its
JSON document, passed through one `Redactor` just before rendering (one walk, `analyzer.walk`)."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, cast

from analyzer.redact.policy import REDACTION_NOTE
from analyzer.redact.redactor import Redactor
from analyzer.walk import StringMap, field_names, map_strings

T = TypeVar("T")


def redact_view(view: T, redactor: Redactor) -> T:
    """Return `view` with every string in it (fields of frozen dataclasses, tuples, lists, dict
    keys and values, at any depth) passed through `redactor.text`; other values are kept."""
    return map_strings(view, lambda text, _limit: redactor.text(text), _with_name)


def _with_name(original: Any, record: Any, fn: StringMap) -> Any:
    """Redact an operator's description with its name in front (`21` of `CollectLimit 21` is
    read as plan syntax only with the name), on records with `name` and `detail_str`."""
    detail = getattr(original, "detail_str", None)
    if not (isinstance(detail, str) and detail):
        return record
    if "name" not in field_names(type(original)):
        return record
    name = str(getattr(original, "name", ""))
    whole = fn(f"{name} {detail}", None)
    if whole.startswith(fn(name, None) + " "):
        return dataclasses.replace(record, detail_str=whole[len(fn(name, None)) + 1 :])
    return record


def redact_report(view: T, redactor: Redactor) -> T:
    """Return a report's view redacted (see `redact_view`), its header saying so.

    Every format built from a view with an `ApplicationHeaderView` as `header` uses this, so
    that it carries `REDACTION_NOTE`; a view without one is only walked.
    """
    redacted: Any = redact_view(view, redactor)
    header: Any = getattr(redacted, "header", None)
    if header is not None and hasattr(header, "redaction_str"):
        header = dataclasses.replace(header, redaction_str=REDACTION_NOTE)
        redacted = dataclasses.replace(redacted, header=header)
    return cast(T, redacted)


def mark_document(document: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """Return the JSON document redacted, saying so: `redacted: true` and the token kinds used."""
    redacted = redact_view(document, redactor)
    out: dict[str, Any] = {}
    for key, value in redacted.items():
        out[key] = value
        if key == "format_version":
            out["redacted"] = True
            out["redaction"] = {"token_kinds": list(redactor.pseudonyms.kinds)}
    if "redacted" not in out:
        out["redacted"] = True
        out["redaction"] = {"token_kinds": list(redactor.pseudonyms.kinds)}
    return out
