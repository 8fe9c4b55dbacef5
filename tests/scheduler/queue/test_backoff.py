"""Backoff: the duration rule, the 1 s ordering window of PopFromBackoffQ, the two heaps."""

from __future__ import annotations

import pytest

from scheduler.queue import QueuedPodInfo, SchedulingQueue, backoff_duration
from scheduler.queue.scheduling_queue import ACTIVE_Q, BACKOFF_Q
from tests.support.clock import T0, FakeClock
from tests.support.objects import mkpod


def test_backoff_duration_sequence_with_defaults() -> None:
    assert [backoff_duration(n, 1, 10) for n in range(1, 8)] == [1, 2, 4, 8, 10, 10, 10]
    assert [backoff_duration(n, 1.0, 10.0) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_backoff_duration_keeps_the_type_and_zero_for_zero() -> None:
    assert backoff_duration(0, 1, 10) == 0 and type(backoff_duration(0, 1, 10)) is int
    assert type(backoff_duration(3, 1, 10)) is int
    assert type(backoff_duration(0, 1.0, 10.0)) is float
    assert type(backoff_duration(3, 0.5, 10.0)) is float
    assert backoff_duration(3, 0.5, 10.0) == 2.0


def test_backoff_duration_is_overflow_safe() -> None:
    # Upstream's overflow cases, in nanoseconds.
    assert backoff_duration(16, 1, 32) == 32
    assert backoff_duration(32, 1, 2**31 - 1) == 2**31 - 1
    assert backoff_duration(64, 1, 2**63 - 1) == 2**63 - 1
    assert backoff_duration(10**9, 1, 10) == 10
    assert backoff_duration(10**9, 1.0, 10.0) == 10.0
    assert backoff_duration(5, 0, 10) == 0


def test_backoff_duration_zero_max_disables_backoff() -> None:
    assert [backoff_duration(n, 1, 0) for n in range(5)] == [0] * 5


def test_backoff_duration_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        backoff_duration(-1, 1, 10)
    with pytest.raises(TypeError, match="must be an int"):
        backoff_duration(1.5, 1, 10)  # type: ignore[call-overload]


def expiration_after(count: int, *, errors: bool = False, ts: float = T0) -> float | None:
    q = SchedulingQueue(FakeClock())
    pinfo = QueuedPodInfo(mkpod("p"), ts)
    if errors:
        pinfo.consecutive_errors_count = count
    else:
        pinfo.unschedulable_count = count
    return q.get_backoff_time(pinfo)


def test_queue_backoff_sequence_1_2_4_8_10_10() -> None:
    got = [expiration_after(n) for n in range(1, 7)]
    assert [e - T0 for e in got if e is not None] == [1, 2, 4, 8, 10, 10]
    assert expiration_after(0) is None  # never tried: no backoff


def test_error_count_takes_precedence_over_unschedulable_count() -> None:
    q = SchedulingQueue(FakeClock())
    pinfo = QueuedPodInfo(mkpod("p"), T0, unschedulable_count=5, consecutive_errors_count=1)
    assert q.get_backoff_time(pinfo) == T0 + 1


def test_expiration_is_truncated_to_the_second_and_cached() -> None:
    q = SchedulingQueue(FakeClock())
    pinfo = QueuedPodInfo(mkpod("p"), T0 + 0.75, unschedulable_count=1)
    assert q.get_backoff_time(pinfo) == T0 + 1  # floor(T0 + 1.75)
    pinfo.unschedulable_count = 4
    assert q.get_backoff_time(pinfo) == T0 + 1  # cached until the next re-add


def test_zero_max_backoff_disables_backoff_in_the_queue() -> None:
    c = FakeClock()
    q = SchedulingQueue(c, pod_max_backoff=0.0)
    pinfo = QueuedPodInfo(mkpod("p"), T0, unschedulable_count=3)
    assert q.get_backoff_time(pinfo) is None
    assert not q.is_pod_backing_off(pinfo)


@pytest.mark.parametrize(
    ("elapsed", "backing_off"),
    [(0.0, True), (0.999, True), (1.0, True), (1.999, True), (2.0, False), (5.0, False)],
)
def test_still_backing_off_inside_the_expiration_window(elapsed: float, backing_off: bool) -> None:
    """``!expiration.Before(truncate(now, 1s))``: the expiration's own second still counts."""
    c = FakeClock()
    q = SchedulingQueue(c)
    pinfo = QueuedPodInfo(mkpod("p"), T0, unschedulable_count=1)  # expires at T0 + 1
    c.step(elapsed)
    assert q.is_pod_backing_off(pinfo) is backing_off


def backoff_pod(
    q: SchedulingQueue, name: str, priority: int, ts: float, *, error: bool = False
) -> QueuedPodInfo:
    """Put a pod into the backoff queue as if it failed once at ``ts``."""
    pod = mkpod(name, priority)
    pinfo = QueuedPodInfo(pod, ts, attempts=1, unschedulable_count=0 if error else 1)
    if error:
        pinfo.consecutive_errors_count = 1
    else:
        pinfo.unschedulable_plugins = {"plugin"}
    q._add_to_backoff(pinfo)
    return pinfo


def test_backoff_queue_ordering_within_a_window_is_by_priority() -> None:
    """TestBackoffQueueOrdering (PopFromBackoffQ enabled)."""
    c = FakeClock()
    q = SchedulingQueue(c)
    backoff_pod(q, "pod0", 1, T0)
    backoff_pod(q, "pod1", 1, T0 - 1)
    backoff_pod(q, "pod2", 2, T0 - 2 + 0.001)
    backoff_pod(q, "pod3", 1, T0 - 2)
    backoff_pod(q, "pod4", 2, T0 - 2)
    backoff_pod(q, "pod5", 1, T0 - 3)
    moved = q.flush_backoff_q_completed()
    assert [p.pod.name for p in moved] == ["pod5", "pod4", "pod2", "pod3"]
    assert [q.where(f"default/{n}") for n in ("pod0", "pod1")] == [BACKOFF_Q, BACKOFF_Q]
    assert all(q.where(p.pod) == ACTIVE_Q for p in moved)


@pytest.mark.parametrize(
    ("in_backoff", "moved"),
    [
        ([], []),
        (["pod0", "pod1"], ["pod0"]),
        (["pod2", "pod3"], ["pod2"]),
        (["pod0", "pod1", "pod2", "pod3"], ["pod0", "pod2"]),
        (["pod0", "pod2"], ["pod0", "pod2"]),
        (["pod1", "pod3"], []),
    ],
)
def test_flush_moves_completed_pods_of_both_heaps(in_backoff: list[str], moved: list[str]) -> None:
    """TestBackoffQueue_popEachBackoffCompleted: podBackoffQ first, then podErrorBackoffQ."""
    c = FakeClock(T0 + 0.5)
    q = SchedulingQueue(c)
    specs = {
        "pod0": (T0 - 2, False),
        "pod1": (T0 + 1, False),
        "pod2": (T0 - 2, True),
        "pod3": (T0 + 1, True),
    }
    for name in in_backoff:
        ts, error = specs[name]
        backoff_pod(q, name, 0, ts, error=error)
    got = q.flush_backoff_q_completed()
    assert [p.pod.name for p in got] == moved
    assert len(q.pods_in_backoff_q()) == len(in_backoff) - len(moved)


def test_error_backoff_queue_is_ordered_by_expiration_only() -> None:
    c = FakeClock(T0 + 100)
    q = SchedulingQueue(c)
    backoff_pod(q, "late-high", 100, T0 + 5, error=True)
    backoff_pod(q, "early-low", 1, T0, error=True)
    assert [p.pod.name for p in q.flush_backoff_q_completed()] == ["early-low", "late-high"]


def test_pop_prefers_active_q_over_completed_backoff() -> None:
    c = FakeClock(T0 + 100)
    q = SchedulingQueue(c)
    backoff_pod(q, "backoff-high", 100, T0)
    q.add(mkpod("active-low", 1))
    first = q.pop()
    assert first is not None and first.pod.name == "active-low"
    second = q.pop()
    assert second is not None and second.pod.name == "backoff-high"


def test_pop_from_backoff_head_even_while_backing_off() -> None:
    c = FakeClock()
    q = SchedulingQueue(c)
    backoff_pod(q, "later", 1, T0 + 5)
    backoff_pod(q, "sooner", 1, T0 + 2)
    p = q.pop()
    assert p is not None and p.pod.name == "sooner"
    assert q.is_pod_backing_off(p)
    assert p.attempts == 2


def test_full_backoff_flow_for_a_repeatedly_rejected_pod() -> None:
    """TestBackOffFlow: each rejection doubles the wait, capped at 10 s."""
    c = FakeClock()
    q = SchedulingQueue(c)
    pod = mkpod("p")
    q.add(pod)
    waits = []
    for _ in range(6):
        p = q.pop()
        assert p is not None
        p.unschedulable_plugins = {"NodeResourcesFit"}
        # A move request during the attempt sends it to the backoff queue.
        q.activate([pod])
        q.add_unschedulable_if_not_present(p, q.scheduling_cycle)
        assert q.where(pod) == BACKOFF_Q
        start = c.t
        while not q.flush_backoff_q_completed():
            c.step(0.25)
        waits.append(c.t - start)
    # Truncation to whole seconds plus the "same window is still backing off" rule means the
    # pod leaves one window after its nominal expiration.
    assert waits == [2.0, 3.0, 5.0, 9.0, 11.0, 11.0]
