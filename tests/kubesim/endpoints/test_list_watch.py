"""List (selectors, paging, resourceVersion) and watch (order, resume, 410, fan-out)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

import kubesim
from kubesim.sim import Simulator
from tests.support.api import raw, status_of


def _names(items: list[Any]) -> list[str]:
    return [i.metadata.name for i in items]


async def test_list_all_namespaces_sorted_with_resource_version(
    sim: Simulator, api: client.ApiClient
) -> None:
    v1 = client.CoreV1Api(api)
    pods = await v1.list_pod_for_all_namespaces()
    assert [(p.metadata.namespace, p.metadata.name) for p in pods.items] == [
        ("default", "web-0"),
        ("default", "web-1"),
        ("prod", "db-0"),
    ]
    assert pods.metadata.resource_version == str(sim.store.resource_version)


async def test_label_and_field_selectors(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    assert _names((await v1.list_pod_for_all_namespaces(label_selector="app=web")).items) == [
        "web-0",
        "web-1",
    ]
    assert _names(
        (await v1.list_pod_for_all_namespaces(label_selector="app in (db),app!=web")).items
    ) == ["db-0"]
    on_1 = await v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=node-1")
    assert _names(on_1.items) == ["web-0", "db-0"]
    pending = await v1.list_pod_for_all_namespaces(field_selector="status.phase=Pending")
    assert _names(pending.items) == ["db-0"]
    both = await v1.list_namespaced_pod(
        "default", field_selector="metadata.name=web-1,metadata.namespace=default"
    )
    assert _names(both.items) == ["web-1"]
    nodes = await v1.list_node(field_selector="spec.unschedulable!=true", label_selector="zone=b")
    assert _names(nodes.items) == ["node-2"]


async def test_unsupported_field_selector_is_400(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as info:
        await v1.list_pod_for_all_namespaces(field_selector="spec.foo=bar")
    assert info.value.status == 400
    assert status_of(info.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "field label not supported: spec.foo",
        "reason": "BadRequest",
        "code": 400,
    }
    with pytest.raises(ApiException) as info:
        await v1.list_node(field_selector="metadata.namespace=x")
    assert status_of(info.value)["message"] == "field label not supported: metadata.namespace"


async def test_invalid_label_selector_is_400(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as info:
        await v1.list_pod_for_all_namespaces(label_selector="app in (a")
    assert info.value.status == 400
    st = status_of(info.value)
    assert st["reason"] == "BadRequest"
    assert st["message"].startswith("unable to parse requirement")


async def test_paging_is_consistent_across_writes(sim: Simulator, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    for i in range(7):
        await v1.create_namespaced_pod(
            "default",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"page-{i}"},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        )
    first = await v1.list_namespaced_pod("default", limit=4)
    assert _names(first.items) == ["page-0", "page-1", "page-2", "page-3"]
    assert first.metadata._continue
    assert first.metadata.remaining_item_count == 5
    # Changes after the first page do not show up in later pages (same snapshot).
    await v1.delete_namespaced_pod("page-5", "default", grace_period_seconds=0)
    await v1.create_namespaced_pod(
        "default",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "page-45"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )
    second = await v1.list_namespaced_pod("default", limit=4, _continue=first.metadata._continue)
    assert _names(second.items) == ["page-4", "page-5", "page-6", "web-0"]
    third = await v1.list_namespaced_pod("default", limit=4, _continue=second.metadata._continue)
    assert _names(third.items) == ["web-1"]
    assert not third.metadata._continue
    assert third.metadata.resource_version == first.metadata.resource_version


async def test_continue_token_too_old_is_410() -> None:
    state = "\n---\n".join(
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\n"
        "spec: {containers: [{name: c, image: x}]}\nstatus: {phase: Running}"
        for i in range(4)
    )
    async with kubesim.serve(state=state, history_size=2) as sim, sim.api_client() as api:
        v1 = client.CoreV1Api(api)
        first = await v1.list_namespaced_pod("default", limit=2)
        for i in range(3):
            await v1.patch_namespaced_pod(
                f"p{i}", "default", {"metadata": {"labels": {"x": str(i)}}}
            )
        with pytest.raises(ApiException) as info:
            await v1.list_namespaced_pod("default", limit=2, _continue=first.metadata._continue)
    assert info.value.status == 410
    st = status_of(info.value)
    assert st["reason"] == "Expired"
    assert st["message"].startswith("The provided continue parameter is too old")


async def test_bad_continue_token_is_400(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    with pytest.raises(ApiException) as info:
        await v1.list_namespaced_pod("default", limit=2, _continue="garbage")
    assert info.value.status == 400


async def test_list_too_large_resource_version_is_504(sim: Simulator) -> None:
    code, headers, body = await raw(sim, "GET", "/api/v1/pods?resourceVersion=999999")
    assert code == 504
    assert body["reason"] == "Timeout"
    assert body["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]
    assert headers["Retry-After"] == "1"


async def _collect(sim: Simulator, path: str, until: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    async with aiohttp.ClientSession() as session, session.get(sim.url + path) as resp:
        assert resp.status == 200
        async for line in resp.content:
            out.append(json.loads(line))
            if len(out) >= until:
                break
    return out


async def test_watch_order_and_resume_without_loss(sim: Simulator, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    start = (await v1.list_namespaced_pod("default")).metadata.resource_version
    seen: list[tuple[str, str, int]] = []

    async def consume(rv: str, count: int) -> None:
        async with watch.Watch() as w:
            stream = w.stream(
                v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5
            )
            async for ev in stream:
                obj = ev["object"]
                seen.append((ev["type"], obj.metadata.name, int(obj.metadata.resource_version)))
                if len(seen) >= count:
                    w.stop()
                    break

    task = asyncio.create_task(consume(start, 3))
    await asyncio.sleep(0.1)
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "w1"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    await v1.create_namespaced_pod("default", body)
    await v1.patch_namespaced_pod("w1", "default", {"metadata": {"labels": {"a": "1"}}})
    await v1.delete_namespaced_pod("w1", "default")
    await asyncio.wait_for(task, 5)
    assert [(t, n) for t, n, _ in seen] == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]
    rvs = [rv for _, _, rv in seen]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3
    # The watch was cut after the DELETED event; changes made meanwhile are not lost when the
    # client resumes from the last resourceVersion it saw.
    last = str(rvs[-1])
    await v1.create_namespaced_pod("default", {**body, "metadata": {"name": "w2"}})
    await v1.patch_namespaced_pod("web-0", "default", {"metadata": {"labels": {"b": "2"}}})
    seen.clear()
    await asyncio.wait_for(consume(last, 2), 5)
    assert [(t, n) for t, n, _ in seen] == [("ADDED", "w2"), ("MODIFIED", "web-0")]
    assert seen[0][2] > rvs[-1]


async def test_watch_without_resource_version_starts_with_state(sim: Simulator) -> None:
    events = await _collect(sim, "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1", 2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "web-0"),
        ("ADDED", "web-1"),
    ]


async def test_deprecated_watch_path(sim: Simulator) -> None:
    events = await _collect(sim, "/api/v1/watch/namespaces/prod/pods?timeoutSeconds=1", 1)
    assert events[0]["object"]["metadata"]["name"] == "db-0"


async def test_watch_too_old_is_410_error_event() -> None:
    async with kubesim.serve(history_size=2) as sim:
        async with sim.api_client() as api:
            v1 = client.CoreV1Api(api)
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}
            first = await v1.create_namespace(body)
            for n in ("b", "c", "d"):
                await v1.create_namespace({**body, "metadata": {"name": n}})
        old = first.metadata.resource_version
        events = await _collect(sim, f"/api/v1/namespaces?watch=1&resourceVersion={old}", 1)
        record = sim.requests.filter(verb="watch")[-1]
    assert events[0]["type"] == "ERROR"
    st = events[0]["object"]
    assert st["kind"] == "Status"
    assert st["code"] == 410
    assert st["reason"] == "Expired"
    assert st["message"].startswith(f"too old resource version: {old} (")
    assert record.code == 200


async def test_watch_selector_transitions(sim: Simulator, api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    rv = (await v1.list_namespaced_pod("default")).metadata.resource_version
    task = asyncio.create_task(
        _collect(
            sim,
            f"/api/v1/namespaces/default/pods?watch=1&labelSelector=app%3Dweb&resourceVersion={rv}",
            2,
        )
    )
    await asyncio.sleep(0.1)
    await v1.patch_namespaced_pod("web-0", "default", {"metadata": {"labels": {"app": "other"}}})
    await v1.patch_namespaced_pod("web-0", "default", {"metadata": {"labels": {"app": "web"}}})
    events = await asyncio.wait_for(task, 5)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("DELETED", "web-0"),
        ("ADDED", "web-0"),
    ]


async def test_watch_bookmarks_and_initial_events(sim: Simulator) -> None:
    events = await _collect(
        sim,
        "/api/v1/namespaces/default/pods?watch=1&allowWatchBookmarks=true"
        "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=3",
        4,
    )
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "BOOKMARK", "BOOKMARK"]
    end = events[2]["object"]
    assert end["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert end["kind"] == "Pod"
    assert int(end["metadata"]["resourceVersion"]) == sim.store.resource_version


async def test_ten_concurrent_watchers_receive_every_event(
    sim: Simulator, api: client.ApiClient
) -> None:
    v1 = client.CoreV1Api(api)
    rv = (await v1.list_namespace()).metadata.resource_version
    n_events = 30
    tasks = [
        asyncio.create_task(
            _collect(sim, f"/api/v1/namespaces?watch=1&resourceVersion={rv}", n_events)
        )
        for _ in range(10)
    ]
    await asyncio.sleep(0.2)
    for i in range(n_events):
        await v1.create_namespace(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{i}"}}
        )
    results = await asyncio.wait_for(asyncio.gather(*tasks), 10)
    expected = [f"ns-{i}" for i in range(n_events)]
    for events in results:
        assert [e["object"]["metadata"]["name"] for e in events] == expected
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        assert rvs == sorted(rvs)


async def test_a_burst_of_writes_reaches_a_watcher_whole_and_in_order(sim: Simulator) -> None:
    """Writes made without yielding to the server are queued together and go out together:
    each still one line, in resourceVersion order, the selector applied to each."""
    rv = sim.store.resource_version
    path = f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}&labelSelector=burst"
    watcher = asyncio.create_task(_collect(sim, path, 60))
    await asyncio.sleep(0.2)
    pod_type = sim._type_for("Pod")
    for i in range(100):
        labels = {"burst": "yes"} if i % 5 else {}  # every fifth pod does not match
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"b-{i}", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
        sim.registry.create(pod_type, "default", body)
    events = await asyncio.wait_for(watcher, 10)
    names = [f"b-{i}" for i in range(100) if i % 5]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", n) for n in names[:60]
    ]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs)
