"""Parsing of times, durations, cpu and memory quantities."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from leasehold.api.durations import (
    NegativeValueError,
    describe,
    format_cpu,
    format_duration,
    format_seconds,
    parse_cpu,
    parse_duration,
    parse_memory,
)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (0, 0.0),
        (90, 90.0),
        (1.5, 1.5),
        ("90", 90.0),
        ("2.5", 2.5),
        ("90s", 90.0),
        ("5m", 300.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("1h30m", 5400.0),
        ("1h 30m", 5400.0),
        ("1d2h3m4s", 86400 + 7200 + 180 + 4),
        ("1.5h", 5400.0),
        (".5m", 30.0),
        ("0.1h", 360.0),  # exact: no float drift from 0.1 * 3600
        ("  10s ", 10.0),
    ],
)
def test_parse_duration_accepts(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (-1, "must not be negative, got -1"),
        (-0.5, "must not be negative, got -0.5"),
        ("-5m", 'must not be negative, got "-5m"'),
        ("-10", 'must not be negative, got "-10"'),
        ("", 'invalid duration ""'),
        ("5x", 'invalid duration "5x"'),
        ("h", 'invalid duration "h"'),
        ("1H", 'invalid duration "1H"'),
        ("1h30", 'invalid duration "1h30"'),
        ("500ms", 'invalid duration "500ms"'),
        ("30m1h", "units must go from largest to smallest"),
        ("1h1h", "units must go from largest to smallest"),
        ("1e3", 'invalid duration "1e3"'),
        (True, "got true"),
        (None, "got null"),
        ([1], "got a list"),
        (float("nan"), "must be a finite number"),
        (float("inf"), "must be a finite number"),
    ],
)
def test_parse_duration_rejects(value: object, fragment: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        parse_duration(value)
    assert fragment in str(excinfo.value)


def test_malformed_duration_message_shows_accepted_forms() -> None:
    with pytest.raises(ValueError, match=r'e\.g\. "90s", "5m", "1h30m", "1\.5h"'):
        parse_duration("soon")


@pytest.mark.parametrize(
    ("value", "millicores"),
    [
        (1, 1000),
        (0.5, 500),
        (0.1, 100),  # exact: 0.1 * 1000 in floats would round up to 101
        (4, 4000),
        ("2", 2000),
        ("0.25", 250),
        ("500m", 500),
        ("1500m", 1500),
        ("0.0001", 1),  # below Kubernetes' 1m precision: rounded up, never down
        ("1.5m", 2),
        (0, 0),
    ],
)
def test_parse_cpu_accepts(value: object, millicores: int) -> None:
    result = parse_cpu(value)
    assert result == millicores
    assert isinstance(result, int)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (-1, "must not be negative, got -1"),
        ("-500m", 'must not be negative, got "-500m"'),
        ("2 cores", 'invalid cpu quantity "2 cores"'),
        ("500M", 'invalid cpu quantity "500M"'),
        ("m", 'invalid cpu quantity "m"'),
        (True, "got true"),
        (None, "got null"),
    ],
)
def test_parse_cpu_rejects(value: object, fragment: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        parse_cpu(value)
    assert fragment in str(excinfo.value)


@pytest.mark.parametrize(
    ("value", "mib"),
    [
        (1024, 1024),
        (256, 256),
        (0.5, 1),
        ("1024", 1024),
        ("512Mi", 512),
        ("1Gi", 1024),
        ("1.5Gi", 1536),
        ("2048Ki", 2),
        ("1Ti", 1024 * 1024),
        ("1G", 954),  # 10^9 bytes = 953.67 MiB, rounded up
        ("1M", 1),  # 10^6 bytes = 0.95 MiB, rounded up
        ("1000k", 1),
        ("1048576K", 1000),
        ("512 Mi", 512),
    ],
)
def test_parse_memory_accepts(value: object, mib: int) -> None:
    result = parse_memory(value)
    assert result == mib
    assert isinstance(result, int)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (-1, "must not be negative, got -1"),
        ("-1Gi", 'must not be negative, got "-1Gi"'),
        ("1GB", '(did you mean "1G"?)'),
        ("1GiB", '(did you mean "1Gi"?)'),
        ("512m", '(did you mean "512Mi"?)'),
        ("lots", 'invalid memory quantity "lots"'),
        ("1Xi", 'invalid memory quantity "1Xi"'),
        (False, "got false"),
    ],
)
def test_parse_memory_rejects(value: object, fragment: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        parse_memory(value)
    assert fragment in str(excinfo.value)


@pytest.mark.parametrize(
    ("seconds", "text"), [(3600.0, "3600s"), (0.0, "0s"), (1.5, "1.5s"), (0.1, "0.1s")]
)
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


@pytest.mark.parametrize(("seconds", "text"), [
    pytest.param(5400, "1h30m", id="hours-and-minutes"),
    pytest.param(3600.0, "1h", id="an-hour"),
    pytest.param(90, "1m30s", id="minutes-and-seconds"),
    pytest.param(86400 + 61, "1d1m1s", id="a-unit-skipped"),
    pytest.param(1.5, "1.5s", id="fractions-of-a-second"),
    pytest.param(3599.9999, "1h", id="to-the-millisecond"),
    pytest.param(60.25, "1m0.25s", id="milliseconds-after-minutes"),
    pytest.param(0, "0s", id="zero"),
])
def test_format_duration_writes_a_duration_as_users_do(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds, abs=5e-4)


@pytest.mark.parametrize(
    ("millicores", "text"), [(1000, "1 core"), (4000, "4 cores"), (500, "500m")]
)
def test_format_cpu(millicores: int, text: str) -> None:
    assert format_cpu(millicores) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [("x", '"x"'), (3, "3"), (-3.0, "-3"), (2.5, "2.5"), (None, "null"), ({}, "a mapping")],
)
def test_describe(value: object, text: str) -> None:
    assert describe(value) == text


def test_parsed_durations_are_finite_floats() -> None:
    value = parse_duration("1d")
    assert isinstance(value, float)
    assert math.isfinite(value)


@pytest.mark.parametrize(
    ("parse", "value"),
    [
        (parse_duration, -1),
        (parse_duration, "-5m"),
        (parse_cpu, "-500m"),
        (parse_cpu, -2),
        (parse_memory, "-1Gi"),
        (parse_memory, -1),
    ],
)
def test_negative_values_raise_negative_value_error(
    parse: Callable[[object], object], value: object
) -> None:
    with pytest.raises(NegativeValueError):
        parse(value)


def test_malformed_values_are_not_reported_as_negative() -> None:
    with pytest.raises(ValueError) as excinfo:
        parse_duration("-x")
    assert not isinstance(excinfo.value, NegativeValueError)
