"""``EvictionManager.synchronize`` over time with a fake clock (``synchronize`` in
pkg/kubelet/eviction/eviction_manager.go)."""

from __future__ import annotations

from typing import Any

import pytest

from agent.eviction import (
    EvictionManager,
    EvictionSyncError,
    ManagerConfig,
    Summary,
    effective_grace_period_seconds,
    kubelet_view,
    parse_threshold_config,
)
from agent.eviction.preference import EVICTION_PREFERENCE_ANNOTATION
from kube.critical import CONFIG_MIRROR_ANNOTATION_KEY as CONFIG_MIRROR
from kube.critical import CONFIG_SOURCE_ANNOTATION_KEY as CONFIG_SOURCE
from kube.objects import Pod
from tests.support.clock import FakeClock
from tests.support.eviction import GI, MI, PodUsage, fs, make_pod, manifest_volumes, summary


def thresholds(
    hard: dict[str, str] | None = None,
    soft: dict[str, str] | None = None,
    grace: dict[str, str] | None = None,
    reclaim: dict[str, str] | None = None,
    allocatable: tuple[str, ...] = (),
) -> list[Any]:
    return parse_threshold_config(allocatable, hard, soft, grace, reclaim)


def manager(
    ts: list[Any], clock: FakeClock | None = None, node_reclaim: Any = None, **cfg: Any
) -> tuple[EvictionManager, FakeClock]:
    clock = clock or FakeClock()
    m = EvictionManager(
        ManagerConfig(thresholds=ts, **cfg),
        clock,
        node_reclaim=node_reclaim,
        pod_volumes=manifest_volumes,
    )
    return m, clock


def pods_and_usage() -> tuple[list[Pod], list[PodUsage]]:
    pods = [
        make_pod("guaranteed", priority=0, requests={"memory": "1Gi"}, tgps=60),
        make_pod("hog", priority=0, requests={"memory": "100Mi"}, tgps=20),
        make_pod("best-effort", priority=0),
        make_pod("important", priority=1000),
    ]
    usage = [
        PodUsage("guaranteed", memory=GI),
        PodUsage("hog", memory=900 * MI),
        PodUsage("best-effort", memory=300 * MI),
        PodUsage("important", memory=2 * GI),
    ]
    return pods, usage


STATIC_UID = "0123456789abcdef0123456789abcdef"  # the kubelet's hash of a static pod's manifest


def mem(available: int, usage: list[PodUsage] | None = None, **kw: Any) -> Summary:
    return summary(mem_available=available, mem_working_set=8 * GI - available, pods=usage, **kw)


# --- hard thresholds -------------------------------------------------------------------------


def test_hard_threshold_evicts_one_pod_immediately_with_kubelet_message_and_condition() -> None:
    pods, usage = pods_and_usage()
    m, _ = manager(thresholds({"memory.available": "500Mi"}))
    assert m.synchronize(mem(GI, usage), pods) == []
    assert not m.is_under_memory_pressure()

    (d,) = m.synchronize(mem(400 * MI, usage), pods)
    assert d.pod.name == "hog"  # exceeds request, priority 0, most above request
    assert d.grace_period_override == 1
    assert d.signal == "memory.available"
    assert d.resource == "memory"
    assert d.message == (
        "The node was low on resource: memory. Threshold quantity: 500Mi, available: 400Mi. "
    )
    assert d.condition is not None
    assert (d.condition.type, d.condition.status, d.condition.reason) == (
        "DisruptionTarget",
        "True",
        "TerminationByKubelet",
    )
    assert d.condition.message == d.message
    assert d.annotations["starved_resource"] == "memory"
    assert m.last_sync is not None
    assert m.last_sync.threshold_met_event == "Attempting to reclaim memory"
    assert m.is_under_memory_pressure()
    assert not m.is_under_disk_pressure() and not m.is_under_pid_pressure()


def test_equal_to_the_threshold_is_not_pressure() -> None:
    pods, usage = pods_and_usage()
    m, _ = manager(thresholds({"memory.available": "500Mi"}))
    assert m.synchronize(mem(500 * MI, usage), pods) == []
    assert not m.is_under_memory_pressure()


