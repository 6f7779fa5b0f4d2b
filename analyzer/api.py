"""The public entry points of the analyzer; the CLI and the batch runner are thin shells."""

from __future__ import annotations

import dataclasses
import gc
import importlib
import os
import sys
import threading
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.errors import (
    EmptyLogError,
    LogNotFoundError,
    Strictness,
    UsageError,
)
from analyzer.output import WRITE_HINT, check_output_is_not_input, write_atomic

if TYPE_CHECKING:
    from analyzer.aggregate.analysis import Analysis
    from analyzer.compare.result import DiffResult
    from analyzer.eventlog.discover import AppInfo
    from analyzer.eventlog.remote import RemoteOptions
    from analyzer.insights import Finding, Thresholds
    from analyzer.redact import Redactor
    from analyzer.report.options import ReportFormat, ReportOptions

# The heavy layers (polars, pydantic models, jinja templates) are imported by the functions that
# use them, so that `spark-explain --version` and `apps` start at once.


_LAZY_NAMES = {
    "Analysis": "analyzer.aggregate.analysis",
    "FORMATS": "analyzer.report.options",
    "detect_all": "analyzer.insights",
}
"""Names this module offers without importing their (heavy) modules until first use."""


def __getattr__(name: str) -> Any:
    """Import one of `_LAZY_NAMES` on first use, and keep it as a module global."""
    module = _LAZY_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


_quiet_depth = 0
_quiet_lock = threading.Lock()
_collector_was_on = True


@contextmanager
def collector_paused() -> Iterator[None]:
    """Keep the cyclic garbage collector off while the block runs, then restore it.

    A replayed application is hundreds of thousands of long-lived objects (plan nodes, metric
    declarations, stage records), and a report builds as many again; none of them forms
    reference cycles, so reference counting frees them, while each full pass of the collector
    walks them all and frees nothing: such passes were half of the aggregation and rendering
    time of a log of 3,600 executions (docs/performance.md). Whatever cycles the block leaves
    are collected once the collector is back on, so long-lived processes (batch workers,
    library users) free them as usual. Nested and concurrent blocks share one pause.

    Between blocks the collector runs again, and its first passes walk every object made while
    it was off (1.3 s of a report of 20,000 executions): a caller making several steps of one
    report (reading, findings, rendering) holds one block over all of them.
    """
    global _quiet_depth, _collector_was_on
    with _quiet_lock:
        if _quiet_depth == 0:
            _collector_was_on = gc.isenabled()
            gc.disable()
        _quiet_depth += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_depth -= 1
            if _quiet_depth == 0 and _collector_was_on:
                gc.enable()


def list_applications(log_dir: str, remote: RemoteOptions | None = None) -> list[AppInfo]:
    """List the applications whose event logs are in `log_dir`, reading only their heads.

    `remote` says how a URL's storage is reached (docs/user-guide.md, "Remote logs")."""
    from analyzer.eventlog.discover import discover_applications

    return discover_applications(log_dir, remote)


def find_log(log_dir: str, name: str, remote: RemoteOptions | None = None) -> str:
    """Return the path of the log `name` names in `log_dir`: an entry of that name, else the
    one application whose id is `name`.

    Raises `LogNotFoundError` when none matches (or the directory cannot be listed) and
    `UsageError` when several logs hold that application (attempts, or copies of one log).
    """
    if "://" not in log_dir and "/" not in name and name not in ("", ".", ".."):
        entry = Path(log_dir) / name
        if entry.exists():
            return str(entry)
    infos = list_applications(log_dir, remote)
    matches = [i for i in infos if name in (i.app_id, Path(i.path.rstrip("/")).name)]
    if not matches:
        raise LogNotFoundError(
            f"no application {name!r} in this directory",
            path=log_dir,
            hint=f"list its applications with: spark-explain apps {log_dir}",
        )
    if len(matches) > 1:
        shown = ", ".join(
            m.path + (f" (attempt {m.attempt_id})" if m.attempt_id else "") for m in matches[:5]
        )
        more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
        raise UsageError(
            f"{len(matches)} logs in {log_dir} hold application {name!r}: {shown}{more}; "
            "give the path of one"
        )
    return matches[0].path


