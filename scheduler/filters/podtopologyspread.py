"""PodTopologySpread (PreFilter, Filter, PreScore, Score, NormalizeScore), as in kube 1.32.

``pkg/scheduler/framework/plugins/podtopologyspread`` (``common.go``, ``filtering.go``,
``scoring.go``, ``plugin.go``).

Constraints. A pod's ``topologySpreadConstraints`` are split by ``whenUnsatisfiable``:
``DoNotSchedule`` ones are the Filter's, ``ScheduleAnyway`` ones the Score's. Defaults applied
to each: ``minDomains`` 1, ``nodeAffinityPolicy`` Honor, ``nodeTaintsPolicy`` Ignore; a missing
``labelSelector`` selects no pod; the pod's values of ``matchLabelKeys`` (keys it has) are
ANDed into the selector as ``key=value`` requirements. A pod without constraints of its own
gets the plugin's default constraints — with ``defaulting_type="System"`` (kube's default)
hostname ``maxSkew`` 3 and zone ``maxSkew`` 5, both ScheduleAnyway — but only when
``helper.DefaultSelector`` finds a non-empty selector: the merged selectors of the Services of
its namespace that select it, plus the selector of its controlling ReplicationController,
ReplicaSet or StatefulSet. Otherwise the plugin is skipped for that pod.

Node inclusion. Only nodes carrying every constraint's topology key are counted. Per
constraint, with ``nodeAffinityPolicy: Honor`` a node must also match the pod's nodeSelector
and required node affinity, and with ``nodeTaintsPolicy: Honor`` it must have no NoSchedule /
NoExecute taint the pod does not tolerate. Pods count when they are in the incoming pod's
namespace, match the selector and are not terminating (kubernetes#87621).

Filter. PreFilter counts matching pods per topology pair over all nodes
(``tp_pair_to_match_num``), the number of domains per key (``tp_key_to_domains_num``) and the
two smallest counts per key (``tp_key_to_critical_paths``). A node lacking a constraint's
topology key is UnschedulableAndUnresolvable
``node(s) didn't match pod topology spread constraints (missing required label)``; otherwise,
with ``self`` 1 when the pod matches its own selector, and the global minimum taken as 0 while
fewer than ``minDomains`` domains exist, ``count(node's domain) + self - minimum > maxSkew`` is
Unschedulable ``node(s) didn't match pod topology spread constraints`` — preemption may help,
and ``add_pod``/``remove_pod`` keep the counts right while it removes victims. Counts are keyed
by topology pair, as 1.32 does: two constraints on the same key share their pair counts.

Score. PreScore counts matching pods per topology pair over all nodes, but only for pairs of
the nodes that passed Filter (hostname constraints are counted per node at Score). A node's
raw score is ``round(sum(count * log(domains + 2) + maxSkew - 1))`` over its constraints;
nodes missing a topology key (when the pod has its own constraints or defaults are not the
system's) are ignored and score 0. NormalizeScore maps ``s`` to
``100 * (max + min - s) / max`` (100 for all when ``max`` is 0).

Speed. PreFilter and PreScore sum a node's matching pods over every node of the cluster,
every cycle. A node's count depends only on its pods, the selector and the namespace, so it is
kept in ``NodeInfo.memo`` (emptied whenever the node changes). The sums per topology pair are
kept too (``SpreadCounts``, per snapshot and per constraint set and pod shape): built once by
the walk over every node, then brought up to date from ``Snapshot.pod_changes`` — only the
nodes whose pods changed are counted again — and rebuilt when a node is added, removed or
replaced. The pairs stay in the order the walk first meets them, so the critical paths (the
two smallest counts of a key, ties to the first met) are those of the walk. ``filter_nodes``
judges a batch of nodes with the per-constraint numbers (minimum, self match) worked out once.
All must equal ``filter``, ``count_pods_match_selector`` and the walk node by node (the
property tests check it; ``use_index = False`` on an instance takes the walk).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any, Final, Literal

from kube.labels import LabelSelector
from kube.objects import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    Node,
    Pod,
    TopologySpreadConstraint,
)
from scheduler.framework import Code, CycleState, FilterBatchResult, Status
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.plugins.helper import SKIP, remember
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity
from scheduler.plugins.tainttoleration import find_matching_untolerated_taint
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "LABEL_HOSTNAME",
    "LABEL_TOPOLOGY_ZONE",
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "CriticalPaths",
    "PodTopologySpread",
    "PreFilterState",
    "PreScoreState",
    "SpreadConstraint",
    "default_selector",
]

NAME: Final = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH: Final = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH: Final = (
    ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
)
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME

LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE: Final = "topology.kubernetes.io/zone"
HONOR: Final = "Honor"
IGNORE: Final = "Ignore"
MAX_INT32: Final = 2**31 - 1
MAX_NODE_SCORE: Final = 100

SYSTEM_DEFAULT_CONSTRAINTS: Final = (
    {"maxSkew": 3, "topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY},
    {"maxSkew": 5, "topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY},
)

_LABEL_REJECT: Final = Status(
    Code.UnschedulableAndUnresolvable, ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME
)
_SKEW_REJECT: Final = Status(Code.Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)

TopologyPair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """``topologySpreadConstraint``: a constraint with its defaults applied.

    ``selector`` None is ``labels.Nothing()``: it selects no pod.
    """

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def selects(self, labels: Mapping[str, str]) -> bool:
        return self.selector is not None and self.selector.matches(labels)

    def match_node_inclusion_policies(
        self, pod: Pod, node: Node, required: RequiredNodeAffinity
    ) -> bool:
        """``matchNodeInclusionPolicies``: does this node count for this constraint?"""
        if self.node_affinity_policy == HONOR and not required.match(node):
            return False
        return not (
            self.node_taints_policy == HONOR
            and find_matching_untolerated_taint(node.taints, pod.tolerations) is not None
        )


def node_labels_match_spread_constraints(
    labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]
) -> bool:
    """Whether the node has every constraint's topology key."""
    return all(c.topology_key in labels for c in constraints)