def as_kubelet_sees(pods: list[Pod], stats: Summary) -> list[Pod]:
    """The node's API pods as the daemon's loop hands them to the manager (``kubelet_view``)."""
    return kubelet_view(pods, node_pod_uids=[s.pod_ref.uid for s in stats.pods]).pods


def test_critical_pods_are_skipped_but_stay_in_the_ranking() -> None:
    # the mirror pod of a static pod running here: its stats are the static pod's, filed under
    # the UID in its annotation (the kubelet's hash of the manifest)
    mirror = make_pod("mirror", annotations={CONFIG_MIRROR: STATIC_UID, CONFIG_SOURCE: "file"})
    # an API pod that calls itself static: the kubelet overwrites its source, so it is ordinary
    static = make_pod("static", annotations={CONFIG_SOURCE: "file"})
    system = make_pod("system", priority=2000000000)
    user = make_pod("user", priority=1999999999)
    usage = [
        PodUsage("static", memory=2 * GI),
        PodUsage("etcd-node-1", memory=3 * GI, uid=STATIC_UID),
        PodUsage("system", memory=1 * GI),
        PodUsage("user", memory=1),
    ]
    m, clock = manager(thresholds({"memory.available": "500Mi"}))
    stats = mem(MI, usage)
    (d,) = m.synchronize(stats, as_kubelet_sees([static, mirror, system, user], stats))
    assert d.pod.name == "static"
    assert m.last_sync is not None
    assert [p.name for p in m.last_sync.ranking] == ["mirror", "static", "user", "system"]
    assert [(p.name, why) for p, why in m.last_sync.skipped] == [("mirror", "critical pod")]

    clock.step(10)  # "static" is gone; the next sync skips both critical pods
    stats = mem(MI, usage[1:])
    (d,) = m.synchronize(stats, as_kubelet_sees([mirror, system, user], stats))
    assert d.pod.name == "user"
    assert [p.name for p in m.last_sync.ranking] == ["mirror", "user", "system"]
    assert [(p.name, why) for p, why in m.last_sync.skipped] == [("mirror", "critical pod")]


@pytest.mark.parametrize(
    "forged",
    [
        {CONFIG_SOURCE: "file"},
        {CONFIG_SOURCE: "http"},
        {CONFIG_MIRROR: STATIC_UID},  # no static pod with that UID runs on this node
        {CONFIG_MIRROR: "uid-small"},  # a neighbour's UID: its stats are not the forger's
    ],
    ids=["source-file", "source-http", "mirror-not-here", "mirror-of-a-neighbour"],
)
def test_the_larger_pod_is_evicted_whatever_critical_annotation_it_carries(
    forged: dict[str, str],
) -> None:
    """The kubelet would call neither annotation critical on this node, so the pod that wrote
    one is ranked by its own usage and evicted; the neighbour it would push the eviction onto
    stays."""
    big = make_pod("big", annotations=forged)
    small = make_pod("small")
    usage = [PodUsage("big", memory=3 * GI), PodUsage("small", memory=GI)]
    m, _ = manager(thresholds({"memory.available": "500Mi"}))
    stats = mem(MI, usage)
    (d,) = m.synchronize(stats, as_kubelet_sees([small, big], stats))
    assert d.pod.name == "big"
    assert m.last_sync is not None and m.last_sync.skipped == []
    assert "The node was low on resource: memory." in d.message


def test_a_mirror_claimed_twice_is_trusted_for_neither() -> None:
    """A second pod claiming the static pod's UID takes the protection from both: the larger
    forger is evicted by its own usage; a control-plane mirror stays critical by priority."""
    mirror = make_pod("etcd-node-1", priority=2000001000, annotations={CONFIG_MIRROR: STATIC_UID})
    forger = make_pod("forger", annotations={CONFIG_MIRROR: STATIC_UID})
    small = make_pod("small")
    usage = [
        PodUsage("etcd-node-1", memory=4 * GI, uid=STATIC_UID),
        PodUsage("forger", memory=3 * GI),
        PodUsage("small", memory=GI),
    ]
    m, _ = manager(thresholds({"memory.available": "500Mi"}))
    stats = mem(MI, usage)
    (d,) = m.synchronize(stats, as_kubelet_sees([small, forger, mirror], stats))
    assert d.pod.name == "forger"
    assert m.last_sync is not None
    # the mirror has no stats of its own (the static pod's are no longer its): ranked first,
    # and skipped for its priority
    assert [p.name for p in m.last_sync.ranking] == ["etcd-node-1", "forger", "small"]
    assert [(p.name, why) for p, why in m.last_sync.skipped] == [("etcd-node-1", "critical pod")]


