"""Clusters for the tests: a kubesim started, brought to rest, and read.

Two kinds of cluster. A *living* one (``living``) runs kubesim's controllers: an evicted pod's
ReplicaSet or StatefulSet replaces it, the scheduler loop binds the replacement, the kubelet
makes it Ready after ``ready_after`` seconds (× time scale) and the disruption controller reopens
the budget — so what a test sees is what a drain meets in production. A *frozen* one
(``disabled_controllers=FROZEN``) keeps objects as seeded, for what only fault injection or a
pinned budget can produce (``Retry-After``, multi-PDB 500s, a budget held shut).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import kubesim
from kubesim.sim import Simulator
from tests.support.wait import until


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


def pin(
    sim: Simulator,
    name: str,
    allowed: int,
    *,
    namespace: str = "default",
    healthy: int = 3,
    desired: int = 3,
) -> dict[str, Any]:
    """Freeze a PDB's status at ``allowed`` disruptions (observed generation up to date)."""
    current = sim.get("PodDisruptionBudget", namespace, name)
    assert current is not None
    generation = current["metadata"].get("generation", 1)
    return sim.pin_pdb(
        namespace,
        name,
        {
            "observedGeneration": generation,
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": healthy,
        },
    )


def living(
    objs: list[dict[str, Any]], faults: Any = None, *, time_scale: float = 0.01, **kw: Any
) -> Any:
    """A kubesim with every controller running (the default cluster of these tests)."""
    return kubesim.serve(state=objs, faults=faults, time_scale=time_scale, **kw)


def _settled(sim: Simulator) -> bool:
    for kind in ("ReplicaSet", "StatefulSet"):
        for w in sim.list_objects(kind):
            want = (w.get("spec") or {}).get("replicas", 1)
            status = w.get("status") or {}
            if status.get("replicas") != want or status.get("readyReplicas", 0) != want:
                return False
    for ds in sim.list_objects("DaemonSet"):
        status = ds.get("status") or {}
        if status.get("numberReady", 0) != status.get("desiredNumberScheduled", -1):
            return False
    for p in sim.list_objects("PodDisruptionBudget"):
        gen = p["metadata"].get("generation", 1)
        if (p.get("status") or {}).get("observedGeneration") != gen:
            return False
    for p in sim.list_objects("Pod"):
        if p["metadata"].get("deletionTimestamp") or not p["spec"].get("nodeName"):
            return False
    return True


async def settle(sim: Simulator, *, timeout: float = 20.0) -> None:
    """Wait until every workload has its replicas Ready, every budget is computed and no pod
    is unbound or terminating: a cluster at rest, as an operator finds it before a drain."""
    await until(lambda: _settled(sim), timeout=timeout, step=0.02)


def placement(sim: Simulator) -> dict[tuple[str, str, str], int]:
    """Pods per (namespace, app label, node): the end state, whatever replacements are named."""
    out: dict[tuple[str, str, str], int] = {}
    for p in sim.list_objects("Pod"):
        meta = p["metadata"]
        key = (
            meta["namespace"],
            (meta.get("labels") or {}).get("app", ""),
            p["spec"].get("nodeName", ""),
        )
        out[key] = out.get(key, 0) + 1
    return out
