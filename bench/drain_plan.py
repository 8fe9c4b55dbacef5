"""Benchmark: ``evict drain --plan`` of a 1 000-pod, 100-node cluster, against a 2 s target.

One JSON line per figure, each the median of ``--rounds`` (``run``): ``{"bench", "value" (wall
seconds), "unit", "anchor" (2 s), "ratio"}`` — a ratio below 1 meets the target — and, for the
command, ``cpu_seconds``: its own user and system time, which waiting on a loaded machine does
not inflate.

Run: ``.venv/bin/python bench/drain_plan.py [--rounds N] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import kubesim
from evictor.clusterread import read_cluster
from evictor.plan.search import best_plan
from evictor.plan.types import PlanOptions

ANCHOR = 2.0  # seconds: the plan of a 1 000-pod, 100-node cluster
EVICT = str(Path(sys.executable).with_name("evict"))


def make_state(nodes: int, workloads: int, per: int) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "important"},
            "value": 1000,
        }
    ]
    objs.extend(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"node-{n:03d}",
                "labels": {"topology.kubernetes.io/zone": f"zone-{n % 3}"},
            },
            "status": {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
        }
        for n in range(nodes)
    )
    for w in range(workloads):
        name = f"app-{w:02d}"
        spec: dict[str, Any] = {
            "terminationGracePeriodSeconds": 30,
            "containers": [
                {
                    "name": "c",
                    "image": f"registry/app-{w}:1",
                    "resources": {"requests": {"cpu": f"{100 * (1 + w % 10)}m", "memory": "256Mi"}},
                }
            ],
        }
        if w % 5 == 0:
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": name}},
                }
            ]
        if w % 5 == 1:
            spec["priorityClassName"] = "important"
        objs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {
                    "replicas": per,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
                },
            }
        )
        if w % 2 == 0:
            objs.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {
                        "maxUnavailable": 1 if w % 4 == 0 else "25%",
                        "selector": {"matchLabels": {"app": name}},
                    },
                }
            )
    return objs


async def settled(sim: Any, pods: int, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = sim.list_objects("Pod")
        bound = sum(1 for p in listed if (p.get("spec") or {}).get("nodeName"))
        budgets = sim.list_objects("PodDisruptionBudget")
        computed = all((b.get("status") or {}).get("observedGeneration") for b in budgets)
        if len(listed) == pods and bound == pods and computed:
            return
        await asyncio.sleep(0.2)
    raise TimeoutError("the cluster did not settle")


async def cli(sim: Any, *args: str) -> tuple[float, float, dict[str, Any]]:
    """Wall and CPU seconds (user + system) of one ``evict drain --plan`` process, and its plan.

    The CPU figure does not count the time the process waits for the server or for a core, so
    it is the steadier one on a busy machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["KUBECONFIG"] = str(sim.kubeconfig_path)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        EVICT, "drain", *args, "--plan", "-o", "json", stdout=asyncio.subprocess.PIPE, env=env
    )
    out, _ = await proc.communicate()
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"evict exited {proc.returncode}")
    return seconds, cpu, json.loads(out)


def line(bench: str, value: float, **extra: Any) -> str:
    return json.dumps(
        {
            "bench": bench,
            "value": round(value, 3),
            "unit": "s",
            "anchor": ANCHOR,
            "ratio": round(value / ANCHOR, 3),
            **extra,
        }
    )


async def run(nodes: int, workloads: int, per: int, rounds: int) -> None:
    """On a living kubesim (``make_state``: 100 nodes in three zones; 50 ReplicaSets of 20 pods
    of 100 m to 1 CPU, half of them under a PodDisruptionBudget of ``maxUnavailable: 1`` or
    ``25%``, a fifth spread across zones, a fifth of a higher PriorityClass; the scheduler loop
    places them all):

    * ``drain_plan_cli_1_node``: the whole command as a user runs it — ``evict drain NODE
      --plan -o json`` in a fresh process: start-up, the reads (every list of the cluster) and
      the play;
    * ``drain_plan_core_1_node``: the play alone (``evictor.plan.search.best_plan``) on what
      was read;
    * ``drain_plan_cli_3_nodes_parallel``: three nodes with ``--parallel 3`` (the plan plays the
      3! orders and keeps the best), end to end.
    """
    pods = workloads * per
    # time scale 1: the kubelets of 100 nodes renew their leases every 10 s, not 200 times a
    # second, and the server answers the plan instead (the plan itself waits for nothing)
    async with kubesim.serve(state=make_state(nodes, workloads, per), time_scale=1.0) as sim:
        await settled(sim, pods)
        busiest = sorted(
            {p["spec"]["nodeName"] for p in sim.list_objects("Pod")},
            key=lambda n: -sum(1 for p in sim.list_objects("Pod") if p["spec"]["nodeName"] == n),
        )
        one, three = busiest[:1], busiest[:3]
        times: list[float] = []
        cpus: list[float] = []
        plan: dict[str, Any] = {}
        for _ in range(rounds):
            seconds, cpu, plan = await cli(sim, *one)
            times.append(seconds)
            cpus.append(cpu)
        evicted = sum(1 for n in plan["nodes"] for p in n["pods"] if p["round"] is not None)
        print(
            line(
                f"drain_plan_cli_1_node_{pods}_pods_{nodes}_nodes",
                statistics.median(times),
                cpu_seconds=round(statistics.median(cpus), 3),
                pods_on_node=len(plan["nodes"][0]["pods"]),
                evicted=evicted,
                finishes=plan["finishes"],
            )
        )
        async with sim.api_client() as api:
            view = await read_cluster(api)
        core: list[float] = []
        for _ in range(rounds):
            start = time.perf_counter()
            best_plan(view, one, PlanOptions())
            core.append(time.perf_counter() - start)
        print(line(f"drain_plan_core_1_node_{pods}_pods_{nodes}_nodes", statistics.median(core)))
        times, cpus = [], []
        for _ in range(rounds):
            seconds, cpu, plan = await cli(sim, *three, "--parallel=3")
            times.append(seconds)
            cpus.append(cpu)
        print(
            line(
                f"drain_plan_cli_3_nodes_parallel_{pods}_pods_{nodes}_nodes",
                statistics.median(times),
                cpu_seconds=round(statistics.median(cpus), 3),
                orders_tried=plan["ordersTried"],
                finishes=plan["finishes"],
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a small smoke size, one round")
    args = parser.parse_args()
    if args.quick:
        asyncio.run(run(10, 5, 4, 1))
    else:
        asyncio.run(run(100, 50, 20, args.rounds))


if __name__ == "__main__":
    main()
