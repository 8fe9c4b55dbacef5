"""The played drain's clock: the seconds since it started, the budget rounds, when each
terminating pod is gone and each node's ``--timeout`` ends, and the log of what happened when.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Final

from evictor.plan.types import PlanEvent
from kube.objects import DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS, Pod

__all__ = ["DEFAULT_GRACE", "Clock", "grace_period"]

# terminationGracePeriodSeconds when a pod does not say (the API server's default)
DEFAULT_GRACE: Final = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS


def grace_period(pod: Pod, *, evicted: bool, override: int = -1) -> float:
    """How long ``pod`` terminates: none once finished; ``--grace-period`` (``override``, when
    not negative) for the drain's own evictions; else the pod's own, 30 s when unset."""
    if pod.phase in ("Succeeded", "Failed"):
        return 0.0
    if evicted and override >= 0:
        return float(override)
    g = pod.termination_grace_period_seconds
    return float(DEFAULT_GRACE if g is None else g)


class Clock:
    """Time moves from one moment something happens to the next: a terminating pod gone, a
    node's ``--timeout`` over. Everything that happens at one moment is ordered by ``seq``,
    one sequence for the whole play (the scheduler's queue takes its arrivals from it too).

    ``healthy`` gives the budgets' healthy counts each event records.
    """

    def __init__(self, *, healthy: Callable[[], tuple[tuple[str, int], ...]]) -> None:
        self.t = 0.0
        self.round = 0  # the last round of evictions granted
        self.events: list[PlanEvent] = []
        self._seq = itertools.count()
        self._healthy = healthy
        self._gone_at: list[tuple[float, int, str]] = []  # heap: (time, seq, pod key)
        self._deadlines: list[tuple[float, int, str]] = []  # heap: (time, seq, node)

    def seq(self) -> int:
        return next(self._seq)

    def record(self, what: str, pod: str = "", node: str = "", detail: str = "") -> None:
        self.events.append(PlanEvent(self.t, self.round, what, pod, node, detail, self._healthy()))

    def gone_after(self, key: str, after: float) -> None:
        """The pod ``key`` is gone ``after`` seconds from now."""
        heapq.heappush(self._gone_at, (self.t + after, self.seq(), key))

    def deadline_after(self, node: str, after: float) -> None:
        heapq.heappush(self._deadlines, (self.t + after, self.seq(), node))

    def next_time(self, *, live: Callable[[str], bool]) -> float | None:
        """The next moment something happens; a deadline counts while ``live(node)``."""
        times = [self._gone_at[0][0]] if self._gone_at else []
        while self._deadlines and not live(self._deadlines[0][2]):
            heapq.heappop(self._deadlines)
        if self._deadlines:
            times.append(self._deadlines[0][0])
        return min(times) if times else None

    def advance(self, t: float) -> None:
        self.t = max(self.t, t)

    def gone_by(self, t: float) -> Iterator[str]:
        """The pods gone by ``t``, in order; one at a time, so what each causes comes first."""
        while self._gone_at and self._gone_at[0][0] <= t:
            yield heapq.heappop(self._gone_at)[2]

    def deadlines_by(self, t: float) -> Iterator[str]:
        """The nodes whose ``--timeout`` is over by ``t``, in order."""
        while self._deadlines and self._deadlines[0][0] <= t:
            yield heapq.heappop(self._deadlines)[2]
