"""Per-pod memory and process stats from the kubepods cgroup hierarchy.

The kubelet's pod-level `memory.workingSetBytes` is the pod cgroup's cAdvisor working set (the pod
cgroup includes every container and the pod overhead), and `process_stats.process_count` sums the
containers' process counts — the figures the memory and PID rankers read (spec §5).

The process count must not depend on the reader's PID namespace: the DaemonSet runs in a
namespace of its own (`hostPID: false`, least privilege: the host's process list, command lines
and `/proc/<pid>` stay out of its view). cgroup v2 lists the processes it cannot map there as
`0`, so counting lines of `cgroup.procs` (what cAdvisor counts) stays exact; cgroup v1 leaves
them out, and there the pod's `pids.current` (every task, so threads count too) stands in when
the list comes back empty while the pids controller counts tasks.

The pod cgroup only knows the pod's UID; name and namespace come from whoever watches the API
(the agent's pod informer) through `PodIdentity`, and the kubelet summary can fill them too.

The kubepods cgroup itself is the kubelet's "pods" system container: `allocatableMemory.available`
is its limit minus its working set (spec §1), so it is reported in `node.systemContainers`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.sources.cgroups import (
    CgroupLayout,
    PodCgroup,
    count_processes,
    count_tasks,
    iter_container_cgroups,
    iter_pod_cgroups,
    list_subdirs,
    read_cgroup_memory,
)
from agent.sources.node import memory_stats
from kube.times import format_time

JSONDict = dict[str, Any]


@dataclass(frozen=True)
class PodIdentity:
    """What the API knows about a pod the cgroups only name by UID."""

    name: str
    namespace: str
    # runtime container ID (without the `containerd://` scheme) → container name
    containers: Mapping[str, str] = field(default_factory=dict)


PodLookup = Callable[[str], PodIdentity | None]


def _no_lookup(_uid: str) -> PodIdentity | None:
    return None


@functools.lru_cache(maxsize=4096)
def _start_time(path: str) -> str:
    # First sighting of the cgroup (its ctime then); cached, since a directory's ctime moves
    # whenever a child cgroup is created. Paths embed the pod UID, so entries are never reused.
    try:
        ts = os.stat(path).st_ctime
    except OSError:
        ts = 0.0
    return format_time(ts)


def _process_count(layout: CgroupLayout, rel: str, subdirs: list[str]) -> int | None:
    n = count_processes(layout.procs_root, rel, children=subdirs)
    if n is None and layout.procs_root != layout.memory_root:
        n = count_processes(layout.memory_root, rel, children=subdirs)
    if n == 0 and layout.is_v1_memory:
        # v1 lists only the processes the reader's PID namespace sees: none at all from the
        # DaemonSet's own namespace. The pids controller still counts them (threads included).
        tasks = count_tasks(layout.procs_root, rel)
        if tasks:
            return tasks
    return n


def read_pod_stats(
    layout: CgroupLayout,
    pod: PodCgroup,
    *,
    time: str,
    identity: PodIdentity | None = None,
) -> JSONDict | None:
    """One `PodStats` entry; None when the cgroup vanished between listing and reading."""
    mem = read_cgroup_memory(layout, pod.path)
    if mem is None:
        return None
    ident = identity or PodIdentity(name="", namespace="")
    containers: list[JSONDict] = []
    pod_dir = f"{layout.memory_root}/{pod.path}"
    subdirs = list_subdirs(pod_dir)
    for cid, dirname in iter_container_cgroups(pod_dir, subdirs=subdirs):
        name = ident.containers.get(cid)
        if name is None:
            # The sandbox ("pause") and containers the API does not list are not reported.
            continue
        cmem = read_cgroup_memory(layout, f"{pod.path}/{dirname}")
        entry: JSONDict = {"name": name, "startTime": _start_time(f"{pod_dir}/{dirname}")}
        if cmem is not None:
            entry["memory"] = memory_stats(cmem, limit=cmem.limit, time=time)
        containers.append(entry)
    stats: JSONDict = {
        "podRef": {"name": ident.name, "namespace": ident.namespace, "uid": pod.uid},
        "startTime": _start_time(pod_dir),
        "containers": containers,
        "memory": memory_stats(mem, limit=mem.limit, time=time),
    }
    procs = _process_count(layout, pod.path, subdirs)
    if procs is not None:
        stats["process_stats"] = {"process_count": procs}
    return stats


def read_pods(layout: CgroupLayout, *, time: str, lookup: PodLookup = _no_lookup) -> list[JSONDict]:
    """`pods[]` for every pod cgroup under kubepods (all QoS classes, either driver)."""
    out: list[JSONDict] = []
    for pod in iter_pod_cgroups(layout):
        stats = read_pod_stats(layout, pod, time=time, identity=lookup(pod.uid))
        if stats is not None:
            out.append(stats)
    return out


def read_pods_system_container(layout: CgroupLayout, *, time: str) -> JSONDict | None:
    """The "pods" system container: the kubepods cgroup; available only under a finite limit."""
    if layout.kubepods is None:
        return None
    mem = read_cgroup_memory(layout, layout.kubepods)
    if mem is None:
        return None
    return {
        "name": "pods",
        "startTime": _start_time(f"{layout.memory_root}/{layout.kubepods}"),
        "memory": memory_stats(mem, limit=mem.limit, time=time),
    }
