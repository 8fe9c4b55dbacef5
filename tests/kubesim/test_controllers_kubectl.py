"""kubectl against the living cluster: apply, scale, rollout status, get pods, delete.

Skipped only when no kubectl binary exists; runs for every installed kubectl (see
``test_kubectl.py``). Pods are bound by a test stand-in for the scheduler loop.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import kubesim

from .living import eventually, pods
from .test_kubectl import BINARIES, Kubectl

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(not shutil.which("kubectl"), reason="no kubectl binary installed"),
]

STATE = """
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
"""

APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {kubesim.io/ready-after: "150"}
    spec:
      terminationGracePeriodSeconds: 5
      containers: [{name: nginx, image: "nginx:1.27"}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: postgres, image: "postgres:16"}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "agent:1"}]
"""


@pytest.fixture(params=BINARIES or ["kubectl"], ids=lambda b: Path(b).name)
async def kubectl(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubesim.serve(state=STATE, time_scale=0.01) as sim:
        yield Kubectl(request.param, sim, tmp_path)


async def test_apply_scale_rollout_status_and_get_pods(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(APP)
    _, out, _ = await kubectl("apply", "-f", str(manifest))
    assert "deployment.apps/web created" in out
    assert "statefulset.apps/db created" in out
    assert "daemonset.apps/agent created" in out
    # Ready after 150 s × 0.01: rollout status waits, then reports success.
    _, out, _ = await kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    assert 'deployment "web" successfully rolled out' in out
    assert "Waiting for deployment" in out  # it did have to wait for readiness
    _, out, _ = await kubectl("rollout", "status", "statefulset/db", "--timeout=20s")
    # The defaulted updateStrategy has rollingUpdate.partition 0, so kubectl reports the
    # partitioned form, as against a real cluster.
    assert "partitioned roll out complete: 2 new pods have been updated..." in out
    _, out, _ = await kubectl("rollout", "status", "daemonset/agent", "-n", "kube-system")
    assert 'daemon set "agent" successfully rolled out' in out

    _, out, _ = await kubectl("scale", "deployment/web", "--replicas=4")
    assert out.strip() == "deployment.apps/web scaled"
    _, out, _ = await kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    assert 'deployment "web" successfully rolled out' in out
    _, out, _ = await kubectl("get", "pods", "-l", "app=web", "--no-headers")
    rows = [line.split() for line in out.strip().splitlines()]
    assert len(rows) == 4
    assert all(r[1:3] == ["1/1", "Running"] for r in rows), rows
    _, out, _ = await kubectl("get", "deployment", "web", "--no-headers")
    assert out.split()[1:4] == ["4/4", "4", "4"]
    _, out, _ = await kubectl("get", "daemonset", "agent", "-n", "kube-system", "--no-headers")
    assert out.split()[1:6] == ["2", "2", "2", "2", "2"]
    _, out, _ = await kubectl("get", "statefulset", "db", "--no-headers")
    assert out.split()[1] == "2/2"
    _, out, _ = await kubectl("get", "lease", "-n", "kube-node-lease", "--no-headers")
    assert [r.split()[:2] for r in out.strip().splitlines()] == [
        ["node-1", "node-1"],
        ["node-2", "node-2"],
    ]

    _, out, _ = await kubectl("scale", "statefulset", "db", "--replicas=1")
    assert out.strip() == "statefulset.apps/db scaled"
    await eventually(
        lambda: [p["metadata"]["name"] for p in pods(kubectl.sim, app="db")] == ["db-0"],
        timeout=10.0,
        what="db-1 removed",
    )


async def test_delete_deployment_cleans_up(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(APP.split("---", maxsplit=1)[0])
    await kubectl("apply", "-f", str(manifest))
    await kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    _, out, _ = await kubectl("delete", "deployment", "web")
    assert 'deployment.apps "web" deleted' in out
    await eventually(
        lambda: not kubectl.sim.list_objects("ReplicaSet") and not pods(kubectl.sim, app="web"),
        timeout=10.0,
        what="ReplicaSet and pods collected",
    )
    _, out, err = await kubectl("get", "pods", "-l", "app=web")
    assert "No resources found" in out + err


EXAMPLE_STATE = Path(__file__).resolve().parents[2] / "examples" / "kubesim-state.yaml"


@pytest.fixture(params=BINARIES or ["kubectl"], ids=lambda b: Path(b).name)
async def seeded(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubesim.serve(state=EXAMPLE_STATE, time_scale=0.01) as sim:
        yield Kubectl(request.param, sim, tmp_path)


async def test_rollout_status_completes_on_a_seeded_cluster(seeded: Kubectl) -> None:
    _, out, _ = await seeded("rollout", "status", "deployment/web", "--timeout=20s")
    assert 'deployment "web" successfully rolled out' in out
    _, out, _ = await seeded(
        "rollout", "status", "daemonset/node-exporter", "-n", "kube-system", "--timeout=20s"
    )
    assert 'daemon set "node-exporter" successfully rolled out' in out
    _, out, _ = await seeded("describe", "deployment", "web")
    assert "NewReplicaSet:   web-5d8f (2/2 replicas created)" in out


CLUSTER = Path(__file__).resolve().parents[2] / "examples" / "kubesim-cluster.yaml"
WORKERS = ["worker-1", "worker-2", "worker-3"]


@pytest.fixture(params=BINARIES or ["kubectl"], ids=lambda b: Path(b).name)
async def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubesim.serve(state=CLUSTER, time_scale=0.02) as sim:
        yield Kubectl(request.param, sim, tmp_path)


async def test_drain_moves_pods_and_budgets_reopen(cluster: Kubectl) -> None:
    sim = cluster.sim

    def budget(name: str) -> int:
        pdb = sim.get("PodDisruptionBudget", "default", name) or {}
        return int((pdb.get("status") or {}).get("disruptionsAllowed") or 0)

    def settled() -> bool:
        running = [
            p
            for p in sim.list_objects("Pod", "default")
            if not p["metadata"].get("deletionTimestamp")
        ]
        return (
            len(running) == 7
            and all(
                any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in p["status"].get("conditions", [])
                )
                for p in running
            )
            and budget("web") == 1
            and budget("api") == 1
        )

    await eventually(settled, timeout=15.0, what="cluster Ready with budgets open")
    _, out, err = await cluster(
        "drain", "worker-1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s"
    )
    assert "node/worker-1 drained" in out, err
    left = [
        p["metadata"]["name"]
        for p in sim.list_objects("Pod", "default")
        if p["spec"].get("nodeName") == "worker-1"
    ]
    assert left == []
    # Replacements run elsewhere, become Ready, and the budgets open again.
    await eventually(settled, timeout=15.0, what="replacements Ready, budgets reopened")
    nodes = {p["spec"]["nodeName"] for p in sim.list_objects("Pod", "default")}
    assert nodes <= {"worker-2", "worker-3"}
    assert sim.get("Pod", "default", "db-0") is not None  # StatefulSet pods keep their names
    _, events, _ = await cluster("get", "events", "-n", "default")
    assert "SuccessfulCreate" in events and "Killing" in events
