"""Critical pods as the kubelet recognises them (``pkg/kubelet/types/pod_update.go``), with the
system priority constants they are measured against (``pkg/apis/scheduling/types.go``).

The kubelet's eviction manager never evicts a critical pod for node pressure, its admission
lets a critical pod preempt others (``preemptable``), and kube-apiserver's Priority admission
creates the two system classes at their fixed values: the agent, kubesim and ``scheduler``
all need the same answer, so it lives here once (``is_critical_pod``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from kube.objects import Pod

__all__ = [
    "API_SERVER_SOURCE",
    "CONFIG_FIRST_SEEN_ANNOTATION_KEY",
    "CONFIG_HASH_ANNOTATION_KEY",
    "CONFIG_MIRROR_ANNOTATION_KEY",
    "CONFIG_SOURCE_ANNOTATION_KEY",
    "FILE_SOURCE",
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "SYSTEM_CLUSTER_CRITICAL",
    "SYSTEM_CRITICAL_PRIORITY",
    "SYSTEM_NODE_CRITICAL",
    "SYSTEM_PRIORITY_CLASS_PREFIX",
    "is_critical_pod",
    "is_critical_pod_based_on_priority",
    "is_mirror_pod",
    "is_node_critical_pod",
    "is_static_pod",
    "preemptable",
]

HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY: Final = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PRIORITY_CLASS_PREFIX: Final = "system-"
SYSTEM_CLUSTER_CRITICAL: Final = SYSTEM_PRIORITY_CLASS_PREFIX + "cluster-critical"
SYSTEM_NODE_CRITICAL: Final = SYSTEM_PRIORITY_CLASS_PREFIX + "node-critical"

CONFIG_SOURCE_ANNOTATION_KEY: Final = "kubernetes.io/config.source"
CONFIG_MIRROR_ANNOTATION_KEY: Final = "kubernetes.io/config.mirror"
CONFIG_HASH_ANNOTATION_KEY: Final = "kubernetes.io/config.hash"
CONFIG_FIRST_SEEN_ANNOTATION_KEY: Final = "kubernetes.io/config.seen"
API_SERVER_SOURCE: Final = "api"
FILE_SOURCE: Final = "file"


def is_static_pod(pod: Pod) -> bool:
    """``IsStaticPod``: a config source other than the API server."""
    source = pod.annotations.get(CONFIG_SOURCE_ANNOTATION_KEY)
    return source is not None and source != API_SERVER_SOURCE


def is_mirror_pod(pod: Pod) -> bool:
    """``IsMirrorPod``: the API-server copy of a static pod."""
    return CONFIG_MIRROR_ANNOTATION_KEY in pod.annotations


def is_critical_pod_based_on_priority(priority: int) -> bool:
    return priority >= SYSTEM_CRITICAL_PRIORITY


def is_critical_pod(pod: Pod) -> bool:
    """``IsCriticalPod``: static, mirror, or ``spec.priority`` ≥ 2000000000.

    Static: its ``kubernetes.io/config.source`` annotation names a source other than the API
    server; mirror: the API copy of a static pod; or its resolved ``spec.priority`` is at least
    ``SYSTEM_CRITICAL_PRIORITY``. The priority class *name* alone does not make a pod critical:
    only the value admission resolved from it.

    This answers for the kubelet's *own copy* of a pod, whose annotations the kubelet vouches
    for: it sets ``config.source`` on every pod it receives (``api`` for the API server's,
    ``pkg/kubelet/config/config.go``), and only it creates a mirror pod, for a static pod it
    runs from a manifest under the UID written in ``config.mirror``
    (``pkg/kubelet/pod/mirror_client.go``, the UID being the hash of the source:
    ``pkg/kubelet/config/common.go``). On an API object both annotations are whatever the
    pod's author wrote: a caller judging pods read from the API must first take the kubelet's
    view of them (the agent's ``agent.eviction.pods.kubelet_view``), or any author can make a
    pod critical."""
    if is_static_pod(pod) or is_mirror_pod(pod):
        return True
    return pod.spec_priority is not None and is_critical_pod_based_on_priority(pod.spec_priority)


def is_node_critical_pod(pod: Pod) -> bool:
    """``IsNodeCriticalPod``: critical and in ``system-node-critical``."""
    return is_critical_pod(pod) and pod.priority_class_name == SYSTEM_NODE_CRITICAL


def preemptable(preemptor: Pod, preemptee: Pod) -> bool:
    """``Preemptable`` (kubelet critical-pod admission): critical beats non-critical, else
    strictly higher ``spec.priority`` when both are set."""
    if is_critical_pod(preemptor) and not is_critical_pod(preemptee):
        return True
    if preemptor.spec_priority is not None and preemptee.spec_priority is not None:
        return preemptor.spec_priority > preemptee.spec_priority
    return False
