"""Pod admission under node pressure: the eviction manager's ``Admit`` (``eviction_manager.go``).

A node reporting only MemoryPressure still takes Guaranteed and Burstable pods, and BestEffort
pods that tolerate the ``node.kubernetes.io/memory-pressure`` NoSchedule taint; DiskPressure or
PIDPressure rejects everything. Critical pods (static, mirror, priority ≥ 2000000000) are always
admitted — judged on the pod as the kubelet sees it (``agent.eviction.pods.kubelet_view``), never
on an API object's own annotations. The rejection reason is ``Evicted`` and the message lists the
conditions Go-style: ``The node had condition: [MemoryPressure DiskPressure]. ``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from agent.eviction.helpers import REASON, has_node_condition
from agent.eviction.pods import is_critical_pod
from agent.eviction.types import NodeCondition
from kube.objects import Pod, Taint
from kube.qos import QOS_BEST_EFFORT, get_pod_qos

__all__ = ["TAINT_NODE_MEMORY_PRESSURE", "PodAdmitResult", "admit_pod"]

TAINT_NODE_MEMORY_PRESSURE: Final = "node.kubernetes.io/memory-pressure"
_NODE_CONDITION_MESSAGE: Final = "The node had condition: {}. "


@dataclass(frozen=True, slots=True)
class PodAdmitResult:
    """``lifecycle.PodAdmitResult``."""

    admit: bool
    reason: str = ""
    message: str = ""


def admit_pod(pod: Pod, node_conditions: Sequence[str]) -> PodAdmitResult:
    """Whether the kubelet would admit ``pod`` on a node with ``node_conditions``."""
    if not node_conditions:
        return PodAdmitResult(True)
    if is_critical_pod(pod):
        return PodAdmitResult(True)
    only_memory = (
        has_node_condition(node_conditions, NodeCondition.MEMORY_PRESSURE)
        and len(node_conditions) == 1
    )
    if only_memory:
        if get_pod_qos(pod) != QOS_BEST_EFFORT:
            return PodAdmitResult(True)
        taint = Taint(key=TAINT_NODE_MEMORY_PRESSURE, effect="NoSchedule")
        if any(t.tolerates(taint) for t in pod.tolerations):
            return PodAdmitResult(True)
    return PodAdmitResult(
        False, REASON, _NODE_CONDITION_MESSAGE.format("[" + " ".join(node_conditions) + "]")
    )
