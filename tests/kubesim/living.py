"""Helpers for tests of the living cluster: waiting for a state, and a stand-in binder.

``bind_pending`` stands in for the scheduler loop in tests that only need pods placed: it
writes ``spec.nodeName`` the way a ``pods/binding`` would, round-robin over the given nodes.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kubesim.apiserver.store import clone
from kubesim.sim import Simulator

T = TypeVar("T")


async def eventually(
    check: Callable[[], T | None], *, timeout: float = 5.0, what: str = "condition"
) -> T:
    """Poll ``check`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")


def pods(sim: Simulator, namespace: str = "default", **labels: str) -> list[dict[str, Any]]:
    return [
        p
        for p in sim.list_objects("Pod", namespace)
        if all((p["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())
    ]


def live(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def is_ready(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


_turn = itertools.count()


def bind_pending(sim: Simulator, nodes: Sequence[str]) -> int:
    """Bind every unbound pod to the given nodes in turn, skipping cordoned ones (a test
    stand-in for the scheduler loop's ``pods/binding``)."""
    bound = 0
    for key, pod in list(sim.store.objects("pods").items()):
        if (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get("deletionTimestamp"):
            continue
        usable = [
            n
            for n in nodes
            if not ((sim.store.get("nodes", ("", n)) or {}).get("spec") or {}).get("unschedulable")
        ]
        if not usable:
            return bound
        new = clone(pod)
        new["spec"]["nodeName"] = usable[next(_turn) % len(usable)]
        rv = sim.store.next_rv()
        new["metadata"]["resourceVersion"] = str(rv)
        sim.store.put("pods", key, new, rv=rv)
        bound += 1
    return bound


async def binder(sim: Simulator, nodes: Sequence[str]) -> None:
    """Run ``bind_pending`` continuously (cancel the task to stop it)."""
    while True:
        bind_pending(sim, nodes)
        await asyncio.sleep(0.01)


def run_binder(sim: Simulator, nodes: Sequence[str]) -> asyncio.Task[None]:
    return asyncio.create_task(binder(sim, nodes))
