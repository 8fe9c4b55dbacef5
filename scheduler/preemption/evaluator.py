"""``preempt``: the DefaultPreemption PostFilter decision, exact and fast on large clusters.

The flow is ``Evaluator.Preempt`` (see ``core``): eligibility, potential nodes (Filter status
Unschedulable), dry run, pick, then what the caller must do (victims to delete, lower-priority
nominations on the chosen node to clear). ``preempt`` never changes the snapshot; why it is
fast is ``_preempt_fast``'s to say.
"""

from __future__ import annotations

import heapq
import random
import weakref
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, count
from operator import ne
from typing import Final

from kube.objects import DEFAULT_SCHEDULER_NAME, Pod, PodDisruptionBudget
from scheduler.config import KubeSchedulerConfiguration
from scheduler.framework import (
    NODE_LOCAL_PLUGINS,
    Code,
    CycleState,
    Framework,
    NodeToStatus,
    Status,
    fit_error_message,
    node_local_signature,
)
from scheduler.preemption.core import (
    NOT_HELPFUL_MESSAGE,
    IsEligiblePod,
    NodeOutcome,
    PickKey,
    default_preemption_framework,
    evaluate_node,
    get_offset_and_num_candidates,
    nodes_where_preemption_might_help,
    pick_one_node_for_preemption,
    pod_eligible_to_preempt_others,
    run_dry_run,
    run_pre_filter,
    validate_default_preemption_args,
)
from scheduler.preemption.crossnode import NO_REMOTE_BLOCKER, find_cross_node_candidates
from scheduler.preemption.explain import Explanation
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = ["MODES", "NODE_LOCAL_PLUGINS", "PreemptionResult", "preempt"]

MODES: Final = ("exhaustive", "sampled")

PREFIX: Final = "preemption: "
_MAX_CONTEXTS: Final = 8
_REMAP_THRESHOLD: Final = 64  # more changed positions than this: rematch all by generation

_U = Code.Unschedulable


@dataclass(frozen=True, slots=True)
class PreemptionResult:
    """The PostFilter result.

    ``nominated_node_name``: None leaves the pod's nomination unchanged, "" clears it, a name
    nominates that node. ``victims`` are the pods to delete (most important first) and
    ``nominated_pods_to_clear`` the lower-priority pods nominated to that node.
    """

    nominated_node_name: str | None
    victims: list[Pod] = field(default_factory=list)
    nominated_pods_to_clear: list[Pod] = field(default_factory=list)
    status: Status = field(default_factory=Status)
    explanation: Explanation = field(default_factory=lambda: Explanation(""))


# --- the per-snapshot cache ------------------------------------------------------------------


