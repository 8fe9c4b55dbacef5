"""Cross-node preemption: beyond kube, and only when asked (``preempt(..., cross_node=True)``).

kube-scheduler removes victims only from the node it nominates, so a pod that anti-affinity (its
own or an existing pod's) keeps apart from a lower-priority pod on *another* node of the same
domain stays unschedulable (``examples/cross-node-preemption.yaml``), as the documentation says:
https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/#cross-node-preemption
Here the victim search is widened for exactly that case, only when kube's own search found no
candidate, so every decision kube can make is left unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from kube.objects import Pod, PodDisruptionBudget
from scheduler.framework import Code, CycleState, Framework, NodeToStatus, Status
from scheduler.plugins.interpodaffinity.filtering import required_anti_affinity_terms
from scheduler.preemption.core import (
    Candidate,
    IsEligiblePod,
    NodeOutcome,
    Victims,
    filter_pods_with_pdb_violation,
    importance_key,
    pick_key,
)
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = ["NO_REMOTE_BLOCKER", "CrossNodeSearch", "find_cross_node_candidates"]

NO_REMOTE_BLOCKER: Final = (
    "cross-node: no lower-priority pod on another node of its topology domain blocks the pod"
)
_UU = Code.UnschedulableAndUnresolvable


@dataclass(frozen=True, slots=True)
class CrossNodeSearch:
    """The outcome per node (snapshot order; None where the node was not a potential node),
    the chosen index (-1 when there is no candidate) and the node of each victim."""

    outcomes: list[NodeOutcome | None]
    chosen: int
    victim_nodes: Mapping[str, str]


def _blockers(
    pod: Pod, snapshot: Snapshot, is_eligible: Callable[[NodeInfo, Pod], bool]
) -> list[tuple[NodeInfo, Pod, frozenset[str]]]:
    """Lower-priority pods that block ``pod`` by anti-affinity, with the topology keys."""
    prio = pod.priority
    ns_labels = snapshot.namespace_labels
    own_terms = required_anti_affinity_terms(pod)
    pod_ns_labels = ns_labels(pod.namespace)
    out: list[tuple[NodeInfo, Pod, frozenset[str]]] = []
    for ni in snapshot.node_info_list:
        for q in ni.pods:
            if q.priority >= prio or not is_eligible(ni, q):
                continue
            keys: set[str] = set()
            if own_terms:
                q_ns_labels = ns_labels(q.namespace)
                keys.update(t.topology_key for t in own_terms if t.matches(q, q_ns_labels))
            for term in required_anti_affinity_terms(q):
                if term.matches(pod, pod_ns_labels):
                    keys.add(term.topology_key)
            if keys:
                out.append((ni, q, frozenset(keys)))
    return out


def _select_victims(
    pod: Pod,
    node_info: NodeInfo,
    remote: Sequence[tuple[NodeInfo, Pod]],
    *,
    framework: Framework,
    state: CycleState,
    pdbs: Sequence[PodDisruptionBudget],
    nominated: Sequence[Pod],
    is_eligible: Callable[[NodeInfo, Pod], bool],
    now: float | None,
) -> tuple[list[Pod], int, Status]:
    """``SelectVictimsOnNode`` over the node's pods and ``remote`` pods of other nodes."""
    prio = pod.priority
    clones: dict[str, NodeInfo] = {node_info.name: node_info.clone()}
    placed: list[tuple[Pod, str]] = [
        (p, node_info.name)
        for p in node_info.pods
        if p.priority < prio and is_eligible(node_info, p)
    ]
    for ni, q in remote:
        if ni.name not in clones:
            clones[ni.name] = ni.clone()
        placed.append((q, ni.name))
    remove_ext = framework.run_pre_filter_extension_remove_pod
    add_ext = framework.run_pre_filter_extension_add_pod
    target = clones[node_info.name]

    def fits() -> Status:
        return framework.run_filter_plugins_with_nominated_pods(state, pod, target, nominated)

    for p, where in placed:
        clones[where].remove_pod(p)
        status = remove_ext(state, pod, p, clones[where])
        if status.code is not Code.Success:
            return [], 0, status
    status = fits()
    if status.code is not Code.Success:
        return [], 0, status
    key = importance_key(now)
    node_of = {p.key: where for p, where in placed}
    ordered = sorted((p for p, _ in placed), key=key)
    violating, non_violating = filter_pods_with_pdb_violation(ordered, pdbs)
    victims: list[Pod] = []
    num_violating = 0
    for group, violates in ((violating, True), (non_violating, False)):
        for p in group:
            ni = clones[node_of[p.key]]
            ni.add_pod(p)
            status = add_ext(state, pod, p, ni)
            if status.code is not Code.Success:
                return [], 0, status
            if fits().code is Code.Success:
                continue
            ni.remove_pod(p)
            status = remove_ext(state, pod, p, ni)
            if status.code is not Code.Success:
                return [], 0, status
            victims.append(p)
            num_violating += violates
    if violating and non_violating:
        victims.sort(key=key)
    return victims, num_violating, Status()


