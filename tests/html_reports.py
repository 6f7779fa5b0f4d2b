"""Real event logs for the HTML report tests, and a small parser of the rendered pages."""

from __future__ import annotations

import json
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from eventlog_samples import sample_logs

from analyzer.aggregate.analysis import Analysis
from analyzer.api import analyze
from analyzer.render.html import render_html
from analyzer.render.json_render import render_json

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_eventlogs"
PUBLIC = REPO.parent / "shared" / "eventlogs" / "public"
Q72 = PUBLIC / "nds_q72_dataproc_2_2.zstd"
ESCAPE_LOG = REPO / "tests" / "data" / "escape_eventlog"
NOW_MS = 1_700_000_000_000


def report_logs() -> list[Path]:
    """Every sample log (files and rolling directories), then the public NDS q72 log."""
    logs = sample_logs()
    if Q72.exists():
        logs.append(Q72)
    return logs


@cache
def analysis_of(path: Path) -> Analysis:
    """Analyze a log once per test session."""
    return analyze(str(path))


@cache
def html_of(path: Path) -> str:
    """Render a log's HTML report once per test session, at a fixed clock."""
    return render_html(analysis_of(path), now_ms=NOW_MS)


@cache
def json_of(path: Path) -> dict[str, Any]:
    """Render a log's JSON report once per test session."""
    doc: dict[str, Any] = json.loads(render_json(analysis_of(path)))
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


def parse_page(html: str) -> ParsedPage:
    """Parse a rendered page."""
    page = ParsedPage()
    page.feed(html)
    page.close()
    return page
