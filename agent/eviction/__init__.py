"""The agent's pure decision core: the kubelet's node-pressure eviction (``pkg/kubelet/eviction``).

``thresholds`` (signals and thresholds: the kubelet's ``eviction/api``), ``summary`` (the Summary
API's types, the core's one input), ``types`` (config, observations, decisions, the small
interfaces), ``helpers`` (pure functions: thresholds over time, observations, ranking,
messages), ``manager`` (one ``synchronize`` per kubelet sync) and ``admission``; beside them
``pods`` (the node's pods as the kubelet sees them), ``preference`` (the operator-enabled
``eviction-preference`` annotation), ``explain`` (why each pod ranks where it does) and ``brake``
(evictions per minute). No I/O and no wall clock: a clock is injected.
"""

from agent.eviction.admission import PodAdmitResult, admit_pod
from agent.eviction.brake import (
    BRAKE_WINDOW_SECONDS,
    DEFAULT_MAX_EVICTIONS_PER_MINUTE,
    EvictionBrake,
)
from agent.eviction.explain import RankEntry, explain_ranking
from agent.eviction.helpers import (
    EvictionConfigError,
    add_allocatable_thresholds,
    compare_threshold_value,
    disk,
    evict_message,
    exceed_disk_requests,
    exceed_memory_requests,
    get_reclaimable_threshold,
    has_node_condition,
    make_signal_observations,
    memcg_usage_threshold,
    memory,
    merge_thresholds,
    node_conditions,
    node_conditions_last_observed_at,
    node_conditions_observed_since,
    ordered_by,
    parse_percentage,
    parse_threshold_config,
    priority,
    process,
    rank_disk_pressure_func,
    rank_memory_pressure,
    rank_pid_pressure,
    sort_thresholds_by_eviction_priority,
    thresholds_first_observed_at,
    thresholds_met,
    thresholds_met_grace_period,
    thresholds_updated_stats,
    update_container_fs_thresholds,
)
from agent.eviction.manager import (
    EvictionManager,
    EvictionSyncError,
    effective_grace_period_seconds,
)
from agent.eviction.pods import KubeletView, kubelet_view
from agent.eviction.preference import EVICTION_PREFERENCE_ANNOTATION
from agent.eviction.summary import PodStats, Summary, SummaryError
from agent.eviction.thresholds import (
    DEFAULT_EVICTION_HARD,
    MEMORY_SIGNALS,
    SIGNALS,
    Signal,
    Threshold,
    ThresholdOperator,
    ThresholdValue,
    get_threshold_quantity,
    is_hard_memory_threshold,
    resolve_eviction_hard,
)
from agent.eviction.types import (
    Clock,
    EvictionDecision,
    ManagerConfig,
    NodeCondition,
    NodeReclaim,
    Observation,
)

__all__ = [
    "BRAKE_WINDOW_SECONDS",
    "DEFAULT_EVICTION_HARD",
    "DEFAULT_MAX_EVICTIONS_PER_MINUTE",
    "EVICTION_PREFERENCE_ANNOTATION",
    "MEMORY_SIGNALS",
    "SIGNALS",
    "Clock",
    "EvictionBrake",
    "EvictionConfigError",
    "EvictionDecision",
    "EvictionManager",
    "EvictionSyncError",
    "KubeletView",
    "ManagerConfig",
    "NodeCondition",
    "NodeReclaim",
    "Observation",
    "PodAdmitResult",
    "PodStats",
    "RankEntry",
    "Signal",
    "Summary",
    "SummaryError",
    "SyncRecord",
    "Threshold",
    "ThresholdOperator",
    "ThresholdValue",
    "add_allocatable_thresholds",
    "admit_pod",
    "compare_threshold_value",
    "disk",
    "effective_grace_period_seconds",
    "evict_message",
    "exceed_disk_requests",
    "exceed_memory_requests",
    "explain_ranking",
    "get_reclaimable_threshold",
    "get_threshold_quantity",
    "has_node_condition",
    "is_hard_memory_threshold",
    "kubelet_view",
    "make_signal_observations",
    "memcg_usage_threshold",
    "memory",
    "merge_thresholds",
    "node_conditions",
    "node_conditions_last_observed_at",
    "node_conditions_observed_since",
    "ordered_by",
    "parse_percentage",
    "parse_threshold_config",
    "priority",
    "process",
    "rank_disk_pressure_func",
    "rank_memory_pressure",
    "rank_pid_pressure",
    "resolve_eviction_hard",
    "sort_thresholds_by_eviction_priority",
    "thresholds_first_observed_at",
    "thresholds_met",
    "thresholds_met_grace_period",
    "thresholds_updated_stats",
    "update_container_fs_thresholds",
]
