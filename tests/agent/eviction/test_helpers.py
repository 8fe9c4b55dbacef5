"""The kubelet's eviction helpers, case by case (the semantics of upstream helpers_test.go)."""

from __future__ import annotations

import pytest

from agent.eviction import (
    Observation,
    Signal,
    Threshold,
    ThresholdValue,
    compare_threshold_value,
    evict_message,
    exceed_memory_requests,
    get_reclaimable_threshold,
    has_node_condition,
    make_signal_observations,
    memcg_usage_threshold,
    memory,
    merge_thresholds,
    node_conditions,
    node_conditions_last_observed_at,
    node_conditions_observed_since,
    ordered_by,
    priority,
    process,
    rank_disk_pressure_func,
    rank_memory_pressure,
    rank_pid_pressure,
    sort_thresholds_by_eviction_priority,
    thresholds_first_observed_at,
    thresholds_met,
    thresholds_met_grace_period,
    thresholds_updated_stats,
)
from agent.eviction.helpers import build_signal_to_rank_func, cached_stats_func
from agent.eviction.pods import get_resource_request, pod_ephemeral_storage_limit
from agent.eviction.summary import Summary
from agent.eviction.thresholds import float32
from agent.eviction.types import FsStatsType
from kube.objects import Pod
from tests.support.eviction import GI, MI, PodUsage, fs, make_pod, manifest_volumes, summary

LT = "LessThan"


def q(n: int) -> ThresholdValue:
    return ThresholdValue(quantity=n)


def names(pods: list[Pod]) -> list[str]:
    return [p.name for p in pods]


# --- observations ----------------------------------------------------------------------------


def test_make_signal_observations_for_every_signal() -> None:
    s = summary(
        mem_available=1 * GI,
        mem_working_set=3 * GI,
        mem_time="2024-05-01T10:00:00Z",
        allocatable_available=512 * MI,
        allocatable_working_set=2 * GI,
        nodefs=fs(available=10 * GI, capacity=100 * GI, inodes_free=900, inodes=1000),
        imagefs=fs(available=20 * GI, capacity=200 * GI, inodes_free=1900, inodes=2000),
        containerfs=fs(available=30 * GI, capacity=300 * GI, inodes_free=2900, inodes=3000),
        max_pid=1000,
        procs=300,
        pods=[PodUsage("a", memory=5)],
    )
    obs, stats = make_signal_observations(s)
    assert obs[Signal.MEMORY_AVAILABLE].available == 1 * GI
    assert obs[Signal.MEMORY_AVAILABLE].capacity == 4 * GI  # available + working set
    assert obs[Signal.MEMORY_AVAILABLE].time == 1714557600.0
    assert obs[Signal.ALLOCATABLE_MEMORY_AVAILABLE] == Observation(512 * MI, 512 * MI + 2 * GI)
    assert obs[Signal.NODE_FS_AVAILABLE] == Observation(10 * GI, 100 * GI)
    assert obs[Signal.NODE_FS_INODES_FREE] == Observation(900, 1000)
    assert obs[Signal.IMAGE_FS_AVAILABLE] == Observation(20 * GI, 200 * GI)
    assert obs[Signal.IMAGE_FS_INODES_FREE] == Observation(1900, 2000)
    assert obs[Signal.CONTAINER_FS_AVAILABLE] == Observation(30 * GI, 300 * GI)
    assert obs[Signal.CONTAINER_FS_INODES_FREE] == Observation(2900, 3000)
    assert obs[Signal.PID_AVAILABLE] == Observation(700, 1000)
    found = stats(make_pod("a"))
    assert found is not None and found.pod_ref.name == "a"
    assert stats(make_pod("b")) is None


def test_missing_stats_give_no_observation() -> None:
    s = summary(nodefs=fs(available=10, inodes=5), max_pid=100)
    obs, _ = make_signal_observations(s)
    assert obs == {}  # capacity missing, inodesFree missing, curproc missing
    assert make_signal_observations(Summary())[0] == {}


