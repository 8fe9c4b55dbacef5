"""Score plugins: raw scores, normalization, weights, PreScore Skip, and the explanation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kube.objects import KubeObject, Pod
from scheduler.framework import Code, CycleState, ScorePlugin, Status, prioritize_nodes
from scheduler.plugins.helper import default_normalize_score
from scheduler.plugins.interpodaffinity.scoring import InterPodAffinityScorer
from scheduler.plugins.nodeaffinity import NodeAffinityScorer
from scheduler.plugins.noderesources.least_allocated import LeastAllocatedScorer
from scheduler.plugins.registry import default_score_plugins
from scheduler.plugins.tainttoleration import TaintTolerationScorer
from scheduler.schedule import schedule_one
from scheduler.snapshot import NodeInfo, Snapshot
from tests.support.objects import node, pod, preferred, required, term

ZONE = "topology.kubernetes.io/zone"


def _raw_and_normalized(
    plugin: ScorePlugin, p: Pod, objects: Sequence[KubeObject]
) -> tuple[Status | None, list[int], list[int]]:
    snap = Snapshot.from_objects(objects)
    state = CycleState()
    nodes = snap.node_info_list
    pre = plugin.pre_score(state, p, nodes, snap)
    if pre is not None and pre.code is Code.Skip:
        return pre, [], []
    raw = plugin.score_nodes(state, p, nodes)
    normalized = list(raw)
    plugin.normalize_score(state, p, normalized)
    return pre, raw, normalized


@pytest.mark.parametrize(
    ("scores", "reverse", "expected"),
    [
        ([0, 0], False, [0, 0]),
        ([0, 0], True, [100, 100]),
        ([1, 2, 4], False, [25, 50, 100]),
        ([1, 2, 4], True, [75, 50, 0]),
        ([1, 3], False, [33, 100]),
        ([], True, []),
    ],
)
def test_default_normalize_score(scores: list[int], reverse: bool, expected: list[int]) -> None:
    default_normalize_score(100, reverse, scores)
    assert scores == expected


def test_default_weights_and_order() -> None:
    assert [(p.name, p.weight) for p in default_score_plugins()] == [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]


# --- NodeResourcesFit, LeastAllocated ---------------------------------------------------------


def test_least_allocated_uses_non_zero_requests() -> None:
    existing = pod("e", cpu="100m", memory="500Mi", node_name="n")
    scorer = LeastAllocatedScorer()
    # cpu (4000-200)*100/4000 = 95; memory (32768-1000)*100/32768 = 96.9 -> 96; mean 95.
    _, raw, normalized = _raw_and_normalized(
        scorer, pod("p", cpu="100m", memory="500Mi"), [node("n"), existing]
    )
    assert raw == normalized == [95]
    # No requests: 100m and 200Mi count for scoring: cpu 97.5 -> 97, memory 99.4 -> 99.
    assert _raw_and_normalized(scorer, pod("p"), [node("n")])[1] == [98]
    assert scorer.score_node(pod("p"), NodeInfo(node("n"))) == 98


def test_least_allocated_overcommit_and_missing_allocatable() -> None:
    scorer = LeastAllocatedScorer()
    busy = pod("e", cpu="900m", memory="1Gi", node_name="n")
    # cpu over-committed -> 0; memory (4096-2048)*100/4096 = 50; mean 25.
    objects: list[KubeObject] = [node("n", cpu="1", memory="4Gi"), busy]
    assert _raw_and_normalized(scorer, pod("p", cpu="200m", memory="1Gi"), objects)[1] == [25]
    # A resource with zero allocatable is left out of the mean.
    assert _raw_and_normalized(scorer, pod("p", cpu="1"), [node("n", memory="0")])[1] == [75]
    assert _raw_and_normalized(scorer, pod("p"), [node("n", cpu="0", memory="0")])[1] == [0]


# --- TaintToleration --------------------------------------------------------------------------


def test_taint_toleration_counts_untolerated_prefer_no_schedule() -> None:
    soft = [
        {"key": "s1", "effect": "PreferNoSchedule"},
        {"key": "s2", "effect": "PreferNoSchedule"},
    ]
    hard = [{"key": "hard", "effect": "NoSchedule"}]
    nodes = [node("n1", taints=soft), node("n2"), node("n3", taints=soft), node("n4", taints=hard)]
    tolerations = [
        {"key": "s1", "operator": "Exists"},  # empty effect: tolerates PreferNoSchedule
        {"key": "s2", "operator": "Exists", "effect": "NoSchedule"},  # wrong effect
    ]
    _, raw, normalized = _raw_and_normalized(
        TaintTolerationScorer(), pod("p", tolerations=tolerations), nodes
    )
    assert raw == [1, 0, 1, 0]
    assert normalized == [0, 100, 0, 100]
    _, raw, normalized = _raw_and_normalized(TaintTolerationScorer(), pod("p"), nodes)
    assert raw == [2, 0, 2, 0]
    _, raw, normalized = _raw_and_normalized(
        TaintTolerationScorer(), pod("p"), [node("a", taints=soft[:1]), *nodes[:2]]
    )
    assert (raw, normalized) == ([1, 2, 0], [50, 0, 100])


def test_taint_toleration_without_prefer_no_schedule_taints() -> None:
    hard = [{"key": "hard", "effect": "NoSchedule"}]
    _, raw, normalized = _raw_and_normalized(
        TaintTolerationScorer(), pod("p"), [node("a", taints=hard), node("b")]
    )
    assert (raw, normalized) == ([0, 0], [100, 100])


# --- NodeAffinity -----------------------------------------------------------------------------


def test_node_affinity_preferred_weights() -> None:
    def pref(weight: int, key: str, value: str) -> dict[str, Any]:
        return {
            "weight": weight,
            "preference": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]},
        }

    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                pref(3, ZONE, "a"),
                pref(7, "disk", "ssd"),
            ]
        }
    }
    nodes = [
        node("n1", labels={ZONE: "a"}),
        node("n2", labels={"disk": "ssd"}),
        node("n3", labels={ZONE: "a", "disk": "ssd"}),
        node("n4"),
    ]
    _, raw, normalized = _raw_and_normalized(
        NodeAffinityScorer(), pod("p", affinity=affinity), nodes
    )
    assert raw == [3, 7, 10, 0]
    assert normalized == [30, 70, 100, 0]
    assert _raw_and_normalized(NodeAffinityScorer(), pod("p"), nodes)[0] == Status(Code.Skip)


# --- InterPodAffinity -------------------------------------------------------------------------


def _zones() -> list[KubeObject]:
    return [
        node("n1", labels={ZONE: "a"}),
        node("n2", labels={ZONE: "a"}),
        node("n3", labels={ZONE: "b"}),
    ]


def test_incoming_preferred_affinity_and_anti_affinity() -> None:
    web = pod("web", labels={"app": "web"}, node_name="n1")
    sel = {"matchLabels": {"app": "web"}}
    attracted = pod("p", affinity=preferred("podAffinity", (10, term(sel, ZONE))))
    _, raw, normalized = _raw_and_normalized(InterPodAffinityScorer(), attracted, [*_zones(), web])
    assert (raw, normalized) == ([10, 10, 0], [100, 100, 0])
    repelled = pod("p", affinity=preferred("podAntiAffinity", (5, term(sel, ZONE))))
    _, raw, normalized = _raw_and_normalized(InterPodAffinityScorer(), repelled, [*_zones(), web])
    assert (raw, normalized) == ([-5, -5, 0], [0, 0, 100])


def test_existing_pods_terms_toward_the_incoming_pod() -> None:
    sel = {"matchLabels": {"app": "new"}}
    hard = pod("hard", node_name="n1", affinity=required("podAffinity", term(sel, ZONE)))
    incoming = pod("p", labels={"app": "new"})
    _, raw, normalized = _raw_and_normalized(InterPodAffinityScorer(), incoming, [*_zones(), hard])
    assert (raw, normalized) == ([1, 1, 0], [100, 100, 0])  # hardPodAffinityWeight 1
    _, raw, _ = _raw_and_normalized(
        InterPodAffinityScorer(hard_pod_affinity_weight=0), incoming, [*_zones(), hard]
    )
    assert raw == []  # nothing matched: Skip
    both = {
        **preferred("podAffinity", (4, term(sel, ZONE))),
        **preferred("podAntiAffinity", (9, term(sel, ZONE))),
    }
    soft = pod("soft", node_name="n3", affinity=both)
    _, raw, normalized = _raw_and_normalized(
        InterPodAffinityScorer(), incoming, [*_zones(), hard, soft]
    )
    assert raw == [1, 1, -5]
    assert normalized == [100, 100, 0]
    # Min-max in floating point, truncated: a zone-c node scores 0 -> 100 * 5/6 = 83.3 -> 83.
    zone_c = node("n4", labels={ZONE: "c"})
    _, raw, normalized = _raw_and_normalized(
        InterPodAffinityScorer(), incoming, [*_zones(), zone_c, hard, soft]
    )
    assert raw == [1, 1, -5, 0]
    assert normalized == [100, 100, 0, 83]


def test_inter_pod_affinity_skips_when_nothing_matches() -> None:
    status, _, _ = _raw_and_normalized(
        InterPodAffinityScorer(), pod("p"), [*_zones(), pod("x", node_name="n1")]
    )
    assert status == Status(Code.Skip)
    ignoring = InterPodAffinityScorer(ignore_preferred_terms_of_existing_pods=True)
    hard = pod("hard", node_name="n1", affinity=required("podAffinity", term({}, ZONE)))
    assert _raw_and_normalized(ignoring, pod("p"), [*_zones(), hard])[0] == Status(Code.Skip)


def test_nodes_without_labels_are_ignored_in_prescore() -> None:
    bare = node("bare")
    hard = pod(
        "hard",
        node_name="bare",
        affinity=required("podAffinity", term({}, "kubernetes.io/hostname")),
    )
    status, _, _ = _raw_and_normalized(InterPodAffinityScorer(), pod("p"), [bare, hard])
    assert status == Status(Code.Skip)


# --- running them together --------------------------------------------------------------------


def test_totals_are_weighted_sums_and_explained() -> None:
    soft = [{"key": "s", "effect": "PreferNoSchedule"}]
    objects: list[KubeObject] = [
        node("n1", taints=soft),
        node("n2"),
        pod("e", cpu="2", node_name="n2"),
    ]
    result = schedule_one(pod("p", cpu="100m"), Snapshot.from_objects(objects))
    assert result.suggested_host == "n2"
    # n1: one untolerated PreferNoSchedule taint -> 0 after reverse normalization; fit: cpu
    # (4000-100)*100/4000 = 97, memory (32768-200)*100/32768 = 99 -> 98.
    # n2: no taint -> 100 * 3; fit: cpu (4000-2100)*100/4000 = 47, memory 98 -> 72.
    # BalancedAllocation (real requests, no memory asked): n1 fractions 0.025 and 0, std
    # 0.0125 -> 98; n2 0.525 and 0, std 0.2625 -> 73. No images anywhere: ImageLocality 0.
    # No Service or controller selects the pod: PodTopologySpread skips it.
    assert result.node_scores == {
        "n1": {
            "TaintToleration": 0,
            "NodeResourcesFit": 98,
            "NodeResourcesBalancedAllocation": 98,
            "ImageLocality": 0,
        },
        "n2": {
            "TaintToleration": 300,
            "NodeResourcesFit": 72,
            "NodeResourcesBalancedAllocation": 73,
            "ImageLocality": 0,
        },
    }
    assert result.scores is not None
    assert result.scores.total_scores == [196, 445]
    listing = result.scores.as_list()
    assert [(s.name, s.total_score) for s in listing] == [("n1", 196), ("n2", 445)]
    assert [(ps.name, ps.score) for ps in listing[1].scores] == [
        ("TaintToleration", 300),
        ("NodeResourcesFit", 72),
        ("NodeResourcesBalancedAllocation", 73),
        ("ImageLocality", 0),
    ]


class _Broken:
    name = "Broken"
    weight = 1

    def __init__(self, *, pre: Status | None = None, score: int = 0) -> None:
        self.pre = pre
        self.score = score

    def pre_score(
        self, state: CycleState, p: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        return self.pre

    def score_nodes(self, state: CycleState, p: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        return [self.score] * len(node_infos)

    def normalize_score(self, state: CycleState, p: Pod, scores: list[int]) -> None:
        return None


def test_out_of_range_scores_and_prescore_errors() -> None:
    snap = Snapshot.from_objects([node("a"), node("b")])
    nodes = snap.node_info_list
    bad = prioritize_nodes(CycleState(), pod("p"), nodes, snap, [_Broken(score=101)])
    assert bad == Status(
        Code.Error,
        'plugin "Broken" returns an invalid score 101, it should in the range of [0, 100]'
        " after normalizing",
    )
    failing = prioritize_nodes(
        CycleState(), pod("p"), nodes, snap, [_Broken(pre=Status(Code.Unschedulable, "no"))]
    )
    assert failing == Status(Code.Error, 'running PreScore plugin "Broken": no')
    result = schedule_one(pod("p"), snap, score_plugins=[_Broken(score=-1)])
    assert result.status.code is Code.Error
    assert result.suggested_host == ""
    no_plugins = prioritize_nodes(CycleState(), pod("p"), nodes, snap, [])
    assert not isinstance(no_plugins, Status)
    assert no_plugins.total_scores == [1, 1]
