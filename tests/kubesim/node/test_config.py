"""A process node's configuration (``ProcessNode``), its memory-backed volumes' size and the
downward API's resourceFieldRef: the kubelet's arithmetic, and strict documents."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.node.config import NodeConfig, parse_process_node
from kubesim.node.downward import DownwardAPIError, resource_field_value
from kubesim.node.volumes import EmptyDirSpec, PodStorageError, empty_dir_memory_size, empty_dirs

MIB = 1 << 20


def doc(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubesim.io/v1alpha1",
        "kind": "ProcessNode",
        "metadata": {"name": "node-1"},
        **fields,
    }


def test_a_document_gives_the_node_its_memory_disk_and_kubelet_settings() -> None:
    name, config = parse_process_node(
        doc(
            memoryCapacity="1Gi",
            filesystem={"path": "/var/tmp/n1", "size": "256Mi", "inodes": 1000},
            kubelet={
                "port": 0,
                "cgroupRoot": "/n1",
                "kubeReserved": {"memory": "700Mi"},
                "systemReserved": {"memory": "24Mi"},
                "enforceNodeAllocatable": ["pods"],
                "evictionHard": {"memory.available": "100Mi"},
                "featureGates": {"SizeMemoryBackedVolumes": False},
                "staticPodPath": "/etc/kubernetes/manifests",
            },
        )
    )
    assert name == "node-1"
    assert str(config.static_pod_path) == "/etc/kubernetes/manifests"
    assert NodeConfig().static_pod_path is None
    assert config.memory_capacity == 1024 * MIB
    assert (config.filesystem.size, config.filesystem.inodes) == (256 * MIB, 1000)
    assert str(config.filesystem.path) == "/var/tmp/n1"
    assert config.cgroup_root == "n1"
    assert not config.size_memory_backed_volumes
    # the kubelet's: pods cgroup = capacity - reserved; allocatable also less the threshold
    assert config.pods_cgroup_limit(1024 * MIB) == 300 * MIB
    assert config.allocatable_memory(1024 * MIB) == 200 * MIB


def test_without_pods_enforcement_the_pods_cgroup_gets_the_whole_capacity() -> None:
    _, config = parse_process_node(
        doc(kubelet={"kubeReserved": {"memory": "1Gi"}, "enforceNodeAllocatable": ["none"]})
    )
    assert config.pods_cgroup_limit(4096 * MIB) == 4096 * MIB
    assert config.allocatable_memory(4096 * MIB) == 3072 * MIB


def test_a_percentage_threshold_is_a_fraction_of_capacity() -> None:
    _, config = parse_process_node(doc(kubelet={"evictionHard": {"memory.available": "10%"}}))
    assert config.allocatable_memory(1000 * MIB) == 900 * MIB


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"memoryCapacity": "lots"}, "memoryCapacity:"),
        ({"memoryCapacity": "0"}, "memoryCapacity: must be positive"),
        ({"disk": {}}, 'unknown field "disk"'),
        ({"filesystem": {"size": "-1Mi"}}, "filesystem.size: must not be negative"),
        ({"filesystem": {"path": "relative"}}, "filesystem.path: must be an absolute path"),
        ({"filesystem": {"inodes": "many"}}, "filesystem.inodes: must be a whole number"),
        ({"kubelet": {"port": 70000}}, "kubelet.port: must be 0-65535"),
        ({"kubelet": {"cgroupRoot": "../x"}}, "kubelet.cgroupRoot: must be an absolute"),
        (
            {"kubelet": {"kubeReserved": {"gpu": "1"}}},
            'kubelet.kubeReserved: unknown resource "gpu"',
        ),
        ({"kubelet": {"enforceNodeAllocatable": ["all"]}}, "kubelet.enforceNodeAllocatable:"),
        ({"kubelet": {"evictionHard": {"memory.available": "x%"}}}, "is not a percentage"),
        ({"kubelet": {"featureGates": {"Nope": True}}}, 'unknown gate "Nope"'),
        ({"kubelet": {"featureGates": {"SizeMemoryBackedVolumes": "no"}}}, "must be true or false"),
        ({"kubelet": {"podPidsLimit": 5}}, 'kubelet: unknown field "podPidsLimit"'),
        ({"kubelet": {"staticPodPath": "manifests"}}, "kubelet.staticPodPath: must be an absolute"),
        ({"metadata": {}}, "metadata.name: required"),
    ],
)
def test_a_bad_document_names_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        parse_process_node(doc(**fields))


@given(
    capacity=st.integers(min_value=1, max_value=1 << 40),
    kube=st.integers(min_value=0, max_value=1 << 40),
    system=st.integers(min_value=0, max_value=1 << 40),
    hard=st.integers(min_value=0, max_value=1 << 40),
    enforce=st.booleans(),
)
def test_allocatable_never_exceeds_the_pods_cgroup_nor_capacity(
    capacity: int, kube: int, system: int, hard: int, enforce: bool
) -> None:
    config = NodeConfig(
        kube_reserved_memory=kube,
        system_reserved_memory=system,
        eviction_hard_memory=hard,
        enforce_node_allocatable=frozenset({"pods"} if enforce else set()),
    )
    pods = config.pods_cgroup_limit(capacity)
    allocatable = config.allocatable_memory(capacity)
    assert 0 <= pods <= capacity
    assert 0 <= allocatable <= capacity
    if enforce:
        assert allocatable <= pods


# --- memory-backed emptyDir -------------------------------------------------------------------


@given(
    allocatable=st.integers(min_value=1, max_value=1 << 40),
    pod_limit=st.one_of(st.none(), st.integers(min_value=0, max_value=1 << 41)),
    size_limit=st.one_of(st.none(), st.integers(min_value=0, max_value=1 << 41)),
)
def test_a_memory_volume_is_never_larger_than_what_its_pod_may_hold(
    allocatable: int, pod_limit: int | None, size_limit: int | None
) -> None:
    volume = EmptyDirSpec("cache", "Memory", size_limit)
    size = empty_dir_memory_size(
        volume,
        node_allocatable_memory=allocatable,
        pod_memory_limit=pod_limit,
        size_memory_backed_volumes=True,
    )
    assert size is not None and 0 < size <= allocatable
    for bound in (pod_limit, size_limit):
        if bound:
            assert size <= bound
    # the gate off: the kernel's default, whatever the limits
    assert (
        empty_dir_memory_size(
            volume,
            node_allocatable_memory=allocatable,
            pod_memory_limit=pod_limit,
            size_memory_backed_volumes=False,
        )
        is None
    )


def test_empty_dirs_are_read_with_their_medium_and_limit() -> None:
    pod = {
        "spec": {
            "volumes": [
                {"name": "a", "emptyDir": {}},
                {"name": "b", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
                {"name": "c", "configMap": {"name": "x"}},
            ]
        }
    }
    assert empty_dirs(pod) == [EmptyDirSpec("a", "", None), EmptyDirSpec("b", "Memory", 8 * MIB)]
    with pytest.raises(PodStorageError, match=r"spec\.volumes\[0\]\.emptyDir\.medium"):
        empty_dirs({"spec": {"volumes": [{"name": "h", "emptyDir": {"medium": "HugePages"}}]}})
    with pytest.raises(PodStorageError, match=r"spec\.volumes\[0\]\.emptyDir\.sizeLimit"):
        empty_dirs({"spec": {"volumes": [{"name": "h", "emptyDir": {"sizeLimit": "big"}}]}})


# --- downward API -----------------------------------------------------------------------------


def containers(resources: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    return {"main": {"name": "main", "resources": resources or {}}}


def value(ref: dict[str, Any], resources: dict[str, Any] | None = None) -> str:
    return resource_field_value(
        ref,
        containers(resources),
        current="main",
        node_allocatable={"memory": 300 * MIB, "cpu": "2"},
        where="env[0]",
    )


def test_a_limit_the_container_does_not_set_is_the_nodes_allocatable() -> None:
    assert value({"resource": "limits.memory"}) == str(300 * MIB)
    assert value({"resource": "limits.memory"}, {"limits": {"memory": "64Mi"}}) == str(64 * MIB)
    assert value({"resource": "limits.cpu"}) == "2"
    assert value({"resource": "limits.cpu", "divisor": "1m"}) == "2000"
    # a request unset is the limit (the API server's defaulting), else 0
    assert value({"resource": "requests.memory"}, {"limits": {"memory": "1Gi"}}) == str(1 << 30)
    assert value({"resource": "requests.memory"}) == "0"


@given(
    amount=st.integers(min_value=0, max_value=1 << 40),
    divisor=st.integers(min_value=1, max_value=1 << 30),
)
def test_the_value_is_the_amount_over_the_divisor_rounded_up(amount: int, divisor: int) -> None:
    got = value(
        {"resource": "limits.memory", "divisor": str(divisor)}, {"limits": {"memory": str(amount)}}
    )
    assert int(got) == math.ceil(amount / divisor)


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ({"resource": "limits.gpu"}, "is not supported"),
        ({"resource": "memory"}, "is not supported"),
        ({"resource": "limits.memory", "containerName": "other"}, "no container 'other'"),
        ({"resource": "limits.memory", "divisor": "0"}, "divisor: must be positive"),
        ({"resource": "limits.memory", "divisor": "x"}, "env\\[0\\]"),
    ],
)
def test_a_bad_reference_names_the_field(ref: dict[str, Any], message: str) -> None:
    with pytest.raises(DownwardAPIError, match=message):
        value(ref)
