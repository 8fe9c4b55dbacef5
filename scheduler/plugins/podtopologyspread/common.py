"""What PodTopologySpread's Filter and Score share (``podtopologyspread/common.go``): the
constraints a pod is judged by (``PluginBase``), which nodes count (``SpreadConstraint``), and
the counts of matching pods, kept incrementally (``SpreadCounts``).
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kube.ints import INT32_MAX as MAX_INT32
from kube.labels import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE, LabelSelector
from kube.objects import Node, Pod, TopologySpreadConstraint
from scheduler.plugins.helper import remember
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity
from scheduler.plugins.tainttoleration import find_matching_untolerated_taint
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "HONOR",
    "IGNORE",
    "LABEL_HOSTNAME",
    "LABEL_TOPOLOGY_ZONE",
    "MAX_INT32",
    "NAME",
    "CriticalPaths",
    "PluginBase",
    "SpreadConstraint",
    "SpreadCounts",
    "TopologyPair",
    "count_memo_key",
    "count_pods_match_selector",
    "default_selector",
    "match_count",
    "node_labels_match_spread_constraints",
]

NAME: Final = "PodTopologySpread"

HONOR: Final = "Honor"
IGNORE: Final = "Ignore"

TopologyPair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """``topologySpreadConstraint``: a constraint with its defaults applied (``minDomains`` 1,
    ``nodeAffinityPolicy`` Honor, ``nodeTaintsPolicy`` Ignore).

    ``selector`` None is ``labels.Nothing()``: it selects no pod. Only nodes carrying every
    constraint's topology key are counted (``node_labels_match_spread_constraints``); per
    constraint, with ``nodeAffinityPolicy: Honor`` a node must also match the pod's
    nodeSelector and required node affinity, and with ``nodeTaintsPolicy: Honor`` it must have
    no NoSchedule / NoExecute taint the pod does not tolerate.
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
    """``countPodsMatchSelector``: terminating pods (kubernetes#87621) and other namespaces do
    not count."""
    if selector is None:
        return 0
    return sum(
        1
        for p in pods
        if p.deletion_timestamp is None and p.namespace == ns and selector.matches(p.labels)
    )


def count_memo_key(selector: LabelSelector | None, ns: str) -> str:
    """The ``NodeInfo.memo`` key of a node's count of pods matching ``selector`` in ``ns``."""
    return f"{NAME}/count/{ns}/{selector.requirements!r}" if selector is not None else ""


def match_count(ni: NodeInfo, selector: LabelSelector | None, ns: str, key: str) -> int:
    """``count_pods_match_selector(ni.pods, selector, ns)``, remembered until ``ni`` changes;
    ``key`` is ``count_memo_key(selector, ns)``."""
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
    ``key_values`` / ``key_nums`` the same per topology key, ``key_counts`` as a map from value
    to sum (for lookups node by node). A node counts for a constraint
    when it has the keys in ``required_keys``, passes the pod's required node affinity if
    inclusion policies are off, and passes the constraint's inclusion policies (checked only
    where ``checks`` says they can exclude a node); its pair is ``(topology key, label value
    or "")``. ``refresh`` follows ``Snapshot.pod_changes``.

    Why: PreFilter and PreScore sum a node's matching pods over every node of the cluster,
    every cycle. A node's count depends only on its pods, the selector and the namespace, so it
    is kept in ``NodeInfo.memo`` (``match_count``), and the sums per topology pair are kept
    here, per snapshot and per constraint set and pod shape: built once by the walk over every
    node, then brought up to date from ``Snapshot.pod_changes`` — only the nodes whose pods
    changed are counted again — and rebuilt when a node is added, removed or replaced. Keeping
    the pairs in the walk's order keeps the critical paths (the two smallest counts of a key,
    ties to the first met) those of the walk. All must equal ``count_pods_match_selector`` and
    the walk node by node (the property tests check it; ``use_index = False`` on a plugin
    takes the walk).
    """

    __slots__ = (
        "by_pair",
        "cursor",
        "entries",
        "key_counts",
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
        self.key_counts: dict[str, dict[str, int]] = {}
        # node name -> [[pair position, key position, selector, count key, count], ...]
        self.entries: dict[str, list[list[Any]]] = {}
        required = RequiredNodeAffinity(pod)
        ns = pod.namespace
        count_keys = [count_memo_key(c.selector, ns) for c in constraints]
        index: dict[TopologyPair, tuple[int, int]] = {}  # pair -> (position, key position)
        pairs, by_pair = self.pairs, self.by_pair
        key_values, key_nums, key_counts = self.key_values, self.key_nums, self.key_counts
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
                    key_counts.setdefault(key, {})[pair[1]] = 0
                pos, kpos = at
                count = match_count(ni, c.selector, ns, count_key)
                if count:
                    by_pair[pair] += count
                    key_nums[key][kpos] += count
                    key_counts[key][pair[1]] += count
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
        key_counts = self.key_counts
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
                new = match_count(ni, selector, ns, count_key)
                if new != old:
                    entry[4] = new
                    pair = pairs[pos]
                    by_pair[pair] += new - old
                    key_nums[pair[0]][kpos] += new - old
                    key_counts[pair[0]][pair[1]] += new - old
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


class PluginBase:
    """The constraints the plugin judges a pod by and their counts, for its Filter and its
    Score (``PodTopologySpread`` sets the attributes from its args)."""

    default_constraints: tuple[TopologySpreadConstraint, ...]
    system_defaulted: bool
    enable_node_inclusion_policy: bool
    enable_match_label_keys: bool
    enable_min_domains: bool
    use_index: bool
    _indexes: weakref.WeakKeyDictionary[Snapshot, dict[Hashable, SpreadCounts]]
    _defaults_by_action: dict[str, list[SpreadConstraint]] | None

    def filter_topology_spread_constraints(
        self,
        constraints: Iterable[TopologySpreadConstraint],
        pod_labels: Mapping[str, str],
        action: str,
    ) -> list[SpreadConstraint]:
        """``filterTopologySpreadConstraints``: those with ``whenUnsatisfiable == action``
        (``DoNotSchedule`` ones are the Filter's, ``ScheduleAnyway`` ones the Score's),
        defaults applied; a missing ``labelSelector`` selects no pod, and the pod's values of
        ``matchLabelKeys`` (keys it has) are ANDed into the selector as ``key=value``
        requirements."""
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
        selector, or none when that selector is empty (then the plugin is skipped for the pod).

        Only for a pod without constraints of its own. With ``defaulting_type="System"``
        (kube's default) they are hostname ``maxSkew`` 3 and zone ``maxSkew`` 5, both
        ScheduleAnyway; the selector is ``default_selector``'s."""
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
                    count_memo_key(c.selector, ns),
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
