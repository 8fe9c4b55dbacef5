"""The kube-scheduler framework: what plugins implement, what they answer, and the runs of a
profile's Filter and Score plugins (kube's ``pkg/scheduler/framework``: ``interface.go``,
``cycle_state.go``, ``runtime/framework.go``, and ``prioritizeNodes``). The plugins themselves
are in ``scheduler.plugins``.

``Status`` and ``Code`` are the result type: an expected outcome (a node does not fit) is a
status, never an exception, and its reasons are shown to users unchanged. ``None`` stands for a
nil status, which means Success, exactly as in Go.
"""

from __future__ import annotations

import enum
import operator
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS  # its old home, kept for users
from scheduler.snapshot import NodeInfo

if TYPE_CHECKING:
    from kube.objects import Pod
    from scheduler.snapshot import Snapshot

__all__ = [
    "DEFAULT_PLUGIN_WEIGHTS",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "NODE_LOCAL_PLUGINS",
    "SUCCESS",
    "BatchFilterPlugin",
    "Code",
    "CycleState",
    "FilterBatchResult",
    "FilterPlugin",
    "Framework",
    "NodePluginScores",
    "NodeScores",
    "NodeToStatus",
    "PluginScore",
    "PreFilterResultPlugin",
    "QueueingHint",
    "ScorePlugin",
    "Status",
    "filter_status",
    "fit_error_message",
    "is_node_local",
    "is_success",
    "node_local_signature",
    "prioritize_nodes",
]


MAX_NODE_SCORE: Final = 100
MIN_NODE_SCORE: Final = 0

#: kube Filter plugins whose verdict on a node depends only on the pod and that node: a verdict
#: found once (preemption's outcomes, a nominated node's filter result) can be reused for another
#: pod with the same ``node_local_signature`` on the same, unchanged node.
NODE_LOCAL_PLUGINS: Final = frozenset(
    {
        "NodeResourcesFit",
        "NodeName",
        "NodeUnschedulable",
        "NodeAffinity",
        "TaintToleration",
        "NodePorts",
    }
)


def is_node_local(plugin: FilterPlugin) -> bool:
    """``plugin.node_local`` when it says, else whether it is one of ``NODE_LOCAL_PLUGINS``."""
    flag = getattr(plugin, "node_local", None)
    if isinstance(flag, bool):
        return flag
    return plugin.name in NODE_LOCAL_PLUGINS


def node_local_signature(active: Sequence[FilterPlugin], pod: Pod) -> Hashable | None:
    """Everything of ``pod`` the ``active`` Filter plugins may read (identity and status
    excluded), or None when one of them is not node-local. Labels and annotations are left
    out when every plugin is one of kube's own node-local ones (no ``node_local`` override):
    none of those reads them, and a pod's unique labels (scheduler_perf's ``signature``)
    would otherwise make every pod a stranger."""
    if not all(is_node_local(p) for p in active):
        return None
    metadata = not all(
        p.name in NODE_LOCAL_PLUGINS and getattr(p, "node_local", None) is None for p in active
    )
    return (
        frozenset(p.name for p in active),
        pod.priority,
        pod.namespace,
        tuple(sorted(pod.labels.items())) if metadata else None,
        tuple(sorted(pod.requests.items())),
        pod.node_name,
        tuple(sorted(pod.node_selector.items())),
        repr(pod.affinity) if pod.affinity is not None else None,
        pod.tolerations,
        repr(pod.containers),
        repr(pod.init_containers) if pod.init_containers else None,
        tuple(sorted(pod.overhead.items())),
        tuple(sorted(pod.pod_requests.items())),
        pod.volumes,
        pod.scheduler_name,
        pod.scheduling_gates,
        tuple(sorted(pod.annotations.items())) if metadata else None,
    )


class Code(enum.Enum):
    """``framework.Code``; the member names are the Go constant names."""

    Success = 0
    Error = 1
    Unschedulable = 2
    UnschedulableAndUnresolvable = 3
    Wait = 4
    Skip = 5
    Pending = 6


class QueueingHint(enum.Enum):
    """``framework.QueueingHint``: a plugin's answer to "may this cluster event make the pod I
    rejected schedulable?" (``QueueingHintFn``, pkg/scheduler/framework/types.go). ``Queue``
    moves the pod on (after its backoff); ``QueueSkip`` leaves it where it waits."""

    QueueSkip = 0
    Queue = 1


