"""The scheduler loop's informers: the cluster as its watch delivers it, in the snapshot and queue.

kube-scheduler's informers (``pkg/scheduler/eventhandlers.go``) keep its cache and its queue
current from the API; here the loop hands each store event to ``Informers.on_event``, which
changes the ``Snapshot`` in place — it is never rebuilt — and emits the queue's cluster events
(the moves themselves are ``scheduler.eventhandlers``').
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

from kube.apierrors import AdmissionError
from kube.objects import (
    DEFAULT_SCHEDULER_NAME,
    InvalidObject,
    Namespace,
    Node,
    Pod,
    PodCondition,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
)
from kube.times import parse_time
from kubesim.core.store import DELETED, Event
from scheduler import PriorityAdmission, SchedulingQueue, Snapshot
from scheduler.eventhandlers import add_node, add_pending_pod, delete_node, delete_pod
from scheduler.queue import events as qev

__all__ = [
    "WATCHED",
    "Informers",
    "node_update_events",
    "status_update",
]

log = logging.getLogger("kubesim")

# Services and the workload controllers carry the selectors of PodTopologySpread's system
# default spreading (``helper.DefaultSelector``).
WORKLOADS: Final[dict[str, tuple[str, Callable[[Mapping[str, Any]], Any]]]] = {
    "services": ("services", Service.from_dict),
    "replicationcontrollers": ("replication_controllers", ReplicationController.from_dict),
    "replicasets": ("replica_sets", ReplicaSet.from_dict),
    "statefulsets": ("stateful_sets", StatefulSet.from_dict),
}
WATCHED: Final = (
    "namespaces",
    "priorityclasses",
    "poddisruptionbudgets",
    *WORKLOADS,
    "nodes",
    "pods",
)
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})


def node_update_events(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[qev.ClusterEvent]:
    """``NodeSchedulingPropertiesChange``: the node events one update amounts to, in order."""
    out: list[qev.ClusterEvent] = []

    def part(obj: Mapping[str, Any], section: str, key: str) -> Any:
        value = obj.get(section)
        return value.get(key) if isinstance(value, Mapping) else None

    if bool(part(old, "spec", "unschedulable")) != bool(part(new, "spec", "unschedulable")):
        out.append(qev.NodeSpecUnschedulableChange)
    if part(old, "status", "allocatable") != part(new, "status", "allocatable") or (
        part(old, "status", "capacity") != part(new, "status", "capacity")
    ):
        out.append(qev.NodeAllocatableChange)
    if (part(old, "metadata", "labels") or {}) != (part(new, "metadata", "labels") or {}):
        out.append(qev.NodeLabelChange)
    if (part(old, "spec", "taints") or []) != (part(new, "spec", "taints") or []):
        out.append(qev.NodeTaintChange)

    def conditions(obj: Mapping[str, Any]) -> list[tuple[Any, Any]]:
        # nodeConditionsChanged ignores heartbeats: only type and status count.
        raw = part(obj, "status", "conditions") or []
        return [(c.get("type"), c.get("status")) for c in raw if isinstance(c, Mapping)]

    if conditions(old) != conditions(new):
        out.append(qev.NodeConditionChange)
    if (part(old, "metadata", "annotations") or {}) != (part(new, "metadata", "annotations") or {}):
        out.append(qev.NodeAnnotationChange)
    return out


def _pod_status(status: Mapping[str, Any]) -> dict[str, Any]:
    """The typed pod's status fields, read as ``Pod.from_dict`` reads them."""
    conditions = []
    for c in status.get("conditions") or ():
        stamp = c.get("lastTransitionTime")
        conditions.append(
            PodCondition(
                type=str(c.get("type") or ""),
                status=str(c.get("status") or ""),
                reason=str(c.get("reason") or ""),
                message=str(c.get("message") or ""),
                last_transition_time=parse_time(stamp) if stamp else None,
            )
        )
    start = status.get("startTime")
    return {
        "phase": str(status.get("phase") or ""),
        "conditions": tuple(conditions),
        "start_time": parse_time(start) if start else None,
        "nominated_node_name": str(status.get("nominatedNodeName") or ""),
    }


