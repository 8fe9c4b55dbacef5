"""The kubelet's eviction helpers (``pkg/kubelet/eviction/helpers.go``), one to one in snake_case:
anyone who knows the kubelet finds each function by its name and reads the same rule. Where the
kubelet iterates a Go map (random order), insertion order is kept, so results are reproducible.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from agent.eviction.pods import (
    EPHEMERAL_STORAGE,
    MEMORY,
    RESOURCE_INODES,
    RESOURCE_PIDS,
    VolumesFunc,
    get_resource_request,
    local_volume_names,
    pod_volume_infos,
    stats_uid,
)
from agent.eviction.quantity import (
    BINARY_SI,
    DECIMAL_SI,
    QuantityFormat,
    format_quantity,
    format_request,
    parse_quantity_with_format,
)
from agent.eviction.summary import (
    SYSTEM_CONTAINER_PODS,
    FsStats,
    MemoryStats,
    PodStats,
    ProcessStats,
    Summary,
    VolumeStats,
)
from agent.eviction.thresholds import (
    MEMORY_SIGNALS,
    OP_FOR_SIGNAL,
    Signal,
    Threshold,
    ThresholdOperator,
    ThresholdValue,
    float32,
    get_threshold_quantity,
)
from agent.eviction.types import FsStatsType, NodeCondition, NodeReclaim, Observation, StatsFunc
from kube.duration import DurationError
from kube.duration import parse_go_duration as _go_duration
from kube.ints import INT64_MAX
from kube.objects import Pod
from kube.quantity import QuantityError

__all__ = [
    "NODE_ALLOCATABLE_ENFORCEMENT_KEY",
    "OFFENDING_CONTAINERS_KEY",
    "OFFENDING_CONTAINERS_USAGE_KEY",
    "OFFENDING_POD_KEY",
    "OFFENDING_POD_USAGE_KEY",
    "REASON",
    "SIGNAL_TO_NODE_CONDITION",
    "SIGNAL_TO_RESOURCE",
    "STARVED_RESOURCE_KEY",
    "CmpFunc",
    "EvictionConfigError",
    "MultiSorter",
    "add_allocatable_thresholds",
    "build_signal_to_node_reclaim_funcs",
    "build_signal_to_rank_func",
    "cached_stats_func",
    "cmp_bool",
    "compare_threshold_value",
    "container_usage",
    "disk",
    "disk_usage",
    "evict_message",
    "exceed_disk_requests",
    "exceed_memory_requests",
    "fs_stats_to_measure",
    "get_reclaimable_threshold",
    "get_threshold_met_info",
    "has_node_condition",
    "has_threshold",
    "inode_usage",
    "is_allocatable_eviction_threshold",
    "is_hard_eviction_threshold",
    "make_signal_observations",
    "memcg_usage_threshold",
    "memory",
    "memory_usage",
    "merge_thresholds",
    "node_conditions",
    "node_conditions_last_observed_at",
    "node_conditions_observed_since",
    "ordered_by",
    "parse_go_duration",
    "parse_percentage",
    "parse_threshold_config",
    "pod_disk_usage",
    "pod_local_volume_usage",
    "priority",
    "process",
    "process_usage",
    "rank_disk_pressure_func",
    "rank_memory_pressure",
    "rank_pid_pressure",
    "sort_thresholds_by_eviction_priority",
    "thresholds_first_observed_at",
    "thresholds_met",
    "thresholds_met_grace_period",
    "thresholds_updated_stats",
    "update_container_fs_thresholds",
    "valid_signal",
]

log = logging.getLogger(__name__)

REASON: Final = "Evicted"
NODE_ALLOCATABLE_ENFORCEMENT_KEY: Final = "pods"
OFFENDING_CONTAINERS_KEY: Final = "offending_containers"
OFFENDING_CONTAINERS_USAGE_KEY: Final = "offending_containers_usage"
OFFENDING_POD_KEY: Final = "offending_pod"
OFFENDING_POD_USAGE_KEY: Final = "offending_pod_usage"
STARVED_RESOURCE_KEY: Final = "starved_resource"

_NODE_LOW_MESSAGE: Final = "The node was low on resource: {}. "
_THRESHOLD_MET_MESSAGE: Final = "Threshold quantity: {}, available: {}. "
_CONTAINER_MESSAGE: Final = (
    "Container {} was using {}, request is {}, has larger consumption of {}. "
)
_POD_MESSAGE: Final = "Pod {} was using {}, request is {}, has larger consumption of {}. "

SIGNAL_TO_NODE_CONDITION: Final[Mapping[str, str]] = {
    Signal.MEMORY_AVAILABLE: NodeCondition.MEMORY_PRESSURE,
    Signal.ALLOCATABLE_MEMORY_AVAILABLE: NodeCondition.MEMORY_PRESSURE,
    Signal.IMAGE_FS_AVAILABLE: NodeCondition.DISK_PRESSURE,
    Signal.CONTAINER_FS_AVAILABLE: NodeCondition.DISK_PRESSURE,
    Signal.NODE_FS_AVAILABLE: NodeCondition.DISK_PRESSURE,
    Signal.IMAGE_FS_INODES_FREE: NodeCondition.DISK_PRESSURE,
    Signal.NODE_FS_INODES_FREE: NodeCondition.DISK_PRESSURE,
    Signal.CONTAINER_FS_INODES_FREE: NodeCondition.DISK_PRESSURE,
    Signal.PID_AVAILABLE: NodeCondition.PID_PRESSURE,
}

SIGNAL_TO_RESOURCE: Final[Mapping[str, str]] = {
    Signal.MEMORY_AVAILABLE: MEMORY,
    Signal.ALLOCATABLE_MEMORY_AVAILABLE: MEMORY,
    Signal.IMAGE_FS_AVAILABLE: EPHEMERAL_STORAGE,
    Signal.IMAGE_FS_INODES_FREE: RESOURCE_INODES,
    Signal.CONTAINER_FS_AVAILABLE: EPHEMERAL_STORAGE,
    Signal.CONTAINER_FS_INODES_FREE: RESOURCE_INODES,
    Signal.NODE_FS_AVAILABLE: EPHEMERAL_STORAGE,
    Signal.NODE_FS_INODES_FREE: RESOURCE_INODES,
    Signal.PID_AVAILABLE: RESOURCE_PIDS,
}

# Observations of byte signals are BinarySI quantities; inode and PID counts are DecimalSI.
_OBSERVATION_FORMAT: Final[Mapping[str, QuantityFormat]] = {
    s: (BINARY_SI if r in (MEMORY, EPHEMERAL_STORAGE) else DECIMAL_SI)
    for s, r in SIGNAL_TO_RESOURCE.items()
}


class EvictionConfigError(ValueError):
    """An invalid eviction setting; the message is the kubelet's."""


