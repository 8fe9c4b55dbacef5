"""The node's blocks of the Summary: memory, filesystems and PIDs, as the kubelet fills them.

The statfs and rlimit readings are ``kube.kernelstats``'s, which kubesim's process nodes serve
too; here they become the typed blocks of ``agent.eviction.summary``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent.eviction.summary import FsStats, MemoryStats, RlimitStats, RuntimeStats
from agent.sources.cgroups import CgroupLayout, CgroupMemory, read_cgroup_memory
from kube.kernelstats import read_fs_stats, read_rlimit

__all__ = [
    "fs_stats",
    "memory_capacity",
    "memory_stats",
    "read_meminfo",
    "read_node_memory",
    "read_runtime_fs",
    "rlimit_stats",
]


def read_meminfo(proc_root: Path) -> dict[str, int]:
    """`/proc/meminfo` in bytes, keyed by field name."""
    out: dict[str, int] = {}
    try:
        text = (proc_root / "meminfo").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        parts = rest.split()
        if not parts or not parts[0].isdigit():
            continue
        value = int(parts[0])
        out[key.strip()] = value * 1024 if len(parts) > 1 and parts[1] == "kB" else value
    return out


def memory_capacity(
    proc_root: Path,
    *,
    override: int | None = None,
    node_cgroup: CgroupMemory | None = None,
) -> int | None:
    """Node memory capacity: explicit override, else the node cgroup's limit, else MemTotal."""
    if override is not None:
        return override
    if node_cgroup is not None and node_cgroup.limit is not None:
        return node_cgroup.limit
    total = read_meminfo(proc_root).get("MemTotal")
    return total if total else None


def memory_stats(
    mem: CgroupMemory, *, limit: int | None, time: float, available: bool = True
) -> MemoryStats:
    """A Summary ``MemoryStats``; ``available_bytes`` only under a finite limit (as the
    kubelet: ``limit − workingSet``, never below 0)."""
    return MemoryStats(
        time=time,
        available_bytes=max(limit - mem.working_set, 0)
        if available and limit is not None
        else None,
        usage_bytes=mem.usage,
        working_set_bytes=mem.working_set,
        rss_bytes=mem.rss,
        page_faults=mem.page_faults,
        major_page_faults=mem.major_page_faults,
    )


def read_node_memory(
    layout: CgroupLayout,
    proc_root: Path,
    *,
    time: float,
    node_cgroup: str = "",
    capacity_override: int | None = None,
) -> MemoryStats | None:
    """``node.memory``: the working set of the node cgroup (the root by default) and what is
    available of the capacity.

    As the kubelet's root container, whose "limit" is the machine's memory: ``availableBytes =
    capacity − workingSet`` is ``memory.available``
    (https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/#eviction-signals).
    When the agent runs inside a node container (kind, kwok, the demo) the node is a cgroup,
    and its capacity that cgroup's limit or an explicit ``--memory-capacity``.
    """
    mem = read_cgroup_memory(layout, node_cgroup)
    if mem is None:
        return None
    capacity = memory_capacity(
        proc_root,
        override=capacity_override,
        node_cgroup=mem if node_cgroup else None,
    )
    return memory_stats(mem, limit=capacity, time=time)


def fs_stats(path: Path, *, time: float) -> FsStats | None:
    """``FsStats`` of the filesystem at ``path`` (``kube.kernelstats``' statvfs); None when
    the path does not exist."""
    raw = read_fs_stats(path, time="")
    if raw is None:
        return None
    return replace(FsStats.from_dict(raw, str(path)), time=time)


def rlimit_stats(proc_root: Path, *, time: float) -> RlimitStats:
    """``node.rlimit`` (``kube.kernelstats``): ``maxpid`` and ``curproc``."""
    return replace(RlimitStats.from_dict(read_rlimit(proc_root, time=""), "rlimit"), time=time)


def read_runtime_fs(
    runtime_root: Path, *, container_fs_root: Path | None, time: float
) -> RuntimeStats | None:
    """``node.runtime``: imageFs from the runtime root; containerFs the same reading unless
    the writable layers have a root of their own (the kubelet copies imageFs into containerFs
    when the runtime does not split them). nodefs is ``fs_stats`` of the kubelet root."""
    image_fs = fs_stats(runtime_root, time=time)
    if image_fs is None:
        return None
    container_fs = image_fs
    if container_fs_root is not None:
        container_fs = fs_stats(container_fs_root, time=time) or image_fs
    return RuntimeStats(image_fs=image_fs, container_fs=container_fs)
