"""examples/kubesim-cluster.yaml comes alive: every workload reaches Ready, budgets open.

Until the scheduler loop is merged this test binds pods itself (``living.run_binder``, a
stand-in for ``pods/binding``); DaemonSet pods need no binder, their controller places them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubesim
from kubesim.sim import Simulator
from tests.support.living import is_ready
from tests.support.wait import until

CLUSTER = Path(__file__).resolve().parents[3] / "examples" / "kubesim-cluster.yaml"
NODES = ["worker-1", "worker-2", "worker-3"]


def status(sim: Simulator, kind: str, namespace: str, name: str) -> dict[str, Any]:
    obj = sim.get(kind, namespace, name)
    assert obj is not None, f"{kind} {namespace}/{name} missing"
    out: dict[str, Any] = obj.get("status") or {}
    return out


def all_ready(sim: Simulator) -> bool:
    web = status(sim, "Deployment", "default", "web")
    api = status(sim, "Deployment", "default", "api")
    db = status(sim, "StatefulSet", "default", "db")
    ds = status(sim, "DaemonSet", "kube-system", "node-exporter")
    return (
        web.get("availableReplicas") == 3
        and api.get("availableReplicas") == 2
        and db.get("readyReplicas") == 2
        and ds.get("numberReady") == 3
    )


def open_budget(sim: Simulator, name: str) -> dict[str, Any] | None:
    """The budget's status once it allows exactly one disruption (both budgets' answer when
    every pod is Ready), else None."""
    pdb = status(sim, "PodDisruptionBudget", "default", name)
    return pdb if pdb.get("disruptionsAllowed") == 1 else None


async def test_living_cluster_reaches_ready() -> None:
    async with kubesim.serve(state=CLUSTER, time_scale=0.02) as sim:
        await until(lambda: all_ready(sim), timeout=10.0, what="every workload Ready")
        pods = sim.list_objects("Pod")
        assert len(pods) == 3 + 2 + 2 + 3
        assert all(p["status"]["phase"] == "Running" and is_ready(p) for p in pods)
        assert len({p["status"]["podIP"] for p in pods}) == len(pods)
        exporters = [p for p in pods if p["metadata"]["namespace"] == "kube-system"]
        assert sorted(p["spec"]["nodeName"] for p in exporters) == NODES
        # The disruption controller recomputes each budget from pod events on its own loop, so
        # a workload's status can say Ready before its budget has counted the last pod: wait
        # for each budget to open, then check what it counted.
        web_pdb = await until(lambda: open_budget(sim, "web"), what="web budget open")
        assert (web_pdb["currentHealthy"], web_pdb["desiredHealthy"]) == (3, 2)
        api_pdb = await until(lambda: open_budget(sim, "api"), what="api budget open")
        assert (api_pdb["currentHealthy"], api_pdb["expectedPods"]) == (2, 2)
        web = [p for p in pods if p["metadata"].get("labels", {}).get("app") == "web"]
        assert {p["spec"]["priority"] for p in web} == {100000}
        leases = sim.list_objects("Lease", "kube-node-lease")
        assert sorted(lz["metadata"]["name"] for lz in leases) == NODES