def valid_signal(signal: str) -> bool:
    return signal in SIGNAL_TO_RESOURCE


# --- parsing ---------------------------------------------------------------------------------

_GO_FLOAT: Final = re.compile(
    r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity)",
    re.IGNORECASE,
)


def parse_percentage(value: str) -> float:
    """``parsePercentage``: ``"7.5%"`` → float32(7.5) / 100 in float32 arithmetic.

    ``strconv.ParseFloat(s, 32)`` syntax (decimal; ``Inf`` passes and fails the range checks
    later, as upstream). Unlike Go we refuse NaN: it would make a threshold that can never be met
    and never be reported.
    """
    text = value.rstrip("%")
    if not _GO_FLOAT.fullmatch(text):
        raise EvictionConfigError(f'strconv.ParseFloat: parsing "{text}": invalid syntax')
    parsed64 = float(text)
    try:
        parsed = float32(parsed64)
    except OverflowError:
        parsed = math.inf  # ParseFloat(…, 32) of a finite number beyond float32
    if math.isinf(parsed) and not math.isinf(parsed64):
        raise EvictionConfigError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    return float32(parsed / 100)


def parse_go_duration(value: str) -> float:
    """``time.ParseDuration`` in seconds (``1m30s``, ``1.5h``, ``300ms``, ``0``)."""
    try:
        return _go_duration(value)
    except DurationError as exc:
        raise EvictionConfigError(str(exc)) from None


def _parse_threshold_statement(signal: str, value: str) -> Threshold | None:
    if not valid_signal(signal):
        raise EvictionConfigError(f"unsupported eviction signal {signal}")
    operator = OP_FOR_SIGNAL[signal]
    if value.endswith("%"):
        if value in ("0%", "100%"):
            return None
        percentage = parse_percentage(value)
        if percentage < 0:
            raise EvictionConfigError(
                f"eviction percentage threshold {signal} must be >= 0%: {value}"
            )
        if percentage > 1:
            raise EvictionConfigError(
                f"eviction percentage threshold {signal} must be <= 100%: {value}"
            )
        return Threshold(signal, operator, ThresholdValue(percentage=percentage))
    try:
        quantity, fmt = parse_quantity_with_format(value)
    except QuantityError as exc:
        raise EvictionConfigError(f"{exc}") from None
    if quantity <= 0:
        raise EvictionConfigError(f"eviction threshold {signal} must be positive: {value}")
    if quantity > INT64_MAX:
        raise EvictionConfigError(
            f"eviction threshold {signal} must be at most {INT64_MAX} (int64): {value}"
        )
    return Threshold(signal, operator, ThresholdValue(quantity=quantity, fmt=fmt))


def _parse_threshold_statements(statements: Mapping[str, str] | None) -> list[Threshold]:
    results = []
    for signal, value in (statements or {}).items():
        threshold = _parse_threshold_statement(signal, value)
        if threshold is not None:
            results.append(threshold)
    return results


def _parse_grace_periods(statements: Mapping[str, str] | None) -> dict[str, float]:
    results = {}
    for signal, value in (statements or {}).items():
        if not valid_signal(signal):
            raise EvictionConfigError(f"unsupported eviction signal {signal}")
        period = parse_go_duration(value)
        if period < 0:
            raise EvictionConfigError(
                f"invalid eviction grace period specified: {value}, must be a positive value"
            )
        results[signal] = period
    return results


def _parse_minimum_reclaims(statements: Mapping[str, str] | None) -> dict[str, ThresholdValue]:
    results = {}
    for signal, value in (statements or {}).items():
        if not valid_signal(signal):
            raise EvictionConfigError(f"unsupported eviction signal {signal}")
        if value.endswith("%"):
            percentage = parse_percentage(value)
            if percentage <= 0:
                raise EvictionConfigError(
                    f"eviction percentage minimum reclaim {signal} must be positive: {value}"
                )
            results[signal] = ThresholdValue(percentage=percentage)
            continue
        try:
            quantity, fmt = parse_quantity_with_format(value)
        except QuantityError as exc:
            raise EvictionConfigError(f"{exc}") from None
        if quantity < 0:
            raise EvictionConfigError(f"negative eviction minimum reclaim specified for {signal}")
        if quantity > INT64_MAX:
            raise EvictionConfigError(
                f"eviction minimum reclaim {signal} must be at most {INT64_MAX} (int64): {value}"
            )
        results[signal] = ThresholdValue(quantity=quantity, fmt=fmt)
    return results


