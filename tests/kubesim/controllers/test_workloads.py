"""StatefulSet, DaemonSet and Job controllers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

import kubesim
from kubesim.controllers.daemonset import daemon_pod_tolerations, node_should_run_daemon_pod
from kubesim.controllers.statefulset import pod_ordinal
from kubesim.sim import Simulator
from tests.support.living import is_ready, live, pods
from tests.support.wait import until

NODES = """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {disk: ssd}}
---
apiVersion: v1
kind: Node
metadata: {name: node-2, labels: {disk: hdd}}
---
apiVersion: v1
kind: Node
metadata: {name: node-3, labels: {disk: ssd}}
spec:
  taints: [{key: dedicated, value: db, effect: NoSchedule}]
"""


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=NODES, time_scale=0.01) as s:
        yield s


def statefulset(name: str, replicas: int, *, policy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": name,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}, "annotations": {"kubesim.io/ready-after": "5"}},
            "spec": {
                "nodeName": "node-1",
                "terminationGracePeriodSeconds": 10,
                "containers": [{"name": "c", "image": "postgres"}],
            },
        },
    }
    if policy:
        spec["podManagementPolicy"] = policy
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def sts_status(sim: Simulator, name: str) -> dict[str, Any]:
    obj = sim.get("StatefulSet", "default", name)
    assert obj is not None
    status: dict[str, Any] = obj.get("status") or {}
    return status


def pod_milestones(sim: Simulator) -> list[tuple[str, str]]:
    """Each pod's creation and first Ready, in the order the store wrote them."""
    seen: list[tuple[str, str]] = []
    for event in sim.store.events_since("pods", 0):
        name = event.obj["metadata"]["name"]
        if event.type == "ADDED":
            seen.append((name, "created"))
        elif is_ready(event.obj) and (name, "Ready") not in seen:
            seen.append((name, "Ready"))
    return seen


def test_pod_ordinal() -> None:
    assert pod_ordinal("db", "db-0") == 0
    assert pod_ordinal("db", "db-12") == 12
    assert pod_ordinal("db", "db-x") is None
    assert pod_ordinal("db", "dbx-1") is None
    assert pod_ordinal("my-db", "my-db-3") == 3


async def test_statefulset_ordered_ready_creates_one_at_a_time(sim: Simulator) -> None:
    sim.apply(statefulset("db", 3))
    status = await until(
        lambda: sts_status(sim, "db").get("readyReplicas") == 3 and sts_status(sim, "db"),
        what="3 ready",
    )
    # OrderedReady: db-1 only once db-0 is Ready (after 5 s × 0.01), db-2 once db-1 is: the
    # store's history of pods, in write order, whatever the machine's speed.
    assert pod_milestones(sim) == [
        ("db-0", "created"),
        ("db-0", "Ready"),
        ("db-1", "created"),
        ("db-1", "Ready"),
        ("db-2", "created"),
        ("db-2", "Ready"),
    ]
    assert status["replicas"] == 3
    assert status["currentRevision"] == status["updateRevision"]
    assert status["currentRevision"].startswith("db-")
    assert status["observedGeneration"] == 1
    pod = sim.get("Pod", "default", "db-2")
    assert pod is not None
    assert pod["spec"]["hostname"] == "db-2" and pod["spec"]["subdomain"] == "db"
    labels = pod["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "db-2"
    assert labels["apps.kubernetes.io/pod-index"] == "2"
    assert labels["controller-revision-hash"] == status["updateRevision"]
    messages = [
        e["message"]
        for e in sim.list_objects("Event", "default")
        if e["involvedObject"]["kind"] == "StatefulSet"
    ]
    assert messages == [f"create Pod db-{i} in StatefulSet db successful" for i in range(3)]


async def test_statefulset_pod_comes_back_with_same_name_new_uid(sim: Simulator) -> None:
    sim.apply(statefulset("db", 2, policy="Parallel"))
    await until(lambda: sts_status(sim, "db").get("readyReplicas") == 2)
    before = sim.get("Pod", "default", "db-1")
    assert before is not None
    async with sim.api_client() as api:
        await client.CoreV1Api(api).create_namespaced_pod_eviction(
            "db-1",
            "default",
            client.V1Eviction(metadata=client.V1ObjectMeta(name="db-1", namespace="default")),
        )
    after = await until(
        lambda: (
            (p := sim.get("Pod", "default", "db-1"))
            and p["metadata"]["uid"] != before["metadata"]["uid"]
            and p
        ),
        what="db-1 recreated",
    )
    assert after["metadata"]["name"] == "db-1"
    await until(lambda: sts_status(sim, "db").get("readyReplicas") == 2)


async def test_statefulset_parallel_scale_down_removes_highest_ordinals(sim: Simulator) -> None:
    sim.apply(statefulset("db", 4, policy="Parallel"))
    await until(lambda: len(live(pods(sim, app="db"))) == 4, what="4 pods at once")
    rt = sim.scheme.for_kind("apps/v1", "StatefulSet")
    assert rt is not None
    current = sim.get("StatefulSet", "default", "db")
    assert current is not None
    current["spec"]["replicas"] = 2
    sim.registry.update(rt, "default", "db", current)
    await until(
        lambda: sorted(p["metadata"]["name"] for p in pods(sim, app="db")) == ["db-0", "db-1"],
        what="db-2 and db-3 removed",
    )


DAEMONSET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "agent", "namespace": "kube-system"},
    "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [{"name": "c", "image": "agent:1"}]},
        },
    },
}


