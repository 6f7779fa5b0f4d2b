"""Units, number formatting and visible text for humans: a leaf module every layer may import.

These word our own reports (`1.5 KiB`, `3m 05s`, `42.0 %`); Spark's exact metric strings live in
`analyzer.aggregate.spark_format`. Every function takes raw values in base units (bytes, ms, ns,
counts, fractions) and returns `–` for a missing one; none raises on a value a log can hold.
`show_invisible` is the one rule, shared by every format, for characters from a log that a
reader could not see or that would reorder what is shown around them.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from typing import Literal

MISSING = "–"
"""What a missing value prints as."""

Unit = Literal["bytes", "ms", "ns", "count", "share", "ratio", "text", "id"]
"""The unit of a raw value: `share` is a fraction 0..1, `ratio` a factor (`×4.2`), `id` a plain
identifier (task 12, stage 3), `text` a string shown as it is."""

UNITS: tuple[Unit, ...] = ("bytes", "ms", "ns", "count", "share", "ratio", "text", "id")

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def _finite(value: float) -> bool:
    """Whether `value` is a number a float holds (an integer past 1e308 is not one)."""
    try:
        value = float(value)
    except OverflowError:
        return False
    return not (math.isnan(value) or math.isinf(value))


LONG_MAX = (1 << 63) - 1
"""The largest value of a Java `long`: what Spark's settings and counters can hold."""
INT_MAX = (1 << 31) - 1
"""The largest value of a Java `int` (Spark's int settings, such as `spark.task.cpus`)."""


def decimal_int(text: str) -> int | None:
    """The value of `text` when it is decimal digits alone (any script's, as `int` reads them)
    and a Java `long` holds it, else None.

    Settings and ids in a log are untrusted text: `str.isdigit` also accepts superscript and
    circled digits, which `int` refuses, and `int` refuses more than 4,300 digits.

    >>> [decimal_int(v) for v in ("42", "\u0663", "\u00b2", "-1", "9" * 19, "")]
    [42, 3, None, None, None, None]
    """
    if not text.isdecimal() or len(text) > 19:
        return None
    value = int(text)
    return value if value <= LONG_MAX else None


def parse_seconds(text: str | None, default: float) -> float:
    """Read a Spark duration setting in seconds (`60s`, `2min`, `500ms`, `1h`; a bare number is
    seconds); `default` when unreadable.

    >>> [parse_seconds(v, 7) for v in ("2min", "500ms", "45", "x")]
    [120.0, 0.5, 45.0, 7]
    """
    raw = (text or "").strip().lower()
    for suffix, factor in (
        ("ms", 0.001),
        ("min", 60.0),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
        ("d", 86400.0),
    ):
        if raw.endswith(suffix):
            amount = decimal_int(raw[: -len(suffix)].strip())
            if amount is not None:
                return amount * factor
    amount = decimal_int(raw)
    return float(amount) if amount is not None else default


def shown_path(path: str) -> str:
    r"""A file path or URL as text every output can hold.

    A file name's bytes that are not UTF-8 reach Python as lone surrogates (`os.fsdecode`), which
    no UTF-8 output can write: they are shown as `\xNN`, any other lone surrogate as `\uXXXX`.

    >>> shown_path("logs/bad\udcff\udcfename"), shown_path("logs/caf\u00e9")
    ('logs/bad\\xff\\xfename', 'logs/café')
    """
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return path.encode("utf-8", "backslashreplace").decode("utf-8")
    return path