def parse_threshold_config(
    allocatable_config: Iterable[str],
    eviction_hard: Mapping[str, str] | None,
    eviction_soft: Mapping[str, str] | None,
    eviction_soft_grace_period: Mapping[str, str] | None,
    eviction_minimum_reclaim: Mapping[str, str] | None,
) -> list[Threshold]:
    """``ParseThresholdConfig``: hard then soft thresholds, min-reclaim attached, and the
    allocatable copies of hard memory thresholds when ``pods`` allocatable is enforced.

    Raises ``EvictionConfigError`` with the kubelet's message on the first bad entry.
    """
    results = _parse_threshold_statements(eviction_hard)
    soft = _parse_threshold_statements(eviction_soft)
    grace_periods = _parse_grace_periods(eviction_soft_grace_period)
    min_reclaims = _parse_minimum_reclaims(eviction_minimum_reclaim)
    for i, threshold in enumerate(soft):
        if threshold.signal not in grace_periods:
            raise EvictionConfigError(
                f"grace period must be specified for the soft eviction threshold {threshold.signal}"
            )
        soft[i] = replace(threshold, grace_period=grace_periods[threshold.signal])
    results.extend(soft)
    results = [
        replace(t, min_reclaim=min_reclaims[t.signal]) if t.signal in min_reclaims else t
        for t in results
    ]
    if NODE_ALLOCATABLE_ENFORCEMENT_KEY in list(allocatable_config):
        results = add_allocatable_thresholds(results)
    return results


def add_allocatable_thresholds(thresholds: Sequence[Threshold]) -> list[Threshold]:
    """``addAllocatableThresholds``: each hard ``memory.available`` threshold is copied as a hard
    ``allocatableMemory.available`` threshold (soft ones are not)."""
    extra = [
        Threshold(
            Signal.ALLOCATABLE_MEMORY_AVAILABLE,
            t.operator,
            t.value,
            0.0,
            t.min_reclaim,
        )
        for t in thresholds
        if t.signal == Signal.MEMORY_AVAILABLE and is_hard_eviction_threshold(t)
    ]
    return [*thresholds, *extra]


_INERT: Final = Threshold("", ThresholdOperator.NONE, ThresholdValue(percentage=0.0))


def update_container_fs_thresholds(
    thresholds: Sequence[Threshold], image_fs: bool, separate_container_image_fs: bool
) -> tuple[list[Threshold], str | None]:
    """``UpdateContainerFsThresholds``: derive the containerfs thresholds.

    Single fs or split (containerfs with nodefs): copied from nodefs. Dedicated imagefs without a
    split: copied from imagefs. Hard and soft, bytes and inodes separately, with value, min-reclaim
    and grace. User-supplied containerfs entries are overwritten in place and reported in the
    returned error message (not fatal); a missing source gives an inert threshold that never fires.
    """
    out = list(thresholds)
    source: dict[tuple[str, bool], Threshold] = {}
    existing: dict[tuple[str, bool], int] = {}
    error: str | None = None
    for idx, t in enumerate(out):
        hard = is_hard_eviction_threshold(t)
        if t.signal in (
            Signal.IMAGE_FS_AVAILABLE,
            Signal.IMAGE_FS_INODES_FREE,
            Signal.NODE_FS_AVAILABLE,
            Signal.NODE_FS_INODES_FREE,
        ):
            source[(t.signal, hard)] = t
        elif t.signal in (Signal.CONTAINER_FS_AVAILABLE, Signal.CONTAINER_FS_INODES_FREE):
            error = f"found {t.signal} for {'hard' if hard else 'soft'} eviction. ignoring"
            existing[(t.signal, hard)] = idx
    if image_fs and not separate_container_image_fs:
        from_bytes, from_inodes = Signal.IMAGE_FS_AVAILABLE, Signal.IMAGE_FS_INODES_FREE
    else:
        from_bytes, from_inodes = Signal.NODE_FS_AVAILABLE, Signal.NODE_FS_INODES_FREE
    for target, origin in (
        (Signal.CONTAINER_FS_AVAILABLE, from_bytes),
        (Signal.CONTAINER_FS_INODES_FREE, from_inodes),
    ):
        for hard in (True, False):
            src = source.get((origin, hard), _INERT)
            derived = Threshold(
                target,
                src.operator,
                src.value,
                0.0 if hard else src.grace_period,
                src.min_reclaim,
            )
            if (target, hard) in existing:
                out[existing[(target, hard)]] = derived
            else:
                out.append(derived)
    return out, error


def compare_threshold_value(a: ThresholdValue, b: ThresholdValue) -> bool:
    """``compareThresholdValue``: same quantity, or both percentages and equal."""
    if a.quantity is not None:
        return b.quantity is not None and a.quantity == b.quantity
    if b.quantity is not None:
        return False
    return float32(a.percentage or 0.0) == float32(b.percentage or 0.0)


def is_hard_eviction_threshold(threshold: Threshold) -> bool:
    return threshold.grace_period == 0


def is_allocatable_eviction_threshold(threshold: Threshold) -> bool:
    return threshold.signal == Signal.ALLOCATABLE_MEMORY_AVAILABLE


# --- observations ----------------------------------------------------------------------------


def cached_stats_func(pod_stats: Iterable[PodStats]) -> StatsFunc:
    """``cachedStatsFunc``: pod stats looked up by pod UID (a mirror pod's: its static pod's)."""
    by_uid = {s.pod_ref.uid: s for s in pod_stats}

    def stats(pod: Pod) -> PodStats | None:
        return by_uid.get(stats_uid(pod))

    return stats


