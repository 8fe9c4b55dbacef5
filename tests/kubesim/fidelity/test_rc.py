"""ReplicationControllers: served as core/v1 with status, scale and kubectl's table columns."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

import kubesim
from kubesim.core.tables import TABLE_MEDIA
from kubesim.sim import Simulator
from tests.support.api import raw, status_of

RCS = "/api/v1/namespaces/default/replicationcontrollers"


def rc(name: str = "legacy", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name, "tier": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
            }
        },
    }
    body["spec"].update(spec)
    return body


async def test_create_applies_defaults(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    created = await v1.create_namespaced_replication_controller("default", rc())
    assert created.spec.replicas == 1
    assert created.spec.selector == {"app": "legacy", "tier": "web"}
    assert created.metadata.labels == {"app": "legacy", "tier": "web"}
    assert created.metadata.generation == 1
    assert created.status.replicas == 0
    tmpl = created.spec.template.spec
    assert tmpl.restart_policy == "Always" and tmpl.dns_policy == "ClusterFirst"
    listed = await v1.list_namespaced_replication_controller(
        "default", field_selector="status.replicas=0"
    )
    assert [r.metadata.name for r in listed.items] == ["legacy"]


async def test_validation(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as info:
        await v1.create_namespaced_replication_controller(
            "default", rc(replicas=-1, selector={"app": "other"})
        )
    assert info.value.status == 422
    status = status_of(info.value)
    assert status["message"] == (
        'ReplicationController "legacy" is invalid: [spec.replicas: Invalid value: -1: must be'
        " greater than or equal to 0, spec.template.metadata.labels: Invalid value:"
        ' map[string]string{"app":"legacy", "tier":"web"}: selector does not match template'
        " labels]"
    )


async def test_scale_subresource(api: client.ApiClient, sim: Simulator) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_replication_controller("default", rc(replicas=2))
    scale = await v1.read_namespaced_replication_controller_scale("legacy", "default")
    assert scale.spec.replicas == 2
    assert scale.status.replicas == 0
    assert scale.status.selector == "app=legacy,tier=web"
    patched = await v1.patch_namespaced_replication_controller_scale(
        "legacy", "default", {"spec": {"replicas": 5}}
    )
    assert patched.spec.replicas == 5
    stored = sim.get("ReplicationController", "default", "legacy")
    assert stored is not None
    assert stored["spec"]["replicas"] == 5 and stored["metadata"]["generation"] == 2
    # A stale resourceVersion in the Scale is a precondition failure.
    scale.spec.replicas = 3
    with pytest.raises(ApiException) as info:
        await v1.replace_namespaced_replication_controller_scale("legacy", "default", scale)
    assert info.value.status == 409
    assert status_of(info.value)["message"] == (
        'Operation cannot be fulfilled on replicationcontrollers "legacy": the object has been'
        " modified; please apply your changes to the latest version and try again"
    )
    fresh = await v1.read_namespaced_replication_controller_scale("legacy", "default")
    fresh.spec.replicas = -2
    with pytest.raises(ApiException) as info:
        await v1.replace_namespaced_replication_controller_scale("legacy", "default", fresh)
    assert info.value.status == 422
    assert status_of(info.value)["message"] == (
        'Scale.autoscaling "legacy" is invalid: spec.replicas: Invalid value: -2: must be greater'
        " than or equal to 0"
    )
    fresh.spec.replicas = 0
    done = await v1.replace_namespaced_replication_controller_scale("legacy", "default", fresh)
    assert done.spec.replicas == 0


async def test_table_columns(sim: Simulator) -> None:
    code, _, _ = await raw(sim, "POST", RCS, body=json.dumps(rc()))
    assert code == 201
    code, _, table = await raw(sim, "GET", RCS, accept=TABLE_MEDIA)
    assert code == 200
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == [
        "Name",
        "Desired",
        "Current",
        "Ready",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["legacy", 1, 0, 0]
    assert cells[5:] == ["c", "nginx:1.25", "app=legacy,tier=web"]


async def test_state_file_with_rc_owned_pods() -> None:
    state = [
        rc(replicas=1) | {"metadata": {"name": "legacy", "uid": "rc-uid"}},
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "legacy-abcde",
                "labels": {"app": "legacy", "tier": "web"},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ReplicationController",
                        "name": "legacy",
                        "uid": "rc-uid",
                        "controller": True,
                    }
                ],
            },
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx:1.25"}]},
            "status": {"phase": "Running"},
        },
    ]
    async with kubesim.serve(state=state, time_scale=0.01, controllers=[]) as sim:
        owner = sim.get("ReplicationController", "default", "legacy")
        assert owner is not None and owner["metadata"]["uid"] == "rc-uid"
        async with sim.api_client() as api:
            pods = await client.CoreV1Api(api).list_namespaced_pod(
                "default", label_selector="app=legacy"
            )
        ref = pods.items[0].metadata.owner_references[0]
        assert (ref.kind, ref.uid) == ("ReplicationController", "rc-uid")
