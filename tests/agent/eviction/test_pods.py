"""Pod-side helpers: volumes, local usage, node-level reclaim table, comparator basics."""

from __future__ import annotations

import pytest

from agent.eviction.helpers import (
    build_signal_to_node_reclaim_funcs,
    cmp_bool,
    container_usage,
    pod_disk_usage,
    pod_local_volume_usage,
)
from agent.eviction.pods import (
    VolumeInfo,
    local_volume_names,
    pod_volume_infos,
    volume_infos_from_manifest,
)
from agent.eviction.preference import preference_of
from agent.eviction.summary import PodStats
from agent.eviction.types import FsStatsType
from tests.support.eviction import MI, PodUsage, make_pod, manifest_volumes, pod_stats

MANIFEST = {
    "spec": {
        "volumes": [
            {"name": "disk", "emptyDir": {}},
            {"name": "ram", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
            {"name": "sized", "emptyDir": {"sizeLimit": "1Gi"}},
            {"name": "bad-size", "emptyDir": {"sizeLimit": "lots"}},
            {"name": "host", "hostPath": {"path": "/x"}},
            {"name": "cm", "configMap": {"name": "c"}},
            {"name": "repo", "gitRepo": {"repository": "r"}},
            {"name": "claim", "persistentVolumeClaim": {"claimName": "c"}},
            {"name": "api", "downwardAPI": {}},
            {"noname": True},
        ]
    }
}


def test_volume_infos_from_manifest() -> None:
    infos = volume_infos_from_manifest(MANIFEST)
    assert infos[1] == VolumeInfo("ram", "emptyDir", "Memory", 64 * MI)
    assert infos[2].size_limit == 1024 * MI
    assert infos[3].size_limit is None  # malformed: skipped, never an eviction
    assert len(infos) == 9
    assert volume_infos_from_manifest({}) == ()


def test_local_volume_names_follow_is_local_ephemeral_volume() -> None:
    assert local_volume_names(volume_infos_from_manifest(MANIFEST)) == [
        "disk",
        "sized",
        "bad-size",
        "host",
        "cm",
        "repo",
    ]


def test_pod_volume_infos_from_the_pod_value() -> None:
    volumes = [
        {"name": "v", "emptyDir": {"sizeLimit": "1Mi"}},
        {"name": "ram", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        {"name": "plain", "emptyDir": {}},
        {"name": "cfg", "configMap": {"name": "c"}},
    ]
    pod = make_pod("p", volumes=volumes)
    # what the daemon's pods carry (kube.objects.Volume) is what the manifest says
    assert pod_volume_infos(pod) == (
        VolumeInfo("v", "emptyDir", "", 2**20),
        VolumeInfo("ram", "emptyDir", "Memory", 64 * 2**20),
        VolumeInfo("plain", "emptyDir"),
        VolumeInfo("cfg", "configMap"),
    )
    assert pod_volume_infos(pod) == volume_infos_from_manifest({"spec": {"volumes": volumes}})
    # a Memory emptyDir is not the pod's disk (IsLocalEphemeralVolume)
    assert local_volume_names(pod_volume_infos(pod)) == ["v", "plain", "cfg"]


def stats(u: PodUsage) -> PodStats:
    return PodStats.from_dict(pod_stats(u), "pod")


def test_usage_sums() -> None:
    s = stats(
        PodUsage(
            "p",
            containers=[
                {
                    "name": "a",
                    "rootfs": {"usedBytes": 1, "inodesUsed": 10},
                    "logs": {"usedBytes": 2, "inodesUsed": 20},
                },
                {"name": "b", "rootfs": {"usedBytes": 4}},
            ],
            volumes={"v": 8, "other": 16},
        )
    )
    assert container_usage(s, [FsStatsType.ROOT]) == {"ephemeral-storage": 5, "inodes": 10}
    assert container_usage(s, [FsStatsType.LOGS]) == {"ephemeral-storage": 2, "inodes": 20}
    assert pod_local_volume_usage(["v", "missing"], s) == {"ephemeral-storage": 8, "inodes": 0}
    pod = make_pod("p", volumes=[{"name": "v", "emptyDir": {}}, {"name": "other", "secret": {}}])
    kinds = [FsStatsType.ROOT, FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME_SOURCE]
    assert pod_disk_usage(s, pod, kinds, volumes=manifest_volumes)["ephemeral-storage"] == 15


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def has_dedicated_image_fs(self) -> bool:
        return False

    def has_dedicated_container_fs(self) -> bool:
        return False

    def delete_all_unused_containers(self) -> None:
        self.calls.append("containers")

    def delete_unused_images(self) -> None:
        self.calls.append("images")

    def get_summary(self) -> object:
        raise NotImplementedError


@pytest.mark.parametrize(
    ("image_fs", "split", "signal", "expected"),
    [
        (False, False, "nodefs.available", ["containers", "images"]),
        (False, False, "containerfs.inodesFree", ["containers", "images"]),
        (True, False, "nodefs.available", []),
        (True, False, "imagefs.inodesFree", ["containers", "images"]),
        (True, False, "containerfs.available", ["containers", "images"]),
        (True, True, "imagefs.available", ["images"]),
        (True, True, "nodefs.inodesFree", ["containers"]),
        (True, True, "containerfs.available", ["containers"]),
        (False, False, "memory.available", None),
        (True, True, "pid.available", None),
    ],
)
def test_node_reclaim_table(
    image_fs: bool, split: bool, signal: str, expected: list[str] | None
) -> None:
    node = Recorder()
    table = build_signal_to_node_reclaim_funcs(node, image_fs, split)  # type: ignore[arg-type]
    if expected is None:
        assert signal not in table
        return
    for func in table[signal]:
        func()
    assert node.calls == expected
    assert build_signal_to_node_reclaim_funcs(None, image_fs, split) == {}


def test_cmp_bool_puts_true_first() -> None:
    assert cmp_bool(True, False) == -1
    assert cmp_bool(False, True) == 1
    assert cmp_bool(True, True) == 0


def test_preference_values() -> None:
    key = "node-pressure-evictor.io/eviction-preference"
    everywhere = {"*"}
    assert preference_of(make_pod("a", annotations={key: "avoid"}), allowed=everywhere) == "avoid"
    assert preference_of(make_pod("n", annotations={key: "never"}), allowed=everywhere) == "never"
    assert preference_of(make_pod("x", annotations={key: "NEVER"}), allowed=everywhere) is None
    assert preference_of(make_pod("none"), allowed=everywhere) is None
    # not granted: the default, or another namespace
    assert preference_of(make_pod("n", annotations={key: "never"}), allowed=()) is None
    assert preference_of(make_pod("n", annotations={key: "never"}), allowed={"other"}) is None
    assert preference_of(make_pod("n", annotations={key: "never"}), allowed={"default"}) == "never"
