"""kubectl against the living cluster: apply, scale, rollout status, get pods, delete.

Skipped only when no kubectl binary exists; runs for every installed kubectl (see
``tests.support.kubectl``). Pods are bound by a test stand-in for the scheduler loop.
"""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import kubesim
from tests.support.kubectl import BINARIES, Kubectl
from tests.support.living import is_ready, live, pods, set_unschedulable
from tests.support.wait import until

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
    # The nodes are cordoned until rollout status is seen waiting: however long kubectl takes
    # to start, the Deployment's pods cannot be Ready before it looks.
    for name in ("node-1", "node-2"):
        set_unschedulable(kubectl.sim, name, True)
    _, out, _ = await kubectl("apply", "-f", str(manifest))
    assert "deployment.apps/web created" in out
    assert "statefulset.apps/db created" in out
    assert "daemonset.apps/agent created" in out
    rollout = await kubectl.start("rollout", "status", "deployment/web", "--timeout=60s")
    assert rollout.stdout is not None
    first = await asyncio.wait_for(rollout.stdout.readline(), 60)
    assert first.startswith(b'Waiting for deployment "web" rollout to finish'), first
    for name in ("node-1", "node-2"):
        set_unschedulable(kubectl.sim, name, False)
    # Ready after 150 s × 0.01 once scheduled: rollout status waits, then reports success.
    rest, err = await asyncio.wait_for(rollout.communicate(), 120)
    assert rollout.returncode == 0, err
    assert 'deployment "web" successfully rolled out' in rest.decode()
    _, out, _ = await kubectl("rollout", "status", "statefulset/db", "--timeout=60s")
    # The defaulted updateStrategy has rollingUpdate.partition 0, so kubectl reports the
    # partitioned form, as against a real cluster.
    assert "partitioned roll out complete: 2 new pods have been updated..." in out
    _, out, _ = await kubectl("rollout", "status", "daemonset/agent", "-n", "kube-system")
    assert 'daemon set "agent" successfully rolled out' in out

    _, out, _ = await kubectl("scale", "deployment/web", "--replicas=4")
    assert out.strip() == "deployment.apps/web scaled"
    _, out, _ = await kubectl("rollout", "status", "deployment/web", "--timeout=60s")
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
    await until(
        lambda: [p["metadata"]["name"] for p in pods(kubectl.sim, app="db")] == ["db-0"],
        timeout=10.0,
        what="db-1 removed",
    )


