"""Durations (Go style, ``1h30m``) and byte sizes (``64MiB``) as the config reads and shows them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lakefs_mirror_dagster.config import format_duration, parse_byte_size, parse_duration
from tests.config.config_data import MiB


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1m", timedelta(minutes=1)),
        ("20s", timedelta(seconds=20)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("500ms", timedelta(milliseconds=500)),
        ("1.5h", timedelta(minutes=90)),
        ("2m3s4ms", timedelta(minutes=2, seconds=3, milliseconds=4)),
        ("300us", timedelta(microseconds=300)),
        ("1500ns", timedelta(microseconds=2)),  # rounded to timedelta's microsecond resolution
        ("0", timedelta(0)),
        (" 45s ", timedelta(seconds=45)),
        ("-1m", timedelta(minutes=-1)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "10", "1d", "m", "1x", "1m-", "1 m", "one minute", "1h 30m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def test_days_get_a_hint() -> None:
    with pytest.raises(ValueError, match="24h"):
        parse_duration("1d")


@pytest.mark.parametrize(
    "value", [timedelta(0), timedelta(minutes=90), timedelta(milliseconds=1500), timedelta(microseconds=7)]
)
def test_format_duration_round_trips(value: timedelta) -> None:
    assert parse_duration(format_duration(value)) == value


def test_format_duration_is_short() -> None:
    assert format_duration(timedelta(minutes=90)) == "1h30m"
    assert format_duration(timedelta(seconds=20)) == "20s"
    assert format_duration(timedelta(milliseconds=500)) == "500ms"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("64MiB", 64 * MiB), ("16 MiB", 16 * MiB), ("1GB", 10**9), ("1.5KiB", 1536), (1024, 1024), ("77", 77)],
)
def test_parse_byte_size(value: str | int, expected: int) -> None:
    assert parse_byte_size(value) == expected


@pytest.mark.parametrize("value", ["64M", "1.3B", "lots", "-1", "5 parsecs"])
def test_parse_byte_size_rejects(value: str) -> None:
    with pytest.raises(ValueError, match="invalid byte size"):
        parse_byte_size(value)