# --- thresholds over time --------------------------------------------------------------------

HARD_MEM = Threshold(Signal.MEMORY_AVAILABLE, LT, q(500 * MI), 0.0, q(100 * MI))
SOFT_MEM = Threshold(Signal.MEMORY_AVAILABLE, LT, q(1 * GI), 60.0)
PCT_MEM = Threshold(Signal.MEMORY_AVAILABLE, LT, ThresholdValue(percentage=float32(0.1)))


@pytest.mark.parametrize(
    ("available", "enforce", "met"),
    [
        (1 * GI, False, []),
        (500 * MI, False, []),  # equality is not met
        (500 * MI - 1, False, [HARD_MEM]),
        (550 * MI, False, []),
        (550 * MI, True, [HARD_MEM]),  # below 500Mi + 100Mi min-reclaim
        (600 * MI, True, []),
    ],
)
def test_thresholds_met_is_strict(available: int, enforce: bool, met: list[Threshold]) -> None:
    obs = {Signal.MEMORY_AVAILABLE: Observation(available, 4 * GI)}
    assert thresholds_met([HARD_MEM], obs, enforce) == met


def test_thresholds_met_percentage_of_capacity() -> None:
    cap = 1000 * MI
    trigger = int(cap * float32(0.1))
    assert (
        thresholds_met([PCT_MEM], {Signal.MEMORY_AVAILABLE: Observation(trigger, cap)}, False) == []
    )
    assert thresholds_met(
        [PCT_MEM], {Signal.MEMORY_AVAILABLE: Observation(trigger - 1, cap)}, False
    ) == [PCT_MEM]


def test_thresholds_without_observation_or_operator_never_met() -> None:
    inert = Threshold(Signal.CONTAINER_FS_AVAILABLE, "", ThresholdValue(percentage=0.0))
    obs = {Signal.CONTAINER_FS_AVAILABLE: Observation(-5, 10)}
    assert thresholds_met([inert, HARD_MEM], obs, False) == []


def test_thresholds_updated_stats() -> None:
    t = HARD_MEM
    new = {Signal.MEMORY_AVAILABLE: Observation(1, 2, time=20.0)}
    assert thresholds_updated_stats([t], new, {}) == [t]
    assert thresholds_updated_stats(
        [t], new, {Signal.MEMORY_AVAILABLE: Observation(1, 2, 10.0)}
    ) == [t]
    assert (
        thresholds_updated_stats([t], new, {Signal.MEMORY_AVAILABLE: Observation(1, 2, 20.0)}) == []
    )
    assert (
        thresholds_updated_stats([t], new, {Signal.MEMORY_AVAILABLE: Observation(1, 2, 30.0)}) == []
    )
    untimed = {Signal.MEMORY_AVAILABLE: Observation(1, 2)}
    assert thresholds_updated_stats([t], untimed, untimed) == [t]
    assert thresholds_updated_stats([t], {}, {}) == []


def test_thresholds_first_observed_at_keeps_old_times_and_forgets_unmet() -> None:
    last = {HARD_MEM: 10.0, SOFT_MEM: 20.0}
    assert thresholds_first_observed_at([HARD_MEM, PCT_MEM], last, 100.0) == {
        HARD_MEM: 10.0,
        PCT_MEM: 100.0,
    }


def test_thresholds_met_grace_period() -> None:
    observed = {HARD_MEM: 100.0, SOFT_MEM: 100.0}
    assert thresholds_met_grace_period(observed, 100.0) == [HARD_MEM]
    assert thresholds_met_grace_period(observed, 159.9) == [HARD_MEM]
    assert thresholds_met_grace_period(observed, 160.0) == [HARD_MEM, SOFT_MEM]