def _fs_observations(
    result: dict[str, Observation], fs: FsStats | None, available: str, inodes: str
) -> None:
    if fs is None:
        return
    if fs.available_bytes is not None and fs.capacity_bytes is not None:
        result[available] = Observation(fs.available_bytes, fs.capacity_bytes, fs.time)
    if fs.inodes_free is not None and fs.inodes is not None:
        result[inodes] = Observation(fs.inodes_free, fs.inodes, fs.time)


def make_signal_observations(summary: Summary) -> tuple[dict[str, Observation], StatsFunc]:
    """``makeSignalObservations``: one observation per signal whose stats are present.

    Memory capacity is recomputed as available + working set, as the kubelet does.
    """
    stats_func = cached_stats_func(summary.pods)
    result: dict[str, Observation] = {}
    node = summary.node
    mem = node.memory
    if mem is not None and mem.available_bytes is not None and mem.working_set_bytes is not None:
        result[Signal.MEMORY_AVAILABLE] = Observation(
            mem.available_bytes, mem.available_bytes + mem.working_set_bytes, mem.time
        )
    pods = node.system_container(SYSTEM_CONTAINER_PODS)
    if pods is None:
        log.debug("system container %r not found in metrics", SYSTEM_CONTAINER_PODS)
    elif (
        pods.memory is not None
        and pods.memory.available_bytes is not None
        and pods.memory.working_set_bytes is not None
    ):
        result[Signal.ALLOCATABLE_MEMORY_AVAILABLE] = Observation(
            pods.memory.available_bytes,
            pods.memory.available_bytes + pods.memory.working_set_bytes,
            pods.memory.time,
        )
    _fs_observations(result, node.fs, Signal.NODE_FS_AVAILABLE, Signal.NODE_FS_INODES_FREE)
    if node.runtime is not None:
        _fs_observations(
            result, node.runtime.image_fs, Signal.IMAGE_FS_AVAILABLE, Signal.IMAGE_FS_INODES_FREE
        )
        _fs_observations(
            result,
            node.runtime.container_fs,
            Signal.CONTAINER_FS_AVAILABLE,
            Signal.CONTAINER_FS_INODES_FREE,
        )
    rlimit = node.rlimit
    if (
        rlimit is not None
        and rlimit.num_of_running_processes is not None
        and rlimit.max_pid is not None
    ):
        result[Signal.PID_AVAILABLE] = Observation(
            rlimit.max_pid - rlimit.num_of_running_processes, rlimit.max_pid, rlimit.time
        )
    return result, stats_func


# --- thresholds over time --------------------------------------------------------------------


def thresholds_met(
    thresholds: Iterable[Threshold],
    observations: Mapping[str, Observation],
    enforce_min_reclaim: bool,
) -> list[Threshold]:
    """``thresholdsMet``: trigger level (plus min-reclaim if enforced) strictly above available.

    Met on a strict ``<``: an available amount equal to the threshold is fine. Min-reclaim is added
    to the trigger level only for the thresholds that were active on the last sync and in the check
    after node-level reclaim (``enforce_min_reclaim=True``).
    """
    results = []
    for t in thresholds:
        observed = observations.get(t.signal)
        if observed is None:
            continue
        quantity = get_threshold_quantity(t.value, observed.capacity)
        if enforce_min_reclaim and t.min_reclaim is not None:
            quantity += get_threshold_quantity(t.min_reclaim, observed.capacity)
        if t.operator == ThresholdOperator.LESS_THAN and quantity > observed.available:
            results.append(t)
    return results


def thresholds_updated_stats(
    thresholds: Iterable[Threshold],
    observations: Mapping[str, Observation],
    last_observations: Mapping[str, Observation],
) -> list[Threshold]:
    """``thresholdsUpdatedStats``: keep a threshold only if its observation is new since the last
    sync (no previous observation, no timestamp, or a strictly newer timestamp)."""
    results = []
    for t in thresholds:
        observed = observations.get(t.signal)
        if observed is None:
            continue
        last = last_observations.get(t.signal)
        if last is None or observed.time is None or last.time is None or observed.time > last.time:
            results.append(t)
    return results


def thresholds_first_observed_at(
    thresholds: Iterable[Threshold], last_observed_at: Mapping[Threshold, float], now: float
) -> dict[Threshold, float]:
    """``thresholdsFirstObservedAt``: keep the earlier time, else ``now``; forget the rest.

    Grace periods need continuous observation: a threshold is forgotten on the first sync it is not
    met.
    """
    return {t: last_observed_at.get(t, now) for t in thresholds}


def thresholds_met_grace_period(
    observed_at: Mapping[Threshold, float], now: float
) -> list[Threshold]:
    """``thresholdsMetGracePeriod``: thresholds met for at least their grace period."""
    return [t for t, at in observed_at.items() if not now - at < t.grace_period]


def node_conditions(thresholds: Iterable[Threshold]) -> list[str]:
    """``nodeConditions``: the distinct conditions of the thresholds, in order."""
    results: list[str] = []
    for t in thresholds:
        condition = SIGNAL_TO_NODE_CONDITION.get(t.signal)
        if condition is not None and not has_node_condition(results, condition):
            results.append(condition)
    return results


def node_conditions_last_observed_at(
    conditions: Iterable[str], last_observed_at: Mapping[str, float], now: float
) -> dict[str, float]:
    """``nodeConditionsLastObservedAt``: conditions seen now get ``now``; others keep theirs."""
    results = dict.fromkeys(conditions, now)
    for condition, at in last_observed_at.items():
        results.setdefault(condition, at)
    return results