def test_only_critical_pods_means_no_eviction() -> None:
    system = make_pod("system", priority=2000001000)
    m, _ = manager(thresholds({"memory.available": "500Mi"}))
    assert m.synchronize(mem(MI, [PodUsage("system", memory=GI)]), [system]) == []
    assert m.is_under_memory_pressure()


def test_no_active_pods_means_no_eviction() -> None:
    m, _ = manager(thresholds({"memory.available": "500Mi"}))
    assert m.synchronize(mem(MI), []) == []


# --- soft thresholds and grace ---------------------------------------------------------------


def test_soft_threshold_needs_continuous_observation_for_its_grace_period() -> None:
    pods, usage = pods_and_usage()
    m, clock = manager(
        thresholds(soft={"memory.available": "1Gi"}, grace={"memory.available": "1m"}),
        max_pod_grace_period_seconds=30,
    )
    low, ok = mem(900 * MI, usage), mem(2 * GI, usage)
    assert m.synchronize(low, pods) == []
    assert m.is_under_memory_pressure()  # the condition does not wait for the grace period
    clock.step(30)
    assert m.synchronize(low, pods) == []
    clock.step(10)
    assert m.synchronize(ok, pods) == []  # one clean sample resets the timer
    clock.step(10)
    assert m.synchronize(low, pods) == []
    clock.step(59)
    assert m.synchronize(low, pods) == []
    clock.step(1)
    (d,) = m.synchronize(low, pods)
    assert d.pod.name == "hog"
    assert d.grace_period_override == 20  # min(max-pod-grace 30, pod's 20)


@pytest.mark.parametrize(
    ("max_grace", "tgps", "override", "effective"),
    [
        (0, None, 0, 30),  # default: the pod's own grace (30 s default), not "immediately"
        (0, 45, 0, 45),
        (30, None, 30, 30),
        (30, 10, 10, 10),
        (30, 0, 0, 1),  # pod asks for 0: the pod worker floors at 1 s
        (-1, None, -1, 1),  # negative does not defer to the pod (#118172)
    ],
)
def test_soft_grace_period_override(
    max_grace: int, tgps: int | None, override: int, effective: int
) -> None:
    pod = make_pod("p", tgps=tgps)
    m, _ = manager(
        thresholds(soft={"memory.available": "1Gi"}, grace={"memory.available": "0s"}),
        max_pod_grace_period_seconds=max_grace,
    )
    # a soft threshold with 0s grace is a hard one: override is immediate
    (d,) = m.synchronize(mem(MI, [PodUsage("p", memory=1)]), [pod])
    assert d.grace_period_override == 1
    m, clock = manager(
        thresholds(soft={"memory.available": "1Gi"}, grace={"memory.available": "1s"}),
        max_pod_grace_period_seconds=max_grace,
    )
    m.synchronize(mem(MI, [PodUsage("p", memory=1)]), [pod])
    clock.step(1)
    (d,) = m.synchronize(mem(MI - 1, [PodUsage("p", memory=1)]), [pod])
    assert d.grace_period_override == override
    assert effective_grace_period_seconds(d.grace_period_override, pod) == effective


@pytest.mark.parametrize(
    ("override", "tgps", "effective"),
    [(1, 600, 1), (0, None, 30), (0, 7, 7), (0, 0, 1), (60, None, 60), (-3, 10, 1), (5, 10, 5)],
)
def test_effective_grace_period(override: int, tgps: int | None, effective: int) -> None:
    assert effective_grace_period_seconds(override, make_pod("p", tgps=tgps)) == effective


