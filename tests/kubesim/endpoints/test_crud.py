"""Create, get, update, patch and delete through kubernetes-asyncio, with kube's answers."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.sim import Simulator
from tests.support.api import status_of


def pod(name: str, *, node: str | None = "node-1", **spec: object) -> dict[str, object]:
    body: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "t"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec},
    }
    if node:
        body["spec"]["nodeName"] = node  # type: ignore[index]
    return body


async def test_create_sets_server_fields_and_defaults(
    sim: Simulator, api: client.ApiClient
) -> None:
    v1 = client.CoreV1Api(api)
    before = sim.store.resource_version
    created = await v1.create_namespaced_pod("default", pod("p1", node=None))
    meta = created.metadata
    assert meta.namespace == "default"
    assert meta.uid and len(meta.uid) == 36
    assert int(meta.resource_version) > before
    assert meta.generation == 1
    assert meta.creation_timestamp is not None
    assert created.status.phase == "Pending"
    assert created.status.qos_class == "BestEffort"
    assert created.spec.termination_grace_period_seconds == 30
    assert created.spec.restart_policy == "Always"
    assert created.spec.containers[0].image_pull_policy == "IfNotPresent"
    # Priority admission ran: no class named, no default class -> priority 0.
    assert created.spec.priority == 0
    assert created.spec.preemption_policy == "PreemptLowerPriority"


async def test_create_decides_the_qos_class_by_value(api: client.ApiClient) -> None:
    """Equal amounts written differently are equal (they were once compared as text, and
    this pod was Burstable); the class comes from kube.qos, the agent's and the node's too."""
    v1 = client.CoreV1Api(api)
    body = pod("qos", node=None)
    body["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "1000m", "memory": "1024Mi"},
    }
    created = await v1.create_namespaced_pod("default", body)
    assert created.status.qos_class == "Guaranteed"
    body = pod("qos-2", node=None)
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "2Gi"}}
    body["spec"]["initContainers"] = [
        {"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    ]
    created = await v1.create_namespaced_pod("default", body)
    assert created.status.qos_class == "Burstable"  # an init container without limits


async def test_create_wipes_status_and_kubelet_starts_bound_pod(
    sim: Simulator, api: client.ApiClient
) -> None:
    v1 = client.CoreV1Api(api)
    body = pod("p2")
    body["status"] = {"phase": "Failed"}
    created = await v1.create_namespaced_pod("default", body)
    assert created.status.phase == "Pending"
    for _ in range(100):
        got = await v1.read_namespaced_pod("p2", "default")
        if got.status.phase == "Running":
            break
        await asyncio.sleep(0.01)
    assert got.status.phase == "Running"
    ready = {c.type: c.status for c in got.status.conditions}
    assert ready["Ready"] == "True"
    assert got.status.host_ip == "10.0.0.11"
    assert got.status.container_statuses[0].ready is True


async def test_generate_name(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    body = pod("")
    body["metadata"] = {"generateName": "gen-"}
    created = await v1.create_namespaced_pod("default", body)
    assert created.metadata.name.startswith("gen-")
    assert len(created.metadata.name) == len("gen-") + 5


async def test_already_exists(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as info:
        await v1.create_namespaced_pod("default", pod("web-0"))
    assert info.value.status == 409
    assert status_of(info.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "web-0" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "web-0", "kind": "pods"},
        "code": 409,
    }


async def test_create_in_missing_namespace_is_404(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as info:
        await v1.create_namespaced_pod("nope", pod("x"))
    assert info.value.status == 404
    st = status_of(info.value)
    assert st["message"] == 'namespaces "nope" not found'
    assert st["details"] == {"name": "nope", "kind": "namespaces"}


async def test_namespace_mismatch_is_400(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    body = pod("x")
    body["metadata"]["namespace"] = "prod"  # type: ignore[index]
    with pytest.raises(ApiException) as info:
        await v1.create_namespaced_pod("default", body)
    assert info.value.status == 400
    assert status_of(info.value)["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


async def test_get_not_found_with_group(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    with pytest.raises(ApiException) as info:
        await apps.read_namespaced_deployment("missing", "default")
    assert info.value.status == 404
    assert status_of(info.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'deployments.apps "missing" not found',
        "reason": "NotFound",
        "details": {"name": "missing", "group": "apps", "kind": "deployments"},
        "code": 404,
    }


async def test_update_optimistic_concurrency(sim: Simulator, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    current = await v1.read_namespaced_pod("web-0", "default")
    stale_rv = current.metadata.resource_version
    current.metadata.labels["tier"] = "front"
    updated = await v1.replace_namespaced_pod("web-0", "default", current)
    assert int(updated.metadata.resource_version) > int(stale_rv)
    assert updated.metadata.labels["tier"] == "front"
    current.metadata.labels["tier"] = "back"
    current.metadata.resource_version = stale_rv
    with pytest.raises(ApiException) as info:
        await v1.replace_namespaced_pod("web-0", "default", current)
    assert info.value.status == 409
    assert status_of(info.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Operation cannot be fulfilled on pods "web-0": the object has been modified;'
        " please apply your changes to the latest version and try again",
        "reason": "Conflict",
        "details": {"name": "web-0", "kind": "pods"},
        "code": 409,
    }


async def test_update_without_resource_version_is_unconditional(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    current = await v1.read_namespaced_pod("web-0", "default")
    current.metadata.resource_version = None
    current.metadata.annotations = {"a": "b"}
    updated = await v1.replace_namespaced_pod("web-0", "default", current)
    assert updated.metadata.annotations == {"a": "b"}


async def test_noop_update_keeps_resource_version(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    current = await v1.read_namespaced_pod("web-0", "default")
    again = await v1.replace_namespaced_pod("web-0", "default", current)
    assert again.metadata.resource_version == current.metadata.resource_version


async def test_update_name_mismatch_is_400(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    current = await v1.read_namespaced_pod("web-0", "default")
    with pytest.raises(ApiException) as info:
        await v1.replace_namespaced_pod("web-1", "default", current)
    assert info.value.status == 400
    assert status_of(info.value)["message"] == (
        "the name of the object (web-0) does not match the name on the URL (web-1)"
    )


async def test_main_resource_ignores_status_and_status_ignores_spec(
    api: client.ApiClient,
) -> None:
    v1 = client.CoreV1Api(api)
    current = await v1.read_namespaced_pod("web-0", "default")
    gen = current.metadata.generation
    current.status.phase = "Failed"
    current.spec.active_deadline_seconds = 100
    updated = await v1.replace_namespaced_pod("web-0", "default", current)
    assert updated.status.phase == "Running"
    assert updated.spec.active_deadline_seconds == 100
    assert updated.metadata.generation == gen + 1
    updated.status.phase = "Succeeded"
    updated.spec.active_deadline_seconds = 200
    st = await v1.replace_namespaced_pod_status("web-0", "default", updated)
    assert st.status.phase == "Succeeded"
    assert st.spec.active_deadline_seconds == 100
    assert st.metadata.generation == gen + 1  # status updates never bump generation


async def test_patch_strategic_merge_cordon(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    node = await v1.patch_node("node-1", {"spec": {"unschedulable": True}})
    assert node.spec.unschedulable is True
    node = await v1.patch_node("node-1", {"spec": {"unschedulable": None}})
    assert not node.spec.unschedulable


async def test_patch_merge_and_json_patch(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    merged = await v1.patch_namespaced_pod(
        "web-0",
        "default",
        {"metadata": {"labels": {"app": None, "new": "yes"}}},
        _content_type="application/merge-patch+json",
    )
    assert merged.metadata.labels == {"new": "yes"}
    patched = await v1.patch_namespaced_pod(
        "web-0",
        "default",
        [
            {"op": "test", "path": "/metadata/labels/new", "value": "yes"},
            {"op": "add", "path": "/metadata/labels/x", "value": "1"},
            {"op": "remove", "path": "/metadata/labels/new"},
        ],
        _content_type="application/json-patch+json",
    )
    assert patched.metadata.labels == {"x": "1"}
    with pytest.raises(ApiException) as info:
        await v1.patch_namespaced_pod(
            "web-0",
            "default",
            [{"op": "test", "path": "/metadata/labels/x", "value": "2"}],
            _content_type="application/json-patch+json",
        )
    assert info.value.status == 422
    st = status_of(info.value)
    assert st["reason"] == "Invalid"
    assert st["message"] == "the server rejected our request due to an error in our request"


async def test_patch_strategic_merges_containers_by_name(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_pod(
        "default",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "two"},
            "spec": {
                "containers": [
                    {"name": "a", "image": "a:1"},
                    {"name": "b", "image": "b:1"},
                ]
            },
        },
    )
    out = await v1.patch_namespaced_pod(
        "two", "default", {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}
    )
    assert [(c.name, c.image) for c in out.spec.containers] == [("a", "a:1"), ("b", "b:2")]


async def test_patch_status_subresource_conditions(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    out = await v1.patch_namespaced_pod_status(
        "web-0",
        "default",
        {
            "status": {
                "conditions": [
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "EvictionByEvictionAPI",
                        "message": "Eviction API: evicting",
                    }
                ]
            }
        },
    )
    types = [c.type for c in out.status.conditions]
    assert types == ["Ready", "DisruptionTarget"]


async def test_delete_preconditions(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    current = await v1.read_namespaced_pod("web-0", "default")
    with pytest.raises(ApiException) as info:
        await v1.delete_namespaced_pod(
            "web-0", "default", body=client.V1DeleteOptions(preconditions={"uid": "other"})
        )
    assert info.value.status == 409
    assert status_of(info.value)["message"] == (
        'Operation cannot be fulfilled on pods "web-0": Precondition failed: UID in'
        f" precondition: other, UID in object meta: {current.metadata.uid}"
    )
    with pytest.raises(ApiException) as info:
        await v1.delete_namespaced_pod(
            "web-0",
            "default",
            body=client.V1DeleteOptions(preconditions={"resourceVersion": "1"}),
        )
    assert info.value.status == 409
    assert (
        "Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in"
        in (status_of(info.value)["message"])
    )


async def test_delete_dry_run_changes_nothing(sim: Simulator, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    before = sim.get("Pod", "default", "web-0")
    rv = sim.store.resource_version
    await v1.delete_namespaced_pod("web-0", "default", dry_run="All", grace_period_seconds=0)
    assert sim.get("Pod", "default", "web-0") == before
    # no write to the pod at all (the kubelet's own writes to other objects go on meanwhile)
    assert [e for e in sim.store.events_since("pods", rv) if e.key == ("default", "web-0")] == []


async def test_delete_non_pod_answers_success_status(api: client.ApiClient) -> None:
    policy = client.PolicyV1Api(api)
    await policy.create_namespaced_pod_disruption_budget(
        "default",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    got = await policy.read_namespaced_pod_disruption_budget("pdb", "default")
    assert got.status.disruptions_allowed == 0
    assert got.metadata.generation == 1
    result = await policy.delete_namespaced_pod_disruption_budget(
        "pdb", "default", _preload_content=False
    )
    body = await result.json()
    assert body["status"] == "Success"
    assert body["details"]["name"] == "pdb"
    assert body["details"]["group"] == "policy"
    assert body["details"]["kind"] == "poddisruptionbudgets"
    assert body["details"]["uid"] == got.metadata.uid


async def test_pod_spec_is_immutable_except_images_deadline_tolerations(
    api: client.ApiClient,
) -> None:
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as info:
        await v1.patch_namespaced_pod("web-0", "default", {"spec": {"nodeName": "node-2"}})
    assert info.value.status == 422
    st = status_of(info.value)
    assert st["message"].startswith(
        'Pod "web-0" is invalid: spec: Forbidden: pod updates may not change fields other than'
        " `spec.containers[*].image`,`spec.initContainers[*].image`,"
        "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing"
        " tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was"
        " previously negative)\n"
    )
    assert '-  nodeName: "node-1"' in st["message"]
    assert st["details"]["causes"][0]["field"] == "spec"
    assert st["details"]["causes"][0]["reason"] == "FieldValueForbidden"
    out = await v1.patch_namespaced_pod(
        "web-0",
        "default",
        {
            "spec": {
                "containers": [{"name": "c", "image": "nginx:2"}],
                "tolerations": [{"key": "k", "operator": "Exists"}],
            }
        },
    )
    assert out.spec.containers[0].image == "nginx:2"
    with pytest.raises(ApiException) as info:
        await v1.patch_namespaced_pod(
            "web-0",
            "default",
            {"spec": {"tolerations": None}},
            _content_type="application/merge-patch+json",
        )
    assert info.value.status == 422


async def test_simulator_update_writes_like_an_api_update() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}
    async with Simulator(state=[node]) as sim:
        before = sim.get("Node", None, "node-1")
        assert before is not None

        def cordon(obj: dict[str, object]) -> None:
            obj["spec"] = {"unschedulable": True}

        after = sim.update("Node", None, "node-1", cordon)
        assert after is not None and after["spec"]["unschedulable"] is True
        assert int(after["metadata"]["resourceVersion"]) > int(
            before["metadata"]["resourceVersion"]
        )
        stored = sim.get("Node", None, "node-1")
        assert stored is not None and stored["spec"]["unschedulable"] is True
        # a change that answers False writes nothing; a missing object is None
        untouched = sim.update("Node", None, "node-1", lambda obj: obj.clear() or False)
        assert untouched == stored
        assert sim.get("Node", None, "node-1") == stored
        assert sim.update("Node", None, "absent", cordon) is None