def test_node_conditions_and_transition_period() -> None:
    disk = Threshold(Signal.NODE_FS_AVAILABLE, LT, q(1))
    pid = Threshold(Signal.PID_AVAILABLE, LT, q(1))
    alloc = Threshold(Signal.ALLOCATABLE_MEMORY_AVAILABLE, LT, q(1))
    assert node_conditions([HARD_MEM, alloc, disk, pid]) == [
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
    ]
    assert node_conditions([]) == []
    seen = node_conditions_last_observed_at(["DiskPressure"], {"MemoryPressure": 5.0}, 10.0)
    assert seen == {"DiskPressure": 10.0, "MemoryPressure": 5.0}
    seen = node_conditions_last_observed_at(["MemoryPressure"], {"MemoryPressure": 5.0}, 10.0)
    assert seen == {"MemoryPressure": 10.0}
    assert node_conditions_observed_since({"MemoryPressure": 0.0}, 300.0, 299.0) == [
        "MemoryPressure"
    ]
    assert node_conditions_observed_since({"MemoryPressure": 0.0}, 300.0, 300.0) == []
    assert has_node_condition(["DiskPressure"], "DiskPressure")
    assert not has_node_condition(["DiskPressure"], "MemoryPressure")


def test_compare_threshold_value_and_merge() -> None:
    assert compare_threshold_value(q(5), q(5))
    assert not compare_threshold_value(q(5), q(6))
    assert not compare_threshold_value(q(5), ThresholdValue(percentage=0.5))
    assert not compare_threshold_value(ThresholdValue(percentage=0.5), q(5))
    assert compare_threshold_value(
        ThresholdValue(percentage=float32(0.1)), ThresholdValue(percentage=float32(0.1))
    )
    # merge dedupes by signal, operator, value and grace — not by min-reclaim
    same_but_reclaim = Threshold(Signal.MEMORY_AVAILABLE, LT, q(500 * MI), 0.0, None)
    assert merge_thresholds([HARD_MEM], [same_but_reclaim, SOFT_MEM]) == [HARD_MEM, SOFT_MEM]


def test_sort_thresholds_by_eviction_priority_is_stable() -> None:
    nodefs = Threshold(Signal.NODE_FS_AVAILABLE, LT, q(1))
    pid = Threshold(Signal.PID_AVAILABLE, LT, q(1))
    alloc = Threshold(Signal.ALLOCATABLE_MEMORY_AVAILABLE, LT, q(1))
    unknown = Threshold("swap.available", LT, q(1))
    got = sort_thresholds_by_eviction_priority([unknown, nodefs, alloc, pid, HARD_MEM])
    assert got == [alloc, HARD_MEM, nodefs, pid, unknown]
    assert get_reclaimable_threshold(got) == (alloc, "memory")
    assert get_reclaimable_threshold([unknown, pid]) == (pid, "pids")
    assert get_reclaimable_threshold([unknown]) is None


# --- requests --------------------------------------------------------------------------------


def test_requests_with_sidecars_init_and_overhead() -> None:
    pod = make_pod(
        "p",
        containers=[
            {"name": "a", "resources": {"requests": {"memory": "100Mi"}}},
            {"name": "b", "resources": {"requests": {"memory": "50Mi"}}},
        ],
        init_containers=[
            {
                "name": "side",
                "restartPolicy": "Always",
                "resources": {"requests": {"memory": "10Mi"}},
            },
            {"name": "init", "resources": {"requests": {"memory": "500Mi"}}},
        ],
        overhead={"memory": "1Mi"},
    )
    # max(100+50+10, 500+10) + overhead
    assert get_resource_request(pod, "memory") == 511 * MI
    assert get_resource_request(pod, "inodes") == 0
    assert get_resource_request(make_pod("none", overhead={"memory": "1Mi"}), "memory") == 0
    pod_level = make_pod("pl", requests={"memory": "1Mi"}, pod_requests={"memory": "2Mi"})
    assert get_resource_request(pod_level, "memory") == 2 * MI
    assert get_resource_request(pod_level, "memory", pod_level_resources=False) == 1 * MI