def ds_status(sim: Simulator) -> dict[str, Any]:
    obj = sim.get("DaemonSet", "kube-system", "agent")
    assert obj is not None
    status: dict[str, Any] = obj.get("status") or {}
    return status


async def test_daemonset_runs_one_pod_per_untainted_node(sim: Simulator) -> None:
    sim.apply(DAEMONSET)
    status = await until(
        lambda: ds_status(sim).get("numberReady") == 2 and ds_status(sim), what="2 ready"
    )
    assert status["desiredNumberScheduled"] == 2
    assert status["currentNumberScheduled"] == 2
    assert status["numberMisscheduled"] == 0
    assert status["updatedNumberScheduled"] == 2
    assert status["numberAvailable"] == 2
    placed = {p["spec"]["nodeName"]: p for p in pods(sim, "kube-system", app="agent")}
    assert set(placed) == {"node-1", "node-2"}  # node-3's taint is not tolerated
    pod = placed["node-2"]
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}
    ]
    tolerations = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert ("node.kubernetes.io/unschedulable", "NoSchedule") in tolerations
    assert ("node.kubernetes.io/not-ready", "NoExecute") in tolerations
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"


async def test_daemonset_follows_nodes_selectors_and_cordons(sim: Simulator) -> None:
    ds = {**DAEMONSET, "spec": {**DAEMONSET["spec"]}}
    ds["spec"]["template"] = {
        "metadata": {"labels": {"app": "agent"}},
        "spec": {
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            "containers": [{"name": "c", "image": "agent:1"}],
        },
    }
    sim.apply(ds)
    await until(
        lambda: (
            sorted(p["spec"]["nodeName"] for p in pods(sim, "kube-system", app="agent"))
            == ["node-1", "node-3"]
        ),
        what="pods on the ssd nodes, tainted one included",
    )
    # A new matching node gets a pod; a cordoned node keeps its pod.
    sim.apply(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "node-4", "labels": {"disk": "ssd"}},
            "spec": {"unschedulable": True},
        }
    )
    await until(
        lambda: "node-4" in {p["spec"]["nodeName"] for p in pods(sim, "kube-system", app="agent")},
        what="pod on the new cordoned node",
    )
    # Relabelled out of the selector: its pod is deleted.
    node = sim.get("Node", None, "node-1")
    assert node is not None
    node["metadata"]["labels"]["disk"] = "hdd"
    rt = sim.scheme.for_kind("v1", "Node")
    assert rt is not None
    sim.registry.update(rt, "", "node-1", node)
    await until(
        lambda: (
            "node-1"
            not in {p["spec"]["nodeName"] for p in live(pods(sim, "kube-system", app="agent"))}
        ),
        what="pod leaves node-1",
    )
    await until(lambda: ds_status(sim).get("desiredNumberScheduled") == 2)


