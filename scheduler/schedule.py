"""One scheduling cycle's decision: ``findNodesThatFitPod``, ``prioritizeNodes``, ``selectHost``.

Follows ``pkg/scheduler/schedule_one.go``; ``schedule_one`` is the cycle and never changes the
snapshot (bind its result with ``Snapshot.bind_pod``). What no plugin here evaluates is named
per pod (``unmodelled_features``), never skipped silently.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Final

from kube.objects import DEFAULT_SCHEDULER_NAME, Pod
from scheduler.config import KubeSchedulerConfiguration, SchedulerProfile, default_configuration
from scheduler.framework import (
    SUCCESS,
    Code,
    CycleState,
    FilterBatchResult,
    Framework,
    NodeScores,
    NodeToStatus,
    ScorePlugin,
    Status,
    filter_status,
    fit_error_message,
    node_local_signature,
    prioritize_nodes,
)
from scheduler.plugins.helper import distinct_objects, remember
from scheduler.plugins.registry import default_framework
from scheduler.snapshot import NodeInfo, NodeWindow, Snapshot

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "ERR_NO_NODES_AVAILABLE",
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "Diagnosis",
    "ScheduleResult",
    "SchedulingError",
    "find_feasible_nodes",
    "find_nodes_that_fit_pod",
    "not_this_schedulers",
    "num_feasible_nodes_to_find",
    "run_filter_plugins_batch",
    "schedule_one",
    "select_host",
    "uniform_filter_verdict",
    "unmodelled_features",
    "unmodelled_warning",
]

BatchFilter = Callable[[CycleState, Pod, list[NodeInfo]], FilterBatchResult]

MIN_FEASIBLE_NODES_TO_FIND: Final = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: Final = 5
ERR_NO_NODES_AVAILABLE: Final = "no nodes available to schedule pods"
_PVC_SOURCES: Final = ("persistentVolumeClaim", "ephemeral")
# At most this many nodes named by a PreFilterResult are filtered without whole-cluster verdicts.
_FEW_NODES: Final = 16


def unmodelled_features(pod: Pod) -> list[str]:
    """The features of ``pod`` that the modelled plugins do not evaluate, one phrase each:
    PersistentVolumeClaim-backed volumes (plain or generic ephemeral) and their topology
    (kube's VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits) and
    ``resourceClaims`` (DynamicResources). ``schedule_one`` puts them in one line,
    ``ScheduleResult.warning`` (also ``Diagnosis.unmodelled``). (A ``schedulerName`` is a
    profile's, or another scheduler's: ``not_this_schedulers``.)"""
    out: list[str] = []
    pvcs = [v.name for v in pod.volumes if v.source in _PVC_SOURCES]
    if pvcs:
        names = ", ".join(f'"{n}"' for n in pvcs)
        out.append(
            f"PersistentVolumeClaim volumes and volume topology (volume {names}: VolumeBinding,"
            " VolumeZone, VolumeRestrictions, NodeVolumeLimits)"
        )
    if pod.resource_claims:
        names = ", ".join(f'"{n}"' for n in pod.resource_claims)
        out.append(f"resourceClaims (claim {names}: DynamicResources)")
    return out


def not_this_schedulers(pod: Pod, config: KubeSchedulerConfiguration) -> Status | None:
    """Skip, saying so, when no profile of ``config`` has ``pod``'s ``schedulerName``:
    kube-scheduler's informers never queue such a pod (another scheduler's), so it stays
    Pending with no condition and no event. None when a profile schedules it."""
    if config.profile_for(pod) is not None:
        return None
    names = ", ".join(f'"{n}"' for n in config.scheduler_names)
    return Status(
        Code.Skip,
        f'pod {pod.key}: schedulerName "{pod.scheduler_name or DEFAULT_SCHEDULER_NAME}" is no'
        f" profile of this scheduler ({names}): another scheduler's pod, left Pending",
    )


def unmodelled_warning(pod: Pod) -> str:
    """One warning line naming what is not evaluated for ``pod``; "" when nothing is."""
    features = unmodelled_features(pod)
    if not features:
        return ""
    return f"pod {pod.key}: not evaluated here: {'; '.join(features)}"


class SchedulingError(RuntimeError):
    """A plugin returned an Error status: a bug or a broken input, not an unfit pod."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


