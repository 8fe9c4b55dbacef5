"""Per-pod memory and process stats from the kubepods cgroup hierarchy, and the "pods" system
container (kubepods itself, where ``allocatableMemory.available`` is read).

The pod cgroup only knows the pod's UID; name and namespace come from whoever watches the API
(the agent's pod informer) through ``PodIdentity``, and the kubelet summary can fill them too.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agent.eviction.summary import (
    SYSTEM_CONTAINER_PODS,
    ContainerStats,
    PodReference,
    PodStats,
    ProcessStats,
)
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
def _start_time(path: str) -> float:
    # First sighting of the cgroup (its ctime then, in whole seconds as metav1.Time has it);
    # cached, since a directory's ctime moves whenever a child cgroup is created. Paths embed
    # the pod UID, so entries are never reused.
    try:
        return float(math.floor(os.stat(path).st_ctime))
    except OSError:
        return 0.0


def _process_count(layout: CgroupLayout, rel: str, subdirs: list[str]) -> int | None:
    """The pod's processes, whatever the reader's PID namespace: the DaemonSet runs in its own
    (``hostPID: false``: the host's processes stay out of its view). cgroup v2 lists the
    processes it cannot map there as ``0``, so counting lines of ``cgroup.procs`` (what
    cAdvisor counts) stays exact; cgroup v1 leaves them out, and there the pod's
    ``pids.current`` (every task, threads too) stands in when the list comes back empty."""
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
    time: float,
    identity: PodIdentity | None = None,
) -> PodStats | None:
    """One pod's ``PodStats``; None when the cgroup vanished between listing and reading.

    As the kubelet's: ``memory`` is the pod cgroup's cAdvisor working set (every container and
    the pod overhead), ``process_stats`` sums the containers' processes — what the memory and
    PID rankers read (``rank_memory_pressure``, ``rank_pid_pressure``)."""
    mem = read_cgroup_memory(layout, pod.path)
    if mem is None:
        return None
    ident = identity or PodIdentity(name="", namespace="")
    containers: list[ContainerStats] = []
    pod_dir = f"{layout.memory_root}/{pod.path}"
    subdirs = list_subdirs(pod_dir)
    for cid, dirname in iter_container_cgroups(pod_dir, subdirs=subdirs):
        name = ident.containers.get(cid)
        if name is None:
            # The sandbox ("pause") and containers the API does not list are not reported.
            continue
        cmem = read_cgroup_memory(layout, f"{pod.path}/{dirname}")
        containers.append(
            ContainerStats(
                name=name,
                start_time=_start_time(f"{pod_dir}/{dirname}"),
                memory=None if cmem is None else memory_stats(cmem, limit=cmem.limit, time=time),
            )
        )
    procs = _process_count(layout, pod.path, subdirs)
    return PodStats(
        pod_ref=PodReference(name=ident.name, namespace=ident.namespace, uid=pod.uid),
        start_time=_start_time(pod_dir),
        containers=tuple(containers),
        memory=memory_stats(mem, limit=mem.limit, time=time),
        process_stats=None if procs is None else ProcessStats(procs),
    )


def read_pods(
    layout: CgroupLayout, *, time: float, lookup: PodLookup = _no_lookup
) -> list[PodStats]:
    """Every pod cgroup's ``PodStats`` under kubepods (all QoS classes, either driver)."""
    out: list[PodStats] = []
    for pod in iter_pod_cgroups(layout):
        stats = read_pod_stats(layout, pod, time=time, identity=lookup(pod.uid))
        if stats is not None:
            out.append(stats)
    return out


def read_pods_system_container(layout: CgroupLayout, *, time: float) -> ContainerStats | None:
    """The "pods" system container: the kubepods cgroup, whose limit minus its working set is
    ``allocatableMemory.available``; available only under a finite limit."""
    if layout.kubepods is None:
        return None
    mem = read_cgroup_memory(layout, layout.kubepods)
    if mem is None:
        return None
    return ContainerStats(
        name=SYSTEM_CONTAINER_PODS,
        start_time=_start_time(f"{layout.memory_root}/{layout.kubepods}"),
        memory=memory_stats(mem, limit=mem.limit, time=time),
    )
