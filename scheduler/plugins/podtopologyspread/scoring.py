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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from scheduler.snapshot import NodeInfo, Snapshot

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
        out: list[int] = []
        positions: list[int] = []
        ns = pod.namespace
        keys = [count_memo_key(c.selector, ns) for c in s.constraints]
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
                    cnt = match_count(ni, c.selector, ns, keys[i])
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