def test_hard_fires_while_soft_waits() -> None:
    pods, usage = pods_and_usage()
    m, _ = manager(
        thresholds(
            {"memory.available": "500Mi"},
            {"memory.available": "1Gi"},
            {"memory.available": "5m"},
        )
    )
    (d,) = m.synchronize(mem(100 * MI, usage), pods)
    assert d.threshold is not None and d.threshold.grace_period == 0
    assert d.grace_period_override == 1


# --- min-reclaim -----------------------------------------------------------------------------


def test_min_reclaim_keeps_an_active_threshold_in_force() -> None:
    pods, usage = pods_and_usage()
    m, clock = manager(
        thresholds({"memory.available": "500Mi"}, reclaim={"memory.available": "500Mi"})
    )
    assert len(m.synchronize(mem(400 * MI, usage), pods)) == 1
    clock.step(10)
    # above the threshold but below threshold + min-reclaim: still evicting
    (d,) = m.synchronize(mem(700 * MI, usage), pods)
    assert d.message.startswith(
        "The node was low on resource: memory. Threshold quantity: 500Mi, available: 700Mi. "
    )
    clock.step(10)
    assert m.synchronize(mem(GI, usage), pods) == []  # exactly value + min-reclaim: resolved
    clock.step(10)
    assert m.synchronize(mem(700 * MI, usage), pods) == []  # no longer active: no min-reclaim


def test_min_reclaim_does_not_apply_to_thresholds_still_in_grace() -> None:
    pods, usage = pods_and_usage()
    m, clock = manager(
        thresholds(
            soft={"memory.available": "1Gi"},
            grace={"memory.available": "30s"},
            reclaim={"memory.available": "1Gi"},
        )
    )
    m.synchronize(mem(900 * MI, usage), pods)
    clock.step(20)
    m.synchronize(mem(1500 * MI, usage), pods)  # not active yet: min-reclaim ignored, timer reset
    clock.step(20)
    assert m.synchronize(mem(900 * MI, usage), pods) == []  # new timer, 0 s into 30 s
    clock.step(30)
    assert len(m.synchronize(mem(900 * MI, usage), pods)) == 1


# --- pressure transition period --------------------------------------------------------------


def test_condition_lingers_for_the_transition_period() -> None:
    pods, usage = pods_and_usage()
    m, clock = manager(thresholds({"memory.available": "500Mi"}))
    m.synchronize(mem(400 * MI, [u for u in usage if u.name == "important"]), pods[3:])
    assert m.is_under_memory_pressure()
    clock.step(10)
    m.synchronize(mem(2 * GI, usage), pods)
    assert m.is_under_memory_pressure()
    clock.step(289)  # 299 s after the last crossing
    m.synchronize(mem(2 * GI, usage), pods)
    assert m.is_under_memory_pressure()
    assert not m.admit(make_pod("new-best-effort")).admit
    clock.step(1)  # 300 s: strictly less than the period is required
    m.synchronize(mem(2 * GI, usage), pods)
    assert not m.is_under_memory_pressure()
    assert m.admit(make_pod("new-best-effort")).admit


def test_custom_transition_period_and_zero_means_default() -> None:
    assert (
        ManagerConfig(pressure_transition_period_seconds=0).pressure_transition_period_seconds
        == 300
    )
    pods, usage = pods_and_usage()
    m, clock = manager(
        thresholds({"memory.available": "500Mi"}), pressure_transition_period_seconds=30
    )
    m.synchronize(mem(400 * MI, usage), pods)
    clock.step(30)
    m.synchronize(mem(2 * GI, usage), pods)
    assert not m.is_under_memory_pressure()


# --- stale observations ----------------------------------------------------------------------


def test_the_same_stale_sample_does_not_evict_twice() -> None:
    pods, usage = pods_and_usage()
    m, clock = manager(thresholds({"memory.available": "500Mi"}))
    stale = mem(400 * MI, usage, mem_time="2024-05-01T10:00:00Z")
    assert len(m.synchronize(stale, pods)) == 1
    clock.step(1)
    assert m.synchronize(stale, pods) == []
    assert m.is_under_memory_pressure()
    clock.step(1)
    fresh = mem(400 * MI, usage, mem_time="2024-05-01T10:00:01Z")
    assert len(m.synchronize(fresh, pods)) == 1


