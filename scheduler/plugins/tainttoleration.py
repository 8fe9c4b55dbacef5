"""TaintToleration: a node's NoSchedule/NoExecute taints must all be tolerated (Filter), and
nodes with fewer untolerated PreferNoSchedule taints score higher (Score).

``pkg/scheduler/framework/plugins/tainttoleration``, with a PreFilter of our own that skips
the Filter when it could only pass.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from itertools import compress, repeat
from typing import Final

from kube.objects import Node, Pod, Taint, Toleration
from scheduler.framework import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    FilterBatchResult,
    QueueingHint,
    Status,
)
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.plugins.helper import (
    SKIP,
    NoPreFilterExtensions,
    default_normalize_score,
    distinct_objects,
    remember,
)
from scheduler.snapshot import NodeInfo, NodeWindow, Snapshot

__all__ = [
    "DO_NOT_SCHEDULE_EFFECTS",
    "ERR_REASON_UNTOLERATED",
    "NAME",
    "TaintToleration",
    "TaintTolerationScorer",
    "count_intolerable_taints_prefer_no_schedule",
    "find_matching_untolerated_taint",
    "is_schedulable_after_node_change",
    "is_schedulable_after_pod_toleration_change",
]

NAME: Final = "TaintToleration"
ERR_REASON_UNTOLERATED: Final = "node(s) had untolerated taint(s)"
DO_NOT_SCHEDULE_EFFECTS: Final = frozenset({"NoSchedule", "NoExecute"})

_REJECT: Final = Status(Code.UnschedulableAndUnresolvable, ERR_REASON_UNTOLERATED, plugin=NAME)


def find_matching_untolerated_taint(
    taints: Iterable[Taint],
    tolerations: Sequence[Toleration],
    effects: frozenset[str] = DO_NOT_SCHEDULE_EFFECTS,
) -> Taint | None:
    """``FindMatchingUntoleratedTaint`` with the ``DoNotScheduleTaintsFilterFunc`` default."""
    for taint in taints:
        if taint.effect not in effects:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def _tolerates_everything(tolerations: Sequence[Toleration]) -> bool:
    """True when keyless Exists tolerations cover both NoSchedule and NoExecute."""
    covered: set[str] = set()
    for t in tolerations:
        if not t.key and t.operator == "Exists":
            if not t.effect:
                return True
            covered.add(t.effect)
    return covered >= DO_NOT_SCHEDULE_EFFECTS


class TaintToleration(NoPreFilterExtensions):
    name = NAME

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        """Upstream has no PreFilter here; ours answers Skip when Filter could only pass: no
        node in the snapshot has a NoSchedule or NoExecute taint, or the pod tolerates every
        such taint (keyless ``operator: Exists`` tolerations)."""
        if not any(snapshot.has_nodes_with_taint_effect(e) for e in DO_NOT_SCHEDULE_EFFECTS):
            return SKIP
        return SKIP if _tolerates_everything(pod.tolerations) else None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """The first taint with effect NoSchedule or NoExecute that no toleration tolerates
        (``find_matching_untolerated_taint``, in the node's taint order) rejects the node with
        UnschedulableAndUnresolvable ``node(s) had untolerated taint(s)``: since
        kubernetes#134740 (1.35, cherry-picked to 1.34) the scheduler no longer puts taint keys
        and values in pod statuses, as they may be sensitive. Older releases said ``node(s)
        had untolerated taint {key: value}`` (1.25-1.34) and ``node(s) had taints that the pod
        didn't tolerate`` before that. ``find_matching_untolerated_taint`` still names the
        taint for callers that want to explain it."""
        node = node_info.node
        if node is None or not node.taints:
            return None
        if find_matching_untolerated_taint(node.taints, pod.tolerations) is None:
            return None
        return _REJECT

    def filter_nodes(
        self, state: CycleState, pod: Pod, node_infos: list[NodeInfo]
    ) -> FilterBatchResult:
        """``filter`` for many nodes. The walk's chunks read the snapshot's taints column, where
        equal taints are one object: one verdict per distinct object. Other lists keep
        verdicts per node (``NodeInfo.memo``) for pods with the same tolerations."""
        tolerations = pod.tolerations
        if isinstance(node_infos, NodeWindow):
            owner = node_infos.owner
            column = node_infos.column(owner.taints_column())
            # The column's entries are the snapshot's few distinct taint sets: each is judged
            # once, without a pass over the window to find which of them it holds.
            sets = owner.taint_sets()
            candidates = sets if len(sets) <= len(column) else distinct_objects(column).values()
            ok = {
                id(t): not t or find_matching_untolerated_taint(t, tolerations) is None
                for t in candidates
            }
            if all(ok.values()):
                return node_infos, []
            verdicts = list(map(ok.__getitem__, map(id, column)))
            if all(verdicts):
                return node_infos, []
            rejected = compress(node_infos, map(operator.not_, verdicts))
            return list(compress(node_infos, verdicts)), list(
                zip(rejected, repeat(_REJECT), strict=False)
            )
        if not any([ni.node is not None and ni.node.taints for ni in node_infos]):  # noqa: C419 - a list is faster than a generator here
            return node_infos, []
        key = NAME + repr(tolerations)

        def tolerated(ni: NodeInfo) -> bool:
            node = ni.node
            return (
                node is None
                or not node.taints
                or find_matching_untolerated_taint(node.taints, tolerations) is None
            )

        # Pods with the same tolerations share per-node verdicts (NodeInfo.memo).
        verdicts = [
            v if (v := ni.memo.get(key)) is not None else remember(ni.memo, key, tolerated(ni))
            for ni in node_infos
        ]
        pairs = list(zip(node_infos, verdicts, strict=True))
        return [ni for ni, ok in pairs if ok], [(ni, _REJECT) for ni, ok in pairs if not ok]


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
    """The PreScore, Score and NormalizeScore of the plugin: the number of PreferNoSchedule
    taints not tolerated by the pod's tolerations with effect PreferNoSchedule or empty;
    normalized in reverse (fewest is best; all zero gives everyone 100)."""

    name = NAME
    scores_in_range = True

    def __init__(self, weight: int = DEFAULT_PLUGIN_WEIGHTS[NAME]) -> None:
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
        if state.read(_PRE_SCORE_TAINTS_KEY) is False:  # every raw score is 0: all get 100
            scores[:] = [MAX_NODE_SCORE] * len(scores)
            return
        default_normalize_score(MAX_NODE_SCORE, True, scores)


def is_schedulable_after_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterNodeChange``: the node had an untolerated NoSchedule/NoExecute taint
    (or is new) and has none now."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return QueueingHint.Queue  # upstream's type error: retry
    was_untolerated = True
    if isinstance(old, Node):
        was_untolerated = find_matching_untolerated_taint(old.taints, pod.tolerations) is not None
    is_untolerated = find_matching_untolerated_taint(new.taints, pod.tolerations) is not None
    if was_untolerated and not is_untolerated:
        return QueueingHint.Queue
    return QueueingHint.QueueSkip


def is_schedulable_after_pod_toleration_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodTolerationChange``: only the rejected pod's own new tolerations
    can change this plugin's verdict."""
    if not isinstance(new, Pod):
        return QueueingHint.Queue
    return QueueingHint.Queue if new.uid == pod.uid else QueueingHint.QueueSkip
