"""``Summary.from_dict`` reads a real /stats/summary document and names bad fields."""

from __future__ import annotations

from typing import Any

import pytest

from agent.eviction import Summary, SummaryError

# Abridged from a kubelet 1.30 /stats/summary response (containerd, cgroup v2).
REAL = {
    "node": {
        "nodeName": "kind-worker",
        "systemContainers": [
            {
                "name": "kubelet",
                "startTime": "2024-05-01T10:00:00Z",
                "cpu": {"time": "2024-05-01T10:05:00Z", "usageNanoCores": 15000000},
                "memory": {"time": "2024-05-01T10:05:00Z", "workingSetBytes": 50000000},
            },
            {
                "name": "pods",
                "startTime": "2024-05-01T10:00:00Z",
                "memory": {
                    "time": "2024-05-01T10:05:01.123456789Z",
                    "availableBytes": 7000000000,
                    "usageBytes": 1200000000,
                    "workingSetBytes": 1000000000,
                    "rssBytes": 900000000,
                    "pageFaults": 0,
                    "majorPageFaults": 0,
                },
            },
        ],
        "startTime": "2024-05-01T09:00:00Z",
        "cpu": {
            "time": "2024-05-01T10:05:00Z",
            "usageNanoCores": 250000000,
            "usageCoreNanoSeconds": 123456789000,
        },
        "memory": {
            "time": "2024-05-01T10:05:00Z",
            "availableBytes": 6000000000,
            "usageBytes": 2500000000,
            "workingSetBytes": 2000000000,
            "rssBytes": 1500000000,
            "pageFaults": 100,
            "majorPageFaults": 1,
        },
        "network": {"time": "2024-05-01T10:05:00Z", "name": "eth0", "rxBytes": 1},
        "fs": {
            "time": "2024-05-01T10:05:00Z",
            "availableBytes": 50000000000,
            "capacityBytes": 100000000000,
            "usedBytes": 50000000000,
            "inodesFree": 6000000,
            "inodes": 6500000,
            "inodesUsed": 500000,
        },
        "runtime": {
            "imageFs": {
                "time": "2024-05-01T10:05:00Z",
                "availableBytes": 50000000000,
                "capacityBytes": 100000000000,
                "usedBytes": 3000000000,
                "inodesFree": 6000000,
                "inodes": 6500000,
                "inodesUsed": 30000,
            },
            "containerFs": {
                "time": "2024-05-01T10:05:00Z",
                "availableBytes": 50000000000,
                "capacityBytes": 100000000000,
            },
        },
        "rlimit": {"time": "2024-05-01T10:05:00Z", "maxpid": 4194304, "curproc": 512},
    },
    "pods": [
        {
            "podRef": {"name": "web-1", "namespace": "default", "uid": "1111"},
            "startTime": "2024-05-01T10:01:00Z",
            "containers": [
                {
                    "name": "nginx",
                    "startTime": "2024-05-01T10:01:02Z",
                    "cpu": {"time": "2024-05-01T10:05:00Z", "usageNanoCores": 1000},
                    "memory": {"time": "2024-05-01T10:05:00Z", "workingSetBytes": 30000000},
                    "rootfs": {"usedBytes": 40960, "inodesUsed": 12},
                    "logs": {"usedBytes": 8192, "inodesUsed": 2},
                }
            ],
            "cpu": {"time": "2024-05-01T10:05:00Z", "usageNanoCores": 1000},
            "memory": {"time": "2024-05-01T10:05:00Z", "workingSetBytes": 31000000},
            "volume": [
                {
                    "time": "2024-05-01T10:05:00Z",
                    "availableBytes": 1,
                    "usedBytes": 4096,
                    "inodesUsed": 3,
                    "name": "cache",
                },
                {"usedBytes": 10, "name": "data", "pvcRef": {"name": "d", "namespace": "default"}},
            ],
            "ephemeral-storage": {"usedBytes": 57344, "inodesUsed": 17},
            "process_stats": {"process_count": 3},
        }
    ],
}


def test_reads_a_real_summary() -> None:
    s = Summary.from_dict(REAL)
    assert s.node.node_name == "kind-worker"
    assert s.node.memory is not None and s.node.memory.working_set_bytes == 2000000000
    pods = s.node.system_container("pods")
    assert pods is not None and pods.memory is not None
    assert pods.memory.available_bytes == 7000000000
    # nanoseconds are kept to the microsecond
    assert pods.memory.time is not None and pods.memory.time % 1 == pytest.approx(0.123456)
    assert s.node.runtime is not None and s.node.runtime.image_fs is not None
    assert s.node.runtime.image_fs.inodes_used == 30000
    assert s.node.runtime.container_fs is not None
    assert s.node.runtime.container_fs.inodes is None  # absent stays unknown, not zero
    assert s.node.rlimit is not None and s.node.rlimit.max_pid == 4194304
    assert s.node.rlimit.num_of_running_processes == 512
    (pod,) = s.pods
    assert pod.pod_ref.uid == "1111"
    assert pod.memory is not None and pod.memory.working_set_bytes == 31000000
    assert pod.containers[0].rootfs is not None and pod.containers[0].rootfs.used_bytes == 40960
    assert [v.name for v in pod.volume_stats] == ["cache", "data"]
    assert pod.volume_stats[0].used_bytes == 4096
    assert pod.volume_stats[1].pvc_ref == ("default", "d")
    assert pod.ephemeral_storage is not None and pod.ephemeral_storage.used_bytes == 57344
    assert pod.process_stats is not None and pod.process_stats.process_count == 3


def test_empty_summary_is_fine() -> None:
    s = Summary.from_dict({})
    assert s.pods == () and s.node.memory is None


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ([], "summary"),
        ({"node": []}, "node"),
        ({"node": {"memory": {"availableBytes": "lots"}}}, "node.memory.availableBytes"),
        ({"node": {"memory": {"workingSetBytes": -1}}}, "node.memory.workingSetBytes"),
        ({"node": {"fs": {"time": "yesterday"}}}, "node.fs.time"),
        ({"node": {"rlimit": {"maxpid": True}}}, "node.rlimit.maxpid"),
        ({"pods": {}}, "pods"),
        ({"pods": [{}]}, "pods[0].podRef"),
        ({"pods": [{"podRef": {"name": "x"}}]}, "pods[0].podRef.uid"),
        (
            {"pods": [{"podRef": {"uid": "u"}, "containers": [{"name": 3}]}]},
            "pods[0].containers[0].name",
        ),
        (
            {"pods": [{"podRef": {"uid": "u"}, "volume": [{"name": "v", "usedBytes": 1.5}]}]},
            "pods[0].volume[0].usedBytes",
        ),
        (
            {"pods": [{"podRef": {"uid": "u"}, "process_stats": {"process_count": "3"}}]},
            "pods[0].process_stats.process_count",
        ),
    ],
)
def test_malformed_input_names_the_field(doc: Any, path: str) -> None:
    with pytest.raises(SummaryError) as info:
        Summary.from_dict(doc)
    assert info.value.path == path
    assert path in str(info.value)
