"""The agent's Prometheus metrics, on a registry of its own (one agent, one registry: tests and
embedded agents never collide in the default registry). Names follow the kubelet's eviction metrics
(``kubelet_evictions{eviction_signal}``, ``kubelet_eviction_stats_age_seconds``:
pkg/kubelet/metrics/metrics.go) under the ``eviction_agent_`` prefix, plus what operators asked the
kubelet for and never got: the configured thresholds and the observed signal values
(kubernetes/kubernetes#90464), and how fast the agent reacts.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["AgentMetrics"]

_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class AgentMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.evictions = Counter(
            "eviction_agent_evictions",
            "Eviction decisions carried out, by signal and result "
            "(evicted, already_gone, dry_run, refused, blocked, failed).",
            ["signal", "result"],
            registry=r,
        )
        self.signal_available = Gauge(
            "eviction_agent_signal_available",
            "Last observed available amount per eviction signal (bytes, inodes or PIDs).",
            ["signal"],
            registry=r,
        )
        self.signal_capacity = Gauge(
            "eviction_agent_signal_capacity",
            "Last observed capacity per eviction signal.",
            ["signal"],
            registry=r,
        )
        self.threshold = Gauge(
            "eviction_agent_threshold",
            "Configured threshold resolved against the last capacity, by signal and kind.",
            ["signal", "kind"],
            registry=r,
        )
        self.stats_age = Histogram(
            "eviction_agent_eviction_stats_age_seconds",
            "Time between when stats were collected and when the pod was evicted.",
            ["signal"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.sync_duration = Histogram(
            "eviction_agent_sync_duration_seconds",
            "Duration of one sync: read stats, decide (actions excluded).",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
            registry=r,
        )
        self.reaction_latency = Histogram(
            "eviction_agent_reaction_latency_seconds",
            "Time from the first observation of a met threshold to the eviction request.",
            ["signal"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.syncs = Counter(
            "eviction_agent_syncs",
            "Syncs run, by what triggered them: interval; psi (a PSI event); memory (the fast "
            "check); memcg (a kernel memory threshold, or memory.events); usage (the usage watch).",
            ["trigger"],
            registry=r,
        )
        self.sync_errors = Counter(
            "eviction_agent_sync_errors",
            "Syncs that failed before deciding (stats unreadable or invalid).",
            registry=r,
        )
        self.evictions_held_back = Counter(
            "eviction_agent_evictions_held_back",
            "Eviction decisions held back by the brake (--max-evictions-per-minute), by signal; "
            "one per sync while a decision waits for room.",
            ["signal"],
            registry=r,
        )
        self.brake_window = Gauge(
            "eviction_agent_evictions_in_brake_window",
            "Evictions carried out in the last 60 s, as the brake counts them.",
            registry=r,
        )
        self.stats_rejected = Counter(
            "eviction_agent_stats_rejected",
            "Syncs skipped because the stats summary held absurd figures (negative, non-finite, "
            "beyond int64, more available than capacity); the reason is logged.",
            registry=r,
        )
        self.kubelet_summary_age = Gauge(
            "eviction_agent_kubelet_summary_age_seconds",
            "Age of the last good kubelet /stats/summary (NaN before the first); its pod disk "
            "figures are dropped once older than three fetch intervals (30 s).",
            registry=r,
        )
        self.node_condition = Gauge(
            "eviction_agent_node_condition",
            "1 while the agent reports the pressure condition (MemoryPressure, ...).",
            ["condition"],
            registry=r,
        )
        self.last_sync = Gauge(
            "eviction_agent_last_sync_timestamp_seconds",
            "Unix time of the last completed sync.",
            registry=r,
        )
        self.api_errors = Counter(
            "eviction_agent_api_errors_total",
            "API answers that failed, by HTTP status code (0: no answer); 401 and 403 counted"
            " after the credentials were refreshed.",
            ["code"],
            registry=r,
        )
        self.wake_source = Gauge(
            "eviction_agent_wake_source",
            "1 per thing that can start a sync between intervals, by source (memcg-threshold, "
            "memory-events, usage-watch, psi, fast-check, interval), target (the file or cgroup) "
            "and mode: announced (the kernel signals), polled (the agent reads at a pace), "
            "refused or unavailable (the reason is in the log).",
            ["source", "target", "mode"],
            registry=r,
        )
        self.ready = Gauge(
            "eviction_agent_ready",
            "1 while /readyz answers 200: pods listed, a sync done, the API server accepting"
            " the agent and the pod watch live (see /readyz for the reason when 0).",
            registry=r,
        )
        self.informer_connected = Gauge(
            "eviction_agent_pod_watch_connected",
            "1 while the pod list/watch is connected to the API server.",
            registry=r,
        )

    def start_at_zero(self, signals: Iterable[str], outcomes: Iterable[str]) -> None:
        """Export every per-signal eviction series at 0 before the first eviction.

        Prometheus's ``rate()`` and ``increase()`` count from a series' first sample, so a
        labelled counter whose series appears at 1 (prometheus_client creates a child on its
        first ``inc``) hides that first eviction from every dashboard and alert; on a node that
        evicts once a week, that is every eviction. The signals are the configured thresholds'
        (and the local-storage limits' when they can be evicted for).
        """
        results = tuple(outcomes)
        for signal in signals:
            for result in results:
                self.evictions.labels(signal, result)
            self.evictions_held_back.labels(signal)
            self.reaction_latency.labels(signal)
            self.stats_age.labels(signal)
