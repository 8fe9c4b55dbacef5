"""Server-Side Apply from Python clients no one here wrote, against a served kubesim:
lightkube's ``Client.apply`` and the official client's ``DynamicClient.server_side_apply``
(both synchronous, so they run in a thread beside the server's event loop). Each client is
imported in its test: together they cost every pytest worker a second to import at collection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import kubesim
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.kubeconfigs import write_kubeconfig


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Simulator, Path]]:
    async with kubesim.serve(time_scale=0.01, disabled_controllers=FROZEN) as sim:
        yield (
            sim,
            write_kubeconfig(tmp_path / "kubeconfig", sim.url, {"admin": {}}, current="admin"),
        )


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }


def managers(meta: Any) -> dict[str, Any]:
    return {e.manager: e for e in meta.managedFields}


async def test_lightkube_apply_creates_updates_and_forces(served: tuple[Simulator, Path]) -> None:
    from lightkube import ApiError, Client
    from lightkube.config.kubeconfig import KubeConfig
    from lightkube.resources.apps_v1 import Deployment

    sim, kubeconfig = served

    def run() -> None:
        client = Client(KubeConfig.from_file(kubeconfig), field_manager="lk")
        created = client.apply(Deployment.from_dict(deployment(2)))
        assert created.spec.replicas == 2
        assert created.metadata.managedFields[0].manager == "lk"
        assert created.metadata.managedFields[0].operation == "Apply"
        updated = client.apply(Deployment.from_dict(deployment(3)))
        assert updated.spec.replicas == 3
        assert updated.metadata.resourceVersion != created.metadata.resourceVersion
        with pytest.raises(ApiError) as err:
            client.apply(Deployment.from_dict(deployment(5)), field_manager="other")
        assert err.value.status.code == 409
        assert err.value.status.message == (
            'Apply failed with 1 conflict: conflict with "lk": .spec.replicas'
        )
        forced = client.apply(
            Deployment.from_dict(deployment(5)), field_manager="other", force=True
        )
        assert forced.spec.replicas == 5
        # the replicas moved; the rest, applied with the same values, is shared
        owners = managers(forced.metadata)
        assert "f:replicas" in owners["other"].fieldsV1["f:spec"]
        assert "f:replicas" not in owners["lk"].fieldsV1["f:spec"]
        assert (
            owners["lk"].fieldsV1["f:spec"]["f:template"]
            == (owners["other"].fieldsV1["f:spec"]["f:template"])
        )

    await asyncio.to_thread(run)
    assert sim.registry.store.objects("deployments")[("default", "web")]["spec"]["replicas"] == 5


async def test_official_dynamic_client_server_side_apply(served: tuple[Simulator, Path]) -> None:
    from kubernetes import config as k8s_config
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import ConflictError

    _, kubeconfig = served

    def run() -> None:
        api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
        try:
            dyn = DynamicClient(api)
            cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": "default"},
                "data": {"mode": "fast"},
            }
            created = cms.server_side_apply(body=body, field_manager="dyn")
            assert created.data.mode == "fast"
            assert created.metadata.managedFields[0].manager == "dyn"
            body["data"] = {"mode": "slow", "level": "2"}
            updated = cms.server_side_apply(body=body, field_manager="dyn")
            assert dict(updated.data) == {"mode": "slow", "level": "2"}
            other = {**body, "data": {"mode": "off"}}
            with pytest.raises(ConflictError) as err:
                cms.server_side_apply(body=other, field_manager="ops")
            assert err.value.status == 409
            forced = cms.server_side_apply(body=other, field_manager="ops", force_conflicts=True)
            assert dict(forced.data) == {"mode": "off", "level": "2"}
        finally:
            api.close()

    await asyncio.to_thread(run)
