"""The node kubelet: node status, node leases, pods started and made Ready after a delay."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

import kubesim
from kube.times import format_micro_time
from kubesim.controllers import ControllerSettings
from kubesim.sim import Simulator
from tests.support.living import is_ready
from tests.support.wait import until

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

BARE_NODES = """
apiVersion: v1
kind: Node
metadata: {name: bare}
---
apiVersion: v1
kind: Node
metadata: {name: small}
spec: {podCIDR: 10.99.7.0/24}
status:
  capacity: {cpu: "2", memory: 4Gi, pods: "10"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
  addresses: [{type: InternalIP, address: 192.168.1.20}]
---
apiVersion: v1
kind: Node
metadata: {name: sick}
status:
  conditions: [{type: Ready, status: "False", reason: KubeletNotReady}]
"""


def pod(name: str, node: str, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx:1.27"}]},
    }


async def create(sim: Simulator, manifest: dict[str, Any]) -> None:
    rt = sim.scheme.for_kind("v1", "Pod")
    assert rt is not None
    sim.registry.create(rt, "default", manifest)
    await asyncio.sleep(0)


async def test_nodes_get_complete_status_that_typed_clients_accept() -> None:
    async with kubesim.serve(state=BARE_NODES) as sim:
        await until(lambda: (sim.get("Node", None, "bare") or {}).get("status"))
        async with sim.api_client() as api:
            nodes = (await client.CoreV1Api(api).list_node()).items
        by_name = {n.metadata.name: n for n in nodes}
        bare = by_name["bare"]
        info = bare.status.node_info
        assert info.kubelet_version == "v1.32.0"
        assert info.operating_system == "linux" and info.architecture == "amd64"
        assert info.container_runtime_version.startswith("containerd://")
        assert info.machine_id and info.system_uuid and info.boot_id and info.kernel_version
        assert info.os_image and info.kube_proxy_version
        assert bare.status.capacity["pods"] == "110"
        assert bare.status.allocatable == bare.status.capacity
        assert {a.type for a in bare.status.addresses} == {"InternalIP", "Hostname"}
        conditions = {c.type: c for c in bare.status.conditions}
        assert set(conditions) == {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}
        assert (conditions["Ready"].status, conditions["Ready"].reason) == ("True", "KubeletReady")
        # What the manifest states is kept: NotReady stays NotReady, capacity as given.
        sick = by_name["sick"]
        sick_ready = [c for c in sick.status.conditions if c.type == "Ready"]
        assert [c.status for c in sick_ready] == ["False"]
        small = by_name["small"]
        assert small.status.capacity == {"cpu": "2", "memory": "4Gi", "pods": "10"}
        assert small.status.addresses[0].address == "192.168.1.20"


STATE_EXAMPLES = sorted(p.name for p in EXAMPLES.glob("*.yaml") if "faults" not in p.name)


@pytest.mark.parametrize("example", STATE_EXAMPLES, ids=str)
async def test_every_example_state_lists_with_the_typed_client(example: str) -> None:
    async with kubesim.serve(state=EXAMPLES / example, time_scale=0.01) as sim:
        names = {o["metadata"]["name"] for o in sim.list_objects("Node")}
        await until(
            lambda: all(
                (sim.get("Node", None, n) or {}).get("status", {}).get("nodeInfo") for n in names
            )
        )
        async with sim.api_client() as api:
            nodes = (await client.CoreV1Api(api).list_node()).items
            assert {n.metadata.name for n in nodes} == names
            # Pods deserialise too (container statuses carry image, imageID, ...).
            await client.CoreV1Api(api).list_pod_for_all_namespaces()


async def test_pod_runs_then_becomes_ready_after_its_delay() -> None:
    async with kubesim.serve(state=BARE_NODES, time_scale=0.01, ready_after=30.0) as sim:
        await create(sim, pod("slow", "bare"))
        await create(sim, pod("fast", "bare", **{"kubesim.io/ready-after": "0"}))
        started = time.monotonic()
        running = await until(
            lambda: (
                (p := sim.get("Pod", "default", "slow"))
                and p["status"].get("phase") == "Running"
                and p
            )
        )
        assert not is_ready(running)
        status = running["status"]
        conds = {c["type"]: c for c in status["conditions"]}
        assert conds["Ready"]["reason"] == "ContainersNotReady"
        assert conds["Ready"]["message"] == "containers with unready status: [c]"
        assert conds["PodScheduled"]["status"] == "True"
        cs = status["containerStatuses"][0]
        assert cs["started"] is True and cs["ready"] is False and cs["restartCount"] == 0
        assert "startedAt" in cs["state"]["running"]
        assert cs["imageID"].startswith("docker.io/library/nginx@sha256:")
        assert cs["containerID"].startswith("containerd://")
        assert status["startTime"] and status["hostIP"] and status["podIP"]
        assert status["qosClass"] == "BestEffort"
        # the annotation wins over the default: Ready as soon as it runs (created just after
        # slow, it may start a moment later on a loaded machine)
        await until(
            lambda: (p := sim.get("Pod", "default", "fast")) and is_ready(p) and p, timeout=3.0
        )
        fast_ready_after = time.monotonic() - started
        ready = await until(
            lambda: (p := sim.get("Pod", "default", "slow")) and is_ready(p) and p, timeout=3.0
        )
        slow_ready_after = time.monotonic() - started
        assert slow_ready_after >= 0.25  # 30 s × 0.01, less polling slack
        assert fast_ready_after < slow_ready_after
        assert ready["status"]["containerStatuses"][0]["ready"] is True


async def test_pod_ips_are_unique_and_come_from_the_node_cidr() -> None:
    async with kubesim.serve(state=BARE_NODES, time_scale=0.01) as sim:
        await until(lambda: (sim.get("Node", None, "bare") or {}).get("status"))
        for i in range(20):
            await create(sim, pod(f"p{i}", "bare" if i % 2 else "small"))
        running = await until(
            lambda: (
                ps
                if len(ps := [p for p in sim.list_objects("Pod") if p["status"].get("podIP")]) == 20
                else None
            )
        )
        ips = [p["status"]["podIP"] for p in running]
        assert len(set(ips)) == 20
        small = [p for p in running if p["spec"]["nodeName"] == "small"]
        assert all(p["status"]["podIP"].startswith("10.99.7.") for p in small)
        assert all(p["status"]["hostIP"] == "192.168.1.20" for p in small)
        bare = [p for p in running if p["spec"]["nodeName"] == "bare"]
        assert len({p["status"]["podIP"].rsplit(".", 1)[0] for p in bare}) == 1


async def test_each_node_renews_its_lease() -> None:
    async with kubesim.serve(state=BARE_NODES, time_scale=0.01) as sim:
        lease = await until(lambda: sim.get("Lease", "kube-node-lease", "bare"))
        node = sim.get("Node", None, "bare")
        assert node is not None
        assert lease["spec"]["holderIdentity"] == "bare"
        assert lease["spec"]["leaseDurationSeconds"] == 40
        assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
        first = lease["spec"]["renewTime"]
        assert len(first.split(".")[1]) == 7 and first.endswith("Z")  # six digits + Z
        renewed = await until(
            lambda: (
                (lz := sim.get("Lease", "kube-node-lease", "bare"))
                and lz["spec"]["renewTime"] != first
                and lz
            ),
            timeout=3.0,
            what="a renewal",
        )
        assert int(renewed["metadata"]["resourceVersion"]) > int(
            lease["metadata"]["resourceVersion"]
        )
        async with sim.api_client() as api:
            typed = await client.CoordinationV1Api(api).read_namespaced_lease(
                "bare", "kube-node-lease"
            )
        assert typed.spec.holder_identity == "bare"
        # The Lease is owned by its Node: deleting the node collects it.
        async with sim.api_client() as api:
            await client.CoreV1Api(api).delete_node("bare")
        await until(lambda: sim.get("Lease", "kube-node-lease", "bare") is None)


def test_micro_time_has_six_digits() -> None:
    assert format_micro_time(0.5) == "1970-01-01T00:00:00.500000Z"


def test_settings_reject_negative_and_non_numbers() -> None:
    with pytest.raises(ValueError, match="ready_after: must be a number of seconds >= 0"):
        ControllerSettings(ready_after=-1)
    with pytest.raises(ValueError, match="job_duration"):
        ControllerSettings(job_duration="5")  # type: ignore[arg-type]


async def test_graceful_deletion_still_finishes_after_the_grace_period() -> None:
    async with kubesim.serve(state=BARE_NODES, time_scale=0.01) as sim:
        manifest = pod("g", "bare")
        manifest["spec"]["terminationGracePeriodSeconds"] = 20
        await create(sim, manifest)
        await until(lambda: (p := sim.get("Pod", "default", "g")) and is_ready(p))
        async with sim.api_client() as api:
            await client.CoreV1Api(api).delete_namespaced_pod("g", "default")
        gone = sim.get("Pod", "default", "g")
        assert gone is not None and gone["metadata"]["deletionTimestamp"]
        await until(lambda: sim.get("Pod", "default", "g") is None, timeout=3.0)


def test_settings_document_parses_and_rejects_bad_fields() -> None:
    from kubesim.controllers.settings import is_settings_document, parse_settings

    doc = {
        "apiVersion": "kubesim.io/v1alpha1",
        "kind": "ClusterSettings",
        "readyAfter": 2.5,
        "reactionDelay": 0,
        "disabledControllers": ["garbagecollector"],
    }
    assert is_settings_document(doc)
    settings, disabled = parse_settings(doc)
    assert (settings.ready_after, settings.reaction_delay, settings.job_duration) == (2.5, 0, 5.0)
    assert disabled == {"garbagecollector"}
    with pytest.raises(ValueError, match=r"readyAfter: must be a number of seconds >= 0"):
        parse_settings({**doc, "readyAfter": -1})
    with pytest.raises(ValueError, match=r'unknown field "readyafter"'):
        parse_settings({"readyafter": 1})
    with pytest.raises(ValueError, match=r"disabledControllers: unknown controller\(s\) rs"):
        parse_settings({"disabledControllers": ["rs"]})


SETTINGS_STATE = """
apiVersion: kubesim.io/v1alpha1
kind: ClusterSettings
readyAfter: 40
jobDuration: 7
disabledControllers: [garbagecollector]
---
apiVersion: v1
kind: Node
metadata: {name: bare}
"""


async def test_state_file_settings_apply_and_keywords_win() -> None:
    from kubesim.sim import StateError

    async with kubesim.serve(state=SETTINGS_STATE, time_scale=0.01, job_duration=1.0) as sim:
        assert (sim.settings.ready_after, sim.settings.job_duration) == (40.0, 1.0)
        assert "garbagecollector" not in {c.name for c in sim.controllers}
        await create(sim, pod("p", "bare"))
        running = await until(
            lambda: (p := sim.get("Pod", "default", "p")) and p["status"].get("podIP") and p
        )
        assert not is_ready(running)  # 40 s × 0.01 to go
        await until(lambda: is_ready(sim.get("Pod", "default", "p") or {}), timeout=3.0)
    with pytest.raises(
        StateError, match=r"document 1: ClusterSettings: readyAfter: must be a number"
    ):
        kubesim.sim.Simulator(state=SETTINGS_STATE.replace("40", "soon"))


async def test_a_not_ready_node_starts_nothing_until_ready() -> None:
    async with kubesim.serve(state=BARE_NODES, time_scale=0.01) as sim:
        await create(sim, pod("stuck", "sick"))
        await until(lambda: sim.get("Lease", "kube-node-lease", "bare"))
        await asyncio.sleep(0.05)
        stuck = sim.get("Pod", "default", "stuck")
        assert stuck is not None and stuck["status"]["phase"] == "Pending"
        assert sim.get("Lease", "kube-node-lease", "sick") is None
        node = sim.get("Node", None, "sick")
        assert node is not None
        node["status"]["conditions"] = [
            dict(c, status="True") if c["type"] == "Ready" else c
            for c in node["status"]["conditions"]
        ]
        rt = sim.scheme.for_kind("v1", "Node")
        assert rt is not None
        sim.registry.update(rt, "", "sick", node, subresource="status")
        await until(
            lambda: (sim.get("Pod", "default", "stuck") or {})["status"]["phase"] == "Running"
        )
        await until(lambda: sim.get("Lease", "kube-node-lease", "sick"), timeout=3.0)


async def test_init_containers_are_reported_completed() -> None:
    async with kubesim.serve(state=BARE_NODES, time_scale=0.01) as sim:
        manifest = pod("with-init", "bare")
        manifest["spec"]["initContainers"] = [
            {"name": "migrate", "image": "busybox"},
            {"name": "proxy", "image": "envoy", "restartPolicy": "Always"},
        ]
        await create(sim, manifest)
        started = await until(
            lambda: (p := sim.get("Pod", "default", "with-init")) and is_ready(p) and p
        )
        inits = {s["name"]: s for s in started["status"]["initContainerStatuses"]}
        assert inits["migrate"]["state"]["terminated"]["reason"] == "Completed"
        assert inits["migrate"]["started"] is False
        assert "running" in inits["proxy"]["state"] and inits["proxy"]["ready"] is True
        async with sim.api_client() as api:
            typed = await client.CoreV1Api(api).read_namespaced_pod("with-init", "default")
        assert typed.status.init_container_statuses[0].state.terminated.exit_code == 0
