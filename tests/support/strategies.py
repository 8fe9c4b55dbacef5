"""Hypothesis strategies for scheduling tests: nodes and pods drawn from the fields the filter
plugins read (labels, resources, taints, tolerations, affinity, host ports), and clusters of
them with a pod to place."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from kube.objects import Node, Pod
from scheduler.snapshot import Snapshot
from tests.support.objects import node, pod, required, term

TAINTS = [
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "maintenance", "effect": "NoExecute"},
    {"key": "soft", "effect": "PreferNoSchedule"},
]

TOLERATIONS = [
    {"key": "dedicated", "operator": "Exists"},
    {"key": "maintenance", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    {"operator": "Exists"},
]

ZONE = "topology.kubernetes.io/zone"


@st.composite
def arbitrary_node(draw: st.DrawFn, i: int) -> Node:
    labels = {"kubernetes.io/hostname": f"n{i}"}
    if draw(st.booleans()):
        labels[ZONE] = draw(st.sampled_from(["a", "b"]))
    if draw(st.booleans()):
        labels["disk"] = "ssd"
    return node(
        f"n{i}",
        labels=labels,
        cpu=draw(st.sampled_from(["1", "2", "4"])),
        memory="4Gi",
        pods=draw(st.sampled_from(["2", "3", "110"])),
        taints=draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=lambda t: t["key"])),
        unschedulable=draw(st.booleans()),
    )


@st.composite
def arbitrary_pod(draw: st.DrawFn, name: str, node_name: str = "") -> Pod:
    affinity: dict[str, Any] = {}
    selector = {"matchLabels": {"app": draw(st.sampled_from(["web", "db"]))}}
    kind = draw(st.sampled_from(["", "podAffinity", "podAntiAffinity"]))
    if kind:
        affinity.update(required(kind, term(selector, ZONE)))
    if draw(st.booleans()):
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]}
                ]
            }
        }
    return pod(
        name,
        labels={"app": draw(st.sampled_from(["web", "db"]))},
        cpu=draw(st.sampled_from([None, "100m", "900m", "3"])),
        memory=draw(st.sampled_from([None, "1Gi"])),
        node_name=node_name,
        node_selector=draw(st.sampled_from([None, {"disk": "ssd"}])),
        affinity=affinity or None,
        tolerations=draw(st.lists(st.sampled_from(TOLERATIONS), max_size=2)),
        host_ports=draw(st.lists(st.sampled_from([80, 443]), max_size=1)),
    )


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Snapshot, Pod]:
    nodes = [draw(arbitrary_node(i)) for i in range(draw(st.integers(1, 6)))]
    bound = [
        draw(arbitrary_pod(f"e{j}", draw(st.sampled_from(nodes)).name))
        for j in range(draw(st.integers(0, 6)))
    ]
    incoming = draw(arbitrary_pod("incoming"))
    if draw(st.booleans()):  # exercise NodeName too
        incoming = incoming.with_changes(node_name=draw(st.sampled_from(nodes)).name)
    return Snapshot.from_objects([*nodes, *bound]), incoming
