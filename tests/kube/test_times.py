"""``kube.times``: RFC 3339 as the API writes it, read and written once for every package."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.times import format_micro_time, format_time, parse_rfc3339, parse_time

# 0001-01-01 .. 9999-12-31 are the years RFC 3339 can write; stay within what a float holds
# to the microsecond.
seconds = st.integers(min_value=-(2**34), max_value=2**37)


def test_examples() -> None:
    assert parse_time("1970-01-01T00:01:00Z") == 60.0
    assert parse_time("1970-01-01T01:01:00+01:00") == 60.0
    assert parse_time("1970-01-01t00:01:00z") == 60.0  # RFC 3339 allows lower case
    assert parse_time("1970-01-01T00:00:00.5Z") == 0.5
    assert format_time(60.7) == "1970-01-01T00:01:00Z"  # metav1.Time cuts the fraction
    assert format_micro_time(0.5) == "1970-01-01T00:00:00.500000Z"
    assert format_micro_time(0.9999996) == "1970-01-01T00:00:01.000000Z"


def test_nanoseconds_are_cut_to_microseconds() -> None:
    """The kubelet's stats carry nanoseconds; Python keeps microseconds."""
    assert parse_rfc3339("2024-05-01T10:00:00.123456789Z") == parse_rfc3339(
        "2024-05-01T10:00:00.123456Z"
    )


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-01T10:00:00",  # no zone: Go's time.Parse(RFC3339) refuses it
        "2024-05-01",
        "20240501T100000Z",  # ISO 8601 basic: fromisoformat takes it, no API writes it
        "2024-05-01 10:00:00Z",
        " 2024-05-01T10:00:00Z",
        "2024-05-01T10:00Z",
        "2024-05-01T10:00:00+0100",
        "2024-13-01T10:00:00Z",
        "2024-02-30T10:00:00Z",
        "",
    ],
)
def test_what_is_not_rfc3339_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"RFC 3339|time zone"):
        parse_time(text)


def test_no_zone_says_so() -> None:
    with pytest.raises(ValueError, match="has no time zone"):
        parse_time("2024-01-01T00:00:00")
    with pytest.raises(ValueError, match="has no time zone"):
        parse_time(datetime(2024, 1, 1))  # naive


def test_other_values() -> None:
    assert parse_time(12) == 12.0
    assert parse_time(datetime(1970, 1, 1, 0, 1, tzinfo=UTC)) == 60.0
    for bad in (None, True, [], b"2024-01-01T00:00:00Z"):
        with pytest.raises(ValueError, match="not an RFC 3339 time"):
            parse_time(bad)


@given(seconds)
def test_time_round_trips_whole_seconds(t: int) -> None:
    assert parse_rfc3339(format_time(t)) == t


@given(seconds, st.integers(0, 999_999))
def test_micro_time_round_trips_microseconds(t: int, micros: int) -> None:
    value = t + micros / 1_000_000
    assert abs(parse_rfc3339(format_micro_time(value)) - value) <= 1e-6


@given(seconds, st.integers(-23 * 60, 23 * 60))
def test_any_offset_names_the_same_instant(t: int, minutes: int) -> None:
    zone = timezone(timedelta(minutes=minutes))
    local = datetime.fromtimestamp(t, tz=UTC).astimezone(zone)
    sign = "-" if minutes < 0 else "+"
    offset = f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    text = local.strftime("%Y-%m-%dT%H:%M:%S") + offset
    assert parse_rfc3339(text) == t