# --- allocatable memory ----------------------------------------------------------------------


def test_allocatable_memory_threshold_from_pods_enforcement() -> None:
    pods, usage = pods_and_usage()
    m, _ = manager(thresholds({"memory.available": "500Mi"}, allocatable=("pods",)))
    s = summary(
        mem_available=4 * GI,
        mem_working_set=4 * GI,
        allocatable_available=100 * MI,
        allocatable_working_set=4 * GI,
        pods=usage,
    )
    (d,) = m.synchronize(s, pods)
    assert d.signal == "allocatableMemory.available"
    assert d.message.startswith(
        "The node was low on resource: memory. Threshold quantity: 500Mi, available: 100Mi. "
    )
    assert m.is_under_memory_pressure()


def test_without_enforcement_allocatable_is_not_watched() -> None:
    pods, usage = pods_and_usage()
    m, _ = manager(thresholds({"memory.available": "500Mi"}))
    s = summary(
        mem_available=4 * GI,
        mem_working_set=4 * GI,
        allocatable_available=100 * MI,
        allocatable_working_set=4 * GI,
        pods=usage,
    )
    assert m.synchronize(s, pods) == []


# --- disk ------------------------------------------------------------------------------------


class FakeNode:
    """NodeReclaim double: records GC calls and serves the summary after GC."""

    def __init__(
        self, *, image_fs: bool = False, container_fs: bool = False, after: Summary | None = None
    ) -> None:
        self.image_fs, self.container_fs, self.after = image_fs, container_fs, after
        self.calls: list[str] = []

    def has_dedicated_image_fs(self) -> bool:
        return self.image_fs

    def has_dedicated_container_fs(self) -> bool:
        return self.container_fs

    def delete_all_unused_containers(self) -> None:
        self.calls.append("containers")

    def delete_unused_images(self) -> None:
        self.calls.append("images")
        raise RuntimeError("image service unavailable")  # logged and ignored

    def get_summary(self) -> Summary:
        self.calls.append("summary")
        if self.after is None:
            raise RuntimeError("no stats")
        return self.after


def disk_pods() -> tuple[list[Pod], list[PodUsage]]:
    pods = [
        make_pod("writer", requests={"ephemeral-storage": "100Mi"}),
        make_pod("logger", priority=10),
        make_pod("cache", volumes=[{"name": "scratch", "emptyDir": {}}]),
    ]
    usage = [
        PodUsage("writer", rootfs=900 * MI, logs=0),
        PodUsage("logger", rootfs=0, logs=500 * MI),
        PodUsage("cache", rootfs=0, logs=0, volumes={"scratch": 300 * MI}),
    ]
    return pods, usage


def nodefs_summary(available: int, usage: list[PodUsage] | None = None, **kw: Any) -> Summary:
    return summary(nodefs=fs(available=available, capacity=100 * GI), pods=usage, **kw)


def test_disk_single_fs_reclaims_then_evicts_when_min_reclaim_is_not_met() -> None:
    pods, usage = disk_pods()
    after = nodefs_summary(1_100_000_000)  # 1.1e9 < 1Gi + 500Mi
    node = FakeNode(after=after)
    m, _ = manager(
        thresholds({"nodefs.available": "1Gi"}, reclaim={"nodefs.available": "500Mi"}),
        node_reclaim=node,
    )
    (d,) = m.synchronize(nodefs_summary(500 * MI, usage), pods)
    assert node.calls == ["containers", "images", "summary"]
    assert d.pod.name == "writer"  # single fs: root + logs + volumes; 800Mi above its request
    assert d.resource == "ephemeral-storage"
    assert d.message.startswith(
        "The node was low on resource: ephemeral-storage. "
        "Threshold quantity: 1Gi, available: 500Mi. "
    )
    assert m.is_under_disk_pressure()


def test_disk_reclaim_that_resolves_pressure_evicts_nothing() -> None:
    pods, usage = disk_pods()
    node = FakeNode(after=nodefs_summary(2 * GI))
    m, _ = manager(
        thresholds({"nodefs.available": "1Gi"}, reclaim={"nodefs.available": "500Mi"}),
        node_reclaim=node,
    )
    assert m.synchronize(nodefs_summary(500 * MI, usage), pods) == []
    assert m.last_sync is not None and m.last_sync.reclaimed_at_node_level
    assert m.is_under_disk_pressure()  # the condition still stands


