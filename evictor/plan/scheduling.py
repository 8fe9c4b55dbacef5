"""The scheduler in the played drain: kube-scheduler's queue and cycle run on the project's
``scheduler`` library (the code kubesim's scheduler loop runs) over one ``Snapshot`` of the
played cluster, with the drained nodes cordoned.
"""

from __future__ import annotations

from collections.abc import Collection, MutableMapping
from dataclasses import dataclass
from typing import Final, Protocol

from evictor.plan.clock import Clock
from evictor.plan.types import ClusterView, Replacement
from kube.apierrors import AdmissionError
from kube.objects import KubeObject, Pod
from scheduler.config import KubeSchedulerConfiguration, default_configuration
from scheduler.framework import Code, Framework, fit_error_message
from scheduler.preemption import PreemptionResult, preempt
from scheduler.priority import PriorityAdmission
from scheduler.schedule import ScheduleResult, not_this_schedulers, schedule_one
from scheduler.snapshot import Snapshot

__all__ = ["POD_EVENT_PLUGINS", "SCORE_ALL_ABOVE", "Cluster", "Pending", "Scheduling"]

SCORE_ALL_ABOVE: Final = 100  # kube-scheduler evaluates every node up to 100 nodes
# Plugins whose failures a pod add or update can cure (the queue's AssignedPodAdd/Update).
POD_EVENT_PLUGINS: Final = frozenset({"InterPodAffinity", "PodTopologySpread"})


class Cluster(Protocol):
    """What the scheduler's decisions do to the rest of the played cluster."""

    def bound(self, pod: Pod, *, counts: bool) -> None:
        """``pod`` is scheduled (and so Ready); ``counts``: its budgets count it healthy."""

    def preempt(self, victim: Pod, *, by: str, node: str) -> None:
        """``victim`` is deleted to make room on ``node`` for the pod ``by``."""


@dataclass(slots=True)
class Pending:
    """A pod in the scheduler's queue: ``dirty`` when something it may wait for changed,
    ``plugins`` the plugins that rejected it last."""

    pod: Pod
    seq: int
    dirty: bool = True
    plugins: frozenset[str] = frozenset()
    replacement: Replacement | None = None
    unmodelled: tuple[str, ...] = ()


