"""Node-level stats: memory, filesystems and PIDs, in the kubelet Summary API's shapes.

Each function reproduces how the kubelet fills the matching block of `/stats/summary`:
- memory: the root container's cAdvisor stats; the root "limit" is the machine's memory capacity,
  so `availableBytes = capacity − workingSet` (that is `memory.available`, spec §1). When the
  agent runs inside a node container (kind, kwok, the demo) the node is a cgroup and its capacity
  is that cgroup's limit or an explicit `--memory-capacity`.
- fs: statvfs of the kubelet root (nodefs) and of the runtime root (imagefs; containerfs is the
  same filesystem unless a separate writable-layer root is configured — the kubelet copies imageFs
  into containerFs when the runtime does not split them).
- rlimit: `maxpid` and `curproc` as the kubelet reads them.
The statfs and rlimit readings are `kube.kernelstats`, which kubesim's process nodes serve too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.sources.cgroups import CgroupLayout, CgroupMemory, read_cgroup_memory
from kube.kernelstats import count_tasks, read_fs_stats, read_rlimit, running_task_count

__all__ = [
    "count_tasks",
    "memory_capacity",
    "memory_stats",
    "read_fs_stats",
    "read_meminfo",
    "read_node_memory",
    "read_rlimit",
    "read_runtime_fs",
    "running_task_count",
]

JSONDict = dict[str, Any]


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
    mem: CgroupMemory, *, limit: int | None, time: str, available: bool = True
) -> JSONDict:
    """A Summary `MemoryStats`; `availableBytes` only with a finite limit (as the kubelet)."""
    out: JSONDict = {"time": time}
    if available and limit is not None:
        out["availableBytes"] = max(limit - mem.working_set, 0)
    out["usageBytes"] = mem.usage
    out["workingSetBytes"] = mem.working_set
    if mem.rss is not None:
        out["rssBytes"] = mem.rss
    if mem.page_faults is not None:
        out["pageFaults"] = mem.page_faults
    if mem.major_page_faults is not None:
        out["majorPageFaults"] = mem.major_page_faults
    return out


def read_node_memory(
    layout: CgroupLayout,
    proc_root: Path,
    *,
    time: str,
    node_cgroup: str = "",
    capacity_override: int | None = None,
) -> JSONDict | None:
    """`node.memory`: working set of the node cgroup (root by default), available vs capacity."""
    mem = read_cgroup_memory(layout, node_cgroup)
    if mem is None:
        return None
    capacity = memory_capacity(
        proc_root,
        override=capacity_override,
        node_cgroup=mem if node_cgroup else None,
    )
    return memory_stats(mem, limit=capacity, time=time)


def read_runtime_fs(
    runtime_root: Path, *, container_fs_root: Path | None, time: str
) -> JSONDict | None:
    """`node.runtime`: imageFs from the runtime root; containerFs a copy unless split."""
    image_fs = read_fs_stats(runtime_root, time=time)
    if image_fs is None:
        return None
    container_fs = dict(image_fs)
    if container_fs_root is not None:
        split = read_fs_stats(container_fs_root, time=time)
        if split is not None:
            container_fs = split
    return {"imageFs": image_fs, "containerFs": container_fs}