def test_pod_ephemeral_storage_limit() -> None:
    assert pod_ephemeral_storage_limit(make_pod("x")) is None
    pod = make_pod(
        "y",
        containers=[
            {"name": "a", "resources": {"limits": {"ephemeral-storage": "1Gi"}}},
            {"name": "b", "resources": {"limits": {"ephemeral-storage": "1Gi"}}},
        ],
    )
    assert pod_ephemeral_storage_limit(pod) == 2 * GI


# --- ranking ---------------------------------------------------------------------------------


def mem_pods() -> tuple[list[Pod], list[PodUsage]]:
    # upstream TestOrderedByExceedsRequestMemory / TestOrderedByMemory, in our own words
    pods = [
        make_pod("best-effort-high", priority=100),
        make_pod("best-effort-low", priority=-10),
        make_pod("burstable-below", priority=0, requests={"memory": "100Mi"}),
        make_pod("burstable-above", priority=0, requests={"memory": "100Mi"}),
        make_pod("guaranteed-equal", priority=0, requests={"memory": "200Mi"}),
        make_pod("burstable-way-above", priority=0, requests={"memory": "10Mi"}),
    ]
    usage = [
        PodUsage("best-effort-high", memory=300 * MI),
        PodUsage("best-effort-low", memory=1 * MI),
        PodUsage("burstable-below", memory=50 * MI),
        PodUsage("burstable-above", memory=150 * MI),
        PodUsage("guaranteed-equal", memory=200 * MI),
        PodUsage("burstable-way-above", memory=500 * MI),
    ]
    return pods, usage


def test_rank_memory_pressure_chain() -> None:
    pods, usage = mem_pods()
    _, stats = make_signal_observations(summary(pods=usage))
    ranked = rank_memory_pressure(list(pods), stats)
    assert names(ranked) == [
        # exceed requests: by priority, then by usage above request
        "best-effort-low",
        "burstable-way-above",
        "burstable-above",
        "best-effort-high",
        # within requests (equal does not exceed): 0 above request before -50Mi
        "guaranteed-equal",
        "burstable-below",
    ]


def test_ranking_ignores_qos() -> None:
    # a Burstable pod far over its request goes before a BestEffort pod using less (#78561)
    burstable = make_pod("burstable", requests={"memory": "10Mi"})
    best_effort = make_pod("best-effort")
    _, stats = make_signal_observations(
        summary(pods=[PodUsage("burstable", memory=500 * MI), PodUsage("best-effort", memory=MI)])
    )
    assert names(rank_memory_pressure([best_effort, burstable], stats)) == [
        "burstable",
        "best-effort",
    ]


def test_pods_without_stats_rank_first_in_usage_comparators() -> None:
    a, b = make_pod("a", priority=-5), make_pod("b", priority=5)
    stats = cached_stats_func(summary(pods=[PodUsage("a", memory=10)]).pods)
    assert exceed_memory_requests(stats)(a, b) == 1
    assert memory(stats)(b, a) == -1
    assert process(stats)(b, a) == -1
    assert priority(a, b) == -1
    assert names(rank_memory_pressure([a, b], stats)) == ["b", "a"]


def test_a_mirror_pod_finds_its_static_pods_stats() -> None:
    """The node's stats name a static pod by the hash the kubelet runs it under; the API's
    mirror pod has a UID of its own and that hash in ``kubernetes.io/config.mirror``. (The
    helpers read pods of the kubelet's view, where only a trusted mirror keeps the annotation:
    ``tests/agent/eviction/test_kubelet_view.py``.)"""
    mirror = make_pod(
        "etcd",
        annotations={
            "kubernetes.io/config.mirror": "uid-static",
            "kubernetes.io/config.source": "file",
        },
    )
    other = make_pod("static")  # an API pod whose UID happens to be the hash: matched as itself
    stats = cached_stats_func(summary(pods=[PodUsage("static", memory=7 * MI)]).pods)
    found = stats(mirror)
    assert found is not None and found.memory is not None
    assert found.memory.working_set_bytes == 7 * MI
    assert stats(other) is found
    assert stats(make_pod("unrelated")) is None


