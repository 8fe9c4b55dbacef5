"""The kubelet's admission of a pod bound to its node (``pkg/kubelet/lifecycle/predicate.go``).

Pods nobody scheduled (created with ``spec.nodeName``) are where this shows: the scheduler never
places a pod where it would fail.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from kube.labels import LABEL_OS
from kube.objects import Node, Pod
from scheduler.plugins.nodeaffinity import ERR_REASON_POD, RequiredNodeAffinity
from scheduler.plugins.noderesources.fit import insufficient_resources
from scheduler.plugins.tainttoleration import find_matching_untolerated_taint
from scheduler.snapshot import NodeInfo

__all__ = ["REJECTED_PREFIX", "admit", "rejected_status"]

REJECTED_PREFIX: Final = "Pod was rejected: "
_OUT_OF: Final = {
    "cpu": "OutOfcpu",
    "memory": "OutOfmemory",
    "ephemeral-storage": "OutOfephemeral-storage",
    "pods": "OutOfpods",
}
# tainttoleration.ErrReasonNotMatch, the words the kubelet uses for a NoExecute taint.
_TAINT_NOT_MATCH: Final = "node(s) had taints that the pod didn't tolerate"


def admit(
    pod: Pod, node: Node, others: Iterable[Pod], *, host_os: str = "linux"
) -> tuple[str, str] | None:
    """(reason, message) when the kubelet rejects ``pod`` on ``node`` next to ``others``.

    Before it starts a pod, the kubelet checks it against the pods it already admitted on the node
    (``predicateAdmitHandler.Admit``): the pod's ``kubernetes.io/os`` label must match the node's
    OS; then ``generalFilter``: the scheduler's resource fit (``noderesources.Fits``), required
    node affinity/selector, and untolerated ``NoExecute`` taints. Only the first failure counts:

    * a missing resource gives reason ``OutOfcpu``, ``OutOfmemory``, ``OutOfephemeral-storage``,
      ``OutOfpods`` (``OutOf<name>`` for others) and message ``Node didn't have enough resource:
      <name>, requested: R, used: U, capacity: C`` (cpu in millicores, the rest in units);
    * another predicate gives its plugin name as reason and ``Predicate <name> failed: <reason>``.
    """
    node_os = node.labels.get(LABEL_OS) or host_os
    want_os = pod.labels.get(LABEL_OS)
    if want_os is not None and want_os != node_os:
        return (
            "PodOSSelectorNodeLabelDoesNotMatch",
            "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
        )
    node_info = NodeInfo(node, others)
    missing = insufficient_resources(pod, node_info)
    if missing:
        first = missing[0]
        name = first.resource_name
        return (
            _OUT_OF.get(name, f"OutOf{name}"),
            f"Node didn't have enough resource: {name}, requested: {first.requested},"
            f" used: {first.used}, capacity: {first.capacity}",
        )
    if not RequiredNodeAffinity(pod).match(node):
        return "NodeAffinity", f"Predicate NodeAffinity failed: {ERR_REASON_POD}"
    if (
        find_matching_untolerated_taint(node.taints, pod.tolerations, frozenset({"NoExecute"}))
        is not None
    ):
        return "TaintToleration", f"Predicate TaintToleration failed: {_TAINT_NOT_MATCH}"
    return None


def rejected_status(
    status: Mapping[str, Any], reason: str, message: str, now: str
) -> dict[str, Any]:
    """The status ``rejectPod`` leaves: Failed, the reason, the message prefixed
    ``Pod was rejected: `` (a Warning event carries the bare message); the start time and the
    conditions others own (PodScheduled) are kept as the status manager does.
    """
    out: dict[str, Any] = {
        "phase": "Failed",
        "reason": reason,
        "message": REJECTED_PREFIX + message,
        "startTime": status.get("startTime") or now,
    }
    if status.get("qosClass"):
        out["qosClass"] = status["qosClass"]
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    if conditions:
        out["conditions"] = conditions
    return out