class _Context:
    """Cached node outcomes for one (framework, preemptor signature, PDBs, predicate).

    ``recs[i]`` is the outcome for the snapshot's i-th node, computed when that node was at
    generation ``gens[i]``, or None (then ``i`` is in ``unevaluated``). Generations are unique
    process-wide and change with every change of a NodeInfo, so a generation identifies a node's
    content: outcomes follow generations, and the context keeps no reference to the NodeInfos
    (which may point back at their snapshot, the weak key of this cache). ``keys[i]`` mirrors
    ``recs[i].key``. The heap holds
    ``(*key, i, serial)`` for candidate outcomes; entries whose serial no longer matches
    ``recs[i]`` are stale and dropped when they reach the top.
    """

    __slots__ = (
        "gens",
        "heap",
        "index",
        "keys",
        "names",
        "nom_idx",
        "now",
        "now_idx",
        "recs",
        "serial",
        "unevaluated",
    )

    def __init__(self) -> None:
        self.names: list[str] = []  # replaced, never changed in place (explanations keep it)
        self.index: dict[str, int] = {}
        self.gens: list[int] = []
        self.recs: list[NodeOutcome | None] = []
        self.keys: list[PickKey | None] = []
        self.unevaluated: set[int] = set()
        self.heap: list[tuple[int, int, int, int, float, int, int]] = []
        self.nom_idx: set[int] = set()
        self.now_idx: set[int] = set()
        self.now: float | None = None
        self.serial = 0

    def _drop(self, i: int) -> None:
        if self.recs[i] is not None:
            self.recs[i] = None
            self.keys[i] = None
            self.unevaluated.add(i)

    def _remap(self, nodes: list[NodeInfo], gens: list[int]) -> None:
        """Carry outcomes over to a new node order, matching nodes by generation."""
        old = dict(zip(self.gens, self.recs, strict=True))
        self.recs = [old.get(g) for g in gens]
        self.gens = gens
        self.names = [ni.name for ni in nodes]
        self.index = {name: i for i, name in enumerate(self.names)}
        self._rebuild_indexes()

    def _rebuild_indexes(self) -> None:
        self.keys = [None if rec is None else rec.key for rec in self.recs]
        self.unevaluated = {i for i, rec in enumerate(self.recs) if rec is None}
        self.heap = []
        self.nom_idx = set()
        self.now_idx = set()
        for i, rec in enumerate(self.recs):
            if rec is None:
                continue
            if rec.key is not None:
                self.heap.append((*rec.key, i, rec.serial))
            if rec.nominated:
                self.nom_idx.add(i)
            if rec.now_sensitive:
                self.now_idx.add(i)
        heapq.heapify(self.heap)

    def sync(self, snapshot: Snapshot, pod: Pod, now: float | None) -> dict[int, tuple[Pod, ...]]:
        """Drop outcomes made stale since the last decision; returns nominated pods by index."""
        nodes = snapshot.node_info_list
        gens = [ni.generation for ni in nodes]
        if gens != self.gens:
            changed = (
                list(compress(range(len(gens)), map(ne, gens, self.gens)))
                if len(gens) == len(self.gens)
                else None
            )
            if changed is None or len(changed) > _REMAP_THRESHOLD:
                self._remap(nodes, gens)
            else:
                names = self.names
                copied = False
                for i in changed:
                    self._drop(i)
                    name = nodes[i].name
                    if name != names[i]:
                        if not copied:
                            names = list(names)
                            copied = True
                        if self.index.get(names[i]) == i:
                            del self.index[names[i]]
                        self.index[name] = i
                        names[i] = name
                self.names = names
                self.gens = gens
        recs = self.recs
        prio, key = pod.priority, pod.key
        current: dict[int, tuple[Pod, ...]] = {}
        for node_name in snapshot.nominated_node_names():
            at = self.index.get(node_name)
            if at is None:
                continue
            sig = tuple(
                p
                for p in snapshot.nominated_pods_for_node(node_name)
                if p.priority >= prio and p.key != key
            )
            if sig:
                current[at] = sig
        check = self.nom_idx | current.keys()
        for i in check:
            rec = recs[i]
            if rec is not None and rec.nominated != current.get(i, ()):
                self._drop(i)
        self.nom_idx = {i for i in check if (r := recs[i]) is not None and r.nominated}
        if now != self.now:
            for i in self.now_idx:
                self._drop(i)
            self.now_idx = set()
            self.now = now
        return current

    def missing(self, pmask: list[bool]) -> list[int]:
        """Indices of nodes in ``pmask`` without an outcome, in node order."""
        unevaluated = self.unevaluated
        if len(unevaluated) * 8 < len(pmask):
            return sorted(i for i in unevaluated if pmask[i])
        recs = self.recs
        return [i for i in compress(range(len(pmask)), pmask) if recs[i] is None]

    def evaluate(
        self,
        i: int,
        node_info: NodeInfo,
        *,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        pdbs: Sequence[PodDisruptionBudget],
        nominated: tuple[Pod, ...],
        is_eligible_pod: IsEligiblePod | None,
        now: float | None,
    ) -> NodeOutcome:
        rec = evaluate_node(
            pod,
            node_info,
            framework=framework,
            state=state,
            pdbs=pdbs,
            nominated=nominated,
            is_eligible_pod=is_eligible_pod,
            now=now,
        )
        self.store(i, rec, nominated)
        return rec

    def store(self, i: int, rec: NodeOutcome, nominated: tuple[Pod, ...] = ()) -> None:
        self.serial += 1
        rec.serial = self.serial
        rec.nominated = nominated
        self.recs[i] = rec
        self.keys[i] = rec.key
        self.unevaluated.discard(i)
        if rec.key is not None:
            heapq.heappush(self.heap, (*rec.key, i, rec.serial))
        if nominated:
            self.nom_idx.add(i)
        if rec.now_sensitive:
            self.now_idx.add(i)

    def best(self, pmask: list[bool]) -> int:
        """Index of the best valid candidate among nodes with ``pmask``; -1 when none."""
        heap = self.heap
        if len(heap) > 2 * len(self.recs) + 64:
            self._rebuild_indexes()
            heap = self.heap
        recs = self.recs
        aside = []
        found = -1
        while heap:
            entry = heap[0]
            i = entry[5]
            rec = recs[i]
            if rec is None or rec.serial != entry[6]:
                heapq.heappop(heap)
                continue
            if not pmask[i]:
                aside.append(heapq.heappop(heap))
                continue
            found = i
            break
        for entry in aside:
            heapq.heappush(heap, entry)
        return found


