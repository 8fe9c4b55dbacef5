"""Scoring the feasible nodes: the default profile's main Score plugins.

``scheduler.framework.prioritize_nodes`` runs them. Weights are the 1.32 default profile's
(``scheduler.plugins.defaults.DEFAULT_PLUGIN_WEIGHTS``): TaintToleration 3, NodeAffinity 2,
NodeResourcesFit 1, PodTopologySpread 2, InterPodAffinity 2, NodeResourcesBalancedAllocation 1,
ImageLocality 1, applied in that order. ``SCORE_REGISTRY`` maps each kube plugin name to its
class; constructor keyword arguments mirror the plugin's kube args.

* TaintToleration: see ``scheduler.plugins.tainttoleration``.
* NodeAffinity: see ``scheduler.plugins.nodeaffinity``.
* NodeResourcesFit: see ``scheduler.plugins.noderesources.least_allocated``.
* InterPodAffinity: PreScore builds a score per topology pair from every existing pod (all
  pods when the incoming pod has preferred terms, else only pods with affinity): +weight for
  each preferred affinity term of the incoming pod the existing pod matches, -weight for its
  preferred anti-affinity terms, +1 (``hardPodAffinityWeight``) for each *required* affinity
  term of the existing pod that the incoming pod matches, and +/-weight for the existing pod's
  preferred affinity/anti-affinity terms matching the incoming pod; each at the existing
  pod's node's value of the term's topology key. A node scores the sum over its labels;
  normalization is min-max to 0..100 in floating point, truncated. PreScore answers Skip when
  no term matched anything.

* PodTopologySpread: see ``scheduler.filters.podtopologyspread``.
* NodeResourcesBalancedAllocation: see ``scheduler.plugins.noderesources.balanced_allocation``.
* ImageLocality (``image_locality.go``): for every init and app container whose image
  (``:latest`` appended when no tag is given) is among the node's ``status.images`` names,
  add ``size * (nodes holding the image / all nodes)``; the sum is clamped to
  ``[23 MiB, 1000 MiB * number of containers]`` and scaled linearly to 0..100.

Plugins score a whole list of nodes in one call (``score_nodes``) for speed; results are
deterministic. NodeResourcesFit and BalancedAllocation score once per
``NodeInfo.resource_class`` (nodes with equal amounts score alike).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

from kube.objects import Pod, PodAffinityTerm, WeightedPodAffinityTerm
from scheduler.filters.interpodaffinity import required_affinity_terms
from scheduler.filters.podtopologyspread import PodTopologySpread
from scheduler.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    CycleState,
    NodePluginScores,
    NodeScores,
    PluginScore,
    ScorePlugin,
    Status,
    prioritize_nodes,
)
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.plugins.helper import SKIP, default_normalize_score
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
from scheduler.plugins.tainttoleration import (
    TaintTolerationScorer,
    count_intolerable_taints_prefer_no_schedule,
)
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "DEFAULT_HARD_POD_AFFINITY_WEIGHT",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
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
    "balanced_resource_score",
    "count_intolerable_taints_prefer_no_schedule",
    "default_normalize_score",
    "default_score_plugins",
    "least_requested_score",
    "prioritize_nodes",
    "resource_weights",
]

DEFAULT_HARD_POD_AFFINITY_WEIGHT: Final = 1


# --- InterPodAffinity ------------------------------------------------------------------------

_PRE_SCORE_KEY: Final = "PreScoreInterPodAffinity"
TopologyScore = dict[str, dict[str, int]]


def _preferred(pod: Pod) -> tuple[tuple[WeightedPodAffinityTerm, ...], ...]:
    a = pod.affinity
    if a is None:
        return ((), ())
    aff = a.pod_affinity.preferred if a.pod_affinity is not None else ()
    anti = a.pod_anti_affinity.preferred if a.pod_anti_affinity is not None else ()
    return (aff, anti)


class InterPodAffinityScorer:
    name = "InterPodAffinity"
    scores_in_range = True

    def __init__(
        self,
        weight: int = DEFAULT_PLUGIN_WEIGHTS["InterPodAffinity"],
        *,
        hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT,
        ignore_preferred_terms_of_existing_pods: bool = False,
    ) -> None:
        self.weight = weight
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        preferred_affinity, preferred_anti = _preferred(pod)
        has_constraints = bool(preferred_affinity or preferred_anti)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        all_nodes = (
            snapshot.node_info_list if has_constraints else snapshot.have_pods_with_affinity_list()
        )
        ns_labels_of = snapshot.namespace_labels
        pod_ns_labels = ns_labels_of(pod.namespace)
        hard_weight = self.hard_pod_affinity_weight
        topology_score: TopologyScore = {}
        touched = False

        def process(
            term: PodAffinityTerm,
            weight: int,
            target: Pod,
            ns_labels: Mapping[str, str],
            labels: Mapping[str, str],
        ) -> None:
            nonlocal touched
            key = term.topology_key
            if key in labels and term.matches(target, ns_labels):
                values = topology_score.setdefault(key, {})
                values[labels[key]] = values.get(labels[key], 0) + weight
                touched = True

        for ni in all_nodes:
            node = ni.node
            if node is None or not node.labels:
                continue
            labels = node.labels
            for existing in ni.pods if has_constraints else ni.pods_with_affinity:
                if has_constraints:
                    existing_ns_labels = ns_labels_of(existing.namespace)
                    for w in preferred_affinity:
                        process(w.term, w.weight, existing, existing_ns_labels, labels)
                    for w in preferred_anti:
                        process(w.term, -w.weight, existing, existing_ns_labels, labels)
                if existing.affinity is None:
                    continue
                if hard_weight > 0:
                    for term in required_affinity_terms(existing):
                        process(term, hard_weight, pod, pod_ns_labels, labels)
                existing_affinity, existing_anti = _preferred(existing)
                for w in existing_affinity:
                    process(w.term, w.weight, pod, pod_ns_labels, labels)
                for w in existing_anti:
                    process(w.term, -w.weight, pod, pod_ns_labels, labels)
        if not touched:
            return SKIP
        state.write(_PRE_SCORE_KEY, topology_score)
        return None

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        topology_score: TopologyScore = state.read(_PRE_SCORE_KEY) or {}
        out: list[int] = []
        for ni in node_infos:
            labels = ni.node.labels if ni.node is not None else {}
            total = 0
            for key, values in topology_score.items():
                if key in labels:
                    total += values.get(labels[key], 0)
            out.append(total)
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        if not state.read(_PRE_SCORE_KEY) or not scores:
            return
        lo, hi = min(scores), max(scores)
        diff = hi - lo
        if diff > 0:
            scores[:] = [int(float(MAX_NODE_SCORE) * ((s - lo) / diff)) for s in scores]
        else:
            scores[:] = [0] * len(scores)


# --- ImageLocality ---------------------------------------------------------------------------

MB: Final = 1024 * 1024
MIN_THRESHOLD: Final = 23 * MB
MAX_CONTAINER_THRESHOLD: Final = 1000 * MB
_PRE_SCORE_IMAGES_KEY: Final = "PreScoreImageLocality"


def normalized_image_name(name: str) -> str:
    """``normalizedImageName``: append ``:latest`` when the name has no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def calculate_image_priority(sum_scores: int, num_containers: int) -> int:
    """``calculatePriority``: clamp to the thresholds and scale to 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    span = max_threshold - MIN_THRESHOLD
    if span == 0:
        return 0
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // span


class ImageLocalityScorer:
    """ImageLocality: favours nodes that already hold the pod's container images."""

    name = "ImageLocality"
    scores_in_range = True

    def __init__(self, weight: int = DEFAULT_PLUGIN_WEIGHTS["ImageLocality"]) -> None:
        self.weight = weight

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        # Per container image (in pod order): its spread-scaled score, when some node has it.
        total = len(snapshot.node_info_list)
        scaled: list[tuple[str, int]] = []
        if snapshot.has_images() and total:
            for c in (*pod.init_containers, *pod.containers):
                name = normalized_image_name(c.image)
                found = snapshot.image_state(name)
                if found is not None:
                    size, num_nodes = found
                    scaled.append((name, int(size * (num_nodes / total))))
        num_containers = len(pod.init_containers) + len(pod.containers)
        state.write(_PRE_SCORE_IMAGES_KEY, (tuple(scaled), num_containers))
        return None

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        scaled, num_containers = state.read(_PRE_SCORE_IMAGES_KEY) or ((), 0)
        if not scaled:
            return [calculate_image_priority(0, num_containers)] * len(node_infos)
        out: list[int] = []
        for ni in node_infos:
            node = ni.node
            total = 0
            if node is not None and node.images:
                names = {n for image in node.images for n in image.names}
                total = sum(score for name, score in scaled if name in names)
            out.append(calculate_image_priority(total, num_containers))
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        return None


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
