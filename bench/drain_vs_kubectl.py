"""Benchmark: ``evict drain`` against ``kubectl drain`` on identical fresh kubesim clusters.

Each round starts a fresh kubesim per tool (same state, same faults), runs the real command
line as a subprocess (``evict`` from this virtualenv, ``/usr/bin/kubectl``), checks that the node
ended empty, and alternates which tool goes first. Scenarios of issue 8:

(a) 110 pods of a few Deployments (ReplicaSets), no PDB — target ≤ 1.0× kubectl's wall time;
(b) the same pods behind one PDB per ReplicaSet with ``maxUnavailable: 1``; an evicted pod comes
    back on node-2 1 s after it is gone (what its ReplicaSet, the scheduler and a 1 s readiness
    would do; kubesim's ``recreateAfterDelete``) — target ≤ 0.3×: kubectl waits a fixed 5 s
    after every 429;
(c) 1000 pods, 20 ms added to every request, no PDB — within 1.2× of the ideal (one eviction
    round trip plus the deletion time) and no slower than kubectl.

One JSON line per scenario: ``{"bench", "value" (evict's median s), "unit", "anchor" (kubectl's
median s), "ratio", "target", ...}``; (c) adds ``ideal_s`` and ``ratio_to_ideal``.

Run: ``.venv/bin/python bench/drain_vs_kubectl.py [--rounds N] [--quick] [--scenario a,b,c]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import kubesim

ROOT = Path(__file__).resolve().parents[1]
EVICT = str(Path(sys.executable).with_name("evict"))
KUBECTL = "/usr/bin/kubectl" if os.path.exists("/usr/bin/kubectl") else shutil.which("kubectl")
TIME_SCALE = 0.01  # 30 s grace period → 0.3 s


def make_state(pods: int, *, deployments: int, pdb: bool) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": n},
            "status": {
                "capacity": {"cpu": "512", "memory": "2Ti", "pods": "5000"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        for n in ("node-1", "node-2")
    ]
    per = -(-pods // deployments)
    for d in range(deployments):
        app = f"app-{d}"
        replicas = min(per, pods - d * per)
        if replicas <= 0:
            break
        objs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": f"{app}-rs", "namespace": "default", "uid": f"{app}-uid"},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": app}},
                    "template": {
                        "metadata": {"labels": {"app": app}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    },
                },
            }
        )
        if pdb:
            objs.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": app, "namespace": "default"},
                    "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
                }
            )
        objs.extend(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{app}-{i:04d}",
                    "namespace": "default",
                    "labels": {"app": app},
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "ReplicaSet",
                            "name": f"{app}-rs",
                            "uid": f"{app}-uid",
                            "controller": True,
                        }
                    ],
                },
                "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
                "status": {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
            for i in range(replicas)
        )
    return objs


def make_faults(
    state: list[dict[str, Any]], *, recreate_after: float | None, latency: float
) -> dict[str, Any]:
    faults: dict[str, Any] = {}
    if latency:
        faults["latency"] = latency
    if recreate_after is not None:
        faults["pods"] = [
            {
                "ref": f"default/{o['metadata']['name']}",
                "recreateAfterDelete": {"node": "node-2", "after": recreate_after},
            }
            for o in state
            if o["kind"] == "Pod"
        ]
    return faults


async def run_tool(
    tool: str, state: list[dict[str, Any]], faults: dict[str, Any], tmp: Path
) -> float:
    async with kubesim.serve(state=state, faults=faults or None, time_scale=TIME_SCALE) as sim:
        await asyncio.sleep(0.3)  # let the disruption controller compute budgets
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["KUBECONFIG"] = str(sim.kubeconfig_path)
        env["HOME"] = str(tmp)
        binary = EVICT if tool == "evict" else str(KUBECTL)
        args = [binary]
        if tool == "kubectl":
            args.append(f"--cache-dir={tmp / 'cache'}")
        args += ["drain", "node-1", "--ignore-daemonsets", "--timeout=600s"]
        t0 = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env
        )
        _, err = await proc.communicate()
        elapsed = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"{tool} drain failed ({proc.returncode}): {err.decode()[-2000:]}")
        left = [p for p in sim.list_objects("Pod") if p["spec"].get("nodeName") == "node-1"]
        if left:
            raise SystemExit(f"{tool} drain left {len(left)} pods on node-1")
        return elapsed


async def ideal_seconds(state: list[dict[str, Any]], faults: dict[str, Any]) -> float:
    """One eviction round trip (median of a few, through kubernetes-asyncio) + deletion time."""
    from evictor.client import Evictor

    pods = [o for o in state if o["kind"] == "Pod"][:5]
    async with kubesim.serve(state=state, faults=faults or None, time_scale=TIME_SCALE) as sim:
        api = sim.api_client()
        try:
            ev = Evictor(api)
            await ev.eviction_version()
            trips = []
            for pod in pods:
                t0 = time.perf_counter()
                await ev.evict("default", pod["metadata"]["name"], max_attempts=1)
                trips.append(time.perf_counter() - t0)
            await ev.close()
        finally:
            await api.close()
    return statistics.median(trips) + 30 * TIME_SCALE


SCENARIOS: dict[str, dict[str, Any]] = {
    "a": {"pods": 110, "deployments": 5, "pdb": False, "recreate": None, "latency": 0.0,
          "target": 1.0, "name": "a_110_pods_no_pdb"},
    "b": {"pods": 110, "deployments": 5, "pdb": True, "recreate": 1.0, "latency": 0.0,
          "target": 0.3, "name": "b_110_pods_pdb_max_unavailable_1"},
    "c": {"pods": 1000, "deployments": 10, "pdb": False, "recreate": None, "latency": 0.02,
          "target": 1.0, "name": "c_1000_pods_20ms_latency"},
}  # fmt: skip


async def bench(key: str, rounds: int, quick: bool) -> dict[str, Any]:
    sc = SCENARIOS[key]
    pods = sc["pods"] if not quick else max(10, sc["pods"] // 10)
    state = make_state(pods, deployments=sc["deployments"], pdb=sc["pdb"])
    faults = make_faults(state, recreate_after=sc["recreate"], latency=sc["latency"])
    times: dict[str, list[float]] = {"evict": [], "kubectl": []}
    with tempfile.TemporaryDirectory(prefix="drain-bench-") as tmpdir:
        tmp = Path(tmpdir)
        for r in range(rounds):
            order = ("evict", "kubectl") if r % 2 == 0 else ("kubectl", "evict")
            for tool in order:
                times[tool].append(await run_tool(tool, state, faults, tmp))
    ev = statistics.median(times["evict"])
    kc = statistics.median(times["kubectl"])
    line: dict[str, Any] = {
        "bench": f"drain_vs_kubectl.{sc['name']}",
        "value": round(ev, 3),
        "unit": "s",
        "anchor": round(kc, 3),
        "ratio": round(ev / kc, 3),
        "target": f"<= {sc['target']}",
        "pods": pods,
        "rounds": rounds,
        "evict_s": [round(t, 3) for t in times["evict"]],
        "kubectl_s": [round(t, 3) for t in times["kubectl"]],
    }
    if key == "c":
        ideal = await ideal_seconds(state, faults)
        line["ideal_s"] = round(ideal, 3)
        line["ratio_to_ideal"] = round(ev / ideal, 3)
        line["target"] = "<= 1.2 x ideal and <= 1.0 x kubectl"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a tenth of the pods, one round")
    parser.add_argument("--scenario", default="a,b,c", help="comma-separated: a, b, c")
    args = parser.parse_args()
    if KUBECTL is None:
        raise SystemExit("no kubectl binary: this benchmark compares against kubectl drain")
    rounds = 1 if args.quick else args.rounds
    for key in args.scenario.split(","):
        line = asyncio.run(bench(key.strip(), rounds, args.quick))
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