def test_disk_reclaim_without_a_summary_goes_on_to_evict() -> None:
    pods, usage = disk_pods()
    node = FakeNode(after=None)
    m, _ = manager(thresholds({"nodefs.available": "1Gi"}), node_reclaim=node)
    assert len(m.synchronize(nodefs_summary(500 * MI, usage), pods)) == 1


def test_disk_dedicated_imagefs_nodefs_pressure_has_no_reclaim_and_ranks_logs_and_volumes() -> None:
    pods, usage = disk_pods()
    node = FakeNode(image_fs=True, after=None)
    m, _ = manager(
        thresholds({"nodefs.available": "1Gi", "imagefs.available": "1Gi"}), node_reclaim=node
    )
    s = summary(
        nodefs=fs(available=500 * MI, capacity=100 * GI),
        imagefs=fs(available=50 * GI, capacity=100 * GI),
        pods=usage,
    )
    (d,) = m.synchronize(s, pods)
    assert node.calls == []
    assert d.pod.name == "cache"  # logger has 500Mi of logs but priority 10; writer's root ignored
    # imagefs pressure: containers, images, then the re-read
    m2, _ = manager(thresholds({"imagefs.available": "1Gi"}), node_reclaim=FakeNode(image_fs=True))
    s2 = summary(
        nodefs=fs(available=50 * GI, capacity=100 * GI),
        imagefs=fs(available=500 * MI, capacity=100 * GI),
        pods=usage,
    )
    (d2,) = m2.synchronize(s2, pods)
    assert d2.pod.name == "writer"
    assert d2.signal == "imagefs.available"
    assert m2.node_reclaim is not None
    assert m2.node_reclaim.calls == ["containers", "images", "summary"]  # type: ignore[attr-defined]


def test_containerfs_thresholds_are_derived_and_fire() -> None:
    pods, usage = disk_pods()
    node = FakeNode(image_fs=True, container_fs=True, after=None)
    m, _ = manager(
        thresholds({"nodefs.available": "1Gi", "imagefs.available": "1Gi"}), node_reclaim=node
    )
    s = summary(
        nodefs=fs(available=50 * GI, capacity=100 * GI),
        imagefs=fs(available=50 * GI, capacity=100 * GI),
        containerfs=fs(available=500 * MI, capacity=100 * GI),
        pods=usage,
    )
    (d,) = m.synchronize(s, pods)
    assert d.signal == "containerfs.available"
    assert node.calls == ["containers", "summary"]  # split: dead containers only
    assert d.pod.name == "writer"


def test_split_fs_with_the_gate_off_fails_every_sync() -> None:
    node = FakeNode(image_fs=True, container_fs=True)
    m, _ = manager(
        thresholds({"nodefs.available": "1Gi"}),
        node_reclaim=node,
        feature_gates={"KubeletSeparateDiskGC": False},
    )
    for _ in range(2):
        with pytest.raises(EvictionSyncError, match="KubeletSeparateDiskGC is turned off"):
            m.synchronize(nodefs_summary(MI), [])


def test_imagefs_detection_error_is_retried() -> None:
    class Broken(FakeNode):
        def has_dedicated_image_fs(self) -> bool:
            raise OSError("cri down")

    m, _ = manager(thresholds({"nodefs.available": "1Gi"}), node_reclaim=Broken())
    with pytest.raises(EvictionSyncError, match="HasDedicatedImageFs"):
        m.synchronize(nodefs_summary(MI), [])
    assert m.dedicated_image_fs is None


def test_inodes_pressure() -> None:
    pods = [make_pod("many-files"), make_pod("few-files")]
    usage = [
        PodUsage("many-files", rootfs=1, logs=1, rootfs_inodes=9000, logs_inodes=10),
        PodUsage("few-files", rootfs=1, logs=1, rootfs_inodes=10, logs_inodes=10),
    ]
    m, _ = manager(thresholds({"nodefs.inodesFree": "5%"}))
    s = summary(
        nodefs=fs(available=50 * GI, capacity=100 * GI, inodes_free=40, inodes=1000), pods=usage
    )
    (d,) = m.synchronize(s, pods)
    assert d.pod.name == "many-files"
    assert d.message == (
        "The node was low on resource: inodes. Threshold quantity: 50, available: 40. "
    )


