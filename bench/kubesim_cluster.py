"""Benchmark: kubesim as a living cluster — a Deployment scaled up, scheduled, bound and Ready.

``loop_bound``: replicas divided by the wall time from the scale request to the last bind
(``run_cluster``), against kube-scheduler's SchedulingBasic floor (680 pods/s, Go, 16 workers)
as the anchor; the target is 300 pods/s. Beside it ``schedule_one`` alone on the same cluster
(``run_schedule_one``), and how the loop's rate changes from 1000 pods on 100 nodes to 5000 on
500 (``loop_rate_large_over_small``). Prints one JSON object per line.
Run: ``.venv/bin/python bench/kubesim_cluster.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import aiohttp

import kubesim
from kube.objects import Node, Pod
from kubesim.scheduling import SchedulerLoop
from kubesim.sim import Simulator
from scheduler.plugins.registry import default_framework
from scheduler.schedule import schedule_one
from scheduler.snapshot import Snapshot

ANCHOR_PODS_PER_SECOND = 680.0  # SchedulingBasic/5000Nodes_10000Pods floor
TARGET_PODS_PER_SECOND = 300.0
SCALE_PATH = "/apis/apps/v1/namespaces/default/deployments/web/scale"


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


def deployment_manifest() -> dict[str, Any]:
    template = pod_template()
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": template["spec"]},
        },
    }


async def scale(sim: Simulator, replicas: int) -> None:
    """``kubectl scale deployment/web --replicas=N``: a merge patch of the scale subresource."""
    async with (
        aiohttp.ClientSession() as session,
        session.patch(
            sim.url + SCALE_PATH,
            data=json.dumps({"spec": {"replicas": replicas}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ) as resp,
    ):
        if resp.status != 200:
            raise RuntimeError(f"scale: {resp.status} {await resp.text()}")


def _rolled_out(sim: Simulator, replicas: int) -> bool:
    """What ``kubectl rollout status`` waits for: the Deployment's status says all are ready."""
    dep = sim.store.get("deployments", ("default", "web")) or {}
    status = dep.get("status") or {}
    return bool(
        status.get("observedGeneration") == dep["metadata"].get("generation")
        and status.get("updatedReplicas") == replicas
        and status.get("availableReplicas") == replicas
    )


def _ready(pod: dict[str, Any]) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


async def run_cluster(nodes: int, replicas: int) -> dict[str, Any]:
    """A Deployment ``web`` (one container, 100m CPU / 128Mi) with 0 replicas on ``nodes``
    nodes (4 CPU, 16Gi, 110 pods each), scaled to ``replicas`` as ``kubectl scale`` does — one
    ``PATCH`` of ``deployments/web/scale`` over HTTP. The cluster does the rest, each part
    through the store and its watch as in a control plane: the Deployment controller resizes
    its ReplicaSet, the ReplicaSet controller creates the pods (500 per sync, names generated
    by the API server), the scheduler loop binds them through ``pods/binding`` and the kubelet
    starts them and makes them Ready (ready-after 0) — everything in one event loop: the
    controllers' creates, watch fan-out, the loop's snapshot upkeep, ``schedule_one``, the
    binding write, the ``Scheduled`` event and the kubelet's status writes. Measured: the
    rate to the last bind, and the time until every pod exists, is bound, and is Ready."""
    state = [node_manifest(i) for i in range(nodes)] + [deployment_manifest()]
    async with kubesim.serve(state=state, ready_after=0) as sim:
        loop = sim.find_controller(SchedulerLoop)
        assert loop is not None
        # The Deployment's (empty) ReplicaSet exists before the clock starts.
        while not sim.store.objects("replicasets"):
            await asyncio.sleep(0.01)
        await loop.wait_idle()
        pods = sim.store.objects("pods")
        # Creation and readiness are counted from the watch, not by re-reading every pod.
        watch = sim.store.subscribe("pods")
        ready: set[tuple[str, str]] = set()
        began = time.perf_counter()
        await scale(sim, replicas)
        created_at = bound_at = ready_at = rolled_out_at = 0.0
        deadline = began + 600.0
        while time.perf_counter() < deadline:
            while not watch.queue.empty():
                ev = watch.queue.get_nowait()
                if ev.type != "DELETED" and _ready(ev.obj):
                    ready.add(ev.key)
            now = time.perf_counter()
            if not created_at and len(pods) >= replicas:
                created_at = now
            if not bound_at and loop.bound >= replicas:
                bound_at = now
            if not ready_at and len(ready) >= replicas:
                ready_at = now
            if ready_at and _rolled_out(sim, replicas):
                rolled_out_at = now
                break
            await asyncio.sleep(0.005)
        sim.store.unsubscribe(watch)
        if not rolled_out_at:
            raise RuntimeError(
                f"{len(pods)} pods created, {loop.bound}/{replicas} bound, {len(ready)} Ready"
            )
        placed = {str(p["spec"].get("nodeName")) for p in pods.values()}
        return {
            "bind_seconds": bound_at - began,
            "create_seconds": created_at - began,
            "ready_seconds": ready_at - began,
            "nodes_used": len(placed),
            "rollout_seconds": rolled_out_at - began,
        }


def run_schedule_one(nodes: int, replicas: int) -> float:
    """``schedule_one`` + ``bind_pod`` alone, same nodes and pods (a ``Snapshot`` bound with
    ``Snapshot.bind_pod``): the cost of the decision without the API; returns pods/s."""
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
                all_created_seconds=round(cluster["create_seconds"], 3),
                nodes_used=cluster["nodes_used"],
            )
        )
        print(_line(f"{name}/schedule_one", decision_rate, "pods/s", ANCHOR_PODS_PER_SECOND))
        print(_line(f"{name}/all_bound", cluster["bind_seconds"], "s", None))
        print(_line(f"{name}/all_ready", cluster["ready_seconds"], "s", None, ready_after=0))
        print(_line(f"{name}/rolled_out", cluster["rollout_seconds"], "s", None))
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
