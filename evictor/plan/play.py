"""The drain plan: will ``evict drain`` finish, where does every pod go, which budget holds it.

kubectl drain has no prediction: an operator learns that a PodDisruptionBudget with no slack
blocks the drain at ``--timeout``, with the node cordoned and half empty. cluster-autoscaler's
scale-down simulation (``simulator/``) answers a narrower question — can the pods of one node
be placed elsewhere, asked of the scheduler's filters, and would removing them violate a
budget — and Karpenter limits how many nodes are disrupted at once. Neither says, per pod,
where it lands and when a budget lets it go. This module does, by playing the drain forward on
the project's own scheduler (``scheduler``: the code kubesim's scheduler loop runs), without
any I/O: ``plan_drain(view, nodes, options)`` takes what ``evictor.plan.view`` read and returns a
``DrainPlan``.

What is played, in kubesim's order of events:

* the targets are cordoned (``spec.unschedulable``), then kubectl's filters run per node
  (``evictor.drain.filters``, in kubectl's order) and a node they refuse is
  reported as kubectl would refuse it, with nothing evicted there;
* the nodes are drained one after another (kubectl), or ``parallel`` at a time; each node's
  pods are evicted all at once, or one priority level at a time with ``order="priority"``
  (``evictor.drain.order``), and a node is done when its pods are gone;
* an eviction follows the eviction subresource's rules (``spec/eviction-client.md`` 1.2): pods
  not Running or already terminating go without a budget check, more than one matching budget
  is the server's 500, an unhealthy pod may go under ``unhealthyPodEvictionPolicy``, otherwise
  the budget's ``currentHealthy - desiredHealthy`` must be positive. Evictions the budgets allow
  at one moment are granted in the node's pod-list order; the rest wait for the budget to reopen
  (``evict`` retries as soon as it does);
* an evicted pod is terminating (it stops counting for topology spreading, kubernetes#87621)
  for its grace period, then gone. Its controller replaces it as kube's do: a ReplicaSet,
  ReplicationController or Job at once (terminating pods are not active), a StatefulSet under
  the same name once the old pod is gone (``OrderedReady``: lowest ordinal first, never while a
  pod of the set terminates);
* the scheduler takes pending pods in activeQ order (priority, then arrival) through
  ``schedule_one`` on the shared ``Snapshot``, with nominated pods reserving room; a pod that
  fits nowhere runs ``preempt``, its victims terminate with their own grace period (their
  controllers replace them) and it waits, nominated, for them to go. A failed pod is retried
  when something it could be waiting for changes (a pod gone, a node changed, or a pod added
  or becoming terminating for the affinity and spreading plugins), as the queue's events move
  it. The reason a pod stays pending is the scheduler's own FailedScheduling message;
* a replacement is Ready as soon as it is scheduled (readiness is not modelled: assumed, and
  said), which returns its budget's allowance.

What the scheduler here does not evaluate is never assumed to fit: a replacement with
PersistentVolumeClaim volumes, resource claims or another ``schedulerName``
(``scheduler.schedule.unmodelled_features``), or the pod of an owner whose kind is not modelled,
is named per pod, takes room where the modelled plugins would put it, but never counts as
Ready — a budget waiting on it makes the verdict "unknown", never "finishes".

Several nodes: ``best_plan`` plays orders of the nodes (every order up to
``MAX_EXHAUSTIVE`` nodes, else the given order and a few heuristics) and keeps the one whose
nodes all finish soonest, or that lets the most of them finish.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from evictor.drain.filters import DrainOptions, StatusType, get_pods_for_deletion
from evictor.drain.order import order_by_priority
from kube.apierrors import AdmissionError
from kube.labels import LabelSelector
from kube.objects import KubeObject, Node, Pod, PodDisruptionBudget, PriorityClass
from scheduler.framework import Code, Framework, fit_error_message
from scheduler.plugins.registry import default_framework
from scheduler.preemption import PreemptionResult, preempt
from scheduler.priority import PriorityAdmission
from scheduler.schedule import (
    DEFAULT_SCHEDULER_NAME,
    ScheduleResult,
    schedule_one,
    unmodelled_features,
)
from scheduler.snapshot import Snapshot

__all__ = [
    "ASSUMPTIONS",
    "MAX_EXHAUSTIVE",
    "BudgetPlan",
    "ClusterView",
    "DrainPlan",
    "NodePlan",
    "PlanEvent",
    "PlanOptions",
    "PodPlan",
    "Replacement",
    "Workload",
    "best_plan",
    "plan_drain",
]

DEFAULT_GRACE: Final = 30  # terminationGracePeriodSeconds when a pod does not say
MAX_EXHAUSTIVE: Final = 4  # up to this many nodes, every order is played
SCORE_ALL_ABOVE: Final = 100  # kube-scheduler evaluates every node up to 100 nodes
# Plugins whose failures a pod add or update can cure (the queue's AssignedPodAdd/Update).
_POD_EVENT_PLUGINS: Final = frozenset({"InterPodAffinity", "PodTopologySpread"})
_KINDS: Final = {
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("batch", "Job"),
    ("", "ReplicationController"),
}

ASSUMPTIONS: Final = (
    "a replacement is Ready as soon as it is scheduled (readiness probes, image pulls and"
    " start-up are not modelled)",
    "an evicted or preempted pod is gone after its grace period (--grace-period, else its"
    f" terminationGracePeriodSeconds, {DEFAULT_GRACE}s when unset)",
    "evictions the budgets allow at one moment are granted in the node's pod-list order, and"
    " the controllers create the replacements in that order",
)


# --- input ---------------------------------------------------------------------------------


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
    """The cluster as read for a plan (``evictor.plan.view``), typed.

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


# --- output --------------------------------------------------------------------------------


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


