"""The StatefulSet controller: pods with stable names, recreated under the same name.

Reproduces ``pkg/controller/statefulset`` (``StatefulSetControl.UpdateStatefulSet``) without
volumes or rolling updates. A pod that is gone is created again under the same name — a new
object with a new UID: the case a drain must handle, since the name it evicted comes back
(kubernetes/kubernetes#138229).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kubesim.controllers.base import WorkloadController, is_pod_available, pod_from_template
from kubesim.controllers.deployment import pod_template_hash
from kubesim.controllers.replicaset import spec_replicas
from kubesim.core.conditions import is_pod_ready
from kubesim.core.objects import meta_of
from kubesim.core.store import Key, clone

__all__ = ["StatefulSetController", "pod_ordinal"]

POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
REVISION_LABEL: Final = "controller-revision-hash"


def pod_ordinal(set_name: str, pod_name: str) -> int | None:
    """``getParentNameAndOrdinal``: the ordinal of a pod named ``<set>-<n>``, else None."""
    m = re.fullmatch(r"(.*)-([0-9]+)", pod_name)
    if m is None or m.group(1) != set_name:
        return None
    return int(m.group(2))


class StatefulSetController(WorkloadController):
    name = "statefulset"
    component = "statefulset-controller"
    storage = "statefulsets"
    watched = ("statefulsets", "pods")

    def created_message(self, owner: Mapping[str, Any], pod_name: str) -> str:
        return f"create Pod {pod_name} in StatefulSet {meta_of(owner).get('name', '')} successful"

    def deleted_message(self, owner: Mapping[str, Any], pod_name: str) -> str:
        return f"delete Pod {pod_name} in StatefulSet {meta_of(owner).get('name', '')} successful"

    def sync(self, key: Key) -> None:
        sts = self.cluster.store.get(self.storage, key)
        if sts is None:
            return
        set_name = key[1]
        spec = sts.get("spec") or {}
        replicas = spec_replicas(sts)
        revision = f"{set_name}-{pod_template_hash(spec.get('template') or {})}"
        parallel = spec.get("podManagementPolicy") == "Parallel"
        deleting = bool(meta_of(sts).get("deletionTimestamp"))
        pods = {
            n: p
            for p in self.owned_pods(sts)
            if (n := pod_ordinal(set_name, str(meta_of(p).get("name", "")))) is not None
        }
        if not deleting:
            self._manage(sts, pods, replicas=replicas, revision=revision, parallel=parallel)
            pods = {
                n: p
                for p in self.owned_pods(sts, adopt=False)
                if (n := pod_ordinal(set_name, str(meta_of(p).get("name", "")))) is not None
            }
        sts = self.cluster.store.get(self.storage, key)
        if sts is not None:
            self.write_status(sts, self._status(sts, pods, revision, key))

    def _manage(
        self,
        sts: Mapping[str, Any],
        pods: dict[int, dict[str, Any]],
        *,
        replicas: int,
        revision: str,
        parallel: bool,
    ) -> None:
        """A pod that is gone is created again under the same name; a Failed or Succeeded pod
        is deleted so it can come back. ``podManagementPolicy: OrderedReady`` (the default)
        creates one pod at a time, in ordinal order, only when every lower ordinal is Running
        and Ready, and while any pod is terminating it waits; scale-down removes the highest
        ordinal first, one at a time, once the rest are Ready. ``Parallel`` (``parallel``)
        creates and deletes them all at once."""
        # Terminal pods are deleted and come back (``isFailed``/``isSucceeded`` in the loop).
        for _, pod in sorted(pods.items()):
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Failed", "Succeeded") and not meta_of(pod).get("deletionTimestamp"):
                self.delete_pod(pod, owner=sts)
                if not parallel:
                    return
        for ordinal in range(replicas):
            existing = pods.get(ordinal)
            if existing is None:
                self.create_pod(self._new_pod(sts, ordinal, revision), owner=sts)
                if not parallel:
                    return
                continue
            if parallel:
                continue
            if meta_of(existing).get("deletionTimestamp"):
                return  # OrderedReady waits for a terminating pod to go
            running = (existing.get("status") or {}).get("phase") == "Running"
            if not (is_pod_ready(existing) and running):
                return  # ... and for each pod to be Running and Ready before the next
        condemned = sorted((o for o in pods if o >= replicas), reverse=True)
        for ordinal in condemned:
            pod = pods[ordinal]
            if meta_of(pod).get("deletionTimestamp"):
                if parallel:
                    continue
                return
            if not parallel and any(not is_pod_ready(p) for o, p in pods.items() if o < replicas):
                return
            self.delete_pod(pod, owner=sts)
            if not parallel:
                return

    def _new_pod(self, sts: Mapping[str, Any], ordinal: int, revision: str) -> dict[str, Any]:
        """Pod ``i``: ``<set>-<i>`` with the template's labels plus
        ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index`` and
        ``controller-revision-hash``, ``spec.hostname`` = the pod's name and ``spec.subdomain``
        = ``serviceName``."""
        name = f"{meta_of(sts).get('name', '')}-{ordinal}"
        spec = sts.get("spec") or {}
        pod = pod_from_template(
            sts,
            spec.get("template") or {},
            name=name,
            extra_labels={
                POD_NAME_LABEL: name,
                POD_INDEX_LABEL: str(ordinal),
                REVISION_LABEL: revision,
            },
        )
        pod["spec"]["hostname"] = name
        if spec.get("serviceName"):
            pod["spec"]["subdomain"] = spec["serviceName"]
        return pod

    def _status(
        self, sts: Mapping[str, Any], pods: dict[int, dict[str, Any]], revision: str, key: Key
    ) -> dict[str, Any]:
        """``observedGeneration``, ``replicas``, ``readyReplicas``, ``currentReplicas``,
        ``updatedReplicas``, ``availableReplicas``, ``currentRevision`` = ``updateRevision``
        (``<set>-<hash>``; ControllerRevision objects are not served), ``collisionCount`` —
        what ``kubectl rollout status statefulset`` reads. Rolling updates are not modelled:
        pods of an older template stay; a pod without a ``controller-revision-hash`` label
        (seeded by a state file) counts as current."""
        spec = sts.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self.now()
        live = [p for p in pods.values() if not meta_of(p).get("deletionTimestamp")]
        status: dict[str, Any] = clone(sts.get("status") or {})
        generation = meta_of(sts).get("generation")
        if generation is not None:
            status["observedGeneration"] = int(generation)
        status["replicas"] = len(live)
        ready = [p for p in live if is_pod_ready(p)]
        available = [p for p in ready if is_pod_available(p, min_ready, now)]
        if len(available) < len(ready):
            self.enqueue_after(key, float(min_ready))
        current = [
            p
            for p in live
            # Rolling updates are not modelled: a pod seeded without a revision counts as current.
            if (meta_of(p).get("labels") or {}).get(REVISION_LABEL, revision) == revision
        ]
        status["readyReplicas"] = len(ready)
        status["currentReplicas"] = len(current)
        status["updatedReplicas"] = len(current)
        status["availableReplicas"] = len(available)
        status["currentRevision"] = revision
        status["updateRevision"] = revision
        status.setdefault("collisionCount", 0)
        for field in ("readyReplicas", "currentReplicas", "updatedReplicas"):
            if not status[field]:
                del status[field]
        return status
