"""The in-tree plugins by their kube names, and the default profile built from them (kube's
``plugins/registry.go``; the profile is ``scheduler.plugins.defaults``).

``FILTER_REGISTRY`` and ``SCORE_REGISTRY`` map a plugin's name to the class that implements
that extension point: kube has one struct per plugin, here a plugin with both a Filter and a
Score has a class for each (PodTopologySpread has one for both). Constructor keyword arguments
mirror the plugin's kube args; a scorer's first argument is its weight.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from scheduler.framework import FilterPlugin, Framework, ScorePlugin
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS, DEFAULT_PLUGINS
from scheduler.plugins.imagelocality import ImageLocalityScorer
from scheduler.plugins.interpodaffinity.filtering import InterPodAffinity
from scheduler.plugins.interpodaffinity.scoring import InterPodAffinityScorer
from scheduler.plugins.nodeaffinity import NodeAffinity, NodeAffinityScorer
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources.balanced_allocation import BalancedAllocationScorer
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.plugins.noderesources.least_allocated import LeastAllocatedScorer
from scheduler.plugins.noderesources.most_allocated import MostAllocatedScorer
from scheduler.plugins.noderesources.requested_to_capacity_ratio import (
    RequestedToCapacityRatioScorer,
)
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.tainttoleration import TaintToleration, TaintTolerationScorer

__all__ = [
    "FILTER_REGISTRY",
    "IN_TREE_PLUGINS",
    "SCORE_REGISTRY",
    "BalancedAllocationScorer",
    "ImageLocalityScorer",
    "InterPodAffinity",
    "InterPodAffinityScorer",
    "LeastAllocatedScorer",
    "MostAllocatedScorer",
    "NodeAffinity",
    "NodeAffinityScorer",
    "NodeName",
    "NodePorts",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "PodTopologySpread",
    "RequestedToCapacityRatioScorer",
    "TaintToleration",
    "TaintTolerationScorer",
    "default_filter_plugins",
    "default_framework",
    "default_score_plugins",
    "node_resources_fit_scorer",
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

SCORE_REGISTRY: Final[Mapping[str, type]] = MappingProxyType(
    {
        "TaintToleration": TaintTolerationScorer,
        "NodeAffinity": NodeAffinityScorer,
        "NodeResourcesFit": LeastAllocatedScorer,
        "PodTopologySpread": PodTopologySpread,
        "InterPodAffinity": InterPodAffinityScorer,
        "NodeResourcesBalancedAllocation": BalancedAllocationScorer,
        "ImageLocality": ImageLocalityScorer,
    }
)
"""kube Score plugin name -> class, in the 1.32 default profile's order."""


IN_TREE_PLUGINS: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        name: frozenset(points.split())
        for name, points in {
            "PrioritySort": "QueueSort",
            "SchedulingGates": "PreEnqueue",
            "NodeUnschedulable": "Filter",
            "NodeName": "Filter",
            "TaintToleration": "Filter PreScore Score",
            "NodeAffinity": "PreFilter Filter PreScore Score",
            "NodePorts": "PreFilter Filter",
            "NodeResourcesFit": "PreFilter Filter PreScore Score",
            "VolumeRestrictions": "PreFilter Filter",
            "NodeVolumeLimits": "PreFilter Filter",
            "VolumeBinding": "PreFilter Filter Reserve PreBind PreScore Score",
            "VolumeZone": "PreFilter Filter",
            "PodTopologySpread": "PreFilter Filter PreScore Score",
            "InterPodAffinity": "PreFilter Filter PreScore Score",
            "DefaultPreemption": "PostFilter",
            "NodeResourcesBalancedAllocation": "PreScore Score",
            "ImageLocality": "Score",
            "DefaultBinder": "Bind",
            "DynamicResources": "PreEnqueue PreFilter Filter PostFilter Reserve PreBind",
        }.items()
    }
)
"""kube's in-tree registry (``plugins/registry.go``): each plugin and the extension points it
implements. A KubeSchedulerConfiguration may name only these (``scheduler.config``); of them,
the Filter and Score ones in ``FILTER_REGISTRY`` and ``SCORE_REGISTRY`` run here,
DefaultPreemption is ``scheduler.preemption``, PrioritySort and SchedulingGates are the queue's."""


def node_resources_fit_scorer(
    weight: int, scoring_strategy: Mapping[str, Any] | None = None
) -> LeastAllocatedScorer:
    """NodeResourcesFit's Score for a ``scoringStrategy`` as in YAML (``type``, ``resources``,
    ``requestedToCapacityRatio.shape``); LeastAllocated on cpu and memory when None."""
    strategy = scoring_strategy or {}
    kind = strategy.get("type", "LeastAllocated")
    resources = strategy.get("resources") or None
    if kind == "LeastAllocated":
        return LeastAllocatedScorer(weight, resources=resources)
    if kind == "MostAllocated":
        return MostAllocatedScorer(weight, resources=resources)
    if kind == "RequestedToCapacityRatio":
        shape = (strategy.get("requestedToCapacityRatio") or {}).get("shape") or ()
        return RequestedToCapacityRatioScorer(weight, resources=resources, shape=shape)
    raise ValueError(
        f'scoringStrategy.type: Unsupported value: "{kind}": supported values:'
        ' "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
    )


def default_filter_plugins() -> list[FilterPlugin]:
    """New instances of the 1.32 default profile's Filter plugins, in its order. The order
    decides which reason a node reports first."""
    return [FILTER_REGISTRY[name]() for name, _ in DEFAULT_PLUGINS if name in FILTER_REGISTRY]


def default_score_plugins() -> list[ScorePlugin]:
    """New instances of the 1.32 default profile's Score plugins, in its order, with its
    weights."""
    return [SCORE_REGISTRY[name](weight=weight) for name, weight in DEFAULT_PLUGIN_WEIGHTS.items()]


def default_framework() -> Framework:
    """A ``Framework`` running the default profile's Filter plugins."""
    return Framework(default_filter_plugins())
