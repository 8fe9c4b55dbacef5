"""PodTopologySpread PreFilter: the state it computes (domains, critical paths, matches).

Transcribed from kube 1.32's ``podtopologyspread/filtering_test.go`` (TestPreFilterState): same
clusters, same expected state. Upstream runs some cases with feature gates off; ``gates``
carries those flags into the plugin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kube.objects import KubeObject, Node, Pod
from scheduler.framework import Code
from scheduler.plugins.podtopologyspread.filtering import (
    PRE_FILTER_STATE_KEY,
    PreFilterState,
)
from tests.support import objects as obj
from tests.support.spread import (
    BAR,
    DNS,
    HH,
    HI,
    II,
    NO_GATES,
    NONE,
    NOT_SET,
    SA,
    UNSCHEDULABLE_TAINT,
    assert_state,
    four_nodes,
    match_labels,
    n,
    node_in,
    node_not_in,
    on,
    plugin,
    run_pre_filter,
    service,
    tolerate,
    tsc,
    z,
    zn,
)


@dataclass
class PreFilterCase:
    name: str
    pod: Pod
    nodes: list[Node]
    existing: list[Pod]
    domains: dict[str, int]
    paths: dict[str, tuple[tuple[str, int], tuple[str, int]]]
    pairs: dict[tuple[str, str], int]
    # (maxSkew, topologyKey, nodeAffinityPolicy, nodeTaintsPolicy) of each constraint
    constraints: list[tuple[int, str, str, str]]
    objs: list[KubeObject] = field(default_factory=list)
    kw: dict[str, Any] = field(default_factory=dict)


PRE_FILTER_CASES = [
    PreFilterCase(
        "clean cluster with one spreadConstraint",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(5, "zone", DNS, match_labels(foo="bar"))]),
        four_nodes(),
        [],
        {"zone": 2},
        {"zone": (("zone1", 0), ("zone2", 0))},
        z(0, 0),
        [(5, "zone", *HI)],
    ),
    PreFilterCase(
        "normal case with one spreadConstraint",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 2),
        {"zone": 2},
        {"zone": (("zone2", 2), ("zone1", 3))},
        z(3, 2),
        [(1, "zone", *HI)],
    ),
    PreFilterCase(
        "normal case with null label selector",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone", DNS, NONE)]),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 2),
        {"zone": 2},
        {"zone": (("zone2", 0), ("zone1", 0))},
        z(0, 0),
        [(1, "zone", *HI)],
    ),
    PreFilterCase(
        "normal case with one spreadConstraint, on a 3-zone cluster",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        [*four_nodes(), zn("node-o", "zone3"), zn("node-p", "zone3")],
        on("node-a", 2) + on("node-b", 1) + on("node-y", 2),
        {"zone": 3},
        {"zone": (("zone3", 0), ("zone2", 2))},
        z(3, 2, 0),
        [(1, "zone", *HI)],
    ),
    PreFilterCase(
        "namespace mismatch doesn't count",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        four_nodes(),
        [
            *on("node-a", 1),
            *on("node-a", 1, ns="ns1", tag="n"),
            *on("node-b", 1),
            *on("node-y", 1, ns="ns2", tag="n"),
            *on("node-y", 1),
        ],
        {"zone": 2},
        {"zone": (("zone2", 1), ("zone1", 2))},
        z(2, 1),
        [(1, "zone", *HI)],
    ),
    PreFilterCase(
        "normal case with two spreadConstraints",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone"), tsc(1, "node")]),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 4),
        {"zone": 2, "node": 4},
        {"zone": (("zone1", 3), ("zone2", 4)), "node": (("node-x", 0), ("node-b", 1))},
        {**z(3, 4), **n(a=2, b=1, x=0, y=4)},
        [(1, "zone", *HI), (1, "node", *HI)],
    ),
    PreFilterCase(
        "soft spreadConstraints should be bypassed",
        obj.pod(
            "p",
            labels={"foo": ""},
            spread=[tsc(1, "zone", SA), tsc(1, "zone"), tsc(1, "node", SA), tsc(1, "node")],
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        on("node-a", 2) + on("node-b", 1) + on("node-y", 4),
        {"zone": 2, "node": 3},
        {"zone": (("zone1", 3), ("zone2", 4)), "node": (("node-b", 1), ("node-a", 2))},
        {**z(3, 4), **n(a=2, b=1, y=4)},
        [(1, "zone", *HI), (1, "node", *HI)],
    ),
    PreFilterCase(
        "different labelSelectors - simple version",
        obj.pod(
            "p", labels={"foo": "", "bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        on("node-a", 1) + on("node-b", 1, labels={"bar": ""}),
        {"zone": 2, "node": 3},
        {"zone": (("zone2", 0), ("zone1", 1)), "node": (("node-a", 0), ("node-y", 0))},
        {**z(1, 0), **n(a=0, b=1, y=0)},
        [(1, "zone", *HI), (1, "node", *HI)],
    ),
    PreFilterCase(
        "different labelSelectors - complex pods",
        obj.pod(
            "p", labels={"foo": "", "bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        [
            *on("node-a", 1),
            *on("node-a", 1, labels={"foo": "", "bar": ""}, tag="fb"),
            *on("node-b", 1),
            *on("node-y", 2),
            *on("node-y", 2, labels={"foo": "", "bar": ""}, tag="fb"),
        ],
        {"zone": 2, "node": 3},
        {"zone": (("zone1", 3), ("zone2", 4)), "node": (("node-b", 0), ("node-a", 1))},
        {**z(3, 4), **n(a=1, b=0, y=2)},
        [(1, "zone", *HI), (1, "node", *HI)],
    ),
    PreFilterCase(
        "two spreadConstraints, and with podAffinity",
        obj.pod(
            "p",
            labels={"foo": ""},
            affinity=node_not_in("node", ["node-x"]),
            spread=[tsc(1, "zone"), tsc(1, "node")],
        ),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 4),
        {"zone": 2, "node": 3},
        {"zone": (("zone1", 3), ("zone2", 4)), "node": (("node-b", 1), ("node-a", 2))},
        {**z(3, 4), **n(a=2, b=1, y=4)},
        [(1, "zone", *HI), (1, "node", *HI)],
        kw=NO_GATES,
    ),
    PreFilterCase(
        "default constraints and a service",
        obj.pod("p", labels={"foo": "bar", "baz": "kar"}),
        [],
        [],
        {},
        {"node": (NOT_SET, NOT_SET), "rack": (NOT_SET, NOT_SET)},
        {},
        [(3, "node", *HI), (5, "rack", *HI)],
        objs=[service({"foo": "bar"})],
        kw={
            "default_constraints": [
                {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS},
                {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA},
                {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": DNS},
            ]
        },
    ),
    PreFilterCase(
        "default constraints and a service, but pod has constraints",
        obj.pod(
            "p",
            labels={"foo": "bar", "baz": "tar"},
            spread=[
                tsc(1, "zone", DNS, match_labels(baz="tar")),
                tsc(2, "planet", SA, match_labels(fot="rok")),
            ],
        ),
        [],
        [],
        {},
        {"zone": (NOT_SET, NOT_SET)},
        {},
        [(1, "zone", *HI)],
        objs=[service({"foo": "bar"})],
        kw={
            "default_constraints": [
                {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": DNS},
            ]
        },
    ),
    PreFilterCase(
        "TpKeyToDomainsNum is calculated when MinDomains is enabled",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone"), tsc(1, "node")]),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 4),
        {"zone": 2, "node": 4},
        {"zone": (("zone1", 3), ("zone2", 4)), "node": (("node-x", 0), ("node-b", 1))},
        {**z(3, 4), **n(a=2, b=1, x=0, y=4)},
        [(1, "zone", *HI), (1, "node", *HI)],
    ),
    PreFilterCase(
        "feature gate disabled with NodeAffinityPolicy",
        obj.pod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "node", DNS, BAR)],
        ),
        [
            obj.node("node-a", {"node": "node-a", "foo": ""}),
            obj.node("node-b", {"node": "node-b", "foo": ""}),
            obj.node("node-c", {"node": "node-c", "bar": ""}),
        ],
        [
            *on("node-a", 1, labels={"bar": ""}),
            *on("node-b", 2, labels={"bar": ""}),
            *on("node-c", 1, labels={}),
        ],
        {"node": 2},
        {"node": (("node-a", 1), ("node-b", 2))},
        n(a=1, b=2),
        [(1, "node", *HI)],
        kw=NO_GATES,
    ),
    PreFilterCase(
        "NodeAffinityPolicy honored with labelSelectors",
        obj.pod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "node", DNS, BAR)],
        ),
        [
            obj.node("node-a", {"node": "node-a", "foo": ""}),
            obj.node("node-b", {"node": "node-b", "foo": ""}),
            obj.node("node-c", {"node": "node-c", "bar": ""}),
        ],
        [
            *on("node-a", 1, labels={"bar": ""}),
            *on("node-b", 2, labels={"bar": ""}),
            *on("node-c", 1, labels={}),
        ],
        {"node": 2},
        {"node": (("node-a", 1), ("node-b", 2))},
        n(a=1, b=2),
        [(1, "node", *HI)],
    ),
    PreFilterCase(
        "NodeAffinityPolicy ignored with labelSelectors",
        obj.pod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "node", DNS, BAR, affinity_policy="Ignore")],
        ),
        [
            obj.node("node-a", {"node": "node-a", "foo": ""}),
            obj.node("node-b", {"node": "node-b", "foo": ""}),
            obj.node("node-c", {"node": "node-c", "bar": ""}),
        ],
        [
            *on("node-a", 1, labels={"bar": ""}),
            *on("node-b", 2, labels={"bar": ""}),
            *on("node-c", 1, labels={}),
        ],
        {"node": 3},
        {"node": (("node-c", 0), ("node-a", 1))},
        n(a=1, b=2, c=0),
        [(1, "node", *II)],
    ),
    PreFilterCase(
        "NodeAffinityPolicy honored with nodeAffinity",
        obj.pod(
            "p",
            labels={"foo": ""},
            affinity=node_in("foo", [""]),
            spread=[tsc(1, "node", DNS, BAR)],
        ),
        [
            obj.node("node-a", {"node": "node-a", "foo": ""}),
            obj.node("node-b", {"node": "node-b", "foo": ""}),
            obj.node("node-c", {"node": "node-c", "bar": ""}),
        ],
        [
            *on("node-a", 1, labels={"bar": ""}),
            *on("node-b", 2, labels={"bar": ""}),
            *on("node-c", 1, labels={}),
        ],
        {"node": 2},
        {"node": (("node-a", 1), ("node-b", 2))},
        n(a=1, b=2),
        [(1, "node", *HI)],
    ),
    PreFilterCase(
        "NodeAffinityPolicy ignored with nodeAffinity",
        obj.pod(
            "p",
            labels={"foo": ""},
            affinity=node_in("foo", [""]),
            spread=[tsc(1, "node", DNS, BAR, affinity_policy="Ignore")],
        ),
        [
            obj.node("node-a", {"node": "node-a", "foo": ""}),
            obj.node("node-b", {"node": "node-b", "foo": ""}),
            obj.node("node-c", {"node": "node-c", "bar": ""}),
        ],
        [
            *on("node-a", 1, labels={"bar": ""}),
            *on("node-b", 2, labels={"bar": ""}),
            *on("node-c", 1, labels={}),
        ],
        {"node": 3},
        {"node": (("node-c", 0), ("node-a", 1))},
        n(a=1, b=2, c=0),
        [(1, "node", *II)],
    ),
    PreFilterCase(
        "feature gate disabled with NodeTaintsPolicy",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "node", DNS, BAR)]),
        [
            obj.node("node-a", {"node": "node-a"}),
            obj.node("node-b", {"node": "node-b"}),
            obj.node("node-c", {"node": "node-c", "bar": ""}, taints=[UNSCHEDULABLE_TAINT]),
        ],
        [
            *on("node-a", 1, labels={"bar": ""}),
            *on("node-b", 2, labels={"bar": ""}),
            *on("node-c", 1, labels={}),
        ],
        {"node": 3},
        {"node": (("node-c", 0), ("node-a", 1))},
        n(a=1, b=2, c=0),
        [(1, "node", *HI)],
        kw=NO_GATES,
    ),
    PreFilterCase(
        "NodeTaintsPolicy ignored",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "node", DNS, BAR)]),
        [
            obj.node("node-a", {"node": "node-a"}),
            obj.node("node-b", {"node": "node-b"}),
            obj.node("node-c", {"node": "node-c", "bar": ""}, taints=[UNSCHEDULABLE_TAINT]),
        ],
        [
            *on("node-a", 1, labels={"bar": ""}),
            *on("node-b", 2, labels={"bar": ""}),
            *on("node-c", 1, labels={}),
        ],
        {"node": 3},
        {"node": (("node-c", 0), ("node-a", 1))},
        n(a=1, b=2, c=0),
        [(1, "node", *HI)],
    ),
    PreFilterCase(
        "NodeTaintsPolicy honored",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "node", DNS, BAR, taints_policy="Honor")]),
        [
            obj.node("node-a", {"node": "node-a"}),
            obj.node("node-b", {"node": "node-b"}),
            obj.node("node-c", {"node": "node-c", "bar": ""}, taints=[UNSCHEDULABLE_TAINT]),
        ],
        [
            *on("node-a", 1, labels={"bar": ""}),
            *on("node-b", 2, labels={"bar": ""}),
            *on("node-c", 1, labels={}),
        ],
        {"node": 2},
        {"node": (("node-a", 1), ("node-b", 2))},
        n(a=1, b=2),
        [(1, "node", *HH)],
    ),
    PreFilterCase(
        "NodeTaintsPolicy honored with tolerated taints",
        obj.pod(
            "p",
            labels={"foo": ""},
            tolerations=tolerate(UNSCHEDULABLE_TAINT["key"]),
            spread=[tsc(1, "node", DNS, BAR, taints_policy="Honor")],
        ),
        [
            obj.node("node-a", {"node": "node-a"}),
            obj.node("node-b", {"node": "node-b"}),
            obj.node("node-c", {"node": "node-c", "bar": ""}, taints=[UNSCHEDULABLE_TAINT]),
        ],
        [
            *on("node-a", 1, labels={"bar": ""}),
            *on("node-b", 2, labels={"bar": ""}),
            *on("node-c", 1, labels={}),
        ],
        {"node": 3},
        {"node": (("node-c", 0), ("node-a", 1))},
        n(a=1, b=2, c=0),
        [(1, "node", *HH)],
    ),
    PreFilterCase(
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        obj.pod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "zone"), tsc(1, "node", affinity_policy="Ignore")],
        ),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1"),
            zn("node-x", "zone2", foo=""),
        ],
        on("node-b", 2) + on("node-x", 1),
        {"zone": 2, "node": 3},
        {"zone": (("zone1", 0), ("zone2", 1)), "node": (("node-a", 0), ("node-x", 1))},
        {**z(0, 1), **n(a=0, b=2, x=1)},
        [(1, "zone", *HI), (1, "node", *II)],
    ),
    PreFilterCase(
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        obj.pod(
            "p",
            labels={"foo": ""},
            spread=[tsc(1, "zone", taints_policy="Honor"), tsc(1, "node")],
        ),
        [
            zn("node-a", "zone1", foo=""),
            obj.node("node-b", {"zone": "zone1", "node": "node-b"}, taints=[UNSCHEDULABLE_TAINT]),
            zn("node-x", "zone2", foo=""),
        ],
        on("node-b", 2) + on("node-x", 1),
        {"zone": 2, "node": 3},
        {"zone": (("zone1", 0), ("zone2", 1)), "node": (("node-a", 0), ("node-x", 1))},
        {**z(0, 1), **n(a=0, b=2, x=1)},
        [(1, "zone", *HH), (1, "node", *HI)],
    ),
    PreFilterCase(
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        obj.pod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "zone"), tsc(1, "node")],
        ),
        [
            zn("node-a", "zone1"),
            obj.node(
                "node-b",
                {"zone": "zone1", "node": "node-b", "foo": ""},
                taints=[UNSCHEDULABLE_TAINT],
            ),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2"),
        ],
        on("node-a", 2) + on("node-x", 1) + on("node-y", 1),
        {"zone": 2, "node": 2},
        {"zone": (("zone1", 0), ("zone2", 1)), "node": (("node-b", 0), ("node-x", 1))},
        {**z(0, 1), **n(b=0, x=1)},
        [(1, "zone", *HI), (1, "node", *HI)],
    ),
    PreFilterCase(
        "two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        obj.pod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[
                tsc(1, "zone", affinity_policy="Ignore"),
                tsc(1, "node", taints_policy="Honor"),
            ],
        ),
        [
            zn("node-a", "zone1"),
            obj.node(
                "node-b",
                {"zone": "zone1", "node": "node-b", "foo": ""},
                taints=[UNSCHEDULABLE_TAINT],
            ),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2", foo=""),
        ],
        on("node-a", 2) + on("node-x", 2) + on("node-y", 1),
        {"zone": 2, "node": 2},
        {"zone": (("zone1", 2), ("zone2", 3)), "node": (("node-y", 1), ("node-x", 2))},
        {**z(2, 3), **n(x=2, y=1)},
        [(1, "zone", *II), (1, "node", *HH)],
    ),
    PreFilterCase(
        "matchLabelKeys ignored when feature gate disabled",
        obj.pod(
            "p",
            labels={"foo": "", "bar": ""},
            spread=[tsc(1, "zone", match_label_keys=["bar"])],
        ),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 2),
        {"zone": 2},
        {"zone": (("zone2", 2), ("zone1", 3))},
        z(3, 2),
        [(1, "zone", *HI)],
        kw={"enable_match_label_keys": False},
    ),
    PreFilterCase(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        obj.pod(
            "p",
            labels={"foo": "", "bar": "a"},
            spread=[tsc(1, "zone", match_label_keys=["bar"])],
        ),
        four_nodes(),
        [
            *on("node-a", 1),
            *on("node-a", 1, labels={"foo": "", "bar": "a"}, tag="fb"),
            *on("node-b", 1),
            *on("node-y", 1, labels={"foo": "", "bar": "a"}),
            *on("node-y", 1, labels={"bar": ""}, tag="b"),
        ],
        {"zone": 2},
        {"zone": (("zone2", 1), ("zone1", 1))},
        z(1, 1),
        [(1, "zone", *HI)],
    ),
    PreFilterCase(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        obj.pod(
            "p", labels={"foo": "a"}, spread=[tsc(1, "zone", DNS, {}, match_label_keys=["foo"])]
        ),
        four_nodes(),
        on("node-a", 2, labels={"foo": "a"})
        + on("node-b", 1, labels={"foo": "a"})
        + on("node-y", 2, labels={"foo": "a"}),
        {"zone": 2},
        {"zone": (("zone2", 2), ("zone1", 3))},
        z(3, 2),
        [(1, "zone", *HI)],
    ),
    PreFilterCase(
        "key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
        obj.pod(
            "p", labels={"foo": ""}, spread=[tsc(1, "zone", DNS, NONE, match_label_keys=["bar"])]
        ),
        four_nodes(),
        on("node-a", 2, labels={"foo": "a"})
        + on("node-b", 1, labels={"foo": "a"})
        + on("node-y", 2, labels={"foo": "a"}),
        {"zone": 2},
        {"zone": (("zone2", 0), ("zone1", 0))},
        z(0, 0),
        [(1, "zone", *HI)],
    ),
    PreFilterCase(
        "no pod is matched when LabelSelector is nil when feature gate disabled",
        obj.pod(
            "p", labels={"foo": ""}, spread=[tsc(1, "zone", DNS, NONE, match_label_keys=["bar"])]
        ),
        four_nodes(),
        on("node-a", 2, labels={"foo": "a"})
        + on("node-b", 1, labels={"foo": "a"})
        + on("node-y", 2, labels={"foo": "a"}),
        {"zone": 2},
        {"zone": (("zone2", 0), ("zone1", 0))},
        z(0, 0),
        [(1, "zone", *HI)],
        kw={"enable_match_label_keys": False},
    ),
    PreFilterCase(
        "key in matchLabelKeys is ignored when it isn't exist in pod.labels",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone", match_label_keys=["bar"])]),
        four_nodes(),
        on("node-a", 2, labels={"foo": "a"})
        + on("node-b", 1, labels={"foo": "a"})
        + on("node-y", 2, labels={"foo": "a"}),
        {"zone": 2},
        {"zone": (("zone2", 2), ("zone1", 3))},
        z(3, 2),
        [(1, "zone", *HI)],
    ),
]


@pytest.mark.parametrize("case", PRE_FILTER_CASES, ids=lambda c: c.name)
def test_pre_filter_state(case: PreFilterCase) -> None:
    state, _, status = run_pre_filter(
        plugin(**case.kw), case.pod, [*case.nodes, *case.existing, *case.objs]
    )
    assert status is None
    s = state.read(PRE_FILTER_STATE_KEY)
    assert isinstance(s, PreFilterState)
    assert [
        (c.max_skew, c.topology_key, c.node_affinity_policy, c.node_taints_policy)
        for c in s.constraints
    ] == case.constraints
    assert all(c.min_domains == 1 for c in s.constraints)
    assert_state(s, case.domains, case.paths, case.pairs)


def test_pre_filter_selectors_merge_match_label_keys_and_defaults() -> None:
    pod = obj.pod(
        "p", labels={"foo": "", "bar": "a"}, spread=[tsc(1, "zone", match_label_keys=["bar"])]
    )
    state, _, _ = run_pre_filter(plugin(), pod, four_nodes())
    (c,) = state.read(PRE_FILTER_STATE_KEY).constraints
    # foo Exists AND bar=a
    assert c.selects({"foo": "", "bar": "a"})
    assert not c.selects({"foo": "", "bar": "b"})
    assert not c.selects({"bar": "a"})
    # The default constraints take the Service's selector.
    state, _, _ = run_pre_filter(
        plugin(
            default_constraints=[{"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS}]
        ),
        obj.pod("p", labels={"foo": "bar", "baz": "kar"}),
        [service({"foo": "bar"})],
    )
    (c,) = state.read(PRE_FILTER_STATE_KEY).constraints
    assert c.selects({"foo": "bar"}) and not c.selects({"baz": "kar"})


@pytest.mark.parametrize(
    ("name", "pod", "defaults", "objs"),
    [
        (
            "default constraints and a service that doesn't match",
            obj.pod("p", labels={"foo": "bar"}),
            [{"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS}],
            [service({"baz": "kep"})],
        ),
        (
            "default soft constraints and a service",
            obj.pod("p", labels={"foo": "bar"}),
            [{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA}],
            [service({"foo": "bar"})],
        ),
        ("skip if not specified", obj.pod("p", labels={"foo": ""}), [], []),
    ],
)
def test_pre_filter_skips(
    name: str, pod: Pod, defaults: list[dict[str, Any]], objs: list[KubeObject]
) -> None:
    state, _, status = run_pre_filter(
        plugin(default_constraints=defaults), pod, [zn("node-a", "zone1"), *objs]
    )
    assert status is not None and status.code is Code.Skip
    assert state.read(PRE_FILTER_STATE_KEY) is None
