"""PodTopologySpread PreScore, Score and NormalizeScore.

Transcribed from kube 1.32's ``podtopologyspread/scoring_test.go`` (TestPreScoreSkip,
TestPreScoreStateEmptyNodes, TestPodTopologySpreadScore): the plugin scores the candidate
nodes (``nodes``) while counting pods on every node (``nodes`` + ``failed``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from kube.objects import KubeObject, Node, Pod
from scheduler.framework import Code, CycleState
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY, PreScoreState
from scheduler.snapshot import Snapshot
from tests.support import objects as obj
from tests.support.spread import (
    BAR,
    DNS,
    FOO,
    HOSTNAME,
    NONE,
    SA,
    UNSCHEDULABLE_TAINT,
    ZONE,
    match_labels,
    node_in,
    on,
    replica_set,
    service,
    tsc,
    unschedulable,
)


def hn(name: str, **labels: str) -> Node:
    return obj.node(name, {HOSTNAME: name, **labels})


def zh(name: str, zone: str) -> Node:
    return obj.node(name, {"zone": zone, HOSTNAME: name})


def w(size: int) -> float:
    return math.log(size + 2)


RS1 = ("apps/v1", "ReplicaSet", "rs1")


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "objs", "kw"),
    [
        (
            "the pod doesn't have soft topology spread Constraints",
            obj.pod("p"),
            [hn("node-a"), hn("node-b")],
            [],
            {"defaulting_type": "List"},
        ),
        (
            "default constraints and a replicaset that doesn't match",
            obj.pod(
                "p", labels={"foo": "bar", "baz": "sup"}, owner=("apps/v1", "ReplicaSet", "rs2")
            ),
            [obj.node("node-a", {"planet": "mars"})],
            [replica_set("rs1", {"matchExpressions": [{"key": "tar", "operator": "Exists"}]})],
            {
                "defaulting_type": "List",
                "default_constraints": [
                    {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA}
                ],
            },
        ),
        (
            "no nodes at all",
            obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone", SA)]),
            [],
            [],
            {},
        ),
    ],
)
def test_pre_score_skip(
    name: str, pod: Pod, nodes: list[Node], objs: list[KubeObject], kw: dict[str, Any]
) -> None:
    snapshot = Snapshot.from_objects([*nodes, *objs])
    state = CycleState()
    status = PodTopologySpread(**kw).pre_score(state, pod, snapshot.node_info_list, snapshot)
    assert status is not None and status.code is Code.Skip
    assert state.read(PRE_SCORE_STATE_KEY) is None


@dataclass
class PreScoreCase:
    name: str
    pod: Pod
    nodes: list[Node]
    constraints: list[tuple[int, str, str, str]]
    ignored: set[str]
    counts: dict[tuple[str, str], int]
    weights: list[float]
    objs: list[KubeObject] = field(default_factory=list)
    kw: dict[str, Any] = field(default_factory=lambda: {"defaulting_type": "List"})


HI = ("Honor", "Ignore")

PRE_SCORE_CASES = [
    PreScoreCase(
        "normal case",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone", SA), tsc(1, HOSTNAME, SA)]),
        [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")],
        [(1, "zone", *HI), (1, HOSTNAME, *HI)],
        set(),
        {("zone", "zone1"): 0, ("zone", "zone2"): 0},
        [w(2), w(3)],
    ),
    PreScoreCase(
        "null selector",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone", SA, NONE)]),
        [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")],
        [(1, "zone", *HI)],
        set(),
        {("zone", "zone1"): 0, ("zone", "zone2"): 0},
        [w(2)],
    ),
    PreScoreCase(
        "node-x doesn't have label zone",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone", SA), tsc(1, HOSTNAME, SA, BAR)]),
        [zh("node-a", "zone1"), zh("node-b", "zone1"), hn("node-x")],
        [(1, "zone", *HI), (1, HOSTNAME, *HI)],
        {"node-x"},
        {("zone", "zone1"): 0},
        [w(1), w(2)],
    ),
    PreScoreCase(
        "system default constraints and a replicaset",
        obj.pod("p", labels={"foo": "tar", "baz": "sup"}, owner=RS1),
        [
            hn("node-a", **{ZONE: "mars"}),
            hn("node-b", **{ZONE: "mars"}),
            hn("node-c"),  # no zone: a zone of its own ("")
            hn("node-d"),
        ],
        [(3, HOSTNAME, *HI), (5, ZONE, *HI)],
        set(),
        {(ZONE, "mars"): 0, (ZONE, ""): 0},
        [w(4), w(2)],
        objs=[replica_set("rs1", FOO)],
        kw={},
    ),
    PreScoreCase(
        "default constraints and a replicaset",
        obj.pod("p", labels={"foo": "tar", "baz": "sup"}, owner=RS1),
        [obj.node("node-a", {"rack": "rack1", HOSTNAME: "node-a", "planet": "mars"})],
        [(1, HOSTNAME, *HI), (2, "planet", *HI)],
        set(),
        {("planet", "mars"): 0},
        [w(1), w(1)],
        objs=[replica_set("rs1", FOO)],
        kw={
            "defaulting_type": "List",
            "default_constraints": [
                {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA},
                {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": DNS},
                {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA},
            ],
        },
    ),
    PreScoreCase(
        "default constraints and a replicaset, but pod has constraints",
        obj.pod(
            "p",
            labels={"foo": "bar", "baz": "sup"},
            owner=RS1,
            spread=[tsc(1, "zone", DNS, BAR), tsc(2, "planet", SA, match_labels(baz="sup"))],
        ),
        [obj.node("node-a", {"planet": "mars", "galaxy": "andromeda"})],
        [(2, "planet", *HI)],
        set(),
        {("planet", "mars"): 0},
        [w(1)],
        objs=[replica_set("rs1", FOO)],
        kw={
            "defaulting_type": "List",
            "default_constraints": [
                {"maxSkew": 2, "topologyKey": "galaxy", "whenUnsatisfiable": SA}
            ],
        },
    ),
    *[
        PreScoreCase(
            f"NodeAffinityPolicy {policy.lower()} with {how}",
            obj.pod(
                "p",
                labels={"foo": ""},
                node_selector={"foo": ""} if how == "labelSelectors" else None,
                affinity=node_in("foo", [""]) if how == "nodeAffinity" else None,
                spread=[
                    tsc(1, "zone", SA, BAR, affinity_policy=None if policy == "Honor" else policy)
                ],
            ),
            [
                obj.node("node-a", {"zone": "zone1", "foo": "", HOSTNAME: "node-a"}),
                obj.node("node-b", {"zone": "zone1", "foo": "", HOSTNAME: "node-b"}),
                zh("node-x", "zone2"),
            ],
            [(1, "zone", policy, "Ignore")],
            set(),
            {("zone", "zone1"): 0, ("zone", "zone2"): 0},
            [w(2)],
        )
        for policy in ("Honor", "Ignore")
        for how in ("labelSelectors", "nodeAffinity")
    ],
    *[
        PreScoreCase(
            f"NodeTaintsPolicy {policy.lower()}",
            obj.pod(
                "p",
                labels={"foo": ""},
                spread=[
                    tsc(1, "zone", SA, BAR, taints_policy="Honor" if policy == "Honor" else None)
                ],
            ),
            [
                obj.node("node-a", {"zone": "zone1", "foo": "", HOSTNAME: "node-a"}),
                obj.node("node-b", {"zone": "zone1", "foo": "", HOSTNAME: "node-b"}),
                obj.node(
                    "node-x", {"zone": "zone2", HOSTNAME: "node-x"}, taints=[UNSCHEDULABLE_TAINT]
                ),
            ],
            [(1, "zone", "Honor", policy)],
            set(),
            {("zone", "zone1"): 0, ("zone", "zone2"): 0},
            [w(2)],
        )
        for policy in ("Honor", "Ignore")
    ],
]


@pytest.mark.parametrize("case", PRE_SCORE_CASES, ids=lambda c: c.name)
def test_pre_score_state(case: PreScoreCase) -> None:
    snapshot = Snapshot.from_objects([*case.nodes, *case.objs])
    state = CycleState()
    pl = PodTopologySpread(**case.kw)
    assert pl.pre_score(state, case.pod, snapshot.node_info_list, snapshot) is None
    s = state.read(PRE_SCORE_STATE_KEY)
    assert isinstance(s, PreScoreState)
    assert [
        (c.max_skew, c.topology_key, c.node_affinity_policy, c.node_taints_policy)
        for c in s.constraints
    ] == case.constraints
    assert s.ignored_nodes == case.ignored
    assert s.topology_pair_to_pod_counts == case.counts
    assert s.topology_normalizing_weight == pytest.approx(case.weights)


@dataclass
class ScoreCase:
    name: str
    pod: Pod
    nodes: list[Node]
    existing: list[Pod]
    want: dict[str, int]
    failed: list[Node] = field(default_factory=list)
    objs: list[KubeObject] = field(default_factory=list)
    kw: dict[str, Any] = field(default_factory=dict)


def hostname_spread(max_skew: int = 1, selector: Any = FOO) -> Pod:
    return obj.pod("p", labels={"foo": ""}, spread=[tsc(max_skew, HOSTNAME, SA, selector)])


ABCD = ["node-a", "node-b", "node-c", "node-d"]
NO_GATES = {"enable_node_inclusion_policy": False, "enable_match_label_keys": False}


def a2_b1_d3() -> list[Pod]:
    return on("node-a", 2) + on("node-b", 1) + on("node-d", 3)


def a4_b3_c2_d1() -> list[Pod]:
    return on("node-a", 4) + on("node-b", 3) + on("node-c", 2) + on("node-d", 1)


def a4_b2_x1_y3() -> list[Pod]:
    return on("node-a", 4) + on("node-b", 2) + on("node-x", 1) + on("node-y", 3)


def policy_nodes(taint_c: bool = False) -> list[Node]:
    return [
        obj.node("node-a", {"node": "node-a", "foo": ""}),
        obj.node("node-b", {"node": "node-b", "foo": ""}),
        obj.node("node-c", {"node": "node-c"}, taints=unschedulable(taint_c)),
    ]


def a2_b1_c1() -> list[Pod]:
    return on("node-a", 2) + on("node-b", 1) + on("node-c", 1)


def four_zoned(*names: str) -> list[Node]:
    zones = {
        "node-a": "zone1",
        "node-b": "zone1",
        "node-x": "zone2",
        "node-y": "zone2",
        "node-c": "zone2",
        "node-d": "zone2",
    }
    return [zh(name, zones[name]) for name in names]


SCORE_CASES = [
    ScoreCase(
        "one constraint on node, no existing pods",
        hostname_spread(),
        [hn("node-a"), hn("node-b")],
        [],
        {"node-a": 100, "node-b": 100},
        kw=NO_GATES,
    ),
    ScoreCase(
        "one constraint on node, only one node is candidate",
        hostname_spread(),
        [hn("node-a")],
        on("node-a", 2) + on("node-b", 1),
        {"node-a": 100},
        failed=[hn("node-b")],
        kw=NO_GATES,
    ),
    ScoreCase(
        "one constraint on node, all nodes have the same number of matching pods",
        hostname_spread(),
        [hn("node-a"), hn("node-b")],
        on("node-a", 1) + on("node-b", 1),
        {"node-a": 100, "node-b": 100},
        kw=NO_GATES,
    ),
    ScoreCase(
        "one constraint on node, all 4 nodes are candidates",
        hostname_spread(),
        [hn(x) for x in ABCD],
        a2_b1_d3(),
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
        kw=NO_GATES,
    ),
    ScoreCase(
        "one constraint on node, null selector",
        hostname_spread(selector=NONE),
        [hn(x) for x in ABCD],
        a2_b1_d3(),
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
        kw=NO_GATES,
    ),
    ScoreCase(
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        hostname_spread(2),
        [hn(x) for x in ABCD],
        a2_b1_d3(),
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
        kw=NO_GATES,
    ),
    ScoreCase(
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        hostname_spread(3),
        [hn(x) for x in ABCD],
        a4_b3_c2_d1(),
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        kw=NO_GATES,
    ),
    ScoreCase(
        "system defaulting, nodes don't have zone, pods match service",
        obj.pod("p", labels={"foo": ""}),
        [hn(x) for x in ABCD],
        a4_b3_c2_d1(),
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        objs=[service({"foo": ""})],
        kw=NO_GATES,
    ),
    ScoreCase(
        "one constraint on node, 3 out of 4 nodes are candidates",
        hostname_spread(),
        [hn("node-a"), hn("node-b"), hn("node-x")],
        a4_b2_x1_y3(),
        {"node-a": 33, "node-b": 83, "node-x": 100},
        failed=[hn("node-y")],
        kw=NO_GATES,
    ),
    ScoreCase(
        "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match"
        " topology key",
        hostname_spread(),
        [hn("node-a"), obj.node("node-b", {"n": "node-b"}), hn("node-x")],
        a4_b2_x1_y3(),
        {"node-a": 16, "node-b": 0, "node-x": 100},
        failed=[hn("node-y")],
        kw=NO_GATES,
    ),
    ScoreCase(
        "one constraint on zone, 3 out of 4 nodes are candidates",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone", SA)]),
        four_zoned("node-a", "node-b", "node-x"),
        a4_b2_x1_y3(),
        {"node-a": 75, "node-b": 75, "node-x": 100},
        failed=four_zoned("node-y"),
        kw=NO_GATES,
    ),
    ScoreCase(
        "two Constraints on zone and node, 2 out of 4 nodes are candidates",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone", SA), tsc(1, HOSTNAME, SA)]),
        four_zoned("node-a", "node-x"),
        on("node-a", 2) + on("node-b", 1) + on("node-x", 2) + on("node-y", 4),
        {"node-a": 100, "node-x": 63},
        failed=four_zoned("node-b", "node-y"),
        kw=NO_GATES,
    ),
    ScoreCase(
        "two Constraints on zone and node, with different labelSelectors",
        obj.pod(
            "p",
            labels={"foo": "", "bar": ""},
            spread=[tsc(1, "zone", SA), tsc(1, HOSTNAME, SA, BAR)],
        ),
        four_zoned("node-a", "node-b", "node-x", "node-y"),
        [
            *on("node-a", 1),
            *on("node-b", 1, labels={"foo": "", "bar": ""}),
            *on("node-y", 1),
            *on("node-y", 1, labels={"bar": ""}, tag="b"),
        ],
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
        kw=NO_GATES,
    ),
    ScoreCase(
        "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        obj.pod(
            "p",
            labels={"foo": "", "bar": ""},
            spread=[tsc(1, "zone", SA), tsc(1, HOSTNAME, SA, BAR)],
        ),
        four_zoned("node-a", "node-b", "node-x", "node-y"),
        [
            *on("node-b", 1, labels={"bar": ""}),
            *on("node-x", 1),
            *on("node-y", 1, labels={"foo": "", "bar": ""}),
        ],
        {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
        kw=NO_GATES,
    ),
    ScoreCase(
        "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are"
        " candidates",
        obj.pod(
            "p",
            labels={"foo": "", "bar": ""},
            spread=[tsc(1, "zone", SA), tsc(1, HOSTNAME, SA, BAR)],
        ),
        four_zoned("node-a", "node-b", "node-x"),
        [
            *on("node-a", 1),
            *on("node-b", 1, labels={"foo": "", "bar": ""}),
            *on("node-y", 1),
            *on("node-y", 1, labels={"bar": ""}, tag="b"),
        ],
        {"node-a": 50, "node-b": 25, "node-x": 100},
        failed=four_zoned("node-y"),
        kw=NO_GATES,
    ),
    ScoreCase(
        "existing pods in a different namespace do not count",
        hostname_spread(),
        [hn("node-a"), hn("node-b")],
        on("node-a", 1, ns="ns1", tag="n") + on("node-a", 1) + on("node-b", 2),
        {"node-a": 100, "node-b": 33},
        kw=NO_GATES,
    ),
    ScoreCase(
        "terminating Pods should be excluded",
        hostname_spread(),
        [hn("node-a"), hn("node-b")],
        [
            obj.pod("p-a", node_name="node-a", labels={"foo": ""}, terminating=True),
            obj.pod("p-b", node_name="node-b", labels={"foo": ""}),
        ],
        {"node-a": 100, "node-b": 0},
        kw=NO_GATES,
    ),
    ScoreCase(
        "minDomains has no effect when ScheduleAnyway",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(2, "node", SA, min_domains=10)]),
        [obj.node(x, {"node": x}) for x in ("node-a", "node-b", "node-c")],
        on("node-a", 2) + on("node-b", 2) + on("node-c", 1),
        {"node-a": 75, "node-b": 75, "node-c": 100},
        kw=NO_GATES,
    ),
    ScoreCase(
        "NodeAffinityPolicy honoed with labelSelectors",
        obj.pod("p", labels={"foo": ""}, node_selector={"foo": ""}, spread=[tsc(1, "node", SA)]),
        policy_nodes(),
        a2_b1_c1(),
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    ScoreCase(
        "NodeAffinityPolicy ignored with labelSelectors",
        obj.pod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "node", SA, affinity_policy="Ignore")],
        ),
        policy_nodes(),
        a2_b1_c1(),
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    ScoreCase(
        "NodeAffinityPolicy honoed with nodeAffinity",
        obj.pod(
            "p", labels={"foo": ""}, affinity=node_in("foo", [""]), spread=[tsc(1, "node", SA)]
        ),
        policy_nodes(),
        a2_b1_c1(),
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    ScoreCase(
        "NodeAffinityPolicy ignored with nodeAffinity",
        obj.pod(
            "p",
            labels={"foo": ""},
            affinity=node_in("foo", [""]),
            spread=[tsc(1, "node", SA, affinity_policy="Ignore")],
        ),
        policy_nodes(),
        a2_b1_c1(),
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    ScoreCase(
        "NodeTaintsPolicy honored",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "node", SA, taints_policy="Honor")]),
        policy_nodes(taint_c=True),
        a2_b1_c1(),
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    ScoreCase(
        "NodeTaintsPolicy ignored",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "node", SA)]),
        policy_nodes(taint_c=True),
        a2_b1_c1(),
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    ScoreCase(
        "matchLabelKeys ignored when feature gate disabled",
        obj.pod(
            "p",
            labels={"foo": "", "bar": "", "baz": ""},
            spread=[
                tsc(1, "zone", SA, match_label_keys=["baz"]),
                tsc(1, HOSTNAME, SA, BAR, match_label_keys=["baz"]),
            ],
        ),
        [
            zh("node-a", "zone1"),
            zh("node-b", "zone1"),
            zh("node-c", "zone2"),
            zh("node-d", "zone2"),
        ],
        [
            *on("node-a", 1),
            *on("node-b", 1, labels={"foo": "", "bar": ""}),
            *on("node-c", 1),
            *on("node-c", 1, labels={"bar": ""}, tag="b"),
        ],
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
        kw=NO_GATES,
    ),
    ScoreCase(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        obj.pod(
            "p",
            labels={"foo": "", "bar": ""},
            spread=[
                tsc(1, "zone", SA, {}, match_label_keys=["foo"]),
                tsc(1, HOSTNAME, SA, {}, match_label_keys=["bar"]),
            ],
        ),
        [
            zh("node-a", "zone1"),
            zh("node-b", "zone1"),
            zh("node-c", "zone2"),
            zh("node-d", "zone2"),
        ],
        [
            *on("node-a", 1),
            *on("node-b", 1, labels={"foo": "", "bar": ""}),
            *on("node-c", 1),
            *on("node-c", 1, labels={"bar": ""}, tag="b"),
        ],
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
        kw={"enable_node_inclusion_policy": False},
    ),
    ScoreCase(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        obj.pod(
            "p",
            labels={"foo": "", "bar": "", "baz": ""},
            spread=[tsc(1, "zone", SA), tsc(1, HOSTNAME, SA, BAR, match_label_keys=["baz"])],
        ),
        [
            zh("node-a", "zone1"),
            zh("node-b", "zone1"),
            zh("node-c", "zone2"),
            zh("node-d", "zone2"),
        ],
        [
            *on("node-a", 1),
            *on("node-b", 1, labels={"foo": "", "bar": "", "baz": ""}),
            *on("node-c", 1),
            *on("node-c", 1, labels={"bar": ""}, tag="b"),
            *on("node-c", 1, labels={"bar": "", "baz": ""}, tag="bz"),
        ],
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
        kw={"enable_node_inclusion_policy": False},
    ),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.name)
def test_score(case: ScoreCase) -> None:
    snapshot = Snapshot.from_objects([*case.nodes, *case.failed, *case.existing, *case.objs])
    candidates = [snapshot.node_info(node.name) for node in case.nodes]
    state = CycleState()
    pl = PodTopologySpread(**case.kw)  # SystemDefaulting, as upstream's table
    assert pl.pre_score(state, case.pod, candidates, snapshot) is None
    scores = pl.score_nodes(state, case.pod, candidates)
    pl.normalize_score(state, case.pod, scores)
    assert dict(zip([n.name for n in case.nodes], scores, strict=True)) == case.want


def test_raw_score_is_the_rounded_weighted_count() -> None:
    # 2/1/0/3 on hostname, 4 candidates: weight log(6); node-a raw = round(2 * log 6) = 4.
    snapshot = Snapshot.from_objects([*[hn(x) for x in ABCD], *a2_b1_d3()])
    state = CycleState()
    pl = PodTopologySpread()
    pod = hostname_spread()
    pl.pre_score(state, pod, snapshot.node_info_list, snapshot)
    assert pl.score_nodes(state, pod, snapshot.node_info_list) == [
        round(2 * math.log(6)),
        round(1 * math.log(6)),
        0,
        round(3 * math.log(6)),
    ]
