"""``Evictor`` on a living kubesim: the budget reopens because a real replacement became Ready.

No fault stands in for a controller here. An eviction is answered by kubesim's eviction
subresource; the pod's ReplicaSet or StatefulSet replaces it, the scheduler loop binds the
replacement, the kubelet makes it Ready after ``ready_after`` (× time scale) and the
disruption controller raises ``disruptionsAllowed`` again. The request log shows what the
client did and when; the store's watch shows when the budget changed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from evictor.client import Evictor
from evictor.result import Outcome
from kubesim.registry.generic import DeleteOptions
from kubesim.sim import Simulator
from tests.support.living import living, settle
from tests.support.manifests import node, pdb, pod, replicaset, statefulset
from tests.support.wait import until

TIME_SCALE = 0.01
WEB = [node("node-1"), node("node-2"), replicaset("web"), pdb("web", max_unavailable=1)]
WEB += [pod(f"web-{i}", app="web") for i in range(3)]
WEB_NAMES = {"web-0", "web-1", "web-2"}
DB_OWNER = ("apps/v1", "StatefulSet", "db")
DB = [node("node-1"), node("node-2"), statefulset("db", parallel=True)]
DB += [pdb("db", max_unavailable=1), *[pod(f"db-{i}", owner=DB_OWNER) for i in range(3)]]


def evictions(sim: Simulator, name: str) -> list[Any]:
    return list(sim.requests.filter(subresource="eviction", name=name))


def uid(sim: Simulator, name: str) -> str:
    obj = sim.get("Pod", "default", name)
    assert obj is not None
    return str(obj["metadata"]["uid"])


def recreated(sim: Simulator, name: str, old_uid: str) -> bool:
    obj = sim.get("Pod", "default", name)
    return obj is not None and obj["metadata"]["uid"] != old_uid


async def budget_openings(sim: Simulator, name: str, into: list[float]) -> None:
    """Append the wall time of every change of PDB ``name`` from 0 to > 0 allowed disruptions."""
    sub = sim.store.subscribe("poddisruptionbudgets")
    allowed = -1
    try:
        while True:
            ev = await sub.queue.get()
            if ev.key[1] != name:
                continue
            now = (ev.obj.get("status") or {}).get("disruptionsAllowed", 0)
            if allowed == 0 and now > 0:
                into.append(time.time())
            allowed = now
    finally:
        sim.store.unsubscribe(sub)


async def _evictor(sim: Simulator) -> AsyncIterator[Evictor]:
    async with sim.api_client() as api, Evictor(api, default_retry=5.0) as ev:
        yield ev


@pytest.mark.parametrize("ready_after", [40.0, 120.0])  # × 0.01: Ready 0.4 s or 1.2 s after start
async def test_pdb_429_is_retried_when_the_replacement_becomes_ready(ready_after: float) -> None:
    async with living(WEB, time_scale=TIME_SCALE, ready_after=ready_after) as sim:
        await settle(sim)
        openings: list[float] = []
        watcher = asyncio.create_task(budget_openings(sim, "web", openings))
        async for ev in _evictor(sim):
            first = await ev.evict("default", "web-0", expected_uid=uid(sim, "web-0"))
            assert first.outcome is Outcome.EVICTED
            second = await ev.evict("default", "web-1", expected_uid=uid(sim, "web-1"))
        watcher.cancel()
        assert second.outcome is Outcome.EVICTED and second.attempts == 2
        assert second.pdbs == ("web",)
        blocked, retried = evictions(sim, "web-1")
        assert (blocked.code, retried.code) == (429, 201)
        # The budget reopened once web-0's replacement (a new pod of the ReplicaSet) was Ready,
        # and the retry followed that change at once ...
        (opened,) = [t for t in openings if blocked.time < t <= retried.time]
        assert retried.time - opened < 0.5
        # ... so the wait tracks the replacement's readiness (it cannot reopen sooner), not a
        # fixed interval: kubectl would wait 5 s, and so would the fallback (default_retry).
        (granted,) = evictions(sim, "web-0")
        assert ready_after * TIME_SCALE <= retried.time - granted.time < 5.0
        await settle(sim)
        new = [p for p in sim.list_objects("Pod") if p["metadata"]["name"] not in WEB_NAMES]
        assert len(new) == 2  # the replacements of web-0 and web-1
        assert all(p["metadata"]["ownerReferences"][0]["name"] == "web" for p in new)


async def test_statefulset_replacement_with_a_new_uid_is_never_evicted() -> None:
    async with living(DB, time_scale=TIME_SCALE, ready_after=50) as sim:
        await settle(sim)
        old = uid(sim, "db-0")
        async for ev in _evictor(sim):
            freed = await ev.evict("default", "db-2", expected_uid=uid(sim, "db-2"))
            assert freed.outcome is Outcome.EVICTED  # the budget is spent until db-2 is back
            task = asyncio.create_task(ev.evict("default", "db-0", expected_uid=old))
            await until(lambda: len(evictions(sim, "db-0")) == 1, timeout=30.0)
            # Meanwhile someone deletes db-0; its StatefulSet recreates it under the same name.
            rt = sim.scheme.for_kind("v1", "Pod")
            assert rt is not None
            sim.registry.delete(rt, "default", "db-0", DeleteOptions(grace_period_seconds=0))
            await until(lambda: recreated(sim, "db-0", old), timeout=30.0)
            result = await asyncio.wait_for(task, 10)
        assert result.outcome is Outcome.POD_REPLACED
        # One 429 for the original; the replacement (kubernetes/kubernetes#138229) was left alone.
        assert [r.code for r in evictions(sim, "db-0")] == [429]
        sent = {r.body["deleteOptions"]["preconditions"]["uid"] for r in evictions(sim, "db-0")}
        assert sent == {old}
        await settle(sim)
        current = sim.get("Pod", "default", "db-0")
        assert current is not None and current["metadata"]["uid"] != old
        assert not current["metadata"].get("deletionTimestamp")


async def test_eviction_of_a_recreated_pod_is_refused_by_its_uid_precondition() -> None:
    async with living(DB, time_scale=TIME_SCALE) as sim:
        await settle(sim)
        old = uid(sim, "db-1")
        rt = sim.scheme.for_kind("v1", "Pod")
        assert rt is not None
        sim.registry.delete(rt, "default", "db-1", DeleteOptions(grace_period_seconds=0))
        await until(lambda: recreated(sim, "db-1", old), timeout=30.0)
        async for ev in _evictor(sim):
            result = await ev.evict("default", "db-1", expected_uid=old)
        assert result.outcome is Outcome.POD_REPLACED
        (req,) = evictions(sim, "db-1")
        assert req.code == 409  # the server checked the precondition: nothing was deleted
        current = sim.get("Pod", "default", "db-1")
        assert current is not None and current["metadata"]["uid"] != old
        assert not current["metadata"].get("deletionTimestamp")


async def test_without_the_eviction_subresource_pods_are_deleted() -> None:
    """kubectl's CheckEvictionSupport: no ``pods/eviction`` in discovery means DELETE."""
    async with living(WEB, time_scale=TIME_SCALE, eviction_subresource=False) as sim:
        await settle(sim)
        async for ev in _evictor(sim):
            assert await ev.eviction_version() is None
            result = await ev.evict("default", "web-0", expected_uid=uid(sim, "web-0"))
        assert result.outcome is Outcome.EVICTED and result.method == "delete"
        assert sim.requests.filter(subresource="eviction") == []
        (delete,) = sim.requests.filter(verb="delete", name="web-0")
        assert delete.body["preconditions"]["uid"] and delete.code == 200
        await settle(sim)  # and the ReplicaSet replaced it
        assert sum(1 for p in sim.list_objects("Pod") if p["metadata"]["name"] != "web-0") == 3
