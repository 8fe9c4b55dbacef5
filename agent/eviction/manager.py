"""The eviction manager: the kubelet's ``managerImpl``, one ``synchronize`` per sync
(``pkg/kubelet/eviction/eviction_manager.go``). It decides; it does not act: the caller evicts,
writes the condition and the Event, and waits for the pod to be gone before the next sync.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from agent.eviction.admission import PodAdmitResult, admit_pod
from agent.eviction.helpers import (
    REASON,
    build_signal_to_node_reclaim_funcs,
    build_signal_to_rank_func,
    disk_usage,
    evict_message,
    get_reclaimable_threshold,
    has_node_condition,
    is_hard_eviction_threshold,
    make_signal_observations,
    merge_thresholds,
    node_conditions,
    node_conditions_last_observed_at,
    node_conditions_observed_since,
    sort_thresholds_by_eviction_priority,
    thresholds_first_observed_at,
    thresholds_met,
    thresholds_met_grace_period,
    thresholds_updated_stats,
    update_container_fs_thresholds,
)
from agent.eviction.pods import (
    VolumesFunc,
    is_critical_pod,
    pod_ephemeral_storage_limit,
    pod_volume_infos,
)
from agent.eviction.preference import apply_eviction_preference, is_eviction_forbidden
from agent.eviction.quantity import format_request
from agent.eviction.summary import PodStats, Summary
from agent.eviction.thresholds import Threshold
from agent.eviction.types import (
    IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS,
    Clock,
    EvictionDecision,
    ManagerConfig,
    NodeCondition,
    NodeReclaim,
    Observation,
    StatsFunc,
)
from kube.conditions import DISRUPTION_TARGET
from kube.objects import DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS, Pod, PodCondition

__all__ = [
    "SIGNAL_EMPTY_DIR_FS_LIMIT",
    "SIGNAL_EPHEMERAL_CONTAINER_FS_LIMIT",
    "SIGNAL_EPHEMERAL_POD_FS_LIMIT",
    "TERMINATION_BY_KUBELET",
    "EvictionManager",
    "EvictionSyncError",
    "SyncRecord",
    "effective_grace_period_seconds",
]

log = logging.getLogger(__name__)

TERMINATION_BY_KUBELET: Final = "TerminationByKubelet"
SIGNAL_EMPTY_DIR_FS_LIMIT: Final = "emptydirfs.limit"
SIGNAL_EPHEMERAL_POD_FS_LIMIT: Final = "ephemeralpodfs.limit"
SIGNAL_EPHEMERAL_CONTAINER_FS_LIMIT: Final = "ephemeralcontainerfs.limit"

_EMPTY_DIR_MESSAGE: Final = 'Usage of EmptyDir volume "{}" exceeds the limit "{}". '
_POD_EPHEMERAL_MESSAGE: Final = (
    "Pod ephemeral local storage usage exceeds the total limit of containers {}. "
)
_CONTAINER_EPHEMERAL_MESSAGE: Final = (
    'Container {} exceeded its local ephemeral storage limit "{}". '
)


class EvictionSyncError(RuntimeError):
    """A sync that could not run (filesystem layout unknown, or a split fs with the gate off)."""


def effective_grace_period_seconds(override: int, pod: Pod) -> int:
    """The grace the pod worker gives ``pod`` for an eviction with ``override`` (see module doc).

    This follows the spec's pod-worker rules (``calculateEffectiveGracePeriod`` before it tracked
    an ``overridden`` flag): 0 falls back to the pod's ``terminationGracePeriodSeconds`` (30 when
    unset, the API default), below 1 becomes 1. The newest kubelet marks an explicit 0 as
    overridden, which turns it into 1 s; the agent keeps the documented fallback.
    """
    if override == 0:
        override = (
            pod.termination_grace_period_seconds
            if pod.termination_grace_period_seconds is not None
            else DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
        )
    return max(override, 1)


@dataclass(slots=True)
class SyncRecord:
    """What the last sync saw and decided, for explanations (``eviction-agent rank``)."""

    time: float
    observations: dict[str, Observation] = field(default_factory=dict)
    met: list[Threshold] = field(default_factory=list)
    active: list[Threshold] = field(default_factory=list)
    node_conditions: list[str] = field(default_factory=list)
    threshold_to_reclaim: Threshold | None = None
    resource_to_reclaim: str = ""
    # the node Event the kubelet records (Warning, reason EvictionThresholdMet), when any
    threshold_met_event: str = ""
    reclaimed_at_node_level: bool = False
    ranking: list[Pod] = field(default_factory=list)
    skipped: list[tuple[Pod, str]] = field(default_factory=list)
    decisions: list[EvictionDecision] = field(default_factory=list)


class EvictionManager:
    """``managerImpl`` without its goroutine: call ``synchronize`` with fresh stats each loop.

    A failed stats read is not a sync: the kubelet skips it silently, so the caller does not call
    ``synchronize`` without fresh stats (grace timers must not advance on no data).

    Grace periods (``EvictionDecision.grace_period_override``) are the kubelet's raw override: 1
    for hard thresholds and local-storage evictions (``immediateEvictionGracePeriodSeconds``,
    kubernetes/kubernetes#124063), and for soft thresholds ``max_pod_grace_period_seconds``,
    lowered to the pod's ``terminationGracePeriodSeconds`` when it sets one.
    ``effective_grace_period_seconds`` applies the pod worker's rules to it: 0 means "no
    override" (the pod's own grace, 30 s if unset — so the default max-pod-grace of 0 gives soft
    evictions the pod's full grace, not "immediately" as the docs claim), and anything below 1
    becomes 1 (a negative max-pod-grace means 1 s, not "defer to the pod";
    kubernetes/kubernetes#118172).
    """

    def __init__(
        self,
        config: ManagerConfig,
        clock: Clock,
        *,
        node_reclaim: NodeReclaim | None = None,
        pod_volumes: VolumesFunc | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.node_reclaim = node_reclaim
        self.pod_volumes: VolumesFunc = pod_volumes or pod_volume_infos
        self.thresholds: list[Threshold] = list(config.thresholds)
        self.dedicated_image_fs: bool | None = None
        self.split_container_image_fs: bool | None = None
        self.signal_to_rank_func: dict[str, Callable[[list[Pod], StatsFunc], list[Pod]]] = {}
        self.signal_to_node_reclaim_funcs: dict[str, list[Callable[[], None]]] = {}
        self.node_conditions: list[str] = []
        self.thresholds_first_observed_at: dict[Threshold, float] = {}
        self.node_conditions_last_observed_at: dict[str, float] = {}
        self.thresholds_met: list[Threshold] = []
        self.last_observations: dict[str, Observation] = {}
        self.last_sync: SyncRecord | None = None

    # --- state queries ---------------------------------------------------------------------

    def is_under_memory_pressure(self) -> bool:
        return has_node_condition(self.node_conditions, NodeCondition.MEMORY_PRESSURE)

    def is_under_disk_pressure(self) -> bool:
        return has_node_condition(self.node_conditions, NodeCondition.DISK_PRESSURE)

    def is_under_pid_pressure(self) -> bool:
        return has_node_condition(self.node_conditions, NodeCondition.PID_PRESSURE)

    def admit(self, pod: Pod) -> PodAdmitResult:
        return admit_pod(pod, self.node_conditions)

    def can_evict(self, pod: Pod) -> tuple[bool, str]:
        """The ``evictPod`` refusal check: (False, why) for critical or ``never`` pods."""
        if is_critical_pod(pod):
            return False, "critical pod"
        if is_eviction_forbidden(pod, allowed=self.config.eviction_preference_namespaces):
            return False, "eviction-preference: never"
        return True, ""

    # --- one sync --------------------------------------------------------------------------

    def _detect_filesystems(self) -> None:
        if self.dedicated_image_fs is not None:
            return
        has_image_fs = split = False
        if self.node_reclaim is not None:
            try:
                has_image_fs = bool(self.node_reclaim.has_dedicated_image_fs())
            except Exception as exc:
                raise EvictionSyncError(
                    f"eviction manager: failed to get HasDedicatedImageFs: {exc}"
                ) from exc
            try:
                split = bool(self.node_reclaim.has_dedicated_container_fs())
            except Exception:
                log.exception("eviction manager: failed to detect a split container fs")
                split = False
        if split and not self.config.feature_enabled("KubeletSeparateDiskGC"):
            raise EvictionSyncError(
                "KubeletSeparateDiskGC is turned off but we still have a split filesystem"
            )
        thresholds, error = update_container_fs_thresholds(self.thresholds, has_image_fs, split)
        if error:
            log.error("eviction manager: found conflicting containerfs eviction: %s", error)
        self.thresholds = thresholds
        self.dedicated_image_fs = has_image_fs
        self.split_container_image_fs = split
        self.signal_to_rank_func = build_signal_to_rank_func(
            has_image_fs,
            split,
            volumes=self.pod_volumes,
            pod_level_resources=self.config.feature_enabled("PodLevelResources"),
        )
        self.signal_to_node_reclaim_funcs = build_signal_to_node_reclaim_funcs(
            self.node_reclaim, has_image_fs, split
        )

    def synchronize(self, summary: Summary, active_pods: Sequence[Pod]) -> list[EvictionDecision]:
        """One sync over ``summary`` (fresh stats) and the node's active pods; what to evict.

        In the kubelet's order (``synchronize`` in eviction_manager.go):

        1. thresholds met now (strict ``<``, no grace, no min-reclaim);
        2. plus the thresholds that were *active* last sync and are still below value + min-reclaim;
        3. first-observed times (a threshold not met this sync is forgotten: grace needs continuous
           observation);
        4. node conditions from everything met — grace ignored — held for the pressure transition
           period (strict ``<``; 5 min by default);
        5. active thresholds = met for at least their grace period; remembered for step 2 next time;
        6. drop active thresholds whose observation is not newer than last sync's (no double
           eviction on one stale sample);
        7. local ephemeral-storage limit evictions (every violating pod, grace 1 s, skip the rest);
        8. the starved resource: memory first, then the others in order;
        9. node-level reclaim (dead containers, unused images) through ``node_reclaim``, then a
           re-read with min-reclaim enforced on every threshold — resolved means no pod is evicted;
        10. rank the active pods with the signal's ranker and evict the first one that may be
            evicted: at most one pod per sync. Critical pods (static, mirror, priority ≥ 2000000000)
            stay in the ranking but are skipped, as are pods annotated ``eviction-preference:
            never`` in a namespace the operator allows
            (``ManagerConfig.eviction_preference_namespaces``; none by default).

        ``active_pods`` are the node's pods as the kubelet sees them (``kubelet_view``, which the
        loop takes once per sync): the manager trusts the critical-pod annotations of the pods it is
        given, so pods read from the API go through that view first.
        """
        if not self.thresholds and not self.config.local_storage_capacity_isolation:
            return []
        self._detect_filesystems()
        now = self.clock.now()
        record = SyncRecord(time=now)
        self.last_sync = record

        observations, stats_func = make_signal_observations(summary)
        record.observations = observations
        met = thresholds_met(self.thresholds, observations, False)
        if self.thresholds_met:
            met = merge_thresholds(met, thresholds_met(self.thresholds_met, observations, True))
        record.met = list(met)

        first_observed = thresholds_first_observed_at(met, self.thresholds_first_observed_at, now)
        last_observed = node_conditions_last_observed_at(
            node_conditions(met), self.node_conditions_last_observed_at, now
        )
        conditions = node_conditions_observed_since(
            last_observed, self.config.pressure_transition_period_seconds, now
        )
        active = thresholds_met_grace_period(first_observed, now)

        self.node_conditions = conditions
        self.thresholds_first_observed_at = first_observed
        self.node_conditions_last_observed_at = last_observed
        self.thresholds_met = active
        record.node_conditions = list(conditions)

        active = thresholds_updated_stats(active, observations, self.last_observations)
        self.last_observations = observations
        record.active = list(active)

        if self.config.local_storage_capacity_isolation:
            evicted = self._local_storage_eviction(active_pods, stats_func)
            if evicted:
                record.decisions = evicted
                return evicted

        if not active:
            return []
        sort_thresholds_by_eviction_priority(active)
        found = get_reclaimable_threshold(active)
        if found is None:
            return []
        threshold, resource = found
        record.threshold_to_reclaim = threshold
        record.resource_to_reclaim = resource
        record.threshold_met_event = f"Attempting to reclaim {resource}"
        log.info("eviction manager: attempting to reclaim %s", resource)

        if self._reclaim_node_level_resources(threshold.signal):
            record.reclaimed_at_node_level = True
            log.info("eviction manager: reduced %s pressure without evicting pods", resource)
            return []

        rank = self.signal_to_rank_func.get(threshold.signal)
        if rank is None:
            log.error("eviction manager: no ranking function for signal %s", threshold.signal)
            return []
        if not active_pods:
            log.error("eviction manager: thresholds met, but no pods are active to evict")
            return []
        ranked = rank(list(active_pods), stats_func)
        apply_eviction_preference(ranked, allowed=self.config.eviction_preference_namespaces)
        record.ranking = list(ranked)

        pod_level = self.config.feature_enabled("PodLevelResources")
        for pod in ranked:
            ok, why = self.can_evict(pod)
            if not ok:
                record.skipped.append((pod, why))
                log.warning("eviction manager: cannot evict %s: %s", pod.key, why)
                continue
            override = IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS
            if not is_hard_eviction_threshold(threshold):
                override = self.config.max_pod_grace_period_seconds
                if pod.termination_grace_period_seconds is not None:
                    override = min(override, pod.termination_grace_period_seconds)
            message, annotations = evict_message(
                resource,
                pod,
                stats_func,
                active,
                observations,
                pod_level_resources=pod_level,
            )
            condition = None
            if self.config.feature_enabled("PodDisruptionConditions"):
                condition = PodCondition(
                    type=DISRUPTION_TARGET,
                    status="True",
                    reason=TERMINATION_BY_KUBELET,
                    message=message,
                )
            decision = EvictionDecision(
                pod=pod,
                grace_period_override=override,
                message=message,
                condition=condition,
                signal=threshold.signal,
                annotations=annotations,
                resource=resource,
                threshold=threshold,
                reason=REASON,
            )
            record.decisions = [decision]
            return [decision]
        log.info("eviction manager: unable to evict any pods from the node")
        return []

    def rank(self, signal: str, pods: Iterable[Pod], summary: Summary) -> list[Pod]:
        """The ranking the manager would use for ``signal`` (first sync's layout applies)."""
        self._detect_filesystems()
        rank = self.signal_to_rank_func.get(signal)
        if rank is None:
            raise KeyError(f"no ranking function for signal {signal}")
        _, stats_func = make_signal_observations(summary)
        ranked = rank(list(pods), stats_func)
        apply_eviction_preference(ranked, allowed=self.config.eviction_preference_namespaces)
        return ranked

    # --- pieces of a sync ------------------------------------------------------------------

    def _reclaim_node_level_resources(self, signal: str) -> bool:
        funcs = self.signal_to_node_reclaim_funcs.get(signal, [])
        for func in funcs:
            try:
                func()
            except Exception:
                log.exception("eviction manager: error while reclaiming node-level resources")
        if not funcs or self.node_reclaim is None:
            return False
        try:
            summary = self.node_reclaim.get_summary()
        except Exception:
            log.exception("eviction manager: failed to get summary stats after resource reclaim")
            return False
        observations, _ = make_signal_observations(summary)
        return not thresholds_met(self.thresholds, observations, True)

    def _local_storage_decision(
        self, pod: Pod, message: str, signal: str
    ) -> EvictionDecision | None:
        if not self.can_evict(pod)[0]:
            return None
        return EvictionDecision(
            pod=pod,
            grace_period_override=IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS,
            message=message,
            condition=None,
            signal=signal,
            reason=REASON,
        )

    def _local_storage_eviction(
        self, pods: Sequence[Pod], stats_func: StatsFunc
    ) -> list[EvictionDecision]:
        evicted = []
        for pod in pods:
            pod_stats = stats_func(pod)
            if pod_stats is None:
                continue
            decision = (
                self._empty_dir_limit_eviction(pod_stats, pod)
                or self._pod_ephemeral_storage_limit_eviction(pod_stats, pod)
                or self._container_ephemeral_storage_limit_eviction(pod_stats, pod)
            )
            if decision is not None:
                evicted.append(decision)
        return evicted

    def _empty_dir_limit_eviction(self, pod_stats: PodStats, pod: Pod) -> EvictionDecision | None:
        limited = [
            v for v in self.pod_volumes(pod) if v.source == "emptyDir" and v.size_limit is not None
        ]
        if not limited:  # no map of a pod's 40,000 volumes' usage on every sync for nothing
            return None
        used = {v.name: v.used_bytes for v in pod_stats.volume_stats}
        for volume in limited:
            size = volume.size_limit
            usage = used.get(volume.name)
            if usage is not None and size is not None and size > 0 and usage > size:
                return self._local_storage_decision(
                    pod,
                    _EMPTY_DIR_MESSAGE.format(volume.name, format_request(size)),
                    SIGNAL_EMPTY_DIR_FS_LIMIT,
                )
        return None

    def _pod_ephemeral_storage_limit_eviction(
        self, pod_stats: PodStats, pod: Pod
    ) -> EvictionDecision | None:
        limit = pod_ephemeral_storage_limit(pod)
        if limit is None:
            return None
        usage = disk_usage(pod_stats.ephemeral_storage)
        if usage > limit:
            return self._local_storage_decision(
                pod,
                _POD_EPHEMERAL_MESSAGE.format(format_request(limit)),
                SIGNAL_EPHEMERAL_POD_FS_LIMIT,
            )
        return None

    def _container_ephemeral_storage_limit_eviction(
        self, pod_stats: PodStats, pod: Pod
    ) -> EvictionDecision | None:
        limits = {
            c.name: c.limits["ephemeral-storage"]
            for c in pod.containers
            if c.limits.get("ephemeral-storage", 0) != 0
        }
        for cs in pod_stats.containers:
            used = disk_usage(cs.logs)
            if not self.dedicated_image_fs:
                used += disk_usage(cs.rootfs)
            limit = limits.get(cs.name)
            if limit is not None and limit < used:
                return self._local_storage_decision(
                    pod,
                    _CONTAINER_EPHEMERAL_MESSAGE.format(cs.name, format_request(limit)),
                    SIGNAL_EPHEMERAL_CONTAINER_FS_LIMIT,
                )
        return None
