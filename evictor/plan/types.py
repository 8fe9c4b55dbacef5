"""The drain planner's types: what a plan plays on (``ClusterView``, ``Workload``,
``PlanOptions``) and what it says of each pod, node, budget and step (``PodPlan``,
``NodePlan``, ``BudgetPlan``, ``Replacement``, ``PlanEvent``); ``evictor.plan.output`` holds the
whole ``DrainPlan``. The dicts ``to_dict`` returns are ``evict drain --plan -o json``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evictor.drain.filters import DrainOptions
from kube.labels import LabelSelector
from kube.objects import KubeObject, Node, Pod, PodDisruptionBudget, PriorityClass
from scheduler.config import KubeSchedulerConfiguration

__all__ = [
    "BudgetPlan",
    "ClusterView",
    "NodePlan",
    "PlanEvent",
    "PlanOptions",
    "PodPlan",
    "Replacement",
    "Workload",
]


@dataclass(frozen=True, slots=True)
class Workload:
    """A pod's controller, as far as the plan needs it: what it creates when a pod goes.

    ``template`` is ``spec.template`` as an unbound pod (None: unknown); ``replicas`` the pods
    it keeps active (a StatefulSet's ordinals ``0..replicas-1``; a Job's
    ``min(parallelism, completions - succeeded)``, 0 once finished); ``via`` names the
    Deployment of a ReplicaSet.
    """

    kind: str
    namespace: str
    name: str
    uid: str = ""
    template: Pod | None = None
    replicas: int = 1
    ordered_ready: bool = False
    via: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)

    @property
    def title(self) -> str:
        own = f"{self.kind} {self.name}"
        return f"{own} ({self.via})" if self.via else own


@dataclass(frozen=True, slots=True)
class ClusterView:
    """The cluster as read for a plan (``evictor.clusterread``; typed by ``evictor.plan.view``).

    ``objects`` carries the rest of what the scheduler reads (Namespaces, Services,
    ReplicaSets, ReplicationControllers, StatefulSets). Lists keep the API's order.
    ``daemonsets`` holds the ``(namespace, name)`` of every DaemonSet that exists;
    ``eviction`` says whether the server serves ``pods/eviction``; ``now`` is when it was read.
    """

    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...]
    pdbs: tuple[PodDisruptionBudget, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()
    objects: tuple[KubeObject, ...] = ()
    workloads: Mapping[tuple[str, str, str], Workload] = field(default_factory=dict)
    daemonsets: frozenset[tuple[str, str]] = frozenset()
    eviction: bool = True
    now: float = 0.0


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """The drain's own flags, as ``evict drain`` takes them."""

    drain: DrainOptions = field(default_factory=DrainOptions)
    order: str = "none"
    parallel: int = 1
    grace_period: int = -1
    timeout: float = 0.0
    disable_eviction: bool = False
    pod_selector: LabelSelector | None = None
    scheduler_config: KubeSchedulerConfiguration | None = None
    """The cluster's KubeSchedulerConfiguration (``--scheduler-config``); kube's defaults
    when None."""


# --- what the plan says of each pod, node, budget and step ---------------------------------


@dataclass(slots=True)
class Replacement:
    """The pod a controller creates for an evicted (or preempted) one, and where it goes.

    ``node`` is where the scheduler binds it ("" when it does not); ``unschedulable`` the
    scheduler's message while it stays pending; ``tied_with`` the other nodes of equal top
    score (kube-scheduler picks among them at random, kubesim and this plan the first);
    ``preempts`` its victims (``ns/name on node``); ``unmodelled`` what was not evaluated, in
    which case ``node`` is only where the modelled plugins put it and it never counts as Ready.
    """

    owner: str
    replaces: str = ""  # ns/name of the pod it replaces ("" when a controller was short)
    name: str = ""  # a StatefulSet's pod keeps its name; others get a generated one
    node: str = ""
    round: int | None = None
    seconds: float | None = None
    unschedulable: str = ""
    nominated: str = ""
    tied_with: tuple[str, ...] = ()
    preempts: tuple[str, ...] = ()
    unmodelled: tuple[str, ...] = ()
    gated: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"owner": self.owner, "replaces": self.replaces or None}
        out["name"] = self.name or None
        out["node"] = self.node or None
        if self.round is not None:
            out["round"] = self.round
        if self.seconds is not None:
            out["seconds"] = round(self.seconds, 3)
        if self.unschedulable:
            out["unschedulable"] = self.unschedulable
        if self.nominated:
            out["nominatedNode"] = self.nominated
        if self.tied_with:
            out["tiedWith"] = list(self.tied_with)
        if self.preempts:
            out["preempts"] = list(self.preempts)
        if self.unmodelled:
            out["unmodelled"] = list(self.unmodelled)
        if self.gated:
            out["gated"] = self.gated
        return out

    def describe(self) -> str:
        if self.unmodelled:
            where = f"modelled plugins say {self.node}" if self.node else "not placed"
            return f"replacement not predictable ({'; '.join(self.unmodelled)}; {where})"
        if self.gated:
            return f"replacement stays pending: {self.gated}"
        if self.node:
            text = f"replacement -> {self.node}"
            if self.round is not None:
                text += f" (round {self.round})"
            if self.preempts:
                text += f", preempting {', '.join(self.preempts)}"
            if self.tied_with:
                text += f"; tie with {', '.join(self.tied_with)}"
            return text
        if self.unschedulable:
            return f"replacement unschedulable: {self.unschedulable}"
        return "replacement waits"