_caches: weakref.WeakKeyDictionary[Snapshot, OrderedDict[Hashable, _Context]] = (
    weakref.WeakKeyDictionary()
)


def _context(snapshot: Snapshot, key: Hashable) -> _Context:
    contexts = _caches.get(snapshot)
    if contexts is None:
        contexts = OrderedDict()
        _caches[snapshot] = contexts
    ctx = contexts.get(key)
    if ctx is None:
        ctx = _Context()
        contexts[key] = ctx
        if len(contexts) > _MAX_CONTEXTS:
            contexts.popitem(last=False)
    else:
        contexts.move_to_end(key)
    return ctx


# --- results ---------------------------------------------------------------------------------


def _prefixed(code: Code, message: str) -> Status:
    return Status(code, PREFIX + message if message else "")


def _aggregate(errors: Sequence[Status]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: unique messages, bracketed when several."""
    seen: list[str] = []
    for st in errors:
        if st.message not in seen:
            seen.append(st.message)
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


def _describe(pod: Pod) -> str:
    return f"pod {pod.key} (priority {pod.priority})"


def _failure(
    pod: Pod,
    num_all_nodes: int,
    failed: list[tuple[str, Status]],
    explanation: Explanation,
) -> PreemptionResult:
    """No candidate: an aggregated Error, else the FitError of the dry-run statuses."""
    errors = [st for _, st in failed if st.code is Code.Error]
    if errors:
        message = _aggregate(errors)
        explanation.summary = f"{_describe(pod)}: preemption failed: {message}"
        return PreemptionResult(
            None, status=_prefixed(Code.Error, message), explanation=explanation
        )
    not_helpful = Status(Code.UnschedulableAndUnresolvable, NOT_HELPFUL_MESSAGE)
    statuses = NodeToStatus(dict(failed), not_helpful)
    message = fit_error_message(num_all_nodes, statuses)
    explanation.summary = f"{_describe(pod)}: no preemption candidate: {message}"
    return PreemptionResult(
        "", status=_prefixed(Code.Unschedulable, message), explanation=explanation
    )


def _success(
    pod: Pod,
    snapshot: Snapshot,
    out: NodeOutcome,
    explanation: Explanation,
    counts: Callable[[], tuple[int, int]],
) -> PreemptionResult:
    """``counts`` gives (candidates, potential nodes) for the summary, only when it is read."""
    cand = out.candidate
    assert cand is not None
    name = cand.name
    prio = pod.priority
    to_clear = [p for p in snapshot.nominated_pods_for_node(name) if p.priority < prio]
    victims = list(cand.victims.pods)
    violations = cand.victims.num_pdb_violations
    mode = explanation.mode

    def summary() -> str:
        num_candidates, num_potential = counts()
        return (
            f"{_describe(pod)}: nominated to node {name}, preempting {len(victims)} pod(s)"
            f" ({violations} PDB violation(s)); {num_candidates} candidate(s)"
            f" among {num_potential} potential node(s), {mode} mode"
        )

    explanation.summary = summary
    return PreemptionResult(name, victims, to_clear, Status(), explanation)


# --- preempt ---------------------------------------------------------------------------------


def preempt(
    pod: Pod,
    snapshot: Snapshot,
    *,
    node_statuses: NodeToStatus,
    mode: str = "exhaustive",
    rng: random.Random | None = None,
    framework: Framework | None = None,
    pdbs: Sequence[PodDisruptionBudget] | None = None,
    now: float | None = None,
    min_candidate_nodes_percentage: int = 10,
    min_candidate_nodes_absolute: int = 100,
    is_eligible_pod: IsEligiblePod | None = None,
    naive: bool = False,
    cross_node: bool = False,
    config: KubeSchedulerConfiguration | None = None,
) -> PreemptionResult:
    """Decide whether and where ``pod`` preempts, given the Filter statuses of this cycle.

    ``node_statuses`` is the Filter result (nodes without an entry take its absent-nodes
    status). ``pdbs`` defaults to ``snapshot.pdbs``, ``framework`` to the default Filter
    profile. ``now`` (seconds since the epoch) stands for unset pod start times; None means
    "later than any set start time". ``rng`` seeds the sampled mode's offset (default
    ``random.Random(0)``). Status messages carry the ``preemption: `` prefix, as PostFilter's.

    ``mode="exhaustive"`` evaluates every potential node and picks the best candidate of all of
    them (deterministic: a full tie goes to the first node in snapshot order).
    ``mode="sampled"`` reproduces kube: ``max(10% of nodes, 100)`` candidates (capped at the
    node count), a random offset from the seeded ``rng``, wrap-around visiting, bounded
    candidate lists and early stop. ``naive=True`` runs the reference path instead
    (``nodes_where_preemption_might_help``, ``dry_run_preemption``,
    ``pick_one_node_for_preemption`` with no cache); tests use it to prove that both paths
    give identical results.

    Cached outcomes assume that Filter plugins and ``is_eligible_pod`` are pure functions of
    their arguments; pass the same framework and predicate objects from call to call (a new
    lambda per call is a new cache key, so nothing is reused).

    ``cross_node=True`` goes beyond kube: when kube's search finds no candidate, victims may
    also be taken from other nodes of the topology domain where lower-priority pods block the
    pod by anti-affinity (``scheduler.preemption.crossnode``). Off by default.

    With ``config``, the pod's profile decides: its Filter plugins (unless ``framework`` is
    given) and DefaultPreemption's args (``minCandidateNodesPercentage``,
    ``minCandidateNodesAbsolute``); a profile without DefaultPreemption at PostFilter does not
    preempt (an Unschedulable status without a message, as kube's PostFilter run without
    plugins), and a pod of no profile gets a Skip status (``not_this_schedulers``).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if config is not None:
        profile = config.profile_for(pod)
        if profile is None:
            names = ", ".join(f'"{n}"' for n in config.scheduler_names)
            summary = (
                f'schedulerName "{pod.scheduler_name or DEFAULT_SCHEDULER_NAME}" is no profile'
                f" of this scheduler ({names})"
            )
            return PreemptionResult(
                None, status=Status(Code.Skip, summary), explanation=Explanation(summary, mode=mode)
            )
        if not profile.preemption:
            summary = (
                f'{_describe(pod)}: profile "{profile.scheduler_name}" has no PostFilter plugin'
            )
            return PreemptionResult(
                None, status=Status(Code.Unschedulable), explanation=Explanation(summary, mode=mode)
            )
        framework = framework if framework is not None else profile.framework
        min_candidate_nodes_percentage = profile.min_candidate_nodes_percentage
        min_candidate_nodes_absolute = profile.min_candidate_nodes_absolute
    validate_default_preemption_args(min_candidate_nodes_percentage, min_candidate_nodes_absolute)
    fw = framework if framework is not None else default_preemption_framework()
    pdb_list = snapshot.pdbs if pdbs is None else pdbs
    nominated_status = node_statuses.get(pod.nominated_node_name)
    ok, msg = pod_eligible_to_preempt_others(
        pod, snapshot, nominated_status, is_eligible_pod=is_eligible_pod
    )
    if not ok:
        return PreemptionResult(
            None,
            status=_prefixed(Code.Unschedulable, msg),
            explanation=Explanation(f"{_describe(pod)}: {msg}", mode=mode),
        )
    nodes = snapshot.node_info_list
    if not nodes:
        return PreemptionResult(
            None,
            status=_prefixed(Code.Error, "no nodes available"),
            explanation=Explanation(f"{_describe(pod)}: no nodes available", mode=mode),
        )
    state, pre_status = run_pre_filter(fw, pod, snapshot, ())
    if pre_status.code is not Code.Success and not pre_status.is_rejected():
        return PreemptionResult(
            None,
            status=_prefixed(pre_status.code, pre_status.message),
            explanation=Explanation(f"{_describe(pod)}: {pre_status.message}", mode=mode),
        )
    args = _Args(
        pod,
        snapshot,
        node_statuses,
        mode,
        rng if rng is not None else random.Random(0),
        fw,
        state,
        pre_status if pre_status.code is not Code.Success else None,
        pdb_list,
        now,
        min_candidate_nodes_percentage,
        min_candidate_nodes_absolute,
        is_eligible_pod,
    )
    result = _preempt_naive(args) if naive else _preempt_fast(args)
    if (
        cross_node
        and result.nominated_node_name == ""
        and result.status.code is Code.Unschedulable
        and args.pre_filter_rejection is None
    ):
        return _preempt_cross_node(args, result)
    return result


