"""Prices: what a core-hour and a GiB-hour of executor memory cost, given on the command line
or in a price file matched on a log's Spark properties (docs/cost.md). No polars here: report
options hold a `PriceSpec`, and the command line builds one before any heavy import."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from analyzer.errors import PriceFileError
from analyzer.eventlog.config_file import ConfigFileError, parse_toml, read_settings_file

MAX_PRICE_FILE_BYTES = 1 << 20
"""A price file larger than this is refused: it is a small table, not data."""
MAX_CURRENCY_CHARS = 8


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class Pricing:
    """What a core-hour (and, optionally, a GiB-hour of executor memory) costs."""

    core_hour: float = field(metadata=_help("Price of one core for one hour."))
    gib_hour: float = field(
        default=0.0, metadata=_help("Price of one GiB of executor memory for one hour (0: none).")
    )
    currency: str = field(default="$", metadata=_help("Currency sign or code printed first."))
    source: str = field(
        default="--price-per-core-hour",
        metadata=_help("Where the price came from: the option, or the price file's entry."),
    )


@dataclass(frozen=True)
class PriceRule:
    """One entry of a price file: the price of the logs whose property has a given value."""

    name: str
    core_hour: float
    gib_hour: float
    currency: str
    property: str | None
    """The Spark property compared; None for the file's default entry."""
    equals: str | None


@dataclass(frozen=True)
class PriceTable:
    """A price file read: its entries in order, the first matching one prices a log."""

    path: str
    rules: tuple[PriceRule, ...]

    def pricing_for(self, properties: Mapping[str, str]) -> Pricing | None:
        """Return the price of the first entry whose property the log sets to its value (the
        file's default when none does), or None when nothing matches.

        >>> t = PriceTable("p.toml", (PriceRule("big", 2.0, 0.0, "$", "spark.x", "big"),
        ...                           PriceRule("default", 1.0, 0.0, "$", None, None)))
        >>> t.pricing_for({"spark.x": "big"}).core_hour, t.pricing_for({}).core_hour
        (2.0, 1.0)
        """
        for rule in self.rules:
            if rule.property is None or properties.get(rule.property) == rule.equals:
                where = "default" if rule.property is None else f"{rule.property}={rule.equals}"
                return Pricing(
                    core_hour=rule.core_hour,
                    gib_hour=rule.gib_hour,
                    currency=rule.currency,
                    source=f"price file entry {rule.name!r} ({where})",
                )
        return None


def _price(entry: Mapping[str, object], key: str, where: str, path: str) -> float:
    value = entry.get(key, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PriceFileError(f"{where}: {key} must be a number", path=path)
    if not math.isfinite(value) or value < 0:
        raise PriceFileError(f"{where}: {key} must be a number ≥ 0", path=path)
    return float(value)


def _currency(entry: Mapping[str, object], default: str, where: str, path: str) -> str:
    value = entry.get("currency", default)
    ok = isinstance(value, str) and 0 < len(value) <= MAX_CURRENCY_CHARS and value.isprintable()
    if not ok:
        raise PriceFileError(
            f"{where}: currency must be up to {MAX_CURRENCY_CHARS} printable characters",
            path=path,
        )
    return str(value)


def read_price_table(path: str | Path) -> PriceTable:
    """Read a price file (TOML, docs/cost.md): a default price and `[[match]]` entries.

    Raises `PriceFileError` naming the file for one that cannot be read or does not fit.
    """
    name = str(path)
    try:
        doc = parse_toml(read_settings_file(path, MAX_PRICE_FILE_BYTES))
    except OSError as error:
        raise PriceFileError(
            f"cannot read the price file: {error.strerror or error}", path=name
        ) from None
    except ConfigFileError as error:
        raise PriceFileError(f"the price file is {error}", path=name) from None
    currency = _currency(doc, "$", "top level", name)
    rules: list[PriceRule] = []
    matches = doc.get("match", [])
    if not isinstance(matches, list):
        raise PriceFileError("match must be a list of tables ([[match]])", path=name)
    for i, entry in enumerate(matches, start=1):
        where = f"[[match]] entry {i}"
        if not isinstance(entry, dict):
            raise PriceFileError(f"{where} is not a table", path=name)
        prop, equals = entry.get("property"), entry.get("equals")
        if not isinstance(prop, str) or not isinstance(equals, str) or not prop:
            raise PriceFileError(f"{where}: needs property and equals (strings)", path=name)
        if "core_hour" not in entry:
            raise PriceFileError(f"{where}: needs core_hour", path=name)
        label = entry.get("name", equals)
        rules.append(
            PriceRule(
                name=str(label)[:80],
                core_hour=_price(entry, "core_hour", where, name),
                gib_hour=_price(entry, "gib_hour", where, name),
                currency=_currency(entry, currency, where, name),
                property=prop,
                equals=equals,
            )
        )
    if "core_hour" in doc:
        rules.append(
            PriceRule(
                name="default",
                core_hour=_price(doc, "core_hour", "top level", name),
                gib_hour=_price(doc, "gib_hour", "top level", name),
                currency=currency,
                property=None,
                equals=None,
            )
        )
    if not rules:
        raise PriceFileError("the price file sets no core_hour and no [[match]]", path=name)
    return PriceTable(path=name, rules=tuple(rules))


@dataclass(frozen=True)
class PriceSpec:
    """The prices a user gave: one per core-hour (`--price-per-core-hour`), a price file
    (`--price-file`), or both: the option's price then wins over the file's."""

    core_hour: float | None = None
    table: PriceTable | None = None

    def pricing_for(self, properties: Mapping[str, str]) -> Pricing | None:
        """Return the price of a log with these Spark properties, or None when none applies."""
        if self.core_hour is not None:
            found = self.table.pricing_for(properties) if self.table is not None else None
            currency = found.currency if found is not None else "$"
            return Pricing(core_hour=self.core_hour, currency=currency)
        return self.table.pricing_for(properties) if self.table is not None else None
