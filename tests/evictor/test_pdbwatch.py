"""The PDB watch (``evictor.pdbwatch``) over ``evictor.api.watching``: a watch that goes silent
without closing is restarted from a relist within its liveness bound, and what changed meanwhile
— a budget reopened, a budget created — reaches the tracker and its waiters."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

import kubesim
from evictor.pdbwatch import PdbTracker
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.living import pin
from tests.support.manifests import node, pdb, pod, replicaset
from tests.support.wait import until

BOOKMARKS = 0.05  # kubesim's bookmark interval in these tests; the bound is 3 of them


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    objs = [node("node-1"), replicaset("web"), *[pod(f"web-{i}", app="web") for i in range(3)]]
    async with kubesim.serve(
        state=[*objs, pdb("web", min_available=2)],
        time_scale=0.01,
        bookmark_interval=BOOKMARKS,
        disabled_controllers=FROZEN,
    ) as s:
        yield s


async def test_a_silent_pdb_watch_is_restarted_and_a_reopened_budget_releases_its_waiter(
    sim: Simulator,
) -> None:
    pin(sim, "web", 0)
    sim.add_faults(
        {
            "faults": [
                {
                    "match": {"verb": "watch", "resource": "poddisruptionbudgets", "calls": "1"},
                    "silent": True,
                }
            ]
        }
    )
    async with sim.api_client() as api:
        tracker = PdbTracker(api, bookmark_interval=BOOKMARKS, liveness_factor=3)
        try:
            assert await tracker.ensure("default")
            await until(
                lambda: (
                    len(sim.requests.filter(verb="watch", resource="poddisruptionbudgets")) == 1
                ),
                timeout=30.0,
            )
            waiter = asyncio.create_task(
                tracker.wait_reopen("default", ("web",), timeout=5.0, seen={})
            )
            await asyncio.sleep(0)
            pin(sim, "web", 1)  # the silent stream never delivers this
            sim.apply(pdb("other", app="other", max_unavailable=1))
            loop = asyncio.get_running_loop()
            started = loop.time()
            assert await asyncio.wait_for(waiter, 2)
            assert loop.time() - started < 3 * BOOKMARKS + 0.35  # the bound, plus a relist
            state = tracker.state("default")
            assert state is not None and state.stalls == 1 and state.failures == 0
            await until(lambda: tracker.get("default", "other") is not None, timeout=30.0)
            lists = sim.requests.filter(verb="list", resource="poddisruptionbudgets")
            assert len(lists) == 2
        finally:
            await tracker.close()


async def test_a_pdb_watch_that_cannot_list_is_not_healthy_and_waiters_fall_back(
    sim: Simulator,
) -> None:
    sim.add_faults(
        {
            "faults": [
                {
                    "match": {"verb": "list", "resource": "poddisruptionbudgets"},
                    "respond": {"code": 403, "reason": "Forbidden", "message": "no"},
                }
            ]
        }
    )
    async with sim.api_client() as api:
        tracker = PdbTracker(api)
        try:
            assert not await tracker.ensure("default")
            state = tracker.state("default")
            assert state is not None and state.last_status == 403
            slept: list[float] = []

            async def sleep(seconds: float) -> None:
                slept.append(seconds)

            assert not await tracker.wait_reopen(
                "default", ("web",), timeout=5.0, seen={}, sleep=sleep
            )
            assert slept == [5.0]
        finally:
            await tracker.close()