def analyze(
    path: str | os.PathLike[str],
    strictness: Strictness = Strictness.STRICT,
    progress: Callable[[int], None] | None = None,
    read_workers: int | None = None,
    remote: RemoteOptions | None = None,
) -> Analysis:
    """Read, rebuild and aggregate the event log at `path` (a file, directory or URL).

    `progress`, if given, is called now and then with the number of events read so far.
    `read_workers` is how many processes read a large local log (None: one per core when the
    log is large enough to pay for them; 0: this process alone). `remote` says how a URL's
    storage is reached. Raises an `AnalyzerError` subclass for logs that cannot be read.
    """
    from analyzer.eventlog.source import resolve_log
    from analyzer.replay.parallel import replay_log

    location = os.fspath(path)
    source = resolve_log(location, remote)
    # A large local log is read by worker processes (docs/performance.md), forked before
    # polars is imported (beside them, once they are forked): they stay small, and no polars
    # thread is forked.
    with collector_paused():
        replayed = replay_log(
            source,
            strictness,
            progress,
            n_workers=read_workers,
            while_reading=_import_aggregation,
            seal=_seal_task_column,
        )
        if replayed.decode_stats.n_events == 0:
            raise EmptyLogError(
                "the log holds no Spark events",
                path=location,
                hint="check that it is a Spark event log",
            )
        from analyzer.aggregate.allocator import release_free_memory
        from analyzer.aggregate.analysis import analyze_built

        analysis = analyze_built(source, replayed.built, replayed.read_stats, replayed.decode_stats)
        # The replay's frozen SQL values and per-stage records, needed until the per-node
        # statistics are made, go now; their pages go back before the figures' transients,
        # which polars allocates apart from them (31 MB on a log of 1.9 million slot values).
        del replayed
        release_free_memory()
        return analysis


def _seal_task_column(name: str, values: array[int]) -> object:
    """`aggregate.tables.seal_task_column`: the replay's task columns kept compact as they grow,
    imported (with polars) when the replay first has a block of them."""
    from analyzer.aggregate.tables import seal_task_column

    return seal_task_column(name, values)


def _import_aggregation() -> None:
    """Import what aggregates a replayed log (polars among it: a tenth of a second), while the
    reading workers decode."""
    importlib.import_module("analyzer.aggregate.analysis")


def format_for(output: str | None, requested: str | None) -> ReportFormat:
    """Pick the report format: the one asked for, else the output file's extension, else text."""
    if requested is not None:
        from analyzer.report.options import FORMATS

        for fmt in FORMATS:
            if requested == fmt:
                return fmt
        raise UsageError(f"unknown format {requested!r}; use one of {', '.join(FORMATS)}")
    if output:
        ext = Path(output).suffix.lower().lstrip(".")
        if ext in ("htm", "html"):
            return "html"
        if ext == "json":
            return "json"
        if ext in ("md", "markdown"):
            return "markdown"
    return "text"


def find_issues(analysis: Analysis, thresholds: Thresholds | None = None) -> list[Finding]:
    """Return the findings of an analysis, largest estimated time lost first (docs/findings.md).

    Every report of an analysis shows these same findings: compute them once and pass them to
    `render_report` for each format.
    """
    # Looked up on the module, where it is imported on first use (and tests may wrap it).
    detect: Callable[..., list[Finding]] = sys.modules[__name__].detect_all
    with collector_paused():
        findings = detect(analysis, thresholds)
    from analyzer.aggregate.allocator import release_free_memory

    release_free_memory()  # the rules' transients, before a report lays out the analysis
    return findings


def make_what_if(analysis: Analysis, options: ReportOptions | None = None) -> None:
    """Make the what-if figures the reports of `options` show, before their findings.

    Every format shows the what-if. Made before the findings, its transient (a plan of every
    stage attempt and execution) sits on less: not on the figures the rules keep.
    """
    from analyzer.aggregate.allocator import release_free_memory

    analysis.what_if(options.what_if_slots if options is not None else None)
    release_free_memory()  # the what-if's replay plan, before the rules' transients


