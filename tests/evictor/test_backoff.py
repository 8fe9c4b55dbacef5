"""The retry loops' delays come from tenacity's strategies, driven by the loop's attempt count."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evictor.backoff import RETRY_BACKOFF, WATCH_BACKOFF, delay


@given(st.integers(min_value=1, max_value=10_000))
def test_retry_backoff_doubles_from_0_2_s_with_jitter_and_stops_at_5_s(attempt: int) -> None:
    base = min(0.2 * 2.0 ** (min(attempt, 64) - 1), 5.0)
    assert base <= delay(RETRY_BACKOFF, attempt) <= min(base + 0.2, 5.0)


def test_watch_backoff_is_capped_at_10_s() -> None:
    assert 0.2 <= delay(WATCH_BACKOFF, 1) <= 0.7
    assert delay(WATCH_BACKOFF, 50) == 10.0


def test_attempt_zero_counts_as_the_first() -> None:
    assert delay(RETRY_BACKOFF, 0) <= 0.4
