"""The extension points phase 2 builds on: request hooks, subresource handlers, controllers."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.core.errors import Cause, StatusError
from kubesim.endpoints.codec import json_response
from kubesim.endpoints.request import RequestContext
from kubesim.endpoints.server import DropConnection
from kubesim.sim import Simulator
from tests.support.api import raw, status_of


async def test_request_hook_can_answer_with_a_status(sim: Simulator, api: client.ApiClient) -> None:
    async def hook(ctx: RequestContext) -> web.StreamResponse | None:
        if ctx.info.verb == "get" and ctx.info.resource == "pods" and ctx.info.name == "web-0":
            raise StatusError(
                429,
                "TooManyRequests",
                "slow down",
                causes=(Cause("DisruptionBudget", "budget"),),
                retry_after_seconds=3,
            )
        return None

    sim.server.request_hooks.append(hook)
    with pytest.raises(ApiException) as info:
        await client.CoreV1Api(api).read_namespaced_pod("web-0", "default")
    assert info.value.status == 429
    assert info.value.headers["Retry-After"] == "3"
    assert status_of(info.value)["details"] == {
        "causes": [{"reason": "DisruptionBudget", "message": "budget"}],
        "retryAfterSeconds": 3,
    }
    assert sim.requests[-1].code == 429
    # Other requests pass through to the normal handler.
    await client.CoreV1Api(api).read_namespaced_pod("web-1", "default")


async def test_request_hook_can_drop_the_connection(sim: Simulator) -> None:
    async def hook(ctx: RequestContext) -> web.StreamResponse | None:
        if ctx.info.verb == "list":
            raise DropConnection
        return None

    sim.server.request_hooks.append(hook)
    with pytest.raises(aiohttp.ClientError):
        await raw(sim, "GET", "/api/v1/pods")
    assert sim.requests[-1].verb == "list"
    assert sim.requests[-1].code == 0
    code, _, _ = await raw(sim, "GET", "/api/v1/nodes/node-1")
    assert code == 200


async def test_subresource_registry(sim: Simulator) -> None:
    code, _, body = await raw(
        sim, "POST", "/api/v1/namespaces/default/pods/web-0/eviction", body="{}"
    )
    assert (code, body["message"]) == (400, "name in URL does not match name in Eviction object")
    del sim.server.subresources[("", "pods", "eviction")]
    code, _, _ = await raw(sim, "POST", "/api/v1/namespaces/default/pods/web-0/eviction", body="{}")
    assert code == 404  # advertised in discovery, served only with a registered handler

    async def evict(ctx: RequestContext, rt: object) -> web.StreamResponse:
        return json_response(
            {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}, 201
        )

    sim.server.subresources[("", "pods", "eviction")] = evict
    code, _, _ = await raw(sim, "POST", "/api/v1/namespaces/default/pods/web-0/eviction", body="{}")
    assert code == 201
    rec = sim.requests[-1]
    assert (rec.verb, rec.resource, rec.subresource, rec.name) == (
        "create",
        "pods",
        "eviction",
        "web-0",
    )


async def test_controllers_can_be_added_while_running(sim: Simulator) -> None:
    seen: list[str] = []

    class Recorder:
        name = "recorder"

        async def run(self, s: Simulator) -> None:
            sub = s.store.subscribe("nodes")
            try:
                while True:
                    ev = await sub.queue.get()
                    seen.append(f"{ev.type} {ev.key[1]}")
            finally:
                s.store.unsubscribe(sub)

    sim.add_controller(Recorder())
    await asyncio.sleep(0)
    sim.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-9"}})
    await asyncio.sleep(0.05)
    # Then the node's kubelet completes its status (MODIFIED), which the recorder sees too.
    assert seen[:1] == ["ADDED node-9"]
    assert set(seen) <= {"ADDED node-9", "MODIFIED node-9"}
