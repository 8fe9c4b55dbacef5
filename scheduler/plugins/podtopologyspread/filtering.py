"""PodTopologySpread's PreFilter and Filter (``podtopologyspread/filtering.go``): a pod's
``DoNotSchedule`` constraints keep the skew of matching pods between topology domains at most
``maxSkew``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from itertools import compress, repeat
from typing import Final

from kube.objects import DO_NOT_SCHEDULE, Node, Pod
from scheduler.framework import Code, CycleState, FilterBatchResult, Status
from scheduler.plugins.helper import SKIP
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity
from scheduler.plugins.podtopologyspread.common import (
    NAME,
    CriticalPaths,
    PluginBase,
    SpreadConstraint,
    TopologyPair,
    count_memo_key,
    match_count,
    node_labels_match_spread_constraints,
)
from scheduler.snapshot import NodeInfo, Snapshot, label_values

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "PRE_FILTER_STATE_KEY",
    "Filtering",
    "PreFilterState",
]

ERR_REASON_CONSTRAINTS_NOT_MATCH: Final = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH: Final = (
    ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
)
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME

_LABEL_REJECT: Final = Status(
    Code.UnschedulableAndUnresolvable, ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME
)
_SKEW_REJECT: Final = Status(Code.Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)
# over_limit's per-constraint check: (topology key, limit or None, the domains over the limit
# or None when nodes look their count up, {domain value: count})
_Check = tuple[str, int | None, frozenset[str] | None, Mapping[str, int]]
_NO_COUNTS: Final[Mapping[str, int]] = {}
# Up to this many domains, the ones over the limit are listed once per pod (a set lookup per
# node); beyond, a count lookup per node costs less than a pass over every domain (a walk
# visits a few hundred nodes at least).
_FEW_DOMAINS: Final = 256


class PreFilterState:
    """``preFilterState`` (1.32 field names, snake_case), stored under
    ``"PreFilterPodTopologySpread"``. ``clone`` copies the counts; constraints are shared.

    PreFilter counts matching pods per topology pair over all nodes (``tp_pair_to_match_num``),
    the number of domains per key (``tp_key_to_domains_num``) and the two smallest counts per
    key (``tp_key_to_critical_paths``). Counts are keyed by topology pair, as 1.32 does: two
    constraints on the same key share their pair counts.
    """

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
        # filter_nodes' per-constraint (key, the most a domain may hold, or None when the skew
        # is not checked, the domains' counts) for one incoming pod; dropped when the counts
        # change.
        self.over_limit: tuple[Pod, list[_Check]] | None = None
        # key -> {domain value: count} as PreFilter found them, for over_limit; None once
        # add_pod/remove_pod changed the counts.
        self.domain_counts: dict[str, dict[str, int]] | None = None

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


def _state(state: CycleState) -> PreFilterState | Status:
    s = state.read(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return Status(
            Code.Error,
            f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found',
            plugin=NAME,
        )
    return s


class Filtering(PluginBase):
    """The plugin's PreFilter, its PreFilterExtensions and Filter.

    A node lacking a constraint's topology key is UnschedulableAndUnresolvable ``node(s) didn't
    match pod topology spread constraints (missing required label)``; otherwise, with ``self``
    1 when the pod matches its own selector, and the global minimum taken as 0 while fewer than
    ``minDomains`` domains exist, ``count(node's domain) + self - minimum > maxSkew`` is
    Unschedulable ``node(s) didn't match pod topology spread constraints`` — preemption may
    help, and ``add_pod``/``remove_pod`` keep the counts right while it removes victims.
    ``filter_nodes`` judges a batch of nodes with the per-constraint numbers (minimum, self
    match) worked out once; it must equal ``filter`` node by node.
    """

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
                s.domain_counts[key] = index.key_counts[key].copy()
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
            (c, count_memo_key(c.selector, ns), c.topology_key, check)
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
                    count = match_count(ni, c.selector, ns, key)
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
            # One constraint (the usual case): each node is a label and a count lookup, at C
            # speed.
            key, limit, over, counts_of = checks[0]
            values = label_values(node_infos, key)
            # Most nodes pass: which ones is found in C, and only the rejected are visited.
            missing = list(map(operator.is_, values, repeat(None)))
            bad = missing
            if over is not None:
                if over:
                    bad = list(map(operator.or_, bad, map(over.__contains__, values)))
            elif limit is not None:
                # (a node without the label looks up None: no count, and it is rejected anyway)
                count: Callable[[str | None, int], int] = counts_of.get  # type: ignore[assignment]
                above = map(operator.lt, repeat(limit), map(count, values, repeat(0)))
                bad = list(map(operator.or_, bad, above))
            if not any(bad):
                return node_infos, []
            kept = list(compress(node_infos, map(operator.not_, bad)))
            if not any(missing):  # every rejection is the skew's: the pairs are built in C
                return kept, list(
                    zip(compress(node_infos, bad), repeat(_SKEW_REJECT), strict=False)
                )
            return kept, [
                (ni, _LABEL_REJECT if v is None else _SKEW_REJECT)
                for ni, v in zip(compress(node_infos, bad), compress(values, bad), strict=True)
            ]
        passed: list[NodeInfo] = []
        rejected: list[tuple[NodeInfo, Status]] = []
        for ni in node_infos:
            node = ni.node
            labels: Mapping[str, str] = node.labels if node is not None else {}
            verdict: Status | None = None
            for key, limit, over, counts_of in checks:
                value = labels.get(key)
                if value is None:
                    verdict = _LABEL_REJECT
                    break
                if (
                    (value in over)
                    if over is not None
                    else (limit is not None and counts_of.get(value, 0) > limit)
                ):
                    verdict = _SKEW_REJECT
                    break
            if verdict is None:
                passed.append(ni)
            else:
                rejected.append((ni, verdict))
        return passed, rejected

    @staticmethod
    def _over_limit(s: PreFilterState, pod: Pod) -> list[_Check]:
        """Per constraint: its key, the most a domain may count for the pod to go there
        (``maxSkew + minimum - self match``; None when the skew is not checked, no minimum
        recorded), and how a node's domain is found over it: with few domains (zones) the set
        of those over the limit, worked out once; with many (hostnames) none, and each node
        looks its domain's count up in the counts given — no pass over thousands of domains
        per pod. ``maxSkew`` is at least 1, so the limit is never negative and a domain
        without a count never exceeds it."""
        counts = s.tp_pair_to_match_num
        by_key = s.domain_counts
        checks: list[_Check] = []
        for c in s.constraints:
            key = c.topology_key
            minimum = s.min_match_num(key, c.min_domains)
            if minimum is None:
                checks.append((key, None, None, _NO_COUNTS))
                continue
            limit = c.max_skew + minimum - (1 if c.selects(pod.labels) else 0)
            if by_key is not None:
                counts_of = by_key.get(key, _NO_COUNTS)
            else:
                counts_of = {v: n for (k, v), n in counts.items() if k == key}
            over = None
            if len(counts_of) <= _FEW_DOMAINS:
                over = frozenset([v for v, n in counts_of.items() if n > limit])
            checks.append((key, limit, over, counts_of))
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
