"""ReplicaSet, ReplicationController and Deployment controllers, and the garbage collector."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

import kubesim
from kubesim.controllers import check_controller_names
from kubesim.controllers.deployment import pod_template_hash
from kubesim.core.names import safe_encode
from kubesim.sim import Simulator
from tests.support.api import raw
from tests.support.living import is_ready, live, pods
from tests.support.wait import until

NODES = """
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
"""


def template(app: str, **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "nodeName": "node-1",
            "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "c", "image": "nginx:1.27"}],
            **extra,
        },
    }


def replicaset(name: str, replicas: int, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default", **meta},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template(name),
        },
    }


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template(name),
        },
    }


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=NODES, time_scale=0.01) as s:
        yield s


def rs_status(sim: Simulator, name: str) -> dict[str, Any]:
    obj = sim.get("ReplicaSet", "default", name)
    assert obj is not None
    status: dict[str, Any] = obj.get("status") or {}
    return status


async def test_replicaset_creates_owned_pods_with_generated_names(sim: Simulator) -> None:
    sim.apply(replicaset("web", 3))
    rs = sim.get("ReplicaSet", "default", "web")
    assert rs is not None
    made = await until(lambda: len(live(pods(sim, app="web"))) == 3 and pods(sim, app="web"))
    for pod in made:
        assert re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]{5}", pod["metadata"]["name"])
        assert pod["metadata"]["generateName"] == "web-"
        assert pod["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": rs["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    status = await until(
        lambda: rs_status(sim, "web").get("availableReplicas") == 3 and rs_status(sim, "web"),
        what="3 available replicas",
    )
    assert status == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "observedGeneration": 1,
    }


async def test_replicaset_scales_down_and_up_and_observes_generation(sim: Simulator) -> None:
    sim.apply(replicaset("web", 4))
    await until(lambda: rs_status(sim, "web").get("readyReplicas") == 4)
    rt = sim.scheme.for_kind("apps/v1", "ReplicaSet")
    assert rt is not None
    current = sim.get("ReplicaSet", "default", "web")
    assert current is not None
    current["spec"]["replicas"] = 1
    sim.registry.update(rt, "default", "web", current)
    status = await until(
        lambda: rs_status(sim, "web").get("replicas") == 1 and rs_status(sim, "web")
    )
    assert status["observedGeneration"] == 2
    assert len(live(pods(sim, app="web"))) == 1
    # The three deleted pods are terminating (grace 30 s × 0.01), then gone.
    await until(lambda: len(pods(sim, app="web")) == 1, what="terminated pods removed")
    current = sim.get("ReplicaSet", "default", "web")
    assert current is not None
    current["spec"]["replicas"] = 2
    sim.registry.update(rt, "default", "web", current)
    await until(lambda: rs_status(sim, "web").get("readyReplicas") == 2)
    assert rs_status(sim, "web")["observedGeneration"] == 3


async def test_deleted_and_evicted_pods_are_replaced(sim: Simulator) -> None:
    sim.apply(replicaset("web", 2))
    first = await until(lambda: len(live(pods(sim, app="web"))) == 2 and pods(sim, app="web"))
    async with sim.api_client() as api:
        v1 = client.CoreV1Api(api)
        await v1.delete_namespaced_pod(first[0]["metadata"]["name"], "default")
        await v1.create_namespaced_pod_eviction(
            first[1]["metadata"]["name"],
            "default",
            client.V1Eviction(
                metadata=client.V1ObjectMeta(name=first[1]["metadata"]["name"], namespace="default")
            ),
        )
    old = {p["metadata"]["uid"] for p in first}
    replaced = await until(
        lambda: (
            [p for p in live(pods(sim, app="web")) if p["metadata"]["uid"] not in old]
            if len(live(pods(sim, app="web"))) == 2
            else None
        ),
        what="two replacements",
    )
    assert len(replaced) == 2
    await until(lambda: all(is_ready(p) for p in live(pods(sim, app="web"))))


async def test_orphans_are_adopted_and_mismatching_pods_released(sim: Simulator) -> None:
    sim.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "stray", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
        }
    )
    sim.apply(replicaset("web", 2))
    await until(lambda: len(live(pods(sim, app="web"))) == 2)
    stray = sim.get("Pod", "default", "stray")
    assert stray is not None
    assert stray["metadata"]["ownerReferences"][0]["name"] == "web"
    # Relabelled out of the selector, the pod is released and replaced.
    rt = sim.scheme.for_kind("v1", "Pod")
    assert rt is not None
    stray["metadata"]["labels"] = {"app": "other"}
    sim.registry.update(rt, "default", "stray", stray)
    await until(lambda: len(live(pods(sim, app="web"))) == 2)
    released = await until(
        lambda: (
            (p := sim.get("Pod", "default", "stray")) and not p["metadata"].get("ownerReferences")
        )
    )
    assert released


async def test_replication_controller_uses_its_map_selector(sim: Simulator) -> None:
    sim.apply(
        {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": "legacy", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"app": "legacy"}, "template": template("legacy")},
        }
    )
    made = await until(lambda: len(live(pods(sim, app="legacy"))) == 2 and pods(sim))
    refs = [p["metadata"]["ownerReferences"][0] for p in made]
    assert {(r["kind"], r["apiVersion"], r["controller"]) for r in refs} == {
        ("ReplicationController", "v1", True)
    }
    rc = await until(
        lambda: (
            (o := sim.get("ReplicationController", "default", "legacy"))
            and o["status"].get("readyReplicas") == 2
            and o
        )
    )
    assert rc["status"]["replicas"] == 2


def test_pod_template_hash_is_stable_and_safe() -> None:
    tmpl = template("web")
    assert pod_template_hash(tmpl) == pod_template_hash(dict(reversed(list(tmpl.items()))))
    assert pod_template_hash(tmpl) != pod_template_hash(tmpl, 1)
    assert set(pod_template_hash(tmpl)) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert safe_encode("0123456789") == "456789bcdf"  # rune % 27, as upstream


async def test_deployment_owns_one_replicaset_per_template(sim: Simulator) -> None:
    sim.apply(deployment("web", 3))
    dep = sim.get("Deployment", "default", "web")
    assert dep is not None
    rss = await until(lambda: sim.list_objects("ReplicaSet", "default"))
    assert len(rss) == 1
    rs = rss[0]
    hash_ = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{hash_}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": hash_}
    assert rs["metadata"]["ownerReferences"][0]["uid"] == dep["metadata"]["uid"]
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    made = await until(lambda: len(live(pods(sim, app="web"))) == 3 and pods(sim))
    assert all(p["metadata"]["name"].startswith(f"web-{hash_}-") for p in made)
    status = await until(
        lambda: (
            (d := sim.get("Deployment", "default", "web"))
            and d["status"].get("availableReplicas") == 3
            and d["status"]
        )
    )
    assert status["replicas"] == status["updatedReplicas"] == status["readyReplicas"] == 3
    assert status["observedGeneration"] == 1
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert conditions["Progressing"]["message"] == (
        f'ReplicaSet "web-{hash_}" has successfully progressed.'
    )
    # A template change makes a second ReplicaSet; the first goes to 0.
    rt = sim.scheme.for_kind("apps/v1", "Deployment")
    assert rt is not None
    current = sim.get("Deployment", "default", "web")
    assert current is not None
    current["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    sim.registry.update(rt, "default", "web", current)
    await until(lambda: len(sim.list_objects("ReplicaSet", "default")) == 2)

    def revisions() -> dict[str, dict[str, Any]] | None:
        rs_list = sim.list_objects("ReplicaSet", "default")
        out = {
            r["metadata"].get("annotations", {}).get("deployment.kubernetes.io/revision", ""): r
            for r in rs_list
        }
        return out if set(out) == {"1", "2"} else None

    by_rev = await until(revisions, what="revisions 1 and 2")
    assert by_rev["1"]["spec"]["replicas"] == 0
    assert by_rev["2"]["spec"]["replicas"] == 3


async def test_scale_subresource_scales_a_deployment(sim: Simulator) -> None:
    sim.apply(deployment("web", 1))
    await until(lambda: len(live(pods(sim, app="web"))) == 1)
    code, _, scale = await raw(sim, "GET", "/apis/apps/v1/namespaces/default/deployments/web/scale")
    assert code == 200
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 1}
    assert scale["status"]["selector"] == "app=web"
    code, _, scaled = await raw(
        sim,
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        body='{"spec":{"replicas":4}}',
        content_type="application/merge-patch+json",
    )
    assert code == 200 and scaled["spec"]["replicas"] == 4
    await until(lambda: len(live(pods(sim, app="web"))) == 4, what="4 pods")
    code, _, bad = await raw(
        sim,
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        body='{"spec":{"replicas":-1}}',
        content_type="application/merge-patch+json",
    )
    assert code == 422 and bad["details"]["causes"][0]["field"] == "spec.replicas"
    stale = dict(scaled, metadata={**scaled["metadata"], "resourceVersion": "1"})
    stale["spec"] = {"replicas": 2}
    import json

    code, _, conflict = await raw(
        sim,
        "PUT",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        body=json.dumps(stale),
    )
    assert code == 409 and conflict["reason"] == "Conflict"


async def test_deleting_a_deployment_collects_replicasets_and_pods(sim: Simulator) -> None:
    sim.apply(deployment("web", 2))
    await until(lambda: len(live(pods(sim, app="web"))) == 2)
    async with sim.api_client() as api:
        await client.AppsV1Api(api).delete_namespaced_deployment("web", "default")
    await until(lambda: not sim.list_objects("ReplicaSet", "default"), what="RS collected")
    await until(lambda: not pods(sim, app="web"), what="pods collected")


async def test_dependent_with_another_live_owner_only_loses_the_dangling_reference(
    sim: Simulator,
) -> None:
    sim.apply([replicaset("a", 0), replicaset("b", 0)])
    a = sim.get("ReplicaSet", "default", "a")
    b = sim.get("ReplicaSet", "default", "b")
    assert a is not None and b is not None
    refs = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": o["metadata"]["name"],
         "uid": o["metadata"]["uid"]}
        for o in (a, b)
    ]  # fmt: skip
    sim.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "shared", "namespace": "default", "ownerReferences": refs},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "x"}]},
        }
    )
    async with sim.api_client() as api:
        await client.AppsV1Api(api).delete_namespaced_replica_set("a", "default")
    pod = await until(
        lambda: (
            (p := sim.get("Pod", "default", "shared"))
            and len(p["metadata"].get("ownerReferences") or []) == 1
            and p
        )
    )
    assert pod["metadata"]["ownerReferences"][0]["name"] == "b"
    assert not pod["metadata"].get("deletionTimestamp")


async def test_foreground_and_orphan_finalizers_are_honoured(sim: Simulator) -> None:
    sim.apply(replicaset("fg", 1, finalizers=["foregroundDeletion"]))
    await until(lambda: len(live(pods(sim, app="fg"))) == 1)
    rt = sim.scheme.for_kind("apps/v1", "ReplicaSet")
    assert rt is not None
    from kubesim.registry.generic import DeleteOptions

    sim.registry.delete(rt, "default", "fg", DeleteOptions())
    # Held by the finalizer until its pod (blockOwnerDeletion) is gone.
    assert sim.get("ReplicaSet", "default", "fg") is not None
    await until(lambda: not pods(sim, app="fg"), what="foreground dependents gone")
    await until(lambda: sim.get("ReplicaSet", "default", "fg") is None, what="owner gone")

    sim.apply(replicaset("keep", 1, finalizers=["orphan"]))
    await until(lambda: len(live(pods(sim, app="keep"))) == 1)
    sim.registry.delete(rt, "default", "keep", DeleteOptions())
    await until(lambda: sim.get("ReplicaSet", "default", "keep") is None)
    left = pods(sim, app="keep")
    assert len(left) == 1 and not left[0]["metadata"].get("ownerReferences")


async def test_disabled_controllers_leave_the_world_frozen() -> None:
    state = [NODES, replicaset("web", 3)]
    async with kubesim.serve(
        state=state, time_scale=0.01, disabled_controllers={"replicaset"}
    ) as sim:
        await asyncio.sleep(0.1)
        assert pods(sim, app="web") == []
        assert not {c.name for c in sim.controllers} & {"replicaset"}
    with pytest.raises(ValueError, match=r"unknown controller.*replicaset-typo"):
        check_controller_names(["replicaset-typo"])


async def test_reaction_delay_postpones_the_sync() -> None:
    async with kubesim.serve(state=NODES, time_scale=0.01, reaction_delay=20.0) as sim:
        sim.apply(replicaset("web", 1))
        await asyncio.sleep(0.05)
        assert pods(sim, app="web") == []  # reacts only after 20 s × 0.01
        await until(lambda: len(pods(sim, app="web")) == 1, timeout=2.0)


async def test_generated_name_collision_is_retried(sim: Simulator) -> None:
    sim.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-bbbbb", "namespace": "default", "labels": {"x": "y"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
        }
    )
    chars = iter("bbbbb" + "ccccc")
    real = sim.registry.rng.choice
    sim.registry.rng.choice = lambda seq: next(chars, None) or real(seq)  # type: ignore[method-assign,assignment]
    sim.apply(replicaset("web", 1))
    made = await until(lambda: live(pods(sim, app="web")))
    assert [p["metadata"]["name"] for p in made] == ["web-ccccc"]


def events_of(sim: Simulator, kind: str, name: str) -> list[tuple[str, str, str]]:
    return [
        (e["reason"], e["message"], e["source"]["component"])
        for e in sim.list_objects("Event", "default")
        if e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"] == name
    ]


async def test_controllers_and_kubelet_record_events(sim: Simulator) -> None:
    sim.apply(deployment("web", 2))
    await until(lambda: len(live(pods(sim, app="web"))) == 2)
    rs_name = sim.list_objects("ReplicaSet", "default")[0]["metadata"]["name"]
    scaled = await until(lambda: events_of(sim, "Deployment", "web"))
    assert scaled == [
        (
            "ScalingReplicaSet",
            f"Scaled up replica set {rs_name} from 0 to 2",
            "deployment-controller",
        )
    ]
    created = await until(lambda: len(events_of(sim, "ReplicaSet", rs_name)) == 2 and 1)
    assert created
    pod_names = sorted(p["metadata"]["name"] for p in pods(sim, app="web"))
    assert sorted(m for _, m, _ in events_of(sim, "ReplicaSet", rs_name)) == [
        f"Created pod: {n}" for n in pod_names
    ]
    kubelet = await until(lambda: events_of(sim, "Pod", pod_names[0]))
    assert [r for r, _, c in kubelet if c == "kubelet"] == ["Pulled", "Created", "Started"]
    started = next(
        e
        for e in sim.list_objects("Event", "default")
        if e["reason"] == "Started" and e["involvedObject"]["name"] == pod_names[0]
    )
    assert started["involvedObject"]["fieldPath"] == "spec.containers{c}"
    assert started["source"]["host"] == "node-1"
    assert started["message"] == "Started container c"
    assert started["count"] == 1 and started["firstTimestamp"] == started["lastTimestamp"]


async def test_delete_options_choose_foreground_orphan_or_background(sim: Simulator) -> None:
    sim.apply([deployment("fg", 1), deployment("orphan", 1)])
    await until(lambda: len(live(pods(sim, app="fg"))) == 1)
    await until(lambda: len(live(pods(sim, app="orphan"))) == 1)
    async with sim.api_client() as api:
        apps = client.AppsV1Api(api)
        await apps.delete_namespaced_deployment(
            "fg", "default", body=client.V1DeleteOptions(propagation_policy="Foreground")
        )
        # Foreground: the Deployment waits, marked, until its ReplicaSet (and pods) are gone.
        held = sim.get("Deployment", "default", "fg")
        assert held is not None and held["metadata"]["finalizers"] == ["foregroundDeletion"]
        assert held["metadata"]["deletionTimestamp"]
        await until(lambda: sim.get("Deployment", "default", "fg") is None, timeout=5.0)
        assert not pods(sim, app="fg")
        await apps.delete_namespaced_deployment(
            "orphan", "default", body=client.V1DeleteOptions(propagation_policy="Orphan")
        )
    await until(lambda: sim.get("Deployment", "default", "orphan") is None)
    await asyncio.sleep(0.1)
    rss = [
        r
        for r in sim.list_objects("ReplicaSet", "default")
        if r["metadata"]["name"].startswith("orphan-")
    ]
    assert len(rss) == 1 and not rss[0]["metadata"].get("ownerReferences")
    assert len(live(pods(sim, app="orphan"))) == 1
