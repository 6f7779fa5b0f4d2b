"""Spark's metric strings: Java rounding, float32 seconds, binary units, the REST layout."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analyzer.aggregate.spark_format import (
    bytes_to_string,
    format_value,
    ms_duration_to_string,
    spark_metric_string,
    spark_string_from_stats,
    valid_for_spark,
)


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0.0 B"),
        (1280, "1280.0 B"),
        (2047, "2047.0 B"),
        (2048, "2.0 KiB"),
        (2304, "2.3 KiB"),
        (842, "842.0 B"),
        (3 * 1024**3, "3.0 GiB"),
        (5 * 1024**2 + 52429, "5.1 MiB"),
    ],
)
def test_bytes_to_string(size: int, text: str) -> None:
    assert bytes_to_string(size) == text


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0 ms"),
        (999, "999 ms"),
        (1000, "1.0 s"),
        (1150, "1.1 s"),
        (1250, "1.3 s"),
        (59999, "60.0 s"),
        (61500, "1.0 m"),
        (3599999, "60.0 m"),
        (3600000, "1.00 h"),
    ],
)
def test_ms_duration_to_string(ms: int, text: str) -> None:
    assert ms_duration_to_string(ms) == text


@pytest.mark.parametrize(("raw", "text"), [(12, "1.2"), (10, "1"), (12345, "1,234.5"), (0, "0")])
def test_average_values_are_stored_times_ten(raw: int, text: str) -> None:
    assert format_value("average", raw) == text


def test_ns_timing_truncates_to_ms() -> None:
    assert format_value("nsTiming", 1_999_999) == "1 ms"


def test_rest_layout_of_a_timing_metric() -> None:
    text = spark_metric_string("timing", [0, 10, 20, 34], (6, 0, 13))
    head, body = text.split("\n")
    assert head == "total (min, med, max (stageId: taskId))"
    assert body == "64 ms (0 ms, 20 ms, 34 ms (stage 6.0: task 13))"


def test_single_value_and_driver_annotation() -> None:
    assert spark_metric_string("size", [842], None) == "842.0 B"
    assert spark_metric_string("size", [1, 2], None).endswith("(driver))")
    assert spark_metric_string("sum", [1000, 234567], None) == "235,567"


@given(
    st.sampled_from(["sum", "size", "timing", "nsTiming", "average"]),
    st.lists(st.integers(min_value=-5, max_value=10**13), max_size=40),
)
def test_string_from_stats_equals_string_from_values(metric_type: str, values: list[int]) -> None:
    valid = sorted(v for v in values if valid_for_spark(metric_type, v))
    total = sum(valid) if metric_type != "sum" else sum(values)
    n = len(valid)
    from_stats = spark_string_from_stats(
        metric_type,
        n,
        total,
        valid[0] if n else 0,
        valid[n // 2] if n else 0,
        valid[-1] if n else 0,
        (1, 0, 7),
    )
    assert from_stats == spark_metric_string(metric_type, values, (1, 0, 7))
