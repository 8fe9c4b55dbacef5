"""SchedulingQueue operations (pkg/scheduler/backend/queue/scheduling_queue.go) against a fake
clock."""

from __future__ import annotations

import pytest

from kube.objects import Pod, PodCondition
from scheduler.queue import (
    PodAlreadyPresentError,
    QueuedPodInfo,
    SchedulingQueue,
    is_pod_updated,
    less,
)
from scheduler.queue import events as ev
from scheduler.queue.scheduling_queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q
from tests.support.clock import T0, FakeClock
from tests.support.objects import mkpod


def make_queue(clock: FakeClock | None = None, **kw: object) -> tuple[SchedulingQueue, FakeClock]:
    c = clock or FakeClock()
    return SchedulingQueue(c, **kw), c  # type: ignore[arg-type]


def reject(q: SchedulingQueue, pinfo: QueuedPodInfo, *plugins: str) -> None:
    """What the scheduler does after a failed cycle: record the rejectors and requeue."""
    pinfo.unschedulable_plugins = set(plugins)
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)


# --- ordering -------------------------------------------------------------------------------


def test_less_is_priority_then_timestamp() -> None:
    hi = QueuedPodInfo(mkpod("hi", 10), 5.0)
    lo_early = QueuedPodInfo(mkpod("lo1", 1), 1.0)
    lo_late = QueuedPodInfo(mkpod("lo2", 1), 2.0)
    assert less(hi, lo_early) and not less(lo_early, hi)
    assert less(lo_early, lo_late) and not less(lo_late, lo_early)
    tie = QueuedPodInfo(mkpod("lo3", 1), 1.0)
    assert not less(lo_early, tie) and not less(tie, lo_early)
    # Missing priority is 0.
    assert less(QueuedPodInfo(mkpod("z", 0), 9.0), QueuedPodInfo(mkpod("n"), 9.5))


def test_pop_order_priority_then_arrival_and_counters() -> None:
    q, c = make_queue()
    q.add(mkpod("low", 1))
    c.step(1)
    q.add(mkpod("high", 100))
    c.step(1)
    q.add(mkpod("low2", 1))
    q.add(mkpod("mid"))
    popped = []
    while (p := q.pop()) is not None:
        popped.append(p)
    assert [p.pod.name for p in popped] == ["high", "low", "low2", "mid"]
    assert all(p.attempts == 1 for p in popped)
    assert q.scheduling_cycle == 4
    assert q.pop() is None
    assert q.scheduling_cycle == 4


def test_add_sets_timestamp_and_initial_attempt_timestamp() -> None:
    q, _c = make_queue()
    q.add(mkpod("a"))
    pinfo = q.get_pod("a")
    assert pinfo is not None
    assert pinfo.timestamp == T0
    assert pinfo.initial_attempt_timestamp == T0
    assert pinfo.attempts == 0


def test_recently_tried_pods_go_back() -> None:
    """TestRecentlyTriedPodsGoBack: a retried pod goes behind pods queued before its retry."""
    q, c = make_queue()
    pods = [mkpod(f"p{i}", 1) for i in range(5)]
    for p in pods:
        q.add(p)
    c.step(1e-6)
    p1 = q.pop()
    assert p1 is not None and p1.pod.name == "p0"
    reject(q, p1, "plugin")
    c.step(1.0)
    q.move_all_to_active_or_backoff_queue(ev.UnschedulableTimeout)
    order = [q.pop() for _ in range(5)]
    assert [p.pod.name for p in order if p] == ["p1", "p2", "p3", "p4", "p0"]
    assert order[-1] is p1


def test_retried_pod_goes_behind_same_priority_pods_in_active_q() -> None:
    q, c = make_queue()
    q.add(mkpod("first", 5))
    c.step(1)
    q.add(mkpod("second", 5))
    first = q.pop()
    assert first is not None
    # A move request during the cycle sends it back through the backoff queue; once the
    # backoff is over it is behind "second" because its timestamp was refreshed.
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd)
    c.step(1)
    reject(q, first, "NodeResourcesFit")
    assert q.where(first.pod) == BACKOFF_Q
    assert first.timestamp == T0 + 2
    c.step(10)
    assert [p.pod.name for p in q.flush_backoff_q_completed()] == ["first"]
    assert [q.pop().pod.name, q.pop().pod.name] == ["second", "first"]  # type: ignore[union-attr]