@dataclass(slots=True)
class Diagnosis:
    """``framework.Diagnosis``: why nodes were rejected."""

    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    unmodelled: str = ""  # pod features no modelled plugin evaluates (``unmodelled_warning``)

    def add_plugin_status(self, status: Status) -> None:
        """``AddPluginStatus``."""
        if not status.plugin:
            return
        if status.code is Code.Pending:
            self.pending_plugins.add(status.plugin)
        elif status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)


def num_feasible_nodes_to_find(percentage_of_nodes_to_score: int, num_all_nodes: int) -> int:
    """``numFeasibleNodesToFind``; a percentage of 0 selects the adaptive default.

    Clusters below 100 nodes are searched entirely; otherwise the search stops after
    ``max(100, N * p / 100)`` feasible nodes, where ``p`` is ``percentageOfNodesToScore`` or,
    when 0 (kube's default), ``max(5, 50 - N/125)`` percent."""
    if not 0 <= percentage_of_nodes_to_score <= 100:
        raise ValueError(
            f"percentageOfNodesToScore must be in the range [0, 100], "
            f"not {percentage_of_nodes_to_score}"
        )
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = percentage_of_nodes_to_score
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num_nodes = num_all_nodes * percentage // 100
    return max(num_nodes, MIN_FEASIBLE_NODES_TO_FIND)


def _batch_filter(plugin: object) -> BatchFilter | None:
    # getattr, not isinstance: runtime protocol checks cost microseconds per call.
    batch: BatchFilter | None = getattr(plugin, "filter_nodes", None)
    return batch


def _pre_filter_result(plugin: object) -> Callable[[CycleState], frozenset[str] | None] | None:
    result: Callable[[CycleState], frozenset[str] | None] | None = getattr(
        plugin, "pre_filter_result", None
    )
    return result


def _record_rejections(
    failed: dict[str, Status],
    rejected: list[tuple[NodeInfo, Status]],
    plugin: str,
    distinct: dict[int, Status],
) -> None:
    """``failed[node] = filter_status(rejection, plugin)`` for each rejected node, and each
    distinct tagged status into ``distinct`` (by id). Plugins answer with a few shared Status
    objects, so each distinct one is tagged once."""
    answers = list(map(_second, rejected))
    first = answers[0]
    # Most batches answer with one shared status: found by identity in C, with no dict built.
    seen = (
        {id(first): first}
        if all(map(operator.is_, answers, repeat(first)))
        else distinct_objects(answers)
    )
    tagged = {i: filter_status(r, plugin) for i, r in seen.items()}
    names = map(_name, map(_first, rejected))
    if all(tagged[i] is r for i, r in seen.items()):
        failed.update(zip(names, answers, strict=True))
        distinct.update(seen)
    else:
        failed.update(zip(names, map(tagged.__getitem__, map(id, answers)), strict=True))
        distinct.update({id(t): t for t in tagged.values()})


# Rejected nodes are thousands per cycle on a large cluster: their pairs are taken apart in C.
_first = operator.itemgetter(0)
_second = operator.itemgetter(1)
_name = operator.attrgetter("name")


def _in_order(statuses: dict[str, Status], names: Iterable[str]) -> dict[str, Status]:
    """``statuses`` of the ``names`` it has, in the order of ``names`` (built in C)."""
    kept = list(filter(statuses.__contains__, names))
    return dict(zip(kept, map(statuses.__getitem__, kept), strict=True))


def run_filter_plugins_batch(
    framework: Framework,
    state: CycleState,
    pod: Pod,
    node_infos: list[NodeInfo],
    *,
    passing: Collection[str] = (),
) -> tuple[list[NodeInfo], dict[str, Status]]:
    """``RunFilterPlugins`` for many nodes: the passing nodes (in order) and the statuses of
    the others (keyed by node name, in the order of ``node_infos``), first rejection per node,
    nominated pods not included. ``passing`` names plugins known to pass every one of these
    nodes (not run)."""
    alive, failed, _ = _filter_batch(framework, state, pod, node_infos, passing)
    return alive, failed


