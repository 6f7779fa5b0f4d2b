"""The `spark-explain` command line: options in, one API call, errors out as one line and an exit code."""

from __future__ import annotations

import json
import sys

import typer

from analyzer import __version__, api
from analyzer.errors import AnalyzerError

EXIT_OK = 0
EXIT_INPUT_ERROR = 1
EXIT_USAGE = 2

app = typer.Typer(
    name="spark-explain",
    help="EXPLAIN ANALYZE for Apache Spark event logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _fail(error: AnalyzerError) -> typer.Exit:
    typer.echo(f"error: {error}", err=True)
    return typer.Exit(EXIT_INPUT_ERROR)


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
    log_dir: str = typer.Argument(..., help="A directory of event logs (a History Server log dir)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the applications in a log directory.

    Example: spark-explain apps /var/log/spark-events --json
    """
    try:
        infos = api.list_applications(log_dir)
    except AnalyzerError as error:
        raise _fail(error) from None
    if as_json:
        typer.echo(json.dumps([i.model_dump() for i in infos], indent=2))
        return
    from analyzer.report.apps_table import format_apps_table

    sys.stdout.write(format_apps_table(infos))


def main() -> None:
    """Run the command line."""
    app()