def test_ordered_by_is_stable_on_ties() -> None:
    pods = [make_pod(f"p{i}") for i in range(30)]
    stats = cached_stats_func(summary(pods=[PodUsage(f"p{i}", memory=7) for i in range(30)]).pods)
    assert names(ordered_by(priority, memory(stats)).sort(list(pods))) == names(pods)


def test_rank_pid_pressure() -> None:
    pods = [
        make_pod("low-few", priority=0),
        make_pod("high-many", priority=10),
        make_pod("low-many", priority=0),
        make_pod("nostats", priority=0),
    ]
    _, stats = make_signal_observations(
        summary(
            pods=[
                PodUsage("low-few", processes=2),
                PodUsage("high-many", processes=100),
                PodUsage("low-many", processes=50),
            ]
        )
    )
    assert names(rank_pid_pressure(pods, stats)) == ["nostats", "low-many", "low-few", "high-many"]


def disk_pods() -> tuple[list[Pod], list[PodUsage]]:
    pods = [
        make_pod("logs-heavy", requests={"ephemeral-storage": "100Mi"}),
        make_pod(
            "volume-heavy",
            volumes=[
                {"name": "scratch", "emptyDir": {}},
                {"name": "ram", "emptyDir": {"medium": "Memory"}},
            ],
        ),
        make_pod("root-heavy", requests={"ephemeral-storage": "1Mi"}),
    ]
    usage = [
        PodUsage("logs-heavy", rootfs=1 * MI, logs=400 * MI, rootfs_inodes=5, logs_inodes=10),
        PodUsage(
            "volume-heavy",
            rootfs=0,
            logs=0,
            volumes={"scratch": 300 * MI, "ram": 5 * GI},
        ),
        PodUsage("root-heavy", rootfs=600 * MI, logs=0, rootfs_inodes=1000, logs_inodes=1),
    ]
    return pods, usage


def test_rank_disk_pressure_single_fs_measures_everything() -> None:
    pods, usage = disk_pods()
    _, stats = make_signal_observations(summary(pods=usage))
    rank = build_signal_to_rank_func(False, False, volumes=manifest_volumes)[
        Signal.NODE_FS_AVAILABLE
    ]
    # root-heavy 599Mi above request, volume-heavy 300Mi (memory emptyDir excluded),
    # logs-heavy 301Mi above 100Mi request -> 301 > 300
    assert names(rank(list(pods), stats)) == ["root-heavy", "logs-heavy", "volume-heavy"]


def test_the_pod_value_carries_the_medium_a_memory_emptydir_is_not_disk() -> None:
    pods, usage = disk_pods()
    _, stats = make_signal_observations(summary(pods=usage))
    # the default volumes function reads kube.objects.Volume, which keeps the medium now:
    # the 5Gi memory-backed emptyDir is not disk usage, exactly as from the manifest
    rank = build_signal_to_rank_func(False, False)[Signal.NODE_FS_AVAILABLE]
    assert names(rank(list(pods), stats)) == ["root-heavy", "logs-heavy", "volume-heavy"]