# --- AddUnschedulableIfNotPresent -----------------------------------------------------------


def test_add_unschedulable_if_not_present_errors_with_upstream_messages() -> None:
    q, _c = make_queue()
    q.add(mkpod("a"))
    q.add(mkpod("b"))
    q.add(mkpod("c", ns="ns1"))
    pa, pb, pc = q.pop(), q.pop(), q.pop()
    assert pa and pb and pc
    reject(q, pa, "NodeAffinity")
    with pytest.raises(PodAlreadyPresentError) as err:
        q.add_unschedulable_if_not_present(pa, q.scheduling_cycle)
    assert str(err.value) == "Pod default/a is already present in unschedulable queue"

    q.add(pb.pod)  # the pod came back through an informer update meanwhile
    with pytest.raises(PodAlreadyPresentError) as err:
        q.add_unschedulable_if_not_present(pb, q.scheduling_cycle)
    assert str(err.value) == "Pod default/b is already present in the active queue"

    pc.unschedulable_plugins = set()  # an error: straight to the (error) backoff queue
    q.add_unschedulable_if_not_present(pc, q.scheduling_cycle)
    with pytest.raises(PodAlreadyPresentError) as err:
        q.add_unschedulable_if_not_present(pc, q.scheduling_cycle)
    assert str(err.value) == "Pod ns1/c is already present in the backoff queue"


def test_add_unschedulable_counters_and_timestamp() -> None:
    q, c = make_queue()
    q.add(mkpod("a"))
    p = q.pop()
    assert p is not None
    c.step(3)
    p.backoff_expiration = 123.0  # a stale cache must be dropped
    reject(q, p, "NodeResourcesFit")
    assert (p.unschedulable_count, p.consecutive_errors_count) == (1, 0)
    assert p.timestamp == T0 + 3
    assert p.backoff_expiration is None
    assert q.where(p.pod) == UNSCHEDULABLE_Q

    # Errors (no rejecting plugin) count separately and a plugin rejection resets them.
    q.delete(p.pod)
    p.unschedulable_plugins = set()
    q.add_unschedulable_if_not_present(p, q.scheduling_cycle)
    q.delete(p.pod)
    q.add_unschedulable_if_not_present(p, q.scheduling_cycle)
    assert (p.unschedulable_count, p.consecutive_errors_count) == (1, 2)
    q.delete(p.pod)
    reject(q, p, "NodeResourcesFit")
    assert (p.unschedulable_count, p.consecutive_errors_count) == (2, 0)


def test_no_rejecting_plugin_goes_to_error_backoff_queue() -> None:
    q, _c = make_queue()
    q.add(mkpod("a"))
    p = q.pop()
    assert p is not None
    q.add_unschedulable_if_not_present(p, q.scheduling_cycle)
    assert q.where(p.pod) == BACKOFF_Q
    assert q.pods_in_backoff_q() == [p.pod]
    # PopFromBackoffQ never serves the error backoff queue.
    assert q.pop() is None


def test_move_request_during_cycle_sends_pod_to_backoff_not_pool() -> None:
    q, _c = make_queue()
    q.add(mkpod("a"))
    q.add(mkpod("b"))
    pa = q.pop()
    cycle_a = q.scheduling_cycle
    assert pa is not None
    # An event some plugin registered arrives while "a" is being scheduled.
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd)
    assert q.move_request_cycle == cycle_a
    pa.unschedulable_plugins = {"NodeResourcesFit"}
    q.add_unschedulable_if_not_present(pa, cycle_a)
    assert q.where(pa.pod) == BACKOFF_Q

    pb = q.pop()
    assert pb is not None and pb.pod.name == "b"
    reject(q, pb, "NodeResourcesFit")  # cycle 2 > moveRequestCycle 1
    assert q.where(pb.pod) == UNSCHEDULABLE_Q


def test_event_nobody_registered_is_not_a_move_request() -> None:
    q, _c = make_queue()
    q.add(mkpod("a"))
    pa = q.pop()
    assert pa is not None
    # No in-tree plugin registers Node/UpdateNodeCondition with hints off.
    q.move_all_to_active_or_backoff_queue(ev.NodeConditionChange)
    assert q.move_request_cycle == -1
    reject(q, pa, "NodeResourcesFit")
    assert q.where(pa.pod) == UNSCHEDULABLE_Q


