"""NodeResourcesFit's scoring strategies with their args, scores as upstream's unit tests
give them (``noderesources/least_allocated_test.go``, ``most_allocated_test.go``,
``requested_to_capacity_ratio_test.go``): each case is the requested pod (one request map per
container), the nodes' capacities, the pods on them, the ``scoringStrategy`` and the raw scores
(NodeResourcesFit does not normalize). A pod of ``st.MakePod()`` without ``Req`` has no
container, so no non-zero default request either."""

from __future__ import annotations

from typing import Any

import pytest

from kube.objects import KubeObject, Node, Pod
from scheduler.config.defaults import set_defaults
from scheduler.config.profiles import build_profile
from scheduler.framework import CycleState
from scheduler.plugins.noderesources.requested_to_capacity_ratio import broken_linear_function
from scheduler.plugins.registry import node_resources_fit_scorer
from scheduler.snapshot import Snapshot
from tests.support import objects as obj

EXT = "abc.com/xyz"
DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
WITH_EXT = [*DEFAULT, {"name": EXT, "weight": 1}]


def scores(
    strategy: dict[str, Any],
    pod: Pod,
    nodes: list[Node],
    existing: list[Pod] = (),  # type: ignore[assignment]
) -> list[int]:
    objects: list[KubeObject] = [*nodes, *existing]
    snapshot = Snapshot.from_objects(objects)
    scorer = node_resources_fit_scorer(1, strategy)
    state = CycleState()
    infos = snapshot.node_info_list
    assert scorer.pre_score(state, pod, infos, snapshot) is None
    raw = scorer.score_nodes(state, pod, infos)
    normalized = list(raw)
    scorer.normalize_score(state, pod, normalized)
    assert normalized == raw  # NodeResourcesFit has no NormalizeScore
    return raw


REQ12 = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
N4_10 = {"cpu": "4000", "memory": "10000"}
N6_10 = {"cpu": "6000", "memory": "10000"}
N10_20 = {"cpu": "10000", "memory": "20000"}

LEAST: list[
    tuple[str, tuple[dict[str, str], ...], list[dict[str, str]], list[Pod], list[Any], list[int]]
] = [
    ("nothing scheduled, nothing requested", (), [N4_10, N4_10], [], DEFAULT, [100, 100]),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        REQ12,
        [N4_10, N6_10],
        [],
        DEFAULT,
        [37, 50],
    ),
    (
        "no resources requested, pods scheduled",
        (),
        [N4_10, N4_10],
        [
            obj.pod("a", containers=[], node_name="node1"),
            obj.pod("b", containers=[], node_name="node1"),
            obj.pod("c", containers=[], node_name="node2"),
            obj.pod("d", containers=[], node_name="node2"),
        ],
        DEFAULT,
        [100, 100],
    ),
    (
        "no resources requested, pods scheduled with resources",
        (),
        [N10_20, N10_20],
        [
            obj.pod("a", containers=[{"cpu": "3000", "memory": "0"}], node_name="node1"),
            obj.pod("b", containers=[{"cpu": "3000", "memory": "0"}], node_name="node1"),
            obj.pod("c", containers=[{"cpu": "3000", "memory": "0"}], node_name="node2"),
            obj.pod("d", containers=[{"cpu": "3000", "memory": "5000"}], node_name="node2"),
        ],
        DEFAULT,
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        REQ12,
        [N10_20, N10_20],
        [
            obj.pod("a", containers=[{"cpu": "3000", "memory": "0"}], node_name="node1"),
            obj.pod("b", containers=[{"cpu": "3000", "memory": "5000"}], node_name="node2"),
        ],
        DEFAULT,
        [57, 45],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        REQ12,
        [N10_20, {"cpu": "10000", "memory": "50000"}],
        [
            obj.pod("a", containers=[{"cpu": "3000", "memory": "0"}], node_name="node1"),
            obj.pod("b", containers=[{"cpu": "3000", "memory": "5000"}], node_name="node2"),
        ],
        DEFAULT,
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        ({"cpu": "3000", "memory": "0"},),
        [N4_10, N4_10],
        [
            obj.pod("a", containers=[{"cpu": "3000", "memory": "0"}], node_name="node1"),
            obj.pod("b", containers=[{"cpu": "3000", "memory": "5000"}], node_name="node2"),
        ],
        DEFAULT,
        [50, 25],
    ),
    (
        "zero node resources, pods scheduled with resources",
        (),
        [{}, {}],
        [
            obj.pod("a", containers=[{"cpu": "3000", "memory": "0"}], node_name="node1"),
            obj.pod("b", containers=[{"cpu": "3000", "memory": "5000"}], node_name="node2"),
        ],
        DEFAULT,
        [0, 0],
    ),
    (
        "different weight on CPU and memory, differently sized nodes",
        REQ12,
        [N4_10, N6_10],
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request",
        REQ12,
        [N6_10, {**N6_10, EXT: "4"}],
        [],
        WITH_EXT,
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        ({"cpu": "3000", "memory": "5000", EXT: "2"},),
        [{**N6_10, EXT: "4"}, {**N6_10, EXT: "10"}],
        [],
        WITH_EXT,
        [50, 60],
    ),
]