@dataclass(slots=True)
class DrainPlan:
    """The whole prediction; ``finishes`` when every node's drain does."""

    nodes: list[NodePlan]
    parallel: int = 1
    rounds: int = 0
    seconds: float | None = None
    verdict: str = ""
    reason: str = ""
    budgets: list[BudgetPlan] = field(default_factory=list)
    others: list[Replacement] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    events: list[PlanEvent] = field(default_factory=list)
    orders_tried: int = 1
    given_order: list[str] = field(default_factory=list)

    @property
    def order(self) -> list[str]:
        return [n.name for n in self.nodes]

    @property
    def finishes(self) -> bool:
        return all(n.finishes for n in self.nodes)

    def score(self) -> tuple[int, float, int]:
        """Lower is better: nodes that do not finish, then seconds, then rounds."""
        failing = sum(1 for n in self.nodes if not n.finishes)
        return (failing, self.seconds if self.seconds is not None else math.inf, self.rounds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "DrainPlan",
            "finishes": self.finishes,
            "verdict": self.verdict,
            "reason": self.reason,
            "order": self.order,
            "givenOrder": list(self.given_order),
            "ordersTried": self.orders_tried,
            "parallel": self.parallel,
            "rounds": self.rounds,
            "seconds": None if self.seconds is None else round(self.seconds, 3),
            "nodes": [n.to_dict() for n in self.nodes],
            "budgets": [b.to_dict() for b in self.budgets],
            "otherPods": [o.to_dict() for o in self.others],
            "assumptions": list(self.assumptions),
            "events": [e.to_dict() for e in self.events],
        }

    def lines(self) -> list[str]:
        """The plan as ``evict drain --plan`` prints it."""
        out: list[str] = []
        names = ", ".join(self.order)
        how = f" (--parallel {self.parallel})" if self.parallel > 1 else ""
        out.append(f"plan: drain {names}{how}; nothing is changed in the cluster")
        width = max((len(p.key) for n in self.nodes for p in n.pods), default=0)
        if self.order != self.given_order and len(self.nodes) > 1:
            out.append(f"order: {' '.join(self.order)} (best of {self.orders_tried} orders played)")
        for n in self.nodes:
            head = f"node/{n.name}: {_VERDICT_WORDS[n.verdict]}"
            if n.verdict == "finishes":
                head += f" in {n.rounds} round(s)"
                if n.finish is not None:
                    head += f", {_seconds(n.finish)}"
            out.append(head)
            said = " ".join(n.blockers)
            out.extend("  " + _pod_line(p, width, said) for p in n.pods)
            if n.warnings:
                out.append(f"  Warning: {n.warnings}")
            out.extend(f"  error: {e}" for e in n.errors)
            out.extend(f"  blocked for good: {b}" for b in n.blockers)
        out.extend(f"also: {o.owner}: {o.describe()}" for o in self.others)
        out.extend(f"assumes: {a}" for a in self.assumptions)
        out.append(self.summary())
        return out

    def summary(self) -> str:
        if self.finishes:
            return (
                f"the drain finishes: {len(self.nodes)} node(s), {self.rounds} round(s),"
                f" {_seconds(self.seconds or 0.0)}"
            )
        if self.verdict == "unknown":
            return f"the drain may not finish: {self.reason}"
        return f"the drain will not finish: {self.reason}"


_VERDICT_WORDS: Final = {
    "finishes": "finishes",
    "stuck": "will not finish",
    "unknown": "cannot tell whether it finishes",
    "refused": "refused by kubectl's filters",
    "fails": "fails",
    "not-reached": "not reached",
}


def _seconds(s: float) -> str:
    return f"at least {s:g}s" if s else "at once"


def _pod_line(p: PodPlan, width: int, said: str = "") -> str:
    """One pod's line; a scheduler message the node's blockers repeat is not printed twice."""
    head = f"{p.key:<{width}}  {p.action:<7}"
    parts: list[str] = []
    if p.round is not None:
        parts.append(f"round {p.round}")
    if p.held_by:
        until = f"until round {p.held_until}" if p.held_until is not None else "for good"
        parts.append(f"held by PDB {p.held_by} {until}")
    if p.error:
        parts.append(f"error: {p.error}")
    if p.reason and p.action in ("skip", "refuse"):
        parts.append(p.reason)
    elif p.reason:
        parts.append(f"({p.reason})")
    rep = p.replacement
    if rep is not None and rep.unschedulable and not rep.node and rep.unschedulable in said:
        parts.append("replacement fits on no node (below)")
    elif rep is not None:
        parts.append(rep.describe())
    elif p.unmodelled:
        parts.append(f"not modelled: {'; '.join(p.unmodelled)}")
    elif p.action in ("evict", "delete") and p.round is not None:
        parts.append("nothing replaces it" + ("" if p.owner else " (no controller)"))
    return f"{head} {'; '.join(parts)}".rstrip()


# --- the played drain ----------------------------------------------------------------------


def _ready(pod: Pod) -> bool:
    c = pod.condition("Ready")
    return c is not None and c.status == "True"