def test_rank_disk_pressure_dedicated_imagefs() -> None:
    pods, usage = disk_pods()
    _, stats = make_signal_observations(summary(pods=usage))
    ranks = build_signal_to_rank_func(True, False, volumes=manifest_volumes)
    # nodefs counts logs and local volumes only: logs-heavy 400Mi exceeds 100Mi
    assert names(ranks[Signal.NODE_FS_AVAILABLE](list(pods), stats)) == [
        "logs-heavy",
        "volume-heavy",
        "root-heavy",
    ]
    # imagefs counts the writable layer only: then 0-0 above request beats 1Mi-100Mi
    assert names(ranks[Signal.IMAGE_FS_AVAILABLE](list(pods), stats)) == [
        "root-heavy",
        "volume-heavy",
        "logs-heavy",
    ]
    assert ranks[Signal.CONTAINER_FS_AVAILABLE] is ranks[Signal.IMAGE_FS_AVAILABLE]


def test_rank_disk_pressure_split_imagefs_ranks_by_priority_then_request() -> None:
    pods, usage = disk_pods()
    _, stats = make_signal_observations(summary(pods=usage))
    ranks = build_signal_to_rank_func(True, True, volumes=manifest_volumes)
    # images are not attributed to pods: nobody exceeds, smallest request first
    assert names(ranks[Signal.IMAGE_FS_AVAILABLE](list(pods), stats)) == [
        "volume-heavy",
        "root-heavy",
        "logs-heavy",
    ]
    assert ranks[Signal.CONTAINER_FS_AVAILABLE] is ranks[Signal.NODE_FS_AVAILABLE]


def test_rank_inodes_subtracts_the_bytes_request() -> None:
    pods, usage = disk_pods()
    _, stats = make_signal_observations(summary(pods=usage))
    rank = rank_disk_pressure_func([FsStatsType.ROOT, FsStatsType.LOGS], "inodes")
    # inode usage: logs-heavy 15, root-heavy 1001, volume-heavy 0 (does not exceed request 0).
    # Quirk: the ephemeral-storage request in bytes is subtracted: 1001-1Mi > 15-100Mi.
    assert names(rank(list(pods), stats)) == ["root-heavy", "logs-heavy", "volume-heavy"]
    # without the quirk logs-heavy would still lose to root-heavy; flip the counts to show it bites
    usage[0] = PodUsage("logs-heavy", rootfs=0, logs=0, rootfs_inodes=2000, logs_inodes=0)
    _, stats = make_signal_observations(summary(pods=usage))
    # 2000 - 100Mi < 1001 - 1Mi: the pod with more inodes ranks second
    assert names(rank(list(pods), stats)) == ["root-heavy", "logs-heavy", "volume-heavy"]


# --- messages --------------------------------------------------------------------------------


def test_evict_message_memory() -> None:
    pod = make_pod(
        "web",
        containers=[
            {"name": "app", "resources": {"requests": {"memory": "100Mi"}}},
            {"name": "sidecar", "resources": {"requests": {"memory": "1Gi"}}},
        ],
        init_containers=[{"name": "init", "resources": {}}],
    )
    usage = PodUsage(
        "web",
        memory=1536 * MI,
        containers=[
            {"name": "app", "memory": {"workingSetBytes": 1536 * MI}},
            {"name": "sidecar", "memory": {"workingSetBytes": 10 * MI}},
            {"name": "init", "memory": {"workingSetBytes": 2 * GI}},
            {"name": "ephemeral-debug", "memory": {"workingSetBytes": 9 * GI}},
        ],
    )
    obs = {Signal.MEMORY_AVAILABLE: Observation(1000 * MI - 7, 4 * GI)}
    _, stats = make_signal_observations(summary(pods=[usage]))
    message, annotations = evict_message("memory", pod, stats, [HARD_MEM], obs)
    assert message == (
        "The node was low on resource: memory. "
        "Threshold quantity: 500Mi, available: 1048575993. "
        "Container app was using 1536Mi, request is 100Mi, has larger consumption of memory. "
        "Container init was using 2Gi, request is 0, has larger consumption of memory. "
    )
    assert annotations == {
        "offending_containers": "app,init",
        "offending_containers_usage": "1536Mi,2Gi",
        "starved_resource": "memory",
    }


