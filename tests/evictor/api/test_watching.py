"""``evictor.api.watching.list_and_watch`` against kubesim: resume, 410 relist, backoff, the
liveness bound that restarts a watch which stays open and silent (kubesim's ``silent`` fault),
and the bounds on what is read: pages and lines in bytes, JSON (answers too) in depth."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import tenacity

import kubesim
from evictor.api.watching import (
    Event,
    Page,
    WatchError,
    WatchState,
    list_and_watch,
    parse_event,
)
from kubesim.controllers import FROZEN
from kubesim.registry.generic import DeleteOptions
from kubesim.sim import Simulator
from tests.support.manifests import node, pod
from tests.support.wait import until

FAST = tenacity.wait_fixed(0.01)


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(
        state=[node("node-1"), pod("a")],
        time_scale=0.01,
        bookmark_interval=0.05,
        disabled_controllers=FROZEN,
    ) as s:
        yield s


class View:
    """What a consumer builds from the generator: names by the latest list and events."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.building: set[str] = set()
        self.lists = 0

    def apply(self, item: Page | Event) -> None:
        if isinstance(item, Page):
            if item.first:
                self.building = set()
            self.building |= {i["metadata"]["name"] for i in item.items}
            if item.last:
                self.names, self.lists = self.building, self.lists + 1
        elif item.type == "DELETED":
            self.names.discard(item.object["metadata"]["name"])
        else:
            self.names.add(item.object["metadata"]["name"])


async def consume(gen: AsyncIterator[Page | Event], view: View) -> None:
    async for item in gen:
        view.apply(item)


async def running(sim: Simulator, view: View, state: WatchState, **kw: Any) -> asyncio.Task[None]:
    api = sim.api_client()
    kw.setdefault("backoff", FAST)
    gen = list_and_watch(api, "/api/v1/namespaces/default/pods", state=state, **kw)

    async def run() -> None:
        try:
            await consume(gen, view)
        finally:
            await api.close()

    return asyncio.create_task(run())


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_lists_then_follows_changes_with_bookmarks(sim: Simulator) -> None:
    view, state = View(), WatchState()
    task = await running(sim, view, state)
    try:
        await until(lambda: view.names == {"a"}, timeout=30.0)
        assert state.live and state.listed
        sim.apply(pod("b"))
        await until(lambda: view.names == {"a", "b"}, timeout=30.0)
        (watch,) = sim.requests.filter(verb="watch", resource="pods")
        assert watch.query["allowWatchBookmarks"] == ["true"]
        assert watch.query["resourceVersion"] != [""]
    finally:
        await stop(task)


async def test_a_server_ended_watch_resumes_from_the_last_version(sim: Simulator) -> None:
    view, state = View(), WatchState()
    task = await running(sim, view, state, watch_timeout=1)
    try:
        await until(lambda: view.names == {"a"}, timeout=30.0)
        await until(
            lambda: len(sim.requests.filter(verb="watch", resource="pods")) >= 2, timeout=30.0
        )
        sim.apply(pod("b"))
        await until(lambda: view.names == {"a", "b"}, timeout=30.0)
        assert len(sim.requests.filter(verb="list", resource="pods")) == 1
        assert view.lists == 1
    finally:
        await stop(task)


async def test_410_relists_without_backing_off(sim: Simulator) -> None:
    sim.add_faults(
        {
            "faults": [
                {
                    "match": {"verb": "watch", "resource": "pods", "calls": "1"},
                    "respond": {"code": 410, "reason": "Expired", "message": "too old"},
                }
            ]
        }
    )
    view, state = View(), WatchState()
    # a backoff that would never end: a 410 must not wait for it
    task = await running(sim, view, state, backoff=tenacity.wait_fixed(3600))
    try:
        await until(lambda: state.relists == 1 and view.lists == 2, timeout=30.0)
        assert state.failures == 0
        sim.apply(pod("late"))
        await until(lambda: "late" in view.names, timeout=30.0)
    finally:
        await stop(task)