def fmt_bytes(n_bytes: int | float | None) -> str:
    """Format a byte count with binary units: `0 B`, `512 B`, `1.5 KiB`, `3.2 GiB`.

    >>> [fmt_bytes(v) for v in (0, 512, 1536, 3 << 30, None)]
    ['0 B', '512 B', '1.5 KiB', '3.0 GiB', '–']
    """
    if n_bytes is None or not _finite(n_bytes):
        return MISSING
    value = float(n_bytes)
    for unit in _BYTE_UNITS:
        if abs(value) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def fmt_duration_ms(ms: int | float | None) -> str:
    """Format milliseconds: `850 ms`, `1.2 s`, `3m 05s`, `2h 03m`.

    >>> [fmt_duration_ms(v) for v in (850, 1234, 185_000, 7_380_000, None)]
    ['850 ms', '1.2 s', '3m 05s', '2h 03m', '–']
    """
    if ms is None or not _finite(ms):
        return MISSING
    ms = float(ms)
    if abs(ms) < 1000:
        return f"{round(ms)} ms"
    seconds = ms / 1000
    if abs(seconds) < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def fmt_duration_ns(ns: int | float | None) -> str:
    """Format nanoseconds as a duration (see `fmt_duration_ms`).

    >>> fmt_duration_ns(2_500_000_000)
    '2.5 s'
    """
    return MISSING if ns is None or not _finite(ns) else fmt_duration_ms(ns / 1_000_000)


def fmt_count(n: int | float | None) -> str:
    """Format a count with thousands separators: `1,234,567`.

    >>> fmt_count(1234567)
    '1,234,567'
    """
    if n is None or not _finite(n):
        return MISSING
    return f"{int(n):,}"


def fmt_amount(value: float | None) -> str:
    """Format an amount (hours, money) to about three significant digits, never in exponents.

    >>> [fmt_amount(v) for v in (1234.5, 12.345, 0.5, 0.012345, 0.0000123, 0, None)]
    ['1,234', '12.3', '0.5', '0.0123', '0.0000123', '0', '–']
    """
    if value is None or not _finite(value):
        return MISSING
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    digits = 2 - math.floor(math.log10(abs(value)))
    return f"{value:.{digits}f}".rstrip("0").rstrip(".")


def fmt_money(value: float | None, currency: str) -> str:
    """Format money with its currency sign or code first: `$0.0123`, `EUR 12.3`.

    >>> fmt_money(12.345, "$"), fmt_money(12.345, "EUR"), fmt_money(None, "$")
    ('$12.3', 'EUR 12.3', '–')
    """
    if value is None or not _finite(value):
        return MISSING
    gap = " " if currency[-1:].isalpha() else ""
    return f"{currency}{gap}{fmt_amount(value)}"


def fmt_pct(fraction: float | None) -> str:
    """Format a fraction 0..1 as a percentage: `42.0 %`.

    >>> fmt_pct(0.42)
    '42.0 %'
    """
    if fraction is None or not _finite(fraction):
        return MISSING
    return f"{100 * fraction:.1f} %"


def fmt_ratio(ratio: float | None) -> str:
    """Format a ratio such as max / median: `×4.2`, `×120`.

    >>> [fmt_ratio(v) for v in (4.25, 1234.0, None)]
    ['×4.2', '×1,234', '–']
    """
    if ratio is None or not _finite(ratio):
        return MISSING
    return f"×{ratio:.1f}" if ratio < 100 else f"×{ratio:,.0f}"


def fmt_factor(ratio: float | None) -> str:
    """Format a factor as the findings word it: `33.9×` (`–` when unknown).

    >>> fmt_factor(33.94)
    '33.9×'
    """
    if ratio is None or not _finite(ratio):
        return MISSING
    return f"{ratio:.1f}×"


