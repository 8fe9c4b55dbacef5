"""kube-scheduler 1.32's default profile: which plugins run, in which order, with which Score
weights (``pkg/scheduler/apis/config/v1/default_plugins.go``).

kube lists the plugins once, under MultiPoint: each runs at every extension point it
implements, in this order. Left out are the ones modelled elsewhere or not at all:
SchedulingGates and PrioritySort are the queue's (``scheduler.queue``), DefaultPreemption is
``scheduler.preemption``, DefaultBinder is the caller's bind; the volume plugins
(VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone) are not modelled, and
``scheduler.schedule.unmodelled_warning`` names the pods they would judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["DEFAULT_PLUGINS", "DEFAULT_PLUGIN_WEIGHTS"]

DEFAULT_PLUGINS: Final[tuple[tuple[str, int | None], ...]] = (
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
)
"""The MultiPoint list: plugin name and Score weight (None for plugins without Score)."""

DEFAULT_PLUGIN_WEIGHTS: Final[Mapping[str, int]] = MappingProxyType(
    {name: weight for name, weight in DEFAULT_PLUGINS if weight is not None}
)
"""Score plugin -> weight, in the profile's Score order; every scorer's default weight."""