def node_conditions_observed_since(
    observed_at: Mapping[str, float], period: float, now: float
) -> list[str]:
    """``nodeConditionsObservedSince``: seen strictly less than ``period`` ago."""
    return [c for c, at in observed_at.items() if now - at < period]


def has_node_condition(inputs: Iterable[str], item: str) -> bool:
    return item in inputs


def has_threshold(inputs: Iterable[Threshold], item: Threshold) -> bool:
    """``hasThreshold``: same grace, operator, signal and value (min-reclaim is not compared)."""
    return any(
        t.grace_period == item.grace_period
        and t.operator == item.operator
        and t.signal == item.signal
        and compare_threshold_value(t.value, item.value)
        for t in inputs
    )


def merge_thresholds(
    inputs_a: Iterable[Threshold], inputs_b: Iterable[Threshold]
) -> list[Threshold]:
    """``mergeThresholds``: A, then those of B not already in A."""
    results = list(inputs_a)
    for t in inputs_b:
        if not has_threshold(results, t):
            results.append(t)
    return results


def sort_thresholds_by_eviction_priority(thresholds: list[Threshold]) -> list[Threshold]:
    """``sort.Sort(byEvictionPriority(...))``, stable: memory and allocatable memory first,
    thresholds whose signal has no resource last. Sorts in place and returns the list."""

    def key(t: Threshold) -> int:
        if t.signal in MEMORY_SIGNALS:
            return 0
        return 1 if t.signal in SIGNAL_TO_RESOURCE else 2

    thresholds.sort(key=key)
    return thresholds


def get_reclaimable_threshold(thresholds: Iterable[Threshold]) -> tuple[Threshold, str] | None:
    """``getReclaimableThreshold``: the first threshold whose signal maps to a resource."""
    for t in thresholds:
        resource = SIGNAL_TO_RESOURCE.get(t.signal)
        if resource is not None:
            return t, resource
        log.debug("threshold %s crossed, but reclaim is not implemented for it", t.signal)
    return None


# --- usage -----------------------------------------------------------------------------------


def disk_usage(fs: FsStats | None) -> int:
    return 0 if fs is None or fs.used_bytes is None else fs.used_bytes


def inode_usage(fs: FsStats | None) -> int:
    return 0 if fs is None or fs.inodes_used is None else fs.inodes_used


def memory_usage(mem: MemoryStats | None) -> int:
    return 0 if mem is None or mem.working_set_bytes is None else mem.working_set_bytes


def process_usage(process_stats: ProcessStats | None) -> int:
    if process_stats is None or process_stats.process_count is None:
        return 0
    return process_stats.process_count


def container_usage(pod_stats: PodStats, stats_to_measure: Sequence[str]) -> dict[str, int]:
    """``containerUsage``: writable layer and/or logs of every container, bytes and inodes."""
    disk_total = inodes = 0
    for c in pod_stats.containers:
        if FsStatsType.ROOT in stats_to_measure:
            disk_total += disk_usage(c.rootfs)
            inodes += inode_usage(c.rootfs)
        if FsStatsType.LOGS in stats_to_measure:
            disk_total += disk_usage(c.logs)
            inodes += inode_usage(c.logs)
    return {EPHEMERAL_STORAGE: disk_total, RESOURCE_INODES: inodes}


def pod_local_volume_usage(volume_names: Iterable[str], pod_stats: PodStats) -> dict[str, int]:
    """``podLocalVolumeUsage``: the named volumes' usage (each name's first entry, as the
    kubelet's loop finds it; by a map, not a scan per name: a pod with 40,000 emptyDirs)."""
    by_name: dict[str, VolumeStats] = {}
    for v in pod_stats.volume_stats:
        by_name.setdefault(v.name, v)
    disk_total = inodes = 0
    for name in volume_names:
        found = by_name.get(name)
        if found is not None:
            disk_total += disk_usage(found.fs)
            inodes += inode_usage(found.fs)
    return {EPHEMERAL_STORAGE: disk_total, RESOURCE_INODES: inodes}


def pod_disk_usage(
    pod_stats: PodStats,
    pod: Pod,
    stats_to_measure: Sequence[str],
    *,
    volumes: VolumesFunc = pod_volume_infos,
) -> dict[str, int]:
    """``podDiskUsage``: containers' selected stats plus local volumes when measured."""
    usage = container_usage(pod_stats, stats_to_measure)
    if FsStatsType.LOCAL_VOLUME_SOURCE in stats_to_measure:
        local = pod_local_volume_usage(local_volume_names(volumes(pod)), pod_stats)
        for k, v in local.items():
            usage[k] += v
    return usage


# --- ranking ---------------------------------------------------------------------------------

CmpFunc = Callable[[Pod, Pod], int]


def cmp_bool(a: bool, b: bool) -> int:
    """``cmpBool``: true sorts before false."""
    if a == b:
        return 0
    return -1 if not b else 1


def _cmp(a: int, b: int) -> int:
    return (a > b) - (a < b)


def priority(p1: Pod, p2: Pod) -> int:
    """Lower ``spec.priority`` (unset = 0) first."""
    return _cmp(p1.priority, p2.priority)


def exceed_memory_requests(stats: StatsFunc, *, pod_level_resources: bool = True) -> CmpFunc:
    """Pods whose working set exceeds their memory request first; pods without stats before."""

    def cmp(p1: Pod, p2: Pod) -> int:
        s1, s2 = stats(p1), stats(p2)
        if s1 is None or s2 is None:
            return cmp_bool(s1 is None, s2 is None)
        e1 = memory_usage(s1.memory) > get_resource_request(
            p1, MEMORY, pod_level_resources=pod_level_resources
        )
        e2 = memory_usage(s2.memory) > get_resource_request(
            p2, MEMORY, pod_level_resources=pod_level_resources
        )
        return cmp_bool(e1, e2)

    return cmp