def fmt_timestamp_ms(epoch_ms: int | float | None) -> str:
    """Format an epoch-millisecond timestamp as UTC: `2024-01-31 23:59:01 UTC`.

    A timestamp no calendar can show (a log can hold any number) prints as the raw number.

    >>> fmt_timestamp_ms(1_700_000_000_000)
    '2023-11-14 22:13:20 UTC'
    >>> fmt_timestamp_ms(-10**18)
    'epoch ms -1000000000000000000'
    """
    if epoch_ms is None:
        return MISSING
    try:
        moment = _dt.datetime.fromtimestamp(epoch_ms / 1000, tz=_dt.UTC)
    except (OverflowError, OSError, ValueError):
        return f"epoch ms {int(epoch_ms)}" if _finite(epoch_ms) else MISSING
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def fmt_timestamp_iso(epoch_ms: int | float | None, missing: str = MISSING) -> str:
    """Format an epoch-millisecond timestamp as compact ISO 8601 UTC: `2021-06-16T20:41:23Z`.

    >>> fmt_timestamp_iso(1623876083370)
    '2021-06-16T20:41:23Z'
    """
    if epoch_ms is None:
        return missing
    try:
        moment = _dt.datetime.fromtimestamp(epoch_ms / 1000, tz=_dt.UTC)
    except (OverflowError, OSError, ValueError):
        return f"epoch ms {int(epoch_ms)}" if _finite(epoch_ms) else missing
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def fmt_metric_value(metric_type: str, value: int | float | None) -> str:
    """Format a raw SQL metric value by its Spark metric type (size, timing, nsTiming, …).

    Averages are stored by Spark as tenths (`average` metrics print one decimal).

    >>> [fmt_metric_value(t, v) for t, v in (("size", 2048), ("timing", 1500), ("average", 25))]
    ['2.0 KiB', '1.5 s', '2.5']
    """
    if value is None:
        return MISSING
    if metric_type == "size":
        return fmt_bytes(value)
    if metric_type == "timing":
        return fmt_duration_ms(value)
    if metric_type == "nsTiming":
        return fmt_duration_ns(value)
    if metric_type == "average":
        return f"{value / 10:.1f}" if _finite(value) else MISSING
    return fmt_count(value)


def fmt_value(unit: Unit, value: int | float | str | None) -> str:
    """Format a raw value by its unit (see `Unit`).

    >>> [fmt_value(u, v) for u, v in (("bytes", 1536), ("ms", 2500), ("share", 0.5), ("id", 7))]
    ['1.5 KiB', '2.5 s', '50.0 %', '7']
    """
    if value is None:
        return MISSING
    if isinstance(value, str):
        return value
    if unit == "bytes":
        return fmt_bytes(value)
    if unit == "ms":
        return fmt_duration_ms(value)
    if unit == "ns":
        return fmt_duration_ns(value)
    if unit == "count":
        return fmt_count(value)
    if unit == "share":
        return fmt_pct(value)
    if unit == "ratio":
        return fmt_factor(value)
    return str(value)


def fmt_partition(partition_id: int | None) -> str:
    """Name the RDD partition a task computed: `partition 4`, or "" when the log has none.

    Spark before 3.3 logs no `Partition ID`, and its placeholder -1 is no partition: a reader
    must never see it.

    >>> [fmt_partition(p) for p in (4, 0, -1, None)]
    ['partition 4', 'partition 0', '', '']
    """
    return f"partition {partition_id}" if partition_id is not None and partition_id >= 0 else ""


def plural(n: int, noun: str, plural_noun: str | None = None) -> str:
    """Return `1 task`, `3 tasks` (with `plural_noun` for irregular plurals).

    >>> plural(1, "task"), plural(2, "entry", "entries")
    ('1 task', '2 entries')
    """
    word = noun if n == 1 else (plural_noun or noun + "s")
    return f"{fmt_count(n)} {word}"


INVISIBLE_CHARS = (
    # C0 controls but tab and newline, DEL, C1 controls.
    "\x00-\x08\x0b-\x1f\x7f-\x9f"
    # Unicode's Default_Ignorable_Code_Point set (DerivedCoreProperties.txt, Unicode 15.1):
    # soft hyphen, combining grapheme joiner, Arabic letter mark, Hangul fillers, Khmer vowel
    # inherents, Mongolian selectors, zero-width characters, LRM/RLM, bidi embeddings and
    # overrides (U+202A-U+202E), word joiner, invisible operators, bidi isolates (U+2066-U+2069),
    # variation selectors, BOM, halfwidth filler, U+FFF0-U+FFF8, shorthand format controls,
    # musical symbol formats, tag characters and the rest of plane 14's ignorables.
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
    # Not ignorable but as good as: line and paragraph separators, the blank Braille pattern,
    # interlinear annotation controls.
    "\u2028\u2029\u2800\ufff9-\ufffb"
)
"""The characters `show_invisible` writes as escapes, as a regular-expression class body."""