async def test_errors_back_off_and_resume(sim: Simulator) -> None:
    sim.add_faults(
        {
            "faults": [
                {
                    "match": {"verb": "watch", "resource": "pods", "calls": "1-2"},
                    "respond": {"code": 500, "reason": "InternalError", "message": "boom"},
                }
            ]
        }
    )
    view, state = View(), WatchState()
    task = await running(sim, view, state)
    try:
        await until(
            lambda: len(sim.requests.filter(verb="watch", resource="pods")) == 3, timeout=30.0
        )
        await until(lambda: state.live, timeout=30.0)
        assert state.failures == 2 and state.last_status == 500
        assert state.consecutive_failures == 0
        assert len(sim.requests.filter(verb="list", resource="pods")) == 1  # resumed, no relist
    finally:
        await stop(task)


async def test_max_failures_gives_up_with_the_status(sim: Simulator) -> None:
    sim.add_faults(
        {
            "faults": [
                {
                    "match": {"verb": "list", "resource": "pods"},
                    "respond": {"code": 403, "reason": "Forbidden", "message": "no"},
                }
            ]
        }
    )
    api = sim.api_client()
    try:
        gen = list_and_watch(api, "/api/v1/pods", max_failures=1, backoff=FAST)
        with pytest.raises(WatchError) as err:
            await gen.__anext__()
        assert err.value.status == 403 and err.value.reason == "Forbidden"
    finally:
        await api.close()


async def test_a_silent_watch_is_restarted_by_the_bound_and_sees_new_pods(
    sim: Simulator,
) -> None:
    sim.add_faults({"faults": [{"match": {"verb": "watch", "resource": "pods", "calls": "1"},
                                "silent": True}]})  # fmt: skip
    view, state = View(), WatchState()
    # bookmarks every 0.05 s: silence for 20 × 0.05 s means the stream is dead. A bound twenty
    # bookmarks long, so that a loaded machine's pauses do not pass for a dead stream.
    bound = 0.05 * 20
    task = await running(sim, view, state, bookmark_interval=0.05, liveness_factor=20)
    try:
        await until(lambda: view.names == {"a"}, timeout=30.0)
        sim.apply(pod("meanwhile"))
        # nothing but the bound ends the silent watch before its 300 s timeoutSeconds
        await until(lambda: "meanwhile" in view.names, timeout=30.0)
        assert state.stalls == 1 and state.relists == 1 and state.failures == 0
        silent, *_ = sim.requests.filter(verb="watch", resource="pods")
        _, relist = sim.requests.filter(verb="list", resource="pods")
        assert relist.time - silent.time >= bound  # not before the bound
        # the healthy watch that followed gets bookmarks and outlives the bound
        restarted = time.monotonic()
        await until(lambda: state.last_event_at > restarted + bound, timeout=30.0)
        assert state.stalls == 1 and state.live
    finally:
        await stop(task)


async def test_watch_from_a_given_version_skips_the_list(sim: Simulator) -> None:
    view, state = View(), WatchState()
    rv = str(sim.registry.store.resource_version)
    task = await running(sim, view, state, resource_version=rv)
    try:
        await until(lambda: state.live, timeout=30.0)
        sim.apply(pod("b"))
        await until(lambda: view.names == {"b"}, timeout=30.0)
        assert sim.requests.filter(verb="list", resource="pods") == []
    finally:
        await stop(task)


