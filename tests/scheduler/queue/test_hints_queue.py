"""The queue with SchedulerQueueingHints on: ``isPodWorthRequeuing`` asks the rejecting
plugins' hints, events seen while a pod is being scheduled are replayed when it comes back
unschedulable, and a pod's own update is judged by the hints too (scheduling_queue.go)."""

from __future__ import annotations

from typing import Any

from kube.objects import Pod
from scheduler.hints import DEFAULT_PLUGIN_HINTS
from scheduler.queue import QueuedPodInfo, SchedulingQueue
from scheduler.queue import events as ev
from scheduler.queue.scheduling_queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q
from tests.support.clock import FakeClock
from tests.support.objects import node, pod

_UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}


def _queue(clock: FakeClock, *, hints: bool = True) -> SchedulingQueue:
    return SchedulingQueue(clock, queueing_hints=DEFAULT_PLUGIN_HINTS if hints else None)


def _reject(q: SchedulingQueue, *plugins: str) -> QueuedPodInfo:
    pinfo = q.pop()
    assert pinfo is not None
    pinfo.unschedulable_plugins = set(plugins)
    return pinfo


def _pod(name: str, **kw: Any) -> Pod:
    return pod(name, **kw).with_changes(uid=f"uid-{name}")


def test_a_node_event_moves_only_the_pods_whose_rejector_says_queue() -> None:
    clock = FakeClock()
    q = _queue(clock)
    wants_a = _pod("a", node_selector={"zone": "a"})
    wants_b = _pod("b", node_selector={"zone": "b"})
    for p in (wants_a, wants_b):
        q.add(p)
        pinfo = _reject(q, "NodeAffinity")
        q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
        q.done(p.uid)
    assert q.where(wants_a) == q.where(wants_b) == UNSCHEDULABLE_Q
    clock.step(20)
    new = node("n", labels={"zone": "a"})
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd, new_obj=new)
    assert q.where(wants_a) == ACTIVE_Q
    assert q.where(wants_b) == UNSCHEDULABLE_Q
    # off, the registered event is enough for both
    off = _queue(clock, hints=False)
    for p in (wants_a, wants_b):
        off.add(p)
        off.add_unschedulable_if_not_present(_reject(off, "NodeAffinity"), off.scheduling_cycle)
    clock.step(20)
    off.move_all_to_active_or_backoff_queue(ev.NodeAdd, new_obj=new)
    assert off.where(wants_a) == off.where(wants_b) == ACTIVE_Q


def test_an_event_seen_in_flight_is_replayed_when_the_pod_comes_back() -> None:
    clock = FakeClock()
    q = _queue(clock)
    p = _pod("p", node_selector={"zone": "a"})
    q.add(p)
    pinfo = _reject(q, "NodeAffinity")
    assert q.in_flight_pods() == [p.uid]
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd, new_obj=node("x", labels={"zone": "b"}))
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd, new_obj=node("y", labels={"zone": "a"}))
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.in_flight_pods() == []
    assert q.where(p) == BACKOFF_Q  # node y may take it: retried after its backoff


def test_an_unrelated_event_in_flight_leaves_the_pod_in_the_pool() -> None:
    clock = FakeClock()
    q = _queue(clock)
    p = _pod("p", node_selector={"zone": "a"})
    q.add(p)
    pinfo = _reject(q, "NodeAffinity")
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd, new_obj=node("x", labels={"zone": "b"}))
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.where(p) == UNSCHEDULABLE_Q
    # off, any move request during the cycle sends it to the backoff queue
    off = _queue(clock, hints=False)
    off.add(p)
    pinfo = _reject(off, "NodeAffinity")
    off.move_all_to_active_or_backoff_queue(ev.NodeAdd, new_obj=node("x", labels={"zone": "b"}))
    off.add_unschedulable_if_not_present(pinfo, off.scheduling_cycle)
    assert off.where(p) == BACKOFF_Q


def test_events_are_released_once_no_pod_older_is_in_flight() -> None:
    clock = FakeClock()
    q = _queue(clock)
    first, second = _pod("a"), _pod("b")
    q.add(first)
    q.add(second)
    a = _reject(q, "NodeResourcesFit")
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd, new_obj=node("x"))
    b = _reject(q, "NodeResourcesFit")
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd, new_obj=node("y"))
    q.done(a.pod.uid)
    assert q.in_flight_pods() == [b.pod.uid]
    q.add_unschedulable_if_not_present(b, q.scheduling_cycle)  # node y came after its pop
    assert q.where(second) == BACKOFF_Q
    assert q.in_flight_pods() == []


def test_an_update_of_a_pod_in_flight_is_recorded_not_queued() -> None:
    clock = FakeClock()
    q = _queue(clock)
    p = _pod("p")
    q.add(p)
    pinfo = _reject(q, "NodeUnschedulable")
    tolerant = _pod("p", tolerations=[_UNSCHEDULABLE])
    q.update(p, tolerant)
    assert q.where(p) is None  # still being scheduled: not added to activeQ
    pinfo.pod = tolerant
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.where(tolerant) == BACKOFF_Q


def test_a_gated_pod_leaves_the_pool_when_its_last_gate_goes() -> None:
    clock = FakeClock()
    q = _queue(clock)
    gated = _pod("g").with_changes(scheduling_gates=("example.com/g",))
    q.add(gated)
    assert q.where(gated) == UNSCHEDULABLE_Q
    relabelled = gated.with_changes(labels={"x": "y"})
    q.update(gated, relabelled)
    assert q.where(gated) == UNSCHEDULABLE_Q  # no hint of SchedulingGates for a label change
    ungated = relabelled.with_changes(scheduling_gates=())
    q.update(relabelled, ungated)
    assert q.where(gated) == ACTIVE_Q