def render_report(
    analysis: Analysis,
    options: ReportOptions | None = None,
    findings: Sequence[Finding] | None = None,
    redactor: Redactor | None = None,
) -> str:
    """Render an analysis in the format `options.fmt` (default: the text report).

    `findings` are those of `find_issues(analysis, options.thresholds)`; they are computed here
    when not given. With `options.redact`, values from the log become tokens (docs/redaction.md);
    pass the same `redactor` (from `make_redactor`) to several calls for the same analysis and
    their tokens agree. Raises `UsageError` for an execution id the log does not hold.
    """
    return "".join(report_pieces(analysis, options, findings, redactor))


def report_pieces(
    analysis: Analysis,
    options: ReportOptions | None = None,
    findings: Sequence[Finding] | None = None,
    redactor: Redactor | None = None,
) -> Iterator[str]:
    """Render an analysis (see `render_report`) in pieces whose concatenation is its report:
    the JSON and text reports are made one execution at a time, so a report of tens of
    thousands of executions is written to a terminal or a pipe without being whole in memory.
    """
    with collector_paused():
        out = _render(analysis, options, findings, redactor)
        if isinstance(out, str):
            yield out
            return
        for chunk in out:
            yield bytes(chunk).decode("utf-8")


@dataclass(frozen=True)
class _ReportRun:
    """One report being made: what every step of a format gets."""

    analysis: Analysis
    findings: Sequence[Finding]
    options: ReportOptions
    redactor: Redactor | None
    """The redactor when `options.redact`, else None."""
    bounded_plans: bool = False
    """Draw plans as the HTML page does (`aggregate.plan_bounds`): for the text it embeds."""


@dataclass(frozen=True)
class _ViewFormat:
    """A format made from one view model: built, redacted when asked, bounded, rendered."""

    build: Callable[[_ReportRun], Any]
    """The view model of the report."""
    render: Callable[[_ReportRun, Any], str]
    """The report of the redacted and bounded view."""


@dataclass(frozen=True)
class _StreamedFormat:
    """A format whose report is yielded as UTF-8 bytes while it is made (it redacts itself)."""

    stream: Callable[[_ReportRun], Iterator[bytes | memoryview]]


def _render(
    analysis: Analysis,
    options: ReportOptions | None,
    findings: Sequence[Finding] | None,
    redactor: Redactor | None,
) -> str | Iterator[bytes | memoryview]:
    """`render_report`'s work: build the format's view, redact and bound it, render it. The JSON
    report is streamed: UTF-8 bytes made as they are read (one execution at a time: the
    document is never whole in memory, as objects or text)."""
    from analyzer.aggregate.analysis import figures_made_aside
    from analyzer.report.options import ReportOptions

    options = options if options is not None else ReportOptions()
    if findings is None:
        with figures_made_aside(analysis, _figures_aside(analysis, options)):
            make_what_if(analysis, options)
            findings = find_issues(analysis, options.thresholds)
    if options.prices is not None and any(f.estimated_lost_cost is None for f in findings):
        from analyzer.insights.cost import price_findings

        findings = price_findings(analysis, findings, options.prices)
    if options.redact and redactor is None:
        redactor = make_redactor(analysis)
    run = _ReportRun(analysis, findings, options, redactor if options.redact else None)
    fmt = _FORMATS[options.fmt]
    if isinstance(fmt, _StreamedFormat):
        return fmt.stream(run)
    return _render_view(run, fmt)


ASIDE_MIN_TASKS_PER_STAGE = 8
"""The figures of the task table are made beside the what-if and the rules only for a log with
at least this many tasks per stage attempt. Their work is then mostly polars, which the second
core takes (a giant stage: 11 % less wall time, 12 % at 3.3 GB). With a few tasks per stage
attempt (thousands of short queries or micro-batches) it is mostly Python, which takes turns
with the main thread for Python's lock, and the figures held early sat on the what-if's
transient: 36,000 short executions peaked 95 MB higher."""


def _figures_aside(
    analysis: Analysis, options: ReportOptions
) -> list[Callable[[Analysis], object]]:
    """The figures of the task table a report of `options` asks for, in the order its what-if
    and rules first need them, when they are worth making beside them (`figures_made_aside`,
    `ASIDE_MIN_TASKS_PER_STAGE`); none otherwise."""
    n_attempts = len(analysis.application.stages)
    if analysis.tasks.height < ASIDE_MIN_TASKS_PER_STAGE * max(1, n_attempts):
        return []
    figures: list[Callable[[Analysis], object]] = [
        lambda a: a.stage_walls,
        lambda a: a.stage_stats,
    ]
    quantiles = options.fmt in ("json", "html") or (
        options.fmt == "text" and options.stage_level != "none"
    )
    if quantiles:
        figures.append(lambda a: a.stage_summaries)
    return figures