# --- PIDs ------------------------------------------------------------------------------------


def test_pid_pressure_ranks_by_priority_then_process_count() -> None:
    pods = [
        make_pod("forky", priority=100),
        make_pod("calm", priority=0),
        make_pod("busy", priority=0),
    ]
    usage = [
        PodUsage("forky", processes=5000),
        PodUsage("calm", processes=2),
        PodUsage("busy", processes=300),
    ]
    m, _ = manager(thresholds({"pid.available": "500"}))
    (d,) = m.synchronize(summary(max_pid=10000, procs=9600, pods=usage), pods)
    assert d.pod.name == "busy"
    assert d.signal == "pid.available"
    assert (
        d.message == "The node was low on resource: pids. Threshold quantity: 500, available: 400. "
    )
    assert m.is_under_pid_pressure()
    assert not m.admit(make_pod("guaranteed", requests={"memory": "1Gi"})).admit


# --- local ephemeral storage limits ----------------------------------------------------------


def test_local_storage_limits_evict_every_violator_in_one_pass() -> None:
    pods = [
        make_pod("emptydir", volumes=[{"name": "scratch", "emptyDir": {"sizeLimit": "100Mi"}}]),
        make_pod(
            "pod-limit",
            containers=[
                {"name": "a", "resources": {"limits": {"ephemeral-storage": "100Mi"}}},
                {"name": "b", "resources": {"limits": {"ephemeral-storage": "100Mi"}}},
            ],
        ),
        make_pod(
            "container-limit",
            containers=[
                {"name": "c", "resources": {"limits": {"ephemeral-storage": "1Gi"}}},
                {"name": "d"},
            ],
        ),
        make_pod(
            "critical",
            priority=2000000000,
            volumes=[{"name": "scratch", "emptyDir": {"sizeLimit": "1Mi"}}],
        ),
        make_pod("fine", volumes=[{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}]),
    ]
    usage = [
        PodUsage("emptydir", volumes={"scratch": 100 * MI + 1}),
        PodUsage("pod-limit", ephemeral=201 * MI),
        PodUsage(
            "container-limit",
            ephemeral=GI,  # the pod total is within the pod limit: the container rule decides
            containers=[
                {"name": "c", "rootfs": {"usedBytes": GI}, "logs": {"usedBytes": 1}},
                {"name": "d"},
            ],
        ),
        PodUsage("critical", volumes={"scratch": GI}),
        PodUsage("fine", volumes={"scratch": GI}),
    ]
    m, _ = manager(thresholds({"memory.available": "500Mi"}))
    got = m.synchronize(mem(MI, usage), pods)  # memory pressure too: skipped this sync
    assert [(d.pod.name, d.signal, d.grace_period_override) for d in got] == [
        ("emptydir", "emptydirfs.limit", 1),
        ("pod-limit", "ephemeralpodfs.limit", 1),
        ("container-limit", "ephemeralcontainerfs.limit", 1),
    ]
    assert [d.message for d in got] == [
        'Usage of EmptyDir volume "scratch" exceeds the limit "100Mi". ',
        "Pod ephemeral local storage usage exceeds the total limit of containers 200Mi. ",
        'Container c exceeded its local ephemeral storage limit "1Gi". ',
    ]
    assert all(d.condition is None for d in got)


def test_container_limit_counts_rootfs_only_without_dedicated_imagefs() -> None:
    pod = make_pod(
        "w", containers=[{"name": "c", "resources": {"limits": {"ephemeral-storage": "1Mi"}}}]
    )
    usage = [PodUsage("w", rootfs=10 * MI, logs=1)]
    m, _ = manager([], node_reclaim=FakeNode(image_fs=True))
    assert m.synchronize(summary(pods=usage), [pod]) == []
    m, _ = manager([], node_reclaim=FakeNode(image_fs=False))
    assert len(m.synchronize(summary(pods=usage), [pod])) == 1


