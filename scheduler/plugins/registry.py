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
from typing import Final

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
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.tainttoleration import TaintToleration, TaintTolerationScorer

__all__ = [
    "FILTER_REGISTRY",
    "SCORE_REGISTRY",
    "BalancedAllocationScorer",
    "ImageLocalityScorer",
    "InterPodAffinity",
    "InterPodAffinityScorer",
    "LeastAllocatedScorer",
    "NodeAffinity",
    "NodeAffinityScorer",
    "NodeName",
    "NodePorts",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "PodTopologySpread",
    "TaintToleration",
    "TaintTolerationScorer",
    "default_filter_plugins",
    "default_framework",
    "default_score_plugins",
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
