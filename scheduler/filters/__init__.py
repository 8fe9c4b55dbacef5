"""Filter plugins and the default profile.

One plugin per module, one job per plugin, as in kube-scheduler. ``default_framework()`` is
the Filter chain used by ``find_feasible_nodes``, ``schedule_one`` and preemption; the order is
the default profile's (``pkg/scheduler/apis/config/v1/default_plugins.go``), which decides
which reason a node reports first: NodeUnschedulable, NodeName, TaintToleration,
NodeAffinity, NodePorts, NodeResourcesFit, then (volume and topology-spread plugins, not
modelled here) InterPodAffinity.
"""

from __future__ import annotations

from scheduler.filters.base import BatchFilterPlugin, PreFilterResultPlugin
from scheduler.filters.interpodaffinity import InterPodAffinity
from scheduler.filters.nodeaffinity import NodeAffinity
from scheduler.filters.nodename import NodeName
from scheduler.filters.nodeports import NodePorts
from scheduler.filters.noderesources import NodeResourcesFit, fits_request
from scheduler.filters.nodeunschedulable import NodeUnschedulable
from scheduler.filters.tainttoleration import TaintToleration
from scheduler.framework import FilterPlugin, Framework

__all__ = [
    "BatchFilterPlugin",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeName",
    "NodePorts",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "PreFilterResultPlugin",
    "TaintToleration",
    "default_filter_plugins",
    "default_framework",
    "fits_request",
]


def default_filter_plugins() -> list[FilterPlugin]:
    """New instances of the default profile's Filter plugins, in its order."""
    return [
        NodeUnschedulable(),
        NodeName(),
        TaintToleration(),
        NodeAffinity(),
        NodePorts(),
        NodeResourcesFit(),
        InterPodAffinity(),
    ]


def default_framework() -> Framework:
    return Framework(default_filter_plugins())