def _render_view(run: _ReportRun, fmt: _ViewFormat) -> str:
    """Build the format's view, redact it when asked, bound it, render it."""
    from analyzer.report.bounds import clip_view

    view = fmt.build(run)
    if run.redactor is not None:
        # Imported only to redact: its patterns cost start-up time every report would pay.
        from analyzer.redact import redact_report

        view = redact_report(view, run.redactor)
    return fmt.render(run, clip_view(view))


def _build_text(run: _ReportRun) -> Any:
    from analyzer.report.text import build_text_view

    return build_text_view(run.analysis, run.findings, run.options, run.bounded_plans)


def _render_text_view(run: _ReportRun, view: Any) -> str:
    from analyzer.render.text import render_text

    return render_text(view, width=run.options.width, color=run.options.color)


def _build_markdown(run: _ReportRun) -> Any:
    from analyzer.report.markdown import build_markdown_view

    return build_markdown_view(run.analysis, run.findings, run.options)


def _render_markdown(run: _ReportRun, view: Any) -> str:
    from analyzer.render.markdown import render_markdown_report

    return render_markdown_report(view)


def _build_html(run: _ReportRun) -> Any:
    from analyzer.report.html import build_html_view

    now_ms = run.options.now_ms if run.options.now_ms is not None else int(time.time() * 1000)
    return build_html_view(run.analysis, run.findings, run.options, now_ms)


def _render_html(run: _ReportRun, view: Any) -> str:
    """The page, with the text report of the executions it shows embedded."""
    from analyzer.render.html import render_html
    from analyzer.report.selection import select_executions

    selected = select_executions(run.analysis.application, run.options).ids

    def text_of(execution_ids: Sequence[int]) -> str:
        # The page's own selection when it kept every section; else the ones it kept.
        whole = set(execution_ids) == set(selected)
        text_options = dataclasses.replace(
            run.options,
            fmt="text",
            metrics="summary",
            executions=run.options.executions if whole else tuple(execution_ids),
            top=run.options.top if whole else None,
            color=False,
            # The page shows jobs, executors and configuration itself.
            sections=("summary", "time", "findings", "plans", "stages"),
        )
        return _render_view(
            dataclasses.replace(run, options=text_options, bounded_plans=True), _TEXT
        )

    return render_html(view, text_of)


def _stream_text(run: _ReportRun) -> Iterator[bytes | memoryview]:
    """The text report's UTF-8 bytes, one execution at a time (`render_text_chunks`); a
    redacted report is made whole (its redaction walks the whole view)."""
    if run.redactor is not None:
        return iter([_render_view(run, _TEXT).encode("utf-8")])
    from analyzer.render.text import render_text_chunks
    from analyzer.report.bounds import clip_view
    from analyzer.report.text import build_text_parts

    view, executions = build_text_parts(run.analysis, run.findings, run.options, run.bounded_plans)
    chunks = render_text_chunks(
        clip_view(view),
        (clip_view(e) for e in executions),
        width=run.options.width,
        color=run.options.color,
    )
    return (chunk.encode("utf-8") for chunk in chunks)


def _stream_json(run: _ReportRun) -> Iterator[bytes | memoryview]:
    return _json_chunks(run.analysis, run.findings, run.options, run.redactor)


_TEXT = _ViewFormat(build=_build_text, render=_render_text_view)

_FORMATS: dict[str, _ViewFormat | _StreamedFormat] = {
    "text": _StreamedFormat(stream=_stream_text),
    "markdown": _ViewFormat(build=_build_markdown, render=_render_markdown),
    "html": _ViewFormat(build=_build_html, render=_render_html),
    "json": _StreamedFormat(stream=_stream_json),
}
"""Every report format (`report.options.FORMATS`) and how it is made."""


