"""Node memory, filesystems and PID figures, computed as the kubelet computes them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.eviction.summary import FsStats, MemoryStats, RlimitStats
from agent.sources.cgroups import CgroupLayout, CgroupMemory, detect_layout
from agent.sources.node import (
    fs_stats,
    memory_capacity,
    read_meminfo,
    read_node_memory,
    read_runtime_fs,
    rlimit_stats,
)
from kube.kernelstats import count_tasks, read_fs_stats, read_rlimit, running_task_count
from tests.support.cgroupfs import FakeCgroup, build_cgroup_tree, build_proc_tree

T = 1_767_225_600.0  # 2026-01-01T00:00:00Z
TEXT = "2026-01-01T00:00:00.000000Z"


def _layout(tmp_path: Path, version: str) -> CgroupLayout:
    root = build_cgroup_tree(
        tmp_path,
        version=version,
        driver="cgroupfs",
        root=FakeCgroup(usage=5 << 30, inactive_file=2 << 30, anon=2 << 30),
        kubepods=FakeCgroup(usage=1 << 30, inactive_file=256 << 20, anon=1 << 29, limit=6 << 30),
        pods=[],
    )
    return detect_layout(root)


@pytest.mark.parametrize("version", ["v1", "v2", "hybrid"])
def test_node_memory_is_capacity_minus_root_working_set(tmp_path: Path, version: str) -> None:
    layout = _layout(tmp_path, version)
    proc = build_proc_tree(tmp_path, mem_total=8 << 30)
    mem = read_node_memory(layout, proc, time=T)
    assert mem == MemoryStats(
        time=T,
        available_bytes=(8 << 30) - (3 << 30),
        usage_bytes=5 << 30,
        working_set_bytes=3 << 30,
        rss_bytes=2 << 30,
        page_faults=42,
        major_page_faults=3,
    )


def test_node_cgroup_limit_is_the_capacity_of_a_node_container(tmp_path: Path) -> None:
    layout = _layout(tmp_path, "v2")
    proc = build_proc_tree(tmp_path, mem_total=64 << 30)
    mem = read_node_memory(layout, proc, time=T, node_cgroup="kubepods")
    assert mem is not None
    assert mem.working_set_bytes == (1 << 30) - (256 << 20)
    assert mem.available_bytes == (6 << 30) - mem.working_set_bytes
    # The explicit override wins over the cgroup limit.
    mem = read_node_memory(
        layout,
        proc,
        time=T,
        node_cgroup="kubepods",
        capacity_override=2 << 30,
    )
    assert mem is not None and mem.working_set_bytes is not None
    assert mem.available_bytes == (2 << 30) - mem.working_set_bytes
    assert read_node_memory(layout, proc, time=T, node_cgroup="nope") is None


def test_memory_capacity_sources(tmp_path: Path) -> None:
    proc = build_proc_tree(tmp_path, mem_total=4 << 30)
    limited = CgroupMemory(usage=1, working_set=1, rss=None, page_faults=None,
                           major_page_faults=None, limit=1 << 30)  # fmt: skip
    unlimited = CgroupMemory(usage=1, working_set=1, rss=None, page_faults=None,
                             major_page_faults=None, limit=None)  # fmt: skip
    assert memory_capacity(proc) == 4 << 30
    assert memory_capacity(proc, node_cgroup=limited) == 1 << 30
    assert memory_capacity(proc, node_cgroup=unlimited) == 4 << 30
    assert memory_capacity(proc, override=123, node_cgroup=limited) == 123
    assert memory_capacity(tmp_path / "noproc") is None
    assert read_meminfo(proc)["HugePages_Total"] == 0


def test_available_is_floored_at_zero(tmp_path: Path) -> None:
    layout = _layout(tmp_path, "v1")
    proc = build_proc_tree(tmp_path)
    mem = read_node_memory(layout, proc, time=T, capacity_override=1 << 30)
    assert mem is not None
    assert mem.available_bytes == 0


def test_fs_stats_match_statvfs(tmp_path: Path) -> None:
    fs = read_fs_stats(tmp_path, time=TEXT)
    st = os.statvfs(tmp_path)
    assert fs is not None
    assert fs["capacityBytes"] == st.f_blocks * st.f_frsize
    assert fs["inodes"] == st.f_files
    assert fs["inodesUsed"] == fs["inodes"] - fs["inodesFree"]
    assert 0 <= fs["availableBytes"] <= fs["capacityBytes"]
    assert fs["usedBytes"] <= fs["capacityBytes"]
    assert read_fs_stats(tmp_path / "absent", time=TEXT) is None
    typed = fs_stats(tmp_path, time=T)
    assert typed is not None and typed.time == T
    assert typed.capacity_bytes == fs["capacityBytes"] and typed.inodes == fs["inodes"]
    assert fs_stats(tmp_path / "absent", time=T) is None


def test_runtime_fs_is_image_fs_unless_split(tmp_path: Path) -> None:
    rt = read_runtime_fs(tmp_path, container_fs_root=None, time=T)
    assert rt is not None and isinstance(rt.image_fs, FsStats)
    assert rt.container_fs == rt.image_fs
    split = read_runtime_fs(tmp_path, container_fs_root=Path("/proc"), time=T)
    assert split is not None and split.container_fs is not None
    assert split.container_fs.capacity_bytes == 0  # procfs reports no blocks
    assert read_runtime_fs(tmp_path / "absent", container_fs_root=None, time=T) is None


def test_rlimit_takes_min_of_pid_max_and_threads_max(tmp_path: Path) -> None:
    proc = build_proc_tree(tmp_path, pid_max=4194304, threads_max=63704)
    assert read_rlimit(proc, time=TEXT) == {"time": TEXT, "maxpid": 63704, "curproc": 1234}
    assert rlimit_stats(proc, time=T) == RlimitStats(T, 63704, 1234)
    proc = build_proc_tree(tmp_path / "b", pid_max=32768, threads_max=None)
    assert read_rlimit(proc, time=TEXT)["maxpid"] == 32768


def test_rlimit_without_sysctls_omits_maxpid(tmp_path: Path) -> None:
    proc = build_proc_tree(tmp_path, pid_max=None, threads_max=None)
    assert "maxpid" not in read_rlimit(proc, time=TEXT)
    assert rlimit_stats(proc, time=T).max_pid is None


def test_curproc_falls_back_to_counting_tasks(tmp_path: Path) -> None:
    proc = build_proc_tree(tmp_path, loadavg="0.1 0.2 0.3 bogus 1")
    assert running_task_count(proc) is None
    for pid, threads in ((1, 1), (42, 3)):
        for tid in range(threads):
            (proc / str(pid) / "task" / str(pid + tid)).mkdir(parents=True)
    (proc / "self").mkdir()
    assert count_tasks(proc) == 4
    assert read_rlimit(proc, time=TEXT)["curproc"] == 4


def test_real_proc_rlimit() -> None:
    real = read_rlimit(Path("/proc"), time=TEXT)
    limits = [int(Path(f"/proc/sys/kernel/{n}").read_text()) for n in ("pid_max", "threads-max")]
    assert real["maxpid"] == min(limits)
    assert real["curproc"] >= 1