# --- pop from backoff ----------------------------------------------------------------------


def test_pop_serves_backoff_head_when_active_q_is_empty() -> None:
    q, c = make_queue()
    for name, prio in (("x", 1), ("y", 5), ("z", 5)):
        q.add(mkpod(name, prio))
    pods = [q.pop(), q.pop(), q.pop()]
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd)  # makes the rejections go to backoff
    for p in pods:
        assert p is not None
        reject(q, p, "NodeResourcesFit")
        c.step(0.001)
    assert q.pending_pods()[1] == "activeQ:0; backoffQ:3; unschedulablePods:0"
    got = q.pop()
    # Same backoff window: ordered like activeQ (priority, then timestamp).
    assert got is not None and got.pod.name == "y"
    assert got.attempts == 2
    assert q.scheduling_cycle == 4


def test_pop_returns_none_only_when_active_and_backoff_are_empty() -> None:
    q, _c = make_queue()
    assert q.pop() is None
    q.add(mkpod("g", scheduling_gates=("wait",)))
    assert q.pop() is None  # gated pods are in the pool
    assert len(q) == 1


# --- Update ---------------------------------------------------------------------------------


def test_update_in_active_q_reorders_and_keeps_timestamp() -> None:
    q, c = make_queue()
    a = mkpod("a", 1)
    q.add(a)
    c.step(1)
    q.add(mkpod("b", 5))
    a2 = a.with_changes(spec_priority=10, labels={"x": "y"})
    q.update(a, a2)
    head = q.pop()
    assert head is not None and head.pod is a2
    assert head.timestamp == T0


def test_update_in_pool_requeues_only_on_spec_change() -> None:
    q, c = make_queue()
    a = mkpod("a")
    q.add(a)
    pa = q.pop()
    assert pa is not None
    reject(q, pa, "NodeAffinity")
    c.step(30)  # backoff long over

    status_only = a.with_changes(
        resource_version="2",
        conditions=(PodCondition("PodScheduled", "False", "Unschedulable"),),
    )
    q.update(a, status_only)
    assert q.where(a) == UNSCHEDULABLE_Q
    assert q.get_pod("a").pod is status_only  # type: ignore[union-attr]

    relabelled = status_only.with_changes(labels={"team": "x"})
    q.update(status_only, relabelled)
    assert q.where(a) == ACTIVE_Q


def test_update_in_pool_while_backing_off_goes_to_backoff() -> None:
    q, c = make_queue()
    a = mkpod("a")
    q.add(a)
    pa = q.pop()
    assert pa is not None
    reject(q, pa, "NodeAffinity")
    c.step(0.5)
    q.update(a, a.with_changes(node_selector={"zone": "a"}))
    assert q.where(a) == BACKOFF_Q


def test_update_of_unknown_pod_adds_it_to_active_q() -> None:
    q, _c = make_queue()
    a = mkpod("a")
    q.add(a)
    p = q.pop()  # in flight: the queue does not hold it any more
    assert p is not None
    q.update(a, a.with_changes(labels={"v": "2"}))
    assert q.where(a) == ACTIVE_Q
    fresh = q.get_pod("a")
    assert fresh is not None and fresh is not p and fresh.attempts == 0
    with pytest.raises(PodAlreadyPresentError, match="already present in the active queue"):
        reject(q, p, "NodeAffinity")


def test_update_in_backoff_q_stays_in_backoff() -> None:
    q, _c = make_queue()
    a = mkpod("a")
    q.add(a)
    p = q.pop()
    assert p is not None
    q.add_unschedulable_if_not_present(p, q.scheduling_cycle)  # error -> backoff
    a2 = a.with_changes(labels={"x": "1"})
    q.update(a, a2)
    assert q.where(a) == BACKOFF_Q
    assert q.get_pod("a").pod is a2  # type: ignore[union-attr]


def test_is_pod_updated_ignores_status_and_bookkeeping() -> None:
    a = mkpod("a", 1, resource_version="1", generation=1)
    assert not is_pod_updated(a, a)
    assert not is_pod_updated(
        a,
        a.with_changes(
            resource_version="7",
            generation=3,
            phase="Pending",
            nominated_node_name="n1",
            start_time=5.0,
        ),
    )
    assert is_pod_updated(a, a.with_changes(annotations={"k": "v"}))
    assert is_pod_updated(a, a.with_changes(scheduling_gates=("g",)))
    assert is_pod_updated(a, a.with_changes(spec_priority=2))


