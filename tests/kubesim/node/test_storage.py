"""A process node's disk and its pods' storage: what they write is where a kubelet measures it.

The node's disk is a tmpfs with size and inode bounds (root: mount), the pods' emptyDir volumes
are directories on it (``medium: Memory`` a sized tmpfs of their own), their containers work in
their writable layers, and ``/stats/summary`` reports what ``du`` says of each — tested with
real processes writing known sizes. Without the right to mount, the disk is a directory and the
tests that need a bounded one are skipped, saying so.
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import kubesim
from kubesim.node.config import NodeConfig
from kubesim.node.filesystem import FilesystemConfig, NodeFilesystem, disk_usage
from kubesim.node.runtime import ProcessRuntime
from kubesim.node.stats import node_summary
from kubesim.sim import StateError
from tests.support.wait import until

MIB = 1 << 20
PREFIX = "kubesimstoragetest"


def can_mount() -> bool:
    return os.geteuid() == 0


needs_mount = pytest.mark.skipif(not can_mount(), reason="mounting a tmpfs needs root")


def test_disk_usage_counts_blocks_and_inodes_once_and_never_follows_links(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a").write_bytes(b"x" * 10000)
    os.link(tree / "a", tree / "sub" / "hard")  # one inode, two names
    outside = tmp_path / "outside"
    outside.write_bytes(b"y" * 100000)
    (tree / "link").symlink_to(outside)
    usage = disk_usage(tree)
    blocks = sum(os.lstat(p).st_blocks for p in (tree, tree / "sub", tree / "a", tree / "link"))
    assert usage.bytes == blocks * 512
    assert usage.inodes == 4  # tree, sub, a (once), link
    assert disk_usage(tmp_path / "absent").inodes == 0


def test_a_refused_mount_leaves_a_directory_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubesim.node import filesystem

    def refuse(*_: Any, **__: Any) -> None:
        raise PermissionError(1, "mount tmpfs: Operation not permitted")

    monkeypatch.setattr(filesystem, "mount_tmpfs", refuse)
    fs = NodeFilesystem(
        FilesystemConfig(path=tmp_path / "disk", size=MIB), default_path=tmp_path, source="t"
    ).open()
    try:
        assert not fs.mounted
        assert "Operation not permitted" in fs.reason
        assert (fs.kubelet_root / "pods").is_dir() and fs.pod_logs_root.is_dir()
    finally:
        fs.close()
    assert not (tmp_path / "disk").exists()


@needs_mount
def test_a_bounded_disk_is_a_tmpfs_of_that_size_removed_on_close(tmp_path: Path) -> None:
    fs = NodeFilesystem(
        FilesystemConfig(path=tmp_path / "disk", size=8 * MIB, inodes=500),
        default_path=tmp_path,
        source=f"{PREFIX}-{os.getpid()}",
    ).open()
    try:
        assert fs.mounted, fs.reason
        st = os.statvfs(fs.root)
        assert st.f_blocks * st.f_frsize == 8 * MIB
        assert st.f_files == 500
    finally:
        fs.close()
    assert not (tmp_path / "disk").exists()


def pod(uid: str, command: str, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "command": ["sh", "-c", command],
        "volumeMounts": spec.pop("mounts", []),
    }
    if "workingDir" in spec:
        container["workingDir"] = spec.pop("workingDir")
    return {
        "metadata": {"uid": uid, "namespace": "default", "name": f"pod-{uid}"},
        "status": {"podIP": "10.244.0.7"},
        "spec": {"containers": [container], **spec},
    }


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[ProcessRuntime]:
    if not can_mount():
        pytest.skip("a bounded node disk needs root (tmpfs)")
    rt = ProcessRuntime(
        prefix=PREFIX,
        state_dir=tmp_path / "state",
        memory_capacity=512 * MIB,
        minimum_grace_seconds=0,
        node=NodeConfig(
            filesystem=FilesystemConfig(path=tmp_path / "disk", size=64 * MIB, inodes=2000),
            kube_reserved_memory=112 * MIB,
            eviction_hard_memory=100 * MIB,
        ),
    )
    rt.open()
    try:
        yield rt
    finally:
        await rt.close()


def pod_entry(summary: dict[str, Any], uid: str) -> dict[str, Any]:
    entries: list[dict[str, Any]] = [p for p in summary["pods"] if p["podRef"]["uid"] == uid]
    assert len(entries) == 1, entries
    return entries[0]


async def summary_when(rt: ProcessRuntime, uid: str, log_says: str) -> dict[str, Any]:
    """The node's summary once the pod's log says ``log_says`` (its writes are done)."""

    def done() -> bool:
        status = rt.status(uid) or []
        return (
            bool(status)
            and status[0].log_path is not None
            and (log_says in status[0].log_path.read_text())
        )

    await until(done, timeout=30)
    return node_summary("node-1", rt, started_at=time.time(), clock=time.time)


async def test_what_a_pod_writes_is_counted_where_the_kubelet_counts_it(
    runtime: ProcessRuntime,
) -> None:
    script = (
        "dd if=/dev/zero of=layer bs=1M count=3 2>/dev/null;"
        " dd if=/dev/zero of=scratch/f bs=1M count=5 2>/dev/null;"
        " dd if=/dev/zero of=cache/f bs=1M count=2 2>/dev/null;"
        " mkdir -p inodes && touch inodes/1 inodes/2 inodes/3;"
        " echo hello; echo written; exec sleep 60"
    )
    spec = pod(
        "u1",
        script,
        volumes=[
            {"name": "scratch", "emptyDir": {}},
            {"name": "cache", "emptyDir": {"medium": "Memory"}},
        ],
        mounts=[
            {"name": "scratch", "mountPath": "/scratch"},
            {"name": "cache", "mountPath": "/cache"},
        ],
    )
    await runtime.start(spec)
    summary = await summary_when(runtime, "u1", "written")
    entry = pod_entry(summary, "u1")
    (ctr,) = entry["containers"]
    # writable layer: 3 MiB file, the inodes dir and its 3 files, 2 links, the layer itself
    assert 3 * MIB <= ctr["rootfs"]["usedBytes"] < 3 * MIB + 64 * 1024
    assert ctr["rootfs"]["inodesUsed"] == 8
    assert ctr["logs"]["usedBytes"] == 4096 and ctr["logs"]["inodesUsed"] == 1
    volumes = {v["name"]: v for v in entry["volume"]}
    assert 5 * MIB <= volumes["scratch"]["usedBytes"] < 5 * MIB + 8192
    # the memory-backed volume is its own tmpfs, sized to the node's allocatable memory
    assert volumes["cache"]["capacityBytes"] == 300 * MIB
    assert 2 * MIB <= volumes["cache"]["usedBytes"] < 2 * MIB + 8192
    ephemeral = entry["ephemeral-storage"]
    disk_parts = (
        ctr["rootfs"]["usedBytes"] + ctr["logs"]["usedBytes"] + volumes["scratch"]["usedBytes"]
    )
    etc_hosts = 4096
    assert ephemeral["usedBytes"] == disk_parts + etc_hosts  # not the memory volume
    assert ephemeral["capacityBytes"] == 64 * MIB
    node = summary["node"]
    assert node["fs"]["capacityBytes"] == 64 * MIB and node["fs"]["inodes"] == 2000
    assert node["runtime"]["imageFs"]["capacityBytes"] == 64 * MIB
    assert node["rlimit"]["maxpid"] > node["rlimit"]["curproc"] > 0
    (pods,) = node["systemContainers"]
    assert pods["name"] == "pods"
    # the pods cgroup is capacity less kube-reserved; allocatable less the hard threshold too
    assert pods["memory"]["availableBytes"] <= 400 * MIB
    assert runtime.allocatable_memory == 300 * MIB
    assert entry["process_stats"]["process_count"] == 1
    # the pod's /etc/hosts is the kubelet's, with its IP
    etc = runtime.layout("u1")
    assert etc is not None and "10.244.0.7\tpod-u1" in etc.etc_hosts.read_text()
    await runtime.kill("u1", 0)
    assert not list((runtime.filesystem.kubelet_root / "pods").iterdir())  # type: ignore[union-attr]
    assert not list(runtime.filesystem.snapshots_root.iterdir())  # type: ignore[union-attr]
    assert not list(runtime.filesystem.pod_logs_root.iterdir())  # type: ignore[union-attr]


async def test_a_memory_volume_stops_at_its_size_limit_and_memory_is_the_pods(
    runtime: ProcessRuntime,
) -> None:
    spec = pod(
        "u2",
        "dd if=/dev/zero of=m/f bs=1M count=12; echo written; exec sleep 60",
        volumes=[{"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "4Mi"}}],
        mounts=[{"name": "m", "mountPath": "/m"}],
    )
    await runtime.start(spec)
    summary = await summary_when(runtime, "u2", "written")
    (volume,) = pod_entry(summary, "u2")["volume"]
    assert volume["capacityBytes"] == 4 * MIB
    assert volume["usedBytes"] == 4 * MIB
    log = (runtime.status("u2") or [])[0].log_path
    assert log is not None and "No space left on device" in log.read_text()
    usage = runtime.usage("u2")
    assert usage is not None and usage.working_set_bytes >= 4 * MIB  # tmpfs pages: the pod's


async def test_a_working_dir_is_inside_the_writable_layer(runtime: ProcessRuntime) -> None:
    await runtime.start(pod("u3", "pwd; echo written; exec sleep 60", workingDir="/srv/app"))
    await summary_when(runtime, "u3", "written")
    layout = runtime.layout("u3")
    assert layout is not None
    log = (runtime.status("u3") or [])[0].log_path
    assert log is not None
    assert log.read_text().splitlines()[0] == str(layout.containers[0].writable_layer / "srv/app")


async def test_a_volume_mount_out_of_the_layer_fails_the_container(runtime: ProcessRuntime) -> None:
    spec = pod(
        "u4",
        "exec sleep 60",
        volumes=[{"name": "v", "emptyDir": {}}],
        mounts=[{"name": "v", "mountPath": "/a/../../b"}],
    )
    (status,) = await runtime.start(spec)
    assert status.reason == "StartError"
    assert "must not contain '..'" in (status.message or "")


# --- through kubesim: the ProcessNode document, the node's status and its server ---------------

STATE = """
apiVersion: v1
kind: Node
metadata: {{name: node-1}}
---
apiVersion: kubesim.io/v1alpha1
kind: ProcessNode
metadata: {{name: node-1}}
memoryCapacity: 1Gi
filesystem: {{path: {disk}, size: 32Mi, inodes: 1000}}
kubelet:
  kubeReserved: {{memory: 724Mi}}
  evictionHard: {{memory.available: 100Mi}}
