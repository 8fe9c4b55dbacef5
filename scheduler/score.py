"""Scoring the feasible nodes: the default profile's main Score plugins.

``prioritizeNodes`` / ``RunScorePlugins`` of kube-scheduler: each plugin's PreScore may answer
Skip (the plugin then scores nothing), Score gives a raw number per node, NormalizeScore maps
them to 0..100 (``MaxNodeScore``), then each score is multiplied by the plugin's weight and
the weighted scores are summed per node. Weights are the default profile's
(``default_plugins.go``): TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1,
InterPodAffinity 2, applied in that order.

* TaintToleration: the number of PreferNoSchedule taints not tolerated by the pod's
  tolerations with effect PreferNoSchedule or empty; normalized in reverse (fewest is best;
  all zero gives everyone 100).
* NodeAffinity: the sum of the weights of the preferred terms the node matches; normalized to
  the best node (``DefaultNormalizeScore``). PreScore answers Skip without preferred terms.
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

Not modelled (so totals differ from a real scheduler by their share): PodTopologySpread,
NodeResourcesBalancedAllocation and ImageLocality scoring.

Plugins score a whole list of nodes in one call (``score_nodes``) for speed; results are
deterministic. ``NodeScores`` keeps the weighted score of every plugin for every node so a
caller can explain a choice.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from scheduler.filters.base import SKIP, remember
from scheduler.filters.interpodaffinity import required_affinity_terms
from scheduler.filters.noderesources import is_scalar_resource_name
from scheduler.framework import Code, CycleState, Status
from scheduler.objects import Node, Pod, PodAffinityTerm, Toleration, WeightedPodAffinityTerm
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "DEFAULT_HARD_POD_AFFINITY_WEIGHT",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "InterPodAffinityScorer",
    "LeastAllocatedScorer",
    "NodeAffinityScorer",
    "NodePluginScores",
    "NodeScores",
    "PluginScore",
    "ScorePlugin",
    "TaintTolerationScorer",
    "default_normalize_score",
    "default_score_plugins",
    "prioritize_nodes",
]

MAX_NODE_SCORE: Final = 100
MIN_NODE_SCORE: Final = 0
DEFAULT_HARD_POD_AFFINITY_WEIGHT: Final = 1


class ScorePlugin(Protocol):
    """PreScore + Score + NormalizeScore of one plugin, with its profile weight."""

    name: str
    weight: int

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        """None/Success to score, Skip to not score this pod, anything else is an error."""
        ...

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        """The raw score of each node, in order."""
        ...

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        """Map raw scores to 0..100 in place (a no-op for plugins without NormalizeScore)."""
        ...


def default_normalize_score(max_priority: int, reverse: bool, scores: list[int]) -> None:
    """``helper.DefaultNormalizeScore``: scale to the largest score, optionally reversed."""
    max_count = max(scores, default=0)
    if max_count <= 0:
        if reverse:
            scores[:] = [max_priority] * len(scores)
        return
    if reverse:
        scores[:] = [max_priority - max_priority * s // max_count for s in scores]
    else:
        scores[:] = [max_priority * s // max_count for s in scores]


# --- TaintToleration -------------------------------------------------------------------------


def _prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> tuple[Toleration, ...]:
    """``getAllTolerationPreferNoSchedule``: an empty effect means every effect."""
    return tuple(t for t in tolerations if not t.effect or t.effect == "PreferNoSchedule")


def count_intolerable_taints_prefer_no_schedule(
    node: Node | None, tolerations: Sequence[Toleration]
) -> int:
    if node is None:
        return 0
    return sum(
        1
        for taint in node.taints
        if taint.effect == "PreferNoSchedule" and not any(t.tolerates(taint) for t in tolerations)
    )


_PRE_SCORE_TAINTS_KEY: Final = "PreScoreTaintToleration"


class TaintTolerationScorer:
    name = "TaintToleration"

    def __init__(self, weight: int = 3) -> None:
        self.weight = weight

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        # Without PreferNoSchedule taints every raw score is 0: no need to look at the nodes.
        state.write(_PRE_SCORE_TAINTS_KEY, snapshot.has_nodes_with_taint_effect("PreferNoSchedule"))
        return None

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        if state.read(_PRE_SCORE_TAINTS_KEY) is False:
            return [0] * len(node_infos)
        tolerations = _prefer_no_schedule_tolerations(pod.tolerations)
        return [
            count_intolerable_taints_prefer_no_schedule(ni.node, tolerations)
            if ni.node is not None and ni.node.taints
            else 0
            for ni in node_infos
        ]

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)


# --- NodeAffinity ----------------------------------------------------------------------------


class NodeAffinityScorer:
    name = "NodeAffinity"

    def __init__(self, weight: int = 2) -> None:
        self.weight = weight

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        a = pod.affinity
        if a is None or a.node_affinity is None or not a.node_affinity.preferred:
            return SKIP
        return None

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        a = pod.affinity
        terms = a.node_affinity.preferred if a is not None and a.node_affinity else ()
        key = "NodeAffinityScore" + repr(terms)

        def score(ni: NodeInfo) -> int:
            node = ni.node
            return 0 if node is None else sum(t.weight for t in terms if t.preference.matches(node))

        # Pods with the same preferences share per-node scores (NodeInfo.memo).
        return [
            v if (v := ni.memo.get(key)) is not None else remember(ni.memo, key, score(ni))
            for ni in node_infos
        ]

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)


# --- NodeResourcesFit (LeastAllocated) -------------------------------------------------------


def least_requested_score(requested: int, capacity: int) -> int:
    """``leastRequestedScore``."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


