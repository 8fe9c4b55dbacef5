"""InterPodAffinity's PreScore, Score and NormalizeScore (``interpodaffinity/scoring.go``): the
preferred pod affinity and anti-affinity terms, both ways, add to or take from a node's score.

Upstream walks the pods every cycle (kept here as the reference, ``use_index = False``); by
default the sums come from the snapshot's ``AffinityIndex``: each term's matching pods per
topology value, weighted (``ScoreSources``), added up per node in Score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, cast

from kube.objects import Pod, PodAffinityTerm, WeightedPodAffinityTerm
from scheduler.framework import MAX_NODE_SCORE, CycleState, Status
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.plugins.helper import SKIP
from scheduler.plugins.interpodaffinity.filtering import NAME, required_affinity_terms
from scheduler.plugins.interpodaffinity.index import affinity_index
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "DEFAULT_HARD_POD_AFFINITY_WEIGHT",
    "PRE_SCORE_STATE_KEY",
    "InterPodAffinityScorer",
    "ScoreSources",
    "TopologyScore",
]

DEFAULT_HARD_POD_AFFINITY_WEIGHT: Final = 1
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME
_NO_LABELS: Final[Mapping[str, str]] = {}
TopologyScore = dict[str, dict[str, int]]
# What Score sums per node: topology key -> [(weight, label value -> count), ...].
ScoreSources = dict[str, list[tuple[int, dict[str, int]]]]


def _preferred(pod: Pod) -> tuple[tuple[WeightedPodAffinityTerm, ...], ...]:
    a = pod.affinity
    if a is None:
        return ((), ())
    aff = a.pod_affinity.preferred if a.pod_affinity is not None else ()
    anti = a.pod_anti_affinity.preferred if a.pod_anti_affinity is not None else ()
    return (aff, anti)


class InterPodAffinityScorer:
    """The PreScore, Score and NormalizeScore of the plugin; the keyword arguments are
    ``InterPodAffinityArgs``.

    PreScore builds a score per topology pair from every existing pod (all pods when the
    incoming pod has preferred terms, else only pods with affinity): +weight for each preferred
    affinity term of the incoming pod the existing pod matches, -weight for its preferred
    anti-affinity terms, +``hard_pod_affinity_weight`` (1 by default) for each *required*
    affinity term of the existing pod that the incoming pod matches, and +/-weight for the
    existing pod's preferred affinity/anti-affinity terms matching the incoming pod; each at the
    existing pod's node's value of the term's topology key. PreScore answers Skip when no term
    matched anything. A node scores the sum over its labels; normalization is min-max to
    0..100 in floating point, truncated.
    """

    name = NAME
    scores_in_range = True
    use_index = True  # False: walk the pods each cycle, as upstream does (the reference)

    def __init__(
        self,
        weight: int = DEFAULT_PLUGIN_WEIGHTS[NAME],
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
        if self.use_index:
            return self._indexed_pre_score(
                state, pod, snapshot, (preferred_affinity, preferred_anti)
            )
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
        state.write(
            PRE_SCORE_STATE_KEY,
            {key: [(1, values)] for key, values in topology_score.items()},
        )
        return None

    def _indexed_pre_score(
        self,
        state: CycleState,
        pod: Pod,
        snapshot: Snapshot,
        preferred: tuple[tuple[WeightedPodAffinityTerm, ...], ...],
    ) -> Status | None:
        """The same score from the snapshot's ``AffinityIndex``: the pods matching each of
        the pod's preferred terms per topology value, and each distinct term of the existing
        pods matched once against the pod."""
        index = affinity_index(snapshot)
        sources: ScoreSources = {}

        def use(key: str, weight: int, values: dict[str, int]) -> None:
            if values:
                sources.setdefault(key, []).append((weight, values))

        preferred_affinity, preferred_anti = preferred
        for w in preferred_affinity:
            key = w.term.topology_key
            use(key, w.weight, index.matching((w.term,), snapshot).values(key, snapshot))
        for w in preferred_anti:
            key = w.term.topology_key
            use(key, -w.weight, index.matching((w.term,), snapshot).values(key, snapshot))
        ns_labels = snapshot.namespace_labels(pod.namespace)
        hard_weight = self.hard_pod_affinity_weight
        if hard_weight > 0:
            for term, _, counts in index.affinity_required.values():
                if term.matches(pod, ns_labels):
                    key = term.topology_key
                    use(key, hard_weight, counts.values(key, snapshot))
        for sign, groups in ((1, index.affinity_preferred), (-1, index.anti_preferred)):
            for term, weight, counts in groups.values():
                if term.matches(pod, ns_labels):
                    key = term.topology_key
                    use(key, sign * weight, counts.values(key, snapshot))
        if not sources:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, sources)
        return None

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        """Each node's sum over the topology keys it has: a column of label values per key,
        and per source one pass over the column."""
        sources: ScoreSources = state.read(PRE_SCORE_STATE_KEY) or {}
        labels = [ni.node.labels if ni.node is not None else _NO_LABELS for ni in node_infos]
        out = [0] * len(labels)
        for key, weighted in sources.items():
            column = [lab.get(key) for lab in labels]  # None: no such label, never counted
            for weight, values in weighted:
                get = cast("dict[str | None, int]", values).get
                if weight == 1:
                    out = [total + get(v, 0) for total, v in zip(out, column, strict=True)]
                else:
                    out = [total + weight * get(v, 0) for total, v in zip(out, column, strict=True)]
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        if not state.read(PRE_SCORE_STATE_KEY) or not scores:
            return
        lo, hi = min(scores), max(scores)
        diff = hi - lo
        if diff > 0:
            scores[:] = [int(float(MAX_NODE_SCORE) * ((s - lo) / diff)) for s in scores]
        else:
            scores[:] = [0] * len(scores)
