"""The queue's per-pod record, its ordering and the backoff arithmetic: kube-scheduler's
``framework.QueuedPodInfo``, the QueueSort plugin ``PrioritySort.Less`` and the queue's
``calculateBackoffDuration``, so pods are ordered and backed off as kube-scheduler does it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import overload

from kube.objects import Pod, PodAffinityTerm
from scheduler.queue.events import ClusterEvent

__all__ = ["QueuedPodInfo", "backoff_duration", "less"]


class QueuedPodInfo:
    """``framework.QueuedPodInfo``: a pod plus the queue's bookkeeping (mutable).

    ``timestamp`` is the time of the last add or re-add (it orders pods of equal priority, and a
    retried pod goes behind pods that were queued before its retry —
    TestRecentlyTriedPodsGoBack), ``attempts`` counts pops, ``unschedulable_count`` plugin
    rejections and ``consecutive_errors_count`` failures without a rejecting plugin (reset by
    the next plugin rejection). ``backoff_expiration`` caches the end of the backoff (``None``
    is Go's zero time, i.e. "no backoff"); it is cleared on every re-add.
    """

    __slots__ = (
        "attempts",
        "backoff_expiration",
        "consecutive_errors_count",
        "gating_plugin",
        "gating_plugin_events",
        "initial_attempt_timestamp",
        "pending_plugins",
        "pod",
        "timestamp",
        "unschedulable_count",
        "unschedulable_plugins",
    )

    def __init__(
        self,
        pod: Pod,
        timestamp: float,
        *,
        attempts: int = 0,
        unschedulable_count: int = 0,
        consecutive_errors_count: int = 0,
        unschedulable_plugins: Iterable[str] = (),
        pending_plugins: Iterable[str] = (),
        gating_plugin: str | None = None,
        initial_attempt_timestamp: float | None = None,
        backoff_expiration: float | None = None,
        gating_plugin_events: Iterable[ClusterEvent] = (),
    ) -> None:
        self.pod = pod
        self.timestamp = timestamp
        self.attempts = attempts
        self.unschedulable_count = unschedulable_count
        self.consecutive_errors_count = consecutive_errors_count
        self.unschedulable_plugins: set[str] = set(unschedulable_plugins)
        self.pending_plugins: set[str] = set(pending_plugins)
        self.gating_plugin = gating_plugin or None
        self.initial_attempt_timestamp = initial_attempt_timestamp
        self.backoff_expiration = backoff_expiration
        self.gating_plugin_events: tuple[ClusterEvent, ...] = tuple(gating_plugin_events)

    @property
    def gated(self) -> bool:
        """``Gated()``: a PreEnqueue plugin holds the pod back."""
        return self.gating_plugin is not None

    @property
    def required_affinity_terms(self) -> tuple[PodAffinityTerm, ...]:
        """``PodInfo.RequiredAffinityTerms``: required pod-affinity (not anti-affinity) terms."""
        affinity = self.pod.affinity
        if affinity is None or affinity.pod_affinity is None:
            return ()
        return affinity.pod_affinity.required

    def rejector_plugins(self) -> set[str]:
        return self.unschedulable_plugins | self.pending_plugins

    def __repr__(self) -> str:
        gate = f" gated by {self.gating_plugin}" if self.gating_plugin else ""
        return (
            f"<QueuedPodInfo {self.pod.key} priority={self.pod.priority} ts={self.timestamp}"
            f" attempts={self.attempts}{gate}>"
        )


def less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """``PrioritySort.Less``: priority descending, then queue timestamp ascending; equal
    priority and equal timestamp is a tie."""
    pa, pb = a.pod.priority, b.pod.priority
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


@overload
def backoff_duration(count: int, initial: int, maximum: int) -> int: ...
@overload
def backoff_duration(count: int, initial: float, maximum: float) -> float: ...


def backoff_duration(count: int, initial: float, maximum: float) -> float:
    """``calculateBackoffDuration(count)``: ``min(initial * 2**(count-1), maximum)``, 0 for 0.

    Integers stay integers (Go durations are integer nanoseconds), floats stay floats. The cap
    is checked before the doubling (``initial`` against ``maximum >> (count-1)``), so huge
    counts neither overflow nor lose the cap; a
    ``maximum`` of 0 gives 0 for every count, which is how ``podMaxBackoff == 0`` disables
    backoff.
    """
    if isinstance(count, bool) or not isinstance(count, int):
        raise TypeError(f"backoff count must be an int, not {count!r}")
    if count < 0:
        raise ValueError(f"backoff count must not be negative, got {count}")
    if (
        isinstance(initial, int)
        and isinstance(maximum, int)
        and not isinstance(initial, bool)
        and not isinstance(maximum, bool)
    ):
        if count == 0:
            return 0
        shift = count - 1
        if initial > maximum >> shift:
            return maximum
        return initial << shift
    if count == 0:
        return 0.0
    shift = count - 1
    if initial > math.ldexp(maximum, -shift):
        return float(maximum)
    return math.ldexp(initial, shift)
