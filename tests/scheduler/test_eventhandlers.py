"""scheduler.eventhandlers: the informers' moves kubesim's loop and bench/scheduler_perf share."""

from __future__ import annotations

from kube.objects import Node, Pod
from scheduler import eventhandlers as handlers
from scheduler.queue import SchedulingQueue
from scheduler.queue.scheduling_queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q
from scheduler.snapshot import Snapshot
from tests.support.clock import FakeClock
from tests.support.objects import mkpod


def setup() -> tuple[Snapshot, SchedulingQueue]:
    snapshot, queue = Snapshot(), SchedulingQueue(FakeClock())  # type: ignore[arg-type]
    handlers.add_node(snapshot, queue, Node("n1"))
    return snapshot, queue


def rejected(queue: SchedulingQueue, name: str, plugin: str) -> None:
    pinfo = queue.pop()
    assert pinfo is not None and pinfo.pod.name == name
    pinfo.unschedulable_plugins = {plugin}
    queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle)
    assert queue.where(pinfo.pod) == UNSCHEDULABLE_Q


def waiting_for_room(snapshot: Snapshot, queue: SchedulingQueue) -> Pod:
    """A pending pod ``waiting`` that NodeResourcesFit turned away: parked as unschedulable."""
    waiting = mkpod("waiting")
    handlers.add_pending_pod(snapshot, queue, waiting)
    rejected(queue, "waiting", "NodeResourcesFit")
    return waiting


def test_a_gated_pod_is_queued_but_holds_no_room() -> None:
    snapshot, queue = setup()
    gated = mkpod("g", scheduling_gates=("example.com/wait",), nominated_node_name="n1")
    handlers.add_pending_pod(snapshot, queue, gated)
    assert queue.where(gated) is not None and snapshot.nominated_pods_for_node("n1") == []
    open_pod = gated.with_changes(scheduling_gates=())
    handlers.add_pending_pod(snapshot, queue, open_pod, old=gated)
    assert [p.name for p in snapshot.nominated_pods_for_node("n1")] == ["g"]


def test_a_nominated_pending_pods_deletion_wakes_pods_waiting_for_room() -> None:
    snapshot, queue = setup()
    waiting = waiting_for_room(snapshot, queue)
    nominated = mkpod("nominated", nominated_node_name="n1")
    handlers.add_pending_pod(snapshot, queue, nominated)
    handlers.delete_pod(snapshot, queue, nominated)
    assert queue.where(nominated) is None and snapshot.nominated_pods_for_node("n1") == []
    assert queue.where(waiting) in (ACTIVE_Q, BACKOFF_Q)


def test_an_unnominated_pending_pods_deletion_wakes_nobody() -> None:
    snapshot, queue = setup()
    waiting = waiting_for_room(snapshot, queue)
    other = mkpod("other")
    handlers.add_pending_pod(snapshot, queue, other)
    handlers.delete_pod(snapshot, queue, other)
    assert queue.where(waiting) == UNSCHEDULABLE_Q


def test_an_assigned_pods_deletion_frees_its_node_and_wakes_pods_waiting_for_room() -> None:
    snapshot, queue = setup()
    bound = mkpod("bound", node_name="n1")
    handlers.add_assigned_pod(snapshot, queue, bound)
    assert snapshot.get_pod(bound.key) is not None
    waiting = waiting_for_room(snapshot, queue)
    handlers.delete_pod(snapshot, queue, bound)
    assert snapshot.get_pod(bound.key) is None
    assert queue.where(waiting) in (ACTIVE_Q, BACKOFF_Q)


def test_nodes_come_and_go_with_their_events() -> None:
    snapshot, queue = setup()
    waiting = waiting_for_room(snapshot, queue)
    handlers.add_node(snapshot, queue, Node("n2"))
    assert snapshot.get_node_info("n2") is not None
    assert queue.where(waiting) in (ACTIVE_Q, BACKOFF_Q)
    handlers.delete_node(snapshot, queue, "n2")
    assert snapshot.get_node_info("n2") is None
