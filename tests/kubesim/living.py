"""Helpers for tests of the living cluster: waiting for a state, listing and reading pods."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

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


def set_unschedulable(sim: Simulator, name: str, value: bool) -> None:
    """Cordon (or uncordon) a node, as ``kubectl cordon`` does."""
    assert sim.get("Node", None, name) is not None
    sim.update("Node", None, name, lambda n: n.setdefault("spec", {}).update(unschedulable=value))