"""


async def test_a_process_node_serves_its_summary_and_reports_its_allocatable(
    tmp_path: Path,
) -> None:
    if not can_mount():
        pytest.skip("a bounded node disk needs root (tmpfs)")
    async with kubesim.serve(state=STATE.format(disk=tmp_path / "disk")) as sim:
        rt = sim.runtimes["node-1"]

        def port() -> int | None:
            node = sim.get("Node", None, "node-1") or {}
            p = ((node.get("status") or {}).get("daemonEndpoints") or {}).get("kubeletEndpoint")
            return int(p["Port"]) if p and p["Port"] != 10250 else None

        kubelet = await until(port)
        node = sim.get("Node", None, "node-1")
        assert node is not None
        status = node["status"]
        assert status["capacity"]["memory"] == "1Gi"  # 1048576Ki, canonical
        assert status["allocatable"]["memory"] == "200Mi"
        assert status["capacity"]["ephemeral-storage"] == "32Mi"
        assert rt.pods_memory_limit == 300 * MIB

        def get() -> Any:
            url = f"http://127.0.0.1:{kubelet}/stats/summary"
            with urllib.request.urlopen(url, timeout=10) as answer:
                import json

                return json.loads(answer.read())

        summary = await asyncio.to_thread(get)
        assert summary["node"]["nodeName"] == "node-1"
        assert summary["node"]["fs"]["capacityBytes"] == 32 * MIB
        assert summary["node"]["fs"]["inodes"] == 1000
        assert summary["pods"] == []


def test_a_process_node_document_with_a_bad_field_is_refused_naming_it() -> None:
    state = STATE.format(disk="/tmp/x").replace("memoryCapacity: 1Gi", "memoryCapacity: lots")
    with pytest.raises(StateError, match="memoryCapacity"):
        kubesim.Simulator(state=state)