class Scheduling:
    """The queue (``pending``) and the scheduling cycle over ``snapshot``.

    Pending pods go in activeQ order (priority, then arrival) through ``schedule_one``, with
    nominated pods reserving room; a pod that fits nowhere runs ``preempt``, its victims go
    (``Cluster.preempt``) and it waits, nominated, for them to go. A failed pod is retried
    when something it could be waiting for changes (a pod gone, a node changed, or a pod
    added or becoming terminating for the affinity and spreading plugins), as the queue's
    events move it. The reason a pod stays pending is the scheduler's own FailedScheduling
    message. A pod gated, or whose ``schedulerName`` is no profile of ``config`` (another
    scheduler's), is not scheduled here; the others go through their profile's plugins.
    ``framework`` replaces the Filter plugins of every profile (None: the profiles').

    Built from the view: its pods are admitted (Priority), written to ``pods``, bound ones
    placed in the snapshot and unbound ones queued, the ``cordoned`` nodes unschedulable.
    """

    def __init__(
        self,
        view: ClusterView,
        *,
        cordoned: Collection[str],
        framework: Framework | None,
        pods: MutableMapping[str, Pod],
        clock: Clock,
        cluster: Cluster,
        config: KubeSchedulerConfiguration | None = None,
    ) -> None:
        self.framework = framework
        self.config = config if config is not None else default_configuration()
        self.admission = PriorityAdmission(view.priority_classes)
        self.score_all = len(view.nodes) > SCORE_ALL_ABOVE
        self.ties = False  # nodes tied for the best score somewhere
        self.pending: dict[str, Pending] = {}
        self._now = view.now
        self._pods = pods
        self._clock = clock
        self._cluster = cluster
        nodes = [
            n.with_changes(unschedulable=True) if n.name in cordoned else n for n in view.nodes
        ]
        snapshot_objects: list[KubeObject] = [*nodes, *view.pdbs, *view.objects]
        bound: list[Pod] = []
        for pod in view.pods:
            if pod.phase in ("Succeeded", "Failed") and pod.node_name:
                pods[pod.key] = pod  # drained (filters pass them) but holds nothing
                continue
            admitted = pod if pod.spec_priority is not None else self.admit(pod) or pod
            pods[pod.key] = admitted
            if admitted.node_name:
                bound.append(admitted)
        snapshot_objects.extend(bound)
        self.snapshot = Snapshot.from_objects(snapshot_objects)
        for pc in view.priority_classes:
            self.snapshot.priority_classes[pc.name] = pc
        # the queue: unbound pods of the default scheduler, not being deleted
        for pod in view.pods:
            if pod.node_name or pod.phase in ("Succeeded", "Failed") or pod.is_terminating:
                continue
            self.enqueue(pods[pod.key])

    def admit(self, pod: Pod) -> Pod | None:
        """The Priority admission plugin's pod; None when it refuses it."""
        try:
            return self.admission.admit_pod(pod)
        except AdmissionError:
            return None

    def enqueue(self, pod: Pod, replacement: Replacement | None = None) -> None:
        unmodelled: tuple[str, ...] = ()
        if replacement is not None:
            unmodelled = replacement.unmodelled
        self.pending[pod.key] = Pending(pod, self._clock.seq(), True, frozenset(), replacement)
        self.pending[pod.key].unmodelled = unmodelled
        if self.ours(pod) and not pod.scheduling_gates:
            self.snapshot.add_pod(pod)

    def ours(self, pod: Pod) -> bool:
        """Whether a profile of the configuration schedules ``pod``."""
        return self.config.profile_for(pod) is not None

    def elsewhere(self, pod: Pod) -> str:
        """Why ``pod`` is not scheduled here ("" when a profile schedules it)."""
        status = not_this_schedulers(pod, self.config)
        return "" if status is None else status.message.split(": ", 1)[1]

    def schedule(self, pod: Pod) -> ScheduleResult:
        """``schedule_one`` with the pod's profile, every node evaluated."""
        return schedule_one(
            pod,
            self.snapshot,
            framework=self.framework,
            config=self.config,
            percentage_of_nodes_to_score=100 if self.score_all else 0,
        )

    def dirty(self, plugins: frozenset[str] | None = None) -> None:
        """Move the pending pods a change may help (any, or those ``plugins`` rejected)."""
        for entry in self.pending.values():
            if plugins is None or entry.plugins & plugins:
                entry.dirty = True

    def remove(self, key: str) -> None:
        """The pod ``key`` is gone from the cluster."""
        self.snapshot.remove_pod(key)
        self.pending.pop(key, None)

    def schedule_pending(self) -> bool:
        changed = False
        while True:
            ready = [e for e in self.pending.values() if e.dirty]
            if not ready:
                return changed
            ready.sort(key=lambda e: (-e.pod.priority, e.seq))
            entry = ready[0]
            entry.dirty = False
            pod = entry.pod
            if pod.scheduling_gates:
                if entry.replacement is not None:
                    entry.replacement.gated = f"scheduling gates {', '.join(pod.scheduling_gates)}"
                continue
            if not self.ours(pod):
                continue  # another scheduler's pod: unmodelled, stays pending here
            changed |= self._schedule(entry)

    def _schedule(self, entry: Pending) -> bool:
        pod = entry.pod
        result = self.schedule(pod)
        rep = entry.replacement
        if result.succeeded:
            host = result.suggested_host
            bound = self.snapshot.bind_pod(
                pod.with_changes(start_time=self._now + self._clock.t), host
            )
            del self.pending[pod.key]
            self._pods[pod.key] = bound
            tied: tuple[str, ...] = ()
            if result.scores is not None:
                totals = result.scores.total_scores
                best = max(totals)
                tied = tuple(
                    ni.name
                    for ni, total in zip(result.scores.node_infos, totals, strict=True)
                    if total == best and ni.name != host
                )
            if tied:
                self.ties = True
            if rep is not None:
                rep.node, rep.round, rep.seconds = host, self._clock.round, self._clock.t
                rep.tied_with, rep.unschedulable, rep.nominated = tied, "", ""
            self._cluster.bound(bound, counts=not entry.unmodelled)
            self.dirty(POD_EVENT_PLUGINS)
            self._clock.record("bind", pod.key, host)
            return True
        if result.status.code is not Code.Unschedulable:
            if rep is not None:
                rep.unschedulable = result.message or "scheduling failed"
            entry.seq = self._clock.seq()
            return False
        entry.plugins = frozenset(result.diagnosis.unschedulable_plugins)
        outcome, message = self.post_filter(pod, result)
        entry.seq = self._clock.seq()
        changed = False
        if outcome.nominated_node_name:
            node = outcome.nominated_node_name
            victims: list[str] = []
            for victim in outcome.victims:
                current = self._pods.get(victim.key)
                if current is None or current.uid != victim.uid:
                    continue
                victims.append(f"{victim.key} on {node}")
                if not current.is_terminating:
                    self._cluster.preempt(current, by=pod.key, node=node)
                    changed = True
            for other in outcome.nominated_pods_to_clear:
                waiting = self.pending.get(other.key)
                if waiting is not None:
                    waiting.pod = waiting.pod.with_changes(nominated_node_name="")
                    self.snapshot.update_pod(waiting.pod)
            if rep is not None:
                rep.preempts = tuple(dict.fromkeys((*rep.preempts, *victims)))
                rep.nominated = node
        if outcome.nominated_node_name is not None:
            pod = pod.with_changes(nominated_node_name=outcome.nominated_node_name)
            entry.pod = pod
            self._pods[pod.key] = pod
            self.snapshot.update_pod(pod)
        if rep is not None:
            rep.unschedulable = message
        self._clock.record("unschedulable", pod.key, detail=message)
        return changed

    def post_filter(self, pod: Pod, result: ScheduleResult) -> tuple[PreemptionResult, str]:
        """DefaultPreemption after a failed cycle (the snapshot is not changed), and the
        FailedScheduling message kubesim's scheduler loop writes for it."""
        outcome = preempt(
            pod,
            self.snapshot,
            node_statuses=result.node_statuses,
            mode="exhaustive",
            framework=self.framework,
            now=self._now + self._clock.t,
            config=self.config,
        )
        post = "" if outcome.status.code is Code.Success else outcome.status.message
        message = fit_error_message(
            len(self.snapshot.node_info_list),
            result.node_statuses,
            pre_filter_msg=result.diagnosis.pre_filter_msg,
            post_filter_msg=post,
        )
        return outcome, message
