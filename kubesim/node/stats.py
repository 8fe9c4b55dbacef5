"""A process node's ``/stats/summary``, computed from its real files and cgroups as a kubelet does.

The eviction agent reads per-pod disk figures from the kubelet's summary
(``--kubelet-summary-url``): no cgroup holds them. A process node serves the same document
(``kubesim.node.server``), filled from what its pods really wrote on the node's disk
(``kubesim.node.filesystem``) and really hold in its cgroups, the way the kubelet's summary
provider fills it (``pkg/kubelet/stats``, CRI stats provider, single-filesystem layout).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kube.kernelstats import read_fs_stats, read_rlimit
from kube.times import format_time
from kubesim.node.filesystem import DiskUsage, disk_usage
from kubesim.node.runtime import ContainerLayout, PodLayout, ProcessRuntime

__all__ = ["node_summary"]

JSONDict = dict[str, Any]

PODS_SYSTEM_CONTAINER = "pods"


def _usage(base: JSONDict | None, usage: DiskUsage, *, time: str) -> JSONDict:
    out: JSONDict = dict(base or {})
    out.update(time=time, usedBytes=usage.bytes, inodesUsed=usage.inodes)
    return out


def _files_usage(directory: Path) -> DiskUsage:
    """The files directly in ``directory`` (``fileMetricsByDir``: subdirectories skipped)."""
    total = DiskUsage(0, 0)
    with contextlib.suppress(OSError):
        for entry in directory.iterdir():
            if entry.is_file() and not entry.is_symlink():
                one = disk_usage(entry)
                total = DiskUsage(total.bytes + one.bytes, total.inodes + one.inodes)
    return total


def _add(into: JSONDict, usage: DiskUsage | JSONDict) -> None:
    if isinstance(usage, DiskUsage):
        used, inodes = usage.bytes, usage.inodes
    else:
        used, inodes = usage.get("usedBytes", 0), usage.get("inodesUsed", 0)
    into["usedBytes"] = into.get("usedBytes", 0) + used
    into["inodesUsed"] = into.get("inodesUsed", 0) + inodes


def _container_stats(
    c: ContainerLayout,
    *,
    working_set: int | None,
    nodefs: JSONDict | None,
    imagefs: JSONDict | None,
    time: str,
) -> JSONDict:
    out: JSONDict = {"name": c.name, "startTime": format_time(c.started_at)}
    if working_set is not None:
        out["memory"] = {"time": time, "workingSetBytes": working_set}
    out["rootfs"] = _usage(imagefs, disk_usage(c.writable_layer), time=time)
    out["logs"] = _usage(nodefs, _files_usage(c.log_dir), time=time)
    return out


def _volume_stats(name: str, path: Path, *, time: str) -> JSONDict:
    out: JSONDict = {"name": name}
    out.update(read_fs_stats(path, time=time) or {"time": time})
    return _usage(out, disk_usage(path), time=time)


def pod_stats(
    layout: PodLayout,
    runtime: ProcessRuntime,
    *,
    nodefs: JSONDict | None,
    imagefs: JSONDict | None,
    time: str,
) -> JSONDict:
    """One ``PodStats`` entry.

    Per container: ``rootfs`` (the writable layer: ``du`` of the snapshot directory and its
    inode count, over the imagefs figures), ``logs`` (the files of the container's log
    directory, over the nodefs figures), ``memory`` (its cgroup's working set). Per pod:
    ``memory`` and ``process_stats`` from the pod cgroup; ``volume``: every emptyDir, ``du``
    over statfs of the volume (a memory-backed one is its own tmpfs); and
    ``ephemeral-storage`` (``calcEphemeralStorage``): the containers' rootfs, their logs (bytes
    and inodes: the CRI provider knows the log inodes), the local ephemeral volumes — emptyDir
    on the node's disk, not ``medium: Memory``, whose pages count as the pod's memory —, the
    files of the pod's log directory and its etc-hosts, over the nodefs figures."""
    usage = runtime.usage(layout.uid)
    per_container = usage.containers if usage is not None else {}
    containers = [
        _container_stats(
            c,
            working_set=per_container.get(c.name),
            nodefs=nodefs,
            imagefs=imagefs,
            time=time,
        )
        for c in layout.containers
    ]
    volumes = [_volume_stats(n, v.path, time=time) for n, v in sorted(layout.volumes.items())]
    ephemeral: JSONDict = {
        k: v for k, v in (nodefs or {}).items() if k not in ("usedBytes", "inodesUsed")
    }
    ephemeral.update(time=time, usedBytes=0, inodesUsed=0)
    for c in containers:
        _add(ephemeral, c["rootfs"])
        _add(ephemeral, c["logs"])
    for v in volumes:
        if not layout.volumes[v["name"]].memory:
            _add(ephemeral, v)
    _add(ephemeral, _files_usage(layout.log_dir))
    if layout.etc_hosts.exists():
        _add(ephemeral, disk_usage(layout.etc_hosts))
    out: JSONDict = {
        "podRef": {"name": layout.name, "namespace": layout.namespace, "uid": layout.uid},
        "startTime": format_time(layout.started_at),
        "containers": containers,
    }
    if usage is not None:
        out["memory"] = {
            "time": time,
            "usageBytes": usage.usage_bytes,
            "workingSetBytes": usage.working_set_bytes,
        }
        out["process_stats"] = {"process_count": usage.process_count}
    out["volume"] = volumes
    out["ephemeral-storage"] = ephemeral
    return out