class LeastAllocatedScorer:
    """NodeResourcesFit's Score with the default ``LeastAllocated`` strategy (cpu, memory)."""

    name = "NodeResourcesFit"

    def __init__(self, weight: int = 1, *, resources: Mapping[str, int] | None = None) -> None:
        self.weight = weight
        self.resources: dict[str, int] = dict(resources or {"cpu": 1, "memory": 1})
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
        # A node's score is remembered until the node changes (NodeInfo.memo).
        return [
            v if (v := ni.memo.get(key)) is not None else remember(ni.memo, key, score(ni))
            for ni in node_infos
        ]

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

    def __init__(
        self,
        weight: int = 2,
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


def default_score_plugins() -> list[ScorePlugin]:
    """The default profile's Score plugins modelled here, in its order, with its weights."""
    return [
        TaintTolerationScorer(),
        NodeAffinityScorer(),
        LeastAllocatedScorer(),
        InterPodAffinityScorer(),
    ]


# --- running them ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PluginScore:
    """``PluginScore``: a plugin's weighted score for one node."""

    name: str
    score: int


@dataclass(frozen=True, slots=True)
class NodePluginScores:
    """``NodePluginScores``: one node's weighted plugin scores and their sum."""

    name: str
    scores: tuple[PluginScore, ...]
    total_score: int


class NodeScores:
    """The scores of the scored nodes, kept column-wise (one list per plugin)."""

    __slots__ = ("_node_names", "node_infos", "plugin_names", "plugin_scores", "total_scores")

    def __init__(
        self,
        node_infos: Sequence[NodeInfo],
        plugin_names: list[str],
        plugin_scores: list[list[int]],
        total_scores: list[int],
    ) -> None:
        self.node_infos = node_infos
        self.plugin_names = plugin_names
        self.plugin_scores = plugin_scores  # weighted; plugin_scores[p][node index]
        self.total_scores = total_scores
        self._node_names: list[str] | None = None

    @property
    def node_names(self) -> list[str]:
        if self._node_names is None:
            self._node_names = [ni.name for ni in self.node_infos]
        return self._node_names

    def __len__(self) -> int:
        return len(self.node_infos)

    def index_of(self, node_name: str) -> int:
        return self.node_names.index(node_name)

    def for_node(self, node_name: str) -> dict[str, int]:
        """Plugin name -> weighted score for one node."""
        i = self.index_of(node_name)
        return {p: col[i] for p, col in zip(self.plugin_names, self.plugin_scores, strict=True)}

    def as_list(self) -> list[NodePluginScores]:
        out = []
        for i, name in enumerate(self.node_names):
            scores = tuple(
                PluginScore(p, col[i])
                for p, col in zip(self.plugin_names, self.plugin_scores, strict=True)
            )
            out.append(NodePluginScores(name, scores, self.total_scores[i]))
        return out


def prioritize_nodes(
    state: CycleState,
    pod: Pod,
    node_infos: Sequence[NodeInfo],
    snapshot: Snapshot,
    score_plugins: Sequence[ScorePlugin],
) -> NodeScores | Status:
    """``prioritizeNodes``: the weighted scores of ``node_infos``, or an Error status.

    Without score plugins every node scores 1, as upstream.
    """
    if not score_plugins:
        return NodeScores(node_infos, [], [], [1] * len(node_infos))
    active: list[ScorePlugin] = []
    for plugin in score_plugins:
        status = plugin.pre_score(state, pod, node_infos, snapshot)
        if status is None or status.code is Code.Success:
            active.append(plugin)
        elif status.code is not Code.Skip:
            return Status(
                Code.Error,
                f'running PreScore plugin "{plugin.name}": {status.message}',
                plugin=plugin.name,
            )
    columns: list[list[int]] = []
    totals = [0] * len(node_infos)
    for plugin in active:
        scores = plugin.score_nodes(state, pod, node_infos)
        plugin.normalize_score(state, pod, scores)
        if scores and (min(scores) < MIN_NODE_SCORE or max(scores) > MAX_NODE_SCORE):
            bad = next(s for s in scores if not MIN_NODE_SCORE <= s <= MAX_NODE_SCORE)
            return Status(
                Code.Error,
                f'plugin "{plugin.name}" returns an invalid score {bad}, it should in the range'
                f" of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                plugin=plugin.name,
            )
        if plugin.weight != 1:
            weight = plugin.weight
            scores = [s * weight for s in scores]
        columns.append(scores)
        totals = list(map(operator.add, totals, scores))
    return NodeScores(node_infos, [p.name for p in active], columns, totals)