def memory(stats: StatsFunc, *, pod_level_resources: bool = True) -> CmpFunc:
    """Larger working set above the memory request first; pods without stats before."""

    def cmp(p1: Pod, p2: Pod) -> int:
        s1, s2 = stats(p1), stats(p2)
        if s1 is None or s2 is None:
            return cmp_bool(s1 is None, s2 is None)
        d1 = memory_usage(s1.memory) - get_resource_request(
            p1, MEMORY, pod_level_resources=pod_level_resources
        )
        d2 = memory_usage(s2.memory) - get_resource_request(
            p2, MEMORY, pod_level_resources=pod_level_resources
        )
        return _cmp(d2, d1)

    return cmp


def process(stats: StatsFunc) -> CmpFunc:
    """More processes first; pods without stats before."""

    def cmp(p1: Pod, p2: Pod) -> int:
        s1, s2 = stats(p1), stats(p2)
        if s1 is None or s2 is None:
            return cmp_bool(s1 is None, s2 is None)
        return _cmp(process_usage(s2.process_stats), process_usage(s1.process_stats))

    return cmp


def exceed_disk_requests(
    stats: StatsFunc,
    fs_stats_to_measure: Sequence[str],
    disk_resource: str,
    *,
    volumes: VolumesFunc = pod_volume_infos,
) -> CmpFunc:
    """Pods whose measured disk usage exceeds their request for ``disk_resource`` first."""

    def cmp(p1: Pod, p2: Pod) -> int:
        s1, s2 = stats(p1), stats(p2)
        if s1 is None or s2 is None:
            return cmp_bool(s1 is None, s2 is None)
        u1 = pod_disk_usage(s1, p1, fs_stats_to_measure, volumes=volumes)[disk_resource]
        u2 = pod_disk_usage(s2, p2, fs_stats_to_measure, volumes=volumes)[disk_resource]
        return cmp_bool(
            u1 > get_resource_request(p1, disk_resource),
            u2 > get_resource_request(p2, disk_resource),
        )

    return cmp


def disk(
    stats: StatsFunc,
    fs_stats_to_measure: Sequence[str],
    disk_resource: str,
    *,
    volumes: VolumesFunc = pod_volume_infos,
) -> CmpFunc:
    """Larger usage above the ephemeral-storage request first.

    For inode signals the kubelet subtracts the ephemeral-storage request (bytes) from the inode
    count; we keep that quirk so rankings agree with the kubelet's.
    """

    def cmp(p1: Pod, p2: Pod) -> int:
        s1, s2 = stats(p1), stats(p2)
        if s1 is None or s2 is None:
            return cmp_bool(s1 is None, s2 is None)
        u1 = pod_disk_usage(s1, p1, fs_stats_to_measure, volumes=volumes)[disk_resource]
        u2 = pod_disk_usage(s2, p2, fs_stats_to_measure, volumes=volumes)[disk_resource]
        u1 -= get_resource_request(p1, EPHEMERAL_STORAGE)
        u2 -= get_resource_request(p2, EPHEMERAL_STORAGE)
        return _cmp(u2, u1)

    return cmp


class MultiSorter:
    """``multiSorter``: the first comparator that tells two pods apart decides; stable."""

    def __init__(self, cmps: Sequence[CmpFunc]) -> None:
        self.cmps = tuple(cmps)

    def compare(self, p1: Pod, p2: Pod) -> int:
        for cmp in self.cmps:
            result = cmp(p1, p2)
            if result:
                return result
        return 0

    def sort(self, pods: list[Pod]) -> list[Pod]:
        pods.sort(key=functools.cmp_to_key(self.compare))
        return pods


def ordered_by(*cmps: CmpFunc) -> MultiSorter:
    """``orderedBy(cmp1, cmp2, ...)``: call ``.sort(pods)`` to sort in place.

    Pods without stats go first; ties keep input order (Go's sort is an insertion sort for short
    slices; the sort here is stable).
    """
    return MultiSorter(cmps)


def rank_memory_pressure(
    pods: list[Pod], stats: StatsFunc, *, pod_level_resources: bool = True
) -> list[Pod]:
    """``rankMemoryPressure``: exceeds request, then priority, then usage above request.

    QoS is not a ranking input (kubernetes/kubernetes#78561, kubernetes/kubernetes#53542).
    """
    return ordered_by(
        exceed_memory_requests(stats, pod_level_resources=pod_level_resources),
        priority,
        memory(stats, pod_level_resources=pod_level_resources),
    ).sort(pods)


def rank_pid_pressure(pods: list[Pod], stats: StatsFunc) -> list[Pod]:
    """``rankPIDPressure``: priority, then process count."""
    return ordered_by(priority, process(stats)).sort(pods)


def rank_disk_pressure_func(
    fs_stats_to_measure: Sequence[str],
    disk_resource: str,
    *,
    volumes: VolumesFunc = pod_volume_infos,
) -> Callable[[list[Pod], StatsFunc], list[Pod]]:
    """``rankDiskPressureFunc``: a ranker measuring ``fs_stats_to_measure``."""
    measured = tuple(fs_stats_to_measure)

    def rank(pods: list[Pod], stats: StatsFunc) -> list[Pod]:
        return ordered_by(
            exceed_disk_requests(stats, measured, disk_resource, volumes=volumes),
            priority,
            disk(stats, measured, disk_resource, volumes=volumes),
        ).sort(pods)

    return rank


