"""Filter plugins and the default profile.

One plugin per module, one job per plugin, as in kube-scheduler. ``default_framework()`` is
the Filter chain used by ``find_feasible_nodes``, ``schedule_one`` and preemption; the order is
the default profile's (``pkg/scheduler/apis/config/v1/default_plugins.go``), which decides
which reason a node reports first: NodeUnschedulable, NodeName, TaintToleration,
NodeAffinity, NodePorts, NodeResourcesFit, (the volume plugins, not modelled here),
PodTopologySpread, InterPodAffinity. ``FILTER_REGISTRY`` maps each kube plugin name to its
class; constructor keyword arguments mirror the plugin's kube args.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from scheduler.framework import BatchFilterPlugin, FilterPlugin, Framework, PreFilterResultPlugin
from scheduler.plugins.interpodaffinity.filtering import InterPodAffinity
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources.fit import NodeResourcesFit, fits_request
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.tainttoleration import TaintToleration

__all__ = [
    "FILTER_REGISTRY",
    "BatchFilterPlugin",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeName",
    "NodePorts",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "PodTopologySpread",
    "PreFilterResultPlugin",
    "TaintToleration",
    "default_filter_plugins",
    "default_framework",
    "fits_request",
]


FILTER_REGISTRY: Final[Mapping[str, type]] = MappingProxyType(
    {
        "NodeUnschedulable": NodeUnschedulable,
        "NodeName": NodeName,
        "TaintToleration": TaintToleration,
        "NodeAffinity": NodeAffinity,
        "NodePorts": NodePorts,
        "NodeResourcesFit": NodeResourcesFit,
        "PodTopologySpread": PodTopologySpread,
        "InterPodAffinity": InterPodAffinity,
    }
)
"""kube Filter plugin name -> class, in the 1.32 default profile's order."""


def default_filter_plugins() -> list[FilterPlugin]:
    """New instances of the 1.32 default profile's Filter plugins, in its order."""
    return [cls() for cls in FILTER_REGISTRY.values()]


def default_framework() -> Framework:
    return Framework(default_filter_plugins())
