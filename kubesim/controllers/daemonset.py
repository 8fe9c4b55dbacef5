"""The DaemonSet controller: one pod per eligible node, placed on that node.

Reproduces ``pkg/controller/daemon`` (``manage``, ``podsShouldBeOnNode``,
``NodeShouldRunDaemonPod``, ``updateDaemonSetStatus``), with one difference: the pod is created
bound to its node (``new_daemon_pod``), and rolling updates are not modelled (``_manage``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from kube.objects import InvalidObject, Node, Pod
from kube.times import parse_time
from kubesim.controllers.base import WorkloadController, is_pod_available, pod_from_template
from kubesim.controllers.deployment import pod_template_hash
from kubesim.core.conditions import is_pod_ready
from kubesim.core.objects import meta_of
from kubesim.core.store import Event, Key, clone
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity
from scheduler.plugins.tainttoleration import find_matching_untolerated_taint

__all__ = ["DaemonSetController", "daemon_pod_tolerations", "node_should_run_daemon_pod"]

REVISION_LABEL: Final = "controller-revision-hash"
GENERATION_LABEL: Final = "pod-template-generation"

_DEFAULT_TOLERATIONS: Final = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)


def daemon_pod_tolerations(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``AddOrUpdateDaemonPodTolerations``: the pod's tolerations plus the defaults —
    not-ready and unreachable NoExecute; disk-, memory-, pid-pressure and unschedulable
    NoSchedule; network-unavailable too with ``hostNetwork``."""
    out: list[dict[str, Any]] = [clone(t) for t in spec.get("tolerations") or []]
    wanted = list(_DEFAULT_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append(("node.kubernetes.io/network-unavailable", "NoSchedule"))
    for key, effect in wanted:
        toleration = {"key": key, "operator": "Exists", "effect": effect}
        # TryAddToleration: replace one with the same key and effect, else append.
        for i, t in enumerate(out):
            if t.get("key") == key and t.get("effect") == effect:
                out[i] = toleration
                break
        else:
            out.append(toleration)
    return out


def _node_affinity(node_name: str) -> dict[str, Any]:
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
            ]
        }
    }


def new_daemon_pod(ds: Mapping[str, Any], node_name: str) -> dict[str, Any]:
    """``NewPod`` plus the node-affinity replacement of ``podsShouldBeOnNode``'s create.

    The pod's node affinity becomes the single ``matchFields metadata.name In [node]`` term
    (``ReplaceDaemonSetPodNodeNameNodeAffinity``). Unlike upstream since 1.12, where the
    default scheduler binds it, the pod is created with ``spec.nodeName`` set — the node is
    already decided, and the DaemonSet then works without a scheduler, as before 1.12."""
    spec = ds.get("spec") or {}
    template = spec.get("template") or {}
    generation = meta_of(ds).get("generation")
    extra = {REVISION_LABEL: pod_template_hash(template)}
    if generation is not None:
        extra[GENERATION_LABEL] = str(generation)
    pod = pod_from_template(ds, template, extra_labels=extra)
    pod_spec = pod["spec"]
    pod_spec["tolerations"] = daemon_pod_tolerations(pod_spec)
    affinity = pod_spec.setdefault("affinity", {})
    affinity["nodeAffinity"] = {
        **(affinity.get("nodeAffinity") or {}),
        **_node_affinity(node_name),
    }
    pod_spec["nodeName"] = node_name
    return pod