def find_cross_node_candidates(
    pod: Pod,
    snapshot: Snapshot,
    *,
    node_statuses: NodeToStatus,
    framework: Framework,
    state: CycleState,
    pdbs: Sequence[PodDisruptionBudget],
    now: float | None = None,
    is_eligible_pod: IsEligiblePod | None = None,
) -> CrossNodeSearch:
    """Evaluate every potential node with the widened victim set.

    For each node whose Filter status is Unschedulable, the potential victims are the lower-priority
    pods on the node (as kube's) plus the lower-priority pods on the other nodes that share a
    topology value with it for a key through which they block the preemptor by anti-affinity, in
    either direction. Then kube's ``SelectVictimsOnNode`` procedure runs over that wider set: all
    are removed (the PreFilter state follows through ``RemovePod`` with each pod's own node), the
    preemptor must pass the Filter plugins on the node, and victims are reprieved greedily,
    PDB-violating ones first, most important first, keeping only the pods whose return would block
    the preemptor again — so the set is minimal (no victim can be spared) and PDB accounting covers
    victims on every node. Candidates are ranked by kube's five criteria (``pick_key``); the first
    best node in snapshot order wins.

    ``state`` is the preemptor's PreFilter state on ``snapshot``; it is cloned per node.
    """

    def is_eligible(ni: NodeInfo, p: Pod) -> bool:
        return is_eligible_pod is None or is_eligible_pod(ni, p, pod)

    blockers = _blockers(pod, snapshot, is_eligible)
    nodes = snapshot.node_info_list
    outcomes: list[NodeOutcome | None] = [None] * len(nodes)
    chosen = -1
    victim_nodes: dict[str, str] = {}
    best_nodes: dict[str, str] = {}
    for i, ni in enumerate(nodes):
        node = ni.node
        if node is None or node_statuses.get(ni.name).code is not Code.Unschedulable:
            continue
        labels = node.labels
        remote = [
            (other, q)
            for other, q, keys in blockers
            if other.name != ni.name
            and other.node is not None
            and any(k in labels and other.node.labels.get(k) == labels[k] for k in keys)
        ]
        if not remote:
            outcomes[i] = NodeOutcome(None, Status(_UU, NO_REMOTE_BLOCKER), None)
            continue
        pods, num_violating, status = _select_victims(
            pod,
            ni,
            remote,
            framework=framework,
            state=state.clone(),
            pdbs=pdbs,
            nominated=snapshot.nominated_pods_for_node(ni.name),
            is_eligible=is_eligible,
            now=now,
        )
        if status.code is not Code.Success or not pods:
            why = status if status.code is not Code.Success else Status(_UU, NO_REMOTE_BLOCKER)
            outcomes[i] = NodeOutcome(None, why, None)
            continue
        victims = Victims(pods, num_violating)
        rec = NodeOutcome(Candidate(ni.name, victims), None, pick_key(victims, now))
        outcomes[i] = rec
        best = outcomes[chosen] if chosen >= 0 else None
        if best is None or (rec.key is not None and best.key is not None and rec.key < best.key):
            chosen = i
            where = {p.key: ni.name for p in ni.pods}
            where.update({q.key: other.name for other, q in remote})
            best_nodes = {p.key: where[p.key] for p in pods}
    if chosen >= 0:
        victim_nodes = best_nodes
    return CrossNodeSearch(outcomes, chosen, victim_nodes)