def _preempt_cross_node(a: _Args, kube: PreemptionResult) -> PreemptionResult:
    """kube found no candidate: try the widened victim sets; kube's answer stands otherwise."""
    search = find_cross_node_candidates(
        a.pod,
        a.snapshot,
        node_statuses=a.node_statuses,
        framework=a.framework,
        state=a.state,
        pdbs=a.pdbs,
        now=a.now,
        is_eligible_pod=a.is_eligible_pod,
    )
    names = [ni.name for ni in a.snapshot.node_info_list]
    statuses, _ = _filter_statuses(a.node_statuses, names)
    outcomes = list(search.outcomes)
    for i, rec in enumerate(outcomes):
        # Where no other node matters, kube's own reason for the node is the one to show.
        if rec is not None and rec.status is not None and rec.status.message == NO_REMOTE_BLOCKER:
            verdict = kube.explanation.verdict(names[i])
            if verdict is not None and verdict.verdict == "not_candidate":
                why = Status(rec.status.code, f"{verdict.reason} ({NO_REMOTE_BLOCKER})")
                outcomes[i] = NodeOutcome(None, why, None)
    explanation = Explanation(
        "",
        mode=a.mode,
        names=names,
        statuses=statuses,
        outcomes=outcomes,
        chosen=search.chosen,
    )
    if search.chosen < 0:
        explanation.summary = f"{kube.explanation.summary}; cross-node preemption: no candidate"
        return PreemptionResult(
            kube.nominated_node_name,
            kube.victims,
            kube.nominated_pods_to_clear,
            kube.status,
            explanation,
        )
    out = search.outcomes[search.chosen]
    assert out is not None and out.candidate is not None
    num_candidates = sum(1 for r in search.outcomes if r is not None and r.key is not None)
    num_potential = sum(1 for r in search.outcomes if r is not None)
    result = _success(a.pod, a.snapshot, out, explanation, lambda: (num_candidates, num_potential))
    where = search.victim_nodes
    placed = ", ".join(f"{v.key} on {where.get(v.key, '?')}" for v in result.victims)
    base = result.explanation.summary
    result.explanation.summary = f"{base}; cross-node preemption (beyond kube): {placed}"
    return result


