"""Builders for the eviction-core tests: pods as manifests, summaries as /stats/summary JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.eviction import Summary
from agent.eviction.pods import VolumeInfo, volume_infos_from_manifest
from agent.eviction.types import ManagerConfig
from kube.objects import Pod

MI = 1024 * 1024
GI = 1024 * MI


def make_pod(
    name: str,
    *,
    priority: int | None = None,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
    tgps: int | None = None,
    volumes: list[dict[str, Any]] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    pod_requests: dict[str, str] | None = None,
    overhead: dict[str, str] | None = None,
    namespace: str = "default",
) -> Pod:
    if containers is None:
        res: dict[str, Any] = {}
        if requests:
            res["requests"] = requests
        if limits:
            res["limits"] = limits
        containers = [{"name": "c", "resources": res}]
    spec: dict[str, Any] = {"containers": containers}
    if init_containers:
        spec["initContainers"] = init_containers
    if priority is not None:
        spec["priority"] = priority
    if tgps is not None:
        spec["terminationGracePeriodSeconds"] = tgps
    if volumes:
        spec["volumes"] = volumes
    if tolerations:
        spec["tolerations"] = tolerations
    if pod_requests:
        spec["resources"] = {"requests": pod_requests}
    if overhead:
        spec["overhead"] = overhead
    manifest = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "annotations": annotations or {},
        },
        "spec": spec,
    }
    _MANIFESTS[manifest["metadata"]["uid"]] = manifest
    return Pod.from_dict(manifest)


_MANIFESTS: dict[str, dict[str, Any]] = {}


def manifest_volumes(pod: Pod) -> tuple[VolumeInfo, ...]:
    """Volumes with emptyDir medium and sizeLimit, read from the manifest the pod was built from
    (what the agent's shell passes as ``pod_volumes``)."""
    return volume_infos_from_manifest(_MANIFESTS[pod.uid])


def fs(
    *,
    available: int | None = None,
    capacity: int | None = None,
    used: int | None = None,
    inodes_free: int | None = None,
    inodes: int | None = None,
    inodes_used: int | None = None,
    time: str | None = None,
) -> dict[str, Any]:
    fields = {
        "availableBytes": available,
        "capacityBytes": capacity,
        "usedBytes": used,
        "inodesFree": inodes_free,
        "inodes": inodes,
        "inodesUsed": inodes_used,
        "time": time,
    }
    return {k: v for k, v in fields.items() if v is not None}


@dataclass
class PodUsage:
    name: str
    memory: int | None = None  # pod working set
    processes: int | None = None
    rootfs: int | None = None  # per container "c"
    logs: int | None = None
    rootfs_inodes: int | None = None
    logs_inodes: int | None = None
    volumes: dict[str, int] = field(default_factory=dict)
    ephemeral: int | None = None
    containers: list[dict[str, Any]] | None = None
    uid: str | None = None  # default "uid-<name>", as make_pod's; a static pod's is its hash


def pod_stats(u: PodUsage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "podRef": {"name": u.name, "namespace": "default", "uid": u.uid or f"uid-{u.name}"},
    }
    if u.memory is not None:
        out["memory"] = {"workingSetBytes": u.memory}
    if u.processes is not None:
        out["process_stats"] = {"process_count": u.processes}
    if u.containers is not None:
        out["containers"] = u.containers
    elif u.rootfs is not None or u.logs is not None:
        c: dict[str, Any] = {"name": "c"}
        if u.rootfs is not None:
            c["rootfs"] = fs(used=u.rootfs, inodes_used=u.rootfs_inodes)
        if u.logs is not None:
            c["logs"] = fs(used=u.logs, inodes_used=u.logs_inodes)
        out["containers"] = [c]
    if u.volumes:
        out["volume"] = [{"name": k, "usedBytes": v} for k, v in u.volumes.items()]
    if u.ephemeral is not None:
        out["ephemeral-storage"] = {"usedBytes": u.ephemeral}
    return out


def summary_dict(
    *,
    mem_available: int | None = None,
    mem_working_set: int | None = None,
    mem_time: str | None = None,
    allocatable_available: int | None = None,
    allocatable_working_set: int | None = None,
    nodefs: dict[str, Any] | None = None,
    imagefs: dict[str, Any] | None = None,
    containerfs: dict[str, Any] | None = None,
    max_pid: int | None = None,
    procs: int | None = None,
    pods: list[PodUsage] | None = None,
) -> dict[str, Any]:
    node: dict[str, Any] = {"nodeName": "node-a"}
    if mem_available is not None:
        node["memory"] = {"availableBytes": mem_available, "workingSetBytes": mem_working_set}
        if mem_time:
            node["memory"]["time"] = mem_time
    if allocatable_available is not None:
        node["systemContainers"] = [
            {
                "name": "pods",
                "memory": {
                    "availableBytes": allocatable_available,
                    "workingSetBytes": allocatable_working_set,
                },
            }
        ]
    if nodefs is not None:
        node["fs"] = nodefs
    runtime: dict[str, Any] = {}
    if imagefs is not None:
        runtime["imageFs"] = imagefs
    if containerfs is not None:
        runtime["containerFs"] = containerfs
    if runtime:
        node["runtime"] = runtime
    if max_pid is not None:
        node["rlimit"] = {"maxpid": max_pid, "curproc": procs}
    return {"node": node, "pods": [pod_stats(p) for p in pods or []]}


def summary(**kwargs: Any) -> Summary:
    return Summary.from_dict(summary_dict(**kwargs))


def config(thresholds: Any, **kwargs: Any) -> ManagerConfig:
    return ManagerConfig(thresholds=thresholds, **kwargs)
