"""Builders for kubesim states, and ``evict`` run as a real subprocess against a kubesim.

Two kinds of cluster. A *living* one (``living``) runs kubesim's controllers: an evicted pod's
ReplicaSet or StatefulSet replaces it, the scheduler loop binds the replacement, the kubelet
makes it Ready after ``ready_after`` seconds (× time scale) and the disruption controller reopens
the budget — so what a test sees is what a drain meets in production. A *frozen* one
(``disabled_controllers=FROZEN``) keeps objects as seeded, for what only fault injection or a
pinned budget can produce (``Retry-After``, multi-PDB 500s, a budget held shut).

Pods seeded here carry an owner reference with the owner's UID, so the living controllers count
them as their own (no adoption, no surplus replicas) and their names stay predictable.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubesim
from kubesim.sim import Simulator
from tests.support.wait import until

EVICT = str(Path(sys.executable).with_name("evict"))


def node(
    name: str, *, unschedulable: bool = False, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"unschedulable": unschedulable} if unschedulable else {},
        "status": {
            "capacity": {"cpu": "64", "memory": "256Gi", "pods": "500"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def replicaset(name: str, *, namespace: str = "default", replicas: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "uid": f"{name}-uid"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def statefulset(
    name: str, *, namespace: str = "default", replicas: int = 3, parallel: bool = False
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": name,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "postgres"}]},
        },
    }
    if parallel:
        spec["podManagementPolicy"] = "Parallel"
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace, "uid": f"{name}-uid"},
        "spec": spec,
    }


def daemonset(name: str, *, namespace: str = "kube-system") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "uid": f"{name}-uid"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "agent"}]},
            },
        },
    }


def pod(
    name: str,
    *,
    namespace: str = "default",
    node_name: str = "node-1",
    app: str | None = None,
    owner: tuple[str, str, str] | None = ("apps/v1", "ReplicaSet", "web"),
    phase: str = "Running",
    ready: bool = True,
    empty_dir: bool = False,
    annotations: dict[str, str] | None = None,
    priority: int | None = None,
    grace: int | None = None,
    uid: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or str(uuid.uuid4()),
        "labels": {"app": app or (owner[2] if owner else name)},
    }
    if owner is not None:
        api_version, kind, owner_name = owner
        meta["ownerReferences"] = [
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": owner_name,
                "uid": f"{owner_name}-uid",
                "controller": True,
            }
        ]
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"nodeName": node_name, "containers": [{"name": "c", "image": "x"}]}
    if empty_dir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    if priority is not None:
        spec["priority"] = priority
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions},
    }


def pdb(
    name: str,
    *,
    namespace: str = "default",
    app: str | None = None,
    min_available: int | None = None,
    max_unavailable: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": app or name}}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


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


def set_unschedulable(sim: Simulator, name: str, value: bool) -> None:
    assert sim.get("Node", None, name) is not None
    sim.update(
        "Node", None, name, lambda node: node.setdefault("spec", {}).update(unschedulable=value)
    )


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


@dataclass
class Evict:
    """``evict`` as users run it: a subprocess with KUBECONFIG pointing at the kubesim."""

    sim: Simulator

    @staticmethod
    def binary() -> str:
        return EVICT

    async def __call__(self, *args: str, timeout: float = 60) -> tuple[int, str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["KUBECONFIG"] = str(self.sim.kubeconfig_path)
        proc = await asyncio.create_subprocess_exec(
            EVICT,
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
        return proc.returncode or 0, out.decode(), err.decode()


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


class FakeClock:
    """Time that moves only when the test says so: ``Evictor(clock=c.now, sleep=c.sleep)``.

    ``sleep`` records what was asked (``requested``) and returns once ``advance`` has moved the
    clock past its end, so a test can hold a retry on a 10 s ``Retry-After`` for as long as it
    likes, check that nothing went out meanwhile, then let it go — without waiting 10 s.
    """

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.time = start
        self.requested: list[float] = []
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        self.requested.append(seconds)
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (self.time + seconds, fut)
        self._sleepers.append(entry)
        try:
            await (fut if seconds > 0 else asyncio.sleep(0))
        finally:
            self._sleepers.remove(entry)

    @property
    def sleeping(self) -> int:
        return len(self._sleepers)

    async def asleep(self, count: int = 1) -> None:
        """Until ``count`` sleeps are pending (the code under test is waiting on this clock)."""
        await until(lambda: len(self._sleepers) == count, timeout=30.0)

    def advance(self, seconds: float) -> None:
        self.time += seconds
        for due, fut in self._sleepers:
            if due <= self.time and not fut.done():
                fut.set_result(None)
