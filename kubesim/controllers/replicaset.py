"""The ReplicaSet controller, and the ReplicationController one reusing it.

Reproduces ``pkg/controller/replicaset/replica_set.go`` (``syncReplicaSet``,
``manageReplicas``, ``calculateStatus``); the ReplicationController manager upstream is the
same code behind an adapter, and here a subclass whose selector is a plain label map. A
replaced pod is just a new pod: an evicted or deleted pod leaves the active set as soon as it
is marked for deletion, so the replacement is created while the old one terminates, as in a
cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kube.labels import LabelSelector, SelectorError
from kubesim.controllers.base import (
    WorkloadController,
    is_pod_active,
    is_pod_available,
    labels_of,
    pod_from_template,
    pods_to_delete_order,
    ready_since,
)
from kubesim.core.conditions import is_pod_ready
from kubesim.core.store import Key, clone

__all__ = ["BURST_REPLICAS", "ReplicaSetController", "ReplicationControllerController"]

BURST_REPLICAS: Final = 500


def spec_replicas(obj: Mapping[str, Any]) -> int:
    replicas = (obj.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)


class ReplicaSetController(WorkloadController):
    name = "replicaset"
    component = "replicaset-controller"
    storage = "replicasets"
    watched = ("replicasets", "pods")

    def sync(self, key: Key) -> None:
        """``syncReplicaSet`` over the pods ``ClaimPods`` gives: controlled by the ReplicaSet
        (UID match), plus orphans its selector matches, adopted by writing an owner
        reference; a controlled pod the selector no longer matches is released."""
        rs = self.cluster.store.get(self.storage, key)
        if rs is None:
            return  # the garbage collector removes its pods
        pods = [p for p in self.owned_pods(rs) if is_pod_active(p)]
        if not (rs.get("metadata") or {}).get("deletionTimestamp"):
            self.manage_replicas(rs, pods)
            pods = [p for p in self.owned_pods(rs, adopt=False) if is_pod_active(p)]
        rs = self.cluster.store.get(self.storage, key)
        if rs is None:
            return
        self.write_status(rs, self.calculate_status(rs, pods, key))

    def manage_replicas(self, rs: Mapping[str, Any], pods: list[dict[str, Any]]) -> None:
        """Active pods (not terminal, not being deleted) against ``spec.replicas`` (defaulted
        to 1): missing ones are created from the template with ``generateName`` of the
        ReplicaSet's name (``web-5d4f8-`` + five random characters from the apiserver) — at
        most ``burstReplicas`` (500) per sync, as upstream; extra ones are deleted in
        ``ActivePodsWithRanks`` order (unscheduled, pending, not ready and newest first)."""
        diff = len(pods) - spec_replicas(rs)
        template = (rs.get("spec") or {}).get("template") or {}
        if diff < 0:
            for _ in range(min(-diff, BURST_REPLICAS)):
                if self.create_pod(pod_from_template(rs, template), owner=rs) is None:
                    break
        elif diff > 0:
            for pod in pods_to_delete_order(pods)[: min(diff, BURST_REPLICAS)]:
                self.delete_pod(pod, owner=rs)

    def calculate_status(
        self, rs: Mapping[str, Any], pods: list[dict[str, Any]], key: Key
    ) -> dict[str, Any]:
        """``replicas`` (active pods), ``fullyLabeledReplicas`` (those carrying every
        template label), ``readyReplicas``, ``availableReplicas`` (Ready for
        ``minReadySeconds``, re-synced when that elapses), ``observedGeneration``; written
        only when it changes."""
        spec = rs.get("spec") or {}
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self.now()
        ready = available = labeled = 0
        wait: float | None = None
        for pod in pods:
            labels = labels_of(pod)
            if all(labels.get(k) == v for k, v in template_labels.items()):
                labeled += 1
            if is_pod_ready(pod):
                ready += 1
                if is_pod_available(pod, min_ready, now):
                    available += 1
                else:
                    since = ready_since(pod) or now
                    left = since + min_ready - now
                    wait = left if wait is None else min(wait, left)
        if wait is not None:
            self.enqueue_after(key, wait + 0.01)
        status: dict[str, Any] = clone(rs.get("status") or {})
        status["replicas"] = len(pods)
        status["fullyLabeledReplicas"] = labeled
        status["readyReplicas"] = ready
        status["availableReplicas"] = available
        generation = (rs.get("metadata") or {}).get("generation")
        if generation is not None:
            status["observedGeneration"] = int(generation)
        # The apiserver omits zero counts (omitempty) but ``replicas``.
        for field in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
            if not status[field]:
                del status[field]
        return status


class ReplicationControllerController(ReplicaSetController):
    """``pkg/controller/replication``: a ReplicaSet controller over a map selector."""

    name = "replicationcontroller"
    component = "replication-controller"
    storage = "replicationcontrollers"
    watched = ("replicationcontrollers", "pods")

    def owned_pods(self, owner: Mapping[str, Any], *, adopt: bool = True) -> list[dict[str, Any]]:
        spec = owner.get("spec") or {}
        selector = spec.get("selector")
        if not selector:  # defaulted from the template's labels
            selector = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        shaped = clone(dict(owner))
        shaped.setdefault("spec", {})["selector"] = {"matchLabels": dict(selector)}
        try:
            LabelSelector.from_dict(shaped["spec"]["selector"])
        except SelectorError:
            return []
        return super().owned_pods(shaped, adopt=adopt)
