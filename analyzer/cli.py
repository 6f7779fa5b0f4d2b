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
from analyzer.errors import AnalyzerError, BatchBusyError, Strictness, UsageError
from analyzer.render.terminal import neutralize

if TYPE_CHECKING:
    from analyzer.aggregate.analysis import Analysis
    from analyzer.aggregate.pricing import PriceSpec
    from analyzer.eventlog.remote import RemoteOptions
    from analyzer.insights import Thresholds
    from analyzer.report.options import ReportOptions

# `analyzer.api` imports the heavy layers (polars, pydantic, jinja) in the functions that use
# them, so that `--version` and `--help` answer at once.

EXIT_OK = 0
EXIT_INPUT_ERROR = 1
EXIT_USAGE = 2
EXIT_BUSY = 75
"""Another batch run holds the output directory: try again later (EX_TEMPFAIL of sysexits.h)."""


class _Command(TyperCommand):
    """A command whose usage line names its arguments as `LOG`, not `{log}`."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:  # a click Context
        """Return the usage line's pieces, required arguments without braces."""
        return [
            piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
            for piece in super().collect_usage_pieces(ctx)
        ]


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


# How remote logs are reached: the same options on every command that reads logs.
_REMOTE_TIMEOUT_OPTION = typer.Option(
    None,
    "--remote-timeout",
    metavar="SECONDS",
    help="Connect and read timeout of each request to remote storage (default 60; a request "
    "is tried twice at most).",
)
_ENDPOINT_URL_OPTION = typer.Option(
    None,
    "--endpoint-url",
    metavar="URL",
    help="Endpoint of the remote storage: an S3-compatible server, a GCS emulator.",
)
_PROFILE_OPTION = typer.Option(
    None, "--profile", metavar="NAME", help="AWS profile for s3:// URLs."
)
_ANONYMOUS_OPTION = typer.Option(
    False, "--anonymous", help="Read remote storage without credentials (public buckets)."
)
_STORAGE_OPTION = typer.Option(
    None,
    "--storage-option",
    metavar="KEY=VALUE",
    help="An option of the storage's fsspec driver (repeatable; VALUE as JSON if it parses).",
)
_REMOTE_CONFIG_OPTION = typer.Option(
    None,
    "--remote-config",
    metavar="FILE",
    envvar="SPARK_EXPLAIN_REMOTE_CONFIG",
    help="A TOML file of remote-storage settings: timeout_s, and driver options under [s3], "
    "[gcs], [abfs]... (docs/cli.md).",
)


def _remote_options(
    timeout_s: float | None,
    endpoint_url: str | None,
    profile: str | None,
    anonymous: bool,
    storage_options: list[str] | None,
    config_path: str | None,
) -> RemoteOptions:
    """The remote-storage options of a command (a bad one is a `UsageError`)."""
    from analyzer.eventlog.remote import make_remote_options

    return make_remote_options(
        timeout_s=timeout_s,
        endpoint_url=endpoint_url,
        profile=profile,
        anonymous=anonymous,
        storage_options=storage_options or (),
        config_path=config_path,
    )


