"""Scheduling gates (PreEnqueue) in the queue, and the gated-pod update rules (KEP-3838)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kube.objects import Pod
from scheduler.framework import Code, Status
from scheduler.queue import (
    ClusterEvent,
    FieldError,
    SchedulingQueue,
    scheduling_gates_pre_enqueue,
    validate_pod_update_while_gated,
)
from scheduler.queue import events as ev
from scheduler.queue.scheduling_queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q
from tests.support.clock import FakeClock
from tests.support.objects import mkpod

# --- the plugin -----------------------------------------------------------------------------


def test_scheduling_gates_pre_enqueue_status() -> None:
    assert scheduling_gates_pre_enqueue(mkpod("free")) is None
    status = scheduling_gates_pre_enqueue(mkpod("g", scheduling_gates=("g1", "example.com/g2")))
    assert status is not None
    assert status.code is Code.UnschedulableAndUnresolvable
    assert status.message == "waiting for scheduling gates: [g1 example.com/g2]"
    assert status.plugin == "SchedulingGates"


def test_gates_from_manifest_keep_spec_order() -> None:
    pod = Pod.from_dict(
        {
            "metadata": {"name": "p"},
            "spec": {"schedulingGates": [{"name": "z"}, {"name": "a"}]},
        }
    )
    status = scheduling_gates_pre_enqueue(pod)
    assert status is not None and status.message == "waiting for scheduling gates: [z a]"


# --- gated pods in the queue ----------------------------------------------------------------


def gated_queue() -> tuple[SchedulingQueue, FakeClock, Pod]:
    c = FakeClock()
    q = SchedulingQueue(c)
    pod = mkpod("gated", scheduling_gates=("example.com/quota",))
    q.add(pod)
    return q, c, pod


def test_gated_pod_waits_in_pool_with_gating_plugin() -> None:
    q, _c, pod = gated_queue()
    assert q.where(pod) == UNSCHEDULABLE_Q
    pinfo = q.get_pod("gated")
    assert pinfo is not None
    assert pinfo.gated and pinfo.gating_plugin == "SchedulingGates"
    assert pinfo.unschedulable_plugins == {"SchedulingGates"}
    assert pinfo.initial_attempt_timestamp is None  # never entered activeQ
    assert q.pending_pods()[1] == "activeQ:0; backoffQ:0; unschedulablePods:1"


def test_gated_pods_ignore_wildcard_events_and_the_leftover_flush() -> None:
    q, c, pod = gated_queue()
    c.step(3600)
    q.flush_unschedulable_pods_leftover()
    q.move_all_to_active_or_backoff_queue(ev.UnschedulableTimeout)
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd)
    q.assigned_pod_added(mkpod("x", node_name="n1"))
    assert q.where(pod) == UNSCHEDULABLE_Q


def test_status_only_update_keeps_pod_gated() -> None:
    q, _c, pod = gated_queue()
    q.update(pod, pod.with_changes(resource_version="5", phase="Pending"))
    assert q.where(pod) == UNSCHEDULABLE_Q


def test_update_that_keeps_a_gate_keeps_pod_gated() -> None:
    q, _c, pod = gated_queue()
    two = pod.with_changes(scheduling_gates=("a", "b"))
    q.update(pod, two)
    one = two.with_changes(scheduling_gates=("b",), node_selector={"zone": "z1"})
    q.update(two, one)
    assert q.where(pod) == UNSCHEDULABLE_Q
    pinfo = q.get_pod("gated")
    assert pinfo is not None and pinfo.pod is one and pinfo.gated


def test_removing_the_last_gate_releases_the_pod() -> None:
    q, _c, pod = gated_queue()
    free = pod.with_changes(scheduling_gates=())
    q.update(pod, free)
    assert q.where(pod) == ACTIVE_Q
    pinfo = q.pop()
    assert pinfo is not None and pinfo.pod is free
    assert not pinfo.gated


def test_activate_does_not_release_a_gated_pod() -> None:
    q, _c, pod = gated_queue()
    q.activate([pod])
    assert q.where(pod) == UNSCHEDULABLE_Q
    assert q.move_request_cycle == q.scheduling_cycle


class QuotaGate:
    """A caller-supplied PreEnqueue plugin that registers Node/Add."""

    name = "Quota"

    def __init__(self) -> None:
        self.open = False
        self.calls = 0

    def pre_enqueue(self, pod: Pod) -> Status | None:
        self.calls += 1
        return None if self.open else Status(Code.Unschedulable, "over quota")

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return (ev.NodeAdd,)


def test_extra_pre_enqueue_plugin_gates_and_moves_on_its_events() -> None:
    gate = QuotaGate()
    c = FakeClock()
    q = SchedulingQueue(c, pre_enqueue_plugins=[gate])
    pod = mkpod("p")
    q.add(pod)
    pinfo = q.get_pod("p")
    assert pinfo is not None and pinfo.gating_plugin == "Quota"
    assert pinfo.gating_plugin_events == (ev.NodeAdd,)
    q.move_all_to_active_or_backoff_queue(ev.NodeLabelChange)  # not registered by Quota
    q.move_all_to_active_or_backoff_queue(ev.UnschedulableTimeout)
    calls = gate.calls
    assert calls == 1
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd)  # registered, but still over quota
    assert gate.calls == 2
    assert q.where(pod) == UNSCHEDULABLE_Q
    gate.open = True
    q.move_all_to_active_or_backoff_queue(ev.NodeAdd)
    assert q.where(pod) == ACTIVE_Q
    assert q.get_pod("p").gating_plugin is None  # type: ignore[union-attr]


def test_pre_enqueue_runs_when_entering_backoff_and_not_again_leaving_it() -> None:
    gate = QuotaGate()
    gate.open = True
    c = FakeClock()
    q = SchedulingQueue(c, pre_enqueue_plugins=[gate])
    pod = mkpod("p")
    q.add(pod)
    pinfo = q.pop()
    assert pinfo is not None
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)  # error -> backoff
    assert q.where(pod) == BACKOFF_Q
    calls = gate.calls
    c.step(5)
    assert q.flush_backoff_q_completed() == [pinfo]
    assert gate.calls == calls

    # Entering the backoff queue while the gate is closed keeps the pod in the pool.
    gate.open = False
    p2 = q.pop()
    assert p2 is pinfo
    q.add_unschedulable_if_not_present(p2, q.scheduling_cycle)
    assert q.where(pod) == UNSCHEDULABLE_Q
    assert p2.gating_plugin == "Quota"


# --- ValidatePodUpdate for gated pods -------------------------------------------------------


def manifest(
    *,
    gates: Sequence[str] = ("g1",),
    node_selector: dict[str, str] | None = None,
    required: list[dict[str, Any]] | None = None,
    preferred: list[dict[str, Any]] | None = None,
    pod_affinity: bool = False,
) -> Pod:
    spec: dict[str, Any] = {"schedulingGates": [{"name": g} for g in gates]}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    affinity: dict[str, Any] = {}
    node_affinity: dict[str, Any] = {}
    if required is not None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": required
        }
    if preferred is not None:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": 1, "preference": term} for term in preferred
        ]
    if node_affinity:
        affinity["nodeAffinity"] = node_affinity
    if pod_affinity:
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone"}
            ]
        }
    if affinity:
        spec["affinity"] = affinity
    return Pod.from_dict({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})


A = {"key": "a", "operator": "In", "values": ["x"]}
B = {"key": "b", "operator": "Exists"}
C = {"key": "c", "operator": "NotIn", "values": ["y"]}


def errors(old: Pod, new: Pod) -> list[str]:
    return [str(e) for e in validate_pod_update_while_gated(old, new)]


def test_gates_may_only_be_removed() -> None:
    assert errors(manifest(gates=("g1", "g2")), manifest(gates=("g2",))) == []
    assert errors(manifest(gates=("g1",)), manifest(gates=())) == []
    assert errors(manifest(gates=("g1",)), manifest(gates=("g1", "g2", "g3"))) == [
        "spec.schedulingGates[1].name: Forbidden: only deletion is allowed,"
        " but found new scheduling gate 'g2'",
        "spec.schedulingGates[2].name: Forbidden: only deletion is allowed,"
        " but found new scheduling gate 'g3'",
    ]
    # Also once the pod is no longer gated: gates cannot come back.
    assert errors(manifest(gates=()), manifest(gates=("g1",))) == [
        "spec.schedulingGates[0].name: Forbidden: only deletion is allowed,"
        " but found new scheduling gate 'g1'"
    ]


def test_field_error_shape() -> None:
    (err,) = validate_pod_update_while_gated(manifest(gates=()), manifest(gates=("g",)))
    assert isinstance(err, FieldError)
    assert (err.type, err.field) == ("FieldValueForbidden", "spec.schedulingGates[0].name")
    assert err.detail == "only deletion is allowed, but found new scheduling gate 'g'"


def test_node_selector_may_only_gain_keys_while_gated() -> None:
    old = manifest(node_selector={"a": "b"})
    assert errors(old, manifest(node_selector={"a": "b", "c": "d"})) == []
    assert errors(manifest(), manifest(node_selector={"a": "b"})) == []
    assert errors(old, manifest(node_selector={"a": "z", "c": "d"})) == [
        'spec.nodeSelector: Invalid value: {"a":"z","c":"d"}: only additions to'
        " spec.nodeSelector are allowed (no mutations or deletions)"
    ]
    assert errors(old, manifest(node_selector={})) == [
        "spec.nodeSelector: Invalid value: {}: only additions to spec.nodeSelector are allowed"
        " (no mutations or deletions)"
    ]


def test_required_node_affinity_may_only_be_tightened_while_gated() -> None:
    assert (
        errors(
            manifest(required=[{"matchExpressions": [A]}]),
            manifest(required=[{"matchExpressions": [A, B]}]),
        )
        == []
    )
    # Setting it when it was unset is allowed.
    assert errors(manifest(), manifest(required=[{"matchExpressions": [A]}])) == []
    assert errors(
        manifest(required=[{"matchExpressions": [A]}]),
        manifest(required=[{"matchExpressions": [B]}]),
    ) == [
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        '.nodeSelectorTerms[0]: Invalid value: {"MatchExpressions":[{"Key":"b",'
        '"Operator":"Exists","Values":null}],"MatchFields":null}: only additions are allowed'
        " (no mutations or deletions)"
    ]


def test_required_node_affinity_term_count_is_fixed() -> None:
    old = manifest(required=[{"matchExpressions": [A]}])
    new = manifest(required=[{"matchExpressions": [A]}, {"matchExpressions": [C]}])
    assert errors(old, new) == [
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        '.nodeSelectorTerms: Invalid value: [{"MatchExpressions":[{"Key":"a","Operator":"In",'
        '"Values":["x"]}],"MatchFields":null},{"MatchExpressions":[{"Key":"c",'
        '"Operator":"NotIn","Values":["y"]}],"MatchFields":null}]: no additions/deletions to'
        " non-empty NodeSelectorTerms list are allowed"
    ]
    assert errors(old, manifest()) == [
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms: Invalid value: null: no additions/deletions to non-empty"
        " NodeSelectorTerms list are allowed"
    ]


def test_every_changed_term_is_reported() -> None:
    old = manifest(required=[{"matchExpressions": [A, B]}, {"matchExpressions": [C]}])
    new = manifest(required=[{"matchExpressions": [A]}, {"matchExpressions": [A]}])
    got = errors(old, new)
    assert [e.split(":")[0] for e in got] == [
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        f".nodeSelectorTerms[{i}]"
        for i in (0, 1)
    ]


def test_preferred_node_affinity_is_free_while_gated() -> None:
    old = manifest(preferred=[{"matchExpressions": [A]}])
    assert errors(old, manifest(preferred=[{"matchExpressions": [C]}])) == []
    assert errors(old, manifest()) == []


def test_pod_not_gated_may_not_change_placement() -> None:
    forbidden = (
        "spec: Forbidden: pod updates may not change fields other than"
        " `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
        "`spec.tolerations` (only additions to existing tolerations),"
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously"
        " negative)"
    )
    assert errors(
        manifest(gates=(), node_selector={"a": "b"}),
        manifest(gates=(), node_selector={"a": "b", "c": "d"}),
    ) == [forbidden]
    # Pod affinity stays immutable even for gated pods.
    assert errors(manifest(), manifest(pod_affinity=True)) == [forbidden]
    assert errors(manifest(gates=()), manifest(gates=())) == []