def node_should_run_daemon_pod(ds: Mapping[str, Any], node: Mapping[str, Any]) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (should run, should continue running).

    A node is eligible when the pod the DaemonSet would create for it fits by node name, by
    ``nodeSelector`` and required node affinity, and by taints (untolerated NoSchedule or
    NoExecute taints keep new pods away; only an untolerated NoExecute taint evicts a running
    one). The verdicts come from ``scheduler``'s own NodeAffinity and TaintToleration helpers,
    so the scheduler and this controller agree. A cordoned node is eligible: every daemon pod
    tolerates ``node.kubernetes.io/unschedulable``."""
    spec = ds.get("spec") or {}
    template = spec.get("template") or {}
    node_name = str(meta_of(node).get("name", ""))
    probe = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "daemon-probe",
            "namespace": str(meta_of(ds).get("namespace", "")),
            "labels": dict((template.get("metadata") or {}).get("labels") or {}),
        },
        "spec": {
            **clone(template.get("spec") or {}),
            "tolerations": daemon_pod_tolerations(template.get("spec") or {}),
        },
    }
    try:
        pod = Pod.from_dict(probe)
        typed_node = Node.from_dict(node)
    except InvalidObject:
        return False, False
    wanted = str((template.get("spec") or {}).get("nodeName") or "")
    if wanted and wanted != node_name:
        return False, False
    if not RequiredNodeAffinity(pod).match(typed_node):
        return False, False
    if find_matching_untolerated_taint(typed_node.taints, pod.tolerations) is None:
        return True, True
    no_execute = find_matching_untolerated_taint(
        typed_node.taints, pod.tolerations, frozenset({"NoExecute"})
    )
    return False, no_execute is None


class DaemonSetController(WorkloadController):
    name = "daemonset"
    component = "daemonset-controller"
    storage = "daemonsets"
    watched = ("daemonsets", "pods", "nodes")

    def keys_for(self, ev: Event) -> Iterable[Key]:
        if ev.storage == "nodes":
            return [
                (str(meta_of(ds).get("namespace", "")), str(meta_of(ds).get("name", "")))
                for ds in self.cluster.store.items(self.storage)
            ]
        return super().keys_for(ev)

    def sync(self, key: Key) -> None:
        ds = self.cluster.store.get(self.storage, key)
        if ds is None:
            return
        by_node: dict[str, list[dict[str, Any]]] = {}
        for pod in self.owned_pods(ds):
            node_name = str((pod.get("spec") or {}).get("nodeName") or "")
            by_node.setdefault(node_name, []).append(pod)
        if not meta_of(ds).get("deletionTimestamp") and self._manage(ds, by_node):
            by_node = {}
            for pod in self.owned_pods(ds, adopt=False):
                node_name = str((pod.get("spec") or {}).get("nodeName") or "")
                by_node.setdefault(node_name, []).append(pod)
        ds = self.cluster.store.get(self.storage, key)
        if ds is not None:
            self.write_status(ds, self._status(ds, by_node, key))

    def _manage(self, ds: Mapping[str, Any], by_node: dict[str, list[dict[str, Any]]]) -> bool:
        """``manage``: pods on nodes that should not run one, extra pods on a node (the oldest
        is kept) and Failed pods are deleted; a Failed pod is replaced on the next sync.
        Rolling updates are not modelled: a template change leaves existing pods alone."""
        changed = False
        for node in list(self.cluster.store.items("nodes")):
            node_name = str(meta_of(node).get("name", ""))
            should_run, keep_running = node_should_run_daemon_pod(ds, node)
            pods = [
                p for p in by_node.get(node_name, []) if not meta_of(p).get("deletionTimestamp")
            ]
            failed = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"]
            for pod in failed:
                self.delete_pod(pod, owner=ds)
                changed = True
            pods = [p for p in pods if p not in failed]
            if should_run and not pods and not failed:
                self.create_pod(new_daemon_pod(ds, node_name), owner=ds)
                changed = True
            elif not keep_running and pods:
                for pod in pods:
                    self.delete_pod(pod, owner=ds)
                changed = True
            elif len(pods) > 1:
                for pod in sorted(pods, key=_created)[1:]:
                    self.delete_pod(pod, owner=ds)
                changed = True
        nodes = {str(meta_of(n).get("name", "")) for n in self.cluster.store.items("nodes")}
        for node_name, pods in by_node.items():
            if node_name not in nodes:  # pods of a node that is gone (or unbound)
                for pod in pods:
                    if not meta_of(pod).get("deletionTimestamp"):
                        self.delete_pod(pod, owner=ds)
                        changed = True
        return changed

    def _status(
        self, ds: Mapping[str, Any], by_node: dict[str, list[dict[str, Any]]], key: Key
    ) -> dict[str, Any]:
        """``updateDaemonSetStatus``: ``desiredNumberScheduled``, ``currentNumberScheduled``,
        ``numberMisscheduled``, ``numberReady``, ``numberAvailable``, ``numberUnavailable``,
        ``updatedNumberScheduled``, ``observedGeneration`` — what ``kubectl rollout status
        daemonset`` reads. A pod of an older template counts as not updated; one without a
        ``controller-revision-hash`` label (seeded by a state file) counts as updated, so
        ``kubectl rollout status`` completes on a seeded cluster."""
        spec = ds.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        template_hash = pod_template_hash(spec.get("template") or {})
        now = self.now()
        desired = current = misscheduled = ready = available = updated = 0
        waiting = False
        for node in self.cluster.store.items("nodes"):
            node_name = str(meta_of(node).get("name", ""))
            should_run, _ = node_should_run_daemon_pod(ds, node)
            pods = [
                p for p in by_node.get(node_name, []) if not meta_of(p).get("deletionTimestamp")
            ]
            if should_run:
                desired += 1
                if pods:
                    current += 1
                    pod = sorted(pods, key=_created)[0]
                    if is_pod_ready(pod):
                        ready += 1
                        if is_pod_available(pod, min_ready, now):
                            available += 1
                        else:
                            waiting = True
                    labels = meta_of(pod).get("labels") or {}
                    # Rolling updates are not modelled: a pod seeded without a revision (a
                    # state file's) counts as current; one of another revision does not.
                    if labels.get(REVISION_LABEL, template_hash) == template_hash:
                        updated += 1
            elif pods:
                misscheduled += 1
        if waiting:
            self.enqueue_after(key, float(min_ready))
        status: dict[str, Any] = clone(ds.get("status") or {})
        generation = meta_of(ds).get("generation")
        if generation is not None:
            status["observedGeneration"] = int(generation)
        status.update(
            {
                "desiredNumberScheduled": desired,
                "currentNumberScheduled": current,
                "numberMisscheduled": misscheduled,
                "numberReady": ready,
                "numberAvailable": available,
                "numberUnavailable": desired - available,
                "updatedNumberScheduled": updated,
            }
        )
        for field in ("numberAvailable", "numberUnavailable", "updatedNumberScheduled"):
            if not status[field]:
                del status[field]
        return status


def _created(pod: Mapping[str, Any]) -> tuple[float, str]:
    try:
        when = parse_time(meta_of(pod).get("creationTimestamp"))
    except ValueError:
        when = 0.0
    return when, str(meta_of(pod).get("name", ""))