@dataclass(slots=True)
class _Args:
    pod: Pod
    snapshot: Snapshot
    node_statuses: NodeToStatus
    mode: str
    rng: random.Random
    framework: Framework
    state: CycleState
    pre_filter_rejection: Status | None
    pdbs: Sequence[PodDisruptionBudget]
    now: float | None
    pct: int
    abs: int
    is_eligible_pod: IsEligiblePod | None

    def offset_and_num(self, n: int) -> tuple[int, int]:
        if self.mode == "exhaustive":
            return 0, n
        return get_offset_and_num_candidates(
            n,
            self.rng,
            min_candidate_nodes_percentage=self.pct,
            min_candidate_nodes_absolute=self.abs,
        )


def _no_potential_nodes(
    a: _Args, names: Sequence[str], statuses: Sequence[Status]
) -> PreemptionResult:
    explanation = Explanation("", mode=a.mode, names=names, statuses=statuses)
    return _failure(a.pod, len(names), [], explanation)


def _preempt_naive(a: _Args) -> PreemptionResult:
    """The reference: public building blocks, no cache, every node evaluated afresh."""
    nodes = a.snapshot.node_info_list
    names = [ni.name for ni in nodes]
    statuses = [a.node_statuses.get(name) for name in names]
    potential, _ = nodes_where_preemption_might_help(nodes, a.node_statuses)
    if not potential:
        return _no_potential_nodes(a, names, statuses)
    position = {name: i for i, name in enumerate(names)}
    offset, num = a.offset_and_num(len(potential))
    rejection = a.pre_filter_rejection

    def evaluate(pos: int) -> NodeOutcome:
        ni = potential[pos]
        if rejection is not None:
            return NodeOutcome(None, rejection, None)
        nominated = tuple(a.snapshot.nominated_pods_for_node(ni.name))
        return evaluate_node(
            a.pod,
            ni,
            framework=a.framework,
            state=a.state,
            pdbs=a.pdbs,
            nominated=nominated,
            is_eligible_pod=a.is_eligible_pod,
            now=a.now,
        )

    run = run_dry_run(len(potential), offset, num, evaluate)
    visited = (*run.candidates, *run.failed, *run.dropped)
    outcomes = {position[potential[pos].name]: out for pos, out in visited}
    dropped = frozenset(position[potential[pos].name] for pos, _ in run.dropped)
    candidates = [out.candidate for _, out in run.candidates if out.candidate is not None]
    if not candidates:
        failed = [(potential[pos].name, out.status) for pos, out in run.failed if out.status]
        explanation = Explanation(
            "", mode=a.mode, names=names, statuses=statuses, outcomes=outcomes, dropped=dropped
        )
        return _failure(a.pod, len(names), failed, explanation)
    chosen = pick_one_node_for_preemption(candidates, now=a.now)
    idx = position[chosen]
    explanation = Explanation(
        "",
        mode=a.mode,
        names=names,
        statuses=statuses,
        outcomes=outcomes,
        chosen=idx,
        dropped=dropped,
    )
    counts = (len(candidates), len(potential))
    return _success(a.pod, a.snapshot, outcomes[idx], explanation, lambda: counts)