def _json_chunks(
    analysis: Analysis,
    findings: Sequence[Finding],
    options: ReportOptions,
    redactor: Redactor | None,
) -> Iterator[bytes | memoryview]:
    """The JSON report's bytes; redacted and marked so, in one piece, when `redactor` is given
    (the redaction's summary of token kinds comes before the executions)."""
    from analyzer.redact import mark_document
    from analyzer.render.json_render import render_json_bytes, render_json_chunks
    from analyzer.report.json_view import build_json_stream, build_json_view

    if redactor is not None:
        document = mark_document(build_json_view(analysis, findings, options), redactor)
        return iter([render_json_bytes(document)])
    return render_json_chunks(build_json_stream(analysis, findings, options))


def make_redactor(*analyses: Analysis) -> Redactor:
    """Return the redactor of one analysis, or of the analyses one report shows together: one
    mapping of values to tokens, numbered in log order (docs/redaction.md)."""
    from analyzer.redact import redactor_for

    return redactor_for(*analyses)


def write_report(
    analysis: Analysis,
    output: str | Path,
    options: ReportOptions | None = None,
    findings: Sequence[Finding] | None = None,
    redactor: Redactor | None = None,
    hint: str = WRITE_HINT,
) -> None:
    """Render an analysis (see `render_report`) and write it atomically to `output`, piece by
    piece: a report of tens of thousands of executions is never whole in memory.

    Raises `OutputIsInputError` when `output` is the analyzed log or inside it, and
    `CannotWriteError` (with `hint` as what to do) when it cannot be written.
    """
    check_output_is_not_input(output, [analysis.source])
    with collector_paused():
        write_atomic(output, _render(analysis, options, findings, redactor), hint)


def diff(
    baseline: Analysis,
    candidate: Analysis,
    thresholds: Thresholds | None = None,
    baseline_findings: Sequence[Finding] | None = None,
    candidate_findings: Sequence[Finding] | None = None,
) -> DiffResult:
    """Compare two runs: pair their executions and operators, and name what explains the change.

    `baseline` is the earlier (reference) run, `candidate` the one to explain. The findings of
    each are computed here (`find_issues` with `thresholds`) when not given. See docs/diff.md.
    """
    from analyzer.compare.diff import diff_analyses

    if baseline_findings is None:
        baseline_findings = find_issues(baseline, thresholds)
    if candidate_findings is None:
        candidate_findings = find_issues(candidate, thresholds)
    with collector_paused():
        return diff_analyses(baseline, candidate, baseline_findings, candidate_findings)


def render_diff(result: DiffResult, options: ReportOptions | None = None) -> str:
    """Render a comparison in the format `options.fmt`: text (default), html, json or markdown.

    `options.top` keeps the N executions that changed most; `width`, `color`, `now_ms` and
    `redact` (one mapping of tokens over both runs) work as for `render_report`.
    """
    with collector_paused():
        return _render_diff(result, options)


def _render_diff(result: DiffResult, options: ReportOptions | None) -> str:
    """`render_diff`'s work."""
    from analyzer.redact import mark_document
    from analyzer.render.diff import render_diff_html, render_diff_markdown, render_diff_text
    from analyzer.render.json_render import render_json
    from analyzer.report.bounds import clip_view
    from analyzer.report.diff import build_diff_view, redact_diff_view
    from analyzer.report.diff_json import build_diff_document
    from analyzer.report.options import ReportOptions

    options = options if options is not None else ReportOptions()
    redactor = make_redactor(result.baseline, result.candidate) if options.redact else None
    if options.fmt == "json":
        document = build_diff_document(result)
        return render_json(document if redactor is None else mark_document(document, redactor))
    view = build_diff_view(result, options)
    if redactor is not None:
        view = redact_diff_view(view, redactor)
    view = clip_view(view)
    if options.fmt == "html":
        return render_diff_html(view)
    if options.fmt == "markdown":
        return render_diff_markdown(view)
    return render_diff_text(view, width=options.width, color=options.color)


def write_diff(
    result: DiffResult, output: str | Path, options: ReportOptions | None = None
) -> None:
    """Render a comparison (see `render_diff`) and write it atomically to `output`.

    Raises `OutputIsInputError` when `output` is one of the compared logs or inside one.
    """
    check_output_is_not_input(output, [result.baseline.source, result.candidate.source])
    write_atomic(output, render_diff(result, options))
