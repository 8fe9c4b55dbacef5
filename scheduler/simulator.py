"""Answer "if these pods arrive, where do they go and what gets preempted?" for a cluster.

The scheduling cycle of kube-scheduler, run over manifests instead of an API server
(``simulate``), with the profiles of a KubeSchedulerConfiguration deciding (kube 1.32's
default profile without one). Pure: the caller loads the objects and prints the
``SimulationReport``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kube.apierrors import AdmissionError, FieldError, aggregate_message
from kube.objects import KubeObject, Pod, PriorityClass
from scheduler.config import KubeSchedulerConfiguration, default_configuration
from scheduler.preemption import PreemptionResult, preempt
from scheduler.priority import (
    PriorityAdmission,
    system_priority_classes,
    validate_priority_class,
)
from scheduler.queue.gates import scheduling_gates_pre_enqueue
from scheduler.schedule import (
    ScheduleResult,
    not_this_schedulers,
    schedule_one,
    unmodelled_warning,
)
from scheduler.snapshot import Snapshot

__all__ = [
    "Decision",
    "SimulationError",
    "SimulationReport",
    "VictimInfo",
    "build_snapshot",
    "simulate",
]

Outcome = Literal["scheduled", "preempting", "unschedulable", "gated", "other-scheduler"]


class SimulationError(ValueError):
    """Input the API server would have refused (bad PriorityClass, failed admission).

    ``pod`` is the ``namespace/name`` of the pod concerned, when there is one, so a caller
    can say which file it came from.
    """

    def __init__(self, message: str, *, pod: str = "") -> None:
        super().__init__(message)
        self.pod = pod


@dataclass(frozen=True, slots=True)
class VictimInfo:
    pod: str
    node: str
    priority: int


@dataclass(slots=True)
class Decision:
    """What happened to one pending pod, and why."""

    pod: str
    priority: int
    priority_class: str
    outcome: Outcome
    node: str = ""
    nominated_node: str = ""
    victims: list[VictimInfo] = field(default_factory=list)
    pdb_violations: int = 0
    nominated_pods_cleared: list[str] = field(default_factory=list)
    message: str = ""
    preemption_message: str = ""
    explanation: list[str] = field(default_factory=list)
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    warning: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "priority": self.priority,
            "priorityClassName": self.priority_class,
            "outcome": self.outcome,
            "node": self.node,
            "nominatedNode": self.nominated_node,
            "victims": [
                {"pod": v.pod, "node": v.node, "priority": v.priority} for v in self.victims
            ],
            "pdbViolations": self.pdb_violations,
            "nominatedPodsCleared": self.nominated_pods_cleared,
            "message": self.message,
            "preemptionMessage": self.preemption_message,
            "explanation": self.explanation,
            "scores": self.scores,
            "warning": self.warning,
        }


@dataclass(slots=True)
class SimulationReport:
    nodes: int
    decisions: list[Decision]

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "decisions": [d.to_dict() for d in self.decisions]}


def _admission(classes: Iterable[PriorityClass]) -> PriorityAdmission:
    admission = PriorityAdmission(system_priority_classes())
    for pc in classes:
        errors: list[FieldError] = validate_priority_class(pc.with_changes(namespace=""))
        if errors:
            raise SimulationError(
                f'PriorityClass.scheduling.k8s.io "{pc.name}" is invalid: '
                + aggregate_message(errors)
            )
        try:
            admission.validate_class(pc)
        except AdmissionError as exc:
            raise SimulationError(exc.message) from None
        admission.set_class(pc)
    return admission


def _admit(admission: PriorityAdmission, pod: Pod) -> Pod:
    try:
        return admission.admit_pod(pod)
    except AdmissionError as exc:
        raise SimulationError(exc.message, pod=pod.key) from None


def build_snapshot(
    objects: Sequence[KubeObject], *, pending: Sequence[Pod] = ()
) -> tuple[Snapshot, list[Pod]]:
    """The cluster as the scheduler would see it, and its pending pods in input order.

    PriorityClasses are validated and every pod admitted (``priorityClassName`` resolved to
    ``spec.priority``) as kube-apiserver would have done when they were created.
    """
    classes = [o for o in objects if isinstance(o, PriorityClass)]
    admission = _admission(classes)
    admitted: list[KubeObject] = []
    queue: list[Pod] = []
    for obj in objects:
        if isinstance(obj, Pod):
            pod = _admit(admission, obj)
            admitted.append(pod)
            if not pod.node_name:
                queue.append(pod)
        elif not isinstance(obj, PriorityClass):
            admitted.append(obj)
    for extra in pending:
        if extra.node_name:
            raise SimulationError(
                f'Pod "{extra.key}": spec.nodeName: a pending pod must not be bound (found'
                f' "{extra.node_name}")',
                pod=extra.key,
            )
        pod = _admit(admission, extra)
        admitted.append(pod)
        queue.append(pod)
    snapshot = Snapshot.from_objects(admitted)
    for pc in admission.classes.values():
        snapshot.priority_classes[pc.name] = pc
    return snapshot, queue


def simulate(
    objects: Sequence[KubeObject],
    *,
    pending: Sequence[Pod] = (),
    mode: Literal["exhaustive", "sampled"] = "exhaustive",
    seed: int = 0,
    now: float | None = None,
    cross_node: bool = False,
    config: KubeSchedulerConfiguration | None = None,
) -> SimulationReport:
    """Schedule (or preempt for) every pending pod of ``objects`` and ``pending`` in turn.

    ``now`` is the time unset pod start times count as (see ``preempt``); ``seed`` feeds the
    sampled preemption mode's random offset; ``cross_node`` allows victims on other nodes of
    a blocking topology domain (beyond kube, see ``scheduler.preemption.crossnode``).

    1. PriorityClasses (plus the two system classes kube-apiserver bootstraps) are validated
       and every pod goes through Priority admission, so ``priorityClassName`` resolves to the
       value the API server would have stored — an unknown class is an error, as it is at
       creation.
    2. Pending pods (no ``spec.nodeName``) are taken in activeQ order (``less``: priority,
       then arrival, which here is the order in the input).
    3. Each pod is filtered and scored (``schedule_one``). If it fits, it is bound in the
       snapshot, so later pods see it. If not, DefaultPreemption runs (``preempt``) with the
       filter statuses; when it nominates a node, the victims are removed and the
       lower-priority nominations on that node cleared, and the pod is scheduled again — the
       outcome once the victims have terminated (the real scheduler waits for their graceful
       termination and may place the pod elsewhere if the cluster changed meanwhile).

    ``config`` (kube's defaults when None) decides which profile schedules each pod, by its
    ``schedulerName``: its plugins and their args, ``percentageOfNodesToScore``, and
    DefaultPreemption's. A pod no profile names is another scheduler's: outcome
    ``other-scheduler``, left where it is, as kube-scheduler leaves it.

    Topology spreading's system defaults take their selectors from the Services,
    ReplicationControllers, ReplicaSets and StatefulSets in ``objects``. A pod feature no
    modelled plugin evaluates (PVC-backed volumes, resourceClaims) is named in
    ``Decision.warning``, one line per pod.
    """
    snapshot, queue = build_snapshot(objects, pending=pending)
    # activeQ order: priority first, then arrival (a stable sort keeps input order).
    order = sorted(range(len(queue)), key=lambda i: -queue[i].priority)
    rng = random.Random(seed)
    decisions = [
        _decide(
            queue[i], snapshot, mode=mode, rng=rng, now=now, cross_node=cross_node, config=config
        )
        for i in order
    ]
    return SimulationReport(nodes=len(snapshot.node_info_list), decisions=decisions)


def _decide(
    pod: Pod,
    snapshot: Snapshot,
    *,
    mode: Literal["exhaustive", "sampled"],
    rng: random.Random,
    now: float | None,
    cross_node: bool = False,
    config: KubeSchedulerConfiguration | None = None,
) -> Decision:
    decision = Decision(
        pod=pod.key,
        priority=pod.priority,
        priority_class=pod.priority_class_name,
        outcome="unschedulable",
        warning=unmodelled_warning(pod),
    )
    elsewhere = not_this_schedulers(pod, config or default_configuration())
    if elsewhere is not None:
        decision.outcome = "other-scheduler"
        decision.message = elsewhere.message
        return decision
    gated = scheduling_gates_pre_enqueue(pod)
    if gated is not None:
        decision.outcome = "gated"
        decision.message = gated.message
        return decision

    result = schedule_one(pod, snapshot, config=config)
    if result.succeeded:
        _bind(decision, pod, snapshot, result)
        return decision

    decision.message = result.message
    outcome: PreemptionResult = preempt(
        pod,
        snapshot,
        node_statuses=result.node_statuses,
        mode=mode,
        rng=rng,
        now=now,
        cross_node=cross_node,
        config=config,
    )
    decision.explanation = outcome.explanation.lines()
    if not outcome.nominated_node_name:
        decision.preemption_message = outcome.status.message
        return decision

    node = outcome.nominated_node_name
    decision.outcome = "preempting"
    decision.nominated_node = node
    decision.victims = [VictimInfo(v.key, v.node_name or node, v.priority) for v in outcome.victims]
    verdict = outcome.explanation.verdict(node)
    decision.pdb_violations = verdict.num_pdb_violations if verdict is not None else 0
    for victim in outcome.victims:
        snapshot.remove_pod(victim)
    for other in outcome.nominated_pods_to_clear:
        decision.nominated_pods_cleared.append(other.key)
        snapshot.update_pod(other.with_changes(nominated_node_name=""))
    # Once the victims are gone, the pod is scheduled again (nominated to ``node``).
    retry = schedule_one(pod.with_changes(nominated_node_name=node), snapshot, config=config)
    if retry.succeeded:
        _bind(decision, pod, snapshot, retry)
        decision.outcome = "preempting"
    return decision


def _bind(decision: Decision, pod: Pod, snapshot: Snapshot, result: ScheduleResult) -> None:
    if decision.outcome != "preempting":
        decision.outcome = "scheduled"
    decision.node = result.suggested_host
    decision.scores = result.node_scores
    snapshot.bind_pod(pod, result.suggested_host)