def _filter_batch(
    framework: Framework,
    state: CycleState,
    pod: Pod,
    node_infos: list[NodeInfo],
    passing: Collection[str],
) -> tuple[list[NodeInfo], dict[str, Status], list[Status]]:
    """``run_filter_plugins_batch``, and the distinct statuses of its ``failed`` (so the walk
    need not pass over every rejected node again to find them)."""
    skip = state.skip_filter_plugins
    alive = node_infos
    failed: dict[str, Status] = {}
    distinct: dict[int, Status] = {}
    rejecting = 0
    for plugin in framework.filter_plugins:
        if not alive:
            break
        if (skip and plugin.name in skip) or (passing and plugin.name in passing):
            continue
        batch = _batch_filter(plugin)
        if batch is not None:
            alive, rejected = batch(state, pod, alive)
            if rejected:
                rejecting += 1
                _record_rejections(failed, rejected, plugin.name, distinct)
        else:
            keep: list[NodeInfo] = []
            before = len(failed)
            for ni in alive:
                status = plugin.filter(state, pod, ni)
                if status is None or status.code is Code.Success:
                    keep.append(ni)
                else:
                    tagged = failed[ni.name] = filter_status(status, plugin.name)
                    distinct[id(tagged)] = tagged
            rejecting += len(failed) > before
            alive = keep
    if rejecting > 1:  # each plugin's rejections came in node order; merge them into it
        failed = _in_order(failed, map(_name, node_infos))
    return alive, failed, list(distinct.values())


def uniform_filter_verdict(
    framework: Framework, state: CycleState, pod: Pod, snapshot: Snapshot
) -> Status | None:
    """The Filter chain's verdict shared by every node of ``snapshot`` (nominated pods not
    included): Success, or the first plugin's rejection, tagged. None when some active plugin
    cannot answer for the whole cluster at once, or answers with an Error.

    The whole-cluster fast path: when every node is to be evaluated and each active Filter
    plugin can answer for the whole cluster at once (``uniform_verdict``, as NodeResourcesFit
    can from the snapshot's resource columns), a cluster where nothing fits (the failed cycle
    before preemption) costs a few ``min``/``max`` scans and one ``dict.fromkeys`` for its
    statuses instead of a Python step per node and plugin, and a cluster where everything fits
    skips the per-node filter calls. Nodes with nominated pods are still evaluated one by one.
    The result must equal the node-by-node path in everything — feasible nodes, statuses
    (values and insertion order), diagnosis, next start index: the property tests run both on
    random clusters (``find_nodes_that_fit_pod(uniform=False)`` is the plain path)."""
    return _uniform_verdicts(framework, state, pod, snapshot)[0]


def _uniform_verdicts(
    framework: Framework, state: CycleState, pod: Pod, snapshot: Snapshot
) -> tuple[Status | None, frozenset[str]]:
    """``uniform_filter_verdict``, and the active plugins that pass every node of the
    snapshot (so of any subset of its nodes: the walk need not run them)."""
    skip = state.skip_filter_plugins
    passing: set[str] = set()
    known = True  # every plugin so far answered for the whole cluster
    for plugin in framework.filter_plugins:
        if skip and plugin.name in skip:
            continue
        uniform: Callable[[CycleState, Pod, Snapshot], Status | None] | None = getattr(
            plugin, "uniform_verdict", None
        )
        verdict = uniform(state, pod, snapshot) if uniform is not None else None
        if verdict is not None and verdict.code is Code.Success:
            passing.add(plugin.name)
        elif verdict is not None and known and verdict.is_rejected():
            return filter_status(verdict, plugin.name), frozenset(passing)
        else:
            known = False
    return (SUCCESS if known else None), frozenset(passing)


