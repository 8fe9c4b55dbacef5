"""Scoring the feasible nodes: the default profile's main Score plugins.

``scheduler.framework.prioritize_nodes`` runs them. Weights are the 1.32 default profile's
(``scheduler.plugins.defaults.DEFAULT_PLUGIN_WEIGHTS``): TaintToleration 3, NodeAffinity 2,
NodeResourcesFit 1, PodTopologySpread 2, InterPodAffinity 2, NodeResourcesBalancedAllocation 1,
ImageLocality 1, applied in that order. ``SCORE_REGISTRY`` maps each kube plugin name to its
class; constructor keyword arguments mirror the plugin's kube args.

* TaintToleration: see ``scheduler.plugins.tainttoleration``.
* NodeAffinity: see ``scheduler.plugins.nodeaffinity``.
* NodeResourcesFit: see ``scheduler.plugins.noderesources.least_allocated``.
* InterPodAffinity: see ``scheduler.plugins.interpodaffinity.scoring``.
* PodTopologySpread: see ``scheduler.plugins.podtopologyspread``.
* NodeResourcesBalancedAllocation: see ``scheduler.plugins.noderesources.balanced_allocation``.
* ImageLocality: see ``scheduler.plugins.imagelocality``.

Plugins score a whole list of nodes in one call (``score_nodes``) for speed; results are
deterministic. NodeResourcesFit and BalancedAllocation score once per
``NodeInfo.resource_class`` (nodes with equal amounts score alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from scheduler.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodePluginScores,
    NodeScores,
    PluginScore,
    ScorePlugin,
    prioritize_nodes,
)
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.plugins.helper import default_normalize_score
from scheduler.plugins.imagelocality import (
    MAX_CONTAINER_THRESHOLD,
    MB,
    MIN_THRESHOLD,
    ImageLocalityScorer,
    calculate_image_priority,
    normalized_image_name,
)
from scheduler.plugins.interpodaffinity.scoring import (
    DEFAULT_HARD_POD_AFFINITY_WEIGHT,
    InterPodAffinityScorer,
    TopologyScore,
)
from scheduler.plugins.nodeaffinity import NodeAffinityScorer
from scheduler.plugins.noderesources.balanced_allocation import (
    BalancedAllocationScorer,
    balanced_resource_score,
)
from scheduler.plugins.noderesources.least_allocated import (
    LeastAllocatedScorer,
    least_requested_score,
)
from scheduler.plugins.noderesources.resource_allocation import resource_weights
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.tainttoleration import (
    TaintTolerationScorer,
    count_intolerable_taints_prefer_no_schedule,
)

__all__ = [
    "DEFAULT_HARD_POD_AFFINITY_WEIGHT",
    "MAX_CONTAINER_THRESHOLD",
    "MAX_NODE_SCORE",
    "MB",
    "MIN_NODE_SCORE",
    "MIN_THRESHOLD",
    "SCORE_REGISTRY",
    "BalancedAllocationScorer",
    "ImageLocalityScorer",
    "InterPodAffinityScorer",
    "LeastAllocatedScorer",
    "NodeAffinityScorer",
    "NodePluginScores",
    "NodeScores",
    "PluginScore",
    "ScorePlugin",
    "TaintTolerationScorer",
    "TopologyScore",
    "balanced_resource_score",
    "calculate_image_priority",
    "count_intolerable_taints_prefer_no_schedule",
    "default_normalize_score",
    "default_score_plugins",
    "least_requested_score",
    "normalized_image_name",
    "prioritize_nodes",
    "resource_weights",
]


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


def default_score_plugins() -> list[ScorePlugin]:
    """The 1.32 default profile's Score plugins, in its order, with its weights."""
    return [SCORE_REGISTRY[name](weight=weight) for name, weight in DEFAULT_PLUGIN_WEIGHTS.items()]
