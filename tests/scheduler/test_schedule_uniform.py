"""The whole-cluster fast path must decide exactly as the node-by-node walk.

``find_nodes_that_fit_pod`` answers from ``uniform_filter_verdict`` (NodeResourcesFit's
``uniform_verdict`` over the snapshot's ``ResourceColumns``) when every node gets the same
verdict. These tests build clusters where that happens often (few node and pod shapes), change
them in place, and compare everything the walk produces with ``uniform=False``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kube.objects import Pod
from scheduler.framework import Code, CycleState, Status
from scheduler.plugins.noderesources.balanced_allocation import BalancedAllocationScorer
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.plugins.noderesources.least_allocated import LeastAllocatedScorer
from scheduler.plugins.registry import default_framework
from scheduler.schedule import find_nodes_that_fit_pod, schedule_one, uniform_filter_verdict
from scheduler.snapshot import ResourceColumns, Snapshot
from tests.support.objects import node, pod

_CPU = ["1", "2", "4"]
_REQ_CPU = [None, "500m", "900m", "2", "5"]
_REQ_MEM = [None, "1Gi", "3Gi", "8Gi"]


def _requests(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {
        "cpu": draw(st.sampled_from(_REQ_CPU)),
        "memory": draw(st.sampled_from(_REQ_MEM)),
    }
    extra = draw(st.sampled_from([None, "ephemeral-storage", "example.com/gpu"]))
    if extra is not None:
        out["requests"] = {extra: draw(st.sampled_from(["1", "2"]))}
    return out


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[Snapshot, list[Pod], Pod]:
    """A snapshot (changed in place after building), pods still to bind, the incoming pod."""
    shapes = draw(st.integers(1, 3))
    nodes = []
    for i in range(draw(st.integers(1, 8))):
        shape = i % shapes
        nodes.append(
            node(
                f"n{i}",
                cpu=_CPU[shape],
                memory=["4Gi", "8Gi", "4Gi"][shape],
                pods=draw(st.sampled_from(["2", "110"])) if shape == 2 else "110",
                extra={"ephemeral-storage": "2"} if shape == 1 else None,
                taints=[{"key": "k", "effect": "NoSchedule"}]
                if draw(st.integers(0, 9)) == 0
                else (),
            )
        )
    names = [n.name for n in nodes]
    bound = [
        pod(f"b{j}", node_name=draw(st.sampled_from(names)), **_requests(draw))
        for j in range(draw(st.integers(0, 10)))
    ]
    nominated = [
        pod(
            f"nom{j}",
            nominated=draw(st.sampled_from([*names, "gone"])),
            priority=draw(st.sampled_from([0, 10, 100])),
            **_requests(draw),
        )
        for j in range(draw(st.integers(0, 2)))
    ]
    later = [
        pod(f"l{j}", node_name=draw(st.sampled_from(names)), **_requests(draw))
        for j in range(draw(st.integers(0, 4)))
    ]
    tolerations = [{"operator": "Exists"}] if draw(st.booleans()) else []
    incoming = pod(
        "incoming",
        priority=draw(st.sampled_from([0, 10, 100])),
        tolerations=tolerations,
        **_requests(draw),
    )
    snap = Snapshot.from_objects([*nodes, *bound, *nominated])
    return snap, later, incoming


def _evolve(snap: Snapshot, later: list[Pod], data: st.DataObject) -> None:
    """Bind, remove and rebind pods so the columns are updated incrementally."""
    snap.resource_columns()  # built now, so the changes below are incremental
    for p in later:
        snap.add_pod(p)
        if data.draw(st.booleans()):
            snap.remove_pod(data.draw(st.sampled_from([p, *snap.bound_pods()])))
        if data.draw(st.booleans()):
            snap.bind_pod(p, data.draw(st.sampled_from(snap.node_names())))


def _seen(result: tuple[Any, Any, int]) -> tuple[Any, ...]:
    feasible, diagnosis, next_start = result
    statuses = diagnosis.node_to_status
    absent = statuses.absent_nodes_status
    return (
        [ni.name for ni in feasible],
        [(n, s.code, s.reasons, s.plugin) for n, s in statuses],
        (absent.code, absent.reasons, absent.plugin),
        sorted(diagnosis.unschedulable_plugins),
        sorted(diagnosis.pending_plugins),
        diagnosis.pre_filter_msg,
        next_start,
    )


@given(_cluster(), st.data())
def test_fast_path_equals_the_node_by_node_walk(
    cluster: tuple[Snapshot, list[Pod], Pod], data: st.DataObject
) -> None:
    snap, later, incoming = cluster
    _evolve(snap, later, data)
    percentage = data.draw(st.sampled_from([0, 30, 100]))
    start = data.draw(st.integers(0, len(snap.node_info_list) + 2))
    fwk = default_framework()
    runs = [
        find_nodes_that_fit_pod(
            incoming,
            snap,
            framework=fwk,
            percentage_of_nodes_to_score=percentage,
            start_index=start,
            uniform=uniform,
        )
        for uniform in (True, False)
    ]
    assert _seen(runs[0]) == _seen(runs[1])


@given(_cluster(), st.data())
def test_columns_follow_the_node_infos(
    cluster: tuple[Snapshot, list[Pod], Pod], data: st.DataObject
) -> None:
    snap, later, _ = cluster
    _evolve(snap, later, data)
    fresh = ResourceColumns.of(snap.node_info_list)
    kept = snap.resource_columns()
    assert kept.rows == fresh.rows
    assert kept.counts == fresh.counts


@given(_cluster(), st.data())
def test_uniform_verdict_is_every_nodes_verdict(
    cluster: tuple[Snapshot, list[Pod], Pod], data: st.DataObject
) -> None:
    snap, later, incoming = cluster
    _evolve(snap, later, data)
    plugin = NodeResourcesFit()
    state = CycleState()
    verdict = plugin.uniform_verdict(state, incoming, snap)
    verdicts = {
        (s.code, s.reasons) if (s := plugin.filter(state, incoming, ni)) is not None else None
        for ni in snap.node_info_list
    }
    if verdict is None:
        return
    assert verdicts == {None if verdict.code is Code.Success else (verdict.code, verdict.reasons)}


def test_nothing_fits_anywhere_gives_every_node_the_one_status() -> None:
    nodes = [node(f"n{i}", cpu="4") for i in range(5)]
    busy = [pod(f"b{i}", cpu="3", node_name=f"n{i}") for i in range(5)]
    snap = Snapshot.from_objects([*nodes, *busy])
    incoming = pod("p", cpu="2", priority=100)
    fwk = default_framework()
    state = CycleState()
    fwk.run_pre_filter_plugins(state, incoming, snap)
    expected = Status(Code.Unschedulable, "Insufficient cpu", plugin="NodeResourcesFit")
    verdict = uniform_filter_verdict(fwk, state, incoming, snap)
    assert verdict == expected and verdict is not None and verdict.plugin == "NodeResourcesFit"
    result = schedule_one(incoming, snap, framework=fwk, start_index=2)
    assert [n for n, _ in result.node_statuses] == ["n2", "n3", "n4", "n0", "n1"]
    assert all(s == expected for _, s in result.node_statuses)
    assert result.message == "0/5 nodes are available: 5 Insufficient cpu."
    assert result.next_start_index == 2
    assert result.diagnosis.unschedulable_plugins == {"NodeResourcesFit"}


def test_a_nominated_node_is_judged_with_its_nominated_pods() -> None:
    nodes = [node(f"n{i}", cpu="4", memory="4Gi") for i in range(3)]
    busy = [pod(f"b{i}", cpu="3", node_name=f"n{i}") for i in range(3)]
    waiting = pod("w", memory="4Gi", priority=100, nominated="n1")
    snap = Snapshot.from_objects([*nodes, *busy, waiting])
    result = schedule_one(pod("p", cpu="2", memory="1Gi", priority=100), snap)
    statuses = dict(result.node_statuses)
    assert statuses["n0"].reasons == ("Insufficient cpu",)
    assert statuses["n1"].reasons == ("Insufficient cpu", "Insufficient memory")
    assert result.message == ("0/3 nodes are available: 1 Insufficient memory, 3 Insufficient cpu.")


def test_mixed_verdicts_are_left_to_the_walk() -> None:
    snap = Snapshot.from_objects([node("big", cpu="4"), node("small", cpu="1")])
    assert NodeResourcesFit().uniform_verdict(CycleState(), pod("p", cpu="2"), snap) is None


@given(_cluster(), st.data())
def test_resource_classes_group_equal_amounts_and_score_as_each_node(
    cluster: tuple[Snapshot, list[Pod], Pod], data: st.DataObject
) -> None:
    snap, later, incoming = cluster
    _evolve(snap, later, data)
    seen: dict[int, tuple[Any, ...]] = {}
    for ni in snap.node_info_list:
        amounts = (ni.allocatable, ni.requested, ni.non_zero_requested)
        assert ni.resource_class >= 0
        assert seen.setdefault(ni.resource_class, amounts) == amounts
    nodes = snap.node_info_list
    for scorer in (LeastAllocatedScorer(), BalancedAllocationScorer()):
        state = CycleState()
        assert scorer.score_nodes(state, incoming, nodes) == [
            scorer.score_node(incoming, ni) for ni in nodes
        ]
        clones = [ni.clone() for ni in nodes]  # no class: the per-node path
        assert scorer.score_nodes(CycleState(), incoming, clones) == [
            scorer.score_node(incoming, ni) for ni in nodes
        ]
