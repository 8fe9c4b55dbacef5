"""PodTopologySpread PreFilterExtensions: the state after AddPod and RemovePod.

Transcribed from kube 1.32's ``podtopologyspread/filtering_test.go``
(TestPreFilterStateAddPod, TestPreFilterStateRemovePod): same clusters,
same expected state. Upstream runs some cases with feature gates off; ``gates`` carries
those flags into the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kube.objects import Node, Pod
from scheduler.plugins.podtopologyspread.filtering import (
    PRE_FILTER_STATE_KEY,
)
from tests.support import objects as obj
from tests.support.spread import (
    BAR,
    DNS,
    FOO,
    NOT_SET,
    UNSCHEDULABLE_TAINT,
    assert_state,
    four_nodes,
    n,
    node_not_in,
    on,
    plugin,
    run_pre_filter,
    tolerate,
    tsc,
    z,
    zn,
)

# --- AddPod / RemovePod ----------------------------------------------------------------------


@dataclass
class ExtensionCase:
    name: str
    preemptor: Pod
    nodes: list[Node]
    existing: list[Pod]
    changed: Pod  # the pod added (add_pod) or removed (remove_pod)
    node_idx: int
    domains: dict[str, int]
    paths: dict[str, tuple[tuple[str, int], tuple[str, int]]]
    pairs: dict[tuple[str, str], int]
    kw: dict[str, Any] = field(default_factory=dict)


def preemptor(*keys: str, selector: Mapping[str, Any] = FOO, **extra: Any) -> Pod:
    labels = {"foo": "", **({"bar": ""} if "bar" in extra.pop("with_labels", ()) else {})}
    return obj.pod("p", labels=labels, spread=[tsc(1, k) for k in keys], **extra)


def zn_foo(name: str, zone: str, foo: str) -> Node:
    return obj.node(name, {"zone": zone, "node": name, "foo": foo})


ADD_CASES = [
    ExtensionCase(
        "node a and b both impact current min match",
        preemptor("node"),
        [zn("node-a", "zone1"), zn("node-b", "zone1")],
        [],
        obj.pod("p-a1", node_name="node-a", labels={"foo": ""}),
        0,
        {"node": 2},
        {"node": (("node-b", 0), ("node-a", 1))},
        n(a=1, b=0),
    ),
    ExtensionCase(
        "only node a impacts current min match",
        preemptor("node"),
        [zn("node-a", "zone1"), zn("node-b", "zone1")],
        on("node-b", 1),
        obj.pod("p-a1", node_name="node-a", labels={"foo": ""}),
        0,
        {"node": 2},
        {"node": (("node-a", 1), ("node-b", 1))},
        n(a=1, b=1),
    ),
    ExtensionCase(
        "add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
        preemptor("node"),
        [zn("node-a", "zone1"), zn("node-b", "zone1")],
        on("node-b", 1),
        obj.pod("p-a1", node_name="node-a", namespace="ns1", labels={"foo": ""}),
        0,
        {"node": 2},
        {"node": (("node-a", 0), ("node-b", 1))},
        n(a=0, b=1),
    ),
    ExtensionCase(
        "add pod on non-critical node won't trigger re-calculation",
        preemptor("node"),
        [zn("node-a", "zone1"), zn("node-b", "zone1")],
        on("node-b", 1),
        obj.pod("p-b2", node_name="node-b", labels={"foo": ""}),
        1,
        {"node": 2},
        {"node": (("node-a", 0), ("node-b", 2))},
        n(a=0, b=2),
    ),
    ExtensionCase(
        "node a and x both impact topologyKeyToMinPodsMap on zone and node",
        preemptor("zone", "node"),
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        [],
        obj.pod("p-a1", node_name="node-a", labels={"foo": ""}),
        0,
        {"zone": 2, "node": 2},
        {"zone": (("zone2", 0), ("zone1", 1)), "node": (("node-x", 0), ("node-a", 1))},
        {**z(1, 0), **n(a=1, x=0)},
    ),
    ExtensionCase(
        "only node a impacts topologyKeyToMinPodsMap on zone and node",
        preemptor("zone", "node"),
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        on("node-x", 1),
        obj.pod("p-a1", node_name="node-a", labels={"foo": ""}),
        0,
        {"zone": 2, "node": 2},
        {"zone": (("zone1", 1), ("zone2", 1)), "node": (("node-a", 1), ("node-x", 1))},
        {**z(1, 1), **n(a=1, x=1)},
    ),
    ExtensionCase(
        "node a impacts topologyKeyToMinPodsMap on node, node x impacts topologyKeyToMinPodsMap"
        " on zone",
        preemptor("zone", "node"),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        on("node-b", 2) + on("node-x", 1),
        obj.pod("p-a1", node_name="node-a", labels={"foo": ""}),
        0,
        {"zone": 2, "node": 3},
        {"zone": (("zone2", 1), ("zone1", 3)), "node": (("node-a", 1), ("node-x", 1))},
        {**z(3, 1), **n(a=1, b=2, x=1)},
    ),
    ExtensionCase(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone",
        obj.pod(
            "p", labels={"foo": "", "bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        [
            *on("node-b", 1, labels={"foo": "", "bar": ""}),
            *on("node-x", 1, labels={"foo": "", "bar": ""}),
            *on("node-x", 1, labels={"bar": ""}, tag="b"),
        ],
        obj.pod("p-a1", node_name="node-a", labels={"foo": ""}),
        0,
        {"zone": 2, "node": 3},
        {"zone": (("zone2", 1), ("zone1", 2)), "node": (("node-a", 0), ("node-b", 1))},
        {**z(2, 1), **n(a=0, b=1, x=2)},
    ),
    ExtensionCase(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on"
        " both zone and node",
        obj.pod(
            "p", labels={"foo": "", "bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        [
            *on("node-b", 1, labels={"bar": ""}),
            *on("node-x", 1, labels={"foo": "", "bar": ""}),
            *on("node-x", 1, labels={"bar": ""}, tag="b"),
        ],
        obj.pod("p-a1", node_name="node-a", labels={"foo": "", "bar": ""}),
        0,
        {"zone": 2, "node": 3},
        {"zone": (("zone1", 1), ("zone2", 1)), "node": (("node-a", 1), ("node-b", 1))},
        {**z(1, 1), **n(a=1, b=1, x=2)},
    ),
    *[
        ExtensionCase(
            f"add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy"
            f" {gate}",
            obj.pod(
                "p",
                labels={"foo": ""},
                affinity=node_not_in("foo", ["bar"]),
                spread=[tsc(1, "zone")],
            ),
            [zn_foo("node-a", "zone1", "bar"), zn_foo("node-b", "zone2", "")],
            [
                obj.pod("p-a2", node_name="node-a", labels={"foo": "", "zone": "zone1"}),
                obj.pod("p-b1", node_name="node-b", labels={"foo": "", "zone": "zone2"}),
            ],
            obj.pod("p-a1", node_name="node-a", labels={"foo": "", "zone": "zone1"}),
            0,
            {"zone": 1},
            {"zone": (("zone2", 1), NOT_SET)},
            {("zone", "zone2"): 1},
            kw={"enable_node_inclusion_policy": gate == "enabled"},
        )
        for gate in ("disabled", "enabled")
    ],
    *[
        ExtensionCase(
            f"add a pod when scheduling node affinity matched pod with NodeInclusionPolicy {gate}",
            obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
            [zn_foo("node-a", "zone1", "bar"), zn_foo("node-b", "zone2", "")],
            [
                obj.pod("p-a1", node_name="node-a", labels={"foo": "", "zone": "zone1"}),
                obj.pod("p-b2", node_name="node-b", labels={"foo": "", "zone": "zone2"}),
            ],
            obj.pod("p-b1", node_name="node-b", labels={"foo": "", "zone": "zone2"}),
            1,
            {"zone": 2},
            {"zone": (("zone1", 1), ("zone2", 2))},
            z(1, 2),
            kw={"enable_node_inclusion_policy": gate == "enabled"},
        )
        for gate in ("disabled", "enabled")
    ],
    ExtensionCase(
        "add a label selector not matched pod when with NodeInclusionPolicy enabled",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        [zn_foo("node-a", "zone1", "bar"), zn_foo("node-b", "zone2", "")],
        [
            obj.pod("p-a1", node_name="node-a", labels={"foo": "", "zone": "zone1"}),
            obj.pod("p-b2", node_name="node-b", labels={"foo": "", "zone": "zone2"}),
        ],
        obj.pod("p-b1", node_name="node-b", labels={"zone": "zone2"}),
        1,
        {"zone": 2},
        {"zone": (("zone1", 1), ("zone2", 1))},
        z(1, 1),
    ),
    ExtensionCase(
        "add a pod when scheduling taint untolerated pod with NodeInclusionPolicy disabled",
        obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        [
            obj.node("node-a", {"zone": "zone1", "node": "node-a"}, taints=[UNSCHEDULABLE_TAINT]),
            zn("node-b", "zone2"),
        ],
        [
            obj.pod("p-a1", node_name="node-a", labels={"foo": "", "zone": "zone1"}),
            obj.pod("p-b2", node_name="node-b", labels={"foo": "", "zone": "zone2"}),
        ],
        obj.pod("p-b1", node_name="node-b", labels={"foo": "", "zone": "zone2"}),
        1,
        {"zone": 2},
        {"zone": (("zone1", 1), ("zone2", 2))},
        z(1, 2),
        kw={"enable_node_inclusion_policy": False},
    ),
    ExtensionCase(
        "add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
        obj.pod(
            "p",
            labels={"foo": ""},
            tolerations=tolerate(UNSCHEDULABLE_TAINT["key"]),
            spread=[tsc(1, "zone")],
        ),
        [
            obj.node("node-a", {"zone": "zone1", "node": "node-a"}, taints=[UNSCHEDULABLE_TAINT]),
            zn("node-b", "zone2"),
        ],
        [
            obj.pod("p-a1", node_name="node-a", labels={"foo": "", "zone": "zone1"}),
            obj.pod("p-b2", node_name="node-b", labels={"foo": "", "zone": "zone2"}),
        ],
        obj.pod("p-b1", node_name="node-b", labels={"foo": "", "zone": "zone2"}),
        1,
        {"zone": 2},
        {"zone": (("zone1", 1), ("zone2", 2))},
        z(1, 2),
    ),
]


@pytest.mark.parametrize("case", ADD_CASES, ids=lambda c: c.name)
def test_pre_filter_state_add_pod(case: ExtensionCase) -> None:
    pl = plugin(**case.kw)
    state, snapshot, status = run_pre_filter(pl, case.preemptor, [*case.nodes, *case.existing])
    assert status is None
    node_info = snapshot.node_info(case.nodes[case.node_idx].name)
    assert pl.add_pod(state, case.preemptor, case.changed, node_info) is None
    assert_state(state.read(PRE_FILTER_STATE_KEY), case.domains, case.paths, case.pairs)


REMOVE_CASES = [
    ExtensionCase(
        "one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
        preemptor("zone"),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        on("node-a", 1) + on("node-b", 1) + on("node-x", 1),
        on("node-a", 1)[0],
        0,
        {"zone": 2},
        {"zone": (("zone1", 1), ("zone2", 1))},
        z(1, 1),
    ),
    ExtensionCase(
        "one spreadConstraint on node, topologyKeyToMinPodsMap changed",
        preemptor("zone"),
        four_nodes(),
        on("node-a", 1) + on("node-b", 1) + on("node-x", 1) + on("node-y", 1),
        on("node-a", 1)[0],
        0,
        {"zone": 2},
        {"zone": (("zone1", 1), ("zone2", 2))},
        z(1, 2),
    ),
    ExtensionCase(
        "delete an irrelevant pod won't help",
        preemptor("zone"),
        four_nodes(),
        [
            obj.pod("p-a0", node_name="node-a", labels={"bar": ""}),
            *on("node-a", 1),
            *on("node-b", 1),
            *on("node-x", 1),
            *on("node-y", 1),
        ],
        obj.pod("p-a0", node_name="node-a", labels={"bar": ""}),
        0,
        {"zone": 2},
        {"zone": (("zone1", 2), ("zone2", 2))},
        z(2, 2),
    ),
    ExtensionCase(
        "delete a non-existing pod won't help",
        preemptor("zone"),
        four_nodes(),
        on("node-a", 1) + on("node-b", 1) + on("node-x", 1) + on("node-y", 1),
        obj.pod("p-a0", node_name="node-a", labels={"bar": ""}),
        0,
        {"zone": 2},
        {"zone": (("zone1", 2), ("zone2", 2))},
        z(2, 2),
    ),
    ExtensionCase(
        "two spreadConstraints",
        preemptor("zone", "node"),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        on("node-a", 2) + on("node-b", 1) + on("node-x", 2),
        on("node-x", 1)[0],
        2,
        {"zone": 2, "node": 3},
        {"zone": (("zone2", 1), ("zone1", 3)), "node": (("node-b", 1), ("node-x", 1))},
        {**z(3, 1), **n(a=2, b=1, x=1)},
    ),
    *[
        ExtensionCase(
            f"remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy"
            f" {gate}",
            obj.pod(
                "p",
                labels={"foo": ""},
                affinity=node_not_in("foo", ["bar"]),
                spread=[tsc(1, "zone")],
            ),
            [zn_foo("node-a", "zone1", "bar"), zn_foo("node-b", "zone2", "")],
            [
                obj.pod("p-a2", node_name="node-a", labels={"foo": "", "zone": "zone1"}),
                obj.pod("p-b1", node_name="node-b", labels={"foo": "", "zone": "zone2"}),
            ],
            obj.pod("p-a1", node_name="node-a", labels={"foo": "", "zone": "zone1"}),
            0,
            {"zone": 1},
            {"zone": (("zone2", 1), NOT_SET)},
            {("zone", "zone2"): 1},
            kw={"enable_node_inclusion_policy": gate == "enabled"},
        )
        for gate in ("disabled", "enabled")
    ],
    *[
        ExtensionCase(
            f"remove a pod when scheduling node affinity matched pod with NodeInclusionPolicy"
            f" {gate}",
            obj.pod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
            [zn_foo("node-a", "zone1", "bar"), zn_foo("node-b", "zone2", "")],
            [
                obj.pod("p-a1", node_name="node-a", labels={"foo": "", "zone": "zone1"}),
                obj.pod("p-b2", node_name="node-b", labels={"foo": "", "zone": "zone2"}),
            ],
            obj.pod("p-b1", node_name="node-b", labels={"foo": "", "zone": "zone2"}),
            1,
            {"zone": 2},
            {"zone": (("zone2", 0), ("zone1", 1))},
            z(1, 0),
            kw={"enable_node_inclusion_policy": gate == "enabled"},
        )
        for gate in ("disabled", "enabled")
    ],
]


@pytest.mark.parametrize("case", REMOVE_CASES, ids=lambda c: c.name)
def test_pre_filter_state_remove_pod(case: ExtensionCase) -> None:
    pl = plugin(**case.kw)
    state, snapshot, status = run_pre_filter(pl, case.preemptor, [*case.nodes, *case.existing])
    assert status is None
    node_info = snapshot.node_info(case.nodes[case.node_idx].name)
    assert pl.remove_pod(state, case.preemptor, case.changed, node_info) is None
    assert_state(state.read(PRE_FILTER_STATE_KEY), case.domains, case.paths, case.pairs)


def test_clone_is_independent_of_the_original() -> None:
    pl = plugin()
    pod = preemptor("zone")
    state, snapshot, _ = run_pre_filter(pl, pod, [*four_nodes(), *on("node-a", 1)])
    copy = state.clone()
    pl.add_pod(
        copy,
        pod,
        obj.pod("extra", node_name="node-x", labels={"foo": ""}),
        snapshot.node_info("node-x"),
    )
    assert state.read(PRE_FILTER_STATE_KEY).tp_pair_to_match_num == z(1, 0)
    assert copy.read(PRE_FILTER_STATE_KEY).tp_pair_to_match_num == z(1, 1)
    assert state.read(PRE_FILTER_STATE_KEY).tp_key_to_critical_paths["zone"][0] == ("zone2", 0)