def count_pods_match_selector(pods: Iterable[Pod], selector: LabelSelector | None, ns: str) -> int:
    """``countPodsMatchSelector``: terminating pods and other namespaces do not count."""
    if selector is None:
        return 0
    return sum(
        1
        for p in pods
        if p.deletion_timestamp is None and p.namespace == ns and selector.matches(p.labels)
    )


def _count_key(selector: LabelSelector | None, ns: str) -> str:
    """The ``NodeInfo.memo`` key of a node's count of pods matching ``selector`` in ``ns``."""
    return f"{NAME}/count/{ns}/{selector.requirements!r}" if selector is not None else ""


def _match_count(ni: NodeInfo, selector: LabelSelector | None, ns: str, key: str) -> int:
    """``count_pods_match_selector(ni.pods, selector, ns)``, remembered until ``ni`` changes;
    ``key`` is ``_count_key(selector, ns)``."""
    if selector is None:
        return 0
    count: int | None = ni.memo.get(key)
    if count is None:
        count = remember(ni.memo, key, count_pods_match_selector(ni.pods, selector, ns))
    return count


class SpreadCounts:
    """Pods matching each counted constraint, summed per topology pair over every node.

    ``pairs`` are in the order the walk over ``snapshot.node_info_list`` first meets them
    (node by node, constraint by constraint); ``by_pair`` holds their sums in that order, and
    ``key_values`` / ``key_nums`` the same per topology key. A node counts for a constraint
    when it has the keys in ``required_keys``, passes the pod's required node affinity if
    inclusion policies are off, and passes the constraint's inclusion policies (checked only
    where ``checks`` says they can exclude a node); its pair is ``(topology key, label value
    or "")``. ``refresh`` follows ``Snapshot.pod_changes``.
    """

    __slots__ = (
        "by_pair",
        "cursor",
        "entries",
        "key_nums",
        "key_values",
        "layout",
        "pairs",
    )

    def __init__(
        self,
        snapshot: Snapshot,
        pod: Pod,
        constraints: Sequence[SpreadConstraint],
        *,
        required_keys: Sequence[str],
        checks: Sequence[bool],
        policies: bool,
    ) -> None:
        self.layout = snapshot.layout_generation
        self.cursor, _ = snapshot.pod_changes(0)
        self.pairs: list[TopologyPair] = []
        self.by_pair: dict[TopologyPair, int] = {}  # the sums, in the order pairs were met
        self.key_values: dict[str, list[str]] = {}
        self.key_nums: dict[str, list[int]] = {}
        # node name -> [[pair position, key position, selector, count key, count], ...]
        self.entries: dict[str, list[list[Any]]] = {}
        required = RequiredNodeAffinity(pod)
        ns = pod.namespace
        count_keys = [_count_key(c.selector, ns) for c in constraints]
        index: dict[TopologyPair, tuple[int, int]] = {}  # pair -> (position, key position)
        pairs, by_pair = self.pairs, self.by_pair
        key_values, key_nums = self.key_values, self.key_nums
        for ni in snapshot.node_info_list:
            node = ni.node
            if node is None:
                continue
            if not policies and not required.match(node):
                continue
            labels = node.labels
            if not all(map(labels.__contains__, required_keys)):
                continue
            mine: list[list[Any]] = []
            for c, count_key, check in zip(constraints, count_keys, checks, strict=True):
                if check and not c.match_node_inclusion_policies(pod, node, required):
                    continue
                key = c.topology_key
                pair = (key, labels.get(key, ""))
                at = index.get(pair)
                if at is None:
                    values = key_values.setdefault(key, [])
                    at = index[pair] = (len(pairs), len(values))
                    pairs.append(pair)
                    by_pair[pair] = 0
                    values.append(pair[1])
                    key_nums.setdefault(key, []).append(0)
                pos, kpos = at
                count = _match_count(ni, c.selector, ns, count_key)
                if count:
                    by_pair[pair] += count
                    key_nums[key][kpos] += count
                mine.append([pos, kpos, c.selector, count_key, count])
            if mine:
                self.entries[ni.name] = mine

    def refresh(self, snapshot: Snapshot, ns: str) -> bool:
        """Take the pod changes since the last call; False when a rebuild is needed."""
        if snapshot.layout_generation != self.layout:
            return False
        cursor, changed = snapshot.pod_changes(self.cursor)
        if changed is None:
            return False
        self.cursor = cursor
        if not changed:
            return True
        entries, by_pair, pairs, key_nums = self.entries, self.by_pair, self.pairs, self.key_nums
        seen: set[str] = set()
        for ni in changed:
            name = ni.name
            if name in seen:
                continue
            seen.add(name)
            mine = entries.get(name)
            if mine is None:
                continue
            for entry in mine:
                pos, kpos, selector, count_key, old = entry
                new = _match_count(ni, selector, ns, count_key)
                if new != old:
                    entry[4] = new
                    pair = pairs[pos]
                    by_pair[pair] += new - old
                    key_nums[pair[0]][kpos] += new - old
        return True

    def counts(self) -> dict[TopologyPair, int]:
        """A copy of the sums (copying a dict does not rehash its keys)."""
        return self.by_pair.copy()

    def critical_paths(self, key: str) -> CriticalPaths:
        """What ``CriticalPaths.update`` over the key's pairs in order leaves: the first met
        pair of the smallest count, then the first met of the smallest among the others."""
        values, nums = self.key_values.get(key), self.key_nums.get(key)
        if not values or not nums:
            return CriticalPaths()
        m0 = min(nums)
        i0 = nums.index(m0)
        if len(nums) == 1:
            return CriticalPaths((values[i0], m0))
        try:
            i1 = nums.index(m0, i0 + 1)
        except ValueError:
            rest = nums[:i0] + nums[i0 + 1 :]
            i1 = nums.index(min(rest))
        return CriticalPaths((values[i0], m0), (values[i1], nums[i1]))