# --- Delete ---------------------------------------------------------------------------------


@pytest.mark.parametrize("where", [ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q])
def test_delete_removes_pod_and_nomination(where: str) -> None:
    q, _c = make_queue()
    a = mkpod("a", nominated_node_name="n1")
    q.add(a)
    assert q.nominated_pods_for_node("n1") == [a]
    if where != ACTIVE_Q:
        p = q.pop()
        assert p is not None
        if where == BACKOFF_Q:
            q.add_unschedulable_if_not_present(p, q.scheduling_cycle)
        else:
            reject(q, p, "NodeAffinity")
    assert q.where(a) == where
    q.delete(a)
    assert q.where(a) is None
    assert len(q) == 0
    assert q.nominated_pods_for_node("n1") == []
    q.delete(a)  # deleting an unknown pod is harmless


# --- Activate -------------------------------------------------------------------------------


def test_activate_moves_pool_and_backoff_pods_to_active() -> None:
    q, _c = make_queue()
    for name in ("pool", "backoff", "active"):
        q.add(mkpod(name))
    pp, pb = q.pop(), q.pop()
    assert pp and pb
    reject(q, pp, "NodeAffinity")
    q.add_unschedulable_if_not_present(pb, q.scheduling_cycle)
    assert (q.where(pp.pod), q.where(pb.pod)) == (UNSCHEDULABLE_Q, BACKOFF_Q)
    cycle_before = q.move_request_cycle
    q.activate({"p": pp.pod, "b": pb.pod, "a": mkpod("active")})
    assert [q.where(n) for n in ("default/pool", "default/backoff", "default/active")] == [
        ACTIVE_Q
    ] * 3
    # The pod already in activeQ could not be "activated": that is a move request.
    assert q.move_request_cycle == q.scheduling_cycle != cycle_before


def test_activate_unknown_pod_records_a_move_request() -> None:
    q, _c = make_queue()
    q.add(mkpod("a"))
    p = q.pop()
    assert p is not None
    q.activate([p.pod])  # in flight
    assert q.where(p.pod) is None
    reject(q, p, "NodeAffinity")
    assert q.where(p.pod) == BACKOFF_Q


# --- MoveAllToActiveOrBackoffQueue ----------------------------------------------------------


def pool_of(q: SchedulingQueue, *specs: tuple[str, str]) -> dict[str, Pod]:
    """Put one pod per (name, rejecting plugin) into the pool."""
    pods = {}
    for name, _plugin in specs:
        pods[name] = mkpod(name)
        q.add(pods[name])
    for _name, plugin in specs:
        p = q.pop()
        assert p is not None
        reject(q, p, plugin)
    return pods


def test_move_all_moves_only_pods_whose_rejector_registered_the_event() -> None:
    q, c = make_queue()
    pool_of(q, ("fit", "NodeResourcesFit"), ("aff", "NodeAffinity"), ("ports", "NodePorts"))
    c.step(20)
    q.move_all_to_active_or_backoff_queue(ev.NodeAllocatableChange)
    assert q.where("default/fit") == ACTIVE_Q
    assert q.where("default/aff") == UNSCHEDULABLE_Q
    assert q.where("default/ports") == UNSCHEDULABLE_Q
    q.move_all_to_active_or_backoff_queue(ev.NodeLabelChange)
    assert q.where("default/aff") == ACTIVE_Q
    assert q.where("default/ports") == ACTIVE_Q


def test_move_all_generic_update_does_not_match_specific_registration() -> None:
    q, c = make_queue()
    pool_of(q, ("aff", "NodeAffinity"))
    c.step(20)
    # NodeAffinity registered Add|UpdateNodeLabel|UpdateNodeTaint; a generic Node/Update is
    # broader than that and does not match.
    q.move_all_to_active_or_backoff_queue(ev.NodeUpdate)
    assert q.where("default/aff") == UNSCHEDULABLE_Q


def test_move_all_backing_off_pods_go_to_backoff() -> None:
    q, c = make_queue()
    pool_of(q, ("fit", "NodeResourcesFit"))
    c.step(0.2)
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd)
    assert q.where("default/fit") == BACKOFF_Q


