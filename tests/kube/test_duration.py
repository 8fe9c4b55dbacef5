"""``kube.duration.parse_go_duration`` against Go's ``time.ParseDuration`` behaviour."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.duration import (
    MAX_DURATION_SECONDS,
    DurationError,
    DurationOverflowError,
    parse_go_duration,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("-0", 0.0),
        ("90s", 90.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("300ms", 0.3),
        ("2us", 2e-6),
        ("2µs", 2e-6),
        ("-1.5s", -1.5),
        (".5s", 0.5),
        ("1h2m3s4ms", 3723.004),
    ],
)
def test_parses_as_go_does(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("5", 'time: missing unit in duration "5"'),
        ("1m30", 'time: missing unit in duration "1m30"'),
        ("5 s", 'time: invalid duration "5 s"'),
        ("s", 'time: invalid duration "s"'),
        (".s", 'time: invalid duration ".s"'),
        ("1d", 'time: invalid duration "1d"'),
        ("-", 'time: invalid duration "-"'),
    ],
)
def test_errors_are_gos(text: str, message: str) -> None:
    with pytest.raises(DurationError) as info:
        parse_go_duration(text)
    assert str(info.value) == message


@given(
    st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from(["h", "m", "s", "ms"])),
        min_size=1,
        max_size=4,
    )
)
def test_a_sum_of_parts_is_the_sum_of_their_values(parts: list[tuple[int, str]]) -> None:
    unit = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3}
    text = "".join(f"{n}{u}" for n, u in parts)
    assert parse_go_duration(text) == pytest.approx(sum(n * unit[u] for n, u in parts))


@pytest.mark.parametrize(
    "text", ["9999999999999999h", "2562048h", "-2562048h", "1" * 400 + "h", "9223372037s"]
)
def test_beyond_an_int64_of_nanoseconds_is_gos_overflow(text: str) -> None:
    with pytest.raises(DurationOverflowError) as info:
        parse_go_duration(text)
    assert str(info.value) == f'time: invalid duration "{text}"'


def test_the_longest_duration_parses() -> None:
    assert parse_go_duration("2562047h47m16.854775807s") == pytest.approx(MAX_DURATION_SECONDS)
