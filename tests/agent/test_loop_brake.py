"""The brake in the loop, on a fake clock: soft and local-storage evictions beyond N a minute
are held back (metric, one report per pod per window) and go once the window has room; hard
thresholds still proceed, one per sync, and count."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from agent.eviction import EvictionBrake, EvictionDecision
from agent.loop import EvictionLoop
from agent.metrics import AgentMetrics
from kube.objects import Pod, Volume
from tests.support.agentloop import Actions, Node, manager, summary
from tests.support.clock import FakeClock
from tests.support.fakenode import MI, ts


class ScratchNode(Node):
    """Every pod has an emptyDir limited to 1Mi holding 2Mi: each one is over its limit."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(dict.fromkeys(names, 10 * MI))
        self.pods = {
            n: Pod(name=n, uid=n, volumes=(Volume("scratch", "emptyDir", size_limit=MI),))
            for n in names
        }

    async def stats(self) -> dict[str, Any]:
        s = summary(1024 * MI, self.usage)
        for entry in s["pods"]:
            entry["volume"] = [{"time": ts(time.time()), "name": "scratch", "usedBytes": 2 * MI}]
        return s


def brake_loop(
    node: Node, clock: FakeClock, limit: int, **fields: Any
) -> tuple[EvictionLoop, Actions, list[tuple[str, str]], AgentMetrics]:
    actions = Actions(node)
    reports: list[tuple[str, str]] = []
    metrics = AgentMetrics()

    def held_back(decision: EvictionDecision, note: str) -> None:
        reports.append((decision.pod.name, note))

    loop = EvictionLoop(
        manager(**fields),
        stats=node.stats,
        pods=node.active,
        actions=actions,
        metrics=metrics,
        clock=clock.now,
        brake=EvictionBrake(limit, clock),
        on_held_back=held_back,
    )
    return loop, actions, reports, metrics


def evicted(actions: Actions) -> list[str]:
    return [name for name, _, _ in actions.calls]


async def test_local_storage_evictions_beyond_the_limit_wait_for_the_window() -> None:
    clock = FakeClock(1000.0)
    node = ScratchNode(["s0", "s1", "s2", "s3"])
    loop, actions, reports, metrics = brake_loop(
        node, clock, 2, evictionHard={"memory.available": "1Mi"}
    )
    await loop.sync_once()
    assert evicted(actions) == ["s0", "s1"]
    assert [name for name, _ in reports] == ["s2", "s3"]
    assert "Eviction held back: 2 evictions in the last 60s" in reports[0][1]
    assert reports[0][1].endswith('Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ')
    clock.step(30)
    await loop.sync_once()
    assert evicted(actions) == ["s0", "s1"]  # still held; reported once per pod per window
    assert len(reports) == 2
    held = metrics.evictions_held_back.labels("emptydirfs.limit")._value.get()
    assert held == 4
    assert metrics.brake_window._value.get() == 2
    clock.step(30)  # the first two are 60 s old
    await loop.sync_once()
    assert evicted(actions) == ["s0", "s1", "s2", "s3"]


async def test_failed_evictions_do_not_use_the_brake() -> None:
    clock = FakeClock(1000.0)
    node = ScratchNode(["s0", "s1", "s2"])
    loop, actions, reports, _ = brake_loop(node, clock, 2, evictionHard={"memory.available": "1Mi"})

    async def refuse(decision: EvictionDecision, *, hard: bool, deadline: float) -> Any:
        from agent.actions.evict import ActionResult

        actions.calls.append((decision.pod.name, hard, 0.0))
        return ActionResult("failed", message="API down")

    actions.execute = refuse  # type: ignore[method-assign]
    await loop.sync_once()
    await loop.sync_once()
    assert evicted(actions) == ["s0", "s1", "s2"] * 2  # every attempt went out
    assert reports == [] and loop.brake is not None and loop.brake.in_window() == 0


async def test_hard_thresholds_proceed_one_per_sync_past_a_full_brake(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(1000.0)
    node = Node({"p0": 300 * MI, "p1": 300 * MI, "p2": 300 * MI})
    loop, actions, reports, _ = brake_loop(
        node, clock, 1, evictionHard={"memory.available": "600Mi"}
    )
    caplog.set_level(logging.WARNING, logger="agent.loop")
    await loop.sync_once()
    assert evicted(actions) == ["p0"]
    clock.step(1)
    await loop.sync_once()  # the window is full: the hard threshold goes anyway, one pod
    assert evicted(actions) == ["p0", "p1"]
    assert reports == []
    assert "eviction brake full, hard threshold proceeds" in caplog.text
    assert loop.brake is not None and loop.brake.in_window() == 2  # forced ones count


async def test_soft_evictions_are_held_while_the_window_is_full() -> None:
    clock = FakeClock(1000.0)
    node = Node({"p0": 300 * MI, "p1": 300 * MI, "p2": 300 * MI})
    loop, actions, reports, _ = brake_loop(
        node,
        clock,
        1,
        evictionHard={"memory.available": "1Mi"},
        evictionSoft={"memory.available": "600Mi"},
        evictionSoftGracePeriod={"memory.available": "1ns"},
    )
    for _ in range(4):
        await loop.sync_once()
        if loop._soft is not None:
            await loop._soft[1]
        time.sleep(0.001)  # fresh stats timestamps (the core drops stale observations)
    assert evicted(actions) == ["p0"]
    assert [name for name, _ in reports] == ["p1"]
    clock.step(60)
    await loop.sync_once()
    if loop._soft is not None:
        await loop._soft[1]
    assert evicted(actions) == ["p0", "p1"]


async def test_zero_means_no_brake() -> None:
    clock = FakeClock(1000.0)
    node = ScratchNode([f"s{i}" for i in range(30)])
    loop, actions, reports, _ = brake_loop(node, clock, 0, evictionHard={"memory.available": "1Mi"})
    await loop.sync_once()
    assert len(evicted(actions)) == 30 and reports == []