def fs_stats_to_measure(
    signal: str, with_image_fs: bool, image_container_split_fs: bool
) -> tuple[str, ...]:
    """The pod disk stats a disk signal's ranker measures for the node's layout (empty for
    memory and PIDs)."""
    F = FsStatsType
    if SIGNAL_TO_RESOURCE.get(signal) not in (EPHEMERAL_STORAGE, RESOURCE_INODES):
        return ()
    node_side = signal in (Signal.NODE_FS_AVAILABLE, Signal.NODE_FS_INODES_FREE)
    image_side = signal in (Signal.IMAGE_FS_AVAILABLE, Signal.IMAGE_FS_INODES_FREE)
    if with_image_fs and not image_container_split_fs:
        return (F.LOGS, F.LOCAL_VOLUME_SOURCE) if node_side else (F.ROOT, F.IMAGES)
    if with_image_fs and image_container_split_fs:
        return (F.IMAGES,) if image_side else (F.LOGS, F.LOCAL_VOLUME_SOURCE, F.ROOT)
    return (F.IMAGES, F.ROOT, F.LOGS, F.LOCAL_VOLUME_SOURCE)


def build_signal_to_rank_func(
    with_image_fs: bool,
    image_container_split_fs: bool,
    *,
    volumes: VolumesFunc = pod_volume_infos,
    pod_level_resources: bool = True,
) -> dict[str, Callable[[list[Pod], StatsFunc], list[Pod]]]:
    """``buildSignalToRankFunc``: the ranker per signal for the node's filesystem layout."""

    def mem(pods: list[Pod], stats: StatsFunc) -> list[Pod]:
        return rank_memory_pressure(pods, stats, pod_level_resources=pod_level_resources)

    def ranker(kinds: Sequence[str], resource: str) -> Callable[[list[Pod], StatsFunc], list[Pod]]:
        return rank_disk_pressure_func(kinds, resource, volumes=volumes)

    S, F = Signal, FsStatsType
    out: dict[str, Callable[[list[Pod], StatsFunc], list[Pod]]] = {
        S.MEMORY_AVAILABLE: mem,
        S.ALLOCATABLE_MEMORY_AVAILABLE: mem,
        S.PID_AVAILABLE: rank_pid_pressure,
    }
    if with_image_fs and not image_container_split_fs:
        nodefs: tuple[str, ...] = (F.LOGS, F.LOCAL_VOLUME_SOURCE)
        imagefs = (F.ROOT, F.IMAGES)
        out[S.NODE_FS_AVAILABLE] = ranker(nodefs, EPHEMERAL_STORAGE)
        out[S.NODE_FS_INODES_FREE] = ranker(nodefs, RESOURCE_INODES)
        out[S.IMAGE_FS_AVAILABLE] = ranker(imagefs, EPHEMERAL_STORAGE)
        out[S.IMAGE_FS_INODES_FREE] = ranker(imagefs, RESOURCE_INODES)
        out[S.CONTAINER_FS_AVAILABLE] = out[S.IMAGE_FS_AVAILABLE]
        out[S.CONTAINER_FS_INODES_FREE] = out[S.IMAGE_FS_INODES_FREE]
    elif with_image_fs and image_container_split_fs:
        nodefs = (F.LOGS, F.LOCAL_VOLUME_SOURCE, F.ROOT)
        out[S.NODE_FS_AVAILABLE] = ranker(nodefs, EPHEMERAL_STORAGE)
        out[S.NODE_FS_INODES_FREE] = ranker(nodefs, RESOURCE_INODES)
        out[S.CONTAINER_FS_AVAILABLE] = out[S.NODE_FS_AVAILABLE]
        out[S.CONTAINER_FS_INODES_FREE] = out[S.NODE_FS_INODES_FREE]
        out[S.IMAGE_FS_AVAILABLE] = ranker((F.IMAGES,), EPHEMERAL_STORAGE)
        out[S.IMAGE_FS_INODES_FREE] = ranker((F.IMAGES,), RESOURCE_INODES)
    else:
        everything = (F.IMAGES, F.ROOT, F.LOGS, F.LOCAL_VOLUME_SOURCE)
        out[S.NODE_FS_AVAILABLE] = ranker(everything, EPHEMERAL_STORAGE)
        out[S.NODE_FS_INODES_FREE] = ranker(everything, RESOURCE_INODES)
        out[S.IMAGE_FS_AVAILABLE] = ranker(everything, EPHEMERAL_STORAGE)
        out[S.IMAGE_FS_INODES_FREE] = ranker(everything, RESOURCE_INODES)
        out[S.CONTAINER_FS_AVAILABLE] = out[S.NODE_FS_AVAILABLE]
        out[S.CONTAINER_FS_INODES_FREE] = out[S.NODE_FS_INODES_FREE]
    return out


