"""PodTopologySpread PreFilter, Filter and PreFilterExtensions.

Transcribed from kube 1.32's ``podtopologyspread/filtering_test.go`` (TestPreFilterState,
TestPreFilterStateAddPod, TestPreFilterStateRemovePod, TestSingleConstraint,
TestMultipleConstraints): same clusters, same expected state and status codes. Upstream runs
some cases with feature gates off; ``gates`` carries those flags into the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kube.objects import KubeObject, Node, Pod
from scheduler.framework import Code, CycleState
from scheduler.plugins.podtopologyspread.common import MAX_INT32, CriticalPaths
from scheduler.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    PreFilterState,
)
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.snapshot import Snapshot
from tests.support.spread import (
    BAR,
    DNS,
    FOO,
    NONE,
    SA,
    UNSCHEDULABLE_TAINT,
    four_nodes,
    match_labels,
    mknode,
    mkpod,
    on,
    service,
    tsc,
    zn,
)

S, U, UU = Code.Success, Code.Unschedulable, Code.UnschedulableAndUnresolvable
Paths = Mapping[str, tuple[tuple[str, int], tuple[str, int]]]
Pairs = Mapping[tuple[str, str], int]
NO_GATES: dict[str, bool] = {
    "enable_node_inclusion_policy": False,
    "enable_match_label_keys": False,
}


def plugin(**kw: Any) -> PodTopologySpread:
    return PodTopologySpread(defaulting_type="List", **kw)


def run_pre_filter(
    pl: PodTopologySpread, pod: Pod, objects: Sequence[KubeObject]
) -> tuple[CycleState, Snapshot, Any]:
    snapshot = Snapshot.from_objects(objects)
    state = CycleState()
    return state, snapshot, pl.pre_filter(state, pod, snapshot)


def assert_state(s: PreFilterState, domains: Mapping[str, int], paths: Paths, pairs: Pairs) -> None:
    assert s.tp_key_to_domains_num == dict(domains)
    assert s.tp_key_to_critical_paths == {k: CriticalPaths(*v) for k, v in paths.items()}
    assert s.tp_pair_to_match_num == dict(pairs)


NOT_SET = ("", MAX_INT32)


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


def z(v1: int, v2: int, v3: int | None = None) -> dict[tuple[str, str], int]:
    out = {("zone", "zone1"): v1, ("zone", "zone2"): v2}
    if v3 is not None:
        out[("zone", "zone3")] = v3
    return out


def n(**counts: int) -> dict[tuple[str, str], int]:
    return {("node", f"node-{k}"): v for k, v in counts.items()}


HI = ("Honor", "Ignore")
II = ("Ignore", "Ignore")
HH = ("Honor", "Honor")

PRE_FILTER_CASES = [
    PreFilterCase(
        "clean cluster with one spreadConstraint",
        mkpod("p", labels={"foo": ""}, spread=[tsc(5, "zone", DNS, match_labels(foo="bar"))]),
        four_nodes(),
        [],
        {"zone": 2},
        {"zone": (("zone1", 0), ("zone2", 0))},
        z(0, 0),
        [(5, "zone", *HI)],
    ),
    PreFilterCase(
        "normal case with one spreadConstraint",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 2),
        {"zone": 2},
        {"zone": (("zone2", 2), ("zone1", 3))},
        z(3, 2),
        [(1, "zone", *HI)],
    ),
    PreFilterCase(
        "normal case with null label selector",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone", DNS, NONE)]),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 2),
        {"zone": 2},
        {"zone": (("zone2", 0), ("zone1", 0))},
        z(0, 0),
        [(1, "zone", *HI)],
    ),
    PreFilterCase(
        "normal case with one spreadConstraint, on a 3-zone cluster",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        [*four_nodes(), zn("node-o", "zone3"), zn("node-p", "zone3")],
        on("node-a", 2) + on("node-b", 1) + on("node-y", 2),
        {"zone": 3},
        {"zone": (("zone3", 0), ("zone2", 2))},
        z(3, 2, 0),
        [(1, "zone", *HI)],
    ),
    PreFilterCase(
        "namespace mismatch doesn't count",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
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
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone"), tsc(1, "node")]),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 4),
        {"zone": 2, "node": 4},
        {"zone": (("zone1", 3), ("zone2", 4)), "node": (("node-x", 0), ("node-b", 1))},
        {**z(3, 4), **n(a=2, b=1, x=0, y=4)},
        [(1, "zone", *HI), (1, "node", *HI)],
    ),
    PreFilterCase(
        "soft spreadConstraints should be bypassed",
        mkpod(
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
        mkpod(
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
        mkpod(
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
        mkpod(
            "p",
            labels={"foo": ""},
            affinity_not_in=("node", ["node-x"]),
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
        mkpod("p", labels={"foo": "bar", "baz": "kar"}),
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
        mkpod(
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
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone"), tsc(1, "node")]),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 4),
        {"zone": 2, "node": 4},
        {"zone": (("zone1", 3), ("zone2", 4)), "node": (("node-x", 0), ("node-b", 1))},
        {**z(3, 4), **n(a=2, b=1, x=0, y=4)},
        [(1, "zone", *HI), (1, "node", *HI)],
    ),
    PreFilterCase(
        "feature gate disabled with NodeAffinityPolicy",
        mkpod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "node", DNS, BAR)],
        ),
        [
            mknode("node-a", {"node": "node-a", "foo": ""}),
            mknode("node-b", {"node": "node-b", "foo": ""}),
            mknode("node-c", {"node": "node-c", "bar": ""}),
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
        mkpod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "node", DNS, BAR)],
        ),
        [
            mknode("node-a", {"node": "node-a", "foo": ""}),
            mknode("node-b", {"node": "node-b", "foo": ""}),
            mknode("node-c", {"node": "node-c", "bar": ""}),
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
        mkpod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "node", DNS, BAR, affinity_policy="Ignore")],
        ),
        [
            mknode("node-a", {"node": "node-a", "foo": ""}),
            mknode("node-b", {"node": "node-b", "foo": ""}),
            mknode("node-c", {"node": "node-c", "bar": ""}),
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
        mkpod(
            "p",
            labels={"foo": ""},
            affinity_in=("foo", [""]),
            spread=[tsc(1, "node", DNS, BAR)],
        ),
        [
            mknode("node-a", {"node": "node-a", "foo": ""}),
            mknode("node-b", {"node": "node-b", "foo": ""}),
            mknode("node-c", {"node": "node-c", "bar": ""}),
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
        mkpod(
            "p",
            labels={"foo": ""},
            affinity_in=("foo", [""]),
            spread=[tsc(1, "node", DNS, BAR, affinity_policy="Ignore")],
        ),
        [
            mknode("node-a", {"node": "node-a", "foo": ""}),
            mknode("node-b", {"node": "node-b", "foo": ""}),
            mknode("node-c", {"node": "node-c", "bar": ""}),
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
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "node", DNS, BAR)]),
        [
            mknode("node-a", {"node": "node-a"}),
            mknode("node-b", {"node": "node-b"}),
            mknode("node-c", {"node": "node-c", "bar": ""}, tainted=True),
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
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "node", DNS, BAR)]),
        [
            mknode("node-a", {"node": "node-a"}),
            mknode("node-b", {"node": "node-b"}),
            mknode("node-c", {"node": "node-c", "bar": ""}, tainted=True),
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
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "node", DNS, BAR, taints_policy="Honor")]),
        [
            mknode("node-a", {"node": "node-a"}),
            mknode("node-b", {"node": "node-b"}),
            mknode("node-c", {"node": "node-c", "bar": ""}, tainted=True),
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
        mkpod(
            "p",
            labels={"foo": ""},
            tolerate=UNSCHEDULABLE_TAINT["key"],
            spread=[tsc(1, "node", DNS, BAR, taints_policy="Honor")],
        ),
        [
            mknode("node-a", {"node": "node-a"}),
            mknode("node-b", {"node": "node-b"}),
            mknode("node-c", {"node": "node-c", "bar": ""}, tainted=True),
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
        mkpod(
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
        mkpod(
            "p",
            labels={"foo": ""},
            spread=[tsc(1, "zone", taints_policy="Honor"), tsc(1, "node")],
        ),
        [
            zn("node-a", "zone1", foo=""),
            mknode("node-b", {"zone": "zone1", "node": "node-b"}, tainted=True),
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
        mkpod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "zone"), tsc(1, "node")],
        ),
        [
            zn("node-a", "zone1"),
            mknode("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, tainted=True),
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
        mkpod(
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
            mknode("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, tainted=True),
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
        mkpod(
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
        mkpod(
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
        mkpod("p", labels={"foo": "a"}, spread=[tsc(1, "zone", DNS, {}, match_label_keys=["foo"])]),
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
        mkpod(
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
        mkpod(
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
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone", match_label_keys=["bar"])]),
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
    pod = mkpod(
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
        mkpod("p", labels={"foo": "bar", "baz": "kar"}),
        [service({"foo": "bar"})],
    )
    (c,) = state.read(PRE_FILTER_STATE_KEY).constraints
    assert c.selects({"foo": "bar"}) and not c.selects({"baz": "kar"})


@pytest.mark.parametrize(
    ("name", "pod", "defaults", "objs"),
    [
        (
            "default constraints and a service that doesn't match",
            mkpod("p", labels={"foo": "bar"}),
            [{"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS}],
            [service({"baz": "kep"})],
        ),
        (
            "default soft constraints and a service",
            mkpod("p", labels={"foo": "bar"}),
            [{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA}],
            [service({"foo": "bar"})],
        ),
        ("skip if not specified", mkpod("p", labels={"foo": ""}), [], []),
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
    return mkpod("p", labels=labels, spread=[tsc(1, k) for k in keys], **extra)


def zn_foo(name: str, zone: str, foo: str) -> Node:
    return mknode(name, {"zone": zone, "node": name, "foo": foo})


ADD_CASES = [
    ExtensionCase(
        "node a and b both impact current min match",
        preemptor("node"),
        [zn("node-a", "zone1"), zn("node-b", "zone1")],
        [],
        mkpod("p-a1", node="node-a", labels={"foo": ""}),
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
        mkpod("p-a1", node="node-a", labels={"foo": ""}),
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
        mkpod("p-a1", node="node-a", ns="ns1", labels={"foo": ""}),
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
        mkpod("p-b2", node="node-b", labels={"foo": ""}),
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
        mkpod("p-a1", node="node-a", labels={"foo": ""}),
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
        mkpod("p-a1", node="node-a", labels={"foo": ""}),
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
        mkpod("p-a1", node="node-a", labels={"foo": ""}),
        0,
        {"zone": 2, "node": 3},
        {"zone": (("zone2", 1), ("zone1", 3)), "node": (("node-a", 1), ("node-x", 1))},
        {**z(3, 1), **n(a=1, b=2, x=1)},
    ),
    ExtensionCase(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone",
        mkpod(
            "p", labels={"foo": "", "bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        [
            *on("node-b", 1, labels={"foo": "", "bar": ""}),
            *on("node-x", 1, labels={"foo": "", "bar": ""}),
            *on("node-x", 1, labels={"bar": ""}, tag="b"),
        ],
        mkpod("p-a1", node="node-a", labels={"foo": ""}),
        0,
        {"zone": 2, "node": 3},
        {"zone": (("zone2", 1), ("zone1", 2)), "node": (("node-a", 0), ("node-b", 1))},
        {**z(2, 1), **n(a=0, b=1, x=2)},
    ),
    ExtensionCase(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on"
        " both zone and node",
        mkpod(
            "p", labels={"foo": "", "bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]
        ),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        [
            *on("node-b", 1, labels={"bar": ""}),
            *on("node-x", 1, labels={"foo": "", "bar": ""}),
            *on("node-x", 1, labels={"bar": ""}, tag="b"),
        ],
        mkpod("p-a1", node="node-a", labels={"foo": "", "bar": ""}),
        0,
        {"zone": 2, "node": 3},
        {"zone": (("zone1", 1), ("zone2", 1)), "node": (("node-a", 1), ("node-b", 1))},
        {**z(1, 1), **n(a=1, b=1, x=2)},
    ),
    *[
        ExtensionCase(
            f"add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy"
            f" {gate}",
            mkpod(
                "p",
                labels={"foo": ""},
                affinity_not_in=("foo", ["bar"]),
                spread=[tsc(1, "zone")],
            ),
            [zn_foo("node-a", "zone1", "bar"), zn_foo("node-b", "zone2", "")],
            [
                mkpod("p-a2", node="node-a", labels={"foo": "", "zone": "zone1"}),
                mkpod("p-b1", node="node-b", labels={"foo": "", "zone": "zone2"}),
            ],
            mkpod("p-a1", node="node-a", labels={"foo": "", "zone": "zone1"}),
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
            mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
            [zn_foo("node-a", "zone1", "bar"), zn_foo("node-b", "zone2", "")],
            [
                mkpod("p-a1", node="node-a", labels={"foo": "", "zone": "zone1"}),
                mkpod("p-b2", node="node-b", labels={"foo": "", "zone": "zone2"}),
            ],
            mkpod("p-b1", node="node-b", labels={"foo": "", "zone": "zone2"}),
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
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        [zn_foo("node-a", "zone1", "bar"), zn_foo("node-b", "zone2", "")],
        [
            mkpod("p-a1", node="node-a", labels={"foo": "", "zone": "zone1"}),
            mkpod("p-b2", node="node-b", labels={"foo": "", "zone": "zone2"}),
        ],
        mkpod("p-b1", node="node-b", labels={"zone": "zone2"}),
        1,
        {"zone": 2},
        {"zone": (("zone1", 1), ("zone2", 1))},
        z(1, 1),
    ),
    ExtensionCase(
        "add a pod when scheduling taint untolerated pod with NodeInclusionPolicy disabled",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        [
            mknode("node-a", {"zone": "zone1", "node": "node-a"}, tainted=True),
            zn("node-b", "zone2"),
        ],
        [
            mkpod("p-a1", node="node-a", labels={"foo": "", "zone": "zone1"}),
            mkpod("p-b2", node="node-b", labels={"foo": "", "zone": "zone2"}),
        ],
        mkpod("p-b1", node="node-b", labels={"foo": "", "zone": "zone2"}),
        1,
        {"zone": 2},
        {"zone": (("zone1", 1), ("zone2", 2))},
        z(1, 2),
        kw={"enable_node_inclusion_policy": False},
    ),
    ExtensionCase(
        "add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
        mkpod(
            "p",
            labels={"foo": ""},
            tolerate=UNSCHEDULABLE_TAINT["key"],
            spread=[tsc(1, "zone")],
        ),
        [
            mknode("node-a", {"zone": "zone1", "node": "node-a"}, tainted=True),
            zn("node-b", "zone2"),
        ],
        [
            mkpod("p-a1", node="node-a", labels={"foo": "", "zone": "zone1"}),
            mkpod("p-b2", node="node-b", labels={"foo": "", "zone": "zone2"}),
        ],
        mkpod("p-b1", node="node-b", labels={"foo": "", "zone": "zone2"}),
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
            mkpod("p-a0", node="node-a", labels={"bar": ""}),
            *on("node-a", 1),
            *on("node-b", 1),
            *on("node-x", 1),
            *on("node-y", 1),
        ],
        mkpod("p-a0", node="node-a", labels={"bar": ""}),
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
        mkpod("p-a0", node="node-a", labels={"bar": ""}),
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
            mkpod(
                "p",
                labels={"foo": ""},
                affinity_not_in=("foo", ["bar"]),
                spread=[tsc(1, "zone")],
            ),
            [zn_foo("node-a", "zone1", "bar"), zn_foo("node-b", "zone2", "")],
            [
                mkpod("p-a2", node="node-a", labels={"foo": "", "zone": "zone1"}),
                mkpod("p-b1", node="node-b", labels={"foo": "", "zone": "zone2"}),
            ],
            mkpod("p-a1", node="node-a", labels={"foo": "", "zone": "zone1"}),
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
            mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
            [zn_foo("node-a", "zone1", "bar"), zn_foo("node-b", "zone2", "")],
            [
                mkpod("p-a1", node="node-a", labels={"foo": "", "zone": "zone1"}),
                mkpod("p-b2", node="node-b", labels={"foo": "", "zone": "zone2"}),
            ],
            mkpod("p-b1", node="node-b", labels={"foo": "", "zone": "zone2"}),
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
        copy, pod, mkpod("extra", node="node-x", labels={"foo": ""}), snapshot.node_info("node-x")
    )
    assert state.read(PRE_FILTER_STATE_KEY).tp_pair_to_match_num == z(1, 0)
    assert copy.read(PRE_FILTER_STATE_KEY).tp_pair_to_match_num == z(1, 1)
    assert state.read(PRE_FILTER_STATE_KEY).tp_key_to_critical_paths["zone"][0] == ("zone2", 0)


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
    return [mknode(name, {"node": name, **extra.get(name, {})}) for name in names]


def policy_nodes(tainted_y: bool = False) -> list[Node]:
    return [
        mknode("node-a", {"node": "node-a", "foo": ""}),
        mknode("node-b", {"node": "node-b", "foo": ""}),
        mknode("node-x", {"node": "node-x", "foo": ""}),
        mknode("node-y", {"node": "node-y"}, tainted=tainted_y),
    ]


POLICY_PODS = [
    mkpod("p-b1", node="node-a", labels={"foo": ""}),
    mkpod("p-b2", node="node-b", labels={"foo": ""}),
    mkpod("p-y1", node="node-y", labels={"foo": ""}),
]

SINGLE_CASES = [
    FilterCase(
        "no existing pods",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        four_nodes(),
        [],
        codes(S, S, S, S),
    ),
    FilterCase(
        "no existing pods, incoming pod doesn't match itself",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone", DNS, BAR)]),
        four_nodes(),
        [],
        codes(S, S, S, S),
    ),
    FilterCase(
        "existing pods in a different namespace do not count",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        four_nodes(),
        [
            mkpod("p-a1", ns="ns1", node="node-a", labels={"foo": ""}),
            mkpod("p-b1", ns="ns2", node="node-a", labels={"foo": ""}),
            *on("node-x", 1),
            *on("node-y", 1),
        ],
        codes(S, S, U, U),
    ),
    FilterCase(
        "existing pods do not match null selector",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone", DNS, NONE)]),
        four_nodes(),
        on("node-x", 1) + on("node-y", 1),
        codes(S, S, S, S),
    ),
    FilterCase(
        "pods spread across zones as 3/3, all nodes fit",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(S, S, S, S),
    ),
    FilterCase(
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone")]),
        [
            zn("node-a", "zone1"),
            mknode("node-b", {"zon": "zone1", "node": "node-b"}),
            zn("node-x", "zone2"),
            zn("node-y", "zone2"),
        ],
        on("node-a", 1) + on("node-b", 1) + on("node-x", 1) + on("node-y", 1),
        codes(S, UU, U, U),
    ),
    FilterCase(
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "rack")]),
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        [],
        {"node-a": UU, "node-x": UU},
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "node")]),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(U, U, S, U),
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        mkpod("p", labels={"foo": ""}, spread=[tsc(2, "node")]),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(U, S, S, U),
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        mkpod("p", labels={"bar": ""}, spread=[tsc(1, "node")]),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(U, S, S, U),
    ),
    FilterCase(
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        mkpod(
            "p",
            labels={"foo": ""},
            affinity_in=("node", ["node-a", "node-y"]),
            spread=[tsc(1, "node")],
        ),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(S, S, S, U),  # node-b and node-x pass here: NodeAffinity is another plugin
        kw=NO_GATES,
    ),
    FilterCase(
        "terminating Pods should be excluded",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "node")]),
        node_only("node-a", "node-b"),
        [
            mkpod("p-a", node="node-a", labels={"foo": ""}, terminating=True),
            mkpod("p-b", node="node-b", labels={"foo": ""}),
        ],
        {"node-a": S, "node-b": U},
    ),
    FilterCase(
        "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        mkpod(
            "p",
            labels={"foo": ""},
            affinity_not_in=("node", ["node-b"]),
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
        mkpod("p", labels={"foo": ""}, spread=[tsc(2, "node", min_domains=4)]),
        node_only("node-a", "node-b", "node-c"),
        on("node-a", 2) + on("node-b", 2) + on("node-c", 1),
        {"node-a": U, "node-b": U, "node-c": S},
    ),
    FilterCase(
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains,"
        " then the all nodes fit",
        mkpod("p", labels={"foo": ""}, spread=[tsc(2, "node", min_domains=2)]),
        node_only("node-a", "node-b", "node-c"),
        on("node-a", 2) + on("node-b", 2) + on("node-c", 1),
        {"node-a": S, "node-b": S, "node-c": S},
    ),
    FilterCase(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains,"
        " then the third and fourth nodes fit",
        mkpod("p", labels={"foo": ""}, spread=[tsc(2, "zone", min_domains=3)]),
        four_nodes(),
        on("node-a", 1) + on("node-b", 1) + on("node-y", 1),
        codes(U, U, S, S),
    ),
    FilterCase(
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains,"
        " then the all nodes fit",
        mkpod("p", labels={"foo": ""}, spread=[tsc(2, "zone", min_domains=1)]),
        four_nodes(),
        on("node-a", 1) + on("node-b", 1) + on("node-y", 1),
        codes(S, S, S, S),
    ),
    FilterCase(
        "NodeAffinityPolicy honored with labelSelectors",
        mkpod("p", labels={"foo": ""}, node_selector={"foo": ""}, spread=[tsc(1, "node")]),
        policy_nodes(),
        POLICY_PODS,
        codes(U, U, S, S),
    ),
    FilterCase(
        "NodeAffinityPolicy ignored with labelSelectors",
        mkpod(
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
        mkpod("p", labels={"foo": ""}, affinity_in=("foo", [""]), spread=[tsc(1, "node")]),
        policy_nodes(),
        POLICY_PODS,
        codes(U, U, S, S),
    ),
    FilterCase(
        "NodeAffinityPolicy ignored with nodeAffinity",
        mkpod(
            "p",
            labels={"foo": ""},
            affinity_in=("foo", [""]),
            spread=[tsc(1, "node", affinity_policy="Ignore")],
        ),
        policy_nodes(),
        POLICY_PODS,
        codes(U, U, S, U),
    ),
    FilterCase(
        "NodeTaintsPolicy honored",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "node", taints_policy="Honor")]),
        policy_nodes(tainted_y=True),
        POLICY_PODS,
        codes(U, U, S, S),
    ),
    FilterCase(
        "NodeTaintsPolicy ignored",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "node")]),
        policy_nodes(tainted_y=True),
        POLICY_PODS,
        codes(U, U, S, U),
    ),
]

MULTIPLE_CASES = [
    FilterCase(
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone"), tsc(1, "node")]),
        four_nodes(),
        spread_a2_b1_y3(),
        codes(U, U, S, U),
    ),
    FilterCase(
        "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone"), tsc(1, "node")]),
        four_nodes(),
        on("node-a", 2) + on("node-b", 1) + on("node-y", 4),
        codes(U, U, U, U),
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        mkpod(
            "p", labels={"foo": "", "bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]
        ),
        four_nodes(),
        on("node-a", 1) + on("node-y", 1, labels={"bar": ""}),
        codes(U, U, S, U),
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        mkpod(
            "p", labels={"foo": "", "bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]
        ),
        four_nodes(),
        on("node-a", 1) + on("node-x", 1, labels={"bar": ""}) + on("node-y", 1, labels={"bar": ""}),
        codes(U, U, U, U),
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        mkpod(
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
        mkpod("p", labels={"bar": ""}, spread=[tsc(1, "zone"), tsc(1, "node", DNS, BAR)]),
        four_nodes(),
        on("node-a", 1) + on("node-x", 1, labels={"bar": ""}) + on("node-y", 1, labels={"bar": ""}),
        codes(S, S, U, U),
    ),
    FilterCase(
        "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1,"
        " 1/0/0/1]",
        mkpod("p", labels={"foo": ""}, spread=[tsc(1, "zone"), tsc(1, "node")]),
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            mknode("node-x", {"zone": "zone2"}),
            zn("node-y", "zone2"),
        ],
        on("node-a", 1) + on("node-y", 1),
        codes(U, S, UU, U),
    ),
    FilterCase(
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        mkpod(
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
        mkpod(
            "p",
            labels={"foo": ""},
            spread=[tsc(1, "zone", taints_policy="Honor"), tsc(1, "node")],
        ),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1", foo=""),
            zn("node-x", "zone2", foo=""),
            mknode("node-y", {"zone": "zone2", "node": "node-y"}, tainted=True),
        ],
        on("node-a", 1) + on("node-b", 1) + on("node-y", 1),
        codes(U, U, S, U),
    ),
    FilterCase(
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        mkpod(
            "p",
            labels={"foo": ""},
            node_selector={"foo": ""},
            spread=[tsc(1, "zone"), tsc(1, "node")],
        ),
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1"),
            zn("node-x", "zone2", foo=""),
            mknode("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, tainted=True),
        ],
        on("node-a", 1) + on("node-b", 1) + on("node-y", 1),
        codes(U, S, S, U),
    ),
    FilterCase(
        "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        mkpod(
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
            mknode("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, tainted=True),
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
        CycleState(), mkpod("p"), Snapshot.from_objects([zn("node-a", "z")]).node_info("node-a")
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