class Status:
    """``framework.Status``: a code, the reasons shown to users, and the plugin that said so."""

    __slots__ = ("code", "plugin", "reasons")

    def __init__(
        self,
        code: Code = Code.Success,
        reasons: str | Iterable[str] = (),
        *,
        plugin: str = "",
    ) -> None:
        self.code = code
        self.reasons: tuple[str, ...] = (reasons,) if isinstance(reasons, str) else tuple(reasons)
        self.plugin = plugin

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code is Code.Success

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        code = self.code  # identity tests: hashing an Enum member runs Python code
        return (
            code is Code.Unschedulable
            or code is Code.UnschedulableAndUnresolvable
            or code is Code.Pending
        )

    def is_skip(self) -> bool:
        return self.code is Code.Skip

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin=plugin)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self.code is other.code and self.reasons == other.reasons

    def __hash__(self) -> int:
        return hash((self.code, self.reasons))

    def __repr__(self) -> str:
        by = f", plugin={self.plugin!r}" if self.plugin else ""
        return f"Status({self.code.name}, {list(self.reasons)!r}{by})"


SUCCESS: Final = Status()


def is_success(status: Status | None) -> bool:
    """``Status.IsSuccess``: a nil status is a success."""
    return status is None or status.code is Code.Success


class NodeToStatus:
    """``framework.NodeToStatus``: explicit statuses per node plus one for all absent nodes.

    Nodes that passed filtering have no entry; a node with no entry takes
    ``absent_nodes_status`` (UnschedulableAndUnresolvable by default), which is why preemption
    skips nodes it knows nothing about.
    """

    __slots__ = ("absent_nodes_status", "statuses")

    def __init__(
        self,
        statuses: dict[str, Status] | None = None,
        absent_nodes_status: Status | None = None,
    ) -> None:
        self.statuses: dict[str, Status] = dict(statuses or {})
        self.absent_nodes_status = absent_nodes_status or Status(Code.UnschedulableAndUnresolvable)

    def get(self, node_name: str) -> Status:
        return self.statuses.get(node_name, self.absent_nodes_status)

    def set(self, node_name: str, status: Status) -> None:
        self.statuses[node_name] = status

    def set_absent_nodes_status(self, status: Status) -> None:
        self.absent_nodes_status = status

    def __len__(self) -> int:
        return len(self.statuses)

    def __iter__(self) -> Iterator[tuple[str, Status]]:
        return iter(self.statuses.items())

    def nodes_for_status_code(self, node_infos: Iterable[NodeInfo], code: Code) -> list[NodeInfo]:
        """``NodesForStatusCode``: the nodes whose (possibly absent) status has ``code``."""
        absent_matches = self.absent_nodes_status.code is code
        out: list[NodeInfo] = []
        statuses = self.statuses
        for ni in node_infos:
            st = statuses.get(ni.name)
            if (st is None and absent_matches) or (st is not None and st.code is code):
                out.append(ni)
        return out


def fit_error_message(
    num_all_nodes: int,
    node_to_status: NodeToStatus,
    *,
    pre_filter_msg: str = "",
    post_filter_msg: str = "",
) -> str:
    """``FitError.Error()``.

    ``0/N nodes are available: <histogram>.`` where the histogram counts each reason over the
    explicit statuses plus the absent nodes' status for nodes without one, formatted
    ``"<count> <reason>"``, sorted as strings and joined by ", ". A PreFilter rejection
    replaces the histogram; a PostFilter message is appended after a space.
    """
    msg = f"0/{num_all_nodes} nodes are available:"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    else:
        counts: Counter[str] = Counter()
        values = list(node_to_status.statuses.values())
        if values and values.count(values[0]) == len(values):
            # One status for every node (a failed cycle on a big cluster): list.count compares
            # identical objects by pointer, and equal statuses have equal reasons.
            for reason in values[0].reasons:
                counts[reason] += len(values)
        else:
            # Many nodes share one reason list: count each distinct list once, then expand.
            for reasons, n in Counter(s.reasons for s in values).items():
                for reason in reasons:
                    counts[reason] += n
        absent = num_all_nodes - len(node_to_status)
        if absent > 0:
            for reason in node_to_status.absent_nodes_status.reasons:
                counts[reason] += absent
        histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
        if histogram:
            msg += f" {', '.join(histogram)}."
    if post_filter_msg:
        msg += f" {post_filter_msg}"
    return msg