def padded(name: str, size: int) -> dict[str, Any]:
    """A pod of about ``size`` bytes of JSON (its container's ``args``)."""
    manifest = pod(name)
    manifest["spec"]["containers"][0]["args"] = ["x" * 1000] * (size // 1003)
    return manifest


def slim(obj: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": obj["metadata"]["name"]}, "slim": True}


async def test_pages_are_bounded_in_bytes_and_each_item_is_transformed(sim: Simulator) -> None:
    for i in range(12):
        sim.apply(padded(f"p{i:02d}", 20_000))
    api = sim.api_client()
    pages: list[Page] = []
    try:
        stream = list_and_watch(
            api,
            "/api/v1/namespaces/default/pods",
            page_size=50,
            max_bytes=64 << 10,
            transform=slim,
            max_failures=1,
        )
        async with contextlib.aclosing(stream):
            async for item in stream:
                assert isinstance(item, Page)
                pages.append(item)
                if item.last:
                    break
    finally:
        await api.close()
    names = [i["metadata"]["name"] for p in pages for i in p.items]
    assert sorted(names) == ["a", *(f"p{i:02d}" for i in range(12))]
    assert all(i == {"metadata": {"name": n}, "slim": True} for p in pages for i, n in
               zip(p.items, [i["metadata"]["name"] for i in p.items], strict=True))  # fmt: skip
    lists = sim.requests.filter(verb="list", resource="pods")
    limits = [int(r.query["limit"][0]) for r in lists]
    # 50, then halved until a page fits 64 KiB (three pods), then what fits at that size
    assert limits[:5] == [50, 25, 12, 6, 3], limits
    assert all(limit <= 4 for limit in limits[5:]), limits
    assert all(sum(i["metadata"]["name"] != "a" for i in p.items) <= 3 for p in pages)


async def test_an_object_over_the_bound_fails_the_list_naming_it(sim: Simulator) -> None:
    sim.apply(padded("huge", 100_000))
    api = sim.api_client()
    state = WatchState()
    try:
        stream = list_and_watch(
            api,
            "/api/v1/namespaces/default/pods",
            page_size=50,
            max_bytes=64 << 10,
            max_failures=1,
            state=state,
        )
        with pytest.raises(WatchError, match=r"object default/huge is larger than the 65536"):
            async with contextlib.aclosing(stream):
                async for _ in stream:
                    pass
    finally:
        await api.close()
    limits = [r.query["limit"][0] for r in sim.requests.filter(verb="list", resource="pods")]
    assert limits[-1] == "1"  # asked for alone before giving up
    assert not state.listed  # nothing was yielded as a view of the namespace


async def test_an_unpaged_list_over_the_bound_is_paged(sim: Simulator) -> None:
    for i in range(4):
        sim.apply(padded(f"p{i}", 20_000))
    view, state = View(), WatchState()
    task = await running(sim, view, state, max_bytes=64 << 10)
    try:
        await until(lambda: view.lists == 1, timeout=30.0)
        assert view.names == {"a", "p0", "p1", "p2", "p3"}
        limits = [r.query.get("limit") for r in sim.requests.filter(verb="list", resource="pods")]
        assert limits[0] is None and limits[1] == ["250"], limits
    finally:
        await stop(task)


async def test_a_watch_event_over_the_bound_relists_and_names_the_object(
    sim: Simulator,
) -> None:
    view, state = View(), WatchState()
    task = await running(sim, view, state, max_bytes=64 << 10)
    try:
        await until(lambda: view.names == {"a"} and state.live, timeout=30.0)
        sim.apply(padded("huge", 100_000))
        await until(lambda: "default/huge is larger than" in state.last_error, timeout=30.0)
        assert "watch of /api/v1/namespaces/default/pods" in state.last_error
        # the next attempt lists, and the list fails on the same object: never a view without it
        await until(
            lambda: len(sim.requests.filter(verb="list", resource="pods")) >= 2, timeout=30.0
        )
        assert view.names == {"a"} and view.lists == 1
        rt = sim.scheme.for_kind("v1", "Pod")
        assert rt is not None
        sim.registry.delete(rt, "default", "huge", DeleteOptions(grace_period_seconds=0))
        sim.apply(pod("b"))
        await until(lambda: view.names == {"a", "b"}, timeout=30.0)
    finally:
        await stop(task)


def test_a_watch_line_nested_too_deeply_is_skipped_as_malformed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deep = b'{"type": "ADDED", "object": {"a": ' + b"[" * 500 + b"]" * 500 + b"}}"
    state = WatchState()
    with caplog.at_level(logging.WARNING):
        assert parse_event(deep, state) is None
    assert "malformed watch line skipped" in caplog.text
    assert "nested deeper than 100 levels" in caplog.records[-1].__dict__["err"]


async def test_an_answer_nested_too_deeply_is_refused_unparsed(sim: Simulator) -> None:
    from aiohttp import web

    from evictor.api.calls import APIError, send

    deep = b'{"kind": "Status", "message": ' + b"[" * 5000 + b"]" * 5000 + b"}"

    async def answer(ctx: Any) -> web.StreamResponse | None:
        if ctx.request.path.endswith("/pods/deep"):
            return web.Response(status=500, body=deep, content_type="application/json")
        return None

    sim.server.request_hooks.append(answer)
    api = sim.api_client()
    try:
        resp = await send(api, "GET", "/api/v1/namespaces/default/pods/deep")
    finally:
        await api.close()
    assert resp.status == 500
    assert resp.body == "(a response body refused: JSON nested deeper than 100 levels)"
    assert str(APIError(resp)) == (
        "Error from server: (a response body refused: JSON nested deeper than 100 levels)"
    )