def node_summary(
    node_name: str,
    runtime: ProcessRuntime,
    *,
    started_at: float,
    clock: Callable[[], float],
    proc_root: Path = Path("/proc"),
) -> JSONDict:
    """The node's ``Summary`` (``stats/v1alpha1``).

    ``node.fs``: statfs of the kubelet's root directory (nodefs); ``node.runtime.imageFs`` and
    ``containerFs``: statfs of the runtime's root, the same device here; ``node.rlimit`` as
    ``kube.kernelstats`` reads it; ``node.memory``: the node's capacity less the working set
    of its pods cgroup, which is also the ``pods`` system container (its own limit less its
    working set: ``allocatableMemory.available``); the pods as ``pod_stats`` gives them.

    The kubelet refreshes volume figures in the background (every minute, jittered) and
    cAdvisor its disk figures every housekeeping; this computes them on each request, so a
    test sees what was written before it asked. Times are whole RFC 3339 seconds, as the
    kubelet prints them."""
    time = format_time(clock())
    fs = runtime.filesystem
    nodefs = read_fs_stats(fs.kubelet_root, time=time) if fs is not None else None
    imagefs = read_fs_stats(fs.runtime_root, time=time) if fs is not None else None
    capacity = runtime.memory_capacity
    pods_usage = runtime.node_usage()
    pods_limit = runtime.pods_memory_limit
    node: JSONDict = {
        "nodeName": node_name,
        "startTime": format_time(started_at),
        "memory": {
            "time": time,
            "availableBytes": max(capacity - pods_usage.working_set_bytes, 0),
            "usageBytes": pods_usage.usage_bytes,
            "workingSetBytes": pods_usage.working_set_bytes,
        },
        "systemContainers": [
            {
                "name": PODS_SYSTEM_CONTAINER,
                "startTime": format_time(started_at),
                "memory": {
                    "time": time,
                    "availableBytes": max(pods_limit - pods_usage.working_set_bytes, 0),
                    "usageBytes": pods_usage.usage_bytes,
                    "workingSetBytes": pods_usage.working_set_bytes,
                },
            }
        ],
        "rlimit": read_rlimit(proc_root, time=time),
    }
    if nodefs is not None:
        node["fs"] = nodefs
    if imagefs is not None:
        node["runtime"] = {"imageFs": imagefs, "containerFs": dict(imagefs)}
    pods = []
    for uid in runtime.pods():
        layout = runtime.layout(uid)
        if layout is None:  # gone while we walked
            continue
        pods.append(
            pod_stats(
                layout,
                runtime,
                nodefs=nodefs,
                imagefs=imagefs,
                time=time,
            )
        )
    return {"node": node, "pods": pods}
