"""The `spark-explain` command line: options in, one API call, errors out as one line."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand

from analyzer import __version__, api
from analyzer.batch.limits import (
    DEFAULT_MAX_MEMORY_MB,
    DEFAULT_REGRESSION_MIN_CHANGE_S,
    DEFAULT_REGRESSION_THRESHOLD,
    DEFAULT_TIMEOUT_S,
)
from analyzer.cli_options import (
    ANONYMOUS_OPTION,
    DIR_OPTION,
    ENDPOINT_URL_OPTION,
    FORMAT_OPTION,
    LENIENT_OPTION,
    NO_COLOR_OPTION,
    OUTPUT_OPTION,
    PRICE_FILE_OPTION,
    PRICE_OPTION,
    PROFILE_OPTION,
    REDACT_OPTION,
    REMOTE_CONFIG_OPTION,
    REMOTE_TIMEOUT_OPTION,
    STORAGE_OPTION,
    THRESHOLD_OPTION,
    WIDTH_OPTION,
    prices_of,
    remote_options_of,
    strictness_of,
    thresholds_of,
)
from analyzer.errors import AnalyzerError, BatchBusyError, UsageError
from analyzer.output import check_output_against_logs
from analyzer.render.terminal import neutralize

if TYPE_CHECKING:
    from analyzer.aggregate.analysis import Analysis
    from analyzer.eventlog.remote import RemoteOptions
    from analyzer.report.options import ReportOptions

# `analyzer.api` imports the heavy layers (polars, pydantic, jinja) in the functions that use
# them, so that `--version` and `--help` answer at once.

EXIT_OK = 0
EXIT_INPUT_ERROR = 1
EXIT_USAGE = 2
EXIT_BUSY = 75
"""Another batch run holds the output directory: try again later (EX_TEMPFAIL of sysexits.h)."""


class _Command(TyperCommand):
    """A command whose usage line names its arguments as `LOG`, not `{log}`, and whose option
    values click cannot convert (`--top abc`) are one `usage` line, as are those it checks."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:  # a click Context
        """Return the usage line's pieces, required arguments without braces."""
        return [
            piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
            for piece in super().collect_usage_pieces(ctx)
        ]

    def make_context(
        self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any
    ) -> Any:  # a click Context
        """Parse the command line; a value of the wrong type exits 2 with one line, not click's
        usage block (a missing argument or an unknown option keeps click's message)."""
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except typer.BadParameter as error:
            if type(error) is not typer.BadParameter:  # a missing argument: click's message
                raise
            raise _fail(_bad_value(error, info_name), EXIT_USAGE) from None


def _bad_value(error: typer.BadParameter, command: str | None) -> UsageError:
    """The `UsageError` of a value click refused to convert (`--top abc`)."""
    opts = getattr(error.param, "opts", None)
    name = " / ".join(opts) if opts else (error.param_hint or "an argument")
    reason = error.message[:1].lower() + error.message[1:]
    return UsageError(
        f"bad value for {name}: {reason}",
        hint=f"see spark-explain {command} --help" if command else "see spark-explain --help",
    )


app = typer.Typer(
    name="spark-explain",
    help="EXPLAIN ANALYZE for Apache Spark event logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: on/off options read as flags (`--lenient`), not as `<bool>` values.
    rich_markup_mode=None,
)


def _fail(error: AnalyzerError, exit_code: int = EXIT_INPUT_ERROR) -> typer.Exit:
    """Print an error as one line (neutralized: it may quote the log) and exit with `exit_code`
    (1: an input error)."""
    typer.echo(f"error: {neutralize(str(error))}", err=True)
    return typer.Exit(exit_code)


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


