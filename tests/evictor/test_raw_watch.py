"""``raw_watch``: a kubernetes-asyncio watch that hands events over as parsed, without models
and without the second ApiClient the library's ``Watch`` would build."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.api.core_v1_api import CoreV1Api

from evictor.transport import raw_watch
from kubesim.sim import Simulator


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def _relabel(pod: dict[str, Any]) -> None:
    pod["metadata"]["labels"] = {"x": "y"}


async def test_streams_raw_objects_without_building_an_api_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[object] = []
    real_init = ApiClient.__init__

    def spy(self: ApiClient, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        real_init(self, *args, **kwargs)

    async with Simulator() as sim, sim.api_client() as api:
        sim.apply(_pod("before"))
        monkeypatch.setattr(ApiClient, "__init__", spy)
        core = CoreV1Api(api)
        seen: list[tuple[str, str, str]] = []
        async with raw_watch() as w:
            stream = w.stream(core.list_namespaced_pod, "default", timeout_seconds=5)

            async def read() -> None:
                async for event in stream:
                    obj = event["object"]
                    assert isinstance(obj, dict)  # as the server sent it: no model
                    assert obj == event["raw_object"]
                    seen.append((event["type"], obj["metadata"]["name"], obj["kind"]))
                    if event["type"] == "DELETED":
                        return

            reader = asyncio.create_task(read())
            await asyncio.sleep(0.1)
            sim.apply(_pod("after"))
            await asyncio.sleep(0.1)
            sim.update("Pod", "default", "before", _relabel)
            await core.delete_namespaced_pod("after", "default", grace_period_seconds=0)
            await asyncio.wait_for(reader, 5)
        assert built == []  # neither the watch nor its close built another client
        assert seen[0] == ("ADDED", "before", "Pod")
        assert ("ADDED", "after", "Pod") in seen
        assert ("MODIFIED", "before", "Pod") in seen
        assert seen[-1] == ("DELETED", "after", "Pod")
        assert w.resource_version  # kept from the events, for a reconnect to resume
