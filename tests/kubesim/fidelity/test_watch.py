"""The bookmark kube-apiserver's watch cache sends 2 s before a watch times out.

With ``allowWatchBookmarks=true`` a watcher gets a BOOKMARK carrying the newest
resourceVersion shortly before its deadline (``cacheWatcher.nextBookmarkTime``), so a client
that re-watches after the timeout resumes from there even when nothing it watches changed.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch

import kubesim
from kubesim.sim import Simulator
from tests.support.api import STATE


@pytest.fixture
async def quiet_sim() -> AsyncIterator[Simulator]:
    """A kubesim whose periodic bookmark (a minute) never fires within a test."""
    # No controllers: nothing but the test may move the resourceVersion (leases would).
    async with kubesim.serve(
        state=STATE, time_scale=0.01, bookmark_interval=60.0, controllers=[]
    ) as s:
        yield s


async def _timed_events(
    sim: Simulator, path: str
) -> tuple[list[tuple[float, dict[str, Any]]], float]:
    """Every event of a watch with its arrival time, and the time the stream ended."""
    start = time.monotonic()
    async with aiohttp.ClientSession() as session, session.get(sim.url + path) as resp:
        assert resp.status == 200
        out = [(time.monotonic() - start, json.loads(line)) async for line in resp.content]
    return out, time.monotonic() - start


async def test_bookmark_before_the_timeout(quiet_sim: Simulator) -> None:
    rv = quiet_sim.store.resource_version
    path = (
        f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}"
        "&allowWatchBookmarks=true&timeoutSeconds=3"
    )
    task = asyncio.create_task(_timed_events(quiet_sim, path))
    await asyncio.sleep(0.3)
    # A change elsewhere moves the resourceVersion; this watcher sees no pod event.
    quiet_sim.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    events, ended = await task
    assert [e["type"] for _, e in events] == ["BOOKMARK"]
    at, bookmark = events[0]
    obj = bookmark["object"]
    assert obj["kind"] == "Pod" and obj["apiVersion"] == "v1"
    assert obj["metadata"]["resourceVersion"] == str(quiet_sim.store.resource_version)
    assert int(obj["metadata"]["resourceVersion"]) > rv
    # Sent about two seconds before the end, not at the end.
    assert ended - at > 1.0


async def test_no_bookmark_without_asking(quiet_sim: Simulator) -> None:
    rv = quiet_sim.store.resource_version
    events, _ = await _timed_events(
        quiet_sim, f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}&timeoutSeconds=3"
    )
    assert events == []


async def test_watch_shorter_than_the_margin_has_no_bookmark(quiet_sim: Simulator) -> None:
    rv = quiet_sim.store.resource_version
    events, _ = await _timed_events(
        quiet_sim,
        f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}"
        "&allowWatchBookmarks=true&timeoutSeconds=1",
    )
    assert events == []


async def test_typed_watch_resumes_from_the_bookmark(quiet_sim: Simulator) -> None:
    async with quiet_sim.api_client() as api:
        v1 = client.CoreV1Api(api)
        listed = await v1.list_namespaced_pod("prod")

        async def change_elsewhere() -> None:
            await asyncio.sleep(0.3)
            await v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="x")))

        task = asyncio.create_task(change_elsewhere())
        async with watch.Watch() as w:
            stream = w.stream(
                v1.list_namespaced_pod,
                "prod",
                resource_version=listed.metadata.resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=3,
            )
            seen = [ev["type"] async for ev in stream]
            await task
            assert seen == ["BOOKMARK"]
            # kubernetes-asyncio takes the bookmark's resourceVersion for its next watch.
            assert int(w.resource_version) == quiet_sim.store.resource_version
            assert int(w.resource_version) > int(listed.metadata.resource_version)
