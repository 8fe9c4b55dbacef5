"""cgroup layout detection, pod cgroup naming and cAdvisor's working-set arithmetic."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.sources.cgroups import (
    CgroupError,
    CgroupVersion,
    count_processes,
    detect_layout,
    detect_version,
    iter_container_cgroups,
    iter_pod_cgroups,
    parse_container_id,
    parse_pod_uid,
    read_cgroup_memory,
    read_flat_keyed,
    read_int,
)
from kube.cgroups import CgroupDriver, working_set
from kube.qos import QOS_BEST_EFFORT, QOS_BURSTABLE, QOS_GUARANTEED
from tests.support.cgroupfs import FakeCgroup, FakePod, build_cgroup_tree, pod_dir

UID_G = "0f3b5c1e-1111-4a2b-9c3d-000000000001"
UID_B = "0f3b5c1e-2222-4a2b-9c3d-000000000002"
UID_BE = "0f3b5c1e-3333-4a2b-9c3d-000000000003"

VERSIONS = ["v1", "v2", "hybrid"]
DRIVERS = ["systemd", "cgroupfs"]


def _tree(tmp_path: Path, version: str, driver: str, parent: str = "") -> Path:
    return build_cgroup_tree(
        tmp_path,
        version=version,
        driver=driver,
        parent=parent,
        root=FakeCgroup(usage=6 << 30, inactive_file=1 << 30, anon=4 << 30),
        kubepods=FakeCgroup(usage=3 << 30, inactive_file=512 << 20, anon=2 << 30, limit=7 << 30),
        pods=[
            FakePod(UID_G, "guaranteed", FakeCgroup(usage=300 << 20, inactive_file=100 << 20)),
            FakePod(UID_B, "burstable", FakeCgroup(usage=200 << 20, inactive_file=50 << 20)),
            FakePod(UID_BE, "besteffort", FakeCgroup(usage=100 << 20, inactive_file=0)),
        ],
    )


def test_detect_version(tmp_path: Path) -> None:
    assert detect_version(_tree(tmp_path / "a", "v1", "systemd")) is CgroupVersion.V1
    assert detect_version(_tree(tmp_path / "b", "v2", "systemd")) is CgroupVersion.V2
    assert detect_version(_tree(tmp_path / "c", "hybrid", "cgroupfs")) is CgroupVersion.HYBRID
    with pytest.raises(CgroupError, match="no cgroup filesystem"):
        detect_version(tmp_path / "empty")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("driver", DRIVERS)
def test_layout_and_pod_cgroups(tmp_path: Path, version: str, driver: str) -> None:
    root = _tree(tmp_path, version, driver)
    layout = detect_layout(root)
    assert layout.driver is CgroupDriver(driver)
    assert layout.kubepods == ("kubepods.slice" if driver == "systemd" else "kubepods")
    assert layout.memory_root == (root if version == "v2" else root / "memory")
    if version == "hybrid":
        assert layout.pressure_root == root / "unified"
    pods = list(iter_pod_cgroups(layout))
    assert [(p.uid, p.qos) for p in pods] == [
        (UID_G, QOS_GUARANTEED),
        (UID_B, QOS_BURSTABLE),
        (UID_BE, QOS_BEST_EFFORT),
    ]
    for p in pods:
        assert (layout.memory_root / p.path).is_dir()


def test_kubepods_parent_and_explicit_driver(tmp_path: Path) -> None:
    root = _tree(tmp_path, "v1", "cgroupfs", parent="node-1")
    assert detect_layout(root).kubepods is None
    layout = detect_layout(root, kubepods_parent="/node-1/")
    assert layout.kubepods == "node-1/kubepods"
    assert len(list(iter_pod_cgroups(layout))) == 3
    # An explicit driver that does not match the tree finds no kubepods (and no pods).
    wrong = detect_layout(root, driver=CgroupDriver.SYSTEMD, kubepods_parent="node-1")
    assert wrong.kubepods is None
    assert list(iter_pod_cgroups(wrong)) == []


def test_parse_pod_uid() -> None:
    uid = "d75d892c-9bb2-4b9c-8ce2-7868eb91e665"
    assert parse_pod_uid("kubepods-burstable-podd75d892c_9bb2_4b9c_8ce2_7868eb91e665.slice") == uid
    assert parse_pod_uid("kubepods-podd75d892c_9bb2_4b9c_8ce2_7868eb91e665.slice") == uid
    assert parse_pod_uid(f"pod{uid}") == uid
    assert parse_pod_uid("kubepods-burstable.slice") is None
    assert parse_pod_uid("burstable") is None
    assert parse_pod_uid("podnot-a-uid") is None


@given(st.uuids())
def test_pod_uid_round_trips_through_both_drivers(u: uuid.UUID) -> None:
    uid = str(u)
    for driver in DRIVERS:
        for qos in ("guaranteed", "burstable", "besteffort"):
            name = pod_dir(driver, "kp", qos, uid).rsplit("/", 1)[1]
            assert parse_pod_uid(name) == uid


STATIC_UID = "0123456789abcdef0123456789abcdef"


def test_static_pod_cgroups_are_pods() -> None:
    """A static pod's UID is the 32 hex digits of its source's hash, with no dashes to escape."""
    assert parse_pod_uid(f"kubepods-besteffort-pod{STATIC_UID}.slice") == STATIC_UID
    assert parse_pod_uid(f"kubepods-pod{STATIC_UID}.slice") == STATIC_UID
    assert parse_pod_uid(f"pod{STATIC_UID}") == STATIC_UID
    assert parse_pod_uid(f"pod{STATIC_UID[:-1]}") is None
    assert parse_pod_uid(f"pod{STATIC_UID}0") is None
    assert parse_pod_uid(f"pod{STATIC_UID.upper()}") is None


@given(st.binary(min_size=16, max_size=16))
def test_static_pod_uid_round_trips_through_both_drivers(digest: bytes) -> None:
    uid = digest.hex()
    for driver in DRIVERS:
        for qos in ("guaranteed", "burstable", "besteffort"):
            name = pod_dir(driver, "kp", qos, uid).rsplit("/", 1)[1]
            assert parse_pod_uid(name) == uid


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("driver", DRIVERS)
def test_static_pods_are_found_on_every_layout(tmp_path: Path, version: str, driver: str) -> None:
    build_cgroup_tree(
        tmp_path,
        version=version,
        driver=driver,
        root=FakeCgroup(usage=6 << 30),
        kubepods=FakeCgroup(usage=3 << 30),
        pods=[
            FakePod(STATIC_UID, "besteffort", FakeCgroup(usage=1 << 20, procs=[5, 6])),
            FakePod(UID_B, "burstable", FakeCgroup(usage=1 << 20)),
        ],
    )
    layout = detect_layout(tmp_path / "cgroup")
    found = {p.uid: p.qos for p in iter_pod_cgroups(layout)}
    assert found == {STATIC_UID: QOS_BEST_EFFORT, UID_B: QOS_BURSTABLE}


def test_parse_container_id() -> None:
    cid = "fc6e" + "0" * 60
    assert parse_container_id(f"cri-containerd-{cid}.scope") == cid
    assert parse_container_id(f"crio-{cid}.scope") == cid
    assert parse_container_id(f"docker-{cid}.scope") == cid
    assert parse_container_id(cid) == cid
    assert parse_container_id(f"crio-conmon-{cid}.scope") is None
    assert parse_container_id("init.scope") is None


def test_iter_container_cgroups(tmp_path: Path) -> None:
    cid = "ab" * 32
    (tmp_path / f"cri-containerd-{cid}.scope").mkdir()
    (tmp_path / "not-a-container").mkdir()
    (tmp_path / "memory.stat").write_text("")
    assert list(iter_container_cgroups(tmp_path)) == [(cid, f"cri-containerd-{cid}.scope")]


@given(st.integers(min_value=0, max_value=1 << 50), st.integers(min_value=0, max_value=1 << 50))
def test_working_set_is_floored_usage_minus_inactive(usage: int, inactive: int) -> None:
    ws = working_set(usage, inactive)
    assert 0 <= ws <= usage
    assert ws == max(usage - inactive, 0)


def test_read_int(tmp_path: Path) -> None:
    f = tmp_path / "x"
    f.write_text("max\n")
    assert read_int(f) is None
    f.write_text("123\n")
    assert read_int(f) == 123
    f.write_text("garbage")
    assert read_int(f) is None
    assert read_int(tmp_path / "absent") is None


@pytest.mark.parametrize("version", VERSIONS)
def test_read_cgroup_memory(tmp_path: Path, version: str) -> None:
    layout = detect_layout(_tree(tmp_path, version, "systemd"))
    kp = read_cgroup_memory(layout, "kubepods.slice")
    assert kp is not None
    assert kp.usage == 3 << 30
    assert kp.working_set == (3 << 30) - (512 << 20)
    assert kp.limit == 7 << 30
    assert kp.rss == 2 << 30
    assert (kp.page_faults, kp.major_page_faults) == (42, 3)
    root = read_cgroup_memory(layout, "")
    assert root is not None
    # v2 root has no memory.current: usage = anon + file of memory.stat (same figure here).
    assert root.usage == 6 << 30
    assert root.working_set == 5 << 30
    assert root.limit is None
    assert read_cgroup_memory(layout, "kubepods.slice/absent") is None


def test_count_processes_walks_the_subtree(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "cgroup.procs").write_text("10\n11\n")
    (tmp_path / "a" / "b" / "cgroup.procs").write_text("12\n")
    assert count_processes(tmp_path, "a") == 3
    assert count_processes(tmp_path, "a", children=["b"]) == 3
    assert count_processes(tmp_path, "missing") is None


def test_processes_another_pid_namespace_cannot_see_still_count(tmp_path: Path) -> None:
    """cgroup v2 prints 0 for every process the reader's PID namespace cannot map: three
    processes read from the DaemonSet's namespace are three lines of 0, not one PID."""
    (tmp_path / "pod" / "ctr").mkdir(parents=True)
    (tmp_path / "pod" / "cgroup.procs").write_text("")
    (tmp_path / "pod" / "ctr" / "cgroup.procs").write_text("0\n0\n0\n")
    assert count_processes(tmp_path, "pod") == 3
    assert count_processes(tmp_path, "pod", children=["ctr"]) == 3


