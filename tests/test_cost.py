"""Cost: core-hours allocated and used, idle share, memory-hours, priced; on real logs, in every
format, from the command line and in the job history (docs/cost.md)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from eventlog_samples import SAMPLES
from typer.testing import CliRunner

from analyzer import api
from analyzer.aggregate.pricing import PriceSpec, read_price_table
from analyzer.batch.fleet import parse_report
from analyzer.batch.history import (
    History,
    HistoryStore,
    RegressionRule,
    RunInput,
    history_schema,
    new_records,
)
from analyzer.cli import EXIT_INPUT_ERROR, EXIT_USAGE, app
from analyzer.errors import PriceFileError
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import DRIVER_ID
from analyzer.report.options import ReportOptions

CLUSTER_LOG = SAMPLES / "app-20261122042339-0000.lz4"
"""Two executors of a standalone cluster (`local-cluster`): executor add and remove events."""
LOCAL_LOG = SAMPLES / "local-1795320224872"
PRICE = PriceSpec(core_hour=0.05)


def _log(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"sample log {path} not present")
    return path


def test_core_hours_are_executor_lifetimes_times_cores_and_task_time() -> None:
    analysis = api.analyze(_log(CLUSTER_LOG))
    cost = analysis.cost()
    app_ = analysis.application
    workers = [e for e in app_.executors if e.executor_id != DRIVER_ID]
    assert not cost.local_mode and cost.n_executors == len(workers) == 2
    end = app_.end_ms
    assert end is not None
    held = sum(
        e.n_cores * ((e.removed_ms if e.removed_ms is not None else end) - (e.added_ms or 0))
        for e in workers
    )
    assert cost.core_ms_allocated == held
    # Every task attempt's launch-to-finish, as the History Server sums it per executor
    # (`totalDuration`): spark.task.cpus is 1 here.
    assert cost.core_ms_used == sum(e.task_time_ms for e in workers)
    share = cost.idle_share
    assert share is not None and 0 < share < 1
    assert cost.core_hours_allocated == pytest.approx(held / 3_600_000)
    # 512 MiB of heap plus Spark's least overhead, 384 MiB.
    assert cost.memory_bytes_per_executor == (512 + 384) << 20
    assert "spark.executor.memory" in cost.memory_basis_str
    assert cost.cost_allocated is None


def test_local_mode_counts_the_drivers_threads() -> None:
    analysis = api.analyze(_log(LOCAL_LOG))
    cost = analysis.cost(PRICE)
    assert cost.local_mode and cost.n_executors == 1
    (holding,) = cost.holdings
    assert holding.n_cores == 2  # local[2]
    assert cost.memory_basis_str.startswith("spark.driver.memory")
    assert cost.cost_allocated == pytest.approx(cost.core_hours_allocated * 0.05)
    assert cost.cost_idle == pytest.approx(
        (cost.core_ms_allocated - cost.core_ms_used) / 3_600_000 * 0.05
    )


def test_every_format_shows_the_cost_and_prices_findings() -> None:
    analysis = api.analyze(_log(LOCAL_LOG))
    # Its one finding (too-many-partitions, 893 ms) sits under the 1 s floor: lower the floor
    # so a finding with a time cost is priced.
    floor = Thresholds(min_lost_ms=500)
    text = api.render_report(analysis, ReportOptions(prices=PRICE, thresholds=floor))
    assert "cost: " in text and "core-hours allocated" in text and "$0.05 per core-hour" in text
    assert "(≈ $" in text  # a finding's time lost in money
    document = json.loads(
        api.render_report(analysis, ReportOptions(fmt="json", prices=PRICE, thresholds=floor))
    )
    cost = document["cost"]
    assert cost["price"]["core_hour"] == 0.05 and cost["cost_allocated"] > 0
    lost = [f for f in document["findings"] if f["estimated_lost_ms"] > 0]
    assert lost and all(f["estimated_lost_cost"] > 0 for f in lost)
    unpriced = json.loads(api.render_report(analysis, ReportOptions(fmt="json")))
    assert unpriced["cost"]["price"] is None and unpriced["cost"]["core_hours_allocated"] > 0
    markdown = api.render_report(analysis, ReportOptions(fmt="markdown", prices=PRICE))
    assert "Cost: " in markdown and "per core-hour" in markdown
    html = api.render_report(analysis, ReportOptions(fmt="html", prices=PRICE, now_ms=0))
    assert 'id="cost"' in html and "core-hours allocated" in html


def test_price_file_matches_a_log_property(tmp_path: Path) -> None:
    master = api.analyze(_log(LOCAL_LOG)).properties["spark.master"]
    prices = tmp_path / "prices.toml"
    prices.write_text(
        'currency = "EUR"\ncore_hour = 1.0\n\n[[match]]\nname = "two threads"\n'
        f'property = "spark.master"\nequals = "{master}"\ncore_hour = 2.0\ngib_hour = 0.5\n'
    )
    table = read_price_table(prices)
    pricing = table.pricing_for({"spark.master": master})
    assert pricing is not None
    assert (pricing.core_hour, pricing.gib_hour, pricing.currency) == (2.0, 0.5, "EUR")
    assert "two threads" in pricing.source
    fallback = table.pricing_for({"spark.master": "yarn"})
    assert fallback is not None and fallback.core_hour == 1.0
    result = CliRunner().invoke(
        app, ["report", str(_log(LOCAL_LOG)), "--price-file", str(prices), "--sections", "summary"]
    )
    assert result.exit_code == 0, result.output
    assert "EUR " in result.stdout and "two threads" in result.stdout


@pytest.mark.parametrize(
    "content, message",
    [
        ("core_hour = [", "not valid TOML"),
        ('core_hour = "cheap"', "core_hour must be a number"),
        ("core_hour = -1", "must be a number ≥ 0"),
        ('[[match]]\nproperty = "spark.master"\ncore_hour = 1', "needs property and equals"),
        ('currency = "far too long a currency"\ncore_hour = 1', "currency must be"),
        ('name = "x"', "sets no core_hour"),
    ],
)
def test_a_bad_price_file_is_one_line_naming_it(tmp_path: Path, content: str, message: str) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text(content)
    with pytest.raises(PriceFileError, match=message):
        read_price_table(prices)
    result = CliRunner().invoke(app, ["report", str(_log(LOCAL_LOG)), "--price-file", str(prices)])
    assert result.exit_code == EXIT_INPUT_ERROR
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(prices) in lines[0] and "[bad-price-file]" in lines[0]


def test_a_negative_price_is_a_usage_error() -> None:
    result = CliRunner().invoke(
        app, ["report", str(_log(LOCAL_LOG)), "--price-per-core-hour", "-1"]
    )
    assert result.exit_code == EXIT_USAGE
    assert "--price-per-core-hour" in result.stderr


def test_history_records_each_runs_cost(tmp_path: Path) -> None:
    analysis = api.analyze(_log(LOCAL_LOG))
    doc = parse_report(
        api.render_report(analysis, ReportOptions(fmt="json", prices=PRICE)).encode()
    )
    records = new_records(History(), [RunInput("a", "job", "log", 0, doc)], RegressionRule(), 0)
    (row,) = records.rows["runs"]
    cost = analysis.cost(PRICE)
    assert row.core_hours_allocated == pytest.approx(cost.core_hours_allocated)  # type: ignore[attr-defined]
    assert row.cost == pytest.approx(cost.cost_allocated)  # type: ignore[attr-defined]
    assert row.currency == "$"  # type: ignore[attr-defined]
    store = HistoryStore(tmp_path)
    store.append(records, 0)
    (run,) = store.load().runs
    assert run.cost == pytest.approx(cost.cost_allocated)
    assert run.idle_core_hours == pytest.approx(cost.core_hours_allocated * (cost.idle_share or 0))


def test_runs_recorded_before_costs_read_as_unpriced(tmp_path: Path) -> None:
    """A `runs` file written before the cost columns existed still loads: its costs are null."""
    analysis = api.analyze(_log(LOCAL_LOG))
    doc = parse_report(api.render_report(analysis, ReportOptions(fmt="json")).encode())
    records = new_records(History(), [RunInput("a", "job", "log", 0, doc)], RegressionRule(), 0)
    store = HistoryStore(tmp_path)
    store.append(records, 0)
    added = {"core_hours_allocated", "core_hours_used", "idle_share", "memory_gib_hours", "cost",
             "cost_idle", "currency"}  # fmt: skip
    for path in store.table_dir("runs").glob("*.parquet"):
        old = pl.read_parquet(path).drop(*added)
        assert set(old.columns) == set(history_schema("runs")) - added
        old.write_parquet(path)
    (run,) = store.load().runs
    assert run.cost is None and run.core_hours_allocated is None
    assert not store.load().unreadable