@app.command("apps", cls=_Command)
def apps_command(
    log_dir: str = typer.Argument(
        ..., metavar="LOG_DIR", help="A directory of event logs (History Server log dir)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    remote_timeout: float | None = REMOTE_TIMEOUT_OPTION,
    endpoint_url: str | None = ENDPOINT_URL_OPTION,
    profile: str | None = PROFILE_OPTION,
    anonymous: bool = ANONYMOUS_OPTION,
    storage_option: list[str] | None = STORAGE_OPTION,
    remote_config: str | None = REMOTE_CONFIG_OPTION,
) -> None:
    """List the applications in a log directory: id, name, state, size and path of each log.

    Examples:

    \b
      spark-explain apps /var/log/spark-events --json
      spark-explain apps s3://bucket/spark-events --endpoint-url http://127.0.0.1:9000
    """
    with _errors_as_lines("ran out of memory listing this directory", path=log_dir):
        remote = remote_options_of(
            remote_timeout, endpoint_url, profile, anonymous, storage_option, remote_config
        )
        infos = api.list_applications(log_dir, remote)
    if as_json:
        typer.echo(json.dumps([i.model_dump() for i in infos], indent=2))
        return
    from analyzer.render.apps_table import format_apps_table

    sys.stdout.write(format_apps_table(infos))


@contextlib.contextmanager
def _errors_as_lines(out_of_memory: str, path: str | None = None) -> Iterator[None]:
    """Turn a usage error into exit 2, an input error or running out of memory into exit 1,
    each as one line on standard error."""
    try:
        yield
    except UsageError as error:
        raise _fail(error, EXIT_USAGE) from None
    except AnalyzerError as error:
        raise _fail(error) from None
    except MemoryError:
        raise _fail(
            AnalyzerError(
                out_of_memory,
                path=path,
                hint="run it on a machine with more memory, or report the log as a bug",
            )
        ) from None


def _output_options(
    output: str | None, fmt: str | None, width: int | None, no_color: bool, **more: Any
) -> ReportOptions:
    """The `ReportOptions` of a command's output flags (`more`: its own options)."""
    from analyzer.report.options import ReportOptions

    chosen = api.format_for(output, fmt)
    to_terminal = output is None and sys.stdout.isatty()
    return ReportOptions(
        fmt=chosen,
        color=chosen == "text" and to_terminal and not no_color,
        width=width if width is not None else _terminal_width(to_terminal),
        **more,
    )


def _logs_to_read(
    log_dir: str | None, names: list[str], output: str | None, remote: RemoteOptions
) -> list[str]:
    """The logs a command names (found in `log_dir` with `--dir`), refused if `output` would
    overwrite one of them."""
    paths = [api.find_log(log_dir, name, remote) if log_dir is not None else name for name in names]
    if output is not None:
        check_output_against_logs(output, paths)
    return paths


def _analyze(path: str, lenient: bool, remote: RemoteOptions) -> Analysis:
    """Read and analyze one log, with a progress line on a terminal."""
    with _progress_on_terminal() as progress:
        return api.analyze(path, strictness_of(lenient), progress=progress, remote=remote)


@app.command("report", cls=_Command)
def report_command(
    log: str = typer.Argument(
        ...,
        metavar="LOG",
        help="An event log (a file, a rolling directory, or a URL); with --dir, an application "
        "id or a log's name in that directory.",
    ),
    log_dir: str | None = DIR_OPTION,
    output: str | None = OUTPUT_OPTION,
    fmt: str | None = FORMAT_OPTION,
    execution: list[int] | None = typer.Option(
        None, "--execution", "-e", metavar="ID", help="Only these SQL execution ids (repeatable)."
    ),
    top: int | None = typer.Option(
        None, "--top", metavar="N", help="Only the N slowest SQL executions."
    ),
    metrics: str = typer.Option(
        "summary",
        "--metrics",
        metavar="LEVEL",
        help="Metric detail in the text report: none, summary or full.",
    ),
    sections: str = typer.Option(
        "all",
        "--sections",
        metavar="LIST",
        help="Text report sections, comma-separated: summary, time, findings, plans, stages, "
        "config, executors, jobs; or all.",
    ),
    what_if_slots: str | None = typer.Option(
        None,
        "--what-if-slots",
        metavar="LIST",
        help="Predict the walls with these task slot counts, comma-separated (default: half, "
        "double and four times the run's; docs/what-if.md).",
    ),
    width: int | None = WIDTH_OPTION,
    lenient: bool = LENIENT_OPTION,
    no_color: bool = NO_COLOR_OPTION,
    threshold: list[str] | None = THRESHOLD_OPTION,
    redact: bool = REDACT_OPTION,
    price_per_core_hour: str | None = PRICE_OPTION,
    price_file: str | None = PRICE_FILE_OPTION,
    remote_timeout: float | None = REMOTE_TIMEOUT_OPTION,
    endpoint_url: str | None = ENDPOINT_URL_OPTION,
    profile: str | None = PROFILE_OPTION,
    anonymous: bool = ANONYMOUS_OPTION,
    storage_option: list[str] | None = STORAGE_OPTION,
    remote_config: str | None = REMOTE_CONFIG_OPTION,
) -> None:
    """Analyze one event log and print or write its EXPLAIN ANALYZE report.

    Examples:

    \b
      spark-explain report /var/log/spark-events/app-20240101-0001
      spark-explain report --dir /var/log/spark-events application_1751493828576_0001
      spark-explain report eventlog.zstd -o report.html
      spark-explain report eventlog.zstd --format json -o out.json
      spark-explain report eventlog.zstd --sections findings,plans --width 160
      spark-explain report eventlog.zstd --what-if-slots 1,8,64
      spark-explain report eventlog.zstd --price-per-core-hour 0.048
    """
    from analyzer.report.options import parse_sections, parse_what_if_slots

    with _errors_as_lines("ran out of memory analyzing this log", path=log):
        options = _output_options(
            output,
            fmt,
            width,
            no_color,
            metrics=metrics,
            executions=tuple(execution or ()),
            top=top,
            thresholds=thresholds_of(threshold),
            sections=parse_sections(sections),
            redact=redact,
            what_if_slots=None if what_if_slots is None else parse_what_if_slots(what_if_slots),
            prices=prices_of(price_per_core_hour, price_file),
        )
        remote = remote_options_of(
            remote_timeout, endpoint_url, profile, anonymous, storage_option, remote_config
        )
        (path,) = _logs_to_read(log_dir, [log], output, remote)
        # One pause of the cyclic collector over reading, finding and rendering, and the
        # analysis dropped inside it: back on, the collector has none of it to walk.
        with api.collector_paused():
            analysis = _analyze(path, lenient, remote)
            if output is None:
                _write_to_stdout(api.report_pieces(analysis, options))
            else:
                api.write_report(analysis, output, options)
            del analysis


def _write_to_stdout(pieces: Iterator[str]) -> None:
    """Write a report to standard output piece by piece (it is made as it is written); when
    the reader goes away (`| head`), stop making it, quietly."""
    try:
        for piece in pieces:
            sys.stdout.write(piece)
        sys.stdout.flush()
    except BrokenPipeError:
        # Nothing more can be written; point stdout at /dev/null so the exit's flush is quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _terminal_width(to_terminal: bool) -> int:
    """The text report's default width: the terminal's (at least 60 columns), else 100."""
    from analyzer.report.options import DEFAULT_WIDTH, MAX_WIDTH, MIN_WIDTH

    if not to_terminal:
        return DEFAULT_WIDTH
    columns = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return min(max(columns, MIN_WIDTH), MAX_WIDTH)


@app.command("diff", cls=_Command)
def diff_command(
    baseline: str = typer.Argument(
        ...,
        metavar="BASELINE",
        help="The earlier (reference) run: an event log, or with --dir an application id or a "
        "log's name.",
    ),
    candidate: str = typer.Argument(
        ...,
        metavar="CANDIDATE",
        help="The run to explain: an event log, or with --dir an application id or a log's name.",
    ),
    log_dir: str | None = DIR_OPTION,
    output: str | None = OUTPUT_OPTION,
    fmt: str | None = FORMAT_OPTION,
    top: int | None = typer.Option(
        None, "--top", metavar="N", help="Only the N paired executions whose time changed most."
    ),
    width: int | None = WIDTH_OPTION,
    lenient: bool = LENIENT_OPTION,
    no_color: bool = NO_COLOR_OPTION,
    threshold: list[str] | None = THRESHOLD_OPTION,
    redact: bool = REDACT_OPTION,
    remote_timeout: float | None = REMOTE_TIMEOUT_OPTION,
    endpoint_url: str | None = ENDPOINT_URL_OPTION,
    profile: str | None = PROFILE_OPTION,
    anonymous: bool = ANONYMOUS_OPTION,
    storage_option: list[str] | None = STORAGE_OPTION,
    remote_config: str | None = REMOTE_CONFIG_OPTION,
) -> None:
    """Compare two runs of a job and say what explains the change in time.

    Examples:

    \b
      spark-explain diff yesterday.zstd today.zstd
      spark-explain diff --dir /var/log/spark-events app-20240101-0001 app-20240102-0001
      spark-explain diff a.zstd b.zstd -o diff.md
    """
    with _errors_as_lines("ran out of memory comparing these logs"):
        options = _output_options(output, fmt, width, no_color, top=top, redact=redact)
        thresholds = thresholds_of(threshold)
        remote = remote_options_of(
            remote_timeout, endpoint_url, profile, anonymous, storage_option, remote_config
        )
        paths = _logs_to_read(log_dir, [baseline, candidate], output, remote)
        with api.collector_paused():  # as in `report`
            analyses = [_analyze(path, lenient, remote) for path in paths]
            result = api.diff(analyses[0], analyses[1], thresholds)
            if output is None:
                sys.stdout.write(api.render_diff(result, options))
            else:
                api.write_diff(result, output, options)
            del analyses, result


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


@app.command("batch", cls=_Command)
def batch_command(
    log_dir: str = typer.Argument(
        ..., metavar="LOG_DIR", help="A directory of event logs (History Server log dir)."
    ),
    output: str = typer.Option(
        ..., "-o", "--output", metavar="OUT_DIR", help="Directory to write the reports into."
    ),
    since: str | None = typer.Option(
        None,
        "--since",
        metavar="AGE",
        help="Only logs modified within this long, e.g. 24h, 7d, 90m.",
    ),
    match: str | None = typer.Option(
        None,
        "--match",
        metavar="REGEX",
        help="Only applications whose id or name matches this regex.",
    ),
    include_incomplete: bool = typer.Option(
        False, "--include-incomplete", help="Also analyze in-progress (incomplete) logs."
    ),
    engine: str = typer.Option(
        "local", "--engine", metavar="ENGINE", help="local (default) or spark."
    ),
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        "-j",
        metavar="N",
        help="Parallel workers for the local engine (default: CPU count).",
    ),
    master: str | None = typer.Option(
        None,
        "--master",
        metavar="URL",
        help="Spark master URL for --engine spark (default local[*]).",
    ),
    max_memory_mb: int = typer.Option(
        DEFAULT_MAX_MEMORY_MB,
        "--max-memory-mb",
        metavar="N",
        help="Memory one log may use in a worker, MiB; a log above it fails (0: no limit).",
    ),
    timeout_s: int = typer.Option(
        DEFAULT_TIMEOUT_S,
        "--timeout-s",
        metavar="N",
        help="Time one log may take, seconds; a log above it fails (0: no limit).",
    ),
    lenient: bool = typer.Option(
        False, "--lenient", help="Skip malformed lines (and count them) instead of failing the log."
    ),
    threshold: list[str] | None = typer.Option(
        None,
        "--threshold",
        metavar="NAME=VALUE",
        help="Tune a finding rule in every report (repeatable; names in docs/findings.md).",
    ),
    redact: bool = typer.Option(
        False,
        "--redact",
        help="Replace literals, paths, hosts and users with stable tokens, and secrets in free "
        "text with *********(redacted), in every report, the index, the tables and the history "
        "(docs/redaction.md).",
    ),
    job_key: str | None = typer.Option(
        None,
        "--job-key",
        help="Group runs into jobs by this regex on the app name (its first group, else the "
        "match) or by spark:<property>; default: the name without dates, times and ids.",
    ),
    regression_threshold: float = typer.Option(
        DEFAULT_REGRESSION_THRESHOLD,
        "--regression-threshold",
        help="A run regressed at this many times the median of its job's last 10 runs "
        "(1.5: 50 % slower)...",
    ),
    regression_min_change_s: float = typer.Option(
        DEFAULT_REGRESSION_MIN_CHANGE_S,
        "--regression-min-change-s",
        help="...and at least this many seconds above that median.",
    ),
    price_per_core_hour: str | None = PRICE_OPTION,
    price_file: str | None = PRICE_FILE_OPTION,
    remote_timeout: float | None = REMOTE_TIMEOUT_OPTION,
    endpoint_url: str | None = ENDPOINT_URL_OPTION,
    profile: str | None = PROFILE_OPTION,
    anonymous: bool = ANONYMOUS_OPTION,
    storage_option: list[str] | None = STORAGE_OPTION,
    remote_config: str | None = REMOTE_CONFIG_OPTION,
) -> None:
    """Analyze every application of a log directory: a report per application, an index, tables.

    Examples:

    \b
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
            strictness=strictness_of(lenient),
            report=ReportOptions(
                thresholds=thresholds_of(threshold),
                redact=redact,
                prices=prices_of(price_per_core_hour, price_file),
            ),
            job_key=job_key,
            regression_threshold=regression_threshold,
            regression_min_change_s=regression_min_change_s,
            remote=remote_options_of(
                remote_timeout, endpoint_url, profile, anonymous, storage_option, remote_config
            ),
        )
        summary = run_batch(log_dir, output, options)
    except UsageError as error:
        raise _fail(error, EXIT_USAGE) from None
    except BatchBusyError as error:
        raise _fail(error, EXIT_BUSY) from None
    except AnalyzerError as error:
        raise _fail(error) from None
    for line in summary.warnings:
        typer.echo(f"warning: {neutralize(line)}", err=True)
    for line in summary.failure_lines():
        typer.echo(f"failed: {neutralize(line)}", err=True)
    for line in summary.output_errors:
        typer.echo(f"error: {neutralize(line)}", err=True)
    typer.echo(neutralize(summary.line()))
    if summary.n_failed or summary.output_errors:
        raise typer.Exit(EXIT_INPUT_ERROR)


def main() -> None:
    """Run the command line."""
    # No pydantic plugins in the command line: looking them up scans every installed package's
    # entry points (about 20 ms at start-up), and none has a use here. A value the user set wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    app()
