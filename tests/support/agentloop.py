"""The eviction loop alone: a fake node (its Summary and pods) and fake actions that record
what the loop asked, and an eviction manager from config fields."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agent.actions.evict import ActionResult
from agent.config import load_config
from agent.daemon import WallClock
from agent.eviction import EvictionDecision, EvictionManager
from kube.objects import Pod
from tests.support.fakenode import MI, ts


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
