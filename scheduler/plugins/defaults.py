"""kube-scheduler 1.32's default profile: which plugins run, in which order, with which Score
weights (``pkg/scheduler/apis/config/v1/default_plugins.go``).

kube lists the plugins once, under MultiPoint: each runs at every extension point it
implements, in this order (``MULTI_POINT``; ``scheduler.config`` defaults a
KubeSchedulerConfiguration with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["DEFAULT_PLUGINS", "DEFAULT_PLUGIN_WEIGHTS", "MULTI_POINT"]

MULTI_POINT: Final[tuple[tuple[str, int | None], ...]] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)
"""The default MultiPoint list of ``kubescheduler.config.k8s.io/v1``: plugin name and weight
(None where kube sets none)."""

_RUN_HERE: Final = frozenset(
    {
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
    }
)

DEFAULT_PLUGINS: Final[tuple[tuple[str, int | None], ...]] = tuple(
    (name, weight) for name, weight in MULTI_POINT if name in _RUN_HERE
)
"""The MultiPoint list's plugins this library runs as Filter or Score plugins: name and Score
weight (None for plugins without Score). Left out are the ones modelled elsewhere or not at all:
SchedulingGates and PrioritySort are the queue's (``scheduler.queue``), DefaultPreemption is
``scheduler.preemption``, DefaultBinder is the caller's bind; the volume plugins
(VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone) are not modelled, and
``scheduler.schedule.unmodelled_warning`` names the pods they would judge."""

DEFAULT_PLUGIN_WEIGHTS: Final[Mapping[str, int]] = MappingProxyType(
    {name: weight for name, weight in DEFAULT_PLUGINS if weight is not None}
)
"""Score plugin -> weight, in the profile's Score order; every scorer's default weight."""
