"""NodeAffinity: ``spec.nodeSelector`` AND the required node affinity must match (Filter), and
the preferred terms a node matches add to its score (Score).

``pkg/scheduler/framework/plugins/nodeaffinity`` with
``component-helpers/scheduling/corev1/nodeaffinity.GetRequiredNodeAffinity``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kube.labels import IN
from kube.objects import Node, NodeSelector, Pod, PreferredSchedulingTerm
from kube.objects import NodeAffinity as NodeAffinityTerms
from scheduler.framework import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    FilterBatchResult,
    QueueingHint,
    Status,
)
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.plugins.helper import SKIP, NoPreFilterExtensions, default_normalize_score, remember
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "ERR_REASON_CONFLICT",
    "ERR_REASON_ENFORCED",
    "ERR_REASON_POD",
    "NAME",
    "OBJECT_NAME_FIELD",
    "NodeAffinity",
    "NodeAffinityScorer",
    "RequiredNodeAffinity",
    "read_added_affinity",
    "required_node_affinity_node_names",
]

NAME: Final = "NodeAffinity"
ERR_REASON_POD: Final = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_CONFLICT: Final = "pod affinity terms conflict"
ERR_REASON_ENFORCED: Final = "node(s) didn't match scheduler-enforced node affinity"
OBJECT_NAME_FIELD: Final = "metadata.name"

_PRE_FILTER_KEY: Final = "PreFilter" + NAME
_REJECT: Final = Status(Code.UnschedulableAndUnresolvable, ERR_REASON_POD, plugin=NAME)
_ENFORCED: Final = Status(Code.UnschedulableAndUnresolvable, ERR_REASON_ENFORCED, plugin=NAME)


def read_added_affinity(added: Mapping[str, Any] | None) -> NodeAffinityTerms | None:
    """``addedAffinity`` (a ``v1.NodeAffinity`` as in YAML) read as a pod's node affinity is
    read; None when absent. Raises ``kube.reader.InvalidObject`` for a bad term."""
    if not added:
        return None
    pod = Pod.from_dict(
        {"metadata": {"name": "addedAffinity"}, "spec": {"affinity": {"nodeAffinity": added}}}
    )
    return pod.affinity.node_affinity if pod.affinity is not None else None


# Up to this many nodes a batch is matched directly: remembering verdicts pays off over many
# nodes and pods, not for the few nodes a PreFilterResult leaves (a daemon pod's one).
_DIRECT: Final = 8


class RequiredNodeAffinity:
    """``nodeaffinity.RequiredNodeAffinity``: the pod's nodeSelector and required terms.

    Every ``nodeSelector`` pair must be a node label with that value; the terms of
    ``requiredDuringSchedulingIgnoredDuringExecution`` are ORed, the requirements of a term
    ANDed (operators In, NotIn, Exists, DoesNotExist, Gt, Lt on labels; In/NotIn on the field
    ``metadata.name``); a term with no requirement matches nothing, and so does a selector
    with no terms. A mismatch is UnschedulableAndUnresolvable ``node(s) didn't match Pod's
    node affinity/selector``."""

    __slots__ = ("_memo_key", "node_selector", "required")

    def __init__(self, pod: Pod) -> None:
        self.node_selector: tuple[tuple[str, str], ...] = tuple(pod.node_selector.items())
        a = pod.affinity
        na = a.node_affinity if a is not None else None
        self.required: NodeSelector | None = na.required if na is not None else None
        self._memo_key: str | None = None

    @property
    def memo_key(self) -> str:
        """Pods with the same constraints share per-node verdicts (``NodeInfo.memo``) under
        this key. Spelled out on first use: a pod restricted to a node or two (a daemon pod)
        is matched directly and never needs it."""
        if self._memo_key is None:
            self._memo_key = NAME + repr((self.node_selector, self.required))
        return self._memo_key

    def match(self, node: Node | None) -> bool:
        if node is None:
            return False
        if self.node_selector:
            labels: Mapping[str, str] = node.labels
            for key, value in self.node_selector:
                if labels.get(key) != value:
                    return False
        return self.required is None or self.required.matches(node)


def required_node_affinity_node_names(pod: Pod) -> frozenset[str] | None:
    """The ``PreFilterResult`` of NodeAffinity: node names, or None for "all nodes".

    An empty set means the terms conflict (no node can match).
    """
    a = pod.affinity
    na = a.node_affinity if a is not None else None
    if na is None or na.required is None or not na.required.terms:
        return None
    names: set[str] = set()
    for term in na.required.terms:
        term_names: set[str] | None = None
        for req in term.match_fields:
            if req.key == OBJECT_NAME_FIELD and req.operator == IN:
                values = set(req.values)
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None  # this term allows any node name, and terms are ORed
        names |= term_names
    return frozenset(names)


class NodeAffinity(NoPreFilterExtensions):
    """The PreFilter and Filter of the plugin. Its one arg, ``addedAffinity``
    (``NodeAffinityArgs``: a node affinity a scheduling profile applies to every pod it
    schedules, "Node affinity per scheduling profile" in the docs), is ANDed with the pod's own
    (a node it rejects is ``node(s) didn't match scheduler-enforced node affinity``); its
    preferred terms add to the pod's in ``NodeAffinityScorer``."""

    name = NAME

    def __init__(self, *, added_affinity: Mapping[str, Any] | None = None) -> None:
        added = read_added_affinity(added_affinity)
        self.added_node_selector: NodeSelector | None = added.required if added else None

    def is_schedulable_after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """``isSchedulableAfterNodeChange``: the node now matches the profile's added affinity
        and the pod's nodeSelector and required terms, and did not before (or is new)."""
        if not isinstance(new, Node):
            return QueueingHint.Queue
        if self.added_node_selector is not None and not self.added_node_selector.matches(new):
            return QueueingHint.QueueSkip
        required = RequiredNodeAffinity(pod)
        if not required.match(new):
            return QueueingHint.QueueSkip
        if isinstance(old, Node) and required.match(old):
            return QueueingHint.QueueSkip
        return QueueingHint.Queue

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        """Skip when the pod has neither a nodeSelector nor required terms and the profile adds
        no required affinity. When every required term pins ``metadata.name`` with ``In``, the
        nodes to evaluate are the union over terms of the intersection within each term
        (``pre_filter_result``; the profile's ``addedAffinity`` is not part of it, as in kube);
        an empty result means the terms contradict each other and the pod is rejected at once
        with UnschedulableAndUnresolvable ``pod affinity terms conflict``. Nodes left out get
        ``node(s) didn't satisfy plugin(s) [NodeAffinity]`` from the scheduler, not from
        here."""
        required = RequiredNodeAffinity(pod)
        if (
            not required.node_selector
            and required.required is None
            and self.added_node_selector is None
        ):
            return SKIP
        state.write(_PRE_FILTER_KEY, required)
        names = required_node_affinity_node_names(pod)
        state.write(_PRE_FILTER_KEY + "/nodes", names)
        if names is not None and not names:
            return Status(Code.UnschedulableAndUnresolvable, ERR_REASON_CONFLICT)
        return None

    def pre_filter_result(self, state: CycleState) -> frozenset[str] | None:
        names: frozenset[str] | None = state.read(_PRE_FILTER_KEY + "/nodes")
        return names

    def _required(self, state: CycleState, pod: Pod) -> RequiredNodeAffinity:
        required: RequiredNodeAffinity | None = state.read(_PRE_FILTER_KEY)
        # Filter without PreFilter (as upstream allows) computes it on the spot.
        return required if required is not None else RequiredNodeAffinity(pod)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        added = self.added_node_selector
        if added is not None and (node_info.node is None or not added.matches(node_info.node)):
            return _ENFORCED
        return None if self._required(state, pod).match(node_info.node) else _REJECT

    def filter_nodes(
        self, state: CycleState, pod: Pod, node_infos: list[NodeInfo]
    ) -> FilterBatchResult:
        if self.added_node_selector is not None:
            verdicts = [self.filter(state, pod, ni) for ni in node_infos]
            return [ni for ni, v in zip(node_infos, verdicts, strict=True) if v is None], [
                (ni, v) for ni, v in zip(node_infos, verdicts, strict=True) if v is not None
            ]
        required = self._required(state, pod)
        match = required.match
        if len(node_infos) <= _DIRECT:
            verdicts_ok = [match(ni.node) for ni in node_infos]
        else:
            key = required.memo_key
            verdicts_ok = [
                v if (v := ni.memo.get(key)) is not None else remember(ni.memo, key, match(ni.node))
                for ni in node_infos
            ]
        passed = [ni for ni, ok in zip(node_infos, verdicts_ok, strict=True) if ok]
        if len(passed) == len(node_infos):
            return passed, []
        return passed, [
            (ni, _REJECT) for ni, ok in zip(node_infos, verdicts_ok, strict=True) if not ok
        ]


class NodeAffinityScorer:
    """The PreScore, Score and NormalizeScore of the plugin: the sum of the weights of the
    preferred terms (the pod's and the profile's ``addedAffinity``'s) the node matches,
    normalized to the best node (``DefaultNormalizeScore``); PreScore answers Skip when there
    are none."""

    name = NAME
    scores_in_range = True

    def __init__(
        self,
        weight: int = DEFAULT_PLUGIN_WEIGHTS[NAME],
        *,
        added_affinity: Mapping[str, Any] | None = None,
    ) -> None:
        self.weight = weight
        added = read_added_affinity(added_affinity)
        self.added_preferred: tuple[PreferredSchedulingTerm, ...] = added.preferred if added else ()

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        a = pod.affinity
        if (
            a is None or a.node_affinity is None or not a.node_affinity.preferred
        ) and not self.added_preferred:
            return SKIP
        return None

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        a = pod.affinity
        own = a.node_affinity.preferred if a is not None and a.node_affinity else ()
        terms = self.added_preferred + own
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