def test_node_should_run_daemon_pod_by_taint_effect() -> None:
    def node(effect: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n"},
            "spec": {"taints": [{"key": "k", "effect": effect}]},
        }

    assert node_should_run_daemon_pod(DAEMONSET, node("NoSchedule")) == (False, True)
    assert node_should_run_daemon_pod(DAEMONSET, node("NoExecute")) == (False, False)
    assert node_should_run_daemon_pod(DAEMONSET, node("PreferNoSchedule")) == (True, True)
    with_network = daemon_pod_tolerations({"hostNetwork": True})
    assert {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists",
            "effect": "NoSchedule"} in with_network  # fmt: skip
    assert len(daemon_pod_tolerations({})) == 6


def job(name: str, *, completions: int | None, parallelism: int, run_for: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "parallelism": parallelism,
        "template": {
            "metadata": {"annotations": {"kubesim.io/run-for": run_for}},
            "spec": {
                "nodeName": "node-1",
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}],
            },
        },
    }
    if completions is not None:
        spec["completions"] = completions
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def job_status(sim: Simulator, name: str) -> dict[str, Any]:
    obj = sim.get("Job", "default", name)
    assert obj is not None
    status: dict[str, Any] = obj.get("status") or {}
    return status


async def test_job_runs_pods_to_completion(sim: Simulator) -> None:
    sim.apply(job("batch", completions=3, parallelism=2, run_for="20"))
    uid = sim.get("Job", "default", "batch")["metadata"]["uid"]  # type: ignore[index]
    active = await until(lambda: job_status(sim, "batch").get("active") == 2 and pods(sim))
    assert len(active) == 2  # parallelism
    for pod in active:
        labels = pod["metadata"]["labels"]
        assert labels["batch.kubernetes.io/controller-uid"] == uid
        assert labels["batch.kubernetes.io/job-name"] == "batch"
        assert pod["metadata"]["generateName"] == "batch-"
    status = await until(
        lambda: job_status(sim, "batch").get("completionTime") and job_status(sim, "batch"),
        what="job complete",
    )
    assert status["succeeded"] == 3
    assert "active" not in status
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("SuccessCriteriaMet", "True"),
        ("Complete", "True"),
    ]
    done = [p for p in pods(sim) if p["status"]["phase"] == "Succeeded"]
    assert len(done) == 3
    term = done[0]["status"]["containerStatuses"][0]
    assert term["state"]["terminated"]["exitCode"] == 0
    assert term["state"]["terminated"]["reason"] == "Completed"
    assert term["ready"] is False
    ready = {c["type"]: c for c in done[0]["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")
    # Completed pods stay (they matter to drains) and nothing new is started.
    await asyncio.sleep(0.1)
    assert len(pods(sim)) == 3


async def test_job_fails_past_its_backoff_limit(sim: Simulator) -> None:
    manifest = job("flaky", completions=1, parallelism=1, run_for="1000")
    manifest["spec"]["backoffLimit"] = 1
    sim.apply(manifest)
    rt = sim.scheme.for_kind("v1", "Pod")
    assert rt is not None
    for _ in range(2):
        pod = await until(
            lambda: [p for p in pods(sim) if p["status"].get("phase") == "Running"] or None,
            what="a running pod",
        )
        failed = dict(pod[0])
        failed["status"] = {**failed["status"], "phase": "Failed"}
        sim.registry.update(rt, "default", failed["metadata"]["name"], failed, subresource="status")
    status = await until(
        lambda: (
            job_status(sim, "flaky").get("failed") == 2
            and any(c["type"] == "Failed" for c in job_status(sim, "flaky").get("conditions", []))
            and job_status(sim, "flaky")
        ),
        what="job failed",
    )
    failed_cond = {c["type"]: c for c in status["conditions"]}["Failed"]
    assert failed_cond["reason"] == "BackoffLimitExceeded"
    assert failed_cond["message"] == "Job has reached the specified backoff limit"


async def test_job_duration_default_applies_to_job_pods() -> None:
    async with kubesim.serve(state=NODES, time_scale=0.01, job_duration=10.0) as sim:
        manifest = job("quick", completions=1, parallelism=1, run_for="x")
        del manifest["spec"]["template"]["metadata"]
        sim.apply(manifest)
        await until(lambda: job_status(sim, "quick").get("active") == 1)
        assert not job_status(sim, "quick").get("succeeded")
        await until(lambda: job_status(sim, "quick").get("succeeded") == 1, timeout=3.0)
