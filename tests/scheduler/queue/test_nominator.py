"""The nominator (pkg/scheduler/backend/queue/nominator.go) on its own and inside the queue."""

from __future__ import annotations

from kube.objects import Pod
from scheduler.queue import NominatingInfo, NominatingMode, Nominator, SchedulingQueue
from scheduler.snapshot import Snapshot
from tests.support.clock import FakeClock
from tests.support.objects import mkpod

OVERRIDE = NominatingMode.Override
NOOP = NominatingMode.Noop


def names(pods: list[Pod]) -> list[str]:
    return [p.name for p in pods]


def test_add_override_noop_and_none() -> None:
    n = Nominator()
    a = mkpod("a", nominated_node_name="n1")
    n.add_nominated_pod(a, NominatingInfo(OVERRIDE, "n2"))
    assert names(n.nominated_pods_for_node("n2")) == ["a"]
    assert n.nominated_pods_for_node("n1") == []
    # Noop (or no info) uses the pod's own status.nominatedNodeName and replaces the entry.
    n.add_nominated_pod(a, NominatingInfo(NOOP, "ignored"))
    assert names(n.nominated_pods_for_node("n1")) == ["a"]
    assert n.nominated_pods_for_node("n2") == []
    n.add_nominated_pod(a, None)
    assert names(n.nominated_pods_for_node("n1")) == ["a"]
    assert len(n) == 1


def test_empty_node_name_clears_the_nomination() -> None:
    n = Nominator()
    a = mkpod("a", nominated_node_name="n1")
    n.add_nominated_pod(a)
    n.add_nominated_pod(a, NominatingInfo(OVERRIDE, ""))
    assert n.nominated_pods_for_node("n1") == []
    assert n.nominated_node_names() == []
    n.add_nominated_pod(mkpod("b"))  # no nominatedNodeName at all
    assert len(n) == 0


def test_insertion_order_and_delete() -> None:
    n = Nominator()
    pods = [mkpod(f"p{i}") for i in range(4)]
    for p in pods:
        n.add_nominated_pod(p, NominatingInfo(OVERRIDE, "node"))
    n.delete_nominated_pod_if_exists(pods[1])
    assert names(n.nominated_pods_for_node("node")) == ["p0", "p2", "p3"]
    n.add_nominated_pod(pods[1], NominatingInfo(OVERRIDE, "node"))
    assert names(n.nominated_pods_for_node("node")) == ["p0", "p2", "p3", "p1"]
    n.delete_nominated_pod_if_exists(mkpod("unknown"))
    copy = n.nominated_pods_for_node("node")
    copy.clear()
    assert len(n.nominated_pods_for_node("node")) == 4


def test_update_keeps_in_memory_nomination_when_neither_object_carries_one() -> None:
    n = Nominator()
    old = mkpod("a")
    n.add_nominated_pod(old, NominatingInfo(OVERRIDE, "n1"))
    new = old.with_changes(labels={"v": "2"})
    n.update_nominated_pod(old, new)
    assert n.nominated_pods_for_node("n1") == [new]
    # An update that carries a nomination replaces it; one that removes it clears it.
    moved = new.with_changes(nominated_node_name="n2")
    n.update_nominated_pod(new, moved)
    assert n.nominated_pods_for_node("n2") == [moved]
    cleared = moved.with_changes(nominated_node_name="")
    n.update_nominated_pod(moved, cleared)
    assert n.nominated_node_names() == []


def test_pod_lister_rejects_missing_and_bound_pods() -> None:
    pending = mkpod("pending")
    bound = mkpod("bound", node_name="n9")
    snap = Snapshot()
    snap.add_pod(pending)
    snap.add_pod(bound)
    n = Nominator(pod_lister=snap)
    info = NominatingInfo(OVERRIDE, "n1")
    n.add_nominated_pod(pending, info)
    n.add_nominated_pod(bound.with_changes(node_name=""), info)  # the lister knows better
    n.add_nominated_pod(mkpod("gone"), info)
    assert names(n.nominated_pods_for_node("n1")) == ["pending"]


def test_pods_without_uid_do_not_collide() -> None:
    n = Nominator()
    a, b = Pod("a"), Pod("b")
    n.add_nominated_pod(a, NominatingInfo(OVERRIDE, "n"))
    n.add_nominated_pod(b, NominatingInfo(OVERRIDE, "n"))
    assert names(n.nominated_pods_for_node("n")) == ["a", "b"]


def test_queue_keeps_nominations_across_pop_update_and_delete() -> None:
    q = SchedulingQueue(FakeClock())
    a = mkpod("a", 10, nominated_node_name="n1")
    q.add(a)
    q.add(mkpod("b", 1))
    assert q.nominated_pods_for_node("n1") == [a]
    p = q.pop()
    assert p is not None and p.pod is a
    assert q.nominated_pods_for_node("n1") == [a]  # popping keeps the nomination
    p.unschedulable_plugins = {"NodeResourcesFit"}
    q.add_unschedulable_if_not_present(p, q.scheduling_cycle)
    a2 = a.with_changes(labels={"x": "y"})
    q.update(a, a2)
    assert q.nominated_pods_for_node("n1") == [a2]
    # The scheduler records a nomination from preemption through the queue's nominator.
    q.nominator.add_nominated_pod(a2, NominatingInfo(OVERRIDE, "n7"))
    assert q.nominated_pods_for_node("n7") == [a2] and q.nominated_pods_for_node("n1") == []
    q.delete(a2)
    assert q.nominated_pods_for_node("n7") == []


def test_gated_add_is_not_nominated_but_an_update_is() -> None:
    q = SchedulingQueue(FakeClock())
    gated = mkpod("g", nominated_node_name="n1", scheduling_gates=("x",))
    q.add(gated)
    assert q.nominated_pods_for_node("n1") == []
    q.update(gated, gated.with_changes(scheduling_gates=()))
    assert names(q.nominated_pods_for_node("n1")) == ["g"]


def test_queue_nominations_reserve_room_for_equal_or_higher_priority() -> None:
    """Nominated pods of priority >= the incoming pod's count as running (``addGENominatedPods``,
    pkg/scheduler/framework/runtime/framework.go)."""
    from kube.objects import Container, Node
    from scheduler.framework import CycleState, Framework
    from scheduler.plugins.noderesources.fit import NodeResourcesFit
    from scheduler.snapshot import NodeInfo

    node = NodeInfo(Node("n1", allocatable={"cpu": 2000, "pods": 10}))
    fw = Framework([NodeResourcesFit()])

    def cpu_pod(name: str, prio: int, cpu: int) -> Pod:
        return mkpod(name, prio, containers=(Container("c", requests={"cpu": cpu}),))

    q = SchedulingQueue(FakeClock())
    reserved = cpu_pod("reserved", 100, 1500)
    q.nominator.add_nominated_pod(reserved, NominatingInfo(OVERRIDE, "n1"))
    nominated = q.nominated_pods_for_node("n1")

    lower = cpu_pod("lower", 50, 1000)
    status = fw.run_filter_plugins_with_nominated_pods(CycleState(), lower, node, nominated)
    assert status.message == "Insufficient cpu"
    higher = cpu_pod("higher", 200, 1000)
    assert fw.run_filter_plugins_with_nominated_pods(
        CycleState(), higher, node, nominated
    ).is_success()
