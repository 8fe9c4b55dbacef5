"""PodTopologySpread Filter: one constraint and several, each node's status code.

Transcribed from kube 1.32's ``podtopologyspread/filtering_test.go``
(TestSingleConstraint, TestMultipleConstraints): same clusters,
same expected status codes. Upstream runs some cases with feature gates off; ``gates`` carries
those flags into the plugin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kube.objects import Node, Pod
from scheduler.framework import Code, CycleState
from scheduler.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.snapshot import Snapshot
from tests.support import objects as obj
from tests.support.spread import (
    BAR,
    DNS,
    NO_GATES,
    NONE,
    UNSCHEDULABLE_TAINT,
    UU,
    S,
    U,
    four_nodes,
    node_in,
    node_not_in,
    on,
    plugin,
    run_pre_filter,
    tsc,
    unschedulable,
    zn,
)

# --- Filter ----------------------------------------------------------------------------------


@dataclass
class FilterCase:
    name: str
    pod: Pod
    nodes: list[Node]
    existing: list[Pod]
    want: dict[str, Code]
    kw: dict[str, Any] = field(default_factory=dict)


def codes(a: Code, b: Code, x: Code, y: Code) -> dict[str, Code]:
    return {"node-a": a, "node-b": b, "node-x": x, "node-y": y}


def spread_a2_b1_y3() -> list[Pod]:
    return on("node-a", 2) + on("node-b", 1) + on("node-y", 3)


def node_only(*names: str, **extra: dict[str, str]) -> list[Node]:
    return [obj.node(name, {"node": name, **extra.get(name, {})}) for name in names]


def policy_nodes(tainted_y: bool = False) -> list[Node]:
    return [
        obj.node("node-a", {"node": "node-a", "foo": ""}),
        obj.node("node-b", {"node": "node-b", "foo": ""}),
        obj.node("node-x", {"node": "node-x", "foo": ""}),
        obj.node("node-y", {"node": "node-y"}, taints=unschedulable(tainted_y)),
    ]


POLICY_PODS = [
    obj.pod("p-b1", node_name="node-a", labels={"foo": ""}),
    obj.pod("p-b2", node_name="node-b", labels={"foo": ""}),
    obj.pod("p-y1", node_name="node-y", labels={"foo": ""}),
]

SINGLE_CASES = [
    FilterCase(
        "no existing pods",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        four_nodes(),
        [],
        codes(S, S, S, S),
    ),
    FilterCase(
        "no existing pods, incoming pod doesn't match itself",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone", DNS, BAR)]),
        four_nodes(),
        [],
        codes(S, S, S, S),
    ),
    FilterCase(
        "existing pods in a different namespace do not count",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        four_nodes(),
        [
            obj.pod("p-a1", namespace="ns1", node_name="node-a", labels={"foo": ""}),
            obj.pod("p-b1", namespace="ns2", node_name="node-a", labels={"foo": ""}),
            *on("node-x", 1),
            *on("node-y", 1),
        ],
        codes(S, S, U, U),
    ),
    FilterCase(
        "existing pods do not match null selector",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone", DNS, NONE)]),
        four_nodes(),
        on("node-x", 1) + on("node-y", 1),
        codes(S, S, S, S),
    ),
    FilterCase(
        "pods spread across zones as 3/3, all nodes fit",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(S, S, S, S),
    ),
    FilterCase(
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        [
            zn("node-a", "zone1"),
            obj.node("node-b", {"zon": "zone1", "node": "node-b"}),
            zn("node-x", "zone2"),
            zn("node-y", "zone2"),
        ],
        on("node-a", 1) + on("node-b", 1) + on("node-x", 1) + on("node-y", 1),
        codes(S, UU, U, U),
    ),
    FilterCase(
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "rack")]),
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        [],
        {"node-a": UU, "node-x": UU},
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "node")]),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(U, U, S, U),
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(2, "node")]),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(U, S, S, U),
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        obj.pod("p", labels={"bar": ""}, spread=[tsc(1, "node")]),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(U, S, S, U),
    ),
    FilterCase(
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        obj.pod(
            "p",
            labels={"foo": ""},
            affinity=node_in("node", ["node-a", "node-y"]),
            spread=[tsc(1, "node")],
        ),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(S, S, S, U),  # node-b and node-x pass here: NodeAffinity is another plugin
        kw=NO_GATES,
    ),
    FilterCase(
        "terminating Pods should be excluded",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "node")]),
        node_only("node-a", "node-b"),
        [
            obj.pod("p-a", node_name="node-a", labels={"foo": ""}, terminating=True),
            obj.pod("p-b", node_name="node-b", labels={"foo": ""}),
        ],
        {"node-a": S, "node-b": U},
    ),
    FilterCase(
        "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        obj.pod(
            "p",
            labels={"foo": ""},
            affinity=node_not_in("node", ["node-b"]),
            spread=[tsc(1, "zone")],
        ),
        four_nodes(),
        on("node-b", 2) + on("node-y", 1),
        codes(S, S, U, U),
        kw=NO_GATES,
    ),
    FilterCase(
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains,"
        " then the third node fits",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(2, "node", min_domains=4)]),
        node_only("node-a", "node-b", "node-c"),
        on("node-a", 2) + on("node-b", 2) + on("node-c", 1),
        {"node-a": U, "node-b": U, "node-c": S},
    ),
    FilterCase(
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains,"
        " then the all nodes fit",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(2, "node", min_domains=2)]),
        node_only("node-a", "node-b", "node-c"),
        on("node-a", 2) + on("node-b", 2) + on("node-c", 1),
        {"node-a": S, "node-b": S, "node-c": S},
    ),
    FilterCase(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains,"
        " then the third and fourth nodes fit",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(2, "zone", min_domains=3)]),
        four_nodes(),
        on("node-a", 1) + on("node-b", 1) + on("node-y", 1),
        codes(U, U, S, S),
    ),
    FilterCase(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains,"
        " then the all nodes fit",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(2, "zone", min_domains=1)]),
        four_nodes(),
        on("node-a", 1) + on("node-b", 1) + on("node-y", 1),
        codes(S, S, S, S),
    ),
    FilterCase(
        "NodeAffinityPolicy honored with labelSelectors",
        obj.pod("p", labels={"foo": ""}, node_selector={"foo": ""}, spread=[tsc(1, "node")]),
        policy_nodes(),
        POLICY_PODS,
        codes(U, U, S, S),
    ),
    FilterCase(
        "NodeAffinityPolicy ignored with labelSelectors",
        obj.pod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "node", affinity_policy="Ignore")],
        ),
        policy_nodes(),
        POLICY_PODS,
        codes(U, U, S, U),
    ),
    FilterCase(
        "NodeAffinityPolicy honored with nodeAffinity",
        obj.pod("p", labels={"foo": ""}, affinity=node_in("foo", [""]), spread=[tsc(1, "node")]),
        policy_nodes(),
        POLICY_PODS,
        codes(U, U, S, S),
    ),
    FilterCase(
        "NodeAffinityPolicy ignored with nodeAffinity",
        obj.pod(
            "p",
            labels={"foo": ""},
            affinity=node_in("foo", [""]),
            spread=[tsc(1, "node", affinity_policy="Ignore")],
        ),
        policy_nodes(),
        POLICY_PODS,
        codes(U, U, S, U),
    ),
    FilterCase(
        "NodeTaintsPolicy honored",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "node", taints_policy="Honor")]),
        policy_nodes(tainted_y=True),
        POLICY_PODS,
        codes(U, U, S, S),
    ),
    FilterCase(
        "NodeTaintsPolicy ignored",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "node")]),
        policy_nodes(tainted_y=True),
        POLICY_PODS,
        codes(U, U, S, U),
    ),
]

MULTIPLE_CASES = [
    FilterCase(
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone"), tsc(1, "node")]),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(U, U, S, U),
    ),
    FilterCase(
        "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone"), tsc(1, "node")]),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 4),
        codes(U, U, U, U),
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        obj.pod(
            "p", labels={"foo": "", "bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]
        ),
        four_nodes(),
        on("node-a", 1) + on("node-y", 1, labels={"bar": ""}),
        codes(U, U, S, U),
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        obj.pod(
            "p", labels={"foo": "", "bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]
        ),
        four_nodes(),
        on("node-a", 1) + on("node-x", 1, labels={"bar": ""}) + on("node-y", 1, labels={"bar": ""}),
        codes(U, U, U, U),
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        obj.pod(
            "p", labels={"foo": "", "bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]
        ),
        four_nodes(),
        [
            *on("node-a", 1),
            *on("node-a", 1, labels={"foo": "", "bar": ""}, tag="fb"),
            *on("node-y", 2),
            *on("node-y", 1, labels={"foo": "", "bar": ""}, tag="fb"),
        ],
        codes(U, S, U, U),
    ),
    FilterCase(
        "Constraints hold different labelSelectors but pod doesn't match itself on 'zone'"
        " constraint",
        obj.pod("p", labels={"bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]),
        four_nodes(),
        on("node-a", 1) + on("node-x", 1, labels={"bar": ""}) + on("node-y", 1, labels={"bar": ""}),
        codes(S, S, U, U),
    ),
    FilterCase(
        "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1,"
        " 1/0/0/1]",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone"), tsc(1, "node")]),
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            obj.node("node-x", {"zone": "zone2"}),
            zn("node-y", "zone2"),
        ],
        on("node-a", 1) + on("node-y", 1),
        codes(U, S, UU, U),
    ),
    FilterCase(
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        obj.pod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "zone"), tsc(1, "node", affinity_policy="Ignore")],
        ),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1", foo=""),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2"),
        ],
        on("node-a", 1) + on("node-b", 1) + on("node-y", 1),
        codes(U, U, S, U),
    ),
    FilterCase(
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        obj.pod(
            "p",
            labels={"foo": ""},
            spread=[tsc(1, "zone", taints_policy="Honor"), tsc(1, "node")],
        ),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1", foo=""),
            zn("node-x", "zone2", foo=""),
            obj.node("node-y", {"zone": "zone2", "node": "node-y"}, taints=[UNSCHEDULABLE_TAINT]),
        ],
        on("node-a", 1) + on("node-b", 1) + on("node-y", 1),
        codes(U, U, S, U),
    ),
    FilterCase(
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        obj.pod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "zone"), tsc(1, "node")],
        ),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1"),
            zn("node-x", "zone2", foo=""),
            obj.node(
                "node-y",
                {"zone": "zone2", "node": "node-y", "foo": ""},
                taints=[UNSCHEDULABLE_TAINT],
            ),
        ],
        on("node-a", 1) + on("node-b", 1) + on("node-y", 1),
        codes(U, S, S, U),
    ),
    FilterCase(
        "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        obj.pod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[
                tsc(1, "zone", taints_policy="Honor"),
                tsc(1, "node", affinity_policy="Ignore"),
            ],
        ),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1"),
            zn("node-x", "zone2", foo=""),
            obj.node(
                "node-y",
                {"zone": "zone2", "node": "node-y", "foo": ""},
                taints=[UNSCHEDULABLE_TAINT],
            ),
        ],
        on("node-a", 1) + on("node-b", 1) + on("node-y", 1),
        codes(U, U, S, U),
    ),
]


@pytest.mark.parametrize("case", SINGLE_CASES + MULTIPLE_CASES, ids=lambda c: c.name)
def test_filter(case: FilterCase) -> None:
    pl = plugin(**case.kw)
    state, snapshot, status = run_pre_filter(pl, case.pod, [*case.nodes, *case.existing])
    assert status is None
    got = {}
    for node in case.nodes:
        result = pl.filter(state, case.pod, snapshot.node_info(node.name))
        got[node.name] = Code.Success if result is None else result.code
        if result is not None:
            want_reason = (
                ERR_REASON_NODE_LABEL_NOT_MATCH
                if result.code is UU
                else ERR_REASON_CONSTRAINTS_NOT_MATCH
            )
            assert result.reasons == (want_reason,)
    assert got == case.want
    # The batch form agrees with the per-node form.
    passed, rejected = pl.filter_nodes(state, case.pod, snapshot.node_info_list)
    assert {ni.name for ni in passed} == {k for k, v in case.want.items() if v is S}
    assert {ni.name: st.code for ni, st in rejected} == {
        k: v for k, v in case.want.items() if v is not S
    }


def test_filter_without_pre_filter_state_is_an_error() -> None:
    pl = plugin()
    result = pl.filter(
        CycleState(), obj.pod("p"), Snapshot.from_objects([zn("node-a", "z")]).node_info("node-a")
    )
    assert result is not None and result.code is Code.Error
    assert result.message == 'reading "PreFilterPodTopologySpread" from cycleState: not found'


def test_invalid_plugin_args_are_rejected() -> None:
    with pytest.raises(ValueError, match="defaultingType"):
        PodTopologySpread(defaulting_type="Bogus")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r'when \.defaultingType is "System"'):
        PodTopologySpread(
            default_constraints=[{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": DNS}]
        )
    with pytest.raises(ValueError, match="must not define a selector"):
        PodTopologySpread(
            defaulting_type="List",
            default_constraints=[tsc(1, "z")],
        )