MOST: list[
    tuple[str, tuple[dict[str, str], ...], list[dict[str, str]], list[Pod], list[Any], list[int]]
] = [
    ("nothing scheduled, nothing requested", (), [N4_10, N4_10], [], DEFAULT, [0, 0]),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        REQ12,
        [N4_10, N6_10],
        [],
        DEFAULT,
        [62, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        (),
        [N10_20, N10_20],
        [
            obj.pod("a", containers=[{"cpu": "3000", "memory": "0"}], node_name="node1"),
            obj.pod("b", containers=[{"cpu": "3000", "memory": "0"}], node_name="node1"),
            obj.pod("c", containers=[{"cpu": "3000", "memory": "0"}], node_name="node2"),
            obj.pod("d", containers=[{"cpu": "3000", "memory": "5000"}], node_name="node2"),
        ],
        DEFAULT,
        [30, 42],
    ),
    (
        "resources requested, pods scheduled with resources",
        REQ12,
        [N10_20, N10_20],
        [
            obj.pod("a", containers=[{"cpu": "3000", "memory": "0"}], node_name="node1"),
            obj.pod("b", containers=[{"cpu": "3000", "memory": "5000"}], node_name="node2"),
        ],
        DEFAULT,
        [42, 55],
    ),
    (
        "resources requested equal node capacity",
        ({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [{"cpu": "5000", "memory": "10000"}, {"cpu": "10000", "memory": "9000"}],
        [],
        DEFAULT,
        [95, 75],
    ),
    (
        "different weights, differently sized nodes",
        REQ12,
        [N4_10, N6_10],
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [58, 50],
    ),
    (
        "no resources requested, pods scheduled, nonzero request for resource",
        ({},),
        [{"cpu": "250m", "memory": "1000Mi"}, {"cpu": "250m", "memory": "1000Mi"}],
        [
            obj.pod("a", containers=[{}], node_name="node1"),
            obj.pod("b", containers=[{}], node_name="node1"),
        ],
        DEFAULT,
        [80, 30],
    ),
    (
        "bypass extended resource if the pod does not request",
        REQ12,
        [N6_10, {**N6_10, EXT: "4"}],
        [],
        WITH_EXT,
        [50, 50],
    ),
    (
        "honor extended resource if the pod request",
        ({"cpu": "3000", "memory": "5000", EXT: "2"},),
        [{**N6_10, EXT: "4"}, {**N6_10, EXT: "10"}],
        [],
        WITH_EXT,
        [50, 40],
    ),
    (
        "if the node doesn't have a resource",
        ({"cpu": "3000", "memory": "4000"},),
        [N6_10, {**N6_10, EXT: "4"}],
        [],
        [{"name": EXT, "weight": 2}, *DEFAULT],
        [45, 45],
    ),
]


def _case(strategy_type: str, case: tuple[Any, ...]) -> None:
    _, containers, capacities, existing, resources, want = case
    nodes = [obj.node(f"node{i + 1}", capacity=c) for i, c in enumerate(capacities)]
    pod = obj.pod("p", containers=containers)
    assert scores({"type": strategy_type, "resources": resources}, pod, nodes, existing) == want


@pytest.mark.parametrize("case", LEAST, ids=[c[0] for c in LEAST])
def test_least_allocated(case: tuple[Any, ...]) -> None:
    _case("LeastAllocated", case)


@pytest.mark.parametrize("case", MOST, ids=[c[0] for c in MOST])
def test_most_allocated(case: tuple[Any, ...]) -> None:
    _case("MostAllocated", case)


DESCENDING = {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}


@pytest.mark.parametrize(
    ("containers", "capacities", "existing", "want"),
    [
        (
            (),
            [N4_10, N4_10],
            [
                obj.pod("a", containers=[], node_name="node1"),
                obj.pod("b", containers=[], node_name="node1"),
            ],
            [100, 100],
        ),
        (
            REQ12,
            [N4_10, N6_10],
            [
                obj.pod("a", containers=[], node_name="node1"),
                obj.pod("b", containers=[], node_name="node1"),
            ],
            [38, 50],
        ),
        (
            (),
            [N4_10, N6_10],
            [
                obj.pod("a", containers=[{"cpu": "3000", "memory": "5000"}], node_name="node1"),
                obj.pod("b", containers=[{"cpu": "3000", "memory": "5000"}], node_name="node2"),
            ],
            [38, 50],
        ),
    ],
    ids=[
        "nothing scheduled, nothing requested",
        "nothing scheduled, resources requested, differently sized nodes",
        "no resources requested, pods scheduled with resources",
    ],
)
def test_requested_to_capacity_ratio(
    containers: tuple[dict[str, str], ...],
    capacities: list[dict[str, str]],
    existing: list[Pod],
    want: list[int],
) -> None:
    nodes = [obj.node(f"node{i + 1}", capacity=c) for i, c in enumerate(capacities)]
    strategy = {
        "type": "RequestedToCapacityRatio",
        "resources": DEFAULT,
        "requestedToCapacityRatio": DESCENDING,
    }
    assert scores(strategy, obj.pod("p", containers=containers), nodes, existing) == want


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        (
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        (
            [(0, 2), (40, 10), (100, 0)],
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
        ),
        (
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
        ),
    ],
)
def test_broken_linear_function(
    points: list[tuple[int, int]], assertions: list[tuple[int, int]]
) -> None:
    for p, expected in assertions:
        assert broken_linear_function(points, p) == expected


def test_broken_linear_function_truncates_toward_zero() -> None:
    """A falling line: Go's division truncates toward zero, Python's ``//`` floors."""
    assert broken_linear_function([(0, 100), (100, 0)], 33) == 67
    assert broken_linear_function([(0, 100), (30, 0)], 10) == 67  # 100 + (-100*10)/30


def _mk_ext_node(name: str, ext: dict[str, str]) -> Node:
    return obj.node(name, capacity={"cpu": "4000", "memory": str(10000 * 1024 * 1024), **ext})


BIN_PACKING = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]}


