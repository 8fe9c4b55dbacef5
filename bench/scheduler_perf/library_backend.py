"""kube-scheduler's ``scheduleOne`` loop over ``scheduler``, in this process.

One thread does everything, so a cycle's time includes the informer work kube does on other
goroutines.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kube.objects import (
    DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
    InvalidObject,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    object_from_dict,
)
from scheduler import (
    Code,
    NominatingInfo,
    NominatingMode,
    QueuedPodInfo,
    SchedulingQueue,
    Snapshot,
    preempt,
    schedule_one,
)
from scheduler import eventhandlers as handlers
from scheduler.config import KubeSchedulerConfiguration
from scheduler.hints import DEFAULT_PLUGIN_HINTS
from scheduler.preemption.core import default_preemption_framework
from scheduler.queue import PodAlreadyPresentError
from scheduler.queue import events as qev

from .backend import BoundListener
from .errors import ConfigError, Unmodelled
from .objects import NewPod, labels_match

__all__ = ["LibraryBackend"]

BACKOFF_FLUSH: Final = 1.0  # the queue's flushers, as kube-scheduler runs them
LEFTOVER_FLUSH: Final = 30.0


class LibraryBackend:
    """kube-scheduler's loop over ``scheduler``: queue, ``schedule_one``, bind, preempt.

    ``pods`` is what the API server would hold (every live pod, the latest version); events
    that an informer would deliver after a cycle (binds, deletions) are applied after it.

    ``SchedulingQueue`` (informer events, backoff flushes each second, leftover flushes each 30 s,
    on the wall clock), ``schedule_one`` with kube's adaptive percentageOfNodesToScore and the
    round-robin start index, binding into the ``Snapshot`` (``AssignedPodAdd`` to the queue), and
    on failure DefaultPreemption (``preempt``, sampled as kube searches, seeded): victims deleted,
    the preemptor nominated and requeued. A bound pod is deleted at once only with a grace period
    of 0: otherwise it stays terminating, as on an integration cluster without kubelets.

    ``queueing_hints`` is the SchedulerQueueingHints gate (kube 1.32's default, on): the queue
    asks the in-tree plugins' hints (``scheduler.hints``) which events may help a pod.
    """

    name = "scheduler"

    def __init__(
        self,
        *,
        seed: int,
        percentage_of_nodes_to_score: int = 0,
        config: KubeSchedulerConfiguration | None = None,
        queueing_hints: bool = True,
    ) -> None:
        self.snapshot = Snapshot()
        # With a test case's schedulerConfigPath, each pod's profile decides (its plugins, its
        # percentageOfNodesToScore, DefaultPreemption's args) and the queue takes its backoffs.
        self.config = config
        self.framework = default_preemption_framework() if config is None else None
        initial, maximum = (1.0, 10.0)  # kube's defaults
        if config is not None:
            initial = float(config.pod_initial_backoff_seconds)
            maximum = float(config.pod_max_backoff_seconds)
        self.queue = SchedulingQueue(
            time.monotonic,
            pod_initial_backoff=initial,
            pod_max_backoff=maximum,
            pod_lister=self.snapshot,
            namespace_labels=self.snapshot.namespace_labels,
            queueing_hints=DEFAULT_PLUGIN_HINTS if queueing_hints else None,
        )
        self.percentage: int | None = percentage_of_nodes_to_score if config is None else None
        self.rng = random.Random(seed)
        self.next_start = 0
        self.pods: dict[str, Pod] = {}
        self.by_namespace: dict[str, dict[str, Pod]] = {}
        self.attempted: set[str] = set()  # pending pods with PodScheduled=False
        self.scheduled_in: Counter[str] = Counter()  # bound pods per namespace
        self.attempted_in: Counter[str] = Counter()  # attempted pending pods per namespace
        self.last_message: dict[str, str] = {}
        self.listeners: list[BoundListener] = []
        self.results: Counter[str] = Counter()
        self.victims = 0
        self._next_backoff_flush = time.monotonic() + BACKOFF_FLUSH
        self._next_leftover_flush = time.monotonic() + LEFTOVER_FLUSH

    # --- the API side ---------------------------------------------------------------------

    def create_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        self.snapshot.namespaces[name] = Namespace(
            name, {**labels, "kubernetes.io/metadata.name": name}
        )
        self.by_namespace.setdefault(name, {})

    def create_nodes(self, manifests: Sequence[Mapping[str, Any]]) -> None:
        for m in manifests:
            handlers.add_node(self.snapshot, self.queue, _typed(Node.from_dict, m))

    def label_nodes(self, labels: Mapping[str, Mapping[str, str]]) -> None:
        for name, extra in labels.items():
            ni = self.snapshot.get_node_info(name)
            if ni is None or ni.node is None:
                continue
            node = ni.node.with_changes(labels={**ni.node.labels, **extra})
            self.snapshot.update_node(node)
            self.queue.move_all_to_active_or_backoff_queue(qev.NodeLabelChange, new_obj=node)

    def node_names(self) -> list[str]:
        return self.snapshot.node_names()

    def prepare_pods(self, pods: Sequence[NewPod]) -> object:
        typed: dict[int, Pod] = {}
        out: list[Pod] = []
        for p in pods:
            template = typed.get(id(p.template))
            if template is None:
                template = _typed(Pod.from_dict, p.manifest())
                typed[id(p.template)] = template
            out.append(
                template.with_changes(
                    name=p.name, namespace=p.namespace, labels=p.labels, uid=p.uid
                )
            )
        return out

    def submit_pods(self, prepared: object) -> None:
        assert isinstance(prepared, list)
        for pod in prepared:
            self._add_pod(pod)

    def _add_pod(self, pod: Pod) -> None:
        self.pods[pod.key] = pod
        self.by_namespace.setdefault(pod.namespace, {})[pod.key] = pod
        if pod.node_name:
            self.scheduled_in[pod.namespace] += 1
            handlers.add_assigned_pod(self.snapshot, self.queue, pod)
            return
        handlers.add_pending_pod(self.snapshot, self.queue, pod)
        if pod.scheduling_gates:
            self._attempted(pod)  # PodScheduled=False, reason SchedulingGated

    def _attempted(self, pod: Pod) -> None:
        if pod.key not in self.attempted:
            self.attempted.add(pod.key)
            self.attempted_in[pod.namespace] += 1

    def _forget_attempt(self, pod: Pod) -> None:
        if pod.key in self.attempted:
            self.attempted.discard(pod.key)
            self.attempted_in[pod.namespace] -= 1

    def create_object(self, manifest: Mapping[str, Any]) -> None:
        kind = manifest.get("kind")
        if kind == "Pod":
            self._add_pod(_typed(Pod.from_dict, manifest))
            return
        if kind == "Node":
            self.create_nodes([manifest])
            return
        obj = _typed(object_from_dict, manifest)
        snap = self.snapshot
        if isinstance(obj, Service):
            snap.services.append(obj)
        elif isinstance(obj, ReplicaSet):
            snap.replica_sets.append(obj)
        elif isinstance(obj, ReplicationController):
            snap.replication_controllers.append(obj)
        elif isinstance(obj, StatefulSet):
            snap.stateful_sets.append(obj)
        elif isinstance(obj, PodDisruptionBudget):
            snap.add_pdb(obj)
        elif isinstance(obj, PriorityClass):
            snap.priority_classes[obj.name] = obj
        elif isinstance(obj, Namespace):
            snap.namespaces[obj.name] = obj
        else:
            raise Unmodelled(f"createAny of kind {kind}")

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        if kind == "Pod":
            self.delete_pod(f"{namespace}/{name}")
        elif kind == "Node":
            handlers.delete_node(self.snapshot, self.queue, name)
        elif kind == "Service":
            self.snapshot.services = [
                s for s in self.snapshot.services if (s.namespace, s.name) != (namespace, name)
            ]
        else:
            raise Unmodelled(f"deleting objects of kind {kind}")

    def delete_pod(self, key: str, *, grace: int | None = None) -> None:
        """DELETE with default options: a bound pod with a grace period stays terminating."""
        pod = self.pods.get(key)
        if pod is None:
            return
        period = pod.termination_grace_period_seconds if grace is None else grace
        if period is None:
            period = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
        if pod.node_name and period > 0:
            if not pod.is_terminating:
                updated = pod.with_changes(deletion_timestamp=time.time() + period)
                self.pods[key] = updated
                self.by_namespace[pod.namespace][key] = updated
                self.snapshot.update_pod(updated)
                self.queue.assigned_pod_updated(pod, updated)
            return
        del self.pods[key]
        del self.by_namespace[pod.namespace][key]
        self._forget_attempt(pod)
        if pod.node_name:
            self.scheduled_in[pod.namespace] -= 1
        handlers.delete_pod(self.snapshot, self.queue, pod)

    def pod_names(self, namespace: str, selector: Mapping[str, str]) -> list[str]:
        pods = self.by_namespace.get(namespace, {}).values()
        return [p.name for p in pods if labels_match(p.labels, selector)]

    def count(self, namespace: str, selector: Mapping[str, str], *, attempted: bool) -> int:
        if not selector:
            n = self.scheduled_in[namespace]
            return n + self.attempted_in[namespace] if attempted else n
        n = 0
        for p in self.by_namespace.get(namespace, {}).values():
            if selector and not labels_match(p.labels, selector):
                continue
            if p.node_name or (attempted and p.key in self.attempted):
                n += 1
        return n

    # --- the scheduler --------------------------------------------------------------------

    def step(self, until: float) -> bool:
        """One scheduling cycle; False when nothing is poppable."""
        now = time.monotonic()
        if now >= self._next_backoff_flush:
            self._next_backoff_flush = now + BACKOFF_FLUSH
            self.queue.flush_backoff_q_completed()
            if now >= self._next_leftover_flush:
                self._next_leftover_flush = now + LEFTOVER_FLUSH
                self.queue.flush_unschedulable_pods_leftover()
        pinfo = self.queue.pop()
        if pinfo is None:
            return False
        try:
            self.schedule_pod(pinfo)
        finally:
            self.queue.done(pinfo.pod.uid)  # scheduleOne's deferred Done
        return True

    def schedule_pod(self, pinfo: QueuedPodInfo) -> None:
        pod = self.pods.get(pinfo.pod.key)
        if pod is None or pod.uid != pinfo.pod.uid or pod.node_name or pod.is_terminating:
            return  # skipPodSchedule
        pinfo.pod = pod
        cycle = self.queue.scheduling_cycle
        result = schedule_one(
            pod,
            self.snapshot,
            framework=self.framework,
            percentage_of_nodes_to_score=self.percentage,
            start_index=self.next_start,
            config=self.config,
        )
        self.next_start = result.next_start_index
        if result.succeeded:
            self.results["scheduled"] += 1
            bound = self.snapshot.bind_pod(pod, result.suggested_host)
            self.pods[pod.key] = bound
            self.by_namespace[pod.namespace][pod.key] = bound
            self._forget_attempt(pod)
            self.scheduled_in[pod.namespace] += 1
            now = time.monotonic()
            for listener in self.listeners:
                listener(bound.namespace, bound.labels, now)
            self.queue.assigned_pod_added(bound)  # the informer's AssignedPodAdd
            return
        self._attempted(pod)
        self.last_message[pod.key] = result.message or result.status.message
        if result.status.code is not Code.Unschedulable:
            self.results["error"] += 1
            pinfo.unschedulable_plugins = set()
            pinfo.pending_plugins = set()
            self._requeue(pinfo, cycle, None)
            return
        self.results["unschedulable"] += 1
        diagnosis = result.diagnosis
        pinfo.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
        pinfo.pending_plugins = set(diagnosis.pending_plugins)
        outcome = preempt(
            pod,
            self.snapshot,
            node_statuses=result.node_statuses,
            mode="sampled",
            rng=self.rng,
            framework=self.framework,
            config=self.config,
        )
        nominating: NominatingInfo | None = None
        if outcome.nominated_node_name is not None:
            nominating = NominatingInfo(NominatingMode.Override, outcome.nominated_node_name)
        deletions: list[Pod] = []
        if outcome.nominated_node_name:
            self.results["preemption"] += 1
            self.victims += len(outcome.victims)
            deletions = list(outcome.victims)
            for other in outcome.nominated_pods_to_clear:
                self._set_nomination(other.key, "")
        self._requeue(pinfo, cycle, nominating)
        # The victims' deletions reach the queue after the failure handler, as informer events.
        for victim in deletions:
            current = self.pods.get(victim.key)
            if current is not None and current.uid == victim.uid:
                self.delete_pod(victim.key)

    def _set_nomination(self, key: str, node: str) -> Pod | None:
        current = self.pods.get(key)
        if current is None or current.node_name or current.nominated_node_name == node:
            return current
        updated = current.with_changes(nominated_node_name=node)
        self.pods[key] = updated
        self.by_namespace[updated.namespace][key] = updated
        self.snapshot.update_pod(updated)
        self.queue.update(current, updated)
        return updated

    def _requeue(self, pinfo: QueuedPodInfo, cycle: int, nominating: NominatingInfo | None) -> None:
        """``handleSchedulingFailure``: nominate, then back to the queue."""
        current = self.pods.get(pinfo.pod.key)
        if current is None or current.uid != pinfo.pod.uid or current.node_name:
            return
        if nominating is not None and nominating.mode is NominatingMode.Override:
            current = current.with_changes(nominated_node_name=nominating.nominated_node_name)
            self.pods[current.key] = current
            self.by_namespace[current.namespace][current.key] = current
            self.snapshot.update_pod(current)
        pinfo.pod = current
        self.queue.nominator.add_nominated_pod(current, nominating)
        with contextlib.suppress(PodAlreadyPresentError):
            self.queue.add_unschedulable_if_not_present(pinfo, cycle)

    def pending_summary(self) -> str:
        _, summary = self.queue.pending_pods()
        pending = [k for k, p in self.pods.items() if not p.node_name]
        if not pending:
            return summary
        first = pending[0]
        message = self.last_message.get(first, "never attempted")
        return f"{summary}; {len(pending)} pods pending, e.g. {first}: {message}"

    def cpu_time(self) -> float:
        """This process's CPU seconds: the scheduler runs here."""
        return time.process_time()

    def stats(self) -> dict[str, Any]:
        return {"attempts": dict(self.results), "victims": self.victims}

    def close(self) -> None:
        pass


def _typed(convert: Callable[[Mapping[str, Any]], Any], manifest: Mapping[str, Any]) -> Any:
    try:
        return convert(manifest)
    except InvalidObject as exc:
        raise ConfigError(str(exc)) from None
