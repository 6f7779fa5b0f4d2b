"""`--format markdown`: a summary that renders in GitHub and GitLab comments, small and escaped.

The output is read back with a CommonMark parser (markdown-it-py, GFM tables on): no HTML but our
own `<details>`, `<summary>` and `<sub>`, no link, tables whose rows have as many cells as their
header, and nothing from a log that GitHub or GitLab would turn into a mention or a link.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from eventlog_builder import (
    application_end,
    application_start,
    driver_accum_updates,
    log_start,
    plan_node,
    sql_execution_end,
    sql_execution_start,
    sql_metric,
    write_log,
)
from eventlog_samples import PUBLIC, sample_id, sample_logs
from markdown_it import MarkdownIt
from markdown_it.token import Token
from reports import NOW_MS, analysis_of, render
from typer.testing import CliRunner

from analyzer import api
from analyzer.cli import app
from analyzer.render.markdown import (
    MAX_MARKDOWN_CHARS,
    ZWSP,
    cut_to_budget,
    md_cell_code,
    md_code,
    md_text,
    render_markdown_report,
)
from analyzer.report.markdown import build_markdown_view
from analyzer.report.options import ReportOptions

PARSER = MarkdownIt("commonmark").enable("table")
OWN_HTML = re.compile(r"</?(details|summary|sub)>")
LARGE_LOGS = ("nds_q72_dataproc_2_2.zstd", "gpu_oom_eventlog.zstd")

HOSTILE = (
    "| pipe `tick`` <script>alert(1)</script> [x](javascript:alert(1)) ![i](http://e/i.png) "
    "@admin #1 !2 ~label https://evil.example/x www.evil.example a@b.example "
    "**bold** _em_ ~~strike~~ &#64;mention \x1b[31mred\x1b[0m \u202eevil\n# heading\n- item\n"
    "<details><summary>x</summary>"
)


def _walk(tokens: list[Token]) -> list[Token]:
    out = []
    for t in tokens:
        out.append(t)
        out += _walk(t.children or [])
    return out


def check_markdown(text: str, hostile: str = "") -> None:
    """The structural rules every Markdown output keeps (see the module's docstring)."""
    tokens = _walk(PARSER.parse(text))
    for t in tokens:
        if t.type in ("html_inline", "html_block"):
            leftover = OWN_HTML.sub("", t.content).strip()
            assert leftover == "", f"HTML from the output: {t.content!r}"
        assert t.type not in ("link_open", "image"), t
    # Tables: every row has the header's number of cells. Parsers pad or cut rows silently, so
    # the cell separators (pipes without a backslash) are counted in the source.
    header = 0
    for line in text.split("\n"):
        if not line.startswith("|"):
            header = 0
            continue
        separators = len(re.findall(r"(?<!\\)\|", line))
        header = header or separators
        assert separators == header, f"a table row with the wrong number of cells: {line!r}"
    assert any(t.type == "table_open" for t in tokens) or "|---" not in text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text)
    # Nothing GitHub or GitLab would link or notify outside code.
    prose = re.sub(r"(`+).*?\1", "", text)
    prose = re.sub(r"(?ms)^(`{3,})$.*?^\1$", "", prose)
    assert not re.search(r"(?<![\w\\])@\w", prose), "a mention"
    assert not re.search(r"https?://", prose), "a bare link"
    if hostile:
        assert "<script" not in prose.replace("\\<script", "")


@pytest.mark.parametrize("name", LARGE_LOGS)
def test_large_public_logs_stay_under_the_budget(name: str) -> None:
    path = PUBLIC / name
    if not path.exists():
        pytest.skip(f"public event log {path} not present")
    text = render(analysis_of(path), "markdown")
    assert len(text) < MAX_MARKDOWN_CHARS
    check_markdown(text)
    assert text.startswith("### EXPLAIN ANALYZE: ` NDS - Power Run `")
    assert "#### Where the time went" in text and "#### Findings" in text
    assert "#### Hot plan: SQL execution 24" in text


def test_q72_hot_plan_shows_the_path_to_the_hottest_operators() -> None:
    path = PUBLIC / "nds_q72_dataproc_2_2.zstd"
    if not path.exists():
        pytest.skip(f"public event log {path} not present")
    text = render(analysis_of(path), "markdown")
    block = re.search(r"(?ms)^```\n(.*?)^```$", text)
    assert block is not None
    tree = block.group(1).splitlines()
    assert tree[0].startswith("AdaptiveSparkPlan #0")
    assert any("Scan parquet #118" in line and "◀ 1" in line for line in tree)
    assert any(line.lstrip("│ ").startswith("└─ ") for line in tree)


