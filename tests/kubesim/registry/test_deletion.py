"""Graceful pod deletion by the built-in kubelet, finalizers, and namespace termination."""

from __future__ import annotations

import asyncio
import time

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

import kubesim
from kube.times import parse_time
from kubesim.sim import Simulator
from tests.support.api import status_of
from tests.support.wait import until


async def _gone(sim: Simulator, kind: str, ns: str, name: str, timeout: float = 5.0) -> float:
    start = time.monotonic()
    await until(
        lambda: sim.get(kind, ns, name) is None, timeout=timeout, what=f"{kind} {ns}/{name} gone"
    )
    return time.monotonic() - start


async def test_graceful_delete_sets_deletion_timestamp_then_kubelet_removes(
    sim: Simulator, api: client.ApiClient
) -> None:
    v1 = client.CoreV1Api(api)
    before = time.time()
    result = await v1.delete_namespaced_pod("web-1", "default")  # grace 5 s from the pod spec
    assert result.metadata.deletion_grace_period_seconds == 5
    deadline = parse_time(result.metadata.deletion_timestamp)
    assert before + 4 <= deadline <= time.time() + 6
    # Still there, Terminating, until 5 s x time_scale (0.01) have passed.
    assert sim.get("Pod", "default", "web-1") is not None
    waited = await _gone(sim, "Pod", "default", "web-1")
    assert waited < 2.0
    with pytest.raises(ApiException) as info:
        await v1.read_namespaced_pod("web-1", "default")
    assert info.value.status == 404


async def test_default_grace_is_30_seconds() -> None:
    state = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {nodeName: n, containers: [{name: c, image: x}]}\nstatus: {phase: Running}\n"
    )
    async with kubesim.serve(state=state, time_scale=0.001) as sim, sim.api_client() as api:
        v1 = client.CoreV1Api(api)
        result = await v1.delete_namespaced_pod("p", "default")
        assert result.metadata.deletion_grace_period_seconds == 30
        await _gone(sim, "Pod", "default", "p")


async def test_watch_sees_modified_then_deleted(sim: Simulator, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    rv = (await v1.list_namespaced_pod("default")).metadata.resource_version
    await v1.delete_namespaced_pod("web-1", "default")
    await _gone(sim, "Pod", "default", "web-1")
    types = [
        (rec.type, rec.key[1], bool(rec.obj["metadata"].get("deletionTimestamp")))
        for rec in sim.store.events_since("pods", int(rv))
    ]
    assert types == [("MODIFIED", "web-1", True), ("DELETED", "web-1", True)]


async def test_unbound_and_zero_grace_pods_go_at_once(
    sim: Simulator, api: client.ApiClient
) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_pod(
        "default",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "unbound"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )
    await v1.delete_namespaced_pod("unbound", "default")
    assert sim.get("Pod", "default", "unbound") is None
    await v1.delete_namespaced_pod("web-0", "default", grace_period_seconds=0)
    assert sim.get("Pod", "default", "web-0") is None


async def test_second_delete_may_only_shorten(sim: Simulator, api: client.ApiClient) -> None:
    kubelet = sim.kubelet
    assert kubelet is not None
    kubelet.set_deletion_override("prod", "db-0", None)  # stays Terminating
    v1 = client.CoreV1Api(api)
    first = await v1.delete_namespaced_pod("db-0", "prod", grace_period_seconds=100)
    again = await v1.delete_namespaced_pod("db-0", "prod", grace_period_seconds=200)
    assert again.metadata.deletion_grace_period_seconds == 100
    assert again.metadata.resource_version == first.metadata.resource_version
    shorter = await v1.delete_namespaced_pod("db-0", "prod", grace_period_seconds=10)
    assert shorter.metadata.deletion_grace_period_seconds == 10
    assert parse_time(shorter.metadata.deletion_timestamp) == pytest.approx(
        parse_time(first.metadata.deletion_timestamp) - 90, abs=1
    )
    await asyncio.sleep(0.3)
    assert sim.get("Pod", "prod", "db-0") is not None  # the override holds it
    kubelet.set_deletion_override("prod", "db-0", 0.0)
    await _gone(sim, "Pod", "prod", "db-0")


async def test_finalizers_hold_deletion(sim: Simulator, api: client.ApiClient) -> None:
    policy = client.PolicyV1Api(api)
    await policy.create_namespaced_pod_disruption_budget(
        "default",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
            "spec": {"maxUnavailable": 1},
        },
    )
    await policy.delete_namespaced_pod_disruption_budget("held", "default")
    held = sim.get("PodDisruptionBudget", "default", "held")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    await policy.patch_namespaced_pod_disruption_budget(
        "held",
        "default",
        {"metadata": {"finalizers": None}},
        _content_type="application/merge-patch+json",
    )
    assert sim.get("PodDisruptionBudget", "default", "held") is None


async def test_namespace_deletion(sim: Simulator, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    resp = await v1.delete_namespace("prod", _preload_content=False)
    ns = await resp.json()
    assert ns["kind"] == "Namespace"
    assert ns["status"]["phase"] == "Terminating"
    assert ns["metadata"]["deletionTimestamp"]
    with pytest.raises(ApiException) as info:
        await v1.create_namespaced_pod(
            "prod",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "late"},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        )
    assert info.value.status == 403
    assert status_of(info.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "late" is forbidden: unable to create new content in namespace prod'
        " because it is being terminated",
        "reason": "Forbidden",
        "details": {
            "name": "late",
            "kind": "pods",
            "causes": [
                {
                    "reason": "NamespaceTerminating",
                    "message": "namespace prod is being terminated",
                    "field": "metadata.namespace",
                }
            ],
        },
        "code": 403,
    }
    await _gone(sim, "Pod", "prod", "db-0")
    await _gone(sim, "Namespace", "", "prod")


async def test_default_namespace_cannot_be_deleted(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as info:
        await v1.delete_namespace("default")
    assert info.value.status == 403
    assert status_of(info.value)["message"] == (
        'namespaces "default" is forbidden: this namespace may not be deleted'
    )


async def test_delete_collection(sim: Simulator, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    await v1.delete_collection_namespaced_pod(
        "default", label_selector="app=web", grace_period_seconds=0
    )
    assert sim.list_objects("Pod", "default") == []
    assert sim.get("Pod", "prod", "db-0") is not None
