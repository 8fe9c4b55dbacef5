"""``filter_nodes`` (the batch form) must give exactly the verdicts of ``filter`` per node."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from kube.objects import Node, Pod
from scheduler.framework import BatchFilterPlugin, CycleState, Status
from scheduler.plugins.helper import split_by_filter
from scheduler.plugins.registry import default_framework
from scheduler.schedule import run_filter_plugins_batch
from scheduler.snapshot import Snapshot
from tests.scheduler.filters_helpers import node, pod, required, term

_TAINTS = [
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "maintenance", "effect": "NoExecute"},
    {"key": "soft", "effect": "PreferNoSchedule"},
]
_TOLERATIONS = [
    {"key": "dedicated", "operator": "Exists"},
    {"key": "maintenance", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    {"operator": "Exists"},
]
_ZONE = "topology.kubernetes.io/zone"


@st.composite
def _node(draw: st.DrawFn, i: int) -> Node:
    labels = {"kubernetes.io/hostname": f"n{i}"}
    if draw(st.booleans()):
        labels[_ZONE] = draw(st.sampled_from(["a", "b"]))
    if draw(st.booleans()):
        labels["disk"] = "ssd"
    return node(
        f"n{i}",
        labels=labels,
        cpu=draw(st.sampled_from(["1", "2", "4"])),
        memory="4Gi",
        pods=draw(st.sampled_from(["2", "3", "110"])),
        taints=draw(st.lists(st.sampled_from(_TAINTS), max_size=2, unique_by=lambda t: t["key"])),
        unschedulable=draw(st.booleans()),
    )


@st.composite
def _pod(draw: st.DrawFn, name: str, node_name: str = "") -> Pod:
    affinity: dict[str, Any] = {}
    selector = {"matchLabels": {"app": draw(st.sampled_from(["web", "db"]))}}
    kind = draw(st.sampled_from(["", "podAffinity", "podAntiAffinity"]))
    if kind:
        affinity.update(required(kind, term(selector, _ZONE)))
    if draw(st.booleans()):
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": _ZONE, "operator": "In", "values": ["a"]}]}
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
        tolerations=draw(st.lists(st.sampled_from(_TOLERATIONS), max_size=2)),
        host_ports=draw(st.lists(st.sampled_from([80, 443]), max_size=1)),
    )


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[Snapshot, Pod]:
    nodes = [draw(_node(i)) for i in range(draw(st.integers(1, 6)))]
    bound = [
        draw(_pod(f"e{j}", draw(st.sampled_from(nodes)).name))
        for j in range(draw(st.integers(0, 6)))
    ]
    incoming = draw(_pod("incoming"))
    if draw(st.booleans()):  # exercise NodeName too
        incoming = incoming.with_changes(node_name=draw(st.sampled_from(nodes)).name)
    return Snapshot.from_objects([*nodes, *bound]), incoming


def _names(statuses: dict[str, Status]) -> dict[str, tuple[str, Any, tuple[str, ...]]]:
    return {n: (s.plugin, s.code, s.reasons) for n, s in statuses.items()}


@given(_cluster())
def test_batch_runner_matches_the_framework_node_by_node(cluster: tuple[Snapshot, Pod]) -> None:
    snapshot, incoming = cluster
    fwk = default_framework()
    state = CycleState()
    assume(fwk.run_pre_filter_plugins(state, incoming, snapshot).is_success())
    nodes = snapshot.node_info_list
    expected = {ni.name: fwk.run_filter_plugins(state, incoming, ni) for ni in nodes}
    passed, failed = run_filter_plugins_batch(fwk, state, incoming, list(nodes))
    assert [ni.name for ni in passed] == [n for n, s in expected.items() if s.is_success()]
    assert _names(failed) == _names({n: s for n, s in expected.items() if not s.is_success()})


@given(_cluster())
def test_each_plugin_batch_matches_its_filter(cluster: tuple[Snapshot, Pod]) -> None:
    snapshot, incoming = cluster
    fwk = default_framework()
    state = CycleState()
    fwk.run_pre_filter_plugins(state, incoming, snapshot)
    nodes = list(snapshot.node_info_list)
    for plugin in fwk.filter_plugins:
        if plugin.name in state.skip_filter_plugins:
            continue
        assert isinstance(plugin, BatchFilterPlugin)
        got_passed, got_rejected = plugin.filter_nodes(state, incoming, nodes)
        want_passed, want_rejected = split_by_filter(plugin.filter, state, incoming, nodes)
        assert [ni.name for ni in got_passed] == [ni.name for ni in want_passed]
        assert sorted((ni.name, s.code.name, s.reasons) for ni, s in got_rejected) == sorted(
            (ni.name, s.code.name, s.reasons) for ni, s in want_rejected
        )
