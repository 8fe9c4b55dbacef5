"""NodeResourcesBalancedAllocation and ImageLocality, and the 1.32 default profile tables.

Transcribed from kube's ``noderesources/balanced_allocation_test.go`` (the cases without DRA;
the best-effort Skip in PreScore arrived after 1.32, kubernetes#129138) and
``imagelocality/image_locality_test.go``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.objects import Node, Pod
from scheduler.framework import CycleState
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.plugins.imagelocality import ImageLocalityScorer, normalized_image_name
from scheduler.plugins.noderesources.balanced_allocation import BalancedAllocationScorer
from scheduler.plugins.registry import (
    FILTER_REGISTRY,
    SCORE_REGISTRY,
    default_filter_plugins,
    default_score_plugins,
)
from scheduler.snapshot import Snapshot
from tests.support import objects as obj

MB = 1024 * 1024


def make_node(name: str, milli_cpu: int, memory: int, gpus: int | None = None) -> Node:
    """upstream's makeNode: allocatable milli-CPU, memory bytes and GPUs."""
    alloc: dict[str, Any] = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "110"}
    if gpus is not None:
        alloc["nvidia.com/gpu"] = str(gpus)
    return obj.node(name, capacity=alloc)


CPU_ONLY = [{"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}]
CPU_AND_MEMORY = [{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}]
CPU_MEMORY_GPU = [
    {"cpu": "1000m", "memory": "2000"},
    {"cpu": "2000m", "memory": "3000", "nvidia.com/gpu": "3"},
]
WITH_GPU = [
    {"name": "cpu", "weight": 1},
    {"name": "memory", "weight": 1},
    {"name": "nvidia.com/gpu", "weight": 1},
]


@pytest.mark.parametrize(
    "case",
    [
        (
            "nothing scheduled, resources requested, differently sized nodes",
            CPU_AND_MEMORY,
            [],
            [make_node("node1", 4000, 10000), make_node("node2", 6000, 10000)],
            None,
            [87, 100],
            True,
        ),
        (
            "resources requested, pods scheduled with resources",
            CPU_AND_MEMORY,
            [(CPU_ONLY, "node1"), (CPU_AND_MEMORY, "node2")],
            [make_node("node1", 10000, 20000), make_node("node2", 10000, 20000)],
            None,
            [82, 95],
            True,
        ),
        (
            "resources requested, pods scheduled with resources, differently sized nodes",
            CPU_AND_MEMORY,
            [(CPU_ONLY, "node1"), (CPU_AND_MEMORY, "node2")],
            [make_node("node1", 10000, 20000), make_node("node2", 10000, 50000)],
            None,
            [82, 80],
            True,
        ),
        (
            "requested resources at node capacity",
            CPU_ONLY,
            [(CPU_ONLY, "node1"), (CPU_AND_MEMORY, "node2")],
            [make_node("node1", 6000, 10000), make_node("node2", 6000, 10000)],
            None,
            [50, 75],
            True,
        ),
        (
            "include scalar resource on a node for balanced resource allocation",
            [{"memory": "0", "nvidia.com/gpu": "1"}],
            [(CPU_AND_MEMORY, "node2"), (CPU_MEMORY_GPU, "node1")],
            [make_node("node1", 3500, 40000, 8), make_node("node2", 3500, 40000, 8)],
            WITH_GPU,
            [70, 65],
            True,
        ),
        (
            "node without the scalar resource should skip the scalar resource",
            CPU_AND_MEMORY,
            [],
            [make_node("node1", 3500, 40000, 8), make_node("node2", 3500, 40000)],
            WITH_GPU,
            [63, 63],
            True,
        ),
        (
            "resources requested, pods scheduled with resources if PreScore not called",
            CPU_AND_MEMORY,
            [(CPU_ONLY, "node1"), (CPU_AND_MEMORY, "node2")],
            [make_node("node1", 10000, 20000), make_node("node2", 10000, 20000)],
            None,
            [82, 95],
            False,
        ),
    ],
    ids=lambda c: c[0],
)
def test_balanced_allocation(case: tuple[Any, ...]) -> None:
    # name, pod requests, (requests, node) of placed pods, nodes, args, want, run PreScore
    _, pod, existing, nodes, resources, want, run_pre_score = case
    placed = [
        obj.pod(f"e{i}", containers=spec, node_name=node) for i, (spec, node) in enumerate(existing)
    ]
    snapshot = Snapshot.from_objects([*nodes, *placed])
    scorer = BalancedAllocationScorer(resources=resources)
    state = CycleState()
    incoming = obj.pod("p", containers=pod)
    if run_pre_score:
        assert scorer.pre_score(state, incoming, snapshot.node_info_list, snapshot) is None
    scores = scorer.score_nodes(state, incoming, snapshot.node_info_list)
    scorer.normalize_score(state, incoming, scores)  # none upstream: scores unchanged
    assert scores == want
    assert [scorer.score_node(incoming, ni) for ni in snapshot.node_info_list] == want


def test_balanced_allocation_rejects_bad_weights() -> None:
    with pytest.raises(ValueError, match=r"not in valid range \[1, 100\]"):
        BalancedAllocationScorer(resources=[{"name": "cpu", "weight": 0}])
    with pytest.raises(ValueError, match="name: Required"):
        BalancedAllocationScorer(resources=[{"weight": 1}])


# --- ImageLocality ---------------------------------------------------------------------------


def image_node(name: str, images: Sequence[tuple[Sequence[str], int]]) -> Node:
    return Node.from_dict(
        {
            "kind": "Node",
            "metadata": {"name": name},
            "status": {
                "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                "images": [{"names": list(names), "sizeBytes": size} for names, size in images],
            },
        }
    )


def image_pod(images: Sequence[str], init: Sequence[str] = ()) -> Pod:
    return Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": f"c{i}", "image": im} for i, im in enumerate(images)],
                "initContainers": [{"name": f"i{i}", "image": im} for i, im in enumerate(init)],
            },
        }
    )


NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10 = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
NODE_600_40_900 = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900 = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30 = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40 = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "want"),
    [
        (
            "two images spread on two nodes, prefer the larger image one",
            image_pod(["gcr.io/40", "gcr.io/250"]),
            [image_node("node1", NODE_40_300_2000), image_node("node2", NODE_250_10)],
            [0, 5],
        ),
        (
            "two images on one node, prefer this node",
            image_pod(["gcr.io/40", "gcr.io/300"]),
            [image_node("node1", NODE_40_300_2000), image_node("node2", NODE_250_10)],
            [7, 0],
        ),
        (
            "if exceed limit, use limit",
            image_pod(["gcr.io/10", "gcr.io/4000"]),
            [image_node("node1", NODE_4000_30), image_node("node2", NODE_250_10)],
            [100, 0],
        ),
        (
            "if exceed limit, use limit (with node which has no images present)",
            image_pod(["gcr.io/10", "gcr.io/4000"]),
            [
                image_node("node1", NODE_4000_30),
                image_node("node2", NODE_250_10),
                image_node("node3", []),
            ],
            [66, 0, 0],
        ),
        (
            "pod with multiple large images, node2 is preferred",
            image_pod(["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
            [
                image_node("node1", NODE_600_40_900),
                image_node("node2", NODE_300_600_900),
                image_node("node3", []),
            ],
            [32, 36, 0],
        ),
        (
            "pod with multiple small images",
            image_pod(["gcr.io/30", "gcr.io/40"]),
            [image_node("node1", NODE_20_30_40), image_node("node2", NODE_4000_30)],
            [1, 0],
        ),
        (
            "include InitContainers: two images spread on two nodes, prefer the larger image one",
            image_pod(["gcr.io/30"], init=["gcr.io/300"]),
            [image_node("node1", NODE_40_300_2000), image_node("node2", NODE_20_30_40)],
            [6, 0],
        ),
    ],
)
def test_image_locality(name: str, pod: Pod, nodes: list[Node], want: list[int]) -> None:
    snapshot = Snapshot.from_objects(nodes)
    scorer = ImageLocalityScorer()
    state = CycleState()
    assert scorer.pre_score(state, pod, snapshot.node_info_list, snapshot) is None
    scores = scorer.score_nodes(state, pod, snapshot.node_info_list)
    scorer.normalize_score(state, pod, scores)
    assert scores == want


@pytest.mark.parametrize(
    ("image", "want"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@sha256:" + "ab" * 32, "root@sha256:" + "ab" * 32),
    ],
)
def test_normalized_image_name(image: str, want: str) -> None:
    assert normalized_image_name(image) == want


def test_image_counts_follow_nodes_coming_and_going() -> None:
    snapshot = Snapshot.from_objects(
        [image_node("node1", NODE_250_10), image_node("node2", [(["gcr.io/250:latest"], 250 * MB)])]
    )
    assert snapshot.image_state("gcr.io/250:latest") == (250 * MB, 2)
    assert snapshot.image_state("gcr.io/10:v1") == (10 * MB, 1)
    snapshot.remove_node("node1")
    assert snapshot.image_state("gcr.io/250:latest") == (250 * MB, 1)
    assert snapshot.image_state("gcr.io/10:v1") is None
    snapshot.update_node(image_node("node2", []))
    assert not snapshot.has_images()


# --- the default profile ---------------------------------------------------------------------


def test_default_weights_are_kube_1_32s() -> None:
    assert dict(DEFAULT_PLUGIN_WEIGHTS) == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    assert [(p.name, p.weight) for p in default_score_plugins()] == list(
        DEFAULT_PLUGIN_WEIGHTS.items()
    )


def test_registries_reach_every_plugin_by_its_kube_name() -> None:
    for name, cls in SCORE_REGISTRY.items():
        assert cls().name == name
    for name, cls in FILTER_REGISTRY.items():
        assert cls().name == name
    assert [p.name for p in default_filter_plugins()] == list(FILTER_REGISTRY)
    spread = FILTER_REGISTRY["PodTopologySpread"](
        defaulting_type="List",
        default_constraints=[
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
        enable_node_inclusion_policy=False,
        enable_match_label_keys=False,
    )
    assert [c.topology_key for c in spread.default_constraints] == ["zone"]
    balanced = SCORE_REGISTRY["NodeResourcesBalancedAllocation"](
        resources=[{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 2}]
    )
    assert balanced.resources == {"cpu": 1, "memory": 2}
    assert SCORE_REGISTRY["NodeResourcesFit"](
        resources=[{"name": "cpu", "weight": 3}]
    ).resources == {"cpu": 3}


@settings(max_examples=200, deadline=None)
@given(
    st.tuples(st.integers(1, 64_000), st.integers(1, 2**36)),
    st.tuples(st.integers(0, 70_000), st.integers(0, 2**37)),
    st.tuples(st.integers(0, 4_000), st.integers(0, 2**33)),
)
def test_balanced_allocation_fast_path_matches_the_formula(
    allocatable: tuple[int, int], used: tuple[int, int], wanted: tuple[int, int]
) -> None:
    """The cpu/memory fast path of score_nodes equals the general formula (score_node)."""
    node = Node(name="n", allocatable={"cpu": allocatable[0], "memory": allocatable[1]})
    existing = Pod("e", node_name="n", pod_requests={"cpu": used[0], "memory": used[1]})
    snapshot = Snapshot.from_objects([node, existing])
    pod = Pod("p", pod_requests={"cpu": wanted[0], "memory": wanted[1]})
    scorer = BalancedAllocationScorer()
    ni = snapshot.node_info("n")
    assert scorer.score_nodes(CycleState(), pod, [ni]) == [scorer.score_node(pod, ni)]
