"""The scheduler loop's Prometheus metrics, with kube-scheduler's names (``pkg/scheduler/metrics``).

Families are built at scrape time from plain counters, so the collector carries no global
state and no ``_created`` series kube does not have; kubesim's ``/metrics`` serves the
registry it is registered in (``ApiServer.metrics``), never the process-wide default one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from scheduler.queue import SchedulingQueue
from scheduler.queue.scheduling_queue import ACTIVE_Q, BACKOFF_Q

__all__ = ["RESULTS", "VICTIM_BUCKETS", "SchedulerMetrics"]

RESULTS: Final = ("scheduled", "unschedulable", "error")
VICTIM_BUCKETS: Final = (1, 2, 4, 8, 16, 32, 64)
QUEUES: Final = ("active", "backoff", "unschedulable", "gated")

_PENDING_HELP: Final = (
    "[STABLE] Number of pending pods, by the queue type. 'active' means number of pods in"
    " activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of"
    " pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated'"
    " is the number of unschedulable pods that the scheduler never attempted to schedule"
    " because they are gated."
)
_ATTEMPTS_HELP: Final = (
    "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' means a pod"
    " could not be scheduled, while 'error' means an internal scheduler problem."
)
_PREEMPTION_ATTEMPTS_HELP: Final = "[STABLE] Total preemption attempts in the cluster till now"
_VICTIMS_HELP: Final = "[STABLE] Number of selected preemption victims"


class SchedulerMetrics(Collector):
    """Counters the loop bumps, and the queue it reads the pending pods from.

    * ``scheduler_pending_pods{queue}``: pods in activeQ (``active``), the backoff queues
      (``backoff``), the unschedulable pool (``unschedulable``) and, among the pool, the pods never
      tried because of their scheduling gates (``gated``), read from the queue at scrape time;
    * ``scheduler_schedule_attempts_total{result,profile}``: one per scheduling cycle, ``scheduled``
      (bound), ``unschedulable`` (a fit error) or ``error`` (anything else, a failed bind included);
    * ``scheduler_preemption_attempts_total``: one per PostFilter run (every fit error);
    * ``scheduler_preemption_victims``: a histogram of the victims of each preemption acted on
      (buckets 1, 2, 4, …, 64 as upstream's ``ExponentialBuckets(1, 2, 7)``).
    """

    def __init__(self, queue: Callable[[], SchedulingQueue]) -> None:
        self._queue = queue
        self.attempts: dict[tuple[str, str], int] = {}
        self.preemption_attempts = 0
        self._victim_counts = [0] * len(VICTIM_BUCKETS)
        self._victims_over = 0  # observations above the last bucket
        self._victims_sum = 0

    def schedule_attempt(self, result: str, profile: str) -> None:
        if result not in RESULTS:
            raise ValueError(f"result must be one of {', '.join(RESULTS)}, not {result!r}")
        key = (result, profile)
        self.attempts[key] = self.attempts.get(key, 0) + 1

    def preemption_attempt(self) -> None:
        self.preemption_attempts += 1

    def preemption_victims(self, count: int) -> None:
        self._victims_sum += count
        for i, bound in enumerate(VICTIM_BUCKETS):
            if count <= bound:
                self._victim_counts[i] += 1
                return
        self._victims_over += 1

    def pending_pods(self) -> dict[str, int]:
        counts = dict.fromkeys(QUEUES, 0)
        for where, pinfo in self._queue().queued_pod_infos():
            if where == ACTIVE_Q:
                counts["active"] += 1
            elif where == BACKOFF_Q:
                counts["backoff"] += 1
            elif pinfo.gated:
                counts["gated"] += 1
            else:
                counts["unschedulable"] += 1
        return counts

    def collect(self) -> Iterator[Metric]:
        pending = GaugeMetricFamily("scheduler_pending_pods", _PENDING_HELP, labels=["queue"])
        for queue, n in self.pending_pods().items():
            pending.add_metric([queue], n)
        yield pending
        attempts = CounterMetricFamily(
            "scheduler_schedule_attempts", _ATTEMPTS_HELP, labels=["profile", "result"]
        )
        for (result, profile), n in sorted(self.attempts.items()):
            attempts.add_metric([profile, result], n)
        yield attempts
        yield CounterMetricFamily(
            "scheduler_preemption_attempts",
            _PREEMPTION_ATTEMPTS_HELP,
            value=self.preemption_attempts,
        )
        buckets: list[tuple[str, float]] = []
        running = 0
        for bound, n in zip(VICTIM_BUCKETS, self._victim_counts, strict=True):
            running += n
            buckets.append((str(bound), running))
        buckets.append(("+Inf", running + self._victims_over))
        yield HistogramMetricFamily(
            "scheduler_preemption_victims",
            _VICTIMS_HELP,
            buckets=buckets,
            sum_value=self._victims_sum,
        )