def build_signal_to_node_reclaim_funcs(
    node_reclaim: NodeReclaim | None, with_image_fs: bool, split_container_image_fs: bool
) -> dict[str, list[Callable[[], None]]]:
    """``buildSignalToNodeReclaimFuncs``: dead containers and/or unused images per disk signal."""
    if node_reclaim is None:
        return {}
    containers = node_reclaim.delete_all_unused_containers
    images = node_reclaim.delete_unused_images
    S = Signal
    out: dict[str, list[Callable[[], None]]] = {}
    if with_image_fs and not split_container_image_fs:
        out[S.NODE_FS_AVAILABLE] = []
        out[S.NODE_FS_INODES_FREE] = []
        for s in (
            S.IMAGE_FS_AVAILABLE,
            S.IMAGE_FS_INODES_FREE,
            S.CONTAINER_FS_AVAILABLE,
            S.CONTAINER_FS_INODES_FREE,
        ):
            out[s] = [containers, images]
    elif with_image_fs and split_container_image_fs:
        out[S.IMAGE_FS_AVAILABLE] = [images]
        out[S.IMAGE_FS_INODES_FREE] = [images]
        for s in (
            S.NODE_FS_AVAILABLE,
            S.NODE_FS_INODES_FREE,
            S.CONTAINER_FS_AVAILABLE,
            S.CONTAINER_FS_INODES_FREE,
        ):
            out[s] = [containers]
    else:
        for s in (
            S.NODE_FS_AVAILABLE,
            S.NODE_FS_INODES_FREE,
            S.IMAGE_FS_AVAILABLE,
            S.IMAGE_FS_INODES_FREE,
            S.CONTAINER_FS_AVAILABLE,
            S.CONTAINER_FS_INODES_FREE,
        ):
            out[s] = [containers, images]
    return out


# --- messages --------------------------------------------------------------------------------


def _threshold_format(value: ThresholdValue) -> QuantityFormat:
    return value.fmt if value.quantity is not None else BINARY_SI


def get_threshold_met_info(
    resource: str, thresholds: Iterable[Threshold], observations: Mapping[str, Observation]
) -> tuple[str, str] | None:
    """``getThresholdMetInfo``: (threshold quantity, available), printed, for the first
    threshold of ``resource`` with an observation."""
    for t in thresholds:
        if SIGNAL_TO_RESOURCE.get(t.signal) != resource:
            continue
        observed = observations.get(t.signal)
        if observed is not None:
            quantity = get_threshold_quantity(t.value, observed.capacity)
            return (
                format_quantity(quantity, _threshold_format(t.value)),
                format_quantity(observed.available, _OBSERVATION_FORMAT[t.signal]),
            )
    return None


def evict_message(
    resource_to_reclaim: str,
    pod: Pod,
    stats: StatsFunc,
    thresholds: Iterable[Threshold],
    observations: Mapping[str, Observation],
    *,
    pod_level_resources: bool = True,
) -> tuple[str, dict[str, str]]:
    """``evictionMessage``: the kubelet's message and Event annotations for evicting ``pod``."""
    annotations: dict[str, str] = {}
    message = _NODE_LOW_MESSAGE.format(resource_to_reclaim)
    info = get_threshold_met_info(resource_to_reclaim, thresholds, observations)
    if info is not None:
        message += _THRESHOLD_MET_MESSAGE.format(*info)
    pod_stats = stats(pod)
    if pod_stats is None:
        return message, annotations
    if (
        resource_to_reclaim == MEMORY
        and pod_level_resources
        and MEMORY in pod.pod_requests
        and pod_stats.memory is not None
    ):
        usage = format_quantity(memory_usage(pod_stats.memory), BINARY_SI)
        message += _POD_MESSAGE.format(
            pod.name, usage, format_request(pod.pod_requests[MEMORY]), resource_to_reclaim
        )
        annotations[OFFENDING_POD_KEY] = pod.name
        annotations[OFFENDING_POD_USAGE_KEY] = usage
    exceeded: list[str] = []
    usages: list[str] = []
    containers = (*pod.containers, *pod.init_containers)
    for cs in pod_stats.containers:
        for c in containers:
            if c.name != cs.name:
                continue
            request = c.requests.get(resource_to_reclaim, 0)
            used: int | None = None
            if resource_to_reclaim == EPHEMERAL_STORAGE:
                if (
                    cs.rootfs is not None
                    and cs.rootfs.used_bytes is not None
                    and cs.logs is not None
                    and cs.logs.used_bytes is not None
                ):
                    used = cs.rootfs.used_bytes + cs.logs.used_bytes
            elif (
                resource_to_reclaim == MEMORY
                and cs.memory is not None
                and cs.memory.working_set_bytes is not None
            ):
                used = cs.memory.working_set_bytes
            if used is not None and used > request:
                text = format_quantity(used, BINARY_SI)
                message += _CONTAINER_MESSAGE.format(
                    c.name, text, format_request(request), resource_to_reclaim
                )
                exceeded.append(c.name)
                usages.append(text)
            break
    annotations[OFFENDING_CONTAINERS_KEY] = ",".join(exceeded)
    annotations[OFFENDING_CONTAINERS_USAGE_KEY] = ",".join(usages)
    annotations[STARVED_RESOURCE_KEY] = resource_to_reclaim
    return message, annotations


def memcg_usage_threshold(threshold: Threshold, summary: Summary) -> int:
    """The memory-cgroup usage at which ``threshold`` is crossed (``memoryThresholdNotifier``):
    capacity − threshold + inactive_file, on the root cgroup, or the ``pods`` cgroup for the
    allocatable signal. Raises ``ValueError`` when the summary lacks a figure."""
    mem: MemoryStats | None = summary.node.memory
    if is_allocatable_eviction_threshold(threshold):
        pods = summary.node.system_container(SYSTEM_CONTAINER_PODS)
        if pods is None:
            raise ValueError(f"system container {SYSTEM_CONTAINER_PODS!r} not found in metrics")
        mem = pods.memory
    if (
        mem is None
        or mem.usage_bytes is None
        or mem.working_set_bytes is None
        or mem.available_bytes is None
    ):
        raise ValueError(
            "summary was incomplete: memory stats need usageBytes, workingSetBytes and "
            "availableBytes"
        )
    inactive_file = mem.usage_bytes - mem.working_set_bytes
    capacity = mem.available_bytes + mem.working_set_bytes
    return capacity - get_threshold_quantity(threshold.value, capacity) + inactive_file
