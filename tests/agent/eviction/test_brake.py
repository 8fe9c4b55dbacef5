"""The brake's invariant: never more than N evictions let through in any 60 s window."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.eviction.brake import EvictionBrake
from tests.support.clock import FakeClock

steps = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=30, allow_nan=False),  # time to the next request
        st.booleans(),  # whether that eviction evicted (else the slot is released)
    ),
    max_size=200,
)


def max_in_any_window(times: list[float], window: float = 60.0) -> int:
    best = 0
    for i, t in enumerate(times):
        best = max(best, sum(1 for u in times[i:] if u - t < window))
    return best


@given(st.integers(min_value=1, max_value=12), steps)
def test_never_more_than_n_in_any_60s_window(
    limit: int, sequence: list[tuple[float, bool]]
) -> None:
    clock = FakeClock(0.0)
    brake = EvictionBrake(limit, clock)
    through: list[float] = []
    for dt, evicted in sequence:
        clock.step(dt)
        slot = brake.acquire()
        if slot is None:
            assert brake.in_window() == limit and brake.retry_after() > 0
            continue
        if evicted:
            through.append(clock.now())
        else:
            brake.release(slot)
    assert max_in_any_window(through) <= limit


@given(st.integers(min_value=1, max_value=12), steps)
def test_a_full_window_refuses_until_the_oldest_slot_is_60s_old(
    limit: int, sequence: list[tuple[float, bool]]
) -> None:
    clock = FakeClock(0.0)
    brake = EvictionBrake(limit, clock)
    for dt, _ in sequence:
        clock.step(dt)
        brake.acquire()
    wait = brake.retry_after()
    if wait > 0:
        assert brake.acquire() is None
        clock.step(wait + 1e-6)  # (float steps: wait is exact only up to rounding)
        assert brake.acquire() is not None


def test_forced_slots_pass_a_full_window_and_count_in_it() -> None:
    clock = FakeClock(0.0)
    brake = EvictionBrake(2, clock)
    assert brake.acquire() is not None and brake.acquire() is not None
    assert brake.acquire() is None
    clock.step(1.0)
    forced = brake.acquire(force=True)
    assert forced is not None and forced.forced
    assert brake.in_window() == 3
    clock.step(58.5)
    assert brake.acquire() is None
    clock.step(0.5)  # the first two are 60 s old: one free slot (the forced one still counts)
    assert brake.in_window() == 1
    assert brake.acquire() is not None and brake.acquire() is None


def test_zero_is_unlimited() -> None:
    brake = EvictionBrake(0, FakeClock(0.0))
    assert all(brake.acquire() is not None for _ in range(1000))
    assert brake.retry_after() == 0.0