_INVISIBLE = re.compile(f"[{INVISIBLE_CHARS}]")
_INVISIBLE_OR_NEWLINE = re.compile(f"[\n{INVISIBLE_CHARS}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def has_invisible(text: str) -> bool:
    """True if `show_invisible` would change `text` (newlines aside)."""
    if text.isascii() and text.isprintable():
        return False
    return _INVISIBLE.search(text) is not None


def show_invisible(text: str, *, newlines: bool = False) -> str:
    r"""Write the characters of `text` that cannot be seen, or that reorder the text around them,
    as visible escapes (`\u202e`); with `newlines`, newlines too (one-line output). Tabs stay.

    A right-to-left override makes `payroll \u202edetacifirev ton` display as "payroll not
    verificated"; tag characters and Hangul fillers hide text or make names look alike. Every
    report format shows such characters this way (docs/security.md).

    >>> show_invisible("pay\u202eroll\U000e0041 \u3164x\u2800")
    'pay\\u202eroll\\U000e0041 \\u3164x\\u2800'
    >>> show_invisible("a\tb\nc\x1b"), show_invisible("a\nb", newlines=True)
    ('a\tb\nc\\x1b', 'a\\x0ab')
    """
    if text.isascii() and text.isprintable():
        return text
    return (_INVISIBLE_OR_NEWLINE if newlines else _INVISIBLE).sub(_escape, text)


FIRST_LINE_CHARS = 200
"""How much of a message's first line reports quote (Spark's errors run to pages)."""


def first_line(text: str, limit: int = FIRST_LINE_CHARS) -> str:
    """Return the first non-blank line of `text`, cut to `limit` characters.

    >>> first_line("\\n  boom: bad key\\n\\tat Foo.scala")
    'boom: bad key'
    """
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def one_line(text: str | None, limit: int) -> str:
    """Return `text` on one line, Spark's `<br/>` breaks (markup its UI renders in descriptions
    and call sites) as spaces, cut to `limit` characters (`…` when cut); `''` for None.

    >>> one_line("Listing leaf files for 2 paths:<br/>gs://b/t", 80), one_line("x" * 5, 3)
    ('Listing leaf files for 2 paths: gs://b/t', 'xx…')
    """
    if not text:
        return ""
    flat = " ".join(text.replace("<br/>", " ").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_TEMPLATE_PARAM = re.compile(r"<([A-Za-z_][\w]*)>")


def readable_error(message: str) -> str:
    r"""Return a Spark error message as text: Spark 3.4 logs an execution's error as JSON
    (`{"errorClass": "LEGACY", "messageParameters": {"message": "Job aborted…"}}`), its
    message's line breaks escaped; that is the message inside, or `[CLASS] ` and the template
    filled with the parameters. Any other text is returned as it is.

    >>> readable_error('{"errorClass": "LEGACY", "messageParameters": {"message": "a\\n\\tat b"}}')
    'a\n\tat b'
    >>> readable_error('{"errorClass": "DIVIDE_BY_ZERO", "sqlState": "22012", '
    ...                '"messageParameters": {"config": "ansi"}}')
    '[DIVIDE_BY_ZERO] config=ansi'
    >>> readable_error("boom")
    'boom'
    """
    text = message.strip()
    if not (text.startswith("{") and text.endswith("}") and '"errorClass"' in text):
        return message
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return message
    if not isinstance(data, dict) or not isinstance(data.get("errorClass"), str):
        return message
    params = data.get("messageParameters")
    params = params if isinstance(params, dict) else {}
    inner = params.get("message")
    if data["errorClass"] == "LEGACY" and isinstance(inner, str):
        return inner
    template = data.get("messageTemplate")
    if isinstance(template, str):
        body = _TEMPLATE_PARAM.sub(lambda m: str(params.get(m.group(1), m.group(0))), template)
    else:
        body = ", ".join(f"{k}={v}" for k, v in params.items())
    return f"[{data['errorClass']}] {body}".rstrip()
