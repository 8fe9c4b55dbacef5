"""InterPodAffinity's PreFilter and Filter: required pod affinity and anti-affinity, both ways.

``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``, in its counting form (the
newest upstream splits hostname-scoped terms into a node-local fast path with the same
verdicts; releases up to 1.35 count as here). ``PreFilterState`` holds the counts,
``InterPodAffinity.filter`` the verdicts, ``filter_nodes`` the same for many nodes at once.
The counts come from the snapshot's ``AffinityIndex``; upstream's walk over the pods is kept as
the reference (``existing_anti_affinity_counts``, ``incoming_affinity_anti_affinity_counts``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from kube.objects import Node, Pod, PodAffinityTerm
from scheduler.framework import Code, CycleState, FilterBatchResult, Status
from scheduler.plugins.helper import SKIP
from scheduler.plugins.interpodaffinity.index import affinity_index
from scheduler.snapshot import NodeInfo, Snapshot, label_values

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "InterPodAffinity",
    "NamespaceLabels",
    "NestedCounts",
    "PreFilterState",
    "TopologyCounts",
    "existing_anti_affinity_counts",
    "incoming_affinity_anti_affinity_counts",
    "indexed_counts",
    "required_affinity_terms",
    "required_anti_affinity_terms",
]

NAME: Final = "InterPodAffinity"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: Final = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod anti-affinity rules"

PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME

_AFFINITY_REJECT: Final = Status(
    Code.UnschedulableAndUnresolvable, ERR_REASON_AFFINITY_RULES_NOT_MATCH, plugin=NAME
)
_ANTI_AFFINITY_REJECT: Final = Status(
    Code.Unschedulable, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME
)
_EXISTING_REJECT: Final = Status(
    Code.Unschedulable, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME
)

TopologyCounts = dict[tuple[str, str], int]
NestedCounts = dict[str, dict[str, int]]  # topology key -> label value -> count
NamespaceLabels = Callable[[str], Mapping[str, str]]


def required_affinity_terms(pod: Pod) -> tuple[PodAffinityTerm, ...]:
    a = pod.affinity
    if a is None or a.pod_affinity is None:
        return ()
    return a.pod_affinity.required


def required_anti_affinity_terms(pod: Pod) -> tuple[PodAffinityTerm, ...]:
    a = pod.affinity
    if a is None or a.pod_anti_affinity is None:
        return ()
    return a.pod_anti_affinity.required


def _add(counts: TopologyCounts, node: Node, topology_key: str, delta: int) -> None:
    labels = node.labels
    if topology_key not in labels:
        return
    pair = (topology_key, labels[topology_key])
    value = counts.get(pair, 0) + delta
    if value:
        counts[pair] = value
    else:
        counts.pop(pair, None)


def _matches_all(
    terms: Sequence[PodAffinityTerm], pod: Pod, namespace_labels: NamespaceLabels
) -> bool:
    """``podMatchesAllAffinityTerms``: false for no terms."""
    if not terms:
        return False
    ns_labels = namespace_labels(pod.namespace)
    return all(t.matches(pod, ns_labels) for t in terms)


class PreFilterState:
    """``preFilterState``: the counts, per topology key and label value (``NestedCounts``).

    * ``existing_anti_affinity_counts``: required anti-affinity terms of pods already placed
      (only nodes from ``Snapshot.have_pods_with_required_anti_affinity_list``) that match the
      incoming pod, each counted at the topology value of the node of the pod that owns the
      term;
    * ``affinity_counts``: pods anywhere that match *all* the incoming pod's required affinity
      terms, counted once per term at their node's value of that term's key;
    * ``anti_affinity_counts``: pods anywhere matching each required anti-affinity term of the
      incoming pod.

    A term matches a pod when the pod's namespace is in the term's namespaces (by default the
    namespace of the pod that owns the term) or its namespace labels match the term's
    namespaceSelector, and the label selector matches (a missing selector matches nothing;
    ``matchLabelKeys``/``mismatchLabelKeys`` were merged into it when the pod was converted, as
    the API server does). Upstream resolves the incoming pod's namespaceSelector into namespace
    names through the Namespace lister; here it is evaluated against
    ``Snapshot.namespace_labels`` of the other pod's namespace, which is the same for every
    namespace the snapshot knows, and an unknown namespace is treated like the API server's
    default (only its name label). ``update_with_pod`` keeps the three counts right for a pod
    added to or removed from a node (``add_pod``/``remove_pod``), so the nominated-pods pass
    and preemption's dry runs see them.

    The inner maps may be the ``AffinityIndex``'s own (``borrowed``): one is copied before its
    first change, and ``clone`` copies them all.
    """

    __slots__ = (
        "affinity_counts",
        "affinity_terms",
        "anti_affinity_counts",
        "anti_affinity_terms",
        "borrowed",
        "existing_anti_affinity_counts",
        "namespace_labels",
        "pod",
        "pod_namespace_labels",
        "self_match",
    )

    def __init__(
        self,
        pod: Pod,
        namespace_labels: NamespaceLabels,
        *,
        existing_anti_affinity_counts: NestedCounts,
        affinity_counts: NestedCounts,
        anti_affinity_counts: NestedCounts,
        borrowed: set[int] | None = None,
    ) -> None:
        self.pod = pod
        self.namespace_labels = namespace_labels
        self.pod_namespace_labels = namespace_labels(pod.namespace)
        self.affinity_terms = required_affinity_terms(pod)
        self.anti_affinity_terms = required_anti_affinity_terms(pod)
        self.self_match = _matches_all(self.affinity_terms, pod, namespace_labels)
        self.existing_anti_affinity_counts = existing_anti_affinity_counts
        self.affinity_counts = affinity_counts
        self.anti_affinity_counts = anti_affinity_counts
        self.borrowed: set[int] = borrowed if borrowed is not None else set()

    def clone(self) -> PreFilterState:
        out = PreFilterState.__new__(PreFilterState)
        for slot in PreFilterState.__slots__:
            setattr(out, slot, getattr(self, slot))
        out.existing_anti_affinity_counts = _copy(self.existing_anti_affinity_counts)
        out.affinity_counts = _copy(self.affinity_counts)
        out.anti_affinity_counts = _copy(self.anti_affinity_counts)
        out.borrowed = set()
        return out

    def pairs(self) -> tuple[TopologyCounts, TopologyCounts, TopologyCounts]:
        """The three counts keyed by topology pair, as upstream's ``topologyToMatchedTermCount``
        (existing, affinity, anti-affinity)."""
        return (
            _pairs(self.existing_anti_affinity_counts),
            _pairs(self.affinity_counts),
            _pairs(self.anti_affinity_counts),
        )

    def _add(self, counts: NestedCounts, node: Node, topology_key: str, delta: int) -> None:
        value = node.labels.get(topology_key)
        if value is None:
            return
        values = counts.get(topology_key)
        if values is None:
            values = counts[topology_key] = {}
        elif id(values) in self.borrowed:
            values = counts[topology_key] = dict(values)
        left = values.get(value, 0) + delta
        if left:
            values[value] = left
        else:
            values.pop(value, None)

    def update_with_pod(self, other: Pod, node: Node | None, multiplier: int) -> None:
        """``updateWithPod``: account for ``other`` being added (+1) to or removed (-1) from
        ``node``."""
        if node is None:
            return
        ns_labels = self.pod_namespace_labels
        for term in required_anti_affinity_terms(other):
            if term.matches(self.pod, ns_labels):
                self._add(self.existing_anti_affinity_counts, node, term.topology_key, multiplier)
        if _matches_all(self.affinity_terms, other, self.namespace_labels):
            for term in self.affinity_terms:
                self._add(self.affinity_counts, node, term.topology_key, multiplier)
        if self.anti_affinity_terms:
            other_ns_labels = self.namespace_labels(other.namespace)
            for term in self.anti_affinity_terms:
                if term.matches(other, other_ns_labels):
                    self._add(self.anti_affinity_counts, node, term.topology_key, multiplier)


def _copy(counts: NestedCounts) -> NestedCounts:
    return {key: dict(values) for key, values in counts.items()}


def _pairs(counts: NestedCounts) -> TopologyCounts:
    return {(k, v): n for k, values in counts.items() for v, n in values.items() if n}


class _Sum:
    """Inner maps summed per topology key: one alone is borrowed as it is, more are added up."""

    __slots__ = ("borrowed", "counts", "merged")

    def __init__(self, borrowed: set[int]) -> None:
        self.counts: NestedCounts = {}
        self.merged: set[str] = set()
        self.borrowed = borrowed

    def add(self, key: str, values: Mapping[str, int], times: int = 1) -> None:
        if not values:
            return
        have = self.counts.get(key)
        if have is None and times == 1 and isinstance(values, dict):
            self.counts[key] = values
            self.borrowed.add(id(values))
            return
        if have is None or key not in self.merged:
            have = self.counts[key] = dict(have) if have is not None else {}
            self.merged.add(key)
        for value, n in values.items():
            left = have.get(value, 0) + n * times
            if left:
                have[value] = left
            else:
                have.pop(value, None)

    def done(self) -> NestedCounts:
        return self.counts


def indexed_counts(
    pod: Pod, snapshot: Snapshot, borrowed: set[int]
) -> tuple[NestedCounts, NestedCounts, NestedCounts]:
    """The three counts from the snapshot's ``AffinityIndex``: each distinct existing
    anti-affinity term matched once against the pod, and the pods matching the pod's terms
    kept per topology value; equal to ``existing_anti_affinity_counts`` and
    ``incoming_affinity_anti_affinity_counts``."""
    index = affinity_index(snapshot)
    ns_labels = snapshot.namespace_labels(pod.namespace)
    existing = _Sum(borrowed)
    for term, _, counts in index.anti_required.values():
        if term.matches(pod, ns_labels):
            existing.add(term.topology_key, counts.values(term.topology_key, snapshot))
    affinity = _Sum(borrowed)
    affinity_terms = required_affinity_terms(pod)
    if affinity_terms:
        matching = index.matching(affinity_terms, snapshot)
        keys: dict[str, int] = {}
        for term in affinity_terms:
            keys[term.topology_key] = keys.get(term.topology_key, 0) + 1
        for key, times in keys.items():
            affinity.add(key, matching.values(key, snapshot), times)
    anti = _Sum(borrowed)
    for term in required_anti_affinity_terms(pod):
        anti.add(
            term.topology_key, index.matching((term,), snapshot).values(term.topology_key, snapshot)
        )
    return existing.done(), affinity.done(), anti.done()


def existing_anti_affinity_counts(pod: Pod, snapshot: Snapshot) -> TopologyCounts:
    """``getExistingAntiAffinityCounts``."""
    counts: TopologyCounts = {}
    ns_labels = snapshot.namespace_labels(pod.namespace)
    for ni in snapshot.have_pods_with_required_anti_affinity_list():
        node = ni.node
        if node is None:
            continue
        for existing in ni.pods_with_required_anti_affinity:
            for term in required_anti_affinity_terms(existing):
                if term.matches(pod, ns_labels):
                    _add(counts, node, term.topology_key, 1)
    return counts


def incoming_affinity_anti_affinity_counts(
    pod: Pod, snapshot: Snapshot
) -> tuple[TopologyCounts, TopologyCounts]:
    """``getIncomingAffinityAntiAffinityCounts``: one pass over every pod in the cluster."""
    affinity: TopologyCounts = {}
    anti: TopologyCounts = {}
    affinity_terms = required_affinity_terms(pod)
    anti_terms = required_anti_affinity_terms(pod)
    if not affinity_terms and not anti_terms:
        return affinity, anti
    ns_labels_of = snapshot.namespace_labels
    for ni in snapshot.node_info_list:
        node = ni.node
        if node is None:
            continue
        for existing in ni.pods:
            ns_labels = ns_labels_of(existing.namespace)
            if affinity_terms and all(t.matches(existing, ns_labels) for t in affinity_terms):
                for term in affinity_terms:
                    _add(affinity, node, term.topology_key, 1)
            for term in anti_terms:
                if term.matches(existing, ns_labels):
                    _add(anti, node, term.topology_key, 1)
    return affinity, anti


def _nested(counts: TopologyCounts) -> NestedCounts:
    out: NestedCounts = {}
    for (key, value), n in counts.items():
        if n:
            out.setdefault(key, {})[value] = n
    return out


def _satisfies_pod_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    counts = s.affinity_counts
    for term in s.affinity_terms:
        key = term.topology_key
        if key not in labels:
            return False  # every topology key must be a node label
        values = counts.get(key)
        if values is None or values.get(labels[key], 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group with affinity to itself may start the group anywhere.
    return s.self_match and not any(counts.values())


def _satisfies_pod_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    counts = s.anti_affinity_counts
    if counts:
        for term in s.anti_affinity_terms:
            key = term.topology_key
            if key in labels:
                values = counts.get(key)
                if values is not None and values.get(labels[key], 0) > 0:
                    return False
    return True


def _satisfies_existing_pods_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    for key, values in s.existing_anti_affinity_counts.items():
        value = labels.get(key)
        if value is not None and values.get(value, 0) > 0:
            return False
    return True


def _state(state: CycleState) -> PreFilterState | Status:
    s = state.read(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return Status(
            Code.Error, f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
        )
    return s


class InterPodAffinity:
    name = NAME

    use_index = True  # False: walk every pod each cycle, as upstream does (the reference)

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        """The counts (``PreFilterState``); Skip when no existing pod's anti-affinity matches
        the pod and the pod has no required terms."""
        borrowed: set[int] = set()
        if self.use_index:
            existing, affinity, anti = indexed_counts(pod, snapshot, borrowed)
        else:
            flat_affinity, flat_anti = incoming_affinity_anti_affinity_counts(pod, snapshot)
            existing = _nested(existing_anti_affinity_counts(pod, snapshot))
            affinity, anti = _nested(flat_affinity), _nested(flat_anti)
        if (
            not any(existing.values())
            and not required_affinity_terms(pod)
            and not required_anti_affinity_terms(pod)
        ):
            return SKIP
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState(
                pod,
                snapshot.namespace_labels,
                existing_anti_affinity_counts=existing,
                affinity_counts=affinity,
                anti_affinity_counts=anti,
                borrowed=borrowed,
            ),
        )
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """In this order:

        1. affinity: every required affinity term's topology key must be a node label, else
           UU; if some term has no matching pod in the node's topology value the node fails,
           UU ``node(s) didn't match pod affinity rules`` — unless no pod in the cluster
           matches (``affinity_counts`` is empty) and the pod matches all its own terms: the
           first pod of a group with affinity to itself may go anywhere with the topology
           labels;
        2. the incoming pod's anti-affinity: U ``node(s) didn't match pod anti-affinity rules``;
        3. existing pods' anti-affinity: any node label pair with a count: U
           ``node(s) didn't satisfy existing pods anti-affinity rules``.
        """
        s = _state(state)
        if isinstance(s, Status):
            return s
        node = node_info.node
        labels: Mapping[str, str] = node.labels if node is not None else {}
        if s.affinity_terms and not _satisfies_pod_affinity(s, labels):
            return _AFFINITY_REJECT
        if not _satisfies_pod_anti_affinity(s, labels):
            return _ANTI_AFFINITY_REJECT
        if not _satisfies_existing_pods_anti_affinity(s, labels):
            return _EXISTING_REJECT
        return None

    def filter_nodes(
        self, state: CycleState, pod: Pod, node_infos: list[NodeInfo]
    ) -> FilterBatchResult:
        """``filter`` for many nodes: each check is one pass of label lookups over the nodes,
        the later checks' verdicts overwritten by the earlier ones' (``filter``'s order)."""
        s = _state(state)
        if isinstance(s, Status):
            return [], [(ni, s) for ni in node_infos]
        columns: dict[str, list[str | None]] = {}

        def column(key: str) -> list[str | None]:
            """Each node's value of label ``key`` (None: no such label), once per key."""
            out = columns.get(key)
            if out is None:
                out = columns[key] = label_values(node_infos, key)
            return out

        # Each check overwrites the verdicts of the checks before it (``filter``'s order is
        # the reverse); one list comprehension per check, which CPython runs fastest.
        verdicts: list[Status | None] | None = None

        def mark(key: str, held: Mapping[str, int], verdict: Status) -> None:
            nonlocal verdicts
            get = held.get
            if verdicts is None:
                verdicts = [verdict if get(v, 0) > 0 else None for v in column(key)]  # type: ignore[arg-type]
            else:
                verdicts = [
                    verdict if get(v, 0) > 0 else old  # type: ignore[arg-type]
                    for v, old in zip(column(key), verdicts, strict=True)
                ]

        for key, values in s.existing_anti_affinity_counts.items():
            if values:
                mark(key, values, _EXISTING_REJECT)
        anti = s.anti_affinity_counts
        for key in {t.topology_key for t in s.anti_affinity_terms}:
            held = anti.get(key)
            if held:
                mark(key, held, _ANTI_AFFINITY_REJECT)
        if s.affinity_terms:
            if verdicts is None:
                verdicts = [None] * len(node_infos)
            counts = s.affinity_counts
            anywhere = s.self_match and not any(counts.values())
            by_key = [
                (column(t.topology_key), counts.get(t.topology_key) or {}) for t in s.affinity_terms
            ]
            for i in range(len(verdicts)):
                pods_exist = True
                for col, held in by_key:
                    value = col[i]
                    if value is None:
                        verdicts[i] = _AFFINITY_REJECT
                        break
                    if held.get(value, 0) <= 0:
                        pods_exist = False
                else:
                    if not pods_exist and not anywhere:
                        verdicts[i] = _AFFINITY_REJECT
        if verdicts is None:
            return node_infos, []
        passed = [ni for ni, v in zip(node_infos, verdicts, strict=True) if v is None]
        if len(passed) == len(node_infos):
            return passed, []
        return passed, [
            (ni, v) for ni, v in zip(node_infos, verdicts, strict=True) if v is not None
        ]

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        s = _state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_add, node_info.node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        s = _state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_remove, node_info.node, -1)
        return None