@app.command("apps", cls=_Command)
def apps_command(
    log_dir: str = typer.Argument(
        ..., metavar="LOG_DIR", help="A directory of event logs (History Server log dir)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    remote_timeout: float | None = _REMOTE_TIMEOUT_OPTION,
    endpoint_url: str | None = _ENDPOINT_URL_OPTION,
    profile: str | None = _PROFILE_OPTION,
    anonymous: bool = _ANONYMOUS_OPTION,
    storage_option: list[str] | None = _STORAGE_OPTION,
    remote_config: str | None = _REMOTE_CONFIG_OPTION,
) -> None:
    """List the applications in a log directory: id, name, state, size and path of each log.

    Examples:

    \b
      spark-explain apps /var/log/spark-events --json
      spark-explain apps s3://bucket/spark-events --endpoint-url http://127.0.0.1:9000
    """
    with _errors_as_lines("ran out of memory listing this directory", path=log_dir):
        remote = _remote_options(
            remote_timeout, endpoint_url, profile, anonymous, storage_option, remote_config
        )
        infos = api.list_applications(log_dir, remote)
    if as_json:
        typer.echo(json.dumps([i.model_dump() for i in infos], indent=2))
        return
    from analyzer.render.apps_table import format_apps_table

    sys.stdout.write(format_apps_table(infos))


# Options that `report` and `diff` share: one definition, the same help.
_DIR_OPTION = typer.Option(
    None,
    "--dir",
    "-d",
    metavar="DIR",
    help="Find the logs named in this log directory: by application id or by the log's name.",
)
_OUTPUT_OPTION = typer.Option(
    None,
    "-o",
    "--output",
    metavar="FILE",
    help="Write here (atomically) instead of standard output.",
)
_FORMAT_OPTION = typer.Option(
    None,
    "--format",
    "-f",
    metavar="FORMAT",
    help="text, html, json or markdown; by default the output file's extension decides, else text.",
)
_WIDTH_OPTION = typer.Option(
    None,
    "--width",
    metavar="COLUMNS",
    help="Columns the text output fits in (default: the terminal's width, 100 when not a "
    "terminal).",
)
_LENIENT_OPTION = typer.Option(
    False, "--lenient", help="Skip malformed lines (and count them) instead of stopping."
)
_NO_COLOR_OPTION = typer.Option(False, "--no-color", help="Never colour the text output.")
_THRESHOLD_OPTION = typer.Option(
    None,
    "--threshold",
    metavar="NAME=VALUE",
    help="Tune a finding rule (repeatable; names in docs/findings.md).",
)
_REDACT_OPTION = typer.Option(
    False,
    "--redact",
    help="Replace literals, paths, hosts and users with stable tokens, and secrets in free text "
    "with *********(redacted) (docs/redaction.md).",
)

_PRICE_OPTION = typer.Option(
    None,
    "--price-per-core-hour",
    metavar="PRICE",
    help="Price of one core for one hour: the report shows the run's cost and each finding's "
    "time lost in money (docs/cost.md).",
)
_PRICE_FILE_OPTION = typer.Option(
    None,
    "--price-file",
    metavar="FILE",
    envvar="SPARK_EXPLAIN_PRICE_FILE",
    help="A TOML file of prices per cluster or instance type, matched on the log's Spark "
    "properties (docs/cost.md); --price-per-core-hour wins over it.",
)


def _prices(price_per_core_hour: float | None, price_file: str | None) -> PriceSpec | None:
    """The prices of a command's options (a negative price is a `UsageError`; a bad file a
    `PriceFileError`)."""
    if price_per_core_hour is None and price_file is None:
        return None
    from analyzer.aggregate.pricing import PriceSpec, read_price_table

    if price_per_core_hour is not None and not 0 <= price_per_core_hour < float("inf"):
        raise UsageError(f"--price-per-core-hour must be a number ≥ 0, not {price_per_core_hour}")
    table = read_price_table(price_file) if price_file is not None else None
    return PriceSpec(core_hour=price_per_core_hour, table=table)


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
        api.check_output_against_logs(output, paths)
    return paths


def _analyze(path: str, lenient: bool, remote: RemoteOptions) -> Analysis:
    """Read and analyze one log, with a progress line on a terminal."""
    with _progress_on_terminal() as progress:
        return api.analyze(path, _strictness(lenient), progress=progress, remote=remote)


@app.command("report", cls=_Command)
def report_command(
    log: str = typer.Argument(
        ...,
        metavar="LOG",
        help="An event log (a file, a rolling directory, or a URL); with --dir, an application "
        "id or a log's name in that directory.",
    ),
    log_dir: str | None = _DIR_OPTION,
    output: str | None = _OUTPUT_OPTION,
    fmt: str | None = _FORMAT_OPTION,
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
    width: int | None = _WIDTH_OPTION,
    lenient: bool = _LENIENT_OPTION,
    no_color: bool = _NO_COLOR_OPTION,
    threshold: list[str] | None = _THRESHOLD_OPTION,
    redact: bool = _REDACT_OPTION,
    price_per_core_hour: float | None = _PRICE_OPTION,
    price_file: str | None = _PRICE_FILE_OPTION,
    remote_timeout: float | None = _REMOTE_TIMEOUT_OPTION,
    endpoint_url: str | None = _ENDPOINT_URL_OPTION,
    profile: str | None = _PROFILE_OPTION,
    anonymous: bool = _ANONYMOUS_OPTION,
    storage_option: list[str] | None = _STORAGE_OPTION,
    remote_config: str | None = _REMOTE_CONFIG_OPTION,
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
            thresholds=_thresholds(threshold),
            sections=parse_sections(sections),
            redact=redact,
            what_if_slots=None if what_if_slots is None else parse_what_if_slots(what_if_slots),
            prices=_prices(price_per_core_hour, price_file),
        )
        remote = _remote_options(
            remote_timeout, endpoint_url, profile, anonymous, storage_option, remote_config
        )
        (path,) = _logs_to_read(log_dir, [log], output, remote)
        analysis = _analyze(path, lenient, remote)
        if output is None:
            sys.stdout.write(api.render_report(analysis, options))
        else:
            api.write_report(analysis, output, options)


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
    log_dir: str | None = _DIR_OPTION,
    output: str | None = _OUTPUT_OPTION,
    fmt: str | None = _FORMAT_OPTION,
    top: int | None = typer.Option(
        None, "--top", metavar="N", help="Only the N paired executions whose time changed most."
    ),
    width: int | None = _WIDTH_OPTION,
    lenient: bool = _LENIENT_OPTION,
    no_color: bool = _NO_COLOR_OPTION,
    threshold: list[str] | None = _THRESHOLD_OPTION,
    redact: bool = _REDACT_OPTION,
    remote_timeout: float | None = _REMOTE_TIMEOUT_OPTION,
    endpoint_url: str | None = _ENDPOINT_URL_OPTION,
    profile: str | None = _PROFILE_OPTION,
    anonymous: bool = _ANONYMOUS_OPTION,
    storage_option: list[str] | None = _STORAGE_OPTION,
    remote_config: str | None = _REMOTE_CONFIG_OPTION,
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
        thresholds = _thresholds(threshold)
        remote = _remote_options(
            remote_timeout, endpoint_url, profile, anonymous, storage_option, remote_config
        )
        paths = _logs_to_read(log_dir, [baseline, candidate], output, remote)
        analyses = [_analyze(path, lenient, remote) for path in paths]
        result = api.diff(analyses[0], analyses[1], thresholds)
        if output is None:
            sys.stdout.write(api.render_diff(result, options))
        else:
            api.write_diff(result, output, options)


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
    price_per_core_hour: float | None = _PRICE_OPTION,
    price_file: str | None = _PRICE_FILE_OPTION,
    remote_timeout: float | None = _REMOTE_TIMEOUT_OPTION,
    endpoint_url: str | None = _ENDPOINT_URL_OPTION,
    profile: str | None = _PROFILE_OPTION,
    anonymous: bool = _ANONYMOUS_OPTION,
    storage_option: list[str] | None = _STORAGE_OPTION,
    remote_config: str | None = _REMOTE_CONFIG_OPTION,
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
            strictness=_strictness(lenient),
            report=ReportOptions(
                thresholds=_thresholds(threshold),
                redact=redact,
                prices=_prices(price_per_core_hour, price_file),
            ),
            job_key=job_key,
            regression_threshold=regression_threshold,
            regression_min_change_s=regression_min_change_s,
            remote=_remote_options(
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
