"""The nominator: which pending pods are nominated to which node (``backend/queue/nominator.go``).

Preemption nominates the preemptor to a node before the API call that records
``status.nominatedNodeName``, so the scheduler keeps its own map: node -> pods in insertion
order, and pod -> node. Popping a pod does not remove its nomination; deleting it does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from kube.objects import Pod

__all__ = ["NominatingInfo", "NominatingMode", "Nominator", "PodLister", "pod_identity"]


class NominatingMode(enum.Enum):
    """``fwk.NominatingMode``."""

    Noop = 0
    Override = 1


@dataclass(frozen=True, slots=True)
class NominatingInfo:
    """``fwk.NominatingInfo``: where to nominate (Override) or keep the pod's own (Noop)."""

    mode: NominatingMode
    nominated_node_name: str = ""


class PodLister(Protocol):
    """What the nominator needs from an informer cache; ``Snapshot`` satisfies it."""

    def get_pod(self, key: str) -> Pod | None: ...


def pod_identity(pod: Pod) -> str:
    """The UID, as upstream identifies pods, or ``namespace/name`` when the pod has none (typed
    pods built without a UID must not collide)."""
    return pod.uid or pod.key


class Nominator:
    """``nominator``: node -> nominated pods (ordered) and pod -> node.

    Each node's pods live in a dict, so add and delete are O(1) and iteration keeps insertion
    order.
    """

    __slots__ = ("_by_node", "_pod_to_node", "pod_lister")

    def __init__(self, pod_lister: PodLister | None = None) -> None:
        self.pod_lister = pod_lister
        self._by_node: dict[str, dict[str, Pod]] = {}
        self._pod_to_node: dict[str, str] = {}

    def add_nominated_pod(self, pod: Pod, nominating_info: NominatingInfo | None = None) -> None:
        """``AddNominatedPod``: always deletes the pod's previous entry first. The node is
        ``nominating_info.nominated_node_name`` in Override mode and the pod's
        ``status.nominatedNodeName`` in Noop mode or without info; an empty node stores nothing.
        With a pod lister, a pod that no longer exists or is already bound (``spec.nodeName``)
        is not stored."""
        self._delete(pod)
        if nominating_info is not None and nominating_info.mode is NominatingMode.Override:
            node_name = nominating_info.nominated_node_name
        else:
            node_name = pod.nominated_node_name
        if not node_name:
            return
        if self.pod_lister is not None:
            current = self.pod_lister.get_pod(pod.key)
            if current is None or current.node_name:
                return
        ident = pod_identity(pod)
        self._pod_to_node[ident] = node_name
        pods = self._by_node.setdefault(node_name, {})
        if ident not in pods:
            pods[ident] = pod

    def update_nominated_pod(self, old: Pod | None, new: Pod) -> None:
        """``UpdateNominatedPod``: replace ``old`` by ``new``, keeping an in-memory nomination
        when neither carries a nominatedNodeName (the update raced with the nomination)."""
        info: NominatingInfo | None = None
        if old is not None and not old.nominated_node_name and not new.nominated_node_name:
            node_name = self._pod_to_node.get(pod_identity(old))
            if node_name is not None:
                info = NominatingInfo(NominatingMode.Override, node_name)
        if old is not None:
            self._delete(old)
        self.add_nominated_pod(new, info)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        """``DeleteNominatedPodIfExists``."""
        self._delete(pod)

    def _delete(self, pod: Pod) -> None:
        ident = pod_identity(pod)
        node_name = self._pod_to_node.pop(ident, None)
        if node_name is None:
            return
        pods = self._by_node.get(node_name)
        if pods is not None:
            pods.pop(ident, None)
            if not pods:
                del self._by_node[node_name]

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        """``NominatedPodsForNode``: a copy, in nomination order."""
        pods = self._by_node.get(node_name)
        return list(pods.values()) if pods else []

    def nominated_node_for_pod(self, pod: Pod) -> str | None:
        """The node ``pod`` is nominated to in memory, if any."""
        return self._pod_to_node.get(pod_identity(pod))

    def nominated_node_names(self) -> list[str]:
        return list(self._by_node)

    def __len__(self) -> int:
        return len(self._pod_to_node)