@pytest.mark.parametrize("path", sample_logs(), ids=sample_id)
def test_every_sample_log_gives_valid_markdown(path: Path) -> None:
    text = render(analysis_of(path), "markdown", now_ms=NOW_MS)
    assert len(text) < MAX_MARKDOWN_CHARS
    check_markdown(text)


def test_detail_is_dropped_to_fit_a_smaller_budget() -> None:
    path = PUBLIC / "nds_q72_dataproc_2_2.zstd"
    if not path.exists():
        pytest.skip(f"public event log {path} not present")
    analysis = analysis_of(path)
    view = build_markdown_view(analysis, api.find_issues(analysis), ReportOptions(fmt="markdown"))
    full = render_markdown_report(view)
    for limit in (4000, 2500, 1000):
        text = render_markdown_report(view, limit=limit)
        assert len(text) <= limit < len(full)
        check_markdown(text)
        assert text.count("\n```") % 2 == 0


def test_the_last_cut_closes_what_it_opened() -> None:
    text = "# t\n\n<details><summary>s</summary>\n\n```\n" + "line\n" * 500 + "```\n\n</details>\n"
    cut = cut_to_budget(text, 600)
    assert len(cut) <= 600
    assert cut.count("<details>") == cut.count("</details>")
    assert re.findall(r"(?m)^```$", cut).__len__() % 2 == 0
    assert "cut here" in cut


def _hostile_log(tmp_path: Path, hostile: str = HOSTILE) -> Path:
    """A tiny hand-written log whose every name and description is hostile Markdown."""
    rows = sql_metric("number of output rows", 1)
    scan = plan_node(f"Scan {hostile}", f"FileScan {hostile}", metrics=[rows])
    plan = plan_node(f"Project {hostile}", f"Project [{hostile}]", children=[scan])
    t0 = 1700000000000
    events = [
        log_start(),
        application_start("local-1700000000010", hostile, t0, user=hostile),
        sql_execution_start(0, plan, t0 + 100, description=hostile),
        driver_accum_updates(0, [(1, 42)]),
        sql_execution_end(0, t0 + 300),
        application_end(t0 + 400),
    ]
    return write_log(tmp_path / "hostile_markdown_eventlog", events)


def test_hostile_log_is_escaped_in_the_report_and_the_diff(tmp_path: Path) -> None:
    path = _hostile_log(tmp_path)
    analysis = api.analyze(path)
    report = api.render_report(analysis, ReportOptions(fmt="markdown"))
    check_markdown(report, HOSTILE)
    diff = api.render_diff(api.diff(analysis, api.analyze(path)), ReportOptions(fmt="markdown"))
    check_markdown(diff, HOSTILE)
    # The hostile app name is still readable, in a code span.
    assert "| pipe `tick``" in md_code(HOSTILE)


def test_huge_values_stay_one_short_line(tmp_path: Path) -> None:
    huge = (HOSTILE + "|x") * 20_000
    analysis = api.analyze(_hostile_log(tmp_path, huge))
    report = api.render_report(analysis, ReportOptions(fmt="markdown"))
    assert len(report) < 5_000
    check_markdown(report, HOSTILE)
    diff = api.render_diff(api.diff(analysis, analysis), ReportOptions(fmt="markdown"))
    assert len(diff) < 10_000
    check_markdown(diff, HOSTILE)


def test_the_checks_catch_what_they_look_for() -> None:
    for bad in (
        "| a | b |\n|---|---|\n| 1 | 2 | 3 |\n",
        "hi <img src=x>\n",
        "[x](https://e.example)\n",
        "ping @admin\n",
    ):
        with pytest.raises(AssertionError):
            check_markdown(bad)


def test_escaping_functions() -> None:
    assert md_code("a``b") == "``` a``b ```"
    assert md_cell_code("x|y") == "` x\\|y `"
    plain = md_text(HOSTILE)
    assert "\n" not in plain and "\x1b" not in plain and "\\x1b" in plain
    assert "\\<script\\>" in plain and "\\[x\\]" in plain and "\\|" in plain
    assert "@" + ZWSP + "admin" in plain and "https" + ZWSP + "://" in plain


def test_cli_report_writes_markdown_by_extension(runner: CliRunner, tmp_path: Path) -> None:
    logs = sample_logs()
    if not logs:
        pytest.skip("no sample logs")
    out = tmp_path / "report.md"
    result = runner.invoke(app, ["report", str(logs[0]), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert text.startswith("### EXPLAIN ANALYZE:")
    check_markdown(text)
    assert api.format_for("x.markdown", None) == "markdown"