_MAX_INDEXES: Final = 64  # SpreadCounts kept per snapshot


class CriticalPaths:
    """``criticalPaths``: the two smallest match counts of a topology key, kept cheaply.

    ``self[0]`` always holds the minimum; ``self[1]`` is at least as large but is not
    guaranteed to be the second smallest (good enough because preemption only removes pods
    from one node per copy of the state). Each entry is ``(topology value, match count)``.
    Equality ignores the order of two entries with the same count, as upstream's tests do.
    """

    __slots__ = ("nums", "values")

    def __init__(self, *paths: tuple[str, int]) -> None:
        self.values = ["", ""]
        self.nums = [MAX_INT32, MAX_INT32]
        for i, (value, num) in enumerate(paths[:2]):
            self.values[i], self.nums[i] = value, num

    def update(self, value: str, num: int) -> None:
        values, nums = self.values, self.nums
        i = 0 if value == values[0] else 1 if value == values[1] else -1
        if i >= 0:
            nums[i] = num
            if nums[0] > nums[1]:
                values.reverse()
                nums.reverse()
        elif num < nums[0]:
            values[1], nums[1] = values[0], nums[0]
            values[0], nums[0] = value, num
        elif num < nums[1]:
            values[1], nums[1] = value, num

    def copy(self) -> CriticalPaths:
        out = CriticalPaths()
        out.values = list(self.values)
        out.nums = list(self.nums)
        return out

    def __getitem__(self, i: int) -> tuple[str, int]:
        return self.values[i], self.nums[i]

    def _sorted(self) -> tuple[tuple[str, int], tuple[str, int]]:
        a, b = self[0], self[1]
        if a[1] == b[1] and a[0] > b[0]:
            a, b = b, a
        return a, b

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CriticalPaths):
            return NotImplemented
        return self._sorted() == other._sorted()

    def __hash__(self) -> int:
        return hash(self._sorted())

    def __repr__(self) -> str:
        return f"CriticalPaths({self[0]!r}, {self[1]!r})"