@pytest.mark.parametrize(
    ("request_", "existing", "want"),
    [
        ({}, [], [0, 0]),
        ({"intel.com/foo": "2"}, [obj.pod("e", containers=[])], [2, 5]),
        (
            {"intel.com/foo": "2"},
            [obj.pod("e", containers=[{"intel.com/foo": "2"}], node_name="node2")],
            [2, 10],
        ),
        ({"intel.com/foo": "4"}, [obj.pod("e", containers=[])], [5, 10]),
    ],
)
def test_resource_bin_packing_single_extended(
    request_: dict[str, str], existing: list[Pod], want: list[int]
) -> None:
    nodes = [
        _mk_ext_node("node1", {"intel.com/foo": "8"}),
        _mk_ext_node("node2", {"intel.com/foo": "4"}),
    ]
    pod = obj.pod("p", containers=[request_] if request_ else [])
    strategy = {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "intel.com/foo", "weight": 1}],
        "requestedToCapacityRatio": BIN_PACKING,
    }
    assert scores(strategy, pod, nodes, [p for p in existing if p.node_name]) == want


def test_resource_bin_packing_multiple_extended() -> None:
    """Weights 3 and 5: node1 (2*3 + 5*5) / 8 = 3.875 -> 4, node2 (5*3 + 2*5) / 8 = 3.125 -> 3
    (``math.Round``)."""
    nodes = [
        _mk_ext_node("node1", {"intel.com/foo": "8", "intel.com/bar": "4"}),
        _mk_ext_node("node2", {"intel.com/foo": "4", "intel.com/bar": "8"}),
    ]
    strategy = {
        "type": "RequestedToCapacityRatio",
        "resources": [
            {"name": "intel.com/foo", "weight": 3},
            {"name": "intel.com/bar", "weight": 5},
        ],
        "requestedToCapacityRatio": BIN_PACKING,
    }
    assert scores(strategy, obj.pod("p", containers=[]), nodes) == [0, 0]
    pod = obj.pod("p", containers=[{"intel.com/foo": "2", "intel.com/bar": "2"}])
    assert scores(strategy, pod, nodes) == [4, 3]


def test_the_profile_builds_the_strategy_from_its_args() -> None:
    doc = set_defaults(
        {
            "profiles": [
                {
                    "schedulerName": "bin-packing",
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {"scoringStrategy": {"type": "MostAllocated"}},
                        }
                    ],
                }
            ]
        }
    )
    built = build_profile(doc["profiles"][0])
    fit = next(p for p in built.score_plugins if p.name == "NodeResourcesFit")
    nodes = [obj.node("node1", capacity=N4_10), obj.node("node2", capacity=N6_10)]
    snapshot = Snapshot.from_objects(nodes)
    pod = obj.pod("p", containers=REQ12)
    assert fit.score_nodes(CycleState(), pod, snapshot.node_info_list) == [62, 50]