@dataclass(slots=True)
class PodPlan:
    """One pod of a drained node: what the drain does with it, when, and what follows.

    ``action``: ``evict`` (Eviction API), ``delete`` (``--disable-eviction`` or no Eviction
    API), ``skip`` (DaemonSet, mirror or long-deleted pod) or ``refuse`` (a filter refuses the
    node). ``round`` is the budget round the eviction is granted in (None: never);
    ``held_by`` the budget that made it wait from ``held_from`` until ``held_until`` (None:
    for good); ``error`` the server's refusal (more than one budget).
    """

    namespace: str
    name: str
    node: str
    action: str
    reason: str = ""
    owner: str = ""
    round: int | None = None
    seconds: float | None = None
    gone: float | None = None
    held_by: str = ""
    held_from: int | None = None
    held_until: int | None = None
    error: str = ""
    replacement: Replacement | None = None
    unmodelled: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "namespace": self.namespace,
            "name": self.name,
            "action": self.action,
        }
        if self.reason:
            out["reason"] = self.reason
        if self.owner:
            out["owner"] = self.owner
        out["round"] = self.round
        if self.seconds is not None:
            out["seconds"] = round(self.seconds, 3)
        if self.gone is not None:
            out["goneSeconds"] = round(self.gone, 3)
        if self.held_by:
            out["heldBy"] = {
                "pdb": self.held_by,
                "fromRound": self.held_from,
                "untilRound": self.held_until,
            }
        if self.error:
            out["error"] = self.error
        if self.replacement is not None:
            out["replacement"] = self.replacement.to_dict()
        if self.unmodelled:
            out["unmodelled"] = list(self.unmodelled)
        return out


@dataclass(slots=True)
class NodePlan:
    """One node's drain: ``verdict`` is ``finishes``, ``stuck`` (a budget never lets a pod
    go), ``unknown`` (a budget waits on something not modelled), ``refused`` (kubectl's
    filters), ``fails`` (the server refuses a pod) or ``not-reached`` (an earlier node never
    finishes and no ``--timeout`` ends it)."""

    name: str
    verdict: str = "not-reached"
    rounds: int = 0
    start: float | None = None
    finish: float | None = None
    pods: list[PodPlan] = field(default_factory=list)
    warnings: str = ""
    errors: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)

    @property
    def finishes(self) -> bool:
        return self.verdict == "finishes"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "verdict": self.verdict,
            "finishes": self.finishes,
            "rounds": self.rounds,
            "startSeconds": None if self.start is None else round(self.start, 3),
            "finishSeconds": None if self.finish is None else round(self.finish, 3),
        }
        if self.warnings:
            out["warnings"] = self.warnings
        if self.errors:
            out["errors"] = list(self.errors)
        if self.blockers:
            out["blockers"] = list(self.blockers)
        out["pods"] = [p.to_dict() for p in self.pods]
        return out


@dataclass(slots=True)
class BudgetPlan:
    """A budget a drained pod belongs to: its rule, health at the start and at its lowest."""

    namespace: str
    name: str
    rule: str
    desired: int
    healthy: int
    lowest: int
    allowed: int
    stale: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "namespace": self.namespace,
            "name": self.name,
            "rule": self.rule,
            "desiredHealthy": self.desired,
            "healthy": self.healthy,
            "lowestHealthy": self.lowest,
            "disruptionsAllowed": self.allowed,
        }
        if self.stale:
            out["stale"] = True
        return out


@dataclass(frozen=True, slots=True)
class PlanEvent:
    """One step of the played drain, for tests and ``-o json``: ``what`` is ``evict``,
    ``blocked``, ``error``, ``gone``, ``create``, ``bind``, ``unschedulable``, ``preempt``,
    ``start`` or ``end``; ``healthy`` the budgets' healthy counts after it."""

    seconds: float
    round: int
    what: str
    pod: str = ""
    node: str = ""
    detail: str = ""
    healthy: tuple[tuple[str, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seconds": round(self.seconds, 3), "round": self.round}
        out["what"] = self.what
        if self.pod:
            out["pod"] = self.pod
        if self.node:
            out["node"] = self.node
        if self.detail:
            out["detail"] = self.detail
        return out
