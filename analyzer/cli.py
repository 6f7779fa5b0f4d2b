"""The `spark-explain` command line: options in, one API call, errors out as one line."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import typer

from analyzer import __version__
from analyzer.batch.limits import DEFAULT_MAX_MEMORY_MB, DEFAULT_TIMEOUT_S
from analyzer.errors import AnalyzerError, BatchBusyError, Strictness, UsageError

if TYPE_CHECKING:
    from analyzer.insights import Thresholds

# The API (and with it polars, pydantic and jinja) is imported by the commands that use it, so
# that `--version` and `--help` answer at once.

EXIT_OK = 0
EXIT_INPUT_ERROR = 1
EXIT_USAGE = 2
EXIT_BUSY = 75
"""Another batch run holds the output directory: try again later (EX_TEMPFAIL of sysexits.h)."""

app = typer.Typer(
    name="spark-explain",
    help="EXPLAIN ANALYZE for Apache Spark event logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def neutralize(text: str) -> str:
    """`analyzer.render.terminal.neutralize`, imported when an error is printed."""
    from analyzer.render.terminal import neutralize as neutralize_text

    return neutralize_text(text)


def _fail(error: AnalyzerError) -> typer.Exit:
    """Print an input error as one line (neutralized: it may quote the log) and exit 1."""
    typer.echo(f"error: {neutralize(str(error))}", err=True)
    return typer.Exit(EXIT_INPUT_ERROR)


def _strictness(lenient: bool) -> Strictness:
    """`--lenient` as a strictness level."""
    return Strictness.LENIENT if lenient else Strictness.STRICT


def _thresholds(overrides: list[str] | None) -> Thresholds:
    """`--threshold NAME=VALUE` options as thresholds (a bad one is a `UsageError`)."""
    from analyzer.insights import Thresholds

    return Thresholds().with_overrides(overrides or ())


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"spark-explain {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """EXPLAIN ANALYZE for Apache Spark event logs."""


@app.command("apps")
def apps_command(
    log_dir: str = typer.Argument(..., help="A directory of event logs (History Server log dir)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the applications in a log directory.

    Example: spark-explain apps /var/log/spark-events --json
    """
    from analyzer import api

    try:
        infos = api.list_applications(log_dir)
    except AnalyzerError as error:
        raise _fail(error) from None
    if as_json:
        typer.echo(json.dumps([i.model_dump() for i in infos], indent=2))
        return
    from analyzer.render.apps_table import format_apps_table

    sys.stdout.write(format_apps_table(infos))