def _filter_statuses(
    node_statuses: NodeToStatus, names: list[str]
) -> tuple[list[Status], list[bool]]:
    """Each node's Filter status (in node order) and whether it is Unschedulable."""
    d = node_statuses.statuses
    if len(d) == len(names) and list(d) == names:  # the usual shape: every node, in order
        statuses = list(d.values())
    else:
        get, absent = d.get, node_statuses.absent_nodes_status
        statuses = [get(name, absent) for name in names]
    unschedulable = _U
    if statuses and len(set(map(id, statuses))) == 1:
        # One status object for every node (the failed cycle's usual shape), told at C
        # speed (comparing distinct Status objects runs Python code).
        return statuses, [statuses[0].code is unschedulable] * len(statuses)
    return statuses, [s.code is unschedulable for s in statuses]


def _preempt_fast(a: _Args) -> PreemptionResult:
    """The cached path: the same decision as ``_preempt_naive``, for a few nodes' work.

    Evaluating 5000 nodes per decision (copy the node, run the filters a few times) costs
    about a quarter of a second in Python. But between two decisions only a few nodes change,
    and ``SelectVictimsOnNode`` on a node depends only on: the node's pods and the node
    (``NodeInfo.generation`` changes with each of them), the preemptor's scheduling-relevant
    spec, the PDBs, the nominated pods of that node of priority >= the preemptor's, ``now``
    when a potential victim has no start time, the framework and ``is_eligible_pod`` —
    provided every active Filter plugin is node-local (its verdict on a node depends on the pod
    and that node only). So outcomes are cached per snapshot, per (framework, preemptor
    signature, PDBs, eligibility predicate), per node (``_Context``), and checked each decision
    with C-level scans (generations, Filter status codes); only changed or new nodes are
    evaluated. The best candidate comes from a heap of pick keys (the five criteria, then node
    position) with lazy deletion, so picking is O(log n) rather than a loop over thousands of
    candidates.

    Plugins count as node-local when they set ``node_local = True``, or, without that
    attribute, when their name is one of kube's node-local plugins (``NODE_LOCAL_PLUGINS``);
    plugins that PreFilter skipped do not count. With any other active plugin (InterPodAffinity
    with required terms, for instance) outcomes are reused only within the one decision.
    """
    snapshot, pod, fw = a.snapshot, a.pod, a.framework
    active = [p for p in fw.filter_plugins if p.name not in a.state.skip_filter_plugins]
    rejection = a.pre_filter_rejection
    signature = node_local_signature(active, pod) if rejection is None else None
    if signature is not None:
        key = (fw, signature, tuple(a.pdbs), a.is_eligible_pod)
        ctx = _context(snapshot, key)
    else:
        ctx = _Context()
    nominated = ctx.sync(snapshot, pod, a.now)
    names = ctx.names
    n = len(names)
    statuses, pmask = _filter_statuses(a.node_statuses, names)
    if not any(pmask):
        return _no_potential_nodes(a, names, statuses)
    for i in ctx.missing(pmask):
        if rejection is not None:
            ctx.store(i, NodeOutcome(None, rejection, None))
            continue
        ctx.evaluate(
            i,
            snapshot.node_info_list[i],
            framework=fw,
            state=a.state,
            pod=pod,
            pdbs=a.pdbs,
            nominated=nominated.get(i, ()),
            is_eligible_pod=a.is_eligible_pod,
            now=a.now,
        )
    recs = list(ctx.recs)  # the explanation keeps this decision's outcomes
    if a.mode == "exhaustive":
        best = ctx.best(pmask)
        if best < 0:
            return _failure(
                pod,
                n,
                _failed(names, recs, compress(range(n), pmask)),
                Explanation("", mode=a.mode, names=names, statuses=statuses, outcomes=recs),
            )
        explanation = Explanation(
            "", mode=a.mode, names=names, statuses=statuses, outcomes=recs, chosen=best
        )

        def counts() -> tuple[int, int]:
            potential = list(compress(recs, pmask))
            return sum(1 for r in potential if r is not None and r.key is not None), len(potential)

        out = recs[best]
        assert out is not None
        return _success(pod, snapshot, out, explanation, counts)
    return _sampled(a, ctx, names=names, statuses=statuses, pmask=pmask, recs=recs)