def _all_rejected(
    framework: Framework,
    state: CycleState,
    pod: Pod,
    snapshot: Snapshot,
    *,
    diagnosis: Diagnosis,
    rejection: Status,
    start_index: int,
) -> bool | Status:
    """Every node fails with ``rejection`` (nodes with nominated pods are evaluated with
    them): record the statuses in walk order. False when a nominated node passes after all
    (the caller then walks node by node); an Error status aborts, as in the walk."""
    names = snapshot.node_names()
    start = start_index % len(names)
    special: dict[str, Status] = {}
    nominated = snapshot.nominated_node_names()
    if nominated:
        order = snapshot.node_positions()
        walk = sorted(
            (n for n in nominated if n in order), key=lambda n: (order[n] - start) % len(names)
        )
        with_nominated = _WithNominated(framework, state, pod, snapshot)
        for name in walk:
            status = with_nominated(snapshot.node_info(name))
            if status.code is Code.Error:
                return status
            if status.is_success():
                return False
            special[name] = status
    explicit = diagnosis.node_to_status.statuses
    walked = names[start:] + names[:start] if start else names
    if explicit:
        explicit.update(dict.fromkeys(walked, rejection))
    else:
        diagnosis.node_to_status.statuses = explicit = dict.fromkeys(walked, rejection)
    explicit.update(special)
    _add_plugin_statuses(diagnosis, [rejection, *special.values()])
    return True


def _add_plugin_statuses(diagnosis: Diagnosis, statuses: Iterable[Status]) -> None:
    """``AddPluginStatus`` for each status; it depends only on the plugin and the code, so
    each pair is recorded once (distinct objects first: hashing a Code runs Python code)."""
    distinct = {id(v): v for v in statuses}.values()
    for plugin, code in {(v.plugin, v.code) for v in distinct}:
        diagnosis.add_plugin_status(Status(code, plugin=plugin))


_UNSET: Final = object()