@app.command("report")
def report_command(
    log: str = typer.Argument(..., help="An event log: a file, a rolling directory, or a URL."),
    output: str | None = typer.Option(
        None, "-o", "--output", help="Write here (atomically) instead of standard output."
    ),
    fmt: str | None = typer.Option(
        None,
        "--format",
        "-f",
        help="text, html or json; by default the output file's extension decides, else text.",
    ),
    execution: list[int] | None = typer.Option(
        None, "--execution", "-e", help="Only these SQL execution ids (repeatable)."
    ),
    top: int | None = typer.Option(None, "--top", help="Only the N slowest SQL executions."),
    metrics: str = typer.Option(
        "summary", "--metrics", help="Metric detail in the text report: none, summary or full."
    ),
    lenient: bool = typer.Option(
        False, "--lenient", help="Skip malformed lines (and count them) instead of stopping."
    ),
    no_color: bool = typer.Option(False, "--no-color", help="Never colour the text report."),
    threshold: list[str] | None = typer.Option(
        None,
        "--threshold",
        help="Tune a finding rule: name=value (repeatable; names in docs/findings.md).",
    ),
) -> None:
    """Analyze one event log and print or write its EXPLAIN ANALYZE report.

    Examples:

      spark-explain report /var/log/spark-events/app-20240101-0001

      spark-explain report eventlog.zstd -o report.html

      spark-explain report eventlog.zstd --format json -o out.json
    """
    from analyzer import api
    from analyzer.report.options import ReportOptions

    try:
        chosen = api.format_for(output, fmt)
        options = ReportOptions(
            fmt=chosen,
            metrics=metrics,  # type: ignore[arg-type]  # validated by ReportOptions
            executions=tuple(execution or ()),
            top=top,
            thresholds=_thresholds(threshold),
            color=chosen == "text" and output is None and not no_color and sys.stdout.isatty(),
        )
        with _progress_on_terminal() as progress:
            analysis = api.analyze(log, _strictness(lenient), progress=progress)
        if output is None:
            sys.stdout.write(api.render_report(analysis, options))
        else:
            api.write_report(analysis, output, options)
    except UsageError as error:
        typer.echo(f"error: {neutralize(str(error))}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    except AnalyzerError as error:
        raise _fail(error) from None
    except MemoryError:
        raise _fail(
            AnalyzerError(
                "ran out of memory analyzing this log",
                path=log,
                hint="run it on a machine with more memory, or report the log as a bug",
            )
        ) from None


@contextlib.contextmanager
def _progress_on_terminal() -> Iterator[Callable[[int], None] | None]:
    """Show a transient count of events read on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("reading the log: {task.completed:,} events"))
    with Progress(
        *columns, TimeElapsedColumn(), console=Console(stderr=True), transient=True
    ) as bar:
        task = bar.add_task("read", total=None)
        yield lambda n_events: bar.update(task, completed=n_events)


@app.command("batch")
def batch_command(
    log_dir: str = typer.Argument(..., help="A directory of event logs (History Server log dir)."),
    output: str = typer.Option(..., "-o", "--output", help="Directory to write the reports into."),
    since: str | None = typer.Option(
        None, "--since", help="Only logs modified within this long, e.g. 24h, 7d, 90m."
    ),
    match: str | None = typer.Option(
        None, "--match", help="Only applications whose id or name matches this regex."
    ),
    include_incomplete: bool = typer.Option(
        False, "--include-incomplete", help="Also analyze in-progress (incomplete) logs."
    ),
    engine: str = typer.Option("local", "--engine", help="local (default) or spark."),
    jobs: int | None = typer.Option(
        None, "--jobs", "-j", help="Parallel workers for the local engine (default: CPU count)."
    ),
    master: str | None = typer.Option(
        None, "--master", help="Spark master URL for --engine spark (default local[*])."
    ),
    max_memory_mb: int = typer.Option(
        DEFAULT_MAX_MEMORY_MB,
        "--max-memory-mb",
        help="Memory one log may use in a worker, MiB; a log above it fails (0: no limit).",
    ),
    timeout_s: int = typer.Option(
        DEFAULT_TIMEOUT_S,
        "--timeout-s",
        help="Time one log may take, seconds; a log above it fails (0: no limit).",
    ),
    lenient: bool = typer.Option(
        False, "--lenient", help="Skip malformed lines (and count them) instead of failing the log."
    ),
    threshold: list[str] | None = typer.Option(
        None,
        "--threshold",
        help="Tune a finding rule: name=value (repeatable; names in docs/findings.md).",
    ),
) -> None:
    """Analyze every application of a log directory: a report per application, an index, tables.

    Examples:

      spark-explain batch /var/log/spark-events -o /srv/spark-reports --since 24h

      spark-explain batch hdfs:///spark-history -o /srv/reports --engine spark --master yarn
    """
    from analyzer.batch.runner import BatchOptions, run_batch
    from analyzer.report.options import ReportOptions

    try:
        options = BatchOptions(
            since=since,
            match=match,
            include_incomplete=include_incomplete,
            engine=engine,
            jobs=jobs,
            master=master,
            max_memory_mb=max_memory_mb,
            timeout_s=timeout_s,
            strictness=_strictness(lenient),
            report=ReportOptions(thresholds=_thresholds(threshold)),
        )
        summary = run_batch(log_dir, output, options)
    except UsageError as error:
        typer.echo(f"error: {neutralize(str(error))}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    except BatchBusyError as error:
        typer.echo(f"error: {neutralize(str(error))}", err=True)
        raise typer.Exit(EXIT_BUSY) from None
    except AnalyzerError as error:
        raise _fail(error) from None
    for line in summary.output_errors:
        typer.echo(f"error: {neutralize(line)}", err=True)
    typer.echo(neutralize(summary.line()))
    if summary.n_failed or summary.output_errors:
        raise typer.Exit(EXIT_INPUT_ERROR)


def main() -> None:
    """Run the command line."""
    app()
