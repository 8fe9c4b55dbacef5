"""Loop scheduling: fast memory check and PSI wake a sync; hard never waits behind soft."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from agent.actions.evict import ActionResult
from agent.config import load_config
from agent.daemon import WallClock
from agent.eviction import EvictionDecision, EvictionManager
from agent.loop import EvictionLoop, psi_wakeups
from kube.objects import Pod
from tests.agent.agent_fakes import MI, ts
from tests.support.wait import until


def summary(capacity: int, usage: dict[str, int]) -> dict[str, Any]:
    now = time.time()
    used = sum(usage.values())
    return {
        "node": {
            "nodeName": "n",
            "memory": {
                "time": ts(now),
                "availableBytes": capacity - used,
                "workingSetBytes": used,
            },
        },
        "pods": [
            {
                "podRef": {"name": n, "namespace": "default", "uid": n},
                "memory": {"time": ts(now), "workingSetBytes": ws},
            }
            for n, ws in usage.items()
        ],
    }


class Node:
    def __init__(self, usage: dict[str, int]) -> None:
        self.usage = usage
        self.pods = {n: Pod(name=n, uid=n, spec_priority=i) for i, n in enumerate(usage)}

    async def stats(self) -> dict[str, Any]:
        return summary(1024 * MI, self.usage)

    def fast(self) -> dict[str, Any]:
        return summary(1024 * MI, self.usage)

    def active(self) -> list[Pod]:
        return list(self.pods.values())


class Actions:
    def __init__(self, node: Node, *, hang_soft: bool = False) -> None:
        self.node = node
        self.hang_soft = hang_soft
        self.calls: list[tuple[str, bool, float]] = []

    async def execute(
        self, decision: EvictionDecision, *, hard: bool, deadline: float
    ) -> ActionResult:
        self.calls.append((decision.pod.name, hard, time.monotonic()))
        if not hard and self.hang_soft:
            await asyncio.Event().wait()  # hangs until cancelled
        self.node.usage.pop(decision.pod.name, None)
        self.node.pods.pop(decision.pod.name, None)
        return ActionResult("evicted", "delete", requested_at=time.time())


def manager(**fields: Any) -> EvictionManager:
    cfg = load_config(fields, env={})
    return EvictionManager(cfg.manager_config(), WallClock())


async def test_fast_memory_check_wakes_a_sync_between_intervals() -> None:
    node = Node({"p0": 100 * MI, "p1": 100 * MI})
    actions = Actions(node)
    loop = EvictionLoop(
        manager(evictionHard={"memory.available": "500Mi"}),
        stats=node.stats,
        pods=node.active,
        actions=actions,
        interval=60.0,
        fast_check=node.fast,
        fast_check_interval=0.02,
    )
    task = asyncio.create_task(loop.run())
    try:
        await until(lambda: loop.stats.syncs == 1)
        node.usage["p1"] = 600 * MI
        await until(lambda: bool(actions.calls), timeout=5)  # the interval is 60 s
        assert actions.calls[0][0] == "p0"  # both exceed requests: lower priority first
        assert loop.metrics is None and loop.stats.syncs == 2
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_psi_event_wakes_a_sync() -> None:
    node = Node({"p0": 100 * MI})
    loop = EvictionLoop(
        manager(),
        stats=node.stats,
        pods=node.active,
        actions=Actions(node),
        interval=60.0,
    )
    events: asyncio.Queue[str] = asyncio.Queue()

    async def psi() -> AsyncIterator[str]:
        while True:
            yield await events.get()

    task = asyncio.create_task(loop.run())
    waker = asyncio.create_task(psi_wakeups(loop, psi()))
    try:
        await until(lambda: loop.stats.syncs == 1)
        await events.put("trigger")
        await until(lambda: loop.stats.syncs == 2, timeout=2)
    finally:
        task.cancel()
        waker.cancel()
        await asyncio.gather(task, waker, return_exceptions=True)


async def test_hard_threshold_does_not_wait_behind_a_slow_soft_eviction() -> None:
    node = Node({"p0": 300 * MI, "p1": 300 * MI, "p2": 100 * MI})
    actions = Actions(node, hang_soft=True)
    loop = EvictionLoop(
        manager(
            evictionHard={"memory.available": "100Mi"},
            evictionSoft={"memory.available": "500Mi"},
            evictionSoftGracePeriod={"memory.available": "10ms"},
        ),
        stats=node.stats,
        pods=node.active,
        actions=actions,
        interval=0.02,
    )
    task = asyncio.create_task(loop.run())
    try:
        # available 324Mi: only the soft threshold is met; its eviction of p0 hangs
        await until(lambda: bool(actions.calls))
        await asyncio.sleep(0.2)
        assert [(n, h) for n, h, _ in actions.calls] == [("p0", False)]  # no second soft
        node.usage["p2"] = 400 * MI  # available 24Mi: hard threshold
        await until(lambda: len(actions.calls) >= 2, timeout=2)  # the soft one hangs for 1 h
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    # the hard eviction replaced the hanging soft one on the same (first-ranked) pod
    assert [(n, h) for n, h, _ in actions.calls][:2] == [("p0", False), ("p0", True)]
    assert "p0" in loop.evicted


async def test_node_level_reads_until_a_threshold_is_met() -> None:
    node = Node({"p0": 100 * MI, "p1": 100 * MI})
    reads = {"full": 0, "node": 0}

    async def full() -> dict[str, Any]:
        reads["full"] += 1
        return await node.stats()

    async def node_only() -> dict[str, Any]:
        reads["node"] += 1
        data = await node.stats()
        data["pods"] = []
        return data

    actions = Actions(node)
    loop = EvictionLoop(
        manager(evictionHard={"memory.available": "500Mi"}),
        stats=full,
        node_stats=node_only,
        pods=node.active,
        actions=actions,
        interval=0.02,
    )
    task = asyncio.create_task(loop.run())
    try:
        await until(lambda: loop.stats.syncs >= 10)
        assert reads["full"] == 1  # the first sync only
        node.usage["p1"] = 600 * MI
        await until(lambda: bool(actions.calls))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert reads["full"] >= 2
    assert actions.calls[0][0] == "p0"  # ranked with full pod stats


async def test_wakers_are_rearmed_after_every_sync_and_a_failing_one_stops_nothing() -> None:
    node = Node({"p0": 100 * MI, "p1": 600 * MI})  # memory.available 324Mi < 500Mi
    armed: list[tuple[Any, float]] = []

    class Waker:
        def rearm(self, thresholds: Any, observations: Any) -> None:
            armed.append((thresholds, observations["memory.available"].available))

    class Broken:
        def rearm(self, thresholds: Any, observations: Any) -> None:
            raise OSError("cgroup gone")

    actions = Actions(node)
    loop = EvictionLoop(
        manager(evictionHard={"memory.available": "500Mi"}),
        stats=node.stats,
        pods=node.active,
        actions=actions,
        wakers=[Broken(), Waker()],
    )
    await loop.sync_once()
    assert armed == [(loop.manager.thresholds, 324 * MI)]  # this sync's observation
    assert len(actions.calls) == 1  # the sync acted all the same
    assert loop.stats.errors == 0