@settings(max_examples=40)
@given(st.lists(st.integers(min_value=0, max_value=6), max_size=6), st.booleans())
def test_the_count_is_the_lines_whatever_the_pids_read(sizes: list[int], hidden: bool) -> None:
    """Property: the count is the number of processes listed, whether their PIDs are distinct
    (the host's namespace) or all 0 (another namespace's view on v2)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        pod = Path(tmp) / "pod"
        pod.mkdir()
        (pod / "cgroup.procs").write_text("")
        pid = 100
        names = []
        for i, size in enumerate(sizes):
            (pod / f"c{i}").mkdir()
            listed = []
            for _ in range(size):
                pid += 1
                listed.append(0 if hidden else pid)
            (pod / f"c{i}" / "cgroup.procs").write_text("".join(f"{p}\n" for p in listed))
            names.append(f"c{i}")
        assert count_processes(Path(tmp), "pod", children=names) == sum(sizes)
        assert count_processes(Path(tmp), "pod") == sum(sizes)


def test_large_files_are_read_whole(tmp_path: Path) -> None:
    f = tmp_path / "memory.stat"
    lines = [f"key{i} {i}" for i in range(20000)]  # well past one read's 64 KiB
    f.write_text("\n".join(lines) + "\n")
    stat = read_flat_keyed(f)
    assert len(stat) == 20000
    assert stat["key19999"] == 19999
