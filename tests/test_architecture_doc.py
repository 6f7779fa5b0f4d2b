"""docs/architecture.md names every module of the package, in the row of its package."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "analyzer"
DOC = REPO / "docs" / "architecture.md"


def _package_rows(text: str) -> dict[str, str]:
    """The main table's row of each package (`analyzer/eventlog/` → its text)."""
    rows: dict[str, str] = {}
    for line in text.splitlines():
        found = re.match(r"\| `analyzer/(\w+)/` \|(.*)", line)
        if found:
            rows[found.group(1)] = found.group(2)
    return rows


def _report_table(text: str) -> str:
    """The table of `analyzer/report/`'s modules, one row per module (`html/` in one row)."""
    start = text.index("`analyzer/report/` holds each concept")
    lines = text[start:].splitlines()[1:]
    table = []
    for line in lines:
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    return "\n".join(table)


def test_every_module_is_named_in_the_row_of_its_package() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = _package_rows(text)
    report = _report_table(text)
    missing: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if path.name == "__init__.py":
            continue
        if len(rel.parts) == 1:
            if f"`analyzer/{path.name}`" not in text:
                missing.append(str(rel))
            continue
        where = report if rel.parts[0] == "report" else rows.get(rel.parts[0], "")
        if f"`{path.name}`" not in where:
            missing.append(str(rel))
    assert missing == [], "name these modules in docs/architecture.md, in their package's row"
