"""DefaultPreemption's building blocks, one function per upstream function.

Reproduces ``pkg/scheduler/framework/preemption/preemption.go`` and
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``. Where it differs,
it is deliberately, for determinism: nodes are visited one by one (``dry_run_preemption``),
ties are broken by order (``select_victims_on_node``, ``pick_one_node_for_preemption``), and
no clock is read (``start_time``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from kube.conditions import DISRUPTION_TARGET
from kube.ints import INT32_MAX
from kube.objects import PREEMPT_NEVER, Pod, PodDisruptionBudget
from scheduler.framework import Code, CycleState, Framework, NodeToStatus, Status
from scheduler.plugins.registry import default_framework

if TYPE_CHECKING:
    import random

    from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "NOT_HELPFUL_MESSAGE",
    "NO_VICTIMS_MESSAGE",
    "PICK_CRITERIA",
    "UNSET_START_TIME",
    "Candidate",
    "DryRun",
    "IsEligiblePod",
    "NodeOutcome",
    "Victims",
    "calculate_num_candidates",
    "dry_run_preemption",
    "evaluate_node",
    "filter_pods_with_pdb_violation",
    "get_earliest_pod_start_time",
    "get_offset_and_num_candidates",
    "more_important_pod",
    "nodes_where_preemption_might_help",
    "pick_key",
    "pick_one_node_for_preemption",
    "pod_eligible_to_preempt_others",
    "run_dry_run",
    "select_victims_on_node",
    "validate_default_preemption_args",
]

NO_VICTIMS_MESSAGE: Final = "No preemption victims found for incoming pod"
NOT_HELPFUL_MESSAGE: Final = "Preemption is not helpful for scheduling"
NOT_ELIGIBLE_NEVER: Final = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING: Final = "not eligible due to a terminating pod on the nominated node."

PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"

#: What ``get_earliest_pod_start_time`` returns for an unset start time when no ``now`` is given.
UNSET_START_TIME: Final = datetime.max.replace(tzinfo=UTC)

#: The default score functions of ``pickOneNodeForPreemption``, in order.
PICK_CRITERIA: Final = (
    "fewest PDB violations",
    "lowest priority of the most important victim",
    "smallest sum of victim priorities (each + 2^31)",
    "fewest victims",
    "latest start time of the highest-priority victims",
)

_PRIORITY_SHIFT: Final = INT32_MAX + 1

_UU = Code.UnschedulableAndUnresolvable
_SUCCESS: Final = Status()

IsEligiblePod = Callable[["NodeInfo", Pod, Pod], bool]
PickKey = tuple[int, int, int, int, float]


@dataclass(slots=True)
class Victims:
    """``extenderv1.Victims``: pods to preempt (most important first) and PDB violations."""

    pods: list[Pod]
    num_pdb_violations: int = 0


@dataclass(slots=True)
class Candidate:
    """A node where the preemptor fits once ``victims`` are gone."""

    name: str
    victims: Victims = field(default_factory=lambda: Victims([]))


# --- time and importance ---------------------------------------------------------------------


def start_time(pod: Pod, now: float | None) -> float:
    """``GetPodStartTime`` without a clock: unset is ``now``, or +inf when ``now`` is None.

    kube reads ``time.Now()`` for a pod without ``status.startTime``; the core never reads a
    clock: every function takes ``now`` (seconds since the epoch). With ``now=None`` an unset
    start time counts as later than any set one, which is what "now" means for pods that
    started in the past; two unset start times are equal (kube's two ``time.Now()`` calls
    would make the first one marginally earlier)."""
    t = pod.start_time
    if t is not None:
        return t
    return math.inf if now is None else now


def importance_key(now: float | None) -> Callable[[Pod], tuple[int, float]]:
    """Sort key giving ``more_important_pod`` order (most important first)."""

    def key(pod: Pod) -> tuple[int, float]:
        t = pod.start_time
        if t is None:
            t = math.inf if now is None else now
        return (-pod.priority, t)

    return key


def more_important_pod(pod1: Pod, pod2: Pod, *, now: float | None = None) -> bool:
    """``util.MoreImportantPod``: higher priority, or equal priority and started earlier."""
    if pod1.priority != pod2.priority:
        return pod1.priority > pod2.priority
    return start_time(pod1, now) < start_time(pod2, now)


def _earliest_top_start(pods: Sequence[Pod], now: float | None) -> float:
    earliest = start_time(pods[0], now)
    top = pods[0].priority
    for pod in pods:
        prio = pod.priority
        if prio == top:
            earliest = min(earliest, start_time(pod, now))
        elif prio > top:
            top = prio
            earliest = start_time(pod, now)
    return earliest


def get_earliest_pod_start_time(
    victims: Victims | Sequence[Pod], *, now: float | None = None
) -> datetime | None:
    """``util.GetEarliestPodStartTime``: earliest start among the highest-priority victims.

    None when there are no victims. An unset start time is ``now``; with ``now=None`` it is
    ``UNSET_START_TIME`` (later than any real time).
    """
    pods = victims.pods if isinstance(victims, Victims) else victims
    if not pods:
        return None
    t = _earliest_top_start(pods, now)
    if math.isinf(t):
        return UNSET_START_TIME
    return datetime.fromtimestamp(t, tz=UTC)


# --- eligibility and potential nodes ---------------------------------------------------------


def _terminating_by_preemption(pod: Pod) -> bool:
    """``podTerminatingByPreemption``: deleting, and the first DisruptionTarget says why."""
    if pod.deletion_timestamp is None:
        return False
    cond = pod.condition(DISRUPTION_TARGET)
    return cond is not None and cond.status == "True" and cond.reason == PREEMPTION_BY_SCHEDULER


def pod_eligible_to_preempt_others(
    pod: Pod,
    snapshot: Snapshot,
    nominated_node_status: Status | None,
    *,
    is_eligible_pod: IsEligiblePod | None = None,
) -> tuple[bool, str]:
    """``PodEligibleToPreemptOthers``: (eligible, reason when not)."""
    if pod.preemption_policy == PREEMPT_NEVER:
        return False, NOT_ELIGIBLE_NEVER
    nominated = pod.nominated_node_name
    if nominated:
        if nominated_node_status is not None and nominated_node_status.code is _UU:
            return True, ""
        node_info = snapshot.get_node_info(nominated)
        if node_info is not None:
            prio = pod.priority
            for p in node_info.pods:
                if (
                    p.priority < prio
                    and (is_eligible_pod is None or is_eligible_pod(node_info, p, pod))
                    and _terminating_by_preemption(p)
                ):
                    return False, NOT_ELIGIBLE_TERMINATING
    return True, ""


def nodes_where_preemption_might_help(
    node_infos: Iterable[NodeInfo], node_statuses: NodeToStatus
) -> tuple[list[NodeInfo], NodeToStatus]:
    """Nodes whose (possibly absent) Filter status is Unschedulable, in the order given.

    Every other node is reported ``UnschedulableAndUnresolvable`` ``Preemption is not helpful
    for scheduling`` (explicitly, and as the absent-nodes status), as kube reports them.
    """
    not_helpful = Status(_UU, NOT_HELPFUL_MESSAGE)
    out = NodeToStatus(absent_nodes_status=not_helpful)
    potential: list[NodeInfo] = []
    unschedulable = Code.Unschedulable
    for ni in node_infos:
        if node_statuses.get(ni.name).code is unschedulable:
            potential.append(ni)
        else:
            out.set(ni.name, not_helpful)
    return potential, out


# --- PDBs ------------------------------------------------------------------------------------


def filter_pods_with_pdb_violation(
    pods: Iterable[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """``filterPodsWithPDBViolation``: split ``pods`` (order kept) into violating / not.

    Each call starts from a fresh copy of every PDB's ``disruptionsAllowed``; a pod consumes one
    disruption from each matching PDB (same namespace, non-empty selector matching its labels,
    pod name not in ``disruptedPods``) and is violating when any of them goes below zero.
    Pods listed in ``disruptedPods`` do not consume budget.
    """
    if not pdbs:
        return [], list(pods)
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[Pod] = []
    non_violating: list[Pod] = []
    for pod in pods:
        violated = False
        labels = pod.labels
        if labels:
            for i, pdb in enumerate(pdbs):
                if pdb.namespace != pod.namespace:
                    continue
                selector = pdb.selector
                if selector is None or selector.is_empty() or not selector.matches(labels):
                    continue
                if pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


# --- victims on one node ---------------------------------------------------------------------

_default_framework: Framework | None = None


def default_preemption_framework() -> Framework:
    """One shared ``default_framework()`` (plugins keep state in CycleState)."""
    global _default_framework  # noqa: PLW0603 - a lazily built module singleton
    if _default_framework is None:
        _default_framework = default_framework()
    return _default_framework


def run_pre_filter(
    framework: Framework, pod: Pod, snapshot: Snapshot | None, nodes: Iterable[NodeInfo]
) -> tuple[CycleState, Status]:
    """PreFilter for ``pod``; without a snapshot, one is built from ``nodes``."""
    if snapshot is None:
        from scheduler.snapshot import Snapshot

        snapshot = Snapshot()
        for ni in nodes:
            if ni.node is not None:
                snapshot.add_node(ni.node)
                for p in ni.pods:
                    snapshot.add_pod(p)
    state = CycleState()
    return state, framework.run_pre_filter_plugins(state, pod, snapshot)


def select_victims(
    preemptor: Pod,
    node_info: NodeInfo,
    *,
    framework: Framework,
    state: CycleState,
    pdbs: Sequence[PodDisruptionBudget],
    nominated: Sequence[Pod],
    is_eligible_pod: IsEligiblePod | None,
    now: float | None,
) -> tuple[list[Pod], int, Status]:
    """``SelectVictimsOnNode`` on a private ``node_info`` and ``state`` (both are changed)."""
    prio = preemptor.priority
    potential = [
        p
        for p in node_info.pods
        if p.priority < prio
        and (is_eligible_pod is None or is_eligible_pod(node_info, p, preemptor))
    ]
    remove_ext = framework.run_pre_filter_extension_remove_pod
    add_ext = framework.run_pre_filter_extension_add_pod
    run_filters = framework.run_filter_plugins_with_nominated_pods
    for p in potential:
        node_info.remove_pod(p)
        status = remove_ext(state, preemptor, p, node_info)
        if status.code is not Code.Success:
            return [], 0, status
    if not potential:
        return [], 0, Status(_UU, NO_VICTIMS_MESSAGE)
    status = run_filters(state, preemptor, node_info, nominated)
    if status.code is not Code.Success:
        return [], 0, status
    key = importance_key(now)
    potential.sort(key=key)
    violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
    victims: list[Pod] = []
    num_violating = 0
    for group, violates in ((violating, True), (non_violating, False)):
        for p in group:
            node_info.add_pod(p)
            status = add_ext(state, preemptor, p, node_info)
            if status.code is not Code.Success:
                return [], 0, status
            if run_filters(state, preemptor, node_info, nominated).code is Code.Success:
                continue
            node_info.remove_pod(p)
            status = remove_ext(state, preemptor, p, node_info)
            if status.code is not Code.Success:
                return [], 0, status
            victims.append(p)
            if violates:
                num_violating += 1
    if violating and non_violating:
        victims.sort(key=key)
    return victims, num_violating, _SUCCESS


def select_victims_on_node(
    preemptor: Pod,
    node_info: NodeInfo,
    pdbs: Sequence[PodDisruptionBudget],
    *,
    is_eligible_pod: IsEligiblePod | None = None,
    framework: Framework | None = None,
    state: CycleState | None = None,
    snapshot: Snapshot | None = None,
    now: float | None = None,
) -> tuple[list[Pod], int, Status | None]:
    """``SelectVictimsOnNode``: the fewest pods to remove from ``node_info`` for the preemptor.

    Returns ``(victims most important first, number of PDB-violating victims, status)``.
    ``node_info`` and ``state`` are not changed (copies are used). Without ``state`` the
    framework's PreFilter runs first (on ``snapshot``, or a snapshot of this node). Nominated
    pods come from ``snapshot``; with no snapshot there are none.

    Every lower-priority (eligible) pod is removed, the preemptor must then fit (filters with
    nominated pods, both passes), and as many pods as possible are reprieved: PDB-violating
    ones first, then the others, most important first. kube sorts victims with ``sort.Slice``
    (not stable); here the sort is stable, so the node's pod order breaks ties.
    """
    fw = framework if framework is not None else default_preemption_framework()
    if state is None:
        state, status = run_pre_filter(fw, preemptor, snapshot, (node_info,))
        if status.code is not Code.Success:
            return [], 0, status
    nominated = snapshot.nominated_pods_for_node(node_info.name) if snapshot is not None else []
    return select_victims(
        preemptor,
        node_info.clone(),
        framework=fw,
        state=state.clone(),
        pdbs=pdbs,
        nominated=nominated,
        is_eligible_pod=is_eligible_pod,
        now=now,
    )


# --- candidates ------------------------------------------------------------------------------


def validate_default_preemption_args(
    min_candidate_nodes_percentage: int, min_candidate_nodes_absolute: int
) -> None:
    """``ValidateDefaultPreemptionArgs``; raises ValueError naming the bad argument."""
    if not 0 <= min_candidate_nodes_percentage <= 100:
        raise ValueError(
            f"minCandidateNodesPercentage: Invalid value: {min_candidate_nodes_percentage}:"
            " not in valid range [0, 100]"
        )
    if min_candidate_nodes_absolute < 0:
        raise ValueError(
            f"minCandidateNodesAbsolute: Invalid value: {min_candidate_nodes_absolute}:"
            " not in valid range [0, inf)"
        )
    if min_candidate_nodes_percentage == 0 and min_candidate_nodes_absolute == 0:
        raise ValueError(
            "minCandidateNodesPercentage: Invalid value: 0: both minCandidateNodesPercentage"
            " and minCandidateNodesAbsolute cannot be zero"
        )


def calculate_num_candidates(
    num_nodes: int,
    min_candidate_nodes_percentage: int = 10,
    min_candidate_nodes_absolute: int = 100,
) -> int:
    """``calculateNumCandidates``: ``min(max(num_nodes * pct // 100, abs), num_nodes)``."""
    n = num_nodes * min_candidate_nodes_percentage // 100
    n = max(n, min_candidate_nodes_absolute)
    return min(n, num_nodes)


def get_offset_and_num_candidates(
    num_nodes: int,
    rng: random.Random,
    *,
    min_candidate_nodes_percentage: int = 10,
    min_candidate_nodes_absolute: int = 100,
) -> tuple[int, int]:
    """``GetOffsetAndNumCandidates``: a random offset in ``[0, num_nodes)`` and the count."""
    if num_nodes <= 0:
        raise ValueError(f"num_nodes must be positive to pick an offset, got {num_nodes}")
    offset = rng.randrange(num_nodes)
    return offset, calculate_num_candidates(
        num_nodes, min_candidate_nodes_percentage, min_candidate_nodes_absolute
    )


def zero_victims_status(node_name: str) -> Status:
    return Status(Code.Error, f'expected at least one victim pod on node "{node_name}"')


class NodeOutcome:
    """What the dry run found on one node: a candidate with its pick key, or a status.

    The cache fields (``nominated``, ``now_sensitive``, ``serial``) let the evaluator reuse an
    outcome while the node, its nominated pods and ``now`` are unchanged.
    """

    __slots__ = ("candidate", "key", "nominated", "now_sensitive", "serial", "status")

    def __init__(
        self,
        candidate: Candidate | None,
        status: Status | None,
        key: PickKey | None,
        *,
        nominated: tuple[Pod, ...] = (),
        now_sensitive: bool = False,
    ) -> None:
        self.candidate = candidate
        self.status = status
        self.key = key
        self.nominated = nominated
        self.now_sensitive = now_sensitive
        self.serial = 0

    def __repr__(self) -> str:
        if self.candidate is not None:
            return f"<NodeOutcome candidate {self.candidate.name} key={self.key}>"
        return f"<NodeOutcome {self.status!r}>"


def evaluate_node(
    preemptor: Pod,
    node_info: NodeInfo,
    *,
    framework: Framework,
    state: CycleState,
    pdbs: Sequence[PodDisruptionBudget],
    nominated: Sequence[Pod],
    is_eligible_pod: IsEligiblePod | None,
    now: float | None,
) -> NodeOutcome:
    """One step of the dry run: ``SelectVictimsOnNode`` on copies, as a ``NodeOutcome``."""
    pods, num_violations, status = select_victims(
        preemptor,
        node_info.clone(),
        framework=framework,
        state=state.clone(),
        pdbs=pdbs,
        nominated=nominated,
        is_eligible_pod=is_eligible_pod,
        now=now,
    )
    prio = preemptor.priority
    sensitive = any(p.start_time is None and p.priority < prio for p in node_info.pods)
    if status.code is Code.Success:
        if pods:
            victims = Victims(pods, num_violations)
            return NodeOutcome(
                Candidate(node_info.name, victims),
                None,
                pick_key(victims, now),
                now_sensitive=sensitive,
            )
        status = zero_victims_status(node_info.name)
    return NodeOutcome(None, status, None, now_sensitive=sensitive)


@dataclass(slots=True)
class DryRun:
    """The visit of ``run_dry_run``; positions index the potential-node list."""

    non_violating: list[tuple[int, NodeOutcome]]
    violating: list[tuple[int, NodeOutcome]]
    failed: list[tuple[int, NodeOutcome]]
    dropped: list[tuple[int, NodeOutcome]]
    visited: int

    @property
    def candidates(self) -> list[tuple[int, NodeOutcome]]:
        return self.non_violating + self.violating


def run_dry_run(
    num_nodes: int, offset: int, num_candidates: int, evaluate: Callable[[int], NodeOutcome]
) -> DryRun:
    """The visiting loop of ``DryRunPreemption`` over positions ``(offset + i) % num_nodes``.

    Two lists bounded by ``num_candidates`` (extra candidates are dropped); stops once a
    non-violating candidate exists and the two lists hold ``num_candidates`` together.
    """
    run = DryRun([], [], [], [], 0)
    nv_added = v_added = 0
    for i in range(num_nodes):
        pos = (offset + i) % num_nodes
        out = evaluate(pos)
        run.visited += 1
        cand = out.candidate
        if cand is None:
            run.failed.append((pos, out))
            continue
        if cand.victims.num_pdb_violations == 0:
            nv_added += 1
            target = run.non_violating
        else:
            v_added += 1
            target = run.violating
        if len(target) < num_candidates:
            target.append((pos, out))
        else:
            run.dropped.append((pos, out))
        nv = min(nv_added, num_candidates)
        if nv > 0 and nv + min(v_added, num_candidates) >= num_candidates:
            break
    return run


def dry_run_preemption(
    preemptor: Pod,
    potential_nodes: Sequence[NodeInfo],
    pdbs: Sequence[PodDisruptionBudget],
    offset: int,
    num_candidates: int,
    *,
    framework: Framework | None = None,
    state: CycleState | None = None,
    snapshot: Snapshot | None = None,
    is_eligible_pod: IsEligiblePod | None = None,
    now: float | None = None,
) -> tuple[list[Candidate], NodeToStatus]:
    """``DryRunPreemption``, visiting nodes one by one from ``offset`` with wrap-around.

    Returns non-violating candidates followed by violating ones, and the status of every
    visited node that is not a candidate (a node where the preemptor fits with zero victims gets
    Error ``expected at least one victim pod on node "<n>"``). Without ``state`` PreFilter runs
    first; if it rejects the pod, every node gets that status.

    Visits ``potential_nodes[(offset + i) % n]`` with two bounded candidate lists and kube's
    early stop (a non-violating candidate exists and both lists together reach
    ``num_candidates``). kube runs the dry run on 16 goroutines, so which candidates land in
    the bounded lists can vary from run to run; here nodes are visited in order (kube with one
    worker).
    """
    fw = framework if framework is not None else default_preemption_framework()
    node_statuses = NodeToStatus()
    n = len(potential_nodes)
    if n == 0:
        return [], node_statuses
    if state is None:
        state, status = run_pre_filter(fw, preemptor, snapshot, potential_nodes)
        if status.code is not Code.Success:
            for ni in potential_nodes:
                node_statuses.set(ni.name, status)
            return [], node_statuses
    cycle_state = state

    def evaluate(pos: int) -> NodeOutcome:
        ni = potential_nodes[pos]
        nominated = snapshot.nominated_pods_for_node(ni.name) if snapshot is not None else []
        return evaluate_node(
            preemptor,
            ni,
            framework=fw,
            state=cycle_state,
            pdbs=pdbs,
            nominated=nominated,
            is_eligible_pod=is_eligible_pod,
            now=now,
        )

    run = run_dry_run(n, offset, num_candidates, evaluate)
    for pos, out in run.failed:
        assert out.status is not None
        node_statuses.set(potential_nodes[pos].name, out.status)
    candidates = [out.candidate for _, out in run.candidates if out.candidate is not None]
    return candidates, node_statuses


# --- picking one -----------------------------------------------------------------------------


def pick_key(victims: Victims, now: float | None) -> PickKey:
    """The five criteria as one tuple; the smallest tuple is the best node.

    (PDB violations, priority of ``pods[0]``, sum of priority + 2^31, count, -earliest start of
    the highest-priority victims).
    """
    pods = victims.pods
    total = 0
    for p in pods:
        total += p.priority
    total += _PRIORITY_SHIFT * len(pods)
    return (
        victims.num_pdb_violations,
        pods[0].priority,
        total,
        len(pods),
        -_earliest_top_start(pods, now),
    )


def pick_one_node_for_preemption(
    candidates: Sequence[Candidate], *, now: float | None = None
) -> str:
    """``pickOneNodeForPreemption`` with the default score functions ("" when empty).

    One candidate is returned without scoring. Otherwise the criteria of ``PICK_CRITERIA`` are
    applied in order, each keeping the best nodes; a full tie goes to the first remaining
    candidate in the order given (kube breaks a full tie by map iteration order, at random).
    Victims must be sorted most important first.
    """
    if not candidates:
        return ""
    if len(candidates) == 1:
        return candidates[0].name
    best_i = 0
    best_key: PickKey | None = None
    for i, c in enumerate(candidates):
        if not c.victims.pods:
            raise ValueError(f'candidate "{c.name}" has no victims; cannot score it')
        k = pick_key(c.victims, now)
        if best_key is None or k < best_key:
            best_i, best_key = i, k
    return candidates[best_i].name


def eliminating_criterion(key: PickKey, winner: PickKey) -> int:
    """Index in ``PICK_CRITERIA`` that eliminated a candidate with ``key``; 5 for a full tie.

    It is the first criterion on which the candidate differs from the winner: every candidate
    tied with the winner on the criteria before it survived them, exactly as the sequential
    score functions work."""
    for i, (a, b) in enumerate(zip(key, winner, strict=True)):
        if a != b:
            return i
    return len(PICK_CRITERIA)