def test_move_all_pre_check_filters_pods() -> None:
    q, c = make_queue()
    pool_of(q, ("a", "NodeResourcesFit"), ("b", "NodeResourcesFit"))
    c.step(20)
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd, lambda pod: pod.name == "b")
    assert q.where("default/a") == UNSCHEDULABLE_Q
    assert q.where("default/b") == ACTIVE_Q


def test_move_all_with_unregistered_plugin_moves_on_any_resource_event() -> None:
    """A plugin without EventsToRegister is registered for every event of every resource."""
    q, c = make_queue()
    pool_of(q, ("a", "fooPlugin"))
    c.step(20)
    q.move_all_to_active_or_backoff_queue(ev.PvAdd)
    assert q.where("default/a") == ACTIVE_Q


def test_custom_plugin_events_and_pending_plugins_skip_backoff() -> None:
    q, _c = make_queue(plugin_events={"foo": [ev.NodeAdd], "bar": [ev.PvcAdd]})
    q.add(mkpod("a"))
    p = q.pop()
    assert p is not None
    p.pending_plugins = {"bar"}
    reject(q, p, "foo")
    assert q.where(p.pod) == UNSCHEDULABLE_Q
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd)
    assert q.where(p.pod) == BACKOFF_Q  # "foo" rejected it: respect the backoff
    q.delete(p.pod)
    q.add(p.pod)
    p = q.pop()  # a later cycle than the NodeAdd move request
    assert p is not None
    p.pending_plugins = {"bar"}
    reject(q, p, "foo")
    assert q.where(p.pod) == UNSCHEDULABLE_Q
    q.move_all_to_active_or_backoff_queue(ev.PvcAdd)
    assert q.where(p.pod) == ACTIVE_Q  # a pending plugin's event: requeue immediately
    # Events no enabled plugin registered are ignored entirely.
    assert not q.is_event_of_interest(ev.NodeTaintChange)


def test_leftover_flush_after_five_minutes() -> None:
    q, c = make_queue()
    pool_of(q, ("old", "NodeAffinity"))
    c.step(60)
    pool_of(q, ("young", "NodeAffinity"))
    c.step(240)  # "old" has waited exactly 300 s: not more than the limit
    q.flush_unschedulable_pods_leftover()
    assert q.where("default/old") == UNSCHEDULABLE_Q
    c.step(0.5)
    q.flush_unschedulable_pods_leftover()
    assert q.where("default/old") == ACTIVE_Q
    assert q.where("default/young") == UNSCHEDULABLE_Q


def test_leftover_flush_limit_is_configurable() -> None:
    q, c = make_queue(pod_max_in_unschedulable_pods=60.0)
    pool_of(q, ("a", "NodeAffinity"))
    c.step(61)
    q.flush_unschedulable_pods_leftover()
    assert q.where("default/a") == ACTIVE_Q


# --- AssignedPodAdded / AssignedPodUpdated --------------------------------------------------


def affinity_pod(name: str, *, anti: bool = False, ns: str = "default") -> Pod:
    kind = "podAntiAffinity" if anti else "podAffinity"
    return Pod.from_dict(
        {
            "metadata": {"name": name, "namespace": ns, "uid": name},
            "spec": {
                "affinity": {
                    kind: {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {"matchLabels": {"app": "db"}},
                                "topologyKey": "kubernetes.io/hostname",
                            }
                        ]
                    }
                }
            },
        }
    )


def test_assigned_pod_added_moves_pods_whose_affinity_terms_match() -> None:
    q, c = make_queue()
    wants_db = affinity_pod("wants-db")
    avoids_db = affinity_pod("avoids-db", anti=True)
    wants_db_elsewhere = affinity_pod("other-ns", ns="other")
    for p in (wants_db, avoids_db, wants_db_elsewhere):
        q.add(p)
    for _ in range(3):
        p = q.pop()
        assert p is not None
        reject(q, p, "InterPodAffinity")
    c.step(20)
    q.assigned_pod_added(mkpod("web", labels={"app": "web"}, node_name="n1"))
    assert q.unschedulable_pods() == [wants_db, avoids_db, wants_db_elsewhere]
    q.assigned_pod_added(mkpod("db", labels={"app": "db"}, node_name="n1"))
    assert q.where(wants_db) == ACTIVE_Q
    # Only required *affinity* terms count (PodInfo.RequiredAffinityTerms), and a term without
    # namespaces only matches pods of the pod's own namespace.
    assert q.where(avoids_db) == UNSCHEDULABLE_Q
    assert q.where(wants_db_elsewhere) == UNSCHEDULABLE_Q