def test_local_storage_isolation_off_and_no_thresholds_does_nothing() -> None:
    pod = make_pod("emptydir", volumes=[{"name": "s", "emptyDir": {"sizeLimit": "1Mi"}}])
    m, _ = manager([], local_storage_capacity_isolation=False)
    assert m.synchronize(summary(pods=[PodUsage("emptydir", volumes={"s": GI})]), [pod]) == []
    assert m.last_sync is None


# --- the eviction-preference extension -------------------------------------------------------


def test_never_is_skipped_like_critical_and_avoid_goes_last_in_its_priority() -> None:
    pods, usage = pods_and_usage()
    hog = make_pod(
        "hog",
        priority=0,
        requests={"memory": "100Mi"},
        annotations={EVICTION_PREFERENCE_ANNOTATION: "never"},
    )
    best_effort = make_pod(
        "best-effort", priority=0, annotations={EVICTION_PREFERENCE_ANNOTATION: "avoid"}
    )
    pods = [pods[0], hog, best_effort, pods[3]]
    m, _ = manager(
        thresholds({"memory.available": "500Mi"}), eviction_preference_namespaces={"default"}
    )
    (d,) = m.synchronize(mem(MI, usage), pods)
    assert m.last_sync is not None
    # kubelet order: hog, best-effort, important, guaranteed; avoid moves best-effort behind
    # guaranteed (same priority) but not behind important (priority 1000 keeps its slot)
    assert [p.name for p in m.last_sync.ranking] == [
        "hog",
        "guaranteed",
        "important",
        "best-effort",
    ]
    assert d.pod.name == "guaranteed"
    assert m.last_sync.skipped[0][1] == "eviction-preference: never"


def test_by_default_a_pod_cannot_exempt_itself() -> None:
    """The threat: a hog marks itself ``never``; by default it is ranked and evicted exactly as
    the kubelet would (the annotation is the pod author's, the exemption the operator's)."""
    pods, usage = pods_and_usage()
    hog = make_pod(
        "hog",
        requests={"memory": "100Mi"},
        annotations={EVICTION_PREFERENCE_ANNOTATION: "never"},
    )
    plain = make_pod("hog", requests={"memory": "100Mi"})
    others = [pods[0], pods[2], pods[3]]
    m, _ = manager(thresholds({"memory.available": "500Mi"}))
    (d,) = m.synchronize(mem(MI, usage), [others[0], hog, *others[1:]])
    assert d.pod.name == "hog"
    assert m.last_sync is not None and m.last_sync.skipped == []
    ranked_annotated = [p.name for p in m.last_sync.ranking]
    kubelet, _ = manager(thresholds({"memory.available": "500Mi"}))
    (d2,) = kubelet.synchronize(mem(MI, usage), [others[0], plain, *others[1:]])
    assert kubelet.last_sync is not None
    assert ranked_annotated == [p.name for p in kubelet.last_sync.ranking]
    assert d.message == d2.message and d.grace_period_override == d2.grace_period_override
    assert m.can_evict(hog) == (True, "")


def test_preference_is_honoured_only_in_allowed_namespaces() -> None:
    pods, usage = pods_and_usage()
    never = {EVICTION_PREFERENCE_ANNOTATION: "never"}
    hog_team = make_pod("hog", namespace="team", requests={"memory": "100Mi"}, annotations=never)
    hog_infra = make_pod("hog", namespace="infra", requests={"memory": "100Mi"}, annotations=never)
    m, _ = manager(
        thresholds({"memory.available": "500Mi"}), eviction_preference_namespaces={"infra"}
    )
    assert m.can_evict(hog_team) == (True, "")
    assert m.can_evict(hog_infra) == (False, "eviction-preference: never")
    (d,) = m.synchronize(mem(MI, usage), [pods[0], hog_team, pods[2], pods[3]])
    assert d.pod.namespace == "team"
    everywhere, _ = manager(
        thresholds({"memory.available": "500Mi"}), eviction_preference_namespaces={"*"}
    )
    assert everywhere.can_evict(hog_team) == (False, "eviction-preference: never")
