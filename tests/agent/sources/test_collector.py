"""The collector's Summary on every cgroup layout: node and per-pod stats, the "pods" system
container, pluggable readers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.eviction.summary import FsStats, PodReference, ProcessStats, RlimitStats
from agent.sources.cgroups import detect_layout, pressure_path
from agent.sources.collector import (
    MEMORY_SECTIONS,
    CollectContext,
    SourceConfig,
    SummaryCollector,
)
from agent.sources.pods import PodIdentity, read_pods, read_pods_system_container
from agent.sources.roots import Roots
from tests.support.cgroupfs import FakeCgroup, FakePod, build_cgroup_tree, build_proc_tree

UID_G = "aaaaaaaa-1111-4a2b-9c3d-000000000001"
UID_B = "bbbbbbbb-2222-4a2b-9c3d-000000000002"
UID_BE = "cccccccc-3333-4a2b-9c3d-000000000003"
CID = "c0" * 32
T0 = 1_700_000_000.25


def _build(tmp_path: Path, version: str, driver: str, *, kubepods_limit: int | None) -> Roots:
    cg = build_cgroup_tree(
        tmp_path,
        version=version,
        driver=driver,
        root=FakeCgroup(usage=6 << 30, inactive_file=1 << 30, anon=4 << 30),
        kubepods=FakeCgroup(
            usage=3 << 30, inactive_file=512 << 20, anon=2 << 30, limit=kubepods_limit
        ),
        pods=[
            FakePod(
                UID_G,
                "guaranteed",
                FakeCgroup(usage=300 << 20, inactive_file=100 << 20, limit=512 << 20, procs=[7]),
            ),
            FakePod(
                UID_B,
                "burstable",
                FakeCgroup(usage=200 << 20, inactive_file=250 << 20, procs=[10, 11]),
                containers={
                    f"cri-containerd-{CID}.scope" if driver == "systemd" else CID: FakeCgroup(
                        usage=150 << 20, inactive_file=10 << 20, procs=[12]
                    ),
                },
            ),
            FakePod(UID_BE, "besteffort", FakeCgroup(usage=100 << 20)),
        ],
    )
    proc = build_proc_tree(tmp_path, mem_total=8 << 30)
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir()
    return Roots(proc_root=proc, cgroup_root=cg, kubelet_root=kubelet, runtime_root=tmp_path / "rt")


def _lookup(uid: str) -> PodIdentity | None:
    if uid == UID_B:
        return PodIdentity(name="web", namespace="shop", containers={CID: "app"})
    return None


@pytest.mark.parametrize("version", ["v1", "v2", "hybrid"])
@pytest.mark.parametrize("driver", ["systemd", "cgroupfs"])
def test_summary_schema_on_every_layout(tmp_path: Path, version: str, driver: str) -> None:
    roots = _build(tmp_path, version, driver, kubepods_limit=7 << 30)
    col = SummaryCollector(
        SourceConfig(roots=roots, node_name="node-1"),
        lookup=_lookup,
        wall_clock=lambda: T0,
    )
    s = col.collect()
    assert col.errors == []
    node = s.node
    assert node.node_name == "node-1"
    assert node.start_time == T0
    assert node.memory is not None
    assert node.memory.working_set_bytes == 5 << 30
    assert node.memory.available_bytes == 3 << 30
    assert node.memory.time == T0
    assert node.fs is not None and node.fs.time == T0
    for name in FsStats.__slots__:
        assert getattr(node.fs, name) is not None, name
    # No runtime root on this fixture: images share nodefs (single filesystem layout). The
    # two statvfs readings of that live disk may differ by what other processes wrote between
    # them, so the filesystem is recognised by its size and inode count.
    assert node.runtime is not None and node.runtime.image_fs is not None
    image_fs = node.runtime.image_fs
    for name in ("capacity_bytes", "inodes", "time"):
        assert getattr(image_fs, name) == getattr(node.fs, name), name
    # containerFs is imageFs's reading (the runtime does not split them), not a third statvfs
    assert node.runtime.container_fs is image_fs
    assert node.rlimit == RlimitStats(time=T0, max_pid=63704, num_of_running_processes=1234)
    [pods_sc] = node.system_containers
    assert pods_sc.name == "pods" and pods_sc.memory is not None
    assert pods_sc.memory.working_set_bytes == (3 << 30) - (512 << 20)
    assert pods_sc.memory.available_bytes == (7 << 30) - pods_sc.memory.working_set_bytes

    by_uid = {p.pod_ref.uid: p for p in s.pods}
    assert list(by_uid) == [UID_G, UID_B, UID_BE]
    g, b, be = by_uid[UID_G], by_uid[UID_B], by_uid[UID_BE]
    assert g.pod_ref == PodReference(name="", namespace="", uid=UID_G)
    assert g.memory is not None and g.memory.working_set_bytes == 200 << 20
    assert g.memory.available_bytes == (512 << 20) - (200 << 20)
    assert g.process_stats == ProcessStats(1)
    assert g.containers == ()
    assert b.pod_ref == PodReference(name="web", namespace="shop", uid=UID_B)
    # inactive_file above usage floors the working set at zero.
    assert b.memory is not None and b.memory.working_set_bytes == 0
    assert b.memory.available_bytes is None
    # pids 10, 11 in the pod cgroup and 12 in its container: three processes.
    assert b.process_stats == ProcessStats(3)
    [app] = b.containers
    assert app.name == "app"
    assert app.memory is not None and app.memory.working_set_bytes == 140 << 20
    assert be.memory is not None and be.memory.working_set_bytes == 100 << 20
    assert be.process_stats == ProcessStats(0)


def test_pods_system_container_without_limit_has_no_available(tmp_path: Path) -> None:
    roots = _build(tmp_path, "v2", "systemd", kubepods_limit=None)
    layout = detect_layout(roots.cgroup_root)
    sc = read_pods_system_container(layout, time=T0)
    assert sc is not None and sc.memory is not None
    assert sc.memory.available_bytes is None
    assert sc.memory.working_set_bytes == (3 << 30) - (512 << 20)


def test_no_kubepods_means_no_pods_and_no_system_container(tmp_path: Path) -> None:
    (tmp_path / "cgroup").mkdir()
    (tmp_path / "cgroup" / "cgroup.controllers").write_text("memory\n")
    (tmp_path / "cgroup" / "memory.stat").write_text("anon 10\nfile 5\ninactive_file 5\n")
    layout = detect_layout(tmp_path / "cgroup")
    assert read_pods(layout, time=T0) == []
    assert read_pods_system_container(layout, time=T0) is None
    col = SummaryCollector(
        SourceConfig(
            roots=Roots(proc_root=build_proc_tree(tmp_path), cgroup_root=layout.memory_root)
        )
    )
    s = col.collect()
    assert s.node.system_containers == ()
    assert s.node.memory is not None and s.node.memory.working_set_bytes == 10


def test_missing_cgroup_tree_is_reported_and_other_sections_still_filled(tmp_path: Path) -> None:
    proc = build_proc_tree(tmp_path)
    col = SummaryCollector(
        SourceConfig(
            roots=Roots(proc_root=proc, cgroup_root=tmp_path / "nocg", kubelet_root=tmp_path)
        )
    )
    s = col.collect()
    assert any("no cgroup filesystem" in e for e in col.errors)
    assert s.node.memory is None
    assert s.pods == ()
    assert s.node.rlimit is not None and s.node.rlimit.max_pid == 63704
    assert s.node.fs is not None


def test_readers_are_pluggable_and_a_broken_one_is_contained(tmp_path: Path) -> None:
    roots = _build(tmp_path, "v1", "cgroupfs", kubepods_limit=None)

    def fixed_rlimit(ctx: CollectContext) -> RlimitStats:
        return RlimitStats(time=ctx.time, max_pid=100, num_of_running_processes=99)

    def broken(_ctx: CollectContext) -> Any:
        raise RuntimeError("disk on fire")

    col = SummaryCollector(
        SourceConfig(roots=roots), readers={"rlimit": fixed_rlimit, "fs": broken}
    )
    s = col.collect()
    assert s.node.rlimit is not None and s.node.rlimit.num_of_running_processes == 99
    assert s.node.fs is None
    assert col.errors == ["fs: RuntimeError: disk on fire"]
    assert len(s.pods) == 3
    with pytest.raises(ValueError, match="unknown summary readers \\['cpu'\\]"):
        SummaryCollector(SourceConfig(roots=roots), readers={"cpu": fixed_rlimit})


def test_kubepods_created_after_start_is_picked_up(tmp_path: Path) -> None:
    cg = tmp_path / "cgroup"
    cg.mkdir()
    (cg / "cgroup.controllers").write_text("memory\n")
    col = SummaryCollector(SourceConfig(roots=Roots(cgroup_root=cg, proc_root=tmp_path)))
    assert col.collect().pods == ()
    build_cgroup_tree(
        tmp_path,
        version="v2",
        driver="cgroupfs",
        root=FakeCgroup(usage=1),
        kubepods=FakeCgroup(usage=1),
        pods=[FakePod(UID_B, "burstable", FakeCgroup(usage=5))],
    )
    assert [p.pod_ref.uid for p in col.collect().pods] == [UID_B]


STATIC_UID = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize("version", ["v1", "v2", "hybrid"])
@pytest.mark.parametrize("driver", ["systemd", "cgroupfs"])
def test_static_pods_are_collected_under_their_static_uid(
    tmp_path: Path, version: str, driver: str
) -> None:
    """The kubelet files a static pod's stats under the UID it runs it by (the hash), the
    cgroup's name; the lookup may name it from its mirror pod."""
    cid = "d1" * 32
    cg = build_cgroup_tree(
        tmp_path,
        version=version,
        driver=driver,
        root=FakeCgroup(usage=6 << 30),
        kubepods=FakeCgroup(usage=3 << 30),
        pods=[
            FakePod(
                STATIC_UID,
                "besteffort",
                FakeCgroup(usage=64 << 20),
                containers={
                    f"cri-containerd-{cid}.scope" if driver == "systemd" else cid: FakeCgroup(
                        usage=60 << 20, procs=[41, 42]
                    )
                },
            )
        ],
    )

    def lookup(uid: str) -> PodIdentity | None:
        if uid == STATIC_UID:
            return PodIdentity(
                name="etcd-node-1", namespace="kube-system", containers={cid: "etcd"}
            )
        return None

    roots = Roots(proc_root=build_proc_tree(tmp_path), cgroup_root=cg, kubelet_root=tmp_path)
    [static] = SummaryCollector(SourceConfig(roots=roots), lookup=lookup).collect().pods
    assert static.pod_ref == PodReference("etcd-node-1", "kube-system", STATIC_UID)
    assert static.memory is not None and static.memory.working_set_bytes == 64 << 20
    assert static.process_stats == ProcessStats(2)
    assert [c.name for c in static.containers] == ["etcd"]


