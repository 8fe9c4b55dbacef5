"""Scoring the feasible nodes: the default profile's main Score plugins.

``scheduler.framework.prioritize_nodes`` runs them. Weights are the 1.32 default profile's
(``scheduler.plugins.defaults.DEFAULT_PLUGIN_WEIGHTS``): TaintToleration 3, NodeAffinity 2,
NodeResourcesFit 1, PodTopologySpread 2, InterPodAffinity 2, NodeResourcesBalancedAllocation 1,
ImageLocality 1, applied in that order. ``SCORE_REGISTRY`` maps each kube plugin name to its
class; constructor keyword arguments mirror the plugin's kube args.

* TaintToleration: see ``scheduler.plugins.tainttoleration``.
* NodeAffinity: see ``scheduler.plugins.nodeaffinity``.
* NodeResourcesFit, LeastAllocated strategy with cpu and memory at weight 1: for each resource
  with non-zero allocatable, ``(allocatable - requested) * 100 / allocatable`` (0 when
  over-committed), where requested is the node's ``NonZeroRequested`` plus the pod's non-zero
  request (a container without a cpu/memory request counts 100m / 200Mi here, and only here);
  the node score is the weighted mean, integer division throughout.
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
* NodeResourcesBalancedAllocation (``balanced_allocation.go``, ``resource_allocation.go``):
  for each configured resource (cpu and memory by default) with non-zero allocatable, the
  fraction ``(node requested + pod request) / allocatable`` capped at 1, using the real
  requests (no 100m / 200Mi defaults); an extended resource the pod does not request is left
  out. The score is ``int((1 - std) * 100)``, where ``std`` is ``|f1 - f2| / 2`` for two
  fractions and the population standard deviation for more (0 for fewer). No normalization.
* ImageLocality (``image_locality.go``): for every init and app container whose image
  (``:latest`` appended when no tag is given) is among the node's ``status.images`` names,
  add ``size * (nodes holding the image / all nodes)``; the sum is clamped to
  ``[23 MiB, 1000 MiB * number of containers]`` and scaled linearly to 0..100.

Plugins score a whole list of nodes in one call (``score_nodes``) for speed; results are
deterministic. NodeResourcesFit and BalancedAllocation score once per
``NodeInfo.resource_class`` (nodes with equal amounts score alike).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Final

from kube.objects import Pod, PodAffinityTerm, WeightedPodAffinityTerm
from scheduler.filters.interpodaffinity import required_affinity_terms
from scheduler.filters.noderesources import is_scalar_resource_name
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
from scheduler.plugins.helper import SKIP, default_normalize_score, remember
from scheduler.plugins.nodeaffinity import NodeAffinityScorer
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
    "count_intolerable_taints_prefer_no_schedule",
    "default_normalize_score",
    "default_score_plugins",
    "prioritize_nodes",
]

DEFAULT_HARD_POD_AFFINITY_WEIGHT: Final = 1


# --- resource classes ------------------------------------------------------------------------

_CLASSES_KEY: Final = "ResourceClasses"
_FEW_CLASSES: Final = 16


def _resource_classes(
    state: CycleState, node_infos: Sequence[NodeInfo]
) -> tuple[list[int], dict[int, NodeInfo]] | None:
    """Each node's ``resource_class`` and one node per class; None when some node has none
    (a clone). Worked out once per list of nodes per cycle, shared by the resource scorers."""
    cached = state.read(_CLASSES_KEY)
    if cached is not None and cached[0] is node_infos:
        result: tuple[list[int], dict[int, NodeInfo]] | None = cached[1]
        return result
    classes = [ni.resource_class for ni in node_infos]
    distinct = set(classes)
    if len(distinct) <= _FEW_CLASSES:  # a C-level search per class beats building a dict
        representatives = {c: node_infos[classes.index(c)] for c in distinct}
    else:
        representatives = dict(zip(classes, node_infos, strict=True))
    result = None if -1 in representatives else (classes, representatives)
    state.write(_CLASSES_KEY, (node_infos, result))
    return result


def _score_by_resource_class(
    state: CycleState, node_infos: Sequence[NodeInfo], key: str, score: Callable[[NodeInfo], int]
) -> list[int]:
    """``[score(ni) for ni in node_infos]`` for a score that depends only on the node's
    allocatable, requested and non-zero requested amounts (NodeResourcesFit's and
    BalancedAllocation's): one score per resource class, spread to the nodes at C level. A
    node's score is also remembered until the node changes (``NodeInfo.memo`` under ``key``),
    which pays when most nodes differ (each pod requesting something else)."""
    grouped = _resource_classes(state, node_infos)
    if grouped is None:
        return [
            v if (v := ni.memo.get(key)) is not None else remember(ni.memo, key, score(ni))
            for ni in node_infos
        ]
    classes, representatives = grouped
    table = {
        c: v if (v := ni.memo.get(key)) is not None else remember(ni.memo, key, score(ni))
        for c, ni in representatives.items()
    }
    return list(map(table.__getitem__, classes))


# --- NodeResourcesFit (LeastAllocated) -------------------------------------------------------


def resource_weights(
    resources: Mapping[str, int] | Sequence[Mapping[str, object]] | None,
) -> dict[str, int]:
    """Resource name -> weight from ``{"cpu": 1}`` or the YAML list form
    ``[{"name": "cpu", "weight": 1}, ...]``; cpu and memory at weight 1 when None."""
    if resources is None:
        return {"cpu": 1, "memory": 1}
    if isinstance(resources, Mapping):
        out = {str(k): int(v) for k, v in resources.items()}
    else:
        out = {}
        for i, item in enumerate(resources):
            name, weight = item.get("name"), item.get("weight", 1)
            if not isinstance(name, str) or not name:
                raise ValueError(f"resources[{i}].name: Required value")
            if isinstance(weight, bool) or not isinstance(weight, int):
                raise ValueError(f"resources[{i}].weight: must be an integer, not {weight!r}")
            out[name] = weight
    for name, weight in out.items():
        if not 1 <= weight <= 100:
            raise ValueError(
                f"resources[{name}].weight: Invalid value: {weight}: resource weight of {name}"
                " not in valid range [1, 100]"
            )
    return out


def least_requested_score(requested: int, capacity: int) -> int:
    """``leastRequestedScore``."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


class LeastAllocatedScorer:
    """NodeResourcesFit's Score with the default ``LeastAllocated`` strategy (cpu, memory)."""

    name = "NodeResourcesFit"
    scores_in_range = True

    def __init__(
        self,
        weight: int = DEFAULT_PLUGIN_WEIGHTS["NodeResourcesFit"],
        *,
        resources: Mapping[str, int] | Sequence[Mapping[str, object]] | None = None,
    ) -> None:
        self.weight = weight
        self.resources: dict[str, int] = resource_weights(resources)
        self._key = (self.name, *self.resources.items())

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        return None

    def pod_requests(self, pod: Pod) -> tuple[int, ...]:
        """``calculatePodResourceRequestList``: non-zero requests for cpu and memory."""
        return tuple(
            pod.non_zero_requests.get(name, 0)
            if name in ("cpu", "memory")
            else pod.requests.get(name, 0)
            for name in self.resources
        )

    def score_node(self, pod: Pod, node_info: NodeInfo) -> int:
        return self._score(node_info, self.pod_requests(pod))

    def _score(self, node_info: NodeInfo, pod_requests: tuple[int, ...]) -> int:
        """``leastResourceScorer`` on ``calculateResourceAllocatableRequest``."""
        node_score = weight_sum = 0
        for (name, weight), want in zip(self.resources.items(), pod_requests, strict=True):
            if name in ("cpu", "memory"):
                requested = node_info.non_zero_requested.get(name, 0) + want
            elif want == 0 and is_scalar_resource_name(name):
                continue  # an extended resource the pod does not ask for
            else:
                requested = node_info.requested.get(name, 0) + want
            allocatable = node_info.allocatable.get(name, 0)
            if allocatable == 0:
                continue
            node_score += least_requested_score(requested, allocatable) * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        pod_requests = self.pod_requests(pod)
        # A str key: its hash is computed once, a tuple's on every lookup.
        key = repr((self._key, pod_requests))
        score = self._scorer(pod_requests)
        return _score_by_resource_class(state, node_infos, key, score)

    def _scorer(self, pod_requests: tuple[int, ...]) -> Callable[[NodeInfo], int]:
        if self._key != (self.name, ("cpu", 1), ("memory", 1)):
            return lambda ni: self._score(ni, pod_requests)
        want_cpu, want_mem = pod_requests

        def default(ni: NodeInfo) -> int:  # the default configuration, spelled out
            alloc = ni.allocatable
            a_cpu = alloc.get("cpu", 0)
            a_mem = alloc.get("memory", 0)
            if not (a_cpu and a_mem):
                return self._score(ni, pod_requests)
            r_cpu = ni.non_zero_requested["cpu"] + want_cpu
            r_mem = ni.non_zero_requested["memory"] + want_mem
            s_cpu = (a_cpu - r_cpu) * MAX_NODE_SCORE // a_cpu if r_cpu <= a_cpu else 0
            s_mem = (a_mem - r_mem) * MAX_NODE_SCORE // a_mem if r_mem <= a_mem else 0
            return (s_cpu + s_mem) // 2

        return default

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        return None


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


# --- NodeResourcesBalancedAllocation --------------------------------------------------------


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balancedResourceScorer``: 100 * (1 - standard deviation of the usage fractions)."""
    fractions = [
        min(req / alloc, 1.0) for req, alloc in zip(requested, allocatable, strict=True) if alloc
    ]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


class BalancedAllocationScorer:
    """NodeResourcesBalancedAllocation: favours nodes whose resources are used evenly."""

    name = "NodeResourcesBalancedAllocation"
    scores_in_range = True

    def __init__(
        self,
        weight: int = DEFAULT_PLUGIN_WEIGHTS["NodeResourcesBalancedAllocation"],
        *,
        resources: Mapping[str, int] | Sequence[Mapping[str, object]] | None = None,
    ) -> None:
        self.weight = weight
        self.resources: dict[str, int] = resource_weights(resources)

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        return None

    def pod_requests(self, pod: Pod) -> tuple[int, ...]:
        """``calculatePodResourceRequestList`` with ``useRequested``: the real requests."""
        return tuple(pod.requests.get(name, 0) for name in self.resources)

    def score_node(self, pod: Pod, node_info: NodeInfo) -> int:
        return self._score(node_info, self.pod_requests(pod))

    def _score(self, node_info: NodeInfo, pod_requests: tuple[int, ...]) -> int:
        requested: list[int] = []
        allocatable: list[int] = []
        for name, want in zip(self.resources, pod_requests, strict=True):
            if want == 0 and is_scalar_resource_name(name):
                continue  # an extended resource the pod does not ask for
            alloc = node_info.allocatable.get(name, 0)
            if alloc == 0:
                continue
            requested.append(node_info.requested.get(name, 0) + want)
            allocatable.append(alloc)
        return balanced_resource_score(requested, allocatable)

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        pod_requests = self.pod_requests(pod)
        key = repr((self.name, tuple(self.resources), pod_requests))
        score = self._scorer(pod_requests)
        return _score_by_resource_class(state, node_infos, key, score)

    def _scorer(self, pod_requests: tuple[int, ...]) -> Callable[[NodeInfo], int]:
        if tuple(self.resources) != ("cpu", "memory"):
            return lambda ni: self._score(ni, pod_requests)
        want_cpu, want_mem = pod_requests
        generic = self._score

        def default(ni: NodeInfo) -> int:  # cpu and memory, spelled out
            alloc = ni.allocatable
            a_cpu = alloc.get("cpu", 0)
            a_mem = alloc.get("memory", 0)
            if not (a_cpu and a_mem):
                return generic(ni, pod_requests)
            req = ni.requested
            r_cpu = req.get("cpu", 0) + want_cpu
            r_mem = req.get("memory", 0) + want_mem
            f_cpu = r_cpu / a_cpu if r_cpu < a_cpu else 1.0
            f_mem = r_mem / a_mem if r_mem < a_mem else 1.0
            diff = f_cpu - f_mem if f_cpu >= f_mem else f_mem - f_cpu
            return int((1 - diff / 2) * 100.0)  # halving is exact: same as |f1 - f2| / 2

        return default

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        return None


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