class PreFilterState:
    """``preFilterState`` (1.32 field names, snake_case), stored under
    ``"PreFilterPodTopologySpread"``. ``clone`` copies the counts; constraints are shared."""

    __slots__ = (
        "constraints",
        "domain_counts",
        "over_limit",
        "tp_key_to_critical_paths",
        "tp_key_to_domains_num",
        "tp_pair_to_match_num",
    )

    def __init__(self, constraints: Sequence[SpreadConstraint] = ()) -> None:
        self.constraints: tuple[SpreadConstraint, ...] = tuple(constraints)
        self.tp_key_to_critical_paths: dict[str, CriticalPaths] = {}
        self.tp_key_to_domains_num: dict[str, int] = {}
        self.tp_pair_to_match_num: dict[TopologyPair, int] = {}
        # filter_nodes' per-constraint (key, domain values over the limit, or None when the
        # skew is not checked) for one incoming pod; dropped when the counts change.
        self.over_limit: tuple[Pod, list[tuple[str, frozenset[str] | None]]] | None = None
        # key -> (domain values, their counts) as PreFilter found them, for over_limit;
        # None once add_pod/remove_pod changed the counts.
        self.domain_counts: dict[str, tuple[list[str], list[int]]] | None = None

    def clone(self) -> PreFilterState:
        out = PreFilterState.__new__(PreFilterState)
        out.over_limit = None
        out.domain_counts = None
        out.constraints = self.constraints
        out.tp_key_to_critical_paths = {
            k: p.copy() for k, p in self.tp_key_to_critical_paths.items()
        }
        out.tp_key_to_domains_num = dict(self.tp_key_to_domains_num)
        out.tp_pair_to_match_num = dict(self.tp_pair_to_match_num)
        return out

    def min_match_num(self, tp_key: str, min_domains: int) -> int | None:
        """The global minimum for the skew; 0 while there are fewer than ``min_domains``
        domains. None when PreFilter recorded nothing for the key (upstream: an error, and
        the constraint is skipped)."""
        paths = self.tp_key_to_critical_paths.get(tp_key)
        domains = self.tp_key_to_domains_num.get(tp_key)
        if paths is None or domains is None:
            return None
        return 0 if domains < min_domains else paths.nums[0]

    def __repr__(self) -> str:
        return (
            f"PreFilterState(constraints={list(self.constraints)!r}, "
            f"tp_key_to_critical_paths={self.tp_key_to_critical_paths!r}, "
            f"tp_key_to_domains_num={self.tp_key_to_domains_num!r}, "
            f"tp_pair_to_match_num={self.tp_pair_to_match_num!r})"
        )


@dataclass(slots=True)
class PreScoreState:
    """``preScoreState``, stored under ``"PreScorePodTopologySpread"``."""

    constraints: tuple[SpreadConstraint, ...] = ()
    ignored_nodes: set[str] | None = None
    topology_pair_to_pod_counts: dict[TopologyPair, int] | None = None
    topology_normalizing_weight: list[float] | None = None
    # Positions of ignored nodes in the last score_nodes call (NormalizeScore zeroes them).
    ignored_positions: tuple[int, ...] = ()


def default_selector(pod: Pod, snapshot: Snapshot) -> LabelSelector:
    """``helper.DefaultSelector``: what the pod's Services and controller select.

    The Services of the pod's namespace whose selector matches the pod (a Service without a
    selector selects nothing) contribute their label maps; then the controlling owner, if it
    is a ReplicationController (its label map is merged in) or a ReplicaSet / StatefulSet
    (its selector's requirements are added), found by name in the pod's namespace.
    """
    label_set: dict[str, str] = {}
    labels = pod.labels
    for svc in snapshot.services:
        sel = svc.selector
        if svc.namespace != pod.namespace or sel is None:
            continue
        if all(labels.get(k) == v for k, v in sel.items()):
            label_set.update(sel)
    selector = LabelSelector.from_labels(label_set)
    owner = pod.controller_ref()
    if owner is None:
        return selector
    if owner.kind == "ReplicationController" and owner.api_version == "v1":
        for rc in snapshot.replication_controllers:
            if rc.namespace == pod.namespace and rc.name == owner.name:
                label_set.update(rc.selector or {})
                return LabelSelector.from_labels(label_set)
        return selector
    if owner.api_version == "apps/v1" and owner.kind in ("ReplicaSet", "StatefulSet"):
        workloads = snapshot.replica_sets if owner.kind == "ReplicaSet" else snapshot.stateful_sets
        for w in workloads:
            if w.namespace == pod.namespace and w.name == owner.name:
                if w.selector is not None:
                    return LabelSelector(
                        selector.requirements + w.selector.requirements, selector.match_labels
                    )
                return selector
    return selector


def _merge_match_labels(
    match_labels: Mapping[str, str], selector: LabelSelector | None
) -> LabelSelector:
    """``mergeLabelSetWithSelector``: ``key=value`` requirements ANDed with the selector's."""
    merged = LabelSelector.from_labels(match_labels)
    if selector is None:
        return merged
    return LabelSelector(merged.requirements + selector.requirements, merged.match_labels)