def _failed(
    names: list[str], recs: list[NodeOutcome | None], indices: Iterable[int]
) -> list[tuple[str, Status]]:
    out = []
    for i in indices:
        rec = recs[i]
        assert rec is not None and rec.status is not None
        out.append((names[i], rec.status))
    return out


def _sampled(
    a: _Args,
    ctx: _Context,
    *,
    names: list[str],
    statuses: list[Status],
    pmask: list[bool],
    recs: list[NodeOutcome | None],
) -> PreemptionResult:
    """kube's sampled dry run over cached outcomes: only candidates are walked in Python."""
    pod = a.pod
    n = len(names)
    p_idx: Sequence[int] = range(n) if all(pmask) else list(compress(range(n), pmask))
    n_p = len(p_idx)
    offset, num = a.offset_and_num(n_p)
    rotated = list(chain(p_idx[offset:], p_idx[:offset]))
    keys = ctx.keys
    non_violating: list[int] = []
    violating: list[int] = []
    dropped: set[int] = set()
    stop = n_p - 1
    for pos, i in compress(enumerate(rotated), map(keys.__getitem__, rotated)):
        key = keys[i]
        assert key is not None
        target = non_violating if key[0] == 0 else violating
        if len(target) < num:
            target.append(i)
        else:
            dropped.add(i)
        if non_violating and len(non_violating) + len(violating) >= num:
            stop = pos
            break
    visited: Callable[[int], bool] | None = None
    if stop < n_p - 1:

        def visited(i: int) -> bool:
            return (bisect_left(p_idx, i) - offset) % n_p <= stop

    candidates = non_violating + violating
    if not candidates:
        return _failure(
            pod,
            n,
            _failed(names, recs, rotated),
            Explanation("", mode=a.mode, names=names, statuses=statuses, outcomes=recs),
        )
    _, _, best = min(zip(map(keys.__getitem__, candidates), count(), candidates, strict=False))
    explanation = Explanation(
        "",
        mode=a.mode,
        names=names,
        statuses=statuses,
        outcomes=recs,
        chosen=best,
        dropped=frozenset(dropped),
        visited=visited,
    )
    out = recs[best]
    assert out is not None
    num_candidates = len(candidates)
    return _success(pod, a.snapshot, out, explanation, lambda: (num_candidates, n_p))
