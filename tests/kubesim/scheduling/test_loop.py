"""The scheduler loop against a running kubesim, checked against ``scheduler``'s own answers.

Each decision the loop acts on is compared with ``schedule_one`` / ``simulate`` on a snapshot
built from the same stored objects, so kubesim and ``python -m scheduler simulate`` cannot
drift apart. Small ``time_scale`` keeps grace periods and backoffs short.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kubesim
from kube.objects import Pod
from kubesim.core.errors import StatusError
from kubesim.scheduling import (
    SchedulerLoop,
    node_update_events,
    status_update,
)
from scheduler import build_snapshot, schedule_one, simulate
from scheduler.queue import events as qev
from tests.support.bench import load_bench
from tests.support.manifests import pending_pod
from tests.support.schedloop import (
    PRIORITY_CLASSES,
    cluster_objects,
    condition,
    create_pod,
    decision_for,
    events_for,
    loop_of,
    node_yaml,
    stored_pod,
)
from tests.support.wait import until

# --- binding -------------------------------------------------------------------------------------


async def test_binds_a_pending_pod_where_schedule_one_would() -> None:
    state = [
        node_yaml("node-a", cpu="4"),
        node_yaml("node-b", cpu="8"),
        node_yaml("node-c", cpu="2"),
    ]
    async with kubesim.serve(state=state, time_scale=0.01) as sim:
        busy = pending_pod("busy", cpu="6", node_name="node-b")
        create_pod(sim, busy)
        await loop_of(sim).wait_idle()
        for i in range(4):
            objects = cluster_objects(sim)
            manifest = pending_pod(f"web-{i}", cpu="500m")
            created = create_pod(sim, manifest)
            await until(lambda i=i: stored_pod(sim, f"web-{i}")["spec"].get("nodeName"))
            decision = decision_for(sim, f"web-{i}")
            snapshot, _ = build_snapshot(objects)
            expected = schedule_one(
                Pod.from_dict(created), snapshot, start_index=decision.start_index
            )
            assert stored_pod(sim, f"web-{i}")["spec"]["nodeName"] == expected.suggested_host
        scheduled = condition(stored_pod(sim, "web-0"), "PodScheduled")
        assert scheduled is not None and scheduled["status"] == "True"
        placed = stored_pod(sim, "web-0")["spec"]["nodeName"]
        (event,) = events_for(sim, "web-0", "Scheduled")
        assert event["note"] == f"Successfully assigned default/web-0 to {placed}"
        assert event["type"] == "Normal"
        assert event["action"] == "Binding"
        assert event["reportingController"] == "default-scheduler"
        assert event["regarding"]["uid"] == stored_pod(sim, "web-0")["metadata"]["uid"]


async def test_pods_of_another_scheduler_and_a_disabled_loop_stay_pending() -> None:
    async with kubesim.serve(state=[node_yaml("node-a")], time_scale=0.01) as sim:
        create_pod(sim, pending_pod("other", schedulerName="my-scheduler"))
        create_pod(sim, pending_pod("mine"))
        await until(lambda: stored_pod(sim, "mine")["spec"].get("nodeName"))
        await loop_of(sim).wait_idle()
        assert not stored_pod(sim, "other")["spec"].get("nodeName")
        assert condition(stored_pod(sim, "other"), "PodScheduled") is None
    async with kubesim.serve(
        state=[node_yaml("node-a")], time_scale=0.01, scheduler_loop=False
    ) as sim:
        assert sim.find_controller(SchedulerLoop) is None
        create_pod(sim, pending_pod("idle"))
        await asyncio.sleep(0.1)
        assert not stored_pod(sim, "idle")["spec"].get("nodeName")
        assert stored_pod(sim, "idle")["status"]["phase"] == "Pending"


# --- failures ------------------------------------------------------------------------------------


async def test_unschedulable_pod_gets_condition_and_event_with_the_fit_error() -> None:
    state = [node_yaml("node-a", cpu="2"), node_yaml("node-b", cpu="2", disk="hdd")]
    async with kubesim.serve(state=state, time_scale=0.01) as sim:
        create_pod(sim, pending_pod("filler", cpu="1500m", node_name="node-a"))
        await loop_of(sim).wait_idle()
        objects = cluster_objects(sim)
        manifest = pending_pod("big", cpu="1", nodeSelector={"disk": "ssd"})
        created = create_pod(sim, manifest)
        cond = await until(lambda: condition(stored_pod(sim, "big"), "PodScheduled"))
        report = simulate(objects, pending=[Pod.from_dict(created)])
        (predicted,) = report.decisions
        assert predicted.outcome == "unschedulable"
        expected = f"{predicted.message} {predicted.preemption_message}"
        assert expected == (
            "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node"
            " affinity/selector. preemption: 0/2 nodes are available: 1 No preemption victims"
            " found for incoming pod, 1 Preemption is not helpful for scheduling."
        )
        assert cond["status"] == "False"
        assert cond["reason"] == "Unschedulable"
        assert cond["message"] == expected
        assert cond["lastTransitionTime"]
        events = events_for(sim, "big", "FailedScheduling")
        assert events and events[0]["note"] == expected
        assert events[0]["type"] == "Warning"
        assert events[0]["action"] == "Scheduling"
        assert events[0]["reportingController"] == "default-scheduler"
        assert not stored_pod(sim, "big")["spec"].get("nodeName")
        assert "nominatedNodeName" not in stored_pod(sim, "big")["status"]
        # Freeing room (a bound pod deleted) moves the pod back and it binds.
        sim.registry.delete(
            sim._type_for("Pod"), "default", "filler", kubesim_delete_options(grace=0)
        )
        await until(lambda: stored_pod(sim, "big")["spec"].get("nodeName") == "node-a")


def kubesim_delete_options(*, grace: int) -> Any:
    from kubesim.registry.generic import DeleteOptions

    return DeleteOptions(grace_period_seconds=grace)


async def test_cordoned_node_keeps_pod_pending_until_uncordoned() -> None:
    async with kubesim.serve(state=[node_yaml("node-a", cordoned=True)], time_scale=0.01) as sim:
        create_pod(sim, pending_pod("web"))
        cond = await until(lambda: condition(stored_pod(sim, "web"), "PodScheduled"))
        assert cond["message"] == (
            "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are"
            " available: 1 Preemption is not helpful for scheduling."
        )
        await loop_of(sim).wait_idle()
        assert loop_of(sim).queue.where("default/web") == "Unschedulable"
        assert not stored_pod(sim, "web")["spec"].get("nodeName")
        sim.registry.patch(
            sim._type_for("Node"),
            "",
            "node-a",
            b'{"spec":{"unschedulable":false}}',
            "application/strategic-merge-patch+json",
        )
        await until(lambda: stored_pod(sim, "web")["spec"].get("nodeName") == "node-a")
        assert condition(stored_pod(sim, "web"), "PodScheduled")["status"] == "True"  # type: ignore[index]


async def test_taints_are_respected_and_tolerations_let_pods_in() -> None:
    tainted = node_yaml("node-a").replace(
        "spec: {unschedulable: false}",
        "spec: {unschedulable: false, taints: [{key: dedicated, value: db, effect: NoSchedule}]}",
    )
    async with kubesim.serve(state=[tainted], time_scale=0.01) as sim:
        objects = cluster_objects(sim)
        plain = create_pod(sim, pending_pod("plain"))
        toleration = {
            "key": "dedicated",
            "operator": "Equal",
            "value": "db",
            "effect": "NoSchedule",
        }
        create_pod(sim, pending_pod("tolerant", tolerations=[toleration]))
        await until(lambda: stored_pod(sim, "tolerant")["spec"].get("nodeName") == "node-a")
        cond = await until(lambda: condition(stored_pod(sim, "plain"), "PodScheduled"))
        (predicted,) = simulate(objects, pending=[Pod.from_dict(plain)]).decisions
        assert "untolerated taint" in predicted.message
        assert cond["message"] == f"{predicted.message} {predicted.preemption_message}"
        assert not stored_pod(sim, "plain")["spec"].get("nodeName")


async def test_gated_pod_waits_until_its_gates_are_removed() -> None:
    async with kubesim.serve(state=[node_yaml("node-a")], time_scale=0.01) as sim:
        create_pod(sim, pending_pod("gated", schedulingGates=[{"name": "example.com/wait"}]))
        await loop_of(sim).wait_idle()
        await asyncio.sleep(0.05)
        assert not stored_pod(sim, "gated")["spec"].get("nodeName")
        assert loop_of(sim).queue.where("default/gated") == "Unschedulable"
        assert loop_of(sim).queue.get_pod("gated").gated  # type: ignore[union-attr]
        assert not events_for(sim, "gated", "FailedScheduling")
        sim.registry.patch(
            sim._type_for("Pod"),
            "default",
            "gated",
            b'[{"op": "remove", "path": "/spec/schedulingGates"}]',
            "application/json-patch+json",
        )
        await until(lambda: stored_pod(sim, "gated")["spec"].get("nodeName") == "node-a")


# --- preemption ----------------------------------------------------------------------------------


async def test_preemption_deletes_victims_nominates_and_then_binds() -> None:
    state = [node_yaml("node-a", cpu="2"), node_yaml("node-b", cpu="2"), PRIORITY_CLASSES]
    async with kubesim.serve(state=state, time_scale=0.01) as sim:
        kubelet = sim.kubelet
        assert kubelet is not None
        # node-a: two low pods; node-b: one mid pod using the same room.
        for name, where, cls in (
            ("low-1", "node-a", "low"),
            ("low-2", "node-a", "low"),
            ("mid-1", "node-b", "mid"),
        ):
            create_pod(
                sim,
                pending_pod(name, cpu="900m", priority_class=cls, node_name=where, grace=30),
            )
            kubelet.set_deletion_override("default", name, None)  # terminate only when told
        create_pod(
            sim, pending_pod("filler-b", cpu="900m", priority_class="mid", node_name="node-b")
        )
        await loop_of(sim).wait_idle()
        objects = cluster_objects(sim)
        created = create_pod(sim, pending_pod("vip", cpu="1500m", priority_class="high"))
        report = simulate(objects, pending=[Pod.from_dict(created)])
        (predicted,) = report.decisions
        assert predicted.outcome == "preempting"
        assert predicted.nominated_node == "node-a"

        status = await until(lambda: stored_pod(sim, "vip")["status"].get("nominatedNodeName"))
        assert status == predicted.nominated_node
        victims = sorted(v.pod for v in predicted.victims)
        assert victims == ["default/low-1", "default/low-2"]
        decision = decision_for(sim, "vip")
        assert sorted(decision.victims) == victims
        vip_uid = created["metadata"]["uid"]
        for key in victims:
            name = key.split("/")[1]
            victim = stored_pod(sim, name)
            assert victim["metadata"]["deletionTimestamp"]
            assert victim["metadata"]["deletionGracePeriodSeconds"] == 30
            target = condition(victim, "DisruptionTarget")
            assert target is not None
            assert target["status"] == "True"
            assert target["reason"] == "PreemptionByScheduler"
            assert target["message"] == (
                "default-scheduler: preempting to accommodate a higher priority pod"
            )
            (event,) = events_for(sim, name, "Preempted")
            assert event["note"] == f"Preempted by pod {vip_uid} on node node-a"
            assert event["action"] == "Preempting"
            assert event["related"]["uid"] == vip_uid
            assert event["reportingController"] == "default-scheduler"
        assert stored_pod(sim, "mid-1")["metadata"].get("deletionTimestamp") is None
        failed = events_for(sim, "vip", "FailedScheduling")
        assert failed and failed[0]["note"] == predicted.message
        assert not stored_pod(sim, "vip")["spec"].get("nodeName")

        for key in victims:
            kubelet.set_deletion_override("default", key.split("/")[1], 0.0)
        await until(lambda: stored_pod(sim, "vip")["spec"].get("nodeName") == "node-a")


@pytest.mark.parametrize(
    ("started", "chosen"), [("2100-01-01", "node-a"), ("2020-01-01", "node-b")]
)
async def test_an_unset_start_time_counts_as_now_against_set_ones(
    started: str, chosen: str
) -> None:
    """kube picks the node whose victims started last, an unset start time being time.Now():
    a victim started in the future is later than one without a start time, one started in
    the past earlier (the loop may treat "unset" as "later than any" only in the latter case)."""
    on_a = pending_pod("on-a", cpu="900m", priority_class="low", node_name="node-a")
    on_a["status"] = {"phase": "Running", "startTime": f"{started}T00:00:00Z"}
    on_b = pending_pod("on-b", cpu="900m", priority_class="low", node_name="node-b")
    on_b["status"] = {"phase": "Running"}
    state = [node_yaml("node-a", cpu="1"), node_yaml("node-b", cpu="1"), PRIORITY_CLASSES]
    state += [on_a, on_b]
    async with kubesim.serve(state=state, time_scale=0.01, disabled_controllers={"kubelet"}) as sim:
        create_pod(sim, pending_pod("vip", cpu="900m", priority_class="high"))
        node = await until(lambda: stored_pod(sim, "vip")["status"].get("nominatedNodeName"))
        assert node == chosen
        assert decision_for(sim, "vip").victims == (f"default/on-{chosen[-1]}",)


async def test_a_higher_preemptor_clears_a_lower_nomination_on_its_node() -> None:
    state = [node_yaml("node-a", cpu="2"), PRIORITY_CLASSES]
    async with kubesim.serve(state=state, time_scale=0.01) as sim:
        kubelet = sim.kubelet
        assert kubelet is not None
        create_pod(sim, pending_pod("low-1", cpu="1500m", priority_class="low", node_name="node-a"))
        kubelet.set_deletion_override("default", "low-1", None)
        await loop_of(sim).wait_idle()
        create_pod(sim, pending_pod("mid", cpu="1500m", priority_class="mid"))
        await until(lambda: stored_pod(sim, "mid")["status"].get("nominatedNodeName") == "node-a")
        assert stored_pod(sim, "low-1")["metadata"]["deletionTimestamp"]
        create_pod(sim, pending_pod("vip", cpu="1500m", priority_class="high"))
        await until(lambda: stored_pod(sim, "vip")["status"].get("nominatedNodeName") == "node-a")
        await until(lambda: not stored_pod(sim, "mid")["status"].get("nominatedNodeName"))
        # low-1 was already terminating: no second Preempted event for it.
        assert len(events_for(sim, "low-1", "Preempted")) == 1
        kubelet.set_deletion_override("default", "low-1", 0.0)
        await until(lambda: stored_pod(sim, "vip")["spec"].get("nodeName") == "node-a")
        await loop_of(sim).wait_idle()
        assert not stored_pod(sim, "mid")["spec"].get("nodeName")


# --- the binding subresource for other clients -----------------------------------------------


async def test_binding_subresource_binds_once_and_answers_409_after() -> None:
    async with (
        kubesim.serve(state=[node_yaml("node-a")], time_scale=0.01, scheduler_loop=False) as sim,
        aiohttp.ClientSession() as http,
    ):
        created = create_pod(sim, pending_pod("web"))
        url = f"{sim.url}/api/v1/namespaces/default/pods/web/binding"
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "web", "uid": created["metadata"]["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
        }
        async with http.post(url, json=body) as resp:
            assert resp.status == 201
            answer = await resp.json()
        assert answer["kind"] == "Status" and answer["status"] == "Success"
        bound = stored_pod(sim, "web")
        assert bound["spec"]["nodeName"] == "node-a"
        scheduled = condition(bound, "PodScheduled")
        assert scheduled is not None and scheduled["status"] == "True"
        async with http.post(url, json=body) as resp:
            assert resp.status == 409
            status = await resp.json()
        assert status["reason"] == "Conflict"
        assert status["message"] == (
            'Operation cannot be fulfilled on pods/binding "web": pod web is already assigned'
            ' to node "node-a"'
        )


async def test_binding_subresource_validates_like_kube_apiserver() -> None:
    async with (
        kubesim.serve(state=[node_yaml("node-a")], time_scale=0.01, scheduler_loop=False) as sim,
        aiohttp.ClientSession() as http,
    ):
        create_pod(sim, pending_pod("web"))
        create_pod(sim, pending_pod("gated", schedulingGates=[{"name": "g"}]))
        base = f"{sim.url}/api/v1/namespaces/default/pods"

        async def post(name: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            async with http.post(f"{base}/{name}/binding", json=body) as resp:
                return resp.status, await resp.json()

        def binding(name: str, **extra: Any) -> dict[str, Any]:
            out: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name},
                "target": {"name": "node-a"},
            }
            out.update(extra)
            return out

        code, status = await post("web", binding("other"))
        assert (code, status["message"]) == (
            400,
            "name in URL does not match name in Binding object",
        )
        code, status = await post("web", binding("web", target={"kind": "Node"}))
        assert (code, status["reason"]) == (422, "Invalid")
        assert status["message"] == 'Binding "web" is invalid: target.name: Required value'
        code, status = await post(
            "web", binding("web", metadata={"name": "web", "uid": "not-the-uid"})
        )
        assert code == 409
        assert "Precondition failed: UID in precondition: not-the-uid" in status["message"]
        code, status = await post("missing", binding("missing"))
        assert (code, status["reason"]) == (404, "NotFound")
        code, status = await post("gated", binding("gated"))
        assert code == 409
        assert status["message"].endswith("pod gated has non-empty .spec.schedulingGates")
        async with http.post(f"{base}/web/binding?dryRun=All", json=binding("web")) as resp:
            assert resp.status == 201
        assert not stored_pod(sim, "web")["spec"].get("nodeName")


# --- helpers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"spec": {"unschedulable": True}}, [qev.NodeSpecUnschedulableChange]),
        ({"metadata": {"labels": {"a": "b"}}}, [qev.NodeLabelChange]),
        ({"status": {"allocatable": {"cpu": "1"}}}, [qev.NodeAllocatableChange]),
        ({"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}, [qev.NodeTaintChange]),
        (
            {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
            [qev.NodeConditionChange],
        ),
        ({"metadata": {"annotations": {"x": "y"}}}, [qev.NodeAnnotationChange]),
        ({}, []),
    ],
)
def test_node_update_events(change: dict[str, Any], expected: list[qev.ClusterEvent]) -> None:
    old: dict[str, Any] = {
        "metadata": {"name": "n"},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    new = {k: dict(v) for k, v in old.items()}
    for section, values in change.items():
        new[section] = {**new[section], **values}
    assert node_update_events(old, new) == expected


# --- the status fast path equals a full read -------------------------------------------------

_times = st.sampled_from(["2024-05-01T10:00:00Z", "2025-01-02T03:04:05Z", None])
_conditions = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["Ready", "PodScheduled", "DisruptionTarget"]),
            "status": st.sampled_from(["True", "False"]),
        },
        optional={
            "reason": st.sampled_from(["Unschedulable", "PreemptionByScheduler"]),
            "message": st.text(max_size=5),
            "lastTransitionTime": _times,
        },
    ),
    max_size=4,
)
_statuses = st.fixed_dictionaries(
    {},
    optional={
        "phase": st.sampled_from(["Pending", "Running", "Succeeded"]),
        "conditions": _conditions,
        "startTime": _times,
        "nominatedNodeName": st.sampled_from(["", "node-a"]),
    },
)


@settings(max_examples=200, deadline=None)
@given(
    before=_statuses,
    after=_statuses,
    bind=st.booleans(),
    rv=st.integers(1, 10**6),
    spec_change=st.booleans(),
)
def test_status_update_matches_a_full_read(
    before: dict[str, Any], after: dict[str, Any], bind: bool, rv: int, spec_change: bool
) -> None:
    prev = pending_pod("p", cpu="250m", priority_class=None, tolerations=[])
    prev["metadata"].update(uid="u-1", resourceVersion="7", generation=1)
    prev["spec"]["priority"] = 5
    prev["status"] = before
    obj = copy.deepcopy(prev)
    obj["status"] = after
    obj["metadata"]["resourceVersion"] = str(rv)
    if bind:
        obj["spec"]["nodeName"] = "node-a"
    if spec_change:
        obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    old = Pod.from_dict(prev)
    fast = status_update(old, prev, obj)
    if spec_change:
        assert fast is None
        return
    assert fast is not None
    full = Pod.from_dict(obj)
    for f in dataclasses.fields(Pod):
        assert getattr(fast, f.name) == getattr(full, f.name), f.name


async def test_created_pods_reach_the_informer_as_a_full_read_of_the_stored_object() -> None:
    """The registry's typed view of a created pod (``Event.decoded``) stands in for the
    informer's conversion: it must equal a conversion of what was stored, admission's
    changes (priority, tolerations), the generated name and the resourceVersion included."""
    gated = pending_pod("gated", schedulingGates=[{"name": "example.com/hold"}])
    generated = pending_pod("unused", memory="64Mi", priority_class="high")
    del generated["metadata"]["name"]
    generated["metadata"]["generateName"] = "gen-"
    spread = pending_pod(
        "spread",
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "spread"}},
            }
        ],
    )
    async with kubesim.serve(state=[PRIORITY_CLASSES], time_scale=0.01) as sim:
        manifests = (gated, generated, spread, pending_pod("low", priority_class="low"))
        names = [create_pod(sim, manifest)["metadata"]["name"] for manifest in manifests]
        loop = loop_of(sim)
        await loop.wait_idle()
        for name in names:
            stored = stored_pod(sim, name)
            seen = loop.informers.pods[f"default/{name}"]
            full = Pod.from_dict(stored)
            assert seen.resource_version == stored["metadata"]["resourceVersion"]
            for f in dataclasses.fields(Pod):
                assert getattr(seen, f.name) == getattr(full, f.name), (name, f.name)


async def test_seeded_pods_get_their_class_priority_and_preempt() -> None:
    """State files skip admission: the loop resolves ``priorityClassName`` as kube would."""
    seeded = pending_pod("vip", cpu="1500m", priority_class="high")
    low = pending_pod("low", cpu="1500m", priority_class="low", node_name="node-a")
    low["spec"]["priority"] = 100
    low["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    state = [node_yaml("node-a", cpu="2"), PRIORITY_CLASSES, seeded, low]
    async with kubesim.serve(state=state, time_scale=0.01) as sim:
        assert "priority" not in stored_pod(sim, "vip")["spec"]
        await until(lambda: stored_pod(sim, "vip")["status"].get("nominatedNodeName") == "node-a")
        await until(lambda: stored_pod(sim, "vip")["spec"].get("nodeName") == "node-a")
        assert sim.get("Pod", "default", "low") is None


@pytest.mark.parametrize("admission", [True, False])
async def test_a_pod_without_priority_is_resolved_only_where_priority_admission_runs(
    admission: bool,
) -> None:
    """With the Priority admission plugin off (kube's integration servers, scheduler_perf) the
    API server leaves a pod's ``priorityClassName`` unresolved and kube-scheduler reads the
    pod as priority 0; the loop does the same, and resolves the class (as the API server
    would have) only where the plugin runs."""
    seeded = pending_pod("seeded", priority_class="high")
    disabled = set() if admission else {"Priority"}
    async with kubesim.serve(
        state=[PRIORITY_CLASSES, seeded], time_scale=0.01, disabled_admission_plugins=disabled
    ) as sim:
        create_pod(sim, pending_pod("created", priority_class="high"))
        loop = loop_of(sim)
        await loop.wait_idle()
        for name in ("seeded", "created"):
            assert loop.informers.pods[f"default/{name}"].priority == (1000 if admission else 0)


async def test_without_nodes_the_pod_backs_off_with_a_scheduler_error_then_binds() -> None:
    # time_scale 0.1: the backoff window (1-2 s) is long enough to look at the queue.
    async with kubesim.serve(time_scale=0.1) as sim:
        create_pod(sim, pending_pod("early"))
        cond = await until(lambda: condition(stored_pod(sim, "early"), "PodScheduled"))
        assert (cond["status"], cond["reason"], cond["message"]) == (
            "False",
            "SchedulerError",
            "no nodes available to schedule pods",
        )
        assert loop_of(sim).queue.where("default/early") == "Backoff"
        sim.apply(node_yaml("node-a"))
        # The error backoff (1 s × time_scale) ends and the flusher moves the pod on.
        await until(lambda: stored_pod(sim, "early")["spec"].get("nodeName") == "node-a")


@pytest.mark.kubectl
@pytest.mark.skipif(not shutil.which("kubectl"), reason="no kubectl binary installed")
async def test_kubectl_run_is_scheduled_and_the_events_tell_it(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    async with kubesim.serve(state=[node_yaml("node-a", cpu="1")], time_scale=0.01) as sim:

        async def run(*args: str) -> str:
            env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
            env.update(KUBECONFIG=str(sim.kubeconfig_path), HOME=str(tmp_path))
            proc = await asyncio.create_subprocess_exec(
                kubectl, *args, stdout=asyncio.subprocess.PIPE, env=env
            )
            out, _ = await asyncio.wait_for(proc.communicate(), 60)
            assert proc.returncode == 0, args
            return out.decode()

        await run("run", "web", "--image=nginx")
        resources = {"requests": {"cpu": "2"}}
        big = json.dumps(
            {"spec": {"containers": [{"name": "big", "image": "nginx", "resources": resources}]}}
        )
        await run("run", "big", "--image=nginx", f"--overrides={big}")
        await until(lambda: stored_pod(sim, "web")["spec"].get("nodeName") == "node-a")
        await until(lambda: events_for(sim, "big", "FailedScheduling"))
        wide = await run("get", "pods", "-o", "wide")
        assert any(line.split()[:1] == ["web"] and "node-a" in line for line in wide.splitlines())
        events = await run("get", "events")
        assert "Successfully assigned default/web to node-a" in events
        assert "FailedScheduling" in events and "0/1 nodes are available" in events


async def test_pods_left_in_the_pool_are_retried_by_the_leftover_flush() -> None:
    state = [node_yaml("node-a", cordoned=True)]
    async with kubesim.serve(state=state, time_scale=0.01, scheduler_loop=False) as sim:
        sim.add_controller(SchedulerLoop(pod_max_in_unschedulable_pods=1.0))
        create_pod(sim, pending_pod("web"))
        await until(lambda: events_for(sim, "web", "FailedScheduling"))
        assert loop_of(sim).queue.where("default/web") == "Unschedulable"
        # No cluster event can move it; the 30 s flusher (0.3 s here) retries it.
        await until(lambda: len(events_for(sim, "web", "FailedScheduling")) >= 2, timeout=3.0)


async def test_a_rejected_binding_is_a_scheduler_error_and_the_pod_is_retried() -> None:
    # time_scale 0.1: the error backoff (>= 1 s) leaves time to look before the retry.
    async with kubesim.serve(state=[node_yaml("node-a")], time_scale=0.1) as sim:
        loop = loop_of(sim)
        await loop.wait_idle()
        assert loop.api is not None
        real = loop.api.binder
        calls: list[str] = []

        class FlakyBinder:
            def bind(self, namespace: str, name: str, node_name: str, **kw: Any) -> Any:
                calls.append(name)
                if len(calls) == 1:
                    raise StatusError(500, "InternalError", "etcd is having a bad day")
                return real.bind(namespace, name, node_name, **kw)

        loop.api.binder = FlakyBinder()  # type: ignore[assignment]
        create_pod(sim, pending_pod("web"))
        cond = await until(lambda: condition(stored_pod(sim, "web"), "PodScheduled"))
        assert (cond["status"], cond["reason"]) == ("False", "SchedulerError")
        assert cond["message"] == 'running Bind plugin "DefaultBinder": etcd is having a bad day'
        (event,) = events_for(sim, "web", "FailedScheduling")
        assert event["note"] == cond["message"]
        assert loop.snapshot.node_info("node-a").pods == []  # the assumed pod was forgotten
        await until(lambda: stored_pod(sim, "web")["spec"].get("nodeName") == "node-a")
        assert calls == ["web", "web"]


async def test_every_decision_is_schedule_one_on_the_same_snapshot() -> None:
    """Affinity, anti-affinity, selectors and requests: the loop binds where ``schedule_one``
    says and reports the fit error it gives, pod after pod."""
    state = [
        node_yaml("node-a", cpu="2", disk="ssd"),
        node_yaml("node-b", cpu="4", disk="hdd"),
        node_yaml("node-c", cpu="8", disk="ssd"),
    ]
    zone_pref = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "preference": {
                        "matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]
                    },
                }
            ]
        }
    }

    def spread(app: str) -> dict[str, Any]:
        term = {
            "labelSelector": {"matchLabels": {"app": app}},
            "topologyKey": "kubernetes.io/hostname",
        }
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}

    manifests = [
        pending_pod("a", cpu="1"),
        pending_pod("b", cpu="1", nodeSelector={"disk": "ssd"}),
        pending_pod("c", cpu="500m", affinity=zone_pref),
        pending_pod("d", cpu="3", nodeSelector={"disk": "hdd"}),
        pending_pod("e", cpu="6"),
        pending_pod("f", cpu="100m"),
    ]
    for i in range(4):
        spreading = pending_pod(f"s-{i}", cpu="100m", affinity=spread("s"))
        spreading["metadata"]["labels"] = {"app": "s"}
        manifests.append(spreading)
    async with kubesim.serve(state=state, time_scale=0.01) as sim:
        loop = loop_of(sim)
        outcomes = []
        for manifest in manifests:
            await loop.wait_idle()
            objects = cluster_objects(sim)
            created = create_pod(sim, manifest)
            name = manifest["metadata"]["name"]
            decision = await until(lambda name=name: decision_for(sim, name))
            snapshot, _ = build_snapshot(objects)
            expected = schedule_one(
                Pod.from_dict(created), snapshot, start_index=decision.start_index
            )
            assert decision.node == expected.suggested_host, name
            if expected.succeeded:
                await until(
                    lambda n=name, h=decision.node: stored_pod(sim, n)["spec"].get("nodeName") == h
                )
            else:
                assert decision.message.startswith(expected.message), name
            outcomes.append(bool(decision.node))
        # The scenario exercises both outcomes: the fourth spreading pod finds no free host.
        assert outcomes[-1] is False and outcomes[0] is True


async def test_cluster_benchmark_core_binds_and_readies_every_replica() -> None:
    """bench/kubesim_cluster.py on a tiny size (its figures live in the bench, not here)."""
    bench = load_bench("kubesim_cluster")
    result = await bench.run_cluster(5, 40)
    assert result["nodes_used"] == 5
    assert 0 < result["bind_seconds"] <= result["ready_seconds"]
    assert bench.run_schedule_one(5, 40) > 0
