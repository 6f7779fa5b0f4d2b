"""The public entry points of the analyzer; the CLI and the batch runner are thin shells."""

from __future__ import annotations

import errno
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.errors import CannotWriteError, EmptyLogError, Strictness, UsageError

if TYPE_CHECKING:
    from analyzer.aggregate.analysis import Analysis
    from analyzer.eventlog.discover import AppInfo
    from analyzer.insights import Finding, Thresholds
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


def list_applications(log_dir: str) -> list[AppInfo]:
    """List the applications whose event logs are in `log_dir`, reading only their heads."""
    from analyzer.eventlog.discover import discover_applications

    return discover_applications(log_dir)


def analyze(
    path: str | os.PathLike[str],
    strictness: Strictness = Strictness.STRICT,
    progress: Callable[[int], None] | None = None,
) -> Analysis:
    """Read, rebuild and aggregate the event log at `path` (a file, directory or URL).

    `progress`, if given, is called now and then with the number of events read so far.
    Raises an `AnalyzerError` subclass for logs that cannot be read.
    """
    from analyzer.eventlog.source import resolve_log
    from analyzer.replay.parallel import replay_log

    source = resolve_log(os.fspath(path))
    # A large local log is read by worker processes (docs/performance.md), forked before
    # polars is imported below: they stay small, and no polars thread is forked.
    replayed = replay_log(source, strictness, progress)
    if replayed.decode_stats.n_events == 0:
        raise EmptyLogError(
            "the log holds no Spark events",
            path=os.fspath(path),
            hint="check that it is a Spark event log",
        )
    from analyzer.aggregate.analysis import analyze_built

    return analyze_built(source, replayed.built, replayed.read_stats, replayed.decode_stats)


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
    return "text"


def find_issues(analysis: Analysis, thresholds: Thresholds | None = None) -> list[Finding]:
    """Return the findings of an analysis, largest estimated time lost first (docs/findings.md).

    Every report of an analysis shows these same findings: compute them once and pass them to
    `render_report` for each format.
    """
    # Looked up on the module, where it is imported on first use (and tests may wrap it).
    detect: Callable[..., list[Finding]] = sys.modules[__name__].detect_all
    return detect(analysis, thresholds)


def render_report(
    analysis: Analysis,
    options: ReportOptions | None = None,
    findings: Sequence[Finding] | None = None,
) -> str:
    """Render an analysis in the format `options.fmt` (default: the text report).

    `findings` are those of `find_issues(analysis, options.thresholds)`; they are computed here
    when not given. Raises `UsageError` for an execution id the log does not hold.
    """
    from analyzer.report.options import ReportOptions

    options = options if options is not None else ReportOptions()
    if findings is None:
        findings = find_issues(analysis, options.thresholds)
    if options.fmt == "json":
        from analyzer.render.json_render import render_json
        from analyzer.report.json_view import build_json_view

        return render_json(build_json_view(analysis, findings, options))
    if options.fmt == "html":
        import dataclasses

        from analyzer.render.html import render_html
        from analyzer.report.html import build_html_view

        now_ms = options.now_ms if options.now_ms is not None else int(time.time() * 1000)
        view = build_html_view(analysis, findings, options, now_ms)

        def text_of(execution_ids: Sequence[int]) -> str:
            text_options = dataclasses.replace(
                options,
                fmt="text",
                metrics="summary",
                executions=tuple(execution_ids),
                top=None,
                color=False,
            )
            return _render_text(analysis, findings, text_options)

        return render_html(view, text_of)
    return _render_text(analysis, findings, options)


def _render_text(analysis: Analysis, findings: Sequence[Finding], options: ReportOptions) -> str:
    from analyzer.render.text import render_text
    from analyzer.report.text import build_text_view

    view = build_text_view(analysis, findings, options)
    return render_text(view, width=options.width, color=options.color)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


WRITE_HINT = "give -o a file path in a directory you can write to"


def write_atomic(path: str | Path, text: str, hint: str = WRITE_HINT) -> None:
    """Write `text` to `path` through a temporary file and a rename: never a half-written file.

    The file gets the permissions a plain `open(path, "w")` would give (0666 less the umask),
    not the owner-only ones of a temporary file: reports are meant to be shared. Raises
    `CannotWriteError` with the path and the operating system's reason when the report cannot
    be written there (a directory, a path under a regular file, no permission, a read-only or
    special file system, a full disk) and `hint` as what to do; the temporary file is removed
    whatever happens.
    """
    target = Path(path)
    try:
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, "it is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as error:
        raise _cannot_write(target, error, hint) from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise _cannot_write(target, error, hint) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cannot_write(target: Path, error: OSError, hint: str) -> CannotWriteError:
    if isinstance(error, FileExistsError | NotADirectoryError) and not target.is_dir():
        # mkdir met a regular file where a directory of the path should be.
        reason = "a part of the path is a regular file, not a directory"
    else:
        reason = error.strerror or str(error)
    return CannotWriteError(f"cannot write here: {reason}", path=str(target), hint=hint)


def write_report(
    analysis: Analysis,
    output: str | Path,
    options: ReportOptions | None = None,
    findings: Sequence[Finding] | None = None,
) -> None:
    """Render an analysis (see `render_report`) and write it atomically to `output`."""
    write_atomic(output, render_report(analysis, options, findings))
