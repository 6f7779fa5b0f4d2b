"""The public entry points of the analyzer; the CLI and the batch runner are thin shells."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from analyzer.aggregate.analysis import Analysis, analyze_built
from analyzer.errors import CannotWriteError, EmptyLogError, Strictness, UsageError
from analyzer.eventlog.discover import AppInfo, discover_applications
from analyzer.eventlog.events import read_events
from analyzer.eventlog.source import resolve_log
from analyzer.insights import Finding, Thresholds, detect_all
from analyzer.replay.application import ApplicationBuilder

ReportFormat = Literal["text", "html", "json"]
FORMATS: tuple[str, ...] = ("text", "html", "json")


def list_applications(log_dir: str) -> list[AppInfo]:
    """List the applications whose event logs are in `log_dir`, reading only their heads."""
    return discover_applications(log_dir)


def analyze(
    path: str,
    strictness: Strictness = Strictness.STRICT,
    progress: Callable[[int], None] | None = None,
) -> Analysis:
    """Read, rebuild and aggregate the event log at `path` (a file, directory or URL).

    `progress`, if given, is called now and then with the number of events read so far.
    Raises an `AnalyzerError` subclass for logs that cannot be read.
    """
    source = resolve_log(path)
    reader = read_events(source, strictness)
    builder = ApplicationBuilder()
    for n, event in enumerate(reader, start=1):
        builder.feed(event)
        if progress is not None and n % 50_000 == 0:
            progress(n)
    if reader.decode_stats.n_events == 0:
        raise EmptyLogError(
            "the log holds no Spark events", path=path, hint="check that it is a Spark event log"
        )
    return analyze_built(source, builder.finish(), reader.read_stats, reader.decode_stats)


def format_for(output: str | None, requested: str | None) -> ReportFormat:
    """Pick the report format: the one asked for, else the output file's extension, else text."""
    if requested is not None:
        if requested not in FORMATS:
            raise UsageError(f"unknown format {requested!r}; use one of {', '.join(FORMATS)}")
        return requested  # type: ignore[return-value]
    if output:
        ext = Path(output).suffix.lower().lstrip(".")
        if ext in ("htm", "html"):
            return "html"
        if ext == "json":
            return "json"
    return "text"


def find_issues(analysis: Analysis, thresholds: Thresholds | None = None) -> list[Finding]:
    """Return the findings of an analysis, largest estimated time lost first (docs/findings.md)."""
    return detect_all(analysis, thresholds)


def render_report(analysis: Analysis, fmt: ReportFormat, **options: Any) -> str:
    """Render an analysis in one format.

    Option `thresholds` (a `Thresholds`) tunes the findings; every format accepts it.
    """
    thresholds = options.pop("thresholds", None)
    if fmt == "json":
        from analyzer.render.json_render import render_json

        return render_json(analysis, thresholds)
    if fmt == "html":
        from analyzer.render.html import render_html

        return render_html(analysis, **_with_thresholds(render_html, thresholds, options))
    from analyzer.render.text import render_text

    return render_text(analysis, **_with_thresholds(render_text, thresholds, options))


def _with_thresholds(
    renderer: Callable[..., str], thresholds: Thresholds | None, options: dict[str, Any]
) -> dict[str, Any]:
    """Add `thresholds` to a renderer's options when it takes them and they were given."""
    import inspect

    if thresholds is None or "thresholds" not in inspect.signature(renderer).parameters:
        return options
    return {**options, "thresholds": thresholds}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename: never a half-written file.

    The file gets the permissions a plain `open(path, "w")` would give (0666 less the umask),
    not the owner-only ones of a temporary file: reports are meant to be shared. Raises
    `CannotWriteError` with the path and the operating system's reason when the report cannot
    be written there (a directory, a path under a regular file, no permission, a read-only or
    special file system); the temporary file is removed whatever happens.
    """
    target = Path(path)
    try:
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, "it is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as error:
        raise _cannot_write(target, error) from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise _cannot_write(target, error) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cannot_write(target: Path, error: OSError) -> CannotWriteError:
    if isinstance(error, FileExistsError | NotADirectoryError) and not target.is_dir():
        # mkdir met a regular file where a directory of the path should be.
        reason = "a part of the path is a regular file, not a directory"
    else:
        reason = (error.strerror or str(error)).lower()
    return CannotWriteError(
        f"cannot write the report here: {reason}",
        path=str(target),
        hint="give -o a file path in a directory you can write to",
    )


def write_report(
    analysis: Analysis, output: str | Path, fmt: ReportFormat, **options: object
) -> None:
    """Render an analysis and write it atomically to `output`."""
    write_atomic(output, render_report(analysis, fmt, **options))