@pytest.mark.parametrize("version", ["v1", "v2", "hybrid"])
def test_process_counts_from_another_pid_namespace(tmp_path: Path, version: str) -> None:
    """What the DaemonSet (its own PID namespace) reads: v2 lists the pod's three processes as
    `0` lines, v1 leaves them out and its pids controller still counts three tasks."""
    cid = "e1" * 32
    hidden = [0, 0, 0] if version == "v2" else []
    cg = build_cgroup_tree(
        tmp_path,
        version=version,
        driver="cgroupfs",
        root=FakeCgroup(usage=6 << 30),
        kubepods=FakeCgroup(usage=3 << 30),
        pods=[
            FakePod(
                UID_B,
                "burstable",
                FakeCgroup(usage=1 << 20, tasks=3),
                containers={cid: FakeCgroup(usage=1 << 20, procs=hidden, tasks=3)},
            ),
            FakePod(UID_BE, "besteffort", FakeCgroup(usage=1 << 20, tasks=0)),
        ],
    )
    roots = Roots(proc_root=build_proc_tree(tmp_path), cgroup_root=cg, kubelet_root=tmp_path)
    pods = {
        p.pod_ref.uid: p.process_stats.process_count if p.process_stats else None
        for p in SummaryCollector(SourceConfig(roots=roots)).collect().pods
    }
    assert pods == {UID_B: 3, UID_BE: 0}


def test_collect_only_some_sections(tmp_path: Path) -> None:
    roots = _build(tmp_path, "v2", "systemd", kubepods_limit=7 << 30)
    s = SummaryCollector(SourceConfig(roots=roots)).collect(only=MEMORY_SECTIONS)
    assert s.node.memory is not None and len(s.node.system_containers) == 1
    assert (s.node.fs, s.node.runtime, s.node.rlimit, s.pods) == (None, None, None, ())


@pytest.mark.parametrize(("version", "expect"), [("v2", True), ("hybrid", False), ("v1", False)])
def test_pressure_path(tmp_path: Path, version: str, expect: bool) -> None:
    roots = _build(tmp_path, version, "cgroupfs", kubepods_limit=None)
    layout = detect_layout(roots.cgroup_root)
    path = pressure_path(layout, f"kubepods/burstable/pod{UID_B}")
    assert (path is not None) is expect
    if version == "hybrid":
        # The unified root itself has PSI even when pods are not mirrored there.
        assert pressure_path(layout, "") == roots.cgroup_root / "unified" / "memory.pressure"
