"""The eviction manager's small types: ``pkg/kubelet/eviction/types.go``.

The kubelet hides its collaborators behind tiny interfaces (``ImageGC``, ``ContainerGC``,
``DiskInfoProvider``, ``SummaryProvider``); we keep one protocol, ``NodeReclaim``, with the same
method names, so the pure core can be driven by the agent's real node or by a test double. Time is a
``Clock`` passed in; nothing here reads the wall clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from agent.eviction.summary import PodStats, Summary
from agent.eviction.thresholds import Threshold
from kube.objects import Pod, PodCondition

__all__ = [
    "DEFAULT_FEATURE_GATES",
    "DEFAULT_PRESSURE_TRANSITION_PERIOD_SECONDS",
    "IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS",
    "Clock",
    "EvictionDecision",
    "FsStatsType",
    "ManagerConfig",
    "NodeCondition",
    "NodeReclaim",
    "Observation",
    "StatsFunc",
]

# immediateEvictionGracePeriodSeconds: 1 since kubernetes/kubernetes#124063 (0 before, #115819).
IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS: Final = 1
DEFAULT_PRESSURE_TRANSITION_PERIOD_SECONDS: Final = 300.0

# Feature gates the eviction manager consults, at their current upstream defaults.
DEFAULT_FEATURE_GATES: Final[Mapping[str, bool]] = {
    "KubeletSeparateDiskGC": True,
    "PodDisruptionConditions": True,
    "PodLevelResources": True,
}


class NodeCondition:
    """The node condition types the eviction manager reports."""

    MEMORY_PRESSURE: Final = "MemoryPressure"
    DISK_PRESSURE: Final = "DiskPressure"
    PID_PRESSURE: Final = "PIDPressure"


class FsStatsType:
    """``fsStatsType``: which disk usage of a pod counts for a signal."""

    ROOT: Final = "root"
    LOGS: Final = "logs"
    LOCAL_VOLUME_SOURCE: Final = "localVolumeSource"
    IMAGES: Final = "images"


class Clock(Protocol):
    def now(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Observation:
    """``signalObservation``: available and capacity in whole units; ``time`` None = unknown."""

    available: int
    capacity: int
    time: float | None = None


StatsFunc = Callable[[Pod], PodStats | None]


class NodeReclaim(Protocol):
    """What the kubelet's ``DiskInfoProvider``, ``ContainerGC``, ``ImageGC`` and summary provider
    offer the eviction manager. Exceptions are logged and ignored, as upstream ignores errors."""

    def has_dedicated_image_fs(self) -> bool: ...

    def has_dedicated_container_fs(self) -> bool: ...

    def delete_all_unused_containers(self) -> None: ...

    def delete_unused_images(self) -> None: ...

    def get_summary(self) -> Summary: ...


@dataclass(frozen=True, slots=True)
class ManagerConfig:
    """``eviction.Config``.

    ``pressure_transition_period_seconds`` of 0 becomes 5 min, as KubeletConfiguration defaulting
    does. ``eviction_preference_namespaces`` lists the namespaces whose pods may state an
    ``eviction-preference`` (``*`` = all; see ``agent.eviction.preference``); empty by default,
    so no pod can exempt or demote itself and the decisions are exactly the kubelet's.
    """

    thresholds: tuple[Threshold, ...] | list[Threshold] = ()
    max_pod_grace_period_seconds: int = 0
    pressure_transition_period_seconds: float = DEFAULT_PRESSURE_TRANSITION_PERIOD_SECONDS
    local_storage_capacity_isolation: bool = True
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    eviction_preference_namespaces: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "thresholds", tuple(self.thresholds))
        object.__setattr__(
            self, "eviction_preference_namespaces", frozenset(self.eviction_preference_namespaces)
        )
        if self.pressure_transition_period_seconds == 0:
            object.__setattr__(
                self,
                "pressure_transition_period_seconds",
                DEFAULT_PRESSURE_TRANSITION_PERIOD_SECONDS,
            )

    def feature_enabled(self, name: str) -> bool:
        return self.feature_gates.get(name, DEFAULT_FEATURE_GATES.get(name, False))


@dataclass(frozen=True, slots=True)
class EvictionDecision:
    """One pod to evict and how, as the kubelet's ``evictPod`` would carry it out.

    ``signal`` is the threshold's signal, or the local-storage metric label (``emptydirfs.limit``,
    ``ephemeralpodfs.limit``, ``ephemeralcontainerfs.limit``). ``condition`` is the DisruptionTarget
    condition (None for local-storage evictions, as upstream). ``annotations`` are the Event's.
    """

    pod: Pod
    grace_period_override: int
    message: str
    condition: PodCondition | None
    signal: str
    annotations: Mapping[str, str] = field(default_factory=dict)
    resource: str = ""
    threshold: Threshold | None = None
    reason: str = "Evicted"