def test_evict_message_percentage_threshold_and_no_stats() -> None:
    obs = {Signal.MEMORY_AVAILABLE: Observation(100 * MI, 1000 * MI)}
    t = Threshold(
        Signal.MEMORY_AVAILABLE, LT, ThresholdValue(percentage=float32(float32(20) / 100))
    )
    message, annotations = evict_message("memory", make_pod("x"), lambda p: None, [t], obs)
    assert message == (
        "The node was low on resource: memory. Threshold quantity: 209715203, available: 100Mi. "
    )
    assert annotations == {}


def test_evict_message_disk_needs_rootfs_and_logs() -> None:
    pod = make_pod(
        "d",
        containers=[
            {"name": "a", "resources": {"requests": {"ephemeral-storage": "1Mi"}}},
            {"name": "b"},
        ],
    )
    usage = PodUsage(
        "d",
        containers=[
            {"name": "a", "rootfs": {"usedBytes": 2 * MI}, "logs": {"usedBytes": MI}},
            {"name": "b", "rootfs": {"usedBytes": 5 * MI}},
        ],
    )
    t = Threshold(Signal.NODE_FS_INODES_FREE, LT, ThresholdValue(quantity=20000, fmt="DecimalSI"))
    obs = {Signal.NODE_FS_INODES_FREE: Observation(15000, 10**6)}
    _, stats = make_signal_observations(summary(pods=[usage]))
    msg, ann = evict_message("inodes", pod, stats, [t], obs)
    assert msg == "The node was low on resource: inodes. Threshold quantity: 20k, available: 15k. "
    assert ann["offending_containers"] == ""
    b = Threshold(Signal.NODE_FS_AVAILABLE, LT, q(GI))
    msg, ann = evict_message(
        "ephemeral-storage",
        pod,
        stats,
        [b],
        {Signal.NODE_FS_AVAILABLE: Observation(GI - 1, 10 * GI)},
    )
    assert msg.endswith(
        "Container a was using 3Mi, request is 1Mi, has larger consumption of ephemeral-storage. "
    )
    assert ann["offending_containers"] == "a"


def test_evict_message_pod_level_request() -> None:
    pod = make_pod("pl", pod_requests={"memory": "1Gi"})
    _, stats = make_signal_observations(summary(pods=[PodUsage("pl", memory=2 * GI)]))
    msg, ann = evict_message("memory", pod, stats, [], {})
    assert msg == (
        "The node was low on resource: memory. "
        "Pod pl was using 2Gi, request is 1Gi, has larger consumption of memory. "
    )
    assert ann["offending_pod"] == "pl" and ann["offending_pod_usage"] == "2Gi"


def test_memcg_usage_threshold() -> None:
    s = Summary.from_dict(
        {
            "node": {
                "memory": {
                    "availableBytes": 3 * GI,
                    "workingSetBytes": 1 * GI,
                    "usageBytes": 1 * GI + 200 * MI,
                },
                "systemContainers": [
                    {
                        "name": "pods",
                        "memory": {
                            "availableBytes": 1 * GI,
                            "workingSetBytes": 1 * GI,
                            "usageBytes": 1 * GI,
                        },
                    }
                ],
            }
        }
    )
    # capacity 4Gi - 100Mi threshold + 200Mi inactive file
    assert memcg_usage_threshold(Threshold(Signal.MEMORY_AVAILABLE, LT, q(100 * MI)), s) == (
        4 * GI + 100 * MI
    )
    alloc = Threshold(Signal.ALLOCATABLE_MEMORY_AVAILABLE, LT, q(100 * MI))
    assert memcg_usage_threshold(alloc, s) == 2 * GI - 100 * MI
    with pytest.raises(ValueError, match="not found in metrics"):
        memcg_usage_threshold(alloc, Summary())
    with pytest.raises(ValueError, match="incomplete"):
        memcg_usage_threshold(HARD_MEM, Summary())