def test_assigned_pod_added_uses_namespace_labels_for_namespace_selectors() -> None:
    pod = Pod.from_dict(
        {
            "metadata": {"name": "p", "uid": "p"},
            "spec": {
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {"matchLabels": {"app": "db"}},
                                "namespaceSelector": {"matchLabels": {"tier": "data"}},
                                "topologyKey": "zone",
                            }
                        ]
                    }
                }
            },
        }
    )
    labels = {"data-ns": {"tier": "data"}}
    q, c = make_queue(namespace_labels=lambda ns: labels.get(ns, {}))
    q.add(pod)
    p = q.pop()
    assert p is not None
    reject(q, p, "InterPodAffinity")
    c.step(20)
    q.assigned_pod_added(mkpod("db", ns="plain-ns", labels={"app": "db"}, node_name="n"))
    assert q.where(pod) == UNSCHEDULABLE_Q
    q.assigned_pod_added(mkpod("db", ns="data-ns", labels={"app": "db"}, node_name="n"))
    assert q.where(pod) == ACTIVE_Q


def test_assigned_pod_added_moves_spread_rejected_pods_of_same_namespace() -> None:
    q, c = make_queue()
    same, other = mkpod("same"), mkpod("other", ns="elsewhere")
    q.add(same)
    q.add(other)
    for _ in range(2):
        p = q.pop()
        assert p is not None
        reject(q, p, "PodTopologySpread")
    c.step(20)
    q.assigned_pod_added(mkpod("x", node_name="n1"))
    assert q.where(same) == ACTIVE_Q
    assert q.where(other) == UNSCHEDULABLE_Q


def test_assigned_pod_updated_scale_down_moves_all_fit_rejected_pods() -> None:
    from kube.objects import Container

    q, c = make_queue()
    pool_of(q, ("fit", "NodeResourcesFit"), ("aff", "NodeAffinity"))
    c.step(20)
    old = mkpod("big", node_name="n1", containers=(Container("c", requests={"cpu": 2000}),))
    relabelled = old.with_changes(labels={"v": "2"})
    q.assigned_pod_updated(old, relabelled)  # UpdatePodLabel: no cross-topology term matches
    assert q.where("default/fit") == UNSCHEDULABLE_Q
    smaller = old.with_changes(containers=(Container("c", requests={"cpu": 1000}),))
    assert ev.pod_scheduling_properties_change(smaller, old) == [
        ev.ClusterEvent(ev.AssignedPod, ev.ActionType.UpdatePodScaleDown)
    ]
    q.assigned_pod_updated(old, smaller)
    assert q.where("default/fit") == ACTIVE_Q
    assert q.where("default/aff") == UNSCHEDULABLE_Q


# --- inspection -----------------------------------------------------------------------------


def test_pending_pods_lists_every_pod_with_summary() -> None:
    q, _c = make_queue()
    for name in ("b1", "u1", "u2"):
        q.add(mkpod(name))
    b1, u1, u2 = q.pop(), q.pop(), q.pop()
    assert b1 and u1 and u2
    assert [b1.pod.name, u1.pod.name, u2.pod.name] == ["b1", "u1", "u2"]
    q.add_unschedulable_if_not_present(b1, q.scheduling_cycle)
    reject(q, u1, "NodeAffinity")
    reject(q, u2, "NodeAffinity")
    q.add(mkpod("a1"))
    q.add(mkpod("a2"))
    q.add(mkpod("gated", scheduling_gates=("g",)))
    pods, summary = q.pending_pods()
    assert summary == "activeQ:2; backoffQ:1; unschedulablePods:3"
    # activeQ pods, then the backoff queue, then the pool.
    assert [p.name for p in pods] == ["a1", "a2", "b1", "u1", "u2", "gated"]


def test_get_pod_finds_pods_in_every_sub_queue() -> None:
    q, _c = make_queue()
    q.add(mkpod("a", ns="x"))
    assert q.get_pod("a", "x") is not None
    assert q.get_pod("a") is None
