"""NodeUnschedulable: a cordoned node (``spec.unschedulable``) takes no new pods.

``pkg/scheduler/framework/plugins/nodeunschedulable``: the node is rejected with
UnschedulableAndUnresolvable ``node(s) were unschedulable`` unless the pod tolerates the taint
``node.kubernetes.io/unschedulable:NoSchedule`` (what ``kubectl cordon`` users and DaemonSet
pods rely on). Preemption cannot uncordon a node, hence UU.
"""

from __future__ import annotations

from typing import Final

from kube.objects import Node, Pod, Taint
from scheduler.framework import Code, CycleState, FilterBatchResult, QueueingHint, Status
from scheduler.plugins.helper import SKIP, NoPreFilterExtensions, tolerations_tolerate_taint
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "ERR_REASON_UNSCHEDULABLE",
    "NAME",
    "UNSCHEDULABLE_TAINT",
    "NodeUnschedulable",
    "is_schedulable_after_node_change",
    "is_schedulable_after_pod_toleration_change",
]

NAME: Final = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT: Final = Taint("node.kubernetes.io/unschedulable", effect="NoSchedule")

_REJECT: Final = Status(Code.UnschedulableAndUnresolvable, ERR_REASON_UNSCHEDULABLE, plugin=NAME)


class NodeUnschedulable(NoPreFilterExtensions):
    """Upstream has no PreFilter here; ours answers Skip when Filter could only succeed: the
    pod tolerates the taint, or no node in the snapshot is cordoned. Such pods cost nothing per
    node."""

    name = NAME

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        if not snapshot.has_unschedulable_nodes() or tolerations_tolerate_taint(
            pod.tolerations, UNSCHEDULABLE_TAINT
        ):
            return SKIP
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None or not node.unschedulable:
            return None
        if tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT):
            return None
        return _REJECT

    def filter_nodes(
        self, state: CycleState, pod: Pod, node_infos: list[NodeInfo]
    ) -> FilterBatchResult:
        cordoned = [ni for ni in node_infos if ni.node is not None and ni.node.unschedulable]
        if not cordoned or tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT):
            return node_infos, []
        passed = [ni for ni in node_infos if ni.node is None or not ni.node.unschedulable]
        return passed, [(ni, _REJECT) for ni in cordoned]


def is_schedulable_after_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterNodeChange``: a node added schedulable, or uncordoned."""
    if not isinstance(new, Node):
        return QueueingHint.Queue
    if new.unschedulable:
        return QueueingHint.QueueSkip
    if old is None or (isinstance(old, Node) and old.unschedulable):
        return QueueingHint.Queue
    return QueueingHint.QueueSkip


def is_schedulable_after_pod_toleration_change(pod: Pod, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodTolerationChange``: the rejected pod itself now tolerates the
    unschedulable taint (tolerations can only be added, so the old ones need no look)."""
    if not isinstance(new, Pod):
        return QueueingHint.Queue
    if new.uid == pod.uid and tolerations_tolerate_taint(new.tolerations, UNSCHEDULABLE_TAINT):
        return QueueingHint.Queue
    return QueueingHint.QueueSkip
