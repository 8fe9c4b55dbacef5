"""Benchmark: kubesim as a living cluster — a workload scaled up, scheduled, bound and Ready.

A Deployment-like set of pods (one template, generated names, ``app: web``) goes from 0 to
``replicas`` on ``nodes`` nodes (4 CPU, 16Gi, 110 pods each) while kubesim runs its scheduler
loop and kubelet. The pods are created in process through the REST layer (admission,
validation, watch events, as an API create), in growing batches as the ReplicaSet
controller's slow start creates them; ``create_replicas`` is the single place to swap for a
Deployment ``scale`` once kubesim runs workload controllers. Measured:

* ``bound pods/s``: replicas divided by the wall time from the first create to the last bind
  — everything in one event loop: creates, watch fan-out, the loop's snapshot upkeep,
  ``schedule_one``, the binding write, the ``Scheduled`` event and the kubelet's status
  write. The anchor is kube-scheduler's SchedulingBasic floor (680 pods/s, Go, 16 workers);
  the issue's target is 300 pods/s;
* beside it, ``schedule_one`` alone on the same cluster (a ``Snapshot`` of the same nodes, the
  same pods, bound with ``Snapshot.bind_pod``): the cost of the decision without the API;
* the time until every pod is bound and until every pod is Ready (the kubelet's ready delay
  is 0 here).

Sizes: 1000 replicas on 100 nodes and 5000 on 500; the last line gives how the loop's rate
changes from the small to the large size. Prints one JSON object per line.

Run: ``.venv/bin/python bench/kubesim_cluster.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import kubesim
from kubesim.apiserver.status import StatusError
from kubesim.scheduler_loop import find_scheduler_loop
from kubesim.sim import Simulator
from scheduler.filters import default_framework
from scheduler.objects import Node, Pod
from scheduler.schedule import schedule_one
from scheduler.snapshot import Snapshot

ANCHOR_PODS_PER_SECOND = 680.0  # SchedulingBasic/5000Nodes_10000Pods floor
TARGET_PODS_PER_SECOND = 300.0
SLOW_START_INITIAL = 1  # controller.SlowStartInitialBatchSize
MAX_BATCH = 500  # a ReplicaSet creates at most burstReplicas (500) pods per sync


def node_manifest(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{i:04d}",
            "labels": {
                "kubernetes.io/hostname": f"node-{i:04d}",
                "topology.kubernetes.io/zone": f"zone-{i % 10}",
            },
        },
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 250}.{i % 250 + 1}"}],
        },
    }


def pod_template() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "web-", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "registry.k8s.io/pause:3.10.1",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ]
        },
    }


async def create_replicas(sim: Simulator, replicas: int) -> None:
    """0 → ``replicas`` pods in slow-start batches (1, 2, 4, … capped at 500), yielding to the
    event loop between batches as the ReplicaSet controller's creates interleave with the
    scheduler. Swap for a Deployment ``scale`` once workload controllers exist."""
    rt = sim.registry.for_kind("v1", "Pod")
    assert rt is not None
    template = pod_template()
    created = 0
    batch = SLOW_START_INITIAL
    while created < replicas:
        n = min(batch, replicas - created, MAX_BATCH)
        for _ in range(n):
            for _attempt in range(8):
                try:
                    sim.rest.create(rt, "default", template)
                    break
                except StatusError as err:
                    # A generated name taken already (1 in 14 M per pod): create again, as
                    # kube-apiserver's RetryGenerateName (1.32) and the controllers do.
                    if err.code != 409:
                        raise
        created += n
        batch *= 2
        await asyncio.sleep(0)


def _ready(pod: dict[str, Any]) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


async def run_cluster(nodes: int, replicas: int) -> dict[str, Any]:
    state = [node_manifest(i) for i in range(nodes)]
    async with kubesim.serve(state=state) as sim:
        loop = find_scheduler_loop(sim)
        assert loop is not None
        await loop.wait_idle()
        pods = sim.store.objects("pods")
        # Readiness is counted from the watch, not by re-reading every pod while waiting.
        watch = sim.store.subscribe("pods")
        ready: set[tuple[str, str]] = set()
        began = time.perf_counter()
        await create_replicas(sim, replicas)
        created = time.perf_counter()
        bound_at = ready_at = 0.0
        deadline = began + 600.0
        while time.perf_counter() < deadline:
            while not watch.queue.empty():
                ev = watch.queue.get_nowait()
                if ev.type != "DELETED" and _ready(ev.obj):
                    ready.add(ev.key)
            now = time.perf_counter()
            if not bound_at and loop.bound >= replicas:
                bound_at = now
            if len(ready) >= replicas:
                ready_at = now
                break
            await asyncio.sleep(0.005)
        sim.store.unsubscribe(watch)
        if not ready_at:
            raise RuntimeError(f"{loop.bound}/{replicas} pods bound, {len(ready)} Ready in time")
        placed = {str(p["spec"].get("nodeName")) for p in pods.values()}
        return {
            "bind_seconds": bound_at - began,
            "create_seconds": created - began,
            "ready_seconds": ready_at - began,
            "nodes_used": len(placed),
        }


def run_schedule_one(nodes: int, replicas: int) -> float:
    """``schedule_one`` + ``bind_pod`` alone, same nodes and pods; returns pods/s."""
    snapshot = Snapshot.from_objects([Node.from_dict(node_manifest(i)) for i in range(nodes)])
    template = Pod.from_dict({**pod_template(), "metadata": {"name": "t", "namespace": "default"}})
    pods = [template.with_changes(name=f"web-{i}") for i in range(replicas)]
    framework = default_framework()
    start = 0
    began = time.perf_counter()
    for pod in pods:
        result = schedule_one(pod, snapshot, framework=framework, start_index=start)
        snapshot.bind_pod(pod, result.suggested_host)
        start = result.next_start_index
    return replicas / (time.perf_counter() - began)


def _line(bench: str, value: float, unit: str, anchor: float | None, **extra: Any) -> str:
    return json.dumps(
        {
            "bench": bench,
            "value": round(value, 3 if unit == "s" else 1),
            "unit": unit,
            "anchor": anchor,
            "ratio": round(value / anchor, 3) if anchor else None,
            **extra,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke-test size")
    args = parser.parse_args()
    sizes = [(20, 200)] if args.quick else [(100, 1000), (500, 5000)]
    rates: list[float] = []
    for nodes, replicas in sizes:
        name = f"kubesim_cluster/{replicas}Pods_{nodes}Nodes"
        cluster = asyncio.run(run_cluster(nodes, replicas))
        rate = replicas / cluster["bind_seconds"]
        rates.append(rate)
        decision_rate = run_schedule_one(nodes, replicas)
        print(
            _line(
                f"{name}/loop_bound",
                rate,
                "pods/s",
                ANCHOR_PODS_PER_SECOND,
                target=TARGET_PODS_PER_SECOND,
                schedule_one_pods_per_second=round(decision_rate, 1),
                loop_share_of_schedule_one=round(rate / decision_rate, 3),
                create_seconds=round(cluster["create_seconds"], 3),
                nodes_used=cluster["nodes_used"],
            )
        )
        print(_line(f"{name}/schedule_one", decision_rate, "pods/s", ANCHOR_PODS_PER_SECOND))
        print(_line(f"{name}/all_bound", cluster["bind_seconds"], "s", None))
        print(_line(f"{name}/all_ready", cluster["ready_seconds"], "s", None, ready_after=0))
    if len(rates) > 1:
        print(
            _line(
                "kubesim_cluster/loop_rate_large_over_small",
                rates[-1] / rates[0],
                "ratio",
                None,
                sizes=[f"{r}Pods_{n}Nodes" for n, r in sizes],
            )
        )


if __name__ == "__main__":
    main()
