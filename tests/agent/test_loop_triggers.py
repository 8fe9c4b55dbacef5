"""Loop scheduling: fast memory check and PSI wake a sync; hard never waits behind soft."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agent.loop import EvictionLoop, psi_wakeups
from tests.support.agentloop import Actions, Node, manager
from tests.support.fakenode import MI
from tests.support.wait import until


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
