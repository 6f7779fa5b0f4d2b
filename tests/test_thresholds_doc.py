"""Every threshold the docs name exists, and every `--threshold NAME=VALUE` they show is valid."""

from __future__ import annotations

import re

import pytest
from eventlog_samples import REPO

from analyzer.errors import UsageError
from analyzer.insights.thresholds import Thresholds

DOCS = sorted((REPO / "docs").glob("*.md"))

PLACEHOLDERS = {"NAME", "name"}
"""What the synopses and option tables write for a threshold's name."""
SHOWN_AS_UNKNOWN = {"nope"}
"""Names the docs give as examples of a usage error (`--threshold nope=1`)."""
NOT_THRESHOLDS = {
    "gc_ms": "a column of the JSON report's task summary (json-format.md)",
    "min_ms": "a quantile field of the JSON report (json-format.md)",
    "spill_bytes": "a figure compared by `diff` (diff.md)",
    "read_max_bytes": "a figure compared by `diff` (diff.md)",
    "regression_min_change_ms": "batch's regression rule, a column of its tables (batch.md)",
}
"""Names that look like thresholds (below) but name something else, with where they are from."""

_NAME = r"[A-Za-z][A-Za-z0-9_-]*"
_ASSIGNMENT = re.compile(rf"--threshold[ =]+({_NAME})=([^\s`|]*)")
_BACKTICKED = re.compile(r"`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?:=[^`]*)?`")


def _threshold_like(name: str) -> bool:
    """Whether a snake_case name reads like a threshold: it starts with the first word of one
    (`critical_…`, `skew_…`, `min_…`) and ends with the last word of one (`…_ms`, `…_share`), or
    it holds `_min_` or `_max_` (`data_skew_min_rows`)."""
    names = Thresholds.names()
    words = name.split("_")
    starts = {n.split("_")[0] for n in names}
    ends = {n.split("_")[-1] for n in names}
    return (words[0] in starts and words[-1] in ends) or "_min_" in name or "_max_" in name


def _assignments() -> list[tuple[str, str, str]]:
    """(doc, name, value) of every `--threshold NAME=VALUE` the docs show with a real name."""
    found = []
    for doc in DOCS:
        for match in _ASSIGNMENT.finditer(doc.read_text()):
            name, value = match.groups()
            if name not in PLACEHOLDERS | SHOWN_AS_UNKNOWN:
                found.append((doc.name, name, value))
    return found


def test_the_docs_show_threshold_assignments() -> None:
    # The pattern must keep finding the examples: an empty list would pass every check below.
    assert {name for _, name, _ in _assignments()} >= {"gc_share", "min_query_share"}


@pytest.mark.parametrize(("doc", "name", "value"), _assignments())
def test_each_threshold_assignment_in_the_docs_is_accepted(doc: str, name: str, value: str) -> None:
    try:
        Thresholds().with_overrides([f"{name}={value}"])
    except UsageError as error:
        pytest.fail(f"docs/{doc}: --threshold {name}={value}: {error}")


def test_each_threshold_named_in_the_docs_exists() -> None:
    known = set(Thresholds.names())
    unknown = []
    for doc in DOCS:
        for match in _BACKTICKED.finditer(doc.read_text()):
            name = match.group(1)
            if name in known or name in NOT_THRESHOLDS or not _threshold_like(name):
                continue
            unknown.append(f"docs/{doc.name}: `{name}`")
    assert not unknown, "not a threshold (analyzer/insights/thresholds.py): " + ", ".join(unknown)


def test_the_doc_check_catches_the_names_once_documented() -> None:
    # The names docs once showed and the CLI refused.
    for name in ("critical_lost_ms", "data_skew_min_rows", "task_skew_min_task_ms"):
        assert _threshold_like(name)
        assert name not in Thresholds.names()


def test_every_threshold_is_documented_in_findings() -> None:
    text = (REPO / "docs" / "findings.md").read_text()
    missing = [name for name in Thresholds.names() if f"`{name}`" not in text]
    assert not missing, "thresholds missing from docs/findings.md: " + ", ".join(missing)
