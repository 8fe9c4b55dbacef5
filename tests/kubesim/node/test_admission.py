"""kubesim's kubelet admits bound pods as kube's does, and labels its nodes at registration.

``predicateAdmitHandler.Admit``: a pod created with ``spec.nodeName`` on a node without room
ends ``Failed`` with reason ``OutOf<resource>`` and message ``Pod was rejected: Node didn't
have enough resource: <name>, requested: R, used: U, capacity: C``, with a Warning event of the
same reason carrying the bare message. ``initialNode``: ``kubernetes.io/hostname``,
``kubernetes.io/os`` and ``kubernetes.io/arch`` are set on every node, values from the
manifest kept.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import kubesim
from kube.objects import Node, Pod
from kubesim.node.admission import admit
from kubesim.sim import Simulator
from tests.support.manifests import pending_pod
from tests.support.wait import until

STATE = """
apiVersion: v1
kind: Node
metadata: {name: small}
status:
  capacity: {cpu: "1", memory: 1Gi, pods: "3"}
---
apiVersion: v1
kind: Node
metadata: {name: arm, labels: {kubernetes.io/arch: arm64, kubernetes.io/hostname: arm-host}}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
"""


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01) as s:
        yield s


def create(sim: Simulator, obj: dict[str, Any]) -> None:
    sim.registry.create(sim.scheme.for_storage("pods"), "default", obj)


def phase(sim: Simulator, name: str) -> str:
    obj = sim.get("Pod", "default", name) or {}
    return str((obj.get("status") or {}).get("phase") or "")


async def test_a_pod_without_room_is_rejected_out_of_cpu(sim: Simulator) -> None:
    create(sim, pending_pod("first", node_name="small", cpu="800m"))
    await until(lambda: phase(sim, "first") == "Running", what="first pod running")
    create(sim, pending_pod("second", node_name="small", cpu="500m"))
    await until(lambda: phase(sim, "second") == "Failed", what="second pod rejected")
    status = (sim.get("Pod", "default", "second") or {})["status"]
    assert status["reason"] == "OutOfcpu"
    assert status["message"] == (
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 500, used: 800,"
        " capacity: 1000"
    )
    events = [
        e
        for e in sim.list_objects("Event", "default")
        if (e.get("involvedObject") or e.get("regarding") or {}).get("name") == "second"
    ]
    assert [
        (e.get("type"), e.get("reason"), e.get("message") or e.get("note")) for e in events
    ] == [
        (
            "Warning",
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 500, used: 800, capacity: 1000",
        )
    ]


async def test_memory_and_pod_count(sim: Simulator) -> None:
    create(sim, pending_pod("big", node_name="small", cpu=None, memory="2Gi"))
    await until(lambda: phase(sim, "big") == "Failed", what="big pod rejected")
    status = (sim.get("Pod", "default", "big") or {})["status"]
    assert status["reason"] == "OutOfmemory"
    assert "memory, requested: 2147483648, used: 0, capacity: 1073741824" in status["message"]
    for i in range(3):
        create(sim, pending_pod(f"p{i}", node_name="small", cpu=None))
        await until(lambda i=i: phase(sim, f"p{i}") == "Running", what=f"p{i} running")
    create(sim, pending_pod("p3", node_name="small", cpu=None))
    await until(lambda: phase(sim, "p3") == "Failed", what="p3 rejected")
    status = (sim.get("Pod", "default", "p3") or {})["status"]
    assert status["reason"] == "OutOfpods"
    assert status["message"].endswith("pods, requested: 1, used: 3, capacity: 3")


async def test_nodes_get_the_kubelet_labels(sim: Simulator) -> None:
    def labels(name: str) -> dict[str, str]:
        return dict(((sim.get("Node", None, name) or {}).get("metadata") or {}).get("labels") or {})

    await until(lambda: "kubernetes.io/os" in labels("small"), what="labels on small")
    assert labels("small") == {
        "kubernetes.io/hostname": "small",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    }
    await until(lambda: "kubernetes.io/os" in labels("arm"), what="labels on arm")
    assert labels("arm") == {
        "kubernetes.io/hostname": "arm-host",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64",
    }


def test_admission_order_and_predicates() -> None:
    node = Node.from_dict(
        {
            "metadata": {"name": "n", "labels": {"disk": "hdd"}},
            "spec": {"taints": [{"key": "gone", "effect": "NoExecute"}]},
            "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}},
        }
    )
    both = Pod.from_dict(pending_pod("x", node_name="n", cpu="2", memory="2Gi"))
    # Only the first failure counts: cpu before memory.
    assert admit(both, node, [])[0] == "OutOfcpu"  # type: ignore[index]
    selector = Pod.from_dict(
        pending_pod("y", node_name="n", cpu=None, nodeSelector={"disk": "ssd"})
    )
    assert admit(selector, node, []) == (
        "NodeAffinity",
        "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    )
    plain = Pod.from_dict(pending_pod("z", node_name="n", cpu=None))
    assert admit(plain, node, []) == (
        "TaintToleration",
        "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
    )
    tolerant = Pod.from_dict(
        pending_pod("t", node_name="n", cpu=None, tolerations=[{"operator": "Exists"}])
    )
    assert admit(tolerant, node, []) is None


@pytest.mark.kubectl
@pytest.mark.skipif(not shutil.which("kubectl"), reason="no kubectl binary installed")
async def test_kubectl_shows_out_of_cpu(sim: Simulator, tmp_path: Path) -> None:
    create(sim, pending_pod("hog", node_name="small", cpu="1"))
    await until(lambda: phase(sim, "hog") == "Running", what="hog running")
    create(sim, pending_pod("late", node_name="small", cpu="100m"))
    await until(lambda: phase(sim, "late") == "Failed", what="late rejected")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["KUBECONFIG"] = str(sim.kubeconfig_path)
    env["HOME"] = str(tmp_path)
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        f"--cache-dir={tmp_path / 'cache'}",
        "get",
        "pod",
        "late",
        "--no-headers",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert out.decode().split()[:3] == ["late", "0/1", "OutOfcpu"]