def status_update(old: Pod, prev: Mapping[str, Any], obj: Mapping[str, Any]) -> Pod | None:
    """``old`` carried over to ``obj`` when only status, ``spec.nodeName`` or bookkeeping
    changed since ``prev`` (what ``old`` was read from); None when a full read is needed.

    Binding and kubelet status writes are most of a busy cluster's pod events; re-reading the
    whole spec for them would cost more than the scheduling decision.
    """
    prev_meta, meta = prev.get("metadata"), obj.get("metadata")
    prev_spec, spec = prev.get("spec"), obj.get("spec")
    status = obj.get("status") or {}
    if not (
        isinstance(prev_meta, dict)
        and isinstance(meta, dict)
        and isinstance(prev_spec, dict)
        and isinstance(spec, dict)
        and isinstance(status, dict)
    ):
        return None
    bookkeeping = {"resourceVersion": meta.get("resourceVersion")}
    if "generation" in meta:
        bookkeeping["generation"] = meta["generation"]
    if {**prev_meta, **bookkeeping} != meta:
        return None
    node_name = spec.get("nodeName") or ""
    if spec is not prev_spec:
        if node_name == (prev_spec.get("nodeName") or ""):
            if spec != prev_spec:
                return None
        elif {k: v for k, v in spec.items() if k != "nodeName"} != {
            k: v for k, v in prev_spec.items() if k != "nodeName"
        }:
            return None
    try:
        changes = _pod_status(status)
        generation = int(meta.get("generation") or 0)
    except (TypeError, ValueError, AttributeError):
        return None
    changes["resource_version"] = str(meta.get("resourceVersion") or "")
    changes["generation"] = generation
    changes["node_name"] = str(node_name)
    return old.with_changes(**changes)


def _decoded_pod(decoded: object, obj: Mapping[str, Any]) -> Pod | None:
    """The registry's typed view of ``obj`` (``Event.decoded``) at ``obj``'s resourceVersion,
    which is all the registry wrote after converting it; None when there is none."""
    if not isinstance(decoded, Pod):
        return None
    meta = obj.get("metadata")
    rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return decoded.with_changes(resource_version=str(rv or ""))