class _WithNominated:
    """``RunFilterPluginsWithNominatedPods`` on nodes that have nominated pods, for one cycle.

    When every active Filter plugin is node-local the verdict depends only on the pod's
    ``node_local_signature``, the node and the nominated pods added to it, so it is kept in
    the node's memo (emptied when the node changes): pods of one shape waiting on their
    nominations (hundreds, while preemptors back off) cost one evaluation per node, not one
    per node and cycle.
    """

    __slots__ = ("framework", "key", "pod", "snapshot", "state")

    def __init__(
        self, framework: Framework, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> None:
        self.framework = framework
        self.state = state
        self.pod = pod
        self.snapshot = snapshot
        self.key: object = _UNSET  # worked out on first use

    def __call__(self, ni: NodeInfo) -> Status:
        fwk, pod = self.framework, self.pod
        nominated = self.snapshot.nominated_pods_for_node(ni.name)
        key = self.key
        if key is _UNSET:
            skip = self.state.skip_filter_plugins
            active = [p for p in fwk.filter_plugins if p.name not in skip]
            signature = node_local_signature(active, pod)
            key = self.key = None if signature is None else ("WithNominatedPods", fwk, signature)
        if key is None:
            return fwk.run_filter_plugins_with_nominated_pods(self.state, pod, ni, nominated)
        prio, own = pod.priority, pod.key
        memo_key = (key, tuple(p for p in nominated if p.priority >= prio and p.key != own))
        found: Status | None = ni.memo.get(memo_key)
        if found is None:
            found = fwk.run_filter_plugins_with_nominated_pods(self.state, pod, ni, nominated)
            if found.code is not Code.Error:
                remember(ni.memo, memo_key, found)
        return found


def _window(
    nodes: list[NodeInfo], start: int, offset: int, count: int, snapshot: Snapshot
) -> list[NodeInfo]:
    """Up to ``count`` nodes from position ``start + offset`` (mod n), stopping at the end of
    the list; the caller's loop continues from the front. A ``NodeWindow`` when ``nodes`` are
    the snapshot's own list."""
    first = (start + offset) % len(nodes)
    if nodes is snapshot.node_info_list:
        return NodeWindow(snapshot, first, count)
    return nodes[first : first + count]


def _find_nodes_that_pass_filters(
    framework: Framework,
    state: CycleState,
    pod: Pod,
    snapshot: Snapshot,
    *,
    diagnosis: Diagnosis,
    nodes: list[NodeInfo],
    num_nodes_to_find: int,
    start_index: int,
    uniform: Status | None = None,
    passing: frozenset[str] = frozenset(),
) -> list[NodeInfo] | Status:
    """``findNodesThatPassFilters``, sequential; an Error status aborts the search.

    ``uniform`` is ``uniform_filter_verdict`` when ``nodes`` is every node of the snapshot;
    ``passing`` the plugins that pass every node of the snapshot.
    """
    n = len(nodes)
    if n == 0:
        return []
    if not framework.filter_plugins:
        return [nodes[(start_index + i) % n] for i in range(min(num_nodes_to_find, n))]
    if uniform is not None and uniform.code is not Code.Success:
        done = _all_rejected(
            framework,
            state,
            pod,
            snapshot,
            diagnosis=diagnosis,
            rejection=uniform,
            start_index=start_index,
        )
        if isinstance(done, Status):
            return done
        if done:
            return []
        uniform = None
    nominated = set(snapshot.nominated_node_names())
    with_nominated = _WithNominated(framework, state, pod, snapshot)
    feasible: list[NodeInfo] = []
    statuses = diagnosis.node_to_status
    evaluated = 0
    while evaluated < n and len(feasible) < num_nodes_to_find:
        want = num_nodes_to_find - len(feasible)
        size = want
        if evaluated and uniform is None:
            # Sized from the pass rate so far, a chunk may pass more nodes than wanted: the
            # nodes after the last one wanted are dropped as if never evaluated (filters have
            # no side effects), so the outcome is the node-by-node walk's.
            size = (want * evaluated // len(feasible) if feasible else 2 * evaluated) * 5 // 4 + 8
        chunk = _window(nodes, start_index, evaluated, min(n - evaluated, size), snapshot)
        special: dict[str, Status] = {}
        plain = chunk
        if nominated:
            plain = []
            for ni in chunk:
                if ni.name in nominated:
                    special[ni.name] = with_nominated(ni)
                else:
                    plain.append(ni)
        failed: dict[str, Status]
        distinct: list[Status]
        if uniform is not None:  # Success: every node passes the plain filters
            passed, failed, distinct = plain, {}, []
        else:
            passed, failed, distinct = _filter_batch(framework, state, pod, plain, passing)
        for name, status in special.items():
            if not status.is_success():
                failed[name] = status
        if not failed:
            if len(passed) + len(special) > want:
                chunk = chunk[:want]
            feasible.extend(chunk if special else passed[:want])
            evaluated += len(chunk)
            continue
        explicit = statuses.statuses
        kept: dict[str, Status]
        if not special and not any([v.code is Code.Error for v in distinct]):  # noqa: C419 - a list is faster here
            # The batch keeps evaluation order; the statuses go in in that order too.
            if len(passed) > want:
                chunk = chunk[: chunk.index(passed[want - 1]) + 1]
                passed = passed[:want]
                kept = _in_order(failed, map(_name, chunk))
                distinct = list({id(v): v for v in kept.values()}.values())
            else:
                kept = failed
            feasible.extend(passed)
            explicit.update(kept)
            evaluated += len(chunk)
            _add_plugin_statuses(diagnosis, distinct)
            continue
        kept = {}
        error: Status | None = None
        for i, ni in enumerate(chunk):  # evaluation order, as upstream fills its slice
            if len(feasible) == num_nodes_to_find:
                chunk = chunk[:i]
                break
            verdict = failed.get(ni.name)
            if verdict is None:
                feasible.append(ni)
            elif verdict.code is Code.Error:
                error = error or verdict
            else:
                explicit[ni.name] = kept[ni.name] = verdict
        if error is not None:
            return error
        evaluated += len(chunk)
        _add_plugin_statuses(diagnosis, kept.values())
    return feasible


def find_nodes_that_fit_pod(
    pod: Pod,
    snapshot: Snapshot,
    *,
    framework: Framework | None = None,
    state: CycleState | None = None,
    percentage_of_nodes_to_score: int = 100,
    start_index: int = 0,
    has_scoring: bool = True,
    uniform: bool = True,
) -> tuple[list[NodeInfo], Diagnosis, int]:
    """``findNodesThatFitPod``: feasible nodes, the diagnosis, and the next start index.

    * PreFilter runs once. A rejection fails the pod on every node: all nodes take that status
      (as the absent-nodes status, so preemption sees it) and its message becomes the
      ``pre_filter_msg`` of the FitError (``0/N nodes are available: <msg>.``). A plugin may
      restrict the nodes to evaluate (NodeAffinity's ``metadata.name`` terms); the others take
      ``node(s) didn't satisfy plugin(s) [<plugins>]``.
    * A pod with ``status.nominatedNodeName`` tries that node first; if it passes, it is the
      only feasible node and nothing else is evaluated.
    * Filter runs per node with the nominated-pods rule (``RunFilterPluginsWithNominatedPods``):
      on a node with nominated pods of equal or higher priority the pod must fit with them
      added and, if that passes, without them. Plugins that offer ``filter_nodes`` judge the
      nodes in batches, with the verdicts of calling ``filter`` node by node in profile order,
      first rejection wins.
    * The walk stops after ``num_feasible_nodes_to_find`` feasible nodes. It starts at
      ``start_index`` and wraps; the next cycle starts where this one stopped
      (``nextStartNodeIndex``) so every node gets its turn. Upstream walks in parallel, so
      which nodes are found first varies there; here the walk is sequential and deterministic.

    An Error from a plugin raises ``SchedulingError``. ``uniform=False`` turns the
    whole-cluster fast path (``uniform_filter_verdict``) off; the tests compare both.
    """
    fwk = framework if framework is not None else default_framework()
    cycle = state if state is not None else CycleState()
    diagnosis = Diagnosis()
    all_nodes = snapshot.node_info_list
    status = fwk.run_pre_filter_plugins(cycle, pod, snapshot)
    if not status.is_success():
        if not status.is_rejected():
            raise SchedulingError(status)
        diagnosis.node_to_status.set_absent_nodes_status(status)
        diagnosis.pre_filter_msg = status.message
        diagnosis.add_plugin_status(status)
        return [], diagnosis, start_index

    if pod.nominated_node_name:
        nominated = snapshot.get_node_info(pod.nominated_node_name)
        if nominated is not None:
            found = _find_nodes_that_pass_filters(
                fwk,
                cycle,
                pod,
                snapshot,
                diagnosis=diagnosis,
                nodes=[nominated],
                num_nodes_to_find=1,
                start_index=0,
            )
            if isinstance(found, Status):
                raise SchedulingError(found)
            if found:
                return found, diagnosis, start_index

    nodes = all_nodes
    # PreFilterResult: plugins that name the only nodes worth evaluating.
    restricting: list[tuple[str, frozenset[str]]] = []
    for plugin in fwk.filter_plugins:
        result = _pre_filter_result(plugin)
        if result is None or plugin.name in cycle.skip_filter_plugins:
            continue
        names = result(cycle)
        if names is not None:
            restricting.append((plugin.name, names))
    if restricting:
        # Upstream records these plugins as the ones that made the other nodes unschedulable.
        diagnosis.unschedulable_plugins.update(name for name, _ in restricting)
        allowed = frozenset.intersection(*(names for _, names in restricting))
        plugin_names = " ".join(sorted(name for name, _ in restricting))
        if not allowed:
            which = (
                f"plugin {plugin_names}"
                if len(restricting) == 1
                else f"plugin(s) [{plugin_names}] simultaneously"
            )
            rejection = Status(Code.UnschedulableAndUnresolvable, f"node(s) didn't satisfy {which}")
            diagnosis.node_to_status.set_absent_nodes_status(rejection)
            diagnosis.pre_filter_msg = rejection.message
            return [], diagnosis, start_index
        # Snapshot order (upstream iterates a Go map here). A few names (a daemon pod's
        # one node) are looked up rather than found by a walk over every node.
        if len(allowed) * 8 < len(all_nodes):
            positions = snapshot.node_positions()
            nodes = [all_nodes[i] for i in sorted(positions[n] for n in allowed if n in positions)]
        else:
            nodes = [ni for ni in all_nodes if ni.name in allowed]
        diagnosis.node_to_status.set_absent_nodes_status(
            Status(
                Code.UnschedulableAndUnresolvable,
                f"node(s) didn't satisfy plugin(s) [{plugin_names}]",
            )
        )

    num_to_find = num_feasible_nodes_to_find(percentage_of_nodes_to_score, len(nodes))
    if not has_scoring:
        num_to_find = 1
    verdict: Status | None = None
    passing: frozenset[str] = frozenset()
    # The whole-cluster verdicts pay off over many nodes, not over the few a PreFilterResult
    # names (a daemon pod's one node): those are filtered as they are.
    if uniform and fwk.filter_plugins and (nodes is all_nodes or len(nodes) > _FEW_NODES):
        verdict, passing = _uniform_verdicts(fwk, cycle, pod, snapshot)
        if nodes is not all_nodes:
            verdict = None  # the fast path for rejections walks every node
    found = _find_nodes_that_pass_filters(
        fwk,
        cycle,
        pod,
        snapshot,
        diagnosis=diagnosis,
        nodes=nodes,
        num_nodes_to_find=num_to_find,
        start_index=start_index,
        uniform=verdict,
        passing=passing,
    )
    if isinstance(found, Status):
        raise SchedulingError(found)
    processed = len(found) + len(diagnosis.node_to_status)
    next_start = (start_index + processed) % len(all_nodes) if all_nodes else 0
    return found, diagnosis, next_start


def find_feasible_nodes(
    pod: Pod,
    snapshot: Snapshot,
    *,
    framework: Framework | None = None,
    state: CycleState | None = None,
    percentage_of_nodes_to_score: int = 100,
    start_index: int = 0,
) -> tuple[list[NodeInfo], NodeToStatus]:
    """The nodes where ``pod`` fits, and the status of every node that does not.

    Evaluates every node by default (what preemption needs; ``schedule_one`` uses kube's
    adaptive default); pass kube's ``percentage_of_nodes_to_score`` (0 for the
    adaptive default) to stop early as the scheduler does. After a PreFilter rejection every
    node has the absent-nodes status (the rejection) and no explicit entry. A plugin Error
    raises ``SchedulingError``. ``state`` (optional) receives the PreFilter state.
    """
    feasible, diagnosis, _ = find_nodes_that_fit_pod(
        pod,
        snapshot,
        framework=framework,
        state=state,
        percentage_of_nodes_to_score=percentage_of_nodes_to_score,
        start_index=start_index,
    )
    return feasible, diagnosis.node_to_status


def select_host(scores: NodeScores, rng: random.Random | None = None) -> str:
    """The highest total; ties to the first in evaluation order, or, with ``rng``, to a
    uniformly random one by reservoir sampling as ``selectHost`` did (kube >= 1.32 pops a
    heap instead, whose tie order is not specified)."""
    totals = scores.total_scores
    if not totals:
        return ""
    best = max(totals)
    if rng is None:
        return scores.node_infos[totals.index(best)].name
    selected = ""
    count = 0
    for ni, total in zip(scores.node_infos, totals, strict=True):
        if total == best:
            count += 1
            if rng.randrange(count) == 0:
                selected = ni.name
    return selected


@dataclass(slots=True, kw_only=True)
class ScheduleResult:
    """``ScheduleResult`` plus what a caller needs to act on or explain the decision.

    ``suggested_host`` is "" when the pod fits nowhere; then ``status`` is Unschedulable and
    ``message`` the FitError text (an Error status means a plugin failed). ``scores`` holds
    the weighted per-plugin scores of the scored nodes (None when the single feasible node was
    taken without scoring). ``warning`` names the pod's features that were not evaluated.
    """

    suggested_host: str = ""
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    next_start_index: int = 0
    node_statuses: NodeToStatus = field(default_factory=NodeToStatus)
    status: Status = field(default_factory=Status)
    message: str = ""
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    scores: NodeScores | None = None
    warning: str = ""

    @property
    def node_scores(self) -> dict[str, dict[str, int]]:
        """Node name -> plugin name -> weighted score, for the scored nodes."""
        if self.scores is None:
            return {}
        return {name: self.scores.for_node(name) for name in self.scores.node_names}

    @property
    def succeeded(self) -> bool:
        return bool(self.suggested_host)


def _profile(profile: SchedulerProfile | None) -> SchedulerProfile:
    assert profile is not None  # set whenever framework or score_plugins is None
    return profile


def _failed(status: Status, *, start_index: int, warning: str) -> ScheduleResult:
    result = ScheduleResult(
        next_start_index=start_index, status=status, message=status.message, warning=warning
    )
    result.diagnosis.unmodelled = warning
    return result


def schedule_one(
    pod: Pod,
    snapshot: Snapshot,
    *,
    framework: Framework | None = None,
    score_plugins: Sequence[ScorePlugin] | None = None,
    percentage_of_nodes_to_score: int | None = None,
    start_index: int = 0,
    rng: random.Random | None = None,
    config: KubeSchedulerConfiguration | None = None,
) -> ScheduleResult:
    """``schedulePod``: pick a node for ``pod`` without changing ``snapshot``.

    One feasible node is chosen without scoring; otherwise the Score plugins (run by
    ``scheduler.framework.prioritize_nodes``) give a weighted total per node and
    ``select_host`` takes the highest.

    The plugins are those of the profile of ``config`` (kube's defaults when None) named by
    the pod's ``schedulerName``; a pod no profile names is another scheduler's: the result
    has a Skip status saying so (``not_this_schedulers``) and no node. ``framework`` and
    ``score_plugins`` replace the profile's plugins, for every pod.

    ``percentage_of_nodes_to_score`` None is the profile's (or the configuration's)
    ``percentageOfNodesToScore``; 0 is kube's adaptive default; 100 evaluates every node.
    ``start_index`` is the previous result's ``next_start_index``.
    """
    warning = unmodelled_warning(pod)
    profile: SchedulerProfile | None = None
    if framework is None or score_plugins is None:
        cfg = config if config is not None else default_configuration()
        profile = cfg.profile_for(pod)
        if profile is None:
            skip = not_this_schedulers(pod, cfg)
            assert skip is not None
            return _failed(skip, start_index=start_index, warning=warning)
        if percentage_of_nodes_to_score is None:
            percentage_of_nodes_to_score = cfg.percentage_for(profile)
    fwk = framework if framework is not None else _profile(profile).framework
    plugins: Sequence[ScorePlugin] = (
        _profile(profile).score_plugins if score_plugins is None else list(score_plugins)
    )
    num_all = len(snapshot.node_info_list)
    if num_all == 0:
        return _failed(
            Status(Code.Error, ERR_NO_NODES_AVAILABLE), start_index=start_index, warning=warning
        )
    state = CycleState()
    try:
        feasible, diagnosis, next_start = find_nodes_that_fit_pod(
            pod,
            snapshot,
            framework=fwk,
            state=state,
            percentage_of_nodes_to_score=percentage_of_nodes_to_score or 0,
            start_index=start_index,
            has_scoring=bool(plugins),
        )
    except SchedulingError as exc:
        return _failed(exc.status, start_index=start_index, warning=warning)
    diagnosis.unmodelled = warning
    statuses = diagnosis.node_to_status
    result = ScheduleResult(
        evaluated_nodes=len(feasible) + len(statuses),
        feasible_nodes=len(feasible),
        next_start_index=next_start,
        node_statuses=statuses,
        diagnosis=diagnosis,
        warning=warning,
    )
    if not feasible:
        result.message = fit_error_message(
            num_all,
            statuses,
            pre_filter_msg=diagnosis.pre_filter_msg,
            post_filter_msg=diagnosis.post_filter_msg,
        )
        result.status = Status(Code.Unschedulable, result.message)
    elif len(feasible) == 1:
        result.suggested_host = feasible[0].name
    else:
        scores = prioritize_nodes(state, pod, feasible, snapshot, plugins)
        if isinstance(scores, Status):
            result.status, result.message = scores, scores.message
        else:
            result.scores = scores
            result.suggested_host = select_host(scores, rng)
    return result
