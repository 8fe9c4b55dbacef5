"""Node-level stats: memory, filesystems and PIDs, in the kubelet Summary API's shapes.

Each function reproduces how the kubelet fills the matching block of `/stats/summary`:
- memory: the root container's cAdvisor stats; the root "limit" is the machine's memory capacity,
  so `availableBytes = capacity − workingSet` (that is `memory.available`, spec §1). When the
  agent runs inside a node container (kind, kwok, the demo) the node is a cgroup and its capacity
  is that cgroup's limit or an explicit `--memory-capacity`.
- fs: statvfs of the kubelet root (nodefs) and of the runtime root (imagefs; containerfs is the
  same filesystem unless a separate writable-layer root is configured — the kubelet copies imageFs
  into containerFs when the runtime does not split them).
- rlimit: `maxpid = min(kernel.pid_max, kernel.threads-max)`, `curproc` = the task total of
  `/proc/loadavg`, falling back to counting tasks (the kubelet prefers loadavg because sysinfo(2)
  truncates above 65535, kubernetes/kubernetes#107107).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent.sources.cgroups import CgroupLayout, CgroupMemory, read_cgroup_memory

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


def read_fs_stats(path: Path, *, time: str) -> JSONDict | None:
    """A Summary `FsStats` from statvfs; None when the path does not exist."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return {
        "time": time,
        "availableBytes": st.f_bavail * st.f_frsize,
        "capacityBytes": st.f_blocks * st.f_frsize,
        "usedBytes": (st.f_blocks - st.f_bfree) * st.f_frsize,
        "inodesFree": st.f_ffree,
        "inodes": st.f_files,
        "inodesUsed": st.f_files - st.f_ffree,
    }


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


def _read_first_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def running_task_count(proc_root: Path) -> int | None:
    """Total tasks from the 4th field of `/proc/loadavg` (`running/total`)."""
    try:
        fields = (proc_root / "loadavg").read_text().split()
    except OSError:
        return None
    if len(fields) < 5:
        return None
    _, sep, total = fields[3].partition("/")
    return int(total) if sep and total.isdigit() else None


def count_tasks(proc_root: Path) -> int:
    """Fallback: count every thread under `/proc/<pid>/task` (what sysinfo's procs counts)."""
    n = 0
    try:
        entries = list(os.scandir(proc_root))
    except OSError:
        return 0
    for entry in entries:
        if entry.name.isdigit():
            try:
                n += sum(1 for _ in os.scandir(os.path.join(entry.path, "task")))
            except OSError:
                continue
    return n


def read_rlimit(proc_root: Path, *, time: str) -> JSONDict:
    """`node.rlimit`: `maxpid` only when at least one of the two sysctls could be read."""
    out: JSONDict = {"time": time}
    limits = [
        v
        for v in (
            _read_first_int(proc_root / "sys" / "kernel" / "pid_max"),
            _read_first_int(proc_root / "sys" / "kernel" / "threads-max"),
        )
        if v is not None
    ]
    if limits:
        out["maxpid"] = min(limits)
    cur = running_task_count(proc_root)
    out["curproc"] = cur if cur is not None else count_tasks(proc_root)
    return out
