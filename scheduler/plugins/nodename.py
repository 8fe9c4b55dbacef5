"""NodeName: a pod that names its node (``spec.nodeName``) fits only there.

``pkg/scheduler/framework/plugins/nodename``: any other node is UnschedulableAndUnresolvable
``node(s) didn't match the requested node name``. Upstream has no PreFilter; ours answers Skip
when ``spec.nodeName`` is empty (Filter would pass every node), which is every pod the
scheduler normally sees.
"""

from __future__ import annotations

from typing import Final

from kube.objects import Node, Pod
from scheduler.framework import Code, CycleState, FilterBatchResult, QueueingHint, Status
from scheduler.plugins.helper import SKIP, NoPreFilterExtensions
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = ["ERR_REASON", "NAME", "NodeName", "is_schedulable_after_node_add"]

NAME: Final = "NodeName"
ERR_REASON: Final = "node(s) didn't match the requested node name"

_REJECT: Final = Status(Code.UnschedulableAndUnresolvable, ERR_REASON, plugin=NAME)


class NodeName(NoPreFilterExtensions):
    name = NAME

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        return SKIP if not pod.node_name else None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.node_name or pod.node_name == node_info.name:
            return None
        return _REJECT

    def filter_nodes(
        self, state: CycleState, pod: Pod, node_infos: list[NodeInfo]
    ) -> FilterBatchResult:
        wanted = pod.node_name
        if not wanted:
            return node_infos, []
        passed = [ni for ni in node_infos if ni.name == wanted]
        return passed, [(ni, _REJECT) for ni in node_infos if ni.name != wanted]


def is_schedulable_after_node_add(pod: Pod, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterNodeAdd``: only the node the pod names can take it."""
    if isinstance(new, Node) and pod.node_name and pod.node_name != new.name:
        return QueueingHint.QueueSkip
    return QueueingHint.Queue