def filter_status(status: Status, plugin_name: str) -> Status:
    """What ``RunFilterPlugins`` makes of a plugin's non-success status: a rejection tagged
    with the plugin (the same object when already tagged), anything else an Error."""
    if not status.is_rejected():
        return Status(
            Code.Error,
            f'running "{plugin_name}" filter plugin: {status.message}',
            plugin=plugin_name,
        )
    return status if status.plugin == plugin_name else status.with_plugin(plugin_name)


class CycleState:
    """Per-scheduling-cycle storage for plugins (``framework.CycleState``).

    Values that have a ``clone()`` method are cloned by ``clone()``; others are shared, so
    plugins must store immutable data or give it a ``clone``.
    """

    __slots__ = ("data", "skip_filter_plugins")

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()

    def read(self, key: str) -> Any:
        return self.data.get(key)

    def write(self, key: str, value: Any) -> None:
        self.data[key] = value

    def clone(self) -> CycleState:
        out = CycleState()
        for k, v in self.data.items():
            clone = getattr(v, "clone", None)
            out.data[k] = clone() if callable(clone) else v
        out.skip_filter_plugins = set(self.skip_filter_plugins)
        return out


class FilterPlugin(Protocol):
    """A Filter plugin with its PreFilter and PreFilterExtensions (add/remove pod).

    ``pre_filter`` returns None/Success to run ``filter`` for this pod, ``Status(Code.Skip)``
    to be skipped at Filter, or a rejection that fails the pod on every node.
    ``add_pod``/``remove_pod`` keep the PreFilter state right when preemption or the
    nominated-pods pass changes a node's pods; plugins without state return None.
    """

    name: str

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None: ...

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None: ...


class ScorePlugin(Protocol):
    """PreScore + Score + NormalizeScore of one plugin, with its profile weight."""

    name: str
    weight: int

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        """None/Success to score, Skip to not score this pod, anything else is an error."""
        ...

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        """The raw score of each node, in order."""
        ...

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        """Map raw scores to 0..100 in place (a no-op for plugins without NormalizeScore)."""
        ...


FilterBatchResult = tuple[list[NodeInfo], list[tuple[NodeInfo, Status]]]
"""The nodes that passed (in input order) and the rejected nodes with their status."""


@runtime_checkable
class BatchFilterPlugin(Protocol):
    """A Filter plugin that can judge many nodes in one call.

    kube-scheduler calls ``Filter`` once per node, in parallel goroutines. Python pays a
    function call and several attribute reads per plugin per node, which dominates a
    5000-node cluster, so a plugin may also offer ``filter_nodes``: the same verdicts for a
    whole list of nodes at once, usually a list comprehension that lets the nodes with nothing
    to check through without a call. ``filter_nodes`` must agree with ``filter`` node by node
    (the tests check this with random clusters); the scheduler uses it whenever a node has no
    nominated pods to account for.
    """

    name: str

    def filter_nodes(
        self, state: CycleState, pod: Pod, node_infos: list[NodeInfo]
    ) -> FilterBatchResult: ...


@runtime_checkable
class PreFilterResultPlugin(Protocol):
    """A plugin whose PreFilter may restrict the nodes to evaluate (``PreFilterResult``; only
    NodeAffinity does in the default profile)."""

    name: str

    def pre_filter_result(self, state: CycleState) -> frozenset[str] | None:
        """The node names to evaluate, or None for all nodes."""
        ...


