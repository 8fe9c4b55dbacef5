"""``evictor.api.watching.list_and_watch`` against kubesim: resume, 410 relist, backoff, and the
liveness bound that restarts a watch which stays open and silent (kubesim's ``silent`` fault)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import tenacity

import kubesim
from evictor.api.watching import Event, Page, WatchError, WatchState, list_and_watch
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator

from .conftest import node, pod

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


async def until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


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
        await until(lambda: view.names == {"a"})
        assert state.live and state.listed
        sim.apply(pod("b"))
        await until(lambda: view.names == {"a", "b"})
        (watch,) = sim.requests.filter(verb="watch", resource="pods")
        assert watch.query["allowWatchBookmarks"] == ["true"]
        assert watch.query["resourceVersion"] != [""]
    finally:
        await stop(task)


async def test_a_server_ended_watch_resumes_from_the_last_version(sim: Simulator) -> None:
    view, state = View(), WatchState()
    task = await running(sim, view, state, watch_timeout=1)
    try:
        await until(lambda: view.names == {"a"})
        await until(lambda: len(sim.requests.filter(verb="watch", resource="pods")) >= 2, 3)
        sim.apply(pod("b"))
        await until(lambda: view.names == {"a", "b"})
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
        await until(lambda: state.relists == 1 and view.lists == 2)
        assert state.failures == 0
        sim.apply(pod("late"))
        await until(lambda: "late" in view.names)
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
        await until(lambda: len(sim.requests.filter(verb="watch", resource="pods")) == 3)
        await until(lambda: state.live)
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


async def test_a_silent_watch_is_restarted_within_the_bound_and_sees_new_pods(
    sim: Simulator,
) -> None:
    sim.add_faults({"faults": [{"match": {"verb": "watch", "resource": "pods", "calls": "1"},
                                "silent": True}]})  # fmt: skip
    view, state = View(), WatchState()
    # bookmarks every 0.05 s: silence for 3 × 0.05 s means the stream is dead
    task = await running(sim, view, state, bookmark_interval=0.05, liveness_factor=3)
    try:
        await until(lambda: view.names == {"a"})
        started = time.monotonic()
        sim.apply(pod("meanwhile"))
        await until(lambda: "meanwhile" in view.names, 2)
        assert time.monotonic() - started < 0.15 + 0.35  # the bound, plus a relist's time
        assert state.stalls == 1 and state.relists == 1 and state.failures == 0
        assert len(sim.requests.filter(verb="list", resource="pods")) == 2
        # the healthy watch that followed gets bookmarks and is not restarted again
        await asyncio.sleep(0.3)
        assert state.stalls == 1 and state.live
    finally:
        await stop(task)


async def test_watch_from_a_given_version_skips_the_list(sim: Simulator) -> None:
    view, state = View(), WatchState()
    rv = str(sim.registry.store.resource_version)
    task = await running(sim, view, state, resource_version=rv)
    try:
        await until(lambda: state.live)
        sim.apply(pod("b"))
        await until(lambda: view.names == {"b"})
        assert sim.requests.filter(verb="list", resource="pods") == []
    finally:
        await stop(task)