class Informers:
    """What the loop knows of the cluster, kept current one event at a time.

    Listed, then watched: pods, nodes, PDBs, PriorityClasses, Namespaces, and the Services,
    ReplicationControllers, ReplicaSets and StatefulSets whose selectors PodTopologySpread's
    system default spreading reads (``WATCHED``). Pods without ``spec.nodeName`` whose
    ``schedulerName`` is one of ``scheduler_names`` (the profiles') enter the queue
    (``Add``/``Update``/``Delete``);
    assigned pods go to the snapshot and emit ``AssignedPodAdd``/``Update``/``Delete``; a node
    update emits the ``NodeSchedulingPropertiesChange`` events it amounts to
    (``node_update_events``), which move pods out of the unschedulable pool as the queue
    decides. Terminal pods (Succeeded/Failed) hold no resources, as in the scheduler cache. A
    malformed object is logged and skipped.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        queue: SchedulingQueue,
        *,
        scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        scheduler_names: Collection[str] = (),
    ) -> None:
        self.snapshot = snapshot
        self.queue = queue
        self.scheduler_name = scheduler_name
        # every profile's name: a pod naming none of them is another scheduler's
        self.scheduler_names = frozenset(scheduler_names or (scheduler_name,))
        self.pods: dict[str, Pod] = {}  # key -> latest typed pod (all pods we track)
        self._nodes: dict[str, dict[str, Any]] = {}  # name -> latest stored node
        # storage -> key -> typed Service / ReplicationController / ReplicaSet / StatefulSet
        self._workloads: dict[str, dict[str, Any]] = {storage: {} for storage in WORKLOADS}
        self._admission = PriorityAdmission()
        self._classes_changed = False
        # Whether a pod without spec.priority gets its class resolved here, as the API
        # server's Priority admission would have (pods seeded from a state file skipped it);
        # off where that plugin is off, as kube-scheduler then reads such a pod as priority 0.
        self.resolve_priority = True
        # The latest status.startTime of any pod seen (never lowered: a bound, not a maximum).
        self.latest_start_time = -math.inf

    def on_event(self, ev: Event) -> None:
        """One event of the store's watch (or of the first list), applied."""
        storage = ev.storage
        if storage == "pods":
            self._on_pod(ev)
        elif storage == "nodes":
            self._on_node(ev)
        elif storage == "poddisruptionbudgets":
            self._on_pdb(ev)
        elif storage in WORKLOADS:
            self._on_workload(ev)
        elif storage == "priorityclasses":
            self._on_priority_class(ev)
        elif storage == "namespaces":
            if ev.type == DELETED:
                self.snapshot.namespaces.pop(ev.key[1], None)
            else:
                with contextlib.suppress(InvalidObject):
                    ns = Namespace.from_dict(ev.obj)
                    self.snapshot.namespaces[ns.name] = ns

    def _on_priority_class(self, ev: Event) -> None:
        self._classes_changed = True
        if ev.type == DELETED:
            self.snapshot.priority_classes.pop(ev.key[1], None)
            return
        try:
            pc = PriorityClass.from_dict(ev.obj)
        except InvalidObject as exc:
            log.warning("kubesim: scheduler skips PriorityClass %s: %s", ev.key[1], exc)
            return
        self.snapshot.priority_classes[pc.name] = pc

    def _on_workload(self, ev: Event) -> None:
        """Keep the snapshot's Services and workload lists; rebuilt only when a selector or
        the membership changes (status writes of a ReplicaSet are most of its events)."""
        attr, convert = WORKLOADS[ev.storage]
        known = self._workloads[ev.storage]
        key = f"{ev.key[0]}/{ev.key[1]}"
        if ev.type == DELETED:
            if known.pop(key, None) is None:
                return
        else:
            try:
                obj = convert(ev.obj)
            except InvalidObject as exc:
                log.warning("kubesim: scheduler skips %s %s: %s", ev.storage, key, exc)
                return
            old = known.get(key)
            known[key] = obj
            if old is not None and old.uid == obj.uid and old.selector == obj.selector:
                return
        setattr(self.snapshot, attr, list(known.values()))

    def _on_pdb(self, ev: Event) -> None:
        key = f"{ev.key[0]}/{ev.key[1]}"
        if ev.type == DELETED:
            self.snapshot.remove_pdb(key)
            return
        try:
            pdb = PodDisruptionBudget.from_dict(ev.obj)
        except InvalidObject as exc:
            log.warning("kubesim: scheduler skips PodDisruptionBudget %s: %s", key, exc)
            return
        self.snapshot.update_pdb(pdb)

    def _on_node(self, ev: Event) -> None:
        name = ev.key[1]
        queue = self.queue
        if ev.type == DELETED:
            self._nodes.pop(name, None)
            delete_node(self.snapshot, queue, name)
            return
        try:
            node = Node.from_dict(ev.obj)
        except InvalidObject as exc:
            log.warning("kubesim: scheduler skips node %s: %s", name, exc)
            return
        old = self._nodes.get(name)
        self._nodes[name] = ev.obj
        if old is None:
            add_node(self.snapshot, queue, node)
            return
        self.snapshot.add_node(node)  # the node's new version replaces the old
        for event in node_update_events(old, ev.obj):
            queue.move_all_to_active_or_backoff_queue(event, new_obj=node)

    def _typed_pod(
        self,
        obj: Mapping[str, Any],
        *,
        prev: Mapping[str, Any] | None = None,
        old: Pod | None = None,
        decoded: object = None,
    ) -> Pod | None:
        if old is not None and prev is not None:
            fast = status_update(old, prev, obj)
            if fast is not None:
                return fast
        try:
            pod = _decoded_pod(decoded, obj) or Pod.from_dict(obj)
        except InvalidObject as exc:
            meta = obj.get("metadata") or {}
            log.warning(
                "kubesim: scheduler skips pod %s/%s: %s",
                meta.get("namespace", ""),
                meta.get("name", ""),
                exc,
            )
            return None
        if pod.spec_priority is None and self.resolve_priority:
            # Seeded pods skipped admission; resolve the class as the apiserver would have.
            if self._classes_changed:
                self._classes_changed = False
                classes = list(self.snapshot.priority_classes.values())
                self._admission = PriorityAdmission(classes)
            with contextlib.suppress(AdmissionError):
                pod = self._admission.admit_pod(pod)
        return pod

    def _responsible(self, pod: Pod) -> bool:
        return (pod.scheduler_name or DEFAULT_SCHEDULER_NAME) in self.scheduler_names

    def _on_pod(self, ev: Event) -> None:
        key = f"{ev.key[0]}/{ev.key[1]}"
        old = self.pods.get(key)
        if ev.type == DELETED:
            self.pods.pop(key, None)
            if old is None:
                return
            self._pod_gone(old)
            return
        new = self._typed_pod(ev.obj, prev=ev.prev, old=old, decoded=ev.decoded)
        if new is None:
            return
        started = new.start_time
        if started is not None and started > self.latest_start_time:
            self.latest_start_time = started
        if new.phase in TERMINAL_PHASES:
            # Terminal pods release their resources (the cache drops them).
            self.pods.pop(key, None)
            if old is not None:
                self._pod_gone(old)
            return
        if old is not None and old.uid != new.uid:
            self._pod_gone(old)
            old = None
        self.pods[key] = new
        snapshot = self.snapshot
        queue = self.queue
        if new.node_name:
            snapshot.add_pod(new)
            if old is None or not old.node_name:
                if old is not None:
                    queue.delete(old)
                queue.assigned_pod_added(new)
            else:
                queue.assigned_pod_updated(old, new)
            return
        if not self._responsible(new) or new.is_terminating:
            snapshot.remove_pod(new)
            if old is not None:
                queue.delete(old)
            return
        add_pending_pod(snapshot, queue, new, old)

    def _pod_gone(self, old: Pod) -> None:
        delete_pod(self.snapshot, self.queue, old)
