"""SchedulingThroughput, sampled as upstream's ``throughputCollector`` samples it.

Every second the number of measured pods bound so far is sampled; the first sample is only the
start, a second with nothing new is merged into the next, each sample is new pods over its
duration, and the figure is the average of the samples (percentiles beside it). A run shorter
than two samples has no such figure (upstream warns and reports none).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from .objects import labels_match

__all__ = ["SAMPLE_INTERVAL", "Collector"]

SAMPLE_INTERVAL: Final = 1.0  # throughputSampleInterval


@dataclass(slots=True)
class Collector:
    """upstream's ``throughputCollector``: pods of ``namespaces`` (matching ``selector``)
    seen going from unbound to bound, sampled each second from ``started`` to ``stopped``.

    Bind times are recorded and the samples taken afterwards at the ticks (``samples``), so
    an observer that hears of binds late (a watch behind a busy server) still counts each
    one in the second it happened.
    """

    name: str
    namespaces: frozenset[str]
    selector: Mapping[str, str]
    started: float
    binds: list[float] = field(default_factory=list)
    stopped: float | None = None

    def bound(self, namespace: str, labels: Mapping[str, str], at: float) -> None:
        if namespace in self.namespaces and (
            not self.selector or labels_match(labels, self.selector)
        ):
            self.binds.append(at)

    @property
    def scheduled(self) -> int:
        return len(self.binds)

    @property
    def last_bound(self) -> float | None:
        return max(self.binds) if self.binds else None

    def samples(self) -> list[float]:
        """The throughput samples of the ticks up to ``stopped``: nothing until a pod is
        bound; the first tick after that only starts the clock; a tick with nothing new is
        merged into the next; each sample is new pods over its seconds, repeated once per
        tick it covers."""
        binds = sorted(self.binds)
        end = self.stopped if self.stopped is not None else (binds[-1] if binds else 0.0)
        out: list[float] = []
        last_count, last_time, began, skipped = 0, 0.0, False, 0
        tick = self.started + SAMPLE_INTERVAL
        while tick <= end:
            scheduled = bisect_right(binds, tick)
            if scheduled and not began:
                began = True
                last_count, last_time = scheduled, tick
            elif scheduled:
                if scheduled == last_count:
                    skipped += 1
                else:
                    rate = (scheduled - last_count) / (tick - last_time)
                    out.extend([rate] * (skipped + 1))
                    skipped = 0
                    last_count, last_time = scheduled, tick
            tick += SAMPLE_INTERVAL
        return out

    def summary(self) -> dict[str, float] | None:
        s = sorted(self.samples())
        if not s:
            return None
        n = len(s)

        def perc(p: int) -> float:
            return s[math.ceil(n * p / 100) - 1]

        return {
            "Average": sum(s) / n,
            "Perc50": perc(50),
            "Perc90": perc(90),
            "Perc95": perc(95),
            "Perc99": perc(99),
        }