async def test_delete_deployment_cleans_up(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(APP.split("---", maxsplit=1)[0])
    await kubectl("apply", "-f", str(manifest))
    await kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    _, out, _ = await kubectl("delete", "deployment", "web")
    assert 'deployment.apps "web" deleted' in out
    await until(
        lambda: not kubectl.sim.list_objects("ReplicaSet") and not pods(kubectl.sim, app="web"),
        timeout=10.0,
        what="ReplicaSet and pods collected",
    )
    _, out, err = await kubectl("get", "pods", "-l", "app=web")
    assert "No resources found" in out + err


EXAMPLE_STATE = Path(__file__).resolve().parents[3] / "examples" / "kubesim-state.yaml"


@pytest.fixture(params=BINARIES or ["kubectl"], ids=lambda b: Path(b).name)
async def seeded(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubesim.serve(state=EXAMPLE_STATE, time_scale=0.01) as sim:
        yield Kubectl(request.param, sim, tmp_path)


async def test_rollout_status_completes_on_a_seeded_cluster(seeded: Kubectl) -> None:
    _, out, _ = await seeded("rollout", "status", "deployment/web", "--timeout=60s")
    assert 'deployment "web" successfully rolled out' in out
    _, out, _ = await seeded(
        "rollout", "status", "daemonset/node-exporter", "-n", "kube-system", "--timeout=60s"
    )
    assert 'daemon set "node-exporter" successfully rolled out' in out
    _, out, _ = await seeded("describe", "deployment", "web")
    assert "NewReplicaSet:   web-5d8f (2/2 replicas created)" in out


CLUSTER = Path(__file__).resolve().parents[3] / "examples" / "kubesim-cluster.yaml"
WORKERS = ["worker-1", "worker-2", "worker-3"]


@pytest.fixture(params=BINARIES or ["kubectl"], ids=lambda b: Path(b).name)
async def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubesim.serve(state=CLUSTER, time_scale=0.02) as sim:
        yield Kubectl(request.param, sim, tmp_path)


def _ready_count(pods: dict[tuple[str, str], dict[str, Any]], app: str) -> int:
    return sum(
        1
        for p in pods.values()
        if (p["metadata"].get("labels") or {}).get("app") == app
        and not p["metadata"].get("deletionTimestamp")
        and is_ready(p)
    )


async def test_drain_moves_pods_and_budgets_reopen(cluster: Kubectl) -> None:
    sim = cluster.sim

    def budget(name: str) -> int:
        pdb = sim.get("PodDisruptionBudget", "default", name) or {}
        return int((pdb.get("status") or {}).get("disruptionsAllowed") or 0)

    def settled() -> bool:
        running = live(sim.list_objects("Pod", "default"))
        return (
            len(running) == 7
            and all(is_ready(p) for p in running)
            and budget("web") == 1
            and budget("api") == 1
        )

    await until(settled, timeout=15.0, what="cluster Ready with budgets open")
    # Drain the node with the most web pods, so the web budget has to close and reopen.
    web_nodes = Counter(p["spec"]["nodeName"] for p in pods(sim, app="web"))
    node = web_nodes.most_common(1)[0][0]
    # Both feeds in one resourceVersion order: what the budget said, and what the pods were.
    feeds = [sim.store.subscribe("pods"), sim.store.subscribe("poddisruptionbudgets")]
    state = dict(sim.store.objects("pods"))
    _, out, err = await cluster(
        "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s"
    )
    assert f"node/{node} drained" in out, err
    left = [p for p in sim.list_objects("Pod", "default") if p["spec"].get("nodeName") == node]
    assert left == []
    # Replacements run elsewhere, become Ready, and the budgets open again.
    await until(settled, timeout=15.0, what="replacements Ready, budgets reopened")
    events = []
    for feed in feeds:
        while not feed.queue.empty():
            events.append(feed.queue.get_nowait())
        sim.store.unsubscribe(feed)
    events.sort(key=lambda ev: ev.rv)
    closed = reopened = False
    for ev in events:
        if ev.storage == "pods":
            if ev.type == "DELETED":
                state.pop(ev.key, None)
            else:
                state[ev.key] = ev.obj
            continue
        if ev.key != ("default", "web"):
            continue
        allowed = ev.obj["status"].get("disruptionsAllowed")
        if allowed == 0:
            closed = True
        elif closed and allowed == 1 and not reopened:
            reopened = True
            # It reopened only once minAvailable (2) + 1 web pods were Ready and not leaving.
            assert _ready_count(state, "web") >= 3
    assert closed and reopened, "the web budget never closed and reopened during the drain"
    nodes = {p["spec"]["nodeName"] for p in sim.list_objects("Pod", "default")}
    assert node not in nodes
    assert sim.get("Pod", "default", "db-0") is not None  # StatefulSet pods keep their names
    _, events_out, _ = await cluster(
        "get", "events", "-n", "default", "-o", "custom-columns=REASON:.reason,MSG:.message"
    )
    rows = events_out.splitlines()
    assert any(r.startswith("Killing ") for r in rows)  # the kubelet stopped the evicted pods
    assert any(r.startswith("SuccessfulCreate ") for r in rows)  # replacements were made
    # ...and the scheduler placed them on the nodes left.
    assert any(
        r.startswith("Scheduled ") and "to worker-" in r and not r.endswith(f"to {node}")
        for r in rows
    )


PREEMPTION = """
apiVersion: v1
kind: Node
metadata: {name: small, labels: {kubernetes.io/hostname: small}}
status:
  capacity: {cpu: "1", memory: 4Gi, pods: "110"}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: batch, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: work
        image: busybox:1.36
        resources: {requests: {cpu: 400m}}
"""

URGENT = """
apiVersion: v1
kind: Pod
metadata: {name: urgent, namespace: default}
spec:
  priorityClassName: high
  containers:
  - name: app
    image: nginx:1.27
    resources: {requests: {cpu: 600m}}
"""


@pytest.fixture(params=BINARIES or ["kubectl"], ids=lambda b: Path(b).name)
async def small(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with kubesim.serve(state=PREEMPTION, time_scale=0.02) as sim:
        yield Kubectl(request.param, sim, tmp_path)


async def test_events_tell_a_preemption(small: Kubectl, tmp_path: Path) -> None:
    await small("rollout", "status", "deployment/batch", "--timeout=60s")
    manifest = tmp_path / "urgent.yaml"
    manifest.write_text(URGENT)
    _, out, _ = await small("apply", "-f", str(manifest))
    assert "pod/urgent created" in out

    def running() -> bool:
        pod = small.sim.get("Pod", "default", "urgent") or {}
        return pod.get("spec", {}).get("nodeName") == "small" and is_ready(pod)

    await until(running, timeout=15.0, what="urgent pod bound after preemption")
    _, out, _ = await small(
        "get",
        "events",
        "-o",
        "custom-columns=REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message",
    )
    rows = [r.split(None, 2) for r in out.strip().splitlines()[1:]]
    urgent = [(r[0], r[2]) for r in rows if r[1] == "urgent"]
    assert (
        "FailedScheduling",
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available:"
        " 1 No preemption victims found for incoming pod.",
    ) not in urgent  # a victim was found
    failed = [m for reason, m in urgent if reason == "FailedScheduling"]
    assert failed and failed[0].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert ("Scheduled", "Successfully assigned default/urgent to small") in urgent
    preempted = [(r[1], r[2]) for r in rows if r[0] == "Preempted"]
    assert len(preempted) == 1
    victim, message = preempted[0]
    assert victim.startswith("batch-")
    uid = (small.sim.get("Pod", "default", "urgent") or {})["metadata"]["uid"]
    assert message == f"Preempted by pod {uid} on node small"
    # The victim's ReplicaSet replaced it; the replacement cannot fit and says so.
    assert any(
        r[0] == "FailedScheduling" and r[1].startswith("batch-") and r[1] != victim for r in rows
    )
