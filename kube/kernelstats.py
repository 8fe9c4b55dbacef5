"""The Summary API's node blocks that come straight from the kernel: ``FsStats`` and ``rlimit``.

Both the agent (reading the node it runs on) and kubesim's process nodes (serving a kubelet's
``/stats/summary``) fill these blocks, and they must fill them alike, as the kubelet does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["count_tasks", "read_fs_stats", "read_rlimit", "running_task_count"]

JSONDict = dict[str, Any]


def read_fs_stats(path: Path, *, time: str) -> JSONDict | None:
    """A Summary `FsStats` from statvfs; None when the path does not exist.

    As cAdvisor's ``GetFsInfo``: capacity = blocks × fragment size, available = blocks available
    to unprivileged users, used = blocks − free; inodes, inodesFree and inodesUsed likewise.
    """
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
    """`node.rlimit`: `maxpid` only when at least one of the two sysctls could be read.

    ``maxpid = min(kernel.pid_max, kernel.threads-max)``, ``curproc`` = the task total of
    ``/proc/loadavg``, falling back to counting tasks (the kubelet prefers loadavg because
    sysinfo(2) truncates above 65535, kubernetes/kubernetes#107107); ``pid.available`` is their
    difference.
    """
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
