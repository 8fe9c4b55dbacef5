"""The scheduler loop: kube-scheduler's ``scheduleOne`` driven live, decisions from ``scheduler``.

kube-scheduler is a client of the API like any controller: informers keep its cache (nodes and
assigned pods) and its queue (unassigned pods) current, each cycle pops one pod, filters and
scores the nodes, and binds through ``pods/binding``; a pod that fits nowhere runs
DefaultPreemption (PostFilter). kubesim reproduces that loop around the project's pure
``scheduler`` package, so the decision kubesim acts on is the one ``schedule_one`` and
``preempt`` (hence ``python -m scheduler simulate``) give for the same snapshot. It sees the
cluster only through the store and its watch, as the real one sees only the API.

What is reproduced (``pkg/scheduler/eventhandlers.go``, ``schedule_one.go``,
``framework/preemption``):

* informers: pods, nodes, PDBs, PriorityClasses, Namespaces, and the Services,
  ReplicationControllers, ReplicaSets and StatefulSets whose selectors PodTopologySpread's
  system default spreading reads, are listed, then watched; the
  events of one burst are applied together in resourceVersion order before the next cycles,
  and change the ``Snapshot`` in place (``add_pod``/``remove_pod``/``add_node``…) — it is never
  rebuilt. Terminal pods (Succeeded/Failed) hold no resources, as in the scheduler cache;
* responsibility: pods without ``spec.nodeName`` whose ``schedulerName`` is ours (default
  ``default-scheduler``) enter ``SchedulingQueue`` (``Add``/``Update``/``Delete``); assigned
  pods go to the cache and emit ``AssignedPodAdd``/``Update``/``Delete``; node adds and
  updates emit ``NodeAdd`` and the ``NodeSchedulingPropertiesChange`` events
  (``NodeSpecUnschedulableChange``, ``NodeAllocatableChange``, ``NodeLabelChange``,
  ``NodeTaintChange``, ``NodeConditionChange``, ``NodeAnnotationChange``), which move pods out
  of the unschedulable pool as the queue decides (gates, backoff, registered events). The
  queue's periodic flushes (backoff every second, leftovers every 30 s) run on a clock scaled
  by ``time_scale``, so backoffs are ``time_scale`` times shorter in wall time;
* a cycle: ``schedule_one`` with the round-robin ``nextStartNodeIndex``, then *assume* (bind in
  the snapshot), then bind through the ``pods/binding`` REST logic (``BindingStorage.bind``, the
  same checks the HTTP subresource makes, with the pod's UID as precondition) and record the
  ``Scheduled`` event ``Successfully assigned ns/name to node``. A failed bind forgets the
  assumed pod, moves pods nominated to that node, and handles an error (``SchedulerError``,
  ``running Bind plugin "DefaultBinder": <API error>``, nomination cleared);
* failure (``handleSchedulingFailure``): for an Unschedulable fit error ``preempt`` runs with
  the cycle's filter statuses; its message is appended to the fit error
  (``0/N nodes are available: …. preemption: …``). A chosen node: each victim not already
  terminating gets ``DisruptionTarget=True`` (reason ``PreemptionByScheduler``, message
  ``default-scheduler: preempting to accommodate a higher priority pod``) and is deleted with
  default options — its own grace period — with a ``Preempted`` event ``Preempted by pod
  <uid> on node <node>`` (regarding the victim, related to the preemptor); lower-priority
  pods nominated to that node lose their ``status.nominatedNodeName``. Then the pod gets the
  ``FailedScheduling`` warning event, the ``PodScheduled=False`` condition (reason
  ``Unschedulable``, or ``SchedulerError`` for errors, message as the event, truncated to
  1024 characters as events are) and ``status.nominatedNodeName`` as the preemption decided
  (Override with the node or "", or left as is), in one status write made only when
  something changed, and returns to the queue (``AddUnschedulableIfNotPresent``) unless it was
  deleted or bound meanwhile;
* events are ``events.k8s.io/v1`` with ``reportingController: default-scheduler``, created
  through the REST layer (so they are validated and watched like any client's).
* metrics (``kubesim.scheduling.metrics``): kube-scheduler's pending pods per queue, schedule
  attempts by result, preemption attempts and victims, on the API server's ``/metrics``.

The loop's own work per pod does not grow with the number of pods: watch events are drained
in bursts and applied in one pass; the snapshot is changed in place; a pod update that
touches only status, ``spec.nodeName`` or bookkeeping (binds, kubelet status writes — most
pod events) carries the typed pod over instead of re-reading its spec (``status_update``); a
bind is one shallow copy and one store write; scheduling runs in slices of ``BATCH_SECONDS``
so the API server and the kubelets keep answering (``bench/kubesim_cluster.py`` measures it).

Kept simple on purpose: preemption is synchronous (``SchedulerAsyncPreemption`` off), the
binding cycle runs inline, no queueing hints, no ``preCheckForNode`` (a node event moves every
pod its registered plugins allow; those that still do not fit go back to the pool), no event
series aggregation, and ``preempt`` runs in ``exhaustive`` mode by default — the mode
``scheduler simulate`` uses; it equals kube's sampled search up to 100 nodes except for full
ties, which kube breaks at random.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from kube.apierrors import AdmissionError
from kube.conditions import update_pod_condition
from kube.objects import (
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
from kube.times import format_micro_time, format_time, parse_time
from kubesim.core.errors import StatusError
from kubesim.core.store import ADDED, DELETED, Event, Subscription, clone
from kubesim.plugins.binding import BindingStorage
from kubesim.registry.generic import DeleteOptions
from kubesim.scheduling.metrics import SchedulerMetrics
from scheduler.eventhandlers import add_node, add_pending_pod, delete_node, delete_pod
from scheduler.filters import default_framework
from scheduler.framework import Code, Framework, fit_error_message
from scheduler.preemption import PreemptionResult, preempt
from scheduler.preemption.core import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER
from scheduler.priority import PriorityAdmission
from scheduler.queue import (
    NominatingInfo,
    NominatingMode,
    PodAlreadyPresentError,
    QueuedPodInfo,
    SchedulingQueue,
)
from scheduler.queue import events as qev
from scheduler.schedule import ScheduleResult, schedule_one
from scheduler.snapshot import Snapshot

if TYPE_CHECKING:
    from kubesim.cluster import Cluster
    from kubesim.core.scheme import ResourceType

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "Decision",
    "SchedulerLoop",
    "node_update_events",
    "status_update",
]

log = logging.getLogger("kubesim")

DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
REPORTING_INSTANCE: Final = "default-scheduler-kubesim"
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
MAX_MESSAGE: Final = 1024  # the events recorder truncates notes to 1 kB
BACKOFF_FLUSH_PERIOD: Final = 1.0  # seconds of scheduler time, as upstream's flusher
LEFTOVER_FLUSH_PERIOD: Final = 30.0
MIN_TICK: Final = 0.005  # wall seconds: the flushers' period at tiny time scales
BATCH_SECONDS: Final = 0.02  # wall time scheduled before yielding to the API server
LIST_SLICE: Final = 500  # objects applied between yields while the first list is read
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})
REASON_UNSCHEDULABLE: Final = "Unschedulable"
REASON_SCHEDULER_ERROR: Final = "SchedulerError"


def _truncate(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


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


_POD_FIELDS: Final = tuple(f.name for f in dataclasses.fields(Pod))


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
    new = object.__new__(Pod)
    for name in _POD_FIELDS:
        object.__setattr__(new, name, changes[name] if name in changes else getattr(old, name))
    return new


@dataclass(frozen=True, slots=True)
class Decision:
    """One scheduling cycle as the loop acted on it (kept for tests and the demo).

    ``start_index`` is the round-robin index the cycle's ``schedule_one`` started from, so a
    caller can replay the decision on the same snapshot.
    """

    pod: str
    uid: str
    cycle: int
    start_index: int
    node: str = ""
    message: str = ""
    nominated_node: str | None = None
    victims: tuple[str, ...] = ()


class SchedulerLoop:
    """A kubesim controller: the default scheduler (see the module docstring)."""

    name = "scheduler"

    def __init__(
        self,
        *,
        scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        percentage_of_nodes_to_score: int = 0,
        pod_initial_backoff: float = 1.0,
        pod_max_backoff: float = 10.0,
        pod_max_in_unschedulable_pods: float = 300.0,
        preemption_mode: Literal["exhaustive", "sampled"] = "exhaustive",
        framework: Framework | None = None,
        history: int = 10000,
        cross_node_preemption: bool = False,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.pod_initial_backoff = pod_initial_backoff
        self.pod_max_backoff = pod_max_backoff
        self.pod_max_in_unschedulable_pods = pod_max_in_unschedulable_pods
        self.preemption_mode: Literal["exhaustive", "sampled"] = preemption_mode
        # Beyond kube (``scheduler.preemption.crossnode``); off: kube's DefaultPreemption.
        self.cross_node_preemption = cross_node_preemption
        self.framework = framework if framework is not None else default_framework()
        self.history = history
        self.snapshot = Snapshot()
        self.queue = self._new_queue()
        self.next_start_index = 0
        self.decisions: list[Decision] = []
        self.bound = 0  # pods bound by this loop since it started
        self._cluster: Cluster | None = None
        self._pods: dict[str, Pod] = {}  # key -> latest typed pod (all pods we track)
        self._nodes: dict[str, dict[str, Any]] = {}  # name -> latest stored node
        # storage -> key -> typed Service / ReplicationController / ReplicaSet / StatefulSet
        self._workloads: dict[str, dict[str, Any]] = {storage: {} for storage in WORKLOADS}
        self._pending_events: list[Event] = []
        self._wake: asyncio.Event | None = None
        self._admission = PriorityAdmission()
        self._classes_changed = False
        self._clock_origin = (0.0, 0.0)
        self._time_scale = 1.0
        self._idle: asyncio.Event | None = None
        self._binder: BindingStorage | None = None
        self._pods_rt: ResourceType | None = None
        self._events_rt: ResourceType | None = None
        self._last_stamp = 0
        self._subs: list[Subscription] = []
        # kube-scheduler's metrics; served on the API server's /metrics while the loop runs.
        self.metrics = SchedulerMetrics(lambda: self.queue)

    # --- time ---------------------------------------------------------------------------------

    def clock(self) -> float:
        """The scheduler's clock: wall time since start, divided by the time scale."""
        wall0, virt0 = self._clock_origin
        return virt0 + (time.monotonic() - wall0) / self._time_scale

    def _new_queue(self) -> SchedulingQueue:
        return SchedulingQueue(
            self.clock,
            pod_initial_backoff=self.pod_initial_backoff,
            pod_max_backoff=self.pod_max_backoff,
            pod_max_in_unschedulable_pods=self.pod_max_in_unschedulable_pods,
            pod_lister=self.snapshot,
            namespace_labels=self.snapshot.namespace_labels,
        )

    # --- lifecycle ------------------------------------------------------------------------------

    async def run(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._time_scale = max(float(cluster.time_scale), 1e-9)
        self._clock_origin = (time.monotonic(), cluster.registry.clock())
        self._binder = cluster.binding
        self._pods_rt = cluster.scheme.for_kind("v1", "Pod")
        self._events_rt = cluster.scheme.for_kind("events.k8s.io/v1", "Event")
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        store = cluster.store
        subs = self._subs = [store.subscribe(s) for s in WATCHED]
        pumps = [asyncio.create_task(self._pump(sub)) for sub in subs]
        ticker = asyncio.create_task(self._ticker())
        collectors = cluster.metrics
        collectors.register(self.metrics)
        try:
            await self._initial_list()
            while True:
                self._apply_events()
                busy = self._schedule_batch()
                if busy:
                    await asyncio.sleep(0)
                    continue
                if not self._pending_events:
                    self._idle.set()
                    await self._wake.wait()
                    self._wake.clear()
                    self._idle.clear()
                # Let the rest of a burst of writes land: one drain applies them all.
                await asyncio.sleep(0)
        finally:
            collectors.unregister(self.metrics)
            ticker.cancel()
            for task in pumps:
                task.cancel()
            for sub in subs:
                store.unsubscribe(sub)
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
            self._cluster = None

    async def _pump(self, sub: Subscription) -> None:
        queue = sub.queue
        while True:
            ev = await queue.get()
            self._pending_events.append(ev)
            while not queue.empty():
                self._pending_events.append(queue.get_nowait())
            assert self._wake is not None
            self._wake.set()

    async def _ticker(self) -> None:
        """Upstream's flushers: backoff completions each second, pool leftovers each 30 s."""
        period = max(BACKOFF_FLUSH_PERIOD * self._time_scale, MIN_TICK)
        last_leftover = self.clock()
        while True:
            await asyncio.sleep(period)
            moved = bool(self.queue.flush_backoff_q_completed())
            if self.clock() - last_leftover >= LEFTOVER_FLUSH_PERIOD:
                last_leftover = self.clock()
                before = len(self.queue.unschedulable_pods())
                self.queue.flush_unschedulable_pods_leftover()
                moved = moved or len(self.queue.unschedulable_pods()) != before
            if moved and self._wake is not None:
                self._wake.set()

    async def wait_idle(self, timeout: float = 5.0) -> None:
        """Wait until every event seen so far is applied and activeQ is empty (for tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (
                self._idle is not None
                and self._idle.is_set()
                and not self._pending_events
                and all(sub.queue.empty() for sub in self._subs)
            ):
                return
            await asyncio.sleep(0.005)
        raise TimeoutError("the scheduler loop did not become idle")

    # --- informers ------------------------------------------------------------------------------

    async def _initial_list(self) -> None:
        """List everything at one resourceVersion, then apply it in slices so a large state
        does not stall the API server; later events wait in the watch queues."""
        cluster = self._cluster
        assert cluster is not None
        store = cluster.store
        list_rv = store.resource_version
        listed = [(s, list(store.objects(s).items())) for s in WATCHED]
        done = 0
        for storage, items in listed:
            for key, obj in items:
                self._on_event(Event(ADDED, 0, storage, key, obj, None))
                done += 1
                if done % LIST_SLICE == 0:
                    await asyncio.sleep(0)
        # Events already reflected by the list are dropped (the informer's resourceVersion).
        self._pending_events = [e for e in self._pending_events if e.rv > list_rv]

    def _apply_events(self) -> None:
        if not self._pending_events:
            return
        batch, self._pending_events = self._pending_events, []
        batch.sort(key=lambda e: e.rv)
        for ev in batch:
            try:
                self._on_event(ev)
            except Exception:  # one bad object must not stop the scheduler
                log.exception("kubesim: scheduler event %s %s failed", ev.type, ev.key)

    def _on_event(self, ev: Event) -> None:
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
    ) -> Pod | None:
        if old is not None and prev is not None:
            fast = status_update(old, prev, obj)
            if fast is not None:
                return fast
        try:
            pod = Pod.from_dict(obj)
        except InvalidObject as exc:
            meta = obj.get("metadata") or {}
            log.warning(
                "kubesim: scheduler skips pod %s/%s: %s",
                meta.get("namespace", ""),
                meta.get("name", ""),
                exc,
            )
            return None
        if pod.spec_priority is None:
            # Seeded pods skipped admission; resolve the class as the apiserver would have.
            if self._classes_changed:
                self._classes_changed = False
                classes = list(self.snapshot.priority_classes.values())
                self._admission = PriorityAdmission(classes)
            with contextlib.suppress(AdmissionError):
                pod = self._admission.admit_pod(pod)
        return pod

    def _responsible(self, pod: Pod) -> bool:
        return (pod.scheduler_name or DEFAULT_SCHEDULER_NAME) == self.scheduler_name

    def _on_pod(self, ev: Event) -> None:
        key = f"{ev.key[0]}/{ev.key[1]}"
        old = self._pods.get(key)
        if ev.type == DELETED:
            self._pods.pop(key, None)
            if old is None:
                return
            self._pod_gone(old)
            return
        new = self._typed_pod(ev.obj, prev=ev.prev, old=old)
        if new is None:
            return
        if new.phase in TERMINAL_PHASES:
            # Terminal pods release their resources (the cache drops them).
            self._pods.pop(key, None)
            if old is not None:
                self._pod_gone(old)
            return
        if old is not None and old.uid != new.uid:
            self._pod_gone(old)
            old = None
        self._pods[key] = new
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

    # --- scheduling cycles ------------------------------------------------------------------

    def _schedule_batch(self) -> bool:
        """Pop and schedule pods for up to ``BATCH_SECONDS``; True when time ran out."""
        deadline = time.monotonic() + BATCH_SECONDS
        queue = self.queue
        while True:
            pinfo = queue.pop()
            if pinfo is None:
                return False
            try:
                self.schedule_pod(pinfo)
            except Exception:  # a bug in one cycle must not stop the scheduler
                log.exception("kubesim: scheduling %s failed", pinfo.pod.key)
            if time.monotonic() >= deadline:
                return True

    def schedule_pod(self, pinfo: QueuedPodInfo) -> None:
        """One ``scheduleOne``: decide, then bind or handle the failure."""
        pod = self._pods.get(pinfo.pod.key)
        if pod is None or pod.uid != pinfo.pod.uid or pod.node_name or pod.is_terminating:
            return  # skipPodSchedule: deleted, bound or being deleted meanwhile
        pinfo.pod = pod
        cycle = self.queue.scheduling_cycle
        start = self.next_start_index
        result = schedule_one(
            pod,
            self.snapshot,
            framework=self.framework,
            percentage_of_nodes_to_score=self.percentage_of_nodes_to_score,
            start_index=start,
        )
        self.next_start_index = result.next_start_index
        if result.succeeded:
            self._assume_and_bind(pinfo, result, cycle=cycle, start=start)
            return
        self._handle_failure(pinfo, result, cycle=cycle, start=start)

    def _record(self, decision: Decision) -> None:
        self.decisions.append(decision)
        if len(self.decisions) > self.history:
            del self.decisions[: len(self.decisions) - self.history]

    def _assume_and_bind(
        self, pinfo: QueuedPodInfo, result: ScheduleResult, *, cycle: int, start: int
    ) -> None:
        pod = pinfo.pod
        host = result.suggested_host
        assumed = self.snapshot.bind_pod(pod, host)
        assert self._binder is not None
        try:
            stored = self._binder.bind(pod.namespace, pod.name, host, uid=pod.uid)
        except StatusError as err:
            # ForgetPod, then the failure handler with an error (no rejecting plugin).
            self.snapshot.remove_pod(assumed)
            current = self._pods.get(pod.key)
            if current is not None and current.uid == pod.uid and not current.node_name:
                self.snapshot.add_pod(current)
            # handleBindingCycleError: the room it held may let pods nominated there in.
            self.queue.move_all_to_active_or_backoff_queue(
                qev.AssignedPodDelete,
                lambda p: p.nominated_node_name == host,
                old_obj=assumed,
            )
            message = f'running Bind plugin "DefaultBinder": {err.message}'
            self.metrics.schedule_attempt("error", self.scheduler_name)
            self._record(Decision(pod.key, pod.uid, cycle, start, message=message))
            pinfo.unschedulable_plugins = set()
            pinfo.pending_plugins = set()
            self._fail(
                pinfo,
                message,
                reason=REASON_SCHEDULER_ERROR,
                cycle=cycle,
                nominating=NominatingInfo(NominatingMode.Override, ""),
            )
            return
        self.bound += 1
        self.metrics.schedule_attempt("scheduled", self.scheduler_name)
        self._record(Decision(pod.key, pod.uid, cycle, start, node=host))
        self._event(
            stored,
            type_="Normal",
            reason="Scheduled",
            action="Binding",
            note=f"Successfully assigned {pod.namespace}/{pod.name} to {host}",
        )

    def _handle_failure(
        self, pinfo: QueuedPodInfo, result: ScheduleResult, *, cycle: int, start: int
    ) -> None:
        pod = pinfo.pod
        status = result.status
        if status.code is not Code.Unschedulable:
            message = status.message or "scheduling failed"
            self.metrics.schedule_attempt("error", self.scheduler_name)
            self._record(Decision(pod.key, pod.uid, cycle, start, message=message))
            pinfo.unschedulable_plugins = set()
            pinfo.pending_plugins = set()
            self._fail(pinfo, message, reason=REASON_SCHEDULER_ERROR, cycle=cycle, nominating=None)
            return
        diagnosis = result.diagnosis
        pinfo.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
        pinfo.pending_plugins = set(diagnosis.pending_plugins)
        self.metrics.schedule_attempt("unschedulable", self.scheduler_name)
        self.metrics.preemption_attempt()
        outcome = preempt(
            pod,
            self.snapshot,
            node_statuses=result.node_statuses,
            mode=self.preemption_mode,
            framework=self.framework,
            now=self._cluster.registry.clock() if self._cluster is not None else None,
            cross_node=self.cross_node_preemption,
        )
        nominating: NominatingInfo | None = None
        victims: tuple[str, ...] = ()
        if outcome.nominated_node_name is not None:
            nominating = NominatingInfo(NominatingMode.Override, outcome.nominated_node_name)
        if outcome.nominated_node_name:
            victims = self._prepare_candidate(pod, outcome)
            self.metrics.preemption_victims(len(outcome.victims))
        post_filter_msg = "" if outcome.status.code is Code.Success else outcome.status.message
        message = fit_error_message(
            len(self.snapshot.node_info_list),
            result.node_statuses,
            pre_filter_msg=diagnosis.pre_filter_msg,
            post_filter_msg=post_filter_msg,
        )
        self._record(
            Decision(
                pod.key,
                pod.uid,
                cycle,
                start,
                message=message,
                nominated_node=outcome.nominated_node_name,
                victims=victims,
            )
        )
        self._fail(pinfo, message, reason=REASON_UNSCHEDULABLE, cycle=cycle, nominating=nominating)

    def _prepare_candidate(self, preemptor: Pod, outcome: PreemptionResult) -> tuple[str, ...]:
        """``prepareCandidate``: condition, delete and event per victim; clear nominations."""
        cluster = self._cluster
        assert cluster is not None and self._pods_rt is not None
        node = outcome.nominated_node_name or ""
        registry = cluster.registry
        now = format_time(registry.clock())
        preemptor_obj = registry.store.get("pods", (preemptor.namespace, preemptor.name))
        done: list[str] = []
        for victim in outcome.victims:
            stored = registry.store.get("pods", (victim.namespace, victim.name))
            if stored is None or (stored.get("metadata") or {}).get("uid") != victim.uid:
                continue  # already gone
            done.append(victim.key)
            if (stored.get("metadata") or {}).get("deletionTimestamp"):
                continue  # already terminating
            new = clone(stored)
            changed = update_pod_condition(
                new.setdefault("status", {}),
                {
                    "type": DISRUPTION_TARGET,
                    "status": "True",
                    "reason": PREEMPTION_BY_SCHEDULER,
                    "message": f"{preemptor.scheduler_name or DEFAULT_SCHEDULER_NAME}: preempting"
                    " to accommodate a higher priority pod",
                },
                now=now,
            )
            try:
                if changed:
                    registry.update(
                        self._pods_rt, victim.namespace, victim.name, new, subresource="status"
                    )
                registry.delete(
                    self._pods_rt,
                    victim.namespace,
                    victim.name,
                    DeleteOptions(uid=victim.uid),
                )
            except StatusError as err:
                if err.code != 404:
                    log.warning("kubesim: preempting %s failed: %s", victim.key, err.message)
                continue
            self._event(
                stored,
                related=preemptor_obj,
                type_="Normal",
                reason="Preempted",
                action="Preempting",
                note=f"Preempted by pod {preemptor.uid} on node {node}",
            )
        for other in outcome.nominated_pods_to_clear:
            current = self.snapshot.get_pod(other.key)
            if current is not None and not current.node_name:
                self.snapshot.update_pod(current.with_changes(nominated_node_name=""))
            self._write_pod_status(other, nominated_node_name="")
        return tuple(done)

    def _fail(
        self,
        pinfo: QueuedPodInfo,
        message: str,
        *,
        reason: str,
        cycle: int,
        nominating: NominatingInfo | None,
    ) -> None:
        """``handleSchedulingFailure``: event, requeue, condition and nomination."""
        pod = pinfo.pod
        current = self._pods.get(pod.key)
        note = _truncate(message)
        regarding = self._stored(pod) or {
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}
        }
        self._event(
            regarding, type_="Warning", reason="FailedScheduling", action="Scheduling", note=note
        )
        if current is None or current.uid != pod.uid or current.node_name:
            return  # deleted or bound meanwhile: nothing to requeue
        if nominating is not None and nominating.mode is NominatingMode.Override:
            current = current.with_changes(nominated_node_name=nominating.nominated_node_name)
            self._pods[pod.key] = current
            self.snapshot.update_pod(current)
        pinfo.pod = current
        self.queue.nominator.add_nominated_pod(current, nominating)
        try:
            self.queue.add_unschedulable_if_not_present(pinfo, cycle)
        except PodAlreadyPresentError as exc:
            log.debug("kubesim: %s", exc)
        self._write_pod_status(
            pod,
            condition=(reason, note),
            nominated_node_name=(
                nominating.nominated_node_name
                if nominating is not None and nominating.mode is NominatingMode.Override
                else None
            ),
        )

    # --- API writes -----------------------------------------------------------------------------

    def _stored(self, pod: Pod) -> dict[str, Any] | None:
        cluster = self._cluster
        assert cluster is not None
        obj = cluster.store.get("pods", (pod.namespace, pod.name))
        if obj is None or (obj.get("metadata") or {}).get("uid") != pod.uid:
            return None
        return obj

    def _write_pod_status(
        self,
        pod: Pod,
        *,
        condition: tuple[str, str] | None = None,
        nominated_node_name: str | None = None,
    ) -> None:
        """``updatePod``: one status write, only when the condition or nomination changes."""
        cluster = self._cluster
        assert cluster is not None and self._pods_rt is not None
        stored = self._stored(pod)
        if stored is None:
            return
        new = clone(stored)
        status = new.setdefault("status", {})
        changed = False
        if condition is not None:
            reason, message = condition
            changed = update_pod_condition(
                status,
                {"type": "PodScheduled", "status": "False", "reason": reason, "message": message},
                now=cluster.registry.clock(),
            )
        if (
            nominated_node_name is not None
            and (status.get("nominatedNodeName") or "") != nominated_node_name
        ):
            changed = True
            if nominated_node_name:
                status["nominatedNodeName"] = nominated_node_name
            else:
                status.pop("nominatedNodeName", None)
        if not changed:
            return
        try:
            cluster.registry.update(
                self._pods_rt, pod.namespace, pod.name, new, subresource="status"
            )
        except StatusError as err:
            log.warning("kubesim: scheduler status update of %s failed: %s", pod.key, err.message)

    def _event_stamp(self) -> int:
        """The recorder's name suffix (nanoseconds), strictly increasing so names never clash."""
        self._last_stamp = max(time.time_ns(), self._last_stamp + 1)
        return self._last_stamp

    def _event(
        self,
        regarding: Mapping[str, Any],
        *,
        type_: str,
        reason: str,
        action: str,
        note: str,
        related: Mapping[str, Any] | None = None,
    ) -> None:
        """An ``events.k8s.io/v1`` Event from ``default-scheduler``, through the REST layer."""
        cluster = self._cluster
        if cluster is None or self._events_rt is None:
            return
        now = cluster.registry.clock()
        meta = regarding.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        event: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta.get('name', '')}.{self._event_stamp():x}",
                "namespace": namespace,
            },
            "eventTime": format_micro_time(now),
            "reportingController": self.scheduler_name,
            "reportingInstance": REPORTING_INSTANCE,
            "action": action,
            "reason": reason,
            "type": type_,
            "note": note,
            "regarding": _reference(regarding),
        }
        if related is not None:
            event["related"] = _reference(related)
        try:
            cluster.registry.create(self._events_rt, namespace, event)
        except StatusError as err:
            log.warning("kubesim: scheduler event %s failed: %s", reason, err.message)


def _reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