def _validate_default_constraints(
    constraints: Sequence[TopologySpreadConstraint], defaulting_type: str
) -> None:
    """``ValidatePodTopologySpreadArgs``; raises ValueError naming the bad field."""
    if defaulting_type not in ("System", "List"):
        raise ValueError(
            f'defaultingType: Unsupported value: "{defaulting_type}": supported values:'
            ' "List", "System"'
        )
    if defaulting_type == "System" and constraints:
        raise ValueError(
            'defaultConstraints: Invalid value: when .defaultingType is "System",'
            " .defaultConstraints must be empty"
        )
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        if c.label_selector is not None:
            raise ValueError(
                f"defaultConstraints[{i}].labelSelector: Forbidden: constraint must not define"
                " a selector, as they deduced for each pod"
            )
        pair = (c.topology_key, c.when_unsatisfiable)
        if pair in seen:
            raise ValueError(
                f"defaultConstraints[{i}]: Duplicate value: {{{c.topology_key},"
                f" {c.when_unsatisfiable}}}"
            )
        seen.add(pair)


def _state(state: CycleState) -> PreFilterState | Status:
    s = state.read(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return Status(
            Code.Error,
            f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found',
            plugin=NAME,
        )
    return s


class PodTopologySpread:
    """The plugin; one instance may serve the Filter and the Score extension points.

    Keyword arguments mirror ``PodTopologySpreadArgs`` and the 1.32 feature gates (all on):
    ``default_constraints`` as in KubeSchedulerConfiguration YAML, used with
    ``defaulting_type="List"``; ``"System"`` (the default) uses ``SYSTEM_DEFAULT_CONSTRAINTS``.
    """

    name = NAME
    scores_in_range = True  # 100 * (max + min - s) / max with min <= s <= max
    use_index = True  # False: PreFilter and PreScore walk every node (the reference form)

    def __init__(
        self,
        weight: int = DEFAULT_PLUGIN_WEIGHTS[NAME],
        *,
        default_constraints: Sequence[Mapping[str, Any] | TopologySpreadConstraint] = (),
        defaulting_type: Literal["System", "List"] = "System",
        enable_node_inclusion_policy: bool = True,
        enable_match_label_keys: bool = True,
        enable_min_domains: bool = True,
    ) -> None:
        parsed = [
            c if isinstance(c, TopologySpreadConstraint) else TopologySpreadConstraint.from_dict(c)
            for c in default_constraints
        ]
        _validate_default_constraints(parsed, defaulting_type)
        self.weight = weight
        self.system_defaulted = defaulting_type == "System"
        if self.system_defaulted:
            parsed = [TopologySpreadConstraint.from_dict(c) for c in SYSTEM_DEFAULT_CONSTRAINTS]
        self.default_constraints: tuple[TopologySpreadConstraint, ...] = tuple(parsed)
        self.enable_node_inclusion_policy = enable_node_inclusion_policy
        self.enable_match_label_keys = enable_match_label_keys
        self.enable_min_domains = enable_min_domains
        self._indexes: weakref.WeakKeyDictionary[Snapshot, dict[Hashable, SpreadCounts]] = (
            weakref.WeakKeyDictionary()
        )
        # Defaults without matchLabelKeys do not depend on the pod: filter them once per action.
        self._defaults_by_action: dict[str, list[SpreadConstraint]] | None = None
        if not any(c.match_label_keys for c in self.default_constraints):
            self._defaults_by_action = {
                action: self.filter_topology_spread_constraints(
                    self.default_constraints, {}, action
                )
                for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
            }

    # --- constraints -------------------------------------------------------------------------

    def filter_topology_spread_constraints(
        self,
        constraints: Iterable[TopologySpreadConstraint],
        pod_labels: Mapping[str, str],
        action: str,
    ) -> list[SpreadConstraint]:
        """``filterTopologySpreadConstraints``: those with ``whenUnsatisfiable == action``,
        defaults applied and ``matchLabelKeys`` merged into the selector."""
        out: list[SpreadConstraint] = []
        for c in constraints:
            if c.when_unsatisfiable != action:
                continue
            selector = c.label_selector
            if self.enable_match_label_keys and c.match_label_keys:
                match_labels = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
                if match_labels:
                    selector = _merge_match_labels(match_labels, selector)
            affinity_policy, taints_policy = HONOR, IGNORE
            if self.enable_node_inclusion_policy:
                affinity_policy = c.node_affinity_policy or HONOR
                taints_policy = c.node_taints_policy or IGNORE
            min_domains = 1
            if self.enable_min_domains and c.min_domains is not None:
                min_domains = c.min_domains
            out.append(
                SpreadConstraint(
                    max_skew=c.max_skew,
                    topology_key=c.topology_key,
                    selector=selector,
                    min_domains=min_domains,
                    node_affinity_policy=affinity_policy,
                    node_taints_policy=taints_policy,
                )
            )
        return out

    def build_default_constraints(
        self, pod: Pod, snapshot: Snapshot, action: str
    ) -> list[SpreadConstraint]:
        """``buildDefaultConstraints``: the defaults for ``action`` with the pod's default
        selector, or none when that selector is empty."""
        by_action = self._defaults_by_action
        constraints = (
            by_action[action]
            if by_action is not None
            else self.filter_topology_spread_constraints(
                self.default_constraints, pod.labels, action
            )
        )
        if not constraints:
            return []
        selector = default_selector(pod, snapshot)
        if selector.is_empty():
            return []
        return [
            SpreadConstraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=c.min_domains,
                node_affinity_policy=c.node_affinity_policy,
                node_taints_policy=c.node_taints_policy,
            )
            for c in constraints
        ]

    def _constraints(self, pod: Pod, snapshot: Snapshot, action: str) -> list[SpreadConstraint]:
        if pod.topology_spread_constraints:
            return self.filter_topology_spread_constraints(
                pod.topology_spread_constraints, pod.labels, action
            )
        if not self.default_constraints:
            return []
        return self.build_default_constraints(pod, snapshot, action)

    def _inclusion_checks(
        self, pod: Pod, constraints: Sequence[SpreadConstraint], required: RequiredNodeAffinity
    ) -> list[bool]:
        """Per constraint, whether its inclusion policies can exclude a node at all (Honor
        with a pod that has node constraints, or Honor for taints); when they cannot, the
        check is left out."""
        if not self.enable_node_inclusion_policy:
            return [False] * len(constraints)
        trivial_affinity = not required.node_selector and required.required is None
        return [
            (c.node_affinity_policy == HONOR and not trivial_affinity)
            or c.node_taints_policy == HONOR
            for c in constraints
        ]

    def spread_counts(
        self,
        snapshot: Snapshot,
        pod: Pod,
        constraints: Sequence[SpreadConstraint],
        *,
        required_keys: Sequence[str],
    ) -> SpreadCounts:
        """The ``SpreadCounts`` of these constraints for this pod, kept per snapshot."""
        required = RequiredNodeAffinity(pod)
        checks = self._inclusion_checks(pod, constraints, required)
        policies = self.enable_node_inclusion_policy
        ns = pod.namespace
        key = (
            tuple(
                (
                    _count_key(c.selector, ns),
                    c.topology_key,
                    check,
                    c.node_affinity_policy,
                    c.node_taints_policy,
                )
                for c, check in zip(constraints, checks, strict=True)
            ),
            tuple(required_keys),
            policies,
            (required.memo_key, repr(pod.tolerations)) if not policies or any(checks) else None,
        )
        indexes = self._indexes.get(snapshot)
        if indexes is None:
            indexes = self._indexes[snapshot] = {}
        found = indexes.get(key)
        if found is not None and found.refresh(snapshot, ns):
            return found
        if len(indexes) >= _MAX_INDEXES:
            indexes.clear()
        built = indexes[key] = SpreadCounts(
            snapshot,
            pod,
            constraints,
            required_keys=required_keys,
            checks=checks,
            policies=policies,
        )
        return built

    # --- PreFilter / Filter ------------------------------------------------------------------

    def cal_pre_filter_state(self, pod: Pod, snapshot: Snapshot) -> PreFilterState:
        """``calPreFilterState`` over every node of the snapshot."""
        constraints = self._constraints(pod, snapshot, DO_NOT_SCHEDULE)
        s = PreFilterState(constraints)
        if not constraints:
            return s
        topology_keys = tuple(c.topology_key for c in constraints)
        if self.use_index:
            index = self.spread_counts(snapshot, pod, constraints, required_keys=topology_keys)
            s.tp_pair_to_match_num = index.counts()
            s.domain_counts = {}
            for key, values in index.key_values.items():
                s.tp_key_to_domains_num[key] = len(values)
                s.domain_counts[key] = (values, list(index.key_nums[key]))
            for c in constraints:
                key = c.topology_key
                s.tp_key_to_critical_paths[key] = index.critical_paths(key)
            return s
        required = RequiredNodeAffinity(pod)
        policies = self.enable_node_inclusion_policy
        counts = s.tp_pair_to_match_num
        ns = pod.namespace
        checks = self._inclusion_checks(pod, constraints, required)
        plan = [
            (c, _count_key(c.selector, ns), c.topology_key, check)
            for c, check in zip(constraints, checks, strict=True)
        ]
        for ni in snapshot.node_info_list:
            node = ni.node
            if node is None:
                continue
            if not policies and not required.match(node):
                continue
            labels = node.labels
            if not all(map(labels.__contains__, topology_keys)):
                continue  # node_labels_match_spread_constraints
            for c, key, topology_key, check in plan:
                if check and not c.match_node_inclusion_policies(pod, node, required):
                    continue
                pair = (topology_key, labels[topology_key])
                count = ni.memo.get(key) if key else None
                if count is None:
                    count = _match_count(ni, c.selector, ns, key)
                counts[pair] = counts.get(pair, 0) + count
        for key, _ in counts:
            s.tp_key_to_domains_num[key] = s.tp_key_to_domains_num.get(key, 0) + 1
        for c in constraints:
            s.tp_key_to_critical_paths[c.topology_key] = CriticalPaths()
        for (key, value), num in counts.items():
            s.tp_key_to_critical_paths[key].update(value, num)
        return s

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status | None:
        s = self.cal_pre_filter_state(pod, snapshot)
        if not s.constraints:
            return SKIP
        state.write(PRE_FILTER_STATE_KEY, s)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = _state(state)
        if isinstance(s, Status):
            return s
        if not s.constraints:
            return None
        node = node_info.node
        labels: Mapping[str, str] = node.labels if node is not None else {}
        counts = s.tp_pair_to_match_num
        for c in s.constraints:
            key = c.topology_key
            value = labels.get(key)
            if value is None:
                return _LABEL_REJECT
            minimum = s.min_match_num(key, c.min_domains)
            if minimum is None:
                continue
            self_match = 1 if c.selects(pod.labels) else 0
            if counts.get((key, value), 0) + self_match - minimum > c.max_skew:
                return _SKEW_REJECT
        return None

    def filter_nodes(
        self, state: CycleState, pod: Pod, node_infos: list[NodeInfo]
    ) -> FilterBatchResult:
        s = _state(state)
        if isinstance(s, Status):
            return [], [(ni, s) for ni in node_infos]
        if not s.constraints:
            return node_infos, []
        cached = s.over_limit
        if cached is not None and cached[0] is pod:
            checks = cached[1]
        else:
            checks = self._over_limit(s, pod)
            s.over_limit = (pod, checks)
        if len(checks) == 1:
            # One constraint (the usual case): each node is one label lookup, at C speed.
            key, over = checks[0]
            values = [ni.node.labels.get(key) if ni.node is not None else None for ni in node_infos]
            if over:
                verdicts = [
                    _LABEL_REJECT if v is None else _SKEW_REJECT if v in over else None
                    for v in values
                ]
            else:
                verdicts = [_LABEL_REJECT if v is None else None for v in values]
            pairs = list(zip(node_infos, verdicts, strict=True))
            return [ni for ni, v in pairs if v is None], [
                (ni, v) for ni, v in pairs if v is not None
            ]
        passed: list[NodeInfo] = []
        rejected: list[tuple[NodeInfo, Status]] = []
        for ni in node_infos:
            node = ni.node
            labels: Mapping[str, str] = node.labels if node is not None else {}
            verdict: Status | None = None
            for key, over in checks:
                value = labels.get(key)
                if value is None:
                    verdict = _LABEL_REJECT
                    break
                if over and value in over:
                    verdict = _SKEW_REJECT
                    break
            if verdict is None:
                passed.append(ni)
            else:
                rejected.append((ni, verdict))
        return passed, rejected

    @staticmethod
    def _over_limit(s: PreFilterState, pod: Pod) -> list[tuple[str, frozenset[str] | None]]:
        """Per constraint: its key and the domain values whose count exceeds what the pod
        may reach there (``maxSkew + minimum - self match``); None when the skew is not
        checked (no minimum recorded). ``maxSkew`` is at least 1, so the limit is never
        negative and a domain without a count never exceeds it."""
        counts = s.tp_pair_to_match_num
        by_key = s.domain_counts
        checks: list[tuple[str, frozenset[str] | None]] = []
        for c in s.constraints:
            key = c.topology_key
            minimum = s.min_match_num(key, c.min_domains)
            if minimum is None:
                checks.append((key, None))
                continue
            limit = c.max_skew + minimum - (1 if c.selects(pod.labels) else 0)
            if by_key is not None:
                values, nums = by_key.get(key, ((), ()))
                over = frozenset(compress(values, [n > limit for n in nums]))
            else:
                over = frozenset([v for (k, v), n in counts.items() if k == key and n > limit])
            checks.append((key, over))
        return checks

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        s = _state(state)
        if isinstance(s, Status):
            return s
        self.update_with_pod(s, pod_to_add, pod_to_schedule, node_info.node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        s = _state(state)
        if isinstance(s, Status):
            return s
        self.update_with_pod(s, pod_to_remove, pod_to_schedule, node_info.node, -1)
        return None

    def update_with_pod(
        self, s: PreFilterState, updated: Pod, preemptor: Pod, node: Node | None, delta: int
    ) -> None:
        """``updateWithPod``: ``updated`` was added to (+1) or removed from (-1) ``node``."""
        if updated.namespace != preemptor.namespace or node is None:
            return
        labels = node.labels
        if not node_labels_match_spread_constraints(labels, s.constraints):
            return
        required = RequiredNodeAffinity(preemptor)
        if not self.enable_node_inclusion_policy and not required.match(node):
            return
        counts = s.tp_pair_to_match_num
        s.over_limit = None
        s.domain_counts = None
        for c in s.constraints:
            if not c.selects(updated.labels):
                continue
            if self.enable_node_inclusion_policy and not c.match_node_inclusion_policies(
                preemptor, node, required
            ):
                continue
            pair = (c.topology_key, labels[c.topology_key])
            counts[pair] = counts.get(pair, 0) + delta
            s.tp_key_to_critical_paths[c.topology_key].update(pair[1], counts[pair])

    # --- PreScore / Score / NormalizeScore ---------------------------------------------------

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        all_nodes = snapshot.node_info_list
        if not all_nodes:
            return SKIP
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        constraints = self._constraints(pod, snapshot, SCHEDULE_ANYWAY)
        if not constraints:
            return SKIP
        ignored: set[str] = set()
        pair_counts: dict[TopologyPair, int] = {}
        topo_size = [0] * len(constraints)
        for ni in node_infos:
            node = ni.node
            labels: Mapping[str, str] = node.labels if node is not None else {}
            if require_all and not node_labels_match_spread_constraints(labels, constraints):
                ignored.add(ni.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == LABEL_HOSTNAME:
                    continue  # counted per node at Score
                pair = (c.topology_key, labels.get(c.topology_key, ""))
                if pair not in pair_counts:
                    pair_counts[pair] = 0
                    topo_size[i] += 1
        weights = [
            _topology_normalizing_weight(
                len(node_infos) - len(ignored) if c.topology_key == LABEL_HOSTNAME else topo_size[i]
            )
            for i, c in enumerate(constraints)
        ]
        if pair_counts and self.use_index:
            # Hostname pairs are not in pair_counts: only the other constraints are summed.
            index = self.spread_counts(
                snapshot,
                pod,
                [c for c in constraints if c.topology_key != LABEL_HOSTNAME],
                required_keys=tuple(c.topology_key for c in constraints) if require_all else (),
            )
            totals = index.by_pair
            for pair in pair_counts:
                pair_counts[pair] = totals.get(pair, 0)
        elif pair_counts:
            required = RequiredNodeAffinity(pod)
            policies = self.enable_node_inclusion_policy
            ns = pod.namespace
            keys = [_count_key(c.selector, ns) for c in constraints]
            for ni in all_nodes:
                node = ni.node
                if node is None:
                    continue
                if not policies and not required.match(node):
                    continue
                labels = node.labels
                if require_all and not node_labels_match_spread_constraints(labels, constraints):
                    continue
                for c, key in zip(constraints, keys, strict=True):
                    if policies and not c.match_node_inclusion_policies(pod, node, required):
                        continue
                    pair = (c.topology_key, labels.get(c.topology_key, ""))
                    if pair in pair_counts:
                        pair_counts[pair] += _match_count(ni, c.selector, ns, key)
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState(
                constraints=tuple(constraints),
                ignored_nodes=ignored,
                topology_pair_to_pod_counts=pair_counts,
                topology_normalizing_weight=weights,
            ),
        )
        return None

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return [0] * len(node_infos)
        ignored = s.ignored_nodes or set()
        counts = s.topology_pair_to_pod_counts or {}
        weights = s.topology_normalizing_weight or []
        out: list[int] = []
        positions: list[int] = []
        ns = pod.namespace
        keys = [_count_key(c.selector, ns) for c in s.constraints]
        for idx, ni in enumerate(node_infos):
            if ni.name in ignored:
                positions.append(idx)
                out.append(0)
                continue
            labels: Mapping[str, str] = ni.node.labels if ni.node is not None else {}
            score = 0.0
            for i, c in enumerate(s.constraints):
                value = labels.get(c.topology_key)
                if value is None:
                    continue
                if c.topology_key == LABEL_HOSTNAME:
                    cnt = _match_count(ni, c.selector, ns, keys[i])
                else:
                    cnt = counts.get((c.topology_key, value), 0)
                score += cnt * weights[i] + (c.max_skew - 1)
            out.append(math.floor(score + 0.5))  # Go's math.Round for non-negative values
        s.ignored_positions = tuple(positions)
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return
        ignored = set(s.ignored_positions)
        considered = [v for i, v in enumerate(scores) if i not in ignored]
        min_score = min(considered, default=0)
        max_score = max(considered, default=0)
        max_score = max(max_score, 0)
        for i, v in enumerate(scores):
            if i in ignored:
                scores[i] = 0
            elif max_score == 0:
                scores[i] = MAX_NODE_SCORE
            else:
                scores[i] = MAX_NODE_SCORE * (max_score + min_score - v) // max_score


def _topology_normalizing_weight(size: int) -> float:
    """``topologyNormalizingWeight``: ``log(size + 2)``."""
    return math.log(size + 2)
