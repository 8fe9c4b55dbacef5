"""PodTopologySpread's PreScore, Score and NormalizeScore (``podtopologyspread/scoring.go``).

PreScore counts matching pods per topology pair over all nodes, but only for pairs of the
nodes that passed Filter (hostname constraints are counted per node at Score). A node's raw
score is ``round(sum(count * log(domains + 2) + maxSkew - 1))`` over its constraints; nodes
missing a topology key (when the pod has its own constraints or defaults are not the system's)
are ignored and score 0. NormalizeScore maps ``s`` to ``100 * (max + min - s) / max`` (100 for
all when ``max`` is 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Final

from kube.objects import SCHEDULE_ANYWAY, Pod
from scheduler.framework import MAX_NODE_SCORE, CycleState, Status
from scheduler.plugins.helper import SKIP
from scheduler.plugins.nodeaffinity import RequiredNodeAffinity
from scheduler.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    NAME,
    PluginBase,
    SpreadConstraint,
    TopologyPair,
    count_memo_key,
    match_count,
    node_labels_match_spread_constraints,
)
from scheduler.snapshot import NodeInfo, Snapshot, label_values

__all__ = [
    "MAX_NODE_SCORE",  # the framework's; the plugin's old module defined it again
    "PRE_SCORE_STATE_KEY",
    "PreScoreState",
    "Scoring",
]

PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME


@dataclass(slots=True)
class PreScoreState:
    """``preScoreState``, stored under ``"PreScorePodTopologySpread"``."""

    constraints: tuple[SpreadConstraint, ...] = ()
    ignored_nodes: set[str] | None = None
    topology_pair_to_pod_counts: dict[TopologyPair, int] | None = None
    topology_normalizing_weight: list[float] | None = None
    # Positions of ignored nodes in the last score_nodes call (NormalizeScore zeroes them).
    ignored_positions: tuple[int, ...] = ()


class Scoring(PluginBase):
    """The plugin's PreScore, Score and NormalizeScore."""

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
        # One label column per constraint (read from the snapshot's columns: no per-node
        # lookups), then the nodes without every key and the distinct values of each key.
        nodes = node_infos if isinstance(node_infos, list) else list(node_infos)
        columns = [label_values(nodes, c.topology_key) for c in constraints]
        keep: list[bool] | None = None
        ignored: set[str] = set()
        if require_all:
            if len(columns) == 1:
                keep = [v is not None for v in columns[0]]
            else:
                keep = [None not in values for values in zip(*columns, strict=True)]
            if not all(keep):
                ignored = {ni.name for ni, k in zip(node_infos, keep, strict=True) if not k}
        pair_counts: dict[TopologyPair, int] = {}
        topo_size = [0] * len(constraints)
        for i, (c, column) in enumerate(zip(constraints, columns, strict=True)):
            if c.topology_key == LABEL_HOSTNAME:
                continue  # counted per node at Score
            held = column if keep is None else compress(column, keep)
            for value in dict.fromkeys(v if v is not None else "" for v in held):
                pair = (c.topology_key, value)
                # A pair counted for an earlier constraint on the same key is not counted again.
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
            keys = [count_memo_key(c.selector, ns) for c in constraints]
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
                        pair_counts[pair] += match_count(ni, c.selector, ns, key)
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
        ns = pod.namespace
        n = len(node_infos)
        nodes = node_infos if isinstance(node_infos, list) else list(node_infos)
        # Column by column, in constraint order: each node's float sum is added up in the
        # order the node-by-node loop used, so the rounding is the same.
        scores = [0.0] * n
        for i, c in enumerate(s.constraints):
            column = label_values(nodes, c.topology_key)
            extra = c.max_skew - 1
            weight = weights[i]
            if c.topology_key == LABEL_HOSTNAME:
                key = count_memo_key(c.selector, ns)
                scores = [
                    score
                    if value is None
                    else score + (match_count(ni, c.selector, ns, key) * weight + extra)
                    for score, value, ni in zip(scores, column, nodes, strict=True)
                ]
            else:
                by_value = {v: cnt for (k, v), cnt in counts.items() if k == c.topology_key}
                scores = [
                    score if value is None else score + (by_value.get(value, 0) * weight + extra)
                    for score, value in zip(scores, column, strict=True)
                ]
        out = [math.floor(score + 0.5) for score in scores]  # Go's math.Round, non-negative
        positions: list[int] = []
        if ignored:
            positions = [i for i, ni in enumerate(nodes) if ni.name in ignored]
            for i in positions:
                out[i] = 0
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
