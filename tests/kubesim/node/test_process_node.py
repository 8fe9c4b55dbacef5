"""Process nodes: the kubelet of ``Simulator(process_nodes=...)`` runs pods' commands for real.

Every test runs with the runtime measuring processes (psutil) and, where a writable memory cgroup
exists, with real cgroups; the cgroup variant is skipped, saying why, only where none is writable.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import psutil
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import kubesim
from kube.quantity import parse_quantity
from kubesim.cli import cli
from kubesim.node.nodestatus import set_memory_capacity
from kubesim.node.runtime import ProcessRuntime, RuntimeMode
from kubesim.registry.generic import DeleteOptions
from kubesim.sim import Simulator
from tests.support.wait import until

MIB = 1 << 20
NODES = """
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
"""
HOLD = "import signal, sys\nb = bytearray(int(sys.argv[1]) << 20)\nb[::4096] = b'1' * (len(b) // 4096)\nsignal.pause()\n"  # noqa: E501


def pod(
    name: str, command: list[str], *, node: str = "node-1", restart: str = "Always", grace: int = 5
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "restartPolicy": restart,
            "terminationGracePeriodSeconds": grace,
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.12",
                    "command": command,
                    "resources": {"requests": {"memory": "16Mi"}},
                }
            ],
        },
    }


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture(params=["cgroups", "processes"])
async def sim(request: pytest.FixtureRequest) -> AsyncIterator[Simulator]:
    use_cgroups = request.param == "cgroups"
    if use_cgroups:
        probe = ProcessRuntime(prefix="kubesimprobe")
        try:
            if probe.mode is RuntimeMode.PROCESS:
                pytest.skip(f"no writable memory cgroup on this machine: {probe.mode_reason}")
        finally:
            await probe.close()
    async with kubesim.serve(
        state=NODES,
        time_scale=0.1,
        process_nodes={"node-1"},
        memory_capacity=512 * MIB,
        use_cgroups=use_cgroups,
    ) as s:
        yield s


def create(sim: Simulator, manifest: dict[str, Any]) -> dict[str, Any]:
    rt = sim.scheme.for_kind("v1", "Pod")
    assert rt is not None
    return sim.registry.create(rt, "default", manifest)


def container(sim: Simulator, name: str) -> dict[str, Any] | None:
    p = sim.get("Pod", "default", name)
    statuses = ((p or {}).get("status") or {}).get("containerStatuses") or []
    return statuses[0] if statuses else None


async def test_a_pod_with_a_command_runs_is_measured_and_deletion_kills_and_cleans(
    sim: Simulator,
) -> None:
    rt = sim.runtimes["node-1"]
    uid = create(sim, pod("hold", ["python", "-c", HOLD, "40"]))["metadata"]["uid"]
    cs = await until(
        lambda: (c := container(sim, "hold")) and c["containerID"].startswith("kubesim://") and c,
        timeout=10,
        what="the runtime's container status",
    )
    assert cs["state"]["running"] and cs["started"]
    statuses = rt.status(uid)
    assert statuses is not None and statuses[0].pid is not None
    pid = statuses[0].pid
    assert alive(pid)
    usage = await until(
        lambda: (u := rt.usage(uid)) and u.working_set_bytes >= 40 * MIB and u,
        timeout=10,
        what="40Mi in the pod's working set",
    )
    assert usage.process_count >= 1
    cgroup = rt.pod_cgroup(uid)
    assert (cgroup is not None) == (rt.mode is not RuntimeMode.PROCESS)

    pods_rt = sim.scheme.for_kind("v1", "Pod")
    assert pods_rt is not None
    sim.registry.delete(pods_rt, "default", "hold", DeleteOptions())
    assert sim.get("Pod", "default", "hold") is not None  # Terminating until the kubelet is done
    await until(lambda: sim.get("Pod", "default", "hold") is None, timeout=10, what="delete")
    # the object goes only after the processes and the cgroups
    assert not alive(pid)
    assert rt.pods() == [] and rt.usage(uid) is None
    if cgroup is not None:
        assert not cgroup.exists()


async def test_other_nodes_keep_the_simulated_kubelet(sim: Simulator) -> None:
    create(sim, pod("elsewhere", ["python", "-c", HOLD, "1"], node="node-2"))
    cs = await until(lambda: container(sim, "elsewhere"), what="a simulated start")
    assert cs["containerID"].startswith("containerd://")
    assert sim.runtimes["node-1"].pods() == []


async def test_node_memory_is_the_runtimes_capacity(sim: Simulator) -> None:
    def memory(name: str) -> tuple[str, str] | None:
        status = (sim.get("Node", None, name) or {}).get("status") or {}
        mem = (status.get("capacity") or {}).get("memory")
        return (mem, (status.get("allocatable") or {}).get("memory")) if mem else None

    capacity = sim.runtimes["node-1"].memory_capacity
    assert capacity == 512 * MIB
    # the kubelet's 524288Ki, stored in canonical form as kube-apiserver does
    assert await until(lambda: memory("node-1")) == ("512Mi", "512Mi")
    assert await until(lambda: memory("node-2")) == ("16Gi", "16Gi")


@pytest.mark.parametrize(
    ("restart", "code", "phase"),
    [("Never", 0, "Succeeded"), ("Never", 3, "Failed"), ("OnFailure", 0, "Succeeded")],
)
async def test_exits_set_the_phase_as_the_kubelet_does(
    sim: Simulator, restart: str, code: int, phase: str
) -> None:
    rt = sim.runtimes["node-1"]
    create(sim, pod("job", [sys.executable, "-c", f"raise SystemExit({code})"], restart=restart))
    done = await until(
        lambda: (p := sim.get("Pod", "default", "job")) and p["status"].get("phase") == phase and p,
        timeout=10,
        what=f"phase {phase}",
    )
    term = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == code
    assert term["reason"] == ("Completed" if code == 0 else "Error")
    ready = {c["type"]: c["status"] for c in done["status"]["conditions"]}
    assert ready["Ready"] == "False"
    # a finished pod's processes and cgroups are gone, the object stays
    await until(lambda: rt.pods() == [], what="the runtime to let go of the pod")


async def test_a_failed_container_under_always_waits_in_crash_loop_back_off(
    sim: Simulator,
) -> None:
    manifest = pod("crash", [sys.executable, "-c", "raise SystemExit(7)"])
    # Ready is due 0.5 s after the start: by then the container has exited and must keep it off
    manifest["metadata"]["annotations"] = {"kubesim.io/ready-after": "5"}
    create(sim, manifest)
    cs = await until(
        lambda: (c := container(sim, "crash")) and "waiting" in c["state"] and c,
        timeout=10,
        what="CrashLoopBackOff",
    )
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["lastState"]["terminated"]["exitCode"] == 7
    # Ready's timer (5 s × time scale from the start, before the crash was seen) fires on this
    # loop before a sleep as long that starts now: once it ends, the kubelet has decided.
    await asyncio.sleep(5 * sim.time_scale)
    p = sim.get("Pod", "default", "crash")
    assert p is not None and p["status"]["phase"] == "Running"
    assert p["status"]["containerStatuses"][0]["ready"] is False
    assert {c["type"]: c["status"] for c in p["status"]["conditions"]}["Ready"] == "False"


async def test_a_force_delete_kills_at_once(sim: Simulator) -> None:
    rt = sim.runtimes["node-1"]
    uid = create(sim, pod("forced", ["python", "-c", HOLD, "1"], grace=300))["metadata"]["uid"]
    await until(lambda: (s := rt.status(uid)) and s[0].pid, timeout=10, what="a process")
    statuses = rt.status(uid)
    assert statuses is not None and statuses[0].pid is not None
    pods_rt = sim.scheme.for_kind("v1", "Pod")
    assert pods_rt is not None
    sim.registry.delete(pods_rt, "default", "forced", DeleteOptions(grace_period_seconds=0))
    await until(lambda: not alive(statuses[0].pid or 0), timeout=5, what="the kill")
    await until(lambda: rt.pods() == [], what="the runtime to let go of the pod")


async def test_stopping_the_server_leaves_nothing_behind() -> None:
    async with kubesim.serve(state=NODES, time_scale=0.1, process_nodes={"node-1"}) as sim:
        rt = sim.runtimes["node-1"]
        uid = create(sim, pod("left", ["python", "-c", HOLD, "1"]))["metadata"]["uid"]
        await until(lambda: (s := rt.status(uid)) and s[0].pid, timeout=10, what="a process")
        statuses = rt.status(uid)
        assert statuses is not None
        pid = statuses[0].pid or 0
        sub_root = rt.sub_root
    await asyncio.sleep(0)
    assert not alive(pid)
    if sub_root is not None:
        assert not sub_root.exists()


def test_serve_rejects_a_bad_memory_capacity() -> None:
    result = CliRunner().invoke(cli, ["serve", "--memory-capacity", "lots"])
    assert result.exit_code == 2
    assert "--memory-capacity lots: not a quantity" in result.output


async def test_a_lower_allocatable_in_the_manifest_is_kept() -> None:
    state = NODES.replace(
        "metadata: {name: node-1}",
        "metadata: {name: node-1}\nstatus: {capacity: {memory: 8Gi}, allocatable: {memory: 100Mi}}",
    )
    async with kubesim.serve(
        state=state, process_nodes={"node-1"}, memory_capacity=256 * MIB, use_cgroups=False
    ) as sim:
        node = sim.get("Node", None, "node-1")
        assert node is not None
        assert node["status"]["capacity"]["memory"] == "256Mi"  # 262144Ki, canonical
        assert node["status"]["allocatable"]["memory"] == "100Mi"


def test_serve_flags_make_process_nodes() -> None:
    from kubesim.cli import _simulator, parse_memory_capacity

    def serve(**flags: Any) -> Any:
        return _simulator((), None, "127.0.0.1", 0, None, 1.0, "strict", **flags)

    sim = serve(
        process_nodes=("node-1",),
        cgroup_root="/nonexistent",
        memory_capacity=parse_memory_capacity("1Gi"),
    )
    assert list(sim.runtimes) == ["node-1"]
    rt = sim.runtimes["node-1"]
    assert (
        rt.mode is RuntimeMode.PROCESS and "no memory cgroup under /nonexistent" in rt.mode_reason
    )
    assert rt.memory_capacity == 1 << 30
    assert rt.names.driver == "cgroupfs" and not rt.kubepods_at_root
    rt = serve(process_nodes=("node-1",), cgroup_driver="systemd", kubepods_at_root=True).runtimes[
        "node-1"
    ]
    assert rt.names.kubepods == "kubepods.slice" and rt.kubepods_at_root


def test_kubepods_at_root_needs_exactly_one_process_node() -> None:
    for nodes in ([], ["--process-node", "a", "--process-node", "b"]):
        result = CliRunner().invoke(cli, ["serve", "--kubepods-at-root", *nodes])
        assert result.exit_code == 2
        assert "--kubepods-at-root: needs exactly one --process-node" in result.output
    result = CliRunner().invoke(cli, ["serve", "--process-node", "a", "--cgroup-driver", "docker"])
    assert result.exit_code == 2 and "'docker' is not one of 'cgroupfs', 'systemd'" in result.output


@given(
    capacity=st.integers(min_value=1 << 20, max_value=1 << 40),
    allocatable=st.one_of(st.none(), st.integers(min_value=1, max_value=1 << 41)),
)
def test_node_memory_allocatable_never_exceeds_capacity(
    capacity: int, allocatable: int | None
) -> None:
    status: dict[str, Any] = {"capacity": {"cpu": "4", "memory": "16Gi"}}
    if allocatable is not None:
        status["allocatable"] = {"cpu": "4", "memory": str(allocatable)}
    set_memory_capacity(status, capacity)
    assert status["capacity"] == {"cpu": "4", "memory": f"{capacity // 1024}Ki"}
    shown = capacity // 1024 * 1024
    kept = parse_quantity(status["allocatable"]["memory"])
    assert kept <= shown
    if allocatable is not None:
        assert status["allocatable"]["cpu"] == "4"
        assert kept == (allocatable if allocatable <= shown else shown)
