"""Helpers for tests of the living cluster: listing and reading pods."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesim.sim import Simulator


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
