"""A kubesim without ``pods/eviction``, as a server lacking the Eviction API.

``kubectl drain`` and the ``evict`` client look for ``pods/eviction`` in discovery and fall
back to DELETE without it; ``Simulator(eviction_subresource=False)`` lets that path be tested.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client

import kubesim
from kubesim.endpoints.discovery import AGGREGATED_V2
from kubesim.sim import Simulator
from tests.support.api import STATE, raw

EVICTION = '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0"}}'


@pytest.fixture
async def no_eviction() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01, eviction_subresource=False) as s:
        yield s


def _pod_subresources_legacy(doc: dict[str, object]) -> list[str]:
    resources = doc["resources"]
    assert isinstance(resources, list)
    return sorted(r["name"] for r in resources if r["name"].startswith("pods/"))


def _pod_subresources_aggregated(doc: dict[str, object]) -> list[str]:
    items = doc["items"]
    assert isinstance(items, list)
    pods = next(r for r in items[0]["versions"][0]["resources"] if r["resource"] == "pods")
    return sorted(s["subresource"] for s in pods.get("subresources", []))


async def test_hidden_from_both_discovery_forms(no_eviction: Simulator) -> None:
    code, _, legacy = await raw(no_eviction, "GET", "/api/v1")
    assert code == 200
    assert _pod_subresources_legacy(legacy) == ["pods/binding", "pods/status"]
    code, _, agg = await raw(no_eviction, "GET", "/api", accept=AGGREGATED_V2)
    assert code == 200
    assert _pod_subresources_aggregated(agg) == ["binding", "status"]


async def test_shown_by_default(sim: Simulator) -> None:
    _, _, legacy = await raw(sim, "GET", "/api/v1")
    assert _pod_subresources_legacy(legacy) == ["pods/binding", "pods/eviction", "pods/status"]
    _, _, agg = await raw(sim, "GET", "/api", accept=AGGREGATED_V2)
    assert _pod_subresources_aggregated(agg) == ["binding", "eviction", "status"]


async def test_hidden_endpoint_is_404_and_delete_still_works(no_eviction: Simulator) -> None:
    code, _, status = await raw(
        no_eviction, "POST", "/api/v1/namespaces/default/pods/web-0/eviction", body=EVICTION
    )
    assert code == 404
    assert status["reason"] == "NotFound"
    assert status["message"] == "the server could not find the requested resource"
    assert no_eviction.get("Pod", "default", "web-0") is not None
    async with no_eviction.api_client() as api:
        await client.CoreV1Api(api).delete_namespaced_pod(
            "web-0", "default", grace_period_seconds=0
        )
    assert no_eviction.get("Pod", "default", "web-0") is None