class Framework:
    """Runs a profile's Filter plugins, in order, the way ``frameworkImpl`` does: PreFilter once
    per pod (a plugin answering Skip is not run at Filter), Filter per node stopping at the
    first rejection, and ``run_filter_plugins_with_nominated_pods`` with its two passes:
    nominated pods of equal or higher priority are added to the node first, and if any were
    added the filters run again without them, so the pod must fit both with and without the
    room they reserve. ``fit_error_message`` words the outcome (``FitError.Error()``)."""

    __slots__ = ("filter_plugins",)

    def __init__(self, filter_plugins: Sequence[FilterPlugin]) -> None:
        self.filter_plugins: tuple[FilterPlugin, ...] = tuple(filter_plugins)

    def run_pre_filter_plugins(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        """``RunPreFilterPlugins``: Success or a rejection (with its plugin); records skips.

        UnschedulableAndUnresolvable stops at once. Unschedulable lets the remaining plugins
        run (so their state exists for preemption, kubernetes#119770) and the last such
        status is returned. Any other code is an Error.
        """
        state.skip_filter_plugins.clear()
        rejected: Status | None = None
        for plugin in self.filter_plugins:
            status = plugin.pre_filter(state, pod, snapshot)
            if status is None or status.code is Code.Success:
                continue
            if status.code is Code.Skip:
                state.skip_filter_plugins.add(plugin.name)
                continue
            if status.code is Code.UnschedulableAndUnresolvable:
                return status.with_plugin(plugin.name)
            if status.code is Code.Unschedulable:
                rejected = status.with_plugin(plugin.name)
                continue
            return Status(
                Code.Error,
                f'running PreFilter plugin "{plugin.name}": {status.message}',
                plugin=plugin.name,
            )
        return rejected if rejected is not None else SUCCESS

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        """The first non-success status, tagged with its plugin; Success otherwise."""
        skip = state.skip_filter_plugins
        for plugin in self.filter_plugins:
            if skip and plugin.name in skip:
                continue
            status = plugin.filter(state, pod, node_info)
            if status is None or status.code is Code.Success:
                continue
            return filter_status(status, plugin.name)
        return SUCCESS

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status:
        return self._run_extension(state, pod, pod_to_add, node_info, add=True)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status:
        return self._run_extension(state, pod, pod_to_remove, node_info, add=False)

    def _run_extension(
        self, state: CycleState, pod: Pod, other: Pod, node_info: NodeInfo, *, add: bool
    ) -> Status:
        skip = state.skip_filter_plugins
        for plugin in self.filter_plugins:
            if skip and plugin.name in skip:
                continue
            call: Callable[..., Status | None] = plugin.add_pod if add else plugin.remove_pod
            status = call(state, pod, other, node_info)
            if status is not None and status.code is not Code.Success:
                verb = "AddPod" if add else "RemovePod"
                return Status(
                    Code.Error,
                    f'running {verb} on PreFilter plugin "{plugin.name}": {status.message}',
                    plugin=plugin.name,
                )
        return SUCCESS

    def run_filter_plugins_with_nominated_pods(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        nominated_pods: Sequence[Pod] = (),
    ) -> Status:
        """``RunFilterPluginsWithNominatedPods`` for ``nominated_pods`` of this node."""
        state_to_use, info_to_use, pods_added = state, node_info, False
        if nominated_pods:
            prio = pod.priority
            for other in nominated_pods:
                if other.priority >= prio and other.key != pod.key:
                    if not pods_added:
                        state_to_use = state.clone()
                        info_to_use = node_info.clone()
                        pods_added = True
                    info_to_use.add_pod(other)
                    added = self.run_pre_filter_extension_add_pod(
                        state_to_use, pod, other, info_to_use
                    )
                    if not added.is_success():
                        return added
        status = self.run_filter_plugins(state_to_use, pod, info_to_use)
        if not status.is_success() or not pods_added:
            return status
        return self.run_filter_plugins(state, pod, node_info)


# --- Score: running a profile's Score plugins --------------------------------------------------


@dataclass(frozen=True, slots=True)
class PluginScore:
    """``PluginScore``: a plugin's weighted score for one node."""

    name: str
    score: int


@dataclass(frozen=True, slots=True)
class NodePluginScores:
    """``NodePluginScores``: one node's weighted plugin scores and their sum."""

    name: str
    scores: tuple[PluginScore, ...]
    total_score: int


class NodeScores:
    """The scores of the scored nodes, kept column-wise (one list per plugin): the weighted
    score of every plugin for every node, so a caller can explain a choice."""

    __slots__ = ("_node_names", "node_infos", "plugin_names", "plugin_scores", "total_scores")

    def __init__(
        self,
        node_infos: Sequence[NodeInfo],
        plugin_names: list[str],
        plugin_scores: list[list[int]],
        total_scores: list[int],
    ) -> None:
        self.node_infos = node_infos
        self.plugin_names = plugin_names
        self.plugin_scores = plugin_scores  # weighted; plugin_scores[p][node index]
        self.total_scores = total_scores
        self._node_names: list[str] | None = None

    @property
    def node_names(self) -> list[str]:
        if self._node_names is None:
            self._node_names = [ni.name for ni in self.node_infos]
        return self._node_names

    def __len__(self) -> int:
        return len(self.node_infos)

    def index_of(self, node_name: str) -> int:
        return self.node_names.index(node_name)

    def for_node(self, node_name: str) -> dict[str, int]:
        """Plugin name -> weighted score for one node."""
        i = self.index_of(node_name)
        return {p: col[i] for p, col in zip(self.plugin_names, self.plugin_scores, strict=True)}

    def as_list(self) -> list[NodePluginScores]:
        out = []
        for i, name in enumerate(self.node_names):
            scores = tuple(
                PluginScore(p, col[i])
                for p, col in zip(self.plugin_names, self.plugin_scores, strict=True)
            )
            out.append(NodePluginScores(name, scores, self.total_scores[i]))
        return out


def prioritize_nodes(
    state: CycleState,
    pod: Pod,
    node_infos: Sequence[NodeInfo],
    snapshot: Snapshot,
    score_plugins: Sequence[ScorePlugin],
) -> NodeScores | Status:
    """``prioritizeNodes`` / ``RunScorePlugins``: the weighted scores of ``node_infos``, or an
    Error status.

    Each plugin's PreScore may answer Skip (the plugin then scores nothing), Score gives a raw
    number per node, NormalizeScore maps them to 0..100 (``MAX_NODE_SCORE``); each score is
    multiplied by the plugin's weight and the weighted scores are summed per node. Without
    score plugins every node scores 1, as upstream.

    A plugin whose normalized scores are within 0..100 by construction says so with
    ``scores_in_range = True`` (the built-in ones, each covered by tests); the range check is
    then skipped, which saves two scans of every column. A column where every node scores the
    same is added to the totals once, as a constant: integer sums do not depend on the order
    of the additions.
    """
    if not score_plugins:
        return NodeScores(node_infos, [], [], [1] * len(node_infos))
    active: list[ScorePlugin] = []
    for plugin in score_plugins:
        status = plugin.pre_score(state, pod, node_infos, snapshot)
        if status is None or status.code is Code.Success:
            active.append(plugin)
        elif status.code is not Code.Skip:
            return Status(
                Code.Error,
                f'running PreScore plugin "{plugin.name}": {status.message}',
                plugin=plugin.name,
            )
    columns: list[list[int]] = []
    varying: list[list[int]] = []
    offset = 0  # the sum of the columns where every node scores the same
    for plugin in active:
        scores = plugin.score_nodes(state, pod, node_infos)
        plugin.normalize_score(state, pod, scores)
        if (
            scores
            and not getattr(plugin, "scores_in_range", False)
            and (min(scores) < MIN_NODE_SCORE or max(scores) > MAX_NODE_SCORE)
        ):
            bad = next(s for s in scores if not MIN_NODE_SCORE <= s <= MAX_NODE_SCORE)
            return Status(
                Code.Error,
                f'plugin "{plugin.name}" returns an invalid score {bad}, it should in the range'
                f" of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                plugin=plugin.name,
            )
        weight = plugin.weight
        if scores and scores.count(scores[0]) == len(scores):
            # One score for every node (no PreferNoSchedule taints, no images, ...): a
            # constant column, added to the totals once at the end.
            scores = [scores[0] * weight] * len(scores)
            offset += scores[0]
        else:
            if weight != 1:
                scores = list(map(operator.mul, scores, repeat(weight)))
            varying.append(scores)
        columns.append(scores)
    # Integer sums: the order of the additions does not change the totals.
    if not varying:
        totals = [offset] * len(node_infos)
    else:
        totals = list(map(operator.add, varying[0], repeat(offset)))
        for scores in varying[1:]:
            totals = list(map(operator.add, totals, scores))
    return NodeScores(node_infos, [p.name for p in active], columns, totals)
