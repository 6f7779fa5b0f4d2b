"""Reports of real event logs for the tests (each analyzed once per run), and a page parser."""

from __future__ import annotations

import json
from functools import cache, lru_cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from eventlog_samples import PUBLIC, REPO, sample_id, sample_logs

from analyzer import api
from analyzer.aggregate.analysis import Analysis
from analyzer.report.options import ReportOptions

Q72 = PUBLIC / "nds_q72_dataproc_2_2.zstd"
ESCAPE_LOG = REPO / "tests" / "data" / "escape_eventlog"
NOW_MS = 1_700_000_000_000
"""The injected clock: reports print it as their generation time."""


def report_logs() -> list[Path]:
    """Every sample log, then the public NDS q72 log when it is present."""
    return sample_logs() + ([Q72] if Q72.exists() else [])


def report_log_params() -> list[Any]:
    """`report_logs` as pytest parameters: q72 is always a case, skipped with a reason if absent."""
    params = [pytest.param(p, id=sample_id(p)) for p in sample_logs()]
    absent = pytest.mark.skipif(not Q72.exists(), reason=f"public event log {Q72} not present")
    return [*params, pytest.param(Q72, id=Q72.name, marks=absent)]


@cache
def analysis_of(path: Path) -> Analysis:
    """Analyze a log once per test session."""
    return api.analyze(str(path))


def render(analysis: Analysis, fmt: str, **options: Any) -> str:
    """Render a report with the given `ReportOptions` fields (findings computed by the API)."""
    return api.render_report(analysis, ReportOptions(fmt=fmt, **options))  # type: ignore[arg-type]


def text_report(analysis: Analysis, **options: Any) -> str:
    """Render the text report with the given `ReportOptions` fields."""
    return render(analysis, "text", **options)


def json_report(analysis: Analysis, **options: Any) -> str:
    """Render the JSON report with the given `ReportOptions` fields."""
    return render(analysis, "json", **options)


def html_report(analysis: Analysis, **options: Any) -> str:
    """Render the HTML report at the fixed clock, with the given `ReportOptions` fields."""
    return render(analysis, "html", **{"now_ms": NOW_MS, **options})


@cache
def html_of(path: Path) -> str:
    """Render a log's HTML report once per test session, at a fixed clock."""
    return html_report(analysis_of(path))


@cache
def json_of(path: Path) -> dict[str, Any]:
    """Render a log's JSON report once per test session."""
    doc: dict[str, Any] = json.loads(json_report(analysis_of(path)))
    return doc


class ParsedPage(HTMLParser):
    """Tags, attributes, text and script bodies of a page, collected with the stdlib parser."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self.styles: list[str] = []
        self._open: str | None = None
        self._attrs: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.tags.append((tag, values))
        if tag in ("script", "style"):
            self._open, self._attrs = tag, values

    def handle_endtag(self, tag: str) -> None:
        if tag == self._open:
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open == "script":
            self.scripts.append((self._attrs, data))
        elif self._open == "style":
            self.styles.append(data)
        else:
            self.text.append(data)


@lru_cache(maxsize=64)
def parse_page(html: str) -> ParsedPage:
    """Parse a rendered page, once per session for the pages of `html_of` (every sample's page
    parsed holds about 130 MB); the result is shared: read it, do not change it."""
    page = ParsedPage()
    page.feed(html)
    page.close()
    return page