def _selects(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    """policy/v1: ``{}`` selects every pod of the namespace, an absent selector none."""
    return pdb.namespace == pod.namespace and (
        pdb.selector is not None and pdb.selector.matches(pod.labels)
    )


def _rule(pdb: PodDisruptionBudget) -> str:
    if pdb.min_available is not None:
        return f"minAvailable {pdb.min_available}"
    if pdb.max_unavailable is not None:
        return f"maxUnavailable {pdb.max_unavailable}"
    return "no rule"


def _workload_key(pod: Pod) -> tuple[str, str, str] | None:
    ref = pod.controller_ref()
    if ref is None:
        return None
    return (ref.kind, pod.namespace, ref.name)


def _known_kind(api_version: str, kind: str) -> bool:
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    return (group, kind) in _KINDS


def _ordinal(set_name: str, pod_name: str) -> int | None:
    prefix = f"{set_name}-"
    if not pod_name.startswith(prefix):
        return None
    tail = pod_name[len(prefix) :]
    return int(tail) if tail.isdigit() else None


@dataclass(slots=True)
class _Budget:
    pdb: PodDisruptionBudget
    healthy: set[str]
    start: int = 0
    lowest: int = 0

    @property
    def desired(self) -> int:
        return self.pdb.desired_healthy

    def allowed(self) -> int:
        if self.pdb.expected_pods <= 0:
            return 0
        return max(0, len(self.healthy) - self.desired)


@dataclass(slots=True)
class _Pending:
    pod: Pod
    seq: int
    dirty: bool = True
    plugins: frozenset[str] = frozenset()
    replacement: Replacement | None = None
    unmodelled: tuple[str, ...] = ()


@dataclass(slots=True)
class _Drain:
    plan: NodePlan
    groups: list[list[str]]
    todo: list[str] = field(default_factory=list)
    waiting: set[str] = field(default_factory=set)
    refused: bool = False
    state: str = "waiting"  # waiting -> active -> done
    timed_out: bool = False


class _Sim:
    """One play of the drain in one node order (see the module docstring)."""

    def __init__(
        self,
        view: ClusterView,
        order: Sequence[str],
        options: PlanOptions,
        framework: Framework,
    ) -> None:
        self.view = view
        self.options = options
        self.framework = framework
        self.t = 0.0
        self.round = 0
        self._seq = itertools.count()
        self._names = itertools.count(1)
        self.events: list[PlanEvent] = []
        self.admission = PriorityAdmission(view.priority_classes)
        self.score_all = len(view.nodes) > SCORE_ALL_ABOVE
        self.ties = False
        targets = set(order)
        nodes = [n.with_changes(unschedulable=True) if n.name in targets else n for n in view.nodes]
        self.original: dict[str, Pod] = {p.key: p for p in view.pods}
        self.pods: dict[str, Pod] = {}
        self.pending: dict[str, _Pending] = {}
        self.gone_at: list[tuple[float, int, str]] = []  # heap: (time, seq, pod key)
        self.deadlines: list[tuple[float, int, str]] = []  # heap: (time, seq, node)
        snapshot_objects: list[KubeObject] = [*nodes, *view.pdbs, *view.objects]
        bound: list[Pod] = []
        for pod in view.pods:
            if pod.phase in ("Succeeded", "Failed") and pod.node_name:
                self.pods[pod.key] = pod  # drained (filters pass them) but holds nothing
                continue
            admitted = pod if pod.spec_priority is not None else self._admit(pod) or pod
            self.pods[pod.key] = admitted
            if admitted.node_name:
                bound.append(admitted)
        snapshot_objects.extend(bound)
        self.snapshot = Snapshot.from_objects(snapshot_objects)
        for pc in view.priority_classes:
            self.snapshot.priority_classes[pc.name] = pc
        # the scheduler's queue: unbound pods of the default scheduler, not being deleted
        for pod in view.pods:
            if pod.node_name or pod.phase in ("Succeeded", "Failed") or pod.is_terminating:
                continue
            self._enqueue(self.pods[pod.key])
        for pod in self.pods.values():
            if pod.is_terminating and pod.node_name:
                left = (pod.deletion_timestamp or view.now) - view.now
                self._terminate_at(pod.key, max(left, 0.0))
        # budgets, and which of them select a pod (pods of one template share their labels)
        self.budgets: dict[str, _Budget] = {pdb.key: _Budget(pdb, set()) for pdb in view.pdbs}
        self._selecting: dict[tuple[str, frozenset[tuple[str, str]]], list[str]] = {}
        for p in self.pods.values():
            if p.node_name and _ready(p) and not p.is_terminating:
                for b in self._budgets_of(p):
                    if p.name not in b.pdb.disrupted_pods:
                        b.healthy.add(p.key)
        for b in self.budgets.values():
            b.start = b.lowest = len(b.healthy)
        self.touched_budgets: set[str] = set()
        # workloads: their active pods (not terminal, not terminating)
        self.active: dict[tuple[str, str, str], set[str]] = {}
        self.members: dict[str, tuple[str, str, str]] = {}
        for pod in self.pods.values():
            wk = _workload_key(pod)
            if wk is None or wk not in view.workloads:
                continue
            wl = view.workloads[wk]
            ref = pod.controller_ref()
            if ref is not None and wl.uid and ref.uid and ref.uid != wl.uid:
                continue
            self.members[pod.key] = wk
            if pod.phase not in ("Succeeded", "Failed") and not pod.is_terminating:
                self.active.setdefault(wk, set()).add(pod.key)
        # workloads to sync, in the order they were touched (a dict: sets pop in hash order,
        # which differs from process to process, and the controllers act in event order)
        self.dirty_workloads: dict[tuple[str, str, str], None] = dict.fromkeys(view.workloads)
        # replacements a controller owes, in the order their pods went: (pod name, replacement)
        self.owed: dict[tuple[str, str, str], list[tuple[str, Replacement]]] = {}
        self.others: list[Replacement] = []
        # drains
        self.drains = [self._drain(name) for name in order]
        self.by_key: dict[str, PodPlan] = {
            p.key: p for d in self.drains for p in d.plan.pods if d.plan.name == p.node
        }

    # --- set-up --------------------------------------------------------------------------

    def _admit(self, pod: Pod) -> Pod | None:
        try:
            return self.admission.admit_pod(pod)
        except AdmissionError:
            return None

    def _drain(self, name: str) -> _Drain:
        opts = self.options
        mine = [p for p in self.view.pods if p.node_name == name]
        if opts.pod_selector is not None:
            mine = [p for p in mine if opts.pod_selector.matches(p.labels)]
        daemonsets = self.view.daemonsets

        def owner_exists(namespace: str, ds: str) -> bool:
            return (namespace, ds) in daemonsets

        filtered = get_pods_for_deletion(
            mine, options=opts.drain, owner_exists=owner_exists, now=self.view.now
        )
        plan = NodePlan(name)
        verb = "delete" if opts.disable_eviction or not self.view.eviction else "evict"
        refused = False
        to_evict: list[Pod] = []
        for item in filtered.items:
            pod, status = self.pods.get(item.pod.key, item.pod), item.status
            pp = PodPlan(pod.namespace, pod.name, name, verb, owner=self._owner_title(pod))
            if status.delete:
                pp.reason = status.message
                to_evict.append(pod)
            elif status.reason is StatusType.ERROR:
                pp.action, pp.reason = "refuse", status.message or "unexpected error"
                refused = True
            else:
                pp.action = "skip"
                pp.reason = status.message or (
                    "mirror pod" if "kubernetes.io/config.mirror" in pod.annotations else "deleted"
                )
            plan.pods.append(pp)
        plan.warnings = filtered.warnings()
        if refused:
            plan.errors = filtered.errors()
            for pp in plan.pods:
                if pp.action in ("evict", "delete"):
                    pp.action, pp.reason = "refuse", "the node's drain is refused"
        if opts.order == "priority":
            groups = [[p.key for p in g] for g in order_by_priority(to_evict, now=self.view.now)]
        else:
            groups = [[p.key for p in to_evict]] if to_evict else []
        for pp in plan.pods:
            if pp.action in ("evict", "delete"):
                pp.unmodelled = self._pod_unmodelled(self.pods.get(pp.key))
        return _Drain(plan, [] if refused else groups, refused=refused)

    def _owner_title(self, pod: Pod) -> str:
        ref = pod.controller_ref()
        if ref is None:
            return ""
        wl = self.view.workloads.get((ref.kind, pod.namespace, ref.name))
        return wl.title if wl is not None else f"{ref.kind} {ref.name}"

    def _pod_unmodelled(self, pod: Pod | None) -> tuple[str, ...]:
        """What makes this pod's replacement unpredictable (its owner, its features)."""
        if pod is None:
            return ()
        ref = pod.controller_ref()
        if ref is None:
            return ()
        if not _known_kind(ref.api_version, ref.kind):
            return (
                f"owner {ref.kind} {ref.name} ({ref.api_version}) is not a kind this plan"
                " models: whether and where a replacement comes is unknown",
            )
        if ref.kind == "DaemonSet":
            return ()
        # The pod's own volumes count too: a StatefulSet adds its claims to each pod, and the
        # pod that comes back under the same name mounts the same claim.
        features = unmodelled_features(pod)
        wl = self.view.workloads.get((ref.kind, pod.namespace, ref.name))
        if wl is not None and wl.template is not None:
            features += unmodelled_features(wl.template)
        return tuple(dict.fromkeys(features))

    # --- bookkeeping ---------------------------------------------------------------------

    def _event(self, what: str, pod: str = "", node: str = "", detail: str = "") -> None:
        healthy = tuple((k, len(self.budgets[k].healthy)) for k in sorted(self.touched_budgets))
        self.events.append(PlanEvent(self.t, self.round, what, pod, node, detail, healthy))

    def _enqueue(self, pod: Pod, replacement: Replacement | None = None) -> None:
        unmodelled: tuple[str, ...] = ()
        if replacement is not None:
            unmodelled = replacement.unmodelled
        self.pending[pod.key] = _Pending(pod, next(self._seq), True, frozenset(), replacement)
        self.pending[pod.key].unmodelled = unmodelled
        if pod.scheduler_name == DEFAULT_SCHEDULER_NAME and not pod.scheduling_gates:
            self.snapshot.add_pod(pod)

    def _terminate_at(self, key: str, after: float) -> None:
        heapq.heappush(self.gone_at, (self.t + after, next(self._seq), key))

    def _grace(self, pod: Pod, *, evicted: bool) -> float:
        if pod.phase in ("Succeeded", "Failed"):
            return 0.0
        if evicted and self.options.grace_period >= 0:
            return float(self.options.grace_period)
        g = pod.termination_grace_period_seconds
        return float(DEFAULT_GRACE if g is None else g)

    def _budgets_of(self, pod: Pod) -> list[_Budget]:
        key = (pod.namespace, frozenset(pod.labels.items()))
        found = self._selecting.get(key)
        if found is None:
            found = [k for k, b in self.budgets.items() if _selects(b.pdb, pod)]
            self._selecting[key] = found
        return [self.budgets[k] for k in found]

    def _set_budget_status(self, b: _Budget) -> None:
        """Keep the snapshot's copy (what preemption's PDB check reads) current."""
        allowed = b.allowed()
        if allowed != b.pdb.disruptions_allowed or len(b.healthy) != b.pdb.current_healthy:
            b.pdb = b.pdb.with_changes(disruptions_allowed=allowed, current_healthy=len(b.healthy))
            self.snapshot.update_pdb(b.pdb)

    def _unhealthy(self, pod: Pod) -> None:
        for b in self._budgets_of(pod):
            if pod.key in b.healthy:
                b.healthy.discard(pod.key)
                b.lowest = min(b.lowest, len(b.healthy))
                self._set_budget_status(b)

    def _terminating(self, pod: Pod, *, evicted: bool) -> None:
        """The pod gets its deletionTimestamp: it stops being active and healthy."""
        grace = self._grace(pod, evicted=evicted)
        marked = pod.with_changes(deletion_timestamp=self.view.now + self.t + grace)
        self.pods[pod.key] = marked
        if marked.node_name and self.snapshot.get_pod(marked.key) is not None:
            self.snapshot.update_pod(marked)  # a finished pod is not in it and holds nothing
        self._unhealthy(marked)
        wk = self.members.get(pod.key)
        if wk is not None:
            self.active.get(wk, set()).discard(pod.key)
            self.dirty_workloads[wk] = None
        self._terminate_at(pod.key, grace)
        self._dirty_pending(_POD_EVENT_PLUGINS)

    def _dirty_pending(self, plugins: frozenset[str] | None = None) -> None:
        for entry in self.pending.values():
            if plugins is None or entry.plugins & plugins:
                entry.dirty = True

    # --- controllers -----------------------------------------------------------------------

    def _sync_controllers(self) -> bool:
        changed = False
        while self.dirty_workloads:
            wk = next(iter(self.dirty_workloads))
            del self.dirty_workloads[wk]
            wl = self.view.workloads.get(wk)
            if wl is None or wl.kind == "DaemonSet":
                continue
            if wl.kind == "StatefulSet":
                changed |= self._sync_statefulset(wl)
            else:
                active = self.active.setdefault(wk, set())
                for _ in range(max(wl.replicas - len(active), 0)):
                    self._create(wl, None)
                    changed = True
        return changed

    def _sync_statefulset(self, wl: Workload) -> bool:
        present: dict[int, Pod] = {}
        for key, wk in self.members.items():
            if wk != wl.key or key not in self.pods:
                continue
            pod = self.pods[key]
            ordinal = _ordinal(wl.name, pod.name)
            if ordinal is not None:
                present[ordinal] = pod
        missing = [i for i in range(wl.replicas) if i not in present]
        if not missing:
            return False
        if not wl.ordered_ready:
            for i in missing:
                self._create(wl, f"{wl.name}-{i}")
            return True
        if any(p.is_terminating for p in present.values()):
            return False
        first = missing[0]
        if any(not present[i].node_name for i in range(first) if i in present):
            return False  # a lower ordinal is not Running and Ready yet
        self._create(wl, f"{wl.name}-{first}")
        return True

    def _create(self, wl: Workload, name: str | None) -> None:
        owed = self.owed.get(wl.key, [])
        replacement: Replacement | None = None
        for i, (old, rep) in enumerate(owed):
            if name is None or old == name:  # a StatefulSet recreates that very name
                replacement = rep
                del owed[i]
                break
        if replacement is None:
            replacement = Replacement(owner=wl.title)
            self.others.append(replacement)
        if wl.template is None:
            replacement.unmodelled = (f"{wl.title} has no pod template to read",)
            return
        if name is None:
            while True:
                name = f"{wl.name}-plan{next(self._names)}"
                if f"{wl.namespace}/{name}" not in self.pods:
                    break
        else:
            replacement.name = name
        labels = dict(wl.template.labels)
        if wl.kind == "StatefulSet":
            labels["statefulset.kubernetes.io/pod-name"] = name
            ordinal = _ordinal(wl.name, name)
            if ordinal is not None:
                labels["apps.kubernetes.io/pod-index"] = str(ordinal)
        pod = wl.template.with_changes(
            name=name, namespace=wl.namespace, uid=f"plan-{name}", labels=labels, node_name=""
        )
        admitted = self._admit(pod)
        if admitted is None:
            replacement.unschedulable = "refused by Priority admission"
            return
        pod = admitted
        features = (*replacement.unmodelled, *unmodelled_features(pod))
        replacement.unmodelled = tuple(dict.fromkeys(features))
        self.pods[pod.key] = pod
        self.members[pod.key] = wl.key
        self.active.setdefault(wl.key, set()).add(pod.key)
        self._enqueue(pod, replacement)
        self._event("create", pod.key, detail=wl.title)

    # --- the scheduler ---------------------------------------------------------------------

    def _schedule_pending(self) -> bool:
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
            if pod.scheduler_name != DEFAULT_SCHEDULER_NAME:
                continue  # another scheduler's pod: unmodelled, stays pending here
            changed |= self._schedule(entry)

    def _schedule(self, entry: _Pending) -> bool:
        pod = entry.pod
        result = schedule_one(
            pod,
            self.snapshot,
            framework=self.framework,
            percentage_of_nodes_to_score=100 if self.score_all else 0,
        )
        rep = entry.replacement
        if result.succeeded:
            host = result.suggested_host
            bound = self.snapshot.bind_pod(
                pod.with_changes(start_time=self.view.now + self.t), host
            )
            del self.pending[pod.key]
            self.pods[pod.key] = bound
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
                rep.node, rep.round, rep.seconds = host, self.round, self.t
                rep.tied_with, rep.unschedulable, rep.nominated = tied, "", ""
            if not entry.unmodelled:
                for b in self._budgets_of(bound):
                    b.healthy.add(bound.key)
                    self._set_budget_status(b)
            wk = self.members.get(bound.key)
            if wk is not None:
                self.dirty_workloads[wk] = None  # OrderedReady waits for Running and Ready
            self._dirty_pending(_POD_EVENT_PLUGINS)
            self._event("bind", pod.key, host)
            return True
        if result.status.code is not Code.Unschedulable:
            if rep is not None:
                rep.unschedulable = result.message or "scheduling failed"
            entry.seq = next(self._seq)
            return False
        entry.plugins = frozenset(result.diagnosis.unschedulable_plugins)
        outcome, message = self._post_filter(pod, result)
        entry.seq = next(self._seq)
        changed = False
        if outcome.nominated_node_name:
            node = outcome.nominated_node_name
            victims: list[str] = []
            for victim in outcome.victims:
                current = self.pods.get(victim.key)
                if current is None or current.uid != victim.uid:
                    continue
                victims.append(f"{victim.key} on {node}")
                if not current.is_terminating:
                    self._terminating(current, evicted=False)
                    self._event("preempt", victim.key, node, detail=f"by {pod.key}")
                    changed = True
                    self._owe(current, note=f"preempted by {pod.key}")
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
            self.pods[pod.key] = pod
            self.snapshot.update_pod(pod)
        if rep is not None:
            rep.unschedulable = message
        self._event("unschedulable", pod.key, detail=message)
        return changed

    def _post_filter(self, pod: Pod, result: ScheduleResult) -> tuple[PreemptionResult, str]:
        """DefaultPreemption after a failed cycle (the snapshot is not changed), and the
        FailedScheduling message kubesim's scheduler loop writes for it."""
        outcome = preempt(
            pod,
            self.snapshot,
            node_statuses=result.node_statuses,
            mode="exhaustive",
            framework=self.framework,
            now=self.view.now + self.t,
        )
        post = "" if outcome.status.code is Code.Success else outcome.status.message
        message = fit_error_message(
            len(self.snapshot.node_info_list),
            result.node_statuses,
            pre_filter_msg=result.diagnosis.pre_filter_msg,
            post_filter_msg=post,
        )
        return outcome, message

    def _owe(self, pod: Pod, *, note: str = "") -> Replacement | None:
        """The replacement ``pod``'s controller will create, recorded before it exists."""
        wk = self.members.get(pod.key)
        if wk is None:
            return None
        wl = self.view.workloads[wk]
        owed = self.owed.setdefault(wk, [])
        if wl.kind == "DaemonSet":
            return None
        if wl.kind == "StatefulSet":
            ordinal = _ordinal(wl.name, pod.name)
            if ordinal is None or ordinal >= wl.replicas:
                return None
        elif len(self.active.get(wk, ())) + len(owed) >= wl.replicas:
            return None  # scaled down, or a finished Job: it keeps no more pods
        rep = Replacement(owner=wl.title, replaces=pod.key)
        if note:
            rep.owner = f"{wl.title}, replacing {pod.key} ({note})"
            self.others.append(rep)
        owed.append((pod.name, rep))
        return rep

    # --- the drain -------------------------------------------------------------------------

    def _start_drains(self) -> bool:
        active = sum(1 for d in self.drains if d.state == "active")
        changed = False
        for d in self.drains:
            if active >= max(self.options.parallel, 1):
                break
            if d.state != "waiting":
                continue
            d.state = "active"
            d.plan.start = self.t
            self._event("start", node=d.plan.name)
            active += 1
            changed = True
            if self.options.timeout > 0:
                deadline = self.t + self.options.timeout
                heapq.heappush(self.deadlines, (deadline, next(self._seq), d.plan.name))
            if d.groups:
                d.todo = list(d.groups.pop(0))
        return changed

    def _finish_drains(self) -> bool:
        changed = False
        for d in self.drains:
            if d.state != "active" or d.todo or d.waiting:
                continue
            if d.groups:
                d.todo = list(d.groups.pop(0))
                changed = True
                continue
            d.state = "done"
            d.plan.finish = self.t
            if d.refused:
                d.plan.verdict = "refused"
            elif d.plan.errors:
                d.plan.verdict = "fails"
            else:
                d.plan.verdict = "finishes"
            self._event("end", node=d.plan.name, detail=d.plan.verdict)
            changed = True
        return changed

    def _evict_wave(self) -> bool:
        this_round = self.round + 1
        granted: list[Pod] = []
        failed = dropped = False
        for d in self.drains:
            if d.state != "active":
                continue
            for key in list(d.todo):
                pp = self.by_key[key]
                pod = self.pods.get(key)
                if pod is None:  # it was terminating and went before its turn: nothing to do
                    d.todo.remove(key)
                    pp.action, pp.reason = "skip", "gone before its turn"
                    dropped = True
                    continue
                verdict = self._try_evict(pod, pp, this_round)
                if verdict == "blocked":
                    continue
                d.todo.remove(key)
                if verdict == "error":
                    failed = True
                    d.plan.errors.append(
                        f'error when evicting pods/"{pod.name}" -n "{pod.namespace}": {pp.error}'
                    )
                    continue
                pp.round, pp.seconds = this_round, self.t
                if pp.held_by and pp.held_until is None:
                    pp.held_until = this_round
                d.waiting.add(key)
                granted.append(pod)
                self._unhealthy(pod)  # the server spends the budget as it grants
        if not granted:
            return failed or dropped
        self.round = this_round
        for pod in granted:
            pp = self.by_key[pod.key]
            if pod.is_terminating:
                self._event("evict", pod.key, pod.node_name, detail="already terminating")
                continue
            self._terminating(pod, evicted=True)
            rep = self._owe(pod)
            pp.replacement = rep
            if rep is not None and pp.unmodelled:
                rep.unmodelled = pp.unmodelled
            self._event("evict", pod.key, pod.node_name)
        return True

    def _try_evict(self, pod: Pod, pp: PodPlan, this_round: int) -> str:
        """``granted``, ``blocked`` or ``error``, as the eviction subresource decides."""
        if pp.action == "delete":
            return "granted"
        if pod.phase in ("Succeeded", "Failed", "Pending") or pod.is_terminating:
            return "granted"
        budgets = self._budgets_of(pod)
        if not budgets:
            return "granted"
        if len(budgets) > 1:
            pp.error = (
                "This pod has more than one PodDisruptionBudget, which the eviction subresource"
                f" does not support. ({', '.join(sorted(b.pdb.name for b in budgets))})"
            )
            self._event("error", pod.key, pod.node_name, pp.error)
            return "error"
        b = budgets[0]
        self.touched_budgets.add(b.pdb.key)
        if pod.key not in b.healthy:
            policy = b.pdb.unhealthy_pod_eviction_policy
            if policy == "AlwaysAllow" or (len(b.healthy) >= b.desired and b.desired > 0):
                return "granted"
        if b.allowed() > 0:
            return "granted"
        if not pp.held_by:
            pp.held_by, pp.held_from = b.pdb.name, this_round
            self._event("blocked", pod.key, pod.node_name, b.pdb.name)
        return "blocked"

    # --- time ------------------------------------------------------------------------------

    def _next_time(self) -> float | None:
        times = [self.gone_at[0][0]] if self.gone_at else []
        while self.deadlines and not self._deadline_live(self.deadlines[0][2]):
            heapq.heappop(self.deadlines)
        if self.deadlines:
            times.append(self.deadlines[0][0])
        return min(times) if times else None

    def _deadline_live(self, node: str) -> bool:
        return any(d.plan.name == node and d.state == "active" for d in self.drains)

    def _advance(self, t: float) -> None:
        self.t = max(self.t, t)
        while self.gone_at and self.gone_at[0][0] <= t:
            _, _, key = heapq.heappop(self.gone_at)
            pod = self.pods.pop(key, None)
            if pod is None:
                continue
            self.snapshot.remove_pod(key)
            self.pending.pop(key, None)
            wk = self.members.pop(key, None)
            if wk is not None:
                self.active.get(wk, set()).discard(key)
                self.dirty_workloads[wk] = None
            for d in self.drains:
                if key in d.waiting:
                    d.waiting.discard(key)
                    pp = self.by_key.get(key)
                    if pp is not None:
                        pp.gone = self.t
            self._dirty_pending()
            self._event("gone", key, pod.node_name)
        while self.deadlines and self.deadlines[0][0] <= t:
            _, _, name = heapq.heappop(self.deadlines)
            for d in self.drains:
                if d.plan.name == name and d.state == "active" and (d.todo or d.waiting):
                    d.state = "done"
                    d.timed_out = True
                    d.plan.finish = self.t
                    self._conclude_stuck(d)
                    self._event("end", node=name, detail="timeout")

    def _settle(self) -> None:
        for _ in range(100_000):
            changed = self._sync_controllers()
            changed |= self._schedule_pending()
            changed |= self._finish_drains()
            changed |= self._start_drains()
            changed |= self._evict_wave()
            if not changed:
                return
        raise RuntimeError("the drain plan did not settle")  # a bug, never user input

    def run(self) -> DrainPlan:
        self._start_drains()
        while True:
            self._settle()
            t = self._next_time()
            if t is None:
                break
            self._advance(t)
        for d in self.drains:
            if d.state == "active":
                self._conclude_stuck(d)
        return self._result()

    # --- conclusions -----------------------------------------------------------------------

    def _conclude_stuck(self, d: _Drain) -> None:
        blockers: dict[str, tuple[str, bool]] = {}
        for key in d.todo:
            pp = self.by_key[key]
            pod = self.pods.get(key)
            if pod is None or not pp.held_by:
                continue
            b = next((b for b in self._budgets_of(pod)), None)
            if b is None or b.pdb.key in blockers:
                continue
            blockers[b.pdb.key] = self._why_stuck(b, pod)
        unknown = any(u for _, u in blockers.values())
        d.plan.blockers = [text for text, _ in blockers.values()]
        if d.timed_out:
            d.plan.blockers.append(f"the drain gives up after --timeout {self.options.timeout:g}s")
        d.plan.verdict = "unknown" if unknown else "stuck"

    def _why_stuck(self, b: _Budget, blocked: Pod) -> tuple[str, bool]:
        """The sentence naming what keeps budget ``b`` shut for good; True when the reason is
        something this plan does not model."""
        head = f"PDB {b.pdb.name} {_rule(b.pdb)}: {len(b.healthy)} healthy"
        gone: list[tuple[str, Replacement | None, tuple[str, ...]]] = [
            (pp.key, pp.replacement, pp.unmodelled)
            for pp in self.by_key.values()
            if pp.round is not None
        ]
        gone += [(o.replaces, o, o.unmodelled) for o in self.others if o.replaces]
        for key, rep, unmodelled in gone:
            original = self.original.get(key)
            if original is None or not _selects(b.pdb, original):
                continue
            if unmodelled or (rep is not None and rep.unmodelled):
                what = "; ".join(unmodelled or (rep.unmodelled if rep else ()))
                return (
                    f"{head}, the replacement of {original.name} is not modelled ({what}):"
                    " whether it comes and becomes Ready is unknown",
                    True,
                )
            if rep is None or rep.node:
                continue
            if rep.gated:
                return (f"{head}, the replacement of {original.name} {rep.gated}", False)
            if rep.unschedulable:
                return (
                    f"{head}, the replacement of {original.name} fits on no node:"
                    f" {rep.unschedulable}",
                    False,
                )
            return (
                f"{head}, the replacement of {original.name} is never created ({rep.owner}"
                " creates its pods one at a time, lowest ordinal first, each once the lower"
                " ones are Running and Ready)",
                False,
            )
        # No replacement is on its way: the budget has no slack. Would one more pod fit?
        wk = self.members.get(blocked.key)
        wl = self.view.workloads.get(wk) if wk is not None else None
        if wl is None or wl.template is None:
            return (
                f"{head} of {b.desired} desired: it allows no disruption, and {blocked.name}"
                " has no controller whose replacement could add a healthy pod",
                False,
            )
        probe = wl.template.with_changes(
            name=f"{blocked.name}-probe", namespace=blocked.namespace, uid="plan-probe"
        )
        probe = self._admit(probe) or probe
        result = schedule_one(probe, self.snapshot, framework=self.framework)
        if result.succeeded:
            return (
                f"{head} of {b.desired} desired: it allows no disruption (the replacement of"
                f" {blocked.name} would fit on {result.suggested_host}: relax the budget or"
                " scale the workload up)",
                False,
            )
        outcome, message = self._post_filter(probe, result)
        if outcome.nominated_node_name:
            return (
                f"{head} of {b.desired} desired: it allows no disruption (the replacement of"
                f" {blocked.name} would fit on {outcome.nominated_node_name} by preemption)",
                False,
            )
        return (f"{head}, the replacement of {blocked.name} fits on no node: {message}", False)

    def _result(self) -> DrainPlan:
        nodes = [d.plan for d in self.drains]
        for d in self.drains:
            d.plan.rounds = len({p.round for p in d.plan.pods if p.round is not None})
            if d.state == "waiting":
                d.plan.verdict = "not-reached"
        finishing = [n.finish for n in nodes if n.finish is not None]
        plan = DrainPlan(
            nodes=nodes,
            parallel=max(self.options.parallel, 1),
            rounds=self.round,
            seconds=max(finishing) if finishing and all(n.finishes for n in nodes) else None,
            others=self.others,
            events=self.events,
        )
        plan.budgets = [
            BudgetPlan(
                b.pdb.namespace,
                b.pdb.name,
                _rule(b.pdb),
                b.desired,
                b.start,
                b.lowest,
                max(0, b.start - b.desired) if b.pdb.expected_pods > 0 else 0,
                stale=b.pdb.observed_generation < b.pdb.generation,
            )
            for b in self.budgets.values()
            if b.pdb.key in self.touched_budgets
        ]
        assumptions = list(ASSUMPTIONS)
        if self.score_all:
            assumptions.append(
                f"every one of the {len(self.view.nodes)} nodes is scored (kube-scheduler"
                " scores a sample of the nodes of clusters above 100)"
            )
        if self.ties:
            assumptions.append(
                "where nodes tie for the best score, kube-scheduler picks one at random;"
                " the plan (as kubesim) takes the first"
            )
        stale = [b.name for b in plan.budgets if b.stale]
        if stale:
            assumptions.append(
                f"the disruption controller has not processed the latest spec of PDB"
                f" {', '.join(stale)}: its status is taken as it stands"
            )
        plan.assumptions = assumptions
        plan.verdict, plan.reason = _overall(nodes)
        return plan


def _overall(nodes: Sequence[NodePlan]) -> tuple[str, str]:
    """The drain's verdict and, when it does not finish, the first reason, naming its node."""
    for verdict in ("stuck", "unknown", "refused", "fails", "not-reached"):
        bad = [n for n in nodes if n.verdict == verdict]
        if not bad:
            continue
        n = bad[0]
        if verdict == "stuck":
            why = "; ".join(n.blockers)
        elif verdict == "unknown":
            why = "cannot tell: " + "; ".join(n.blockers)
        elif verdict in ("refused", "fails"):
            why = "; ".join(n.errors)
        else:
            stuck = next((m.name for m in nodes if m.verdict in ("stuck", "unknown")), "")
            why = f"not reached: node/{stuck} never finishes and no --timeout ends it"
        return verdict, f"node/{n.name}: {why}"
    return "finishes", ""


# --- entry points --------------------------------------------------------------------------


def plan_drain(
    view: ClusterView,
    nodes: Sequence[str],
    options: PlanOptions | None = None,
    *,
    framework: Framework | None = None,
) -> DrainPlan:
    """Play the drain of ``nodes`` in this order (see the module docstring)."""
    opts = options or PlanOptions()
    fwk = framework if framework is not None else default_framework()
    plan = _Sim(view, nodes, opts, fwk).run()
    plan.given_order = list(nodes)
    return plan


def _orders(nodes: Sequence[str], view: ClusterView) -> Iterable[tuple[str, ...]]:
    if len(nodes) <= MAX_EXHAUSTIVE:
        yield from itertools.permutations(nodes)
        return
    given = tuple(nodes)
    yield given
    yield tuple(reversed(given))
    count: dict[str, int] = {}
    for pod in view.pods:
        if pod.node_name in count or pod.node_name in given:
            count[pod.node_name] = count.get(pod.node_name, 0) + 1
    yield tuple(sorted(given, key=lambda n: (count.get(n, 0), given.index(n))))
    yield tuple(sorted(given, key=lambda n: (-count.get(n, 0), given.index(n))))


def best_plan(
    view: ClusterView,
    nodes: Sequence[str],
    options: PlanOptions | None = None,
) -> DrainPlan:
    """The order of ``nodes`` whose drain finishes soonest (``DrainPlan.score``); the given
    order wins ties. With one node, that node's plan."""
    opts = options or PlanOptions()
    fwk = default_framework()
    best: DrainPlan | None = None
    tried = 0
    seen: set[tuple[str, ...]] = set()
    for order in _orders(nodes, view):
        if order in seen:
            continue
        seen.add(order)
        tried += 1
        plan = plan_drain(view, order, opts, framework=fwk)
        if best is None or plan.score() < best.score():
            best = plan
    assert best is not None
    best.orders_tried = tried
    best.given_order = list(nodes)
    if not best.finishes and len(nodes) > 1:
        best.reason = _never(best)
    return best


def _never(plan: DrainPlan) -> str:
    """The reason, naming the nodes that cannot go even in the best order played."""
    cannot = [n.name for n in plan.nodes if not n.finishes]
    return (
        f"no order of the {len(plan.nodes)} nodes played drains them all; at best"
        f" {', '.join(cannot)} cannot go: {plan.reason}"
    )
