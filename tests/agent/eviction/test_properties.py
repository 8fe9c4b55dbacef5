"""Invariants of the eviction core under random pods, stats, thresholds and time."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from agent.eviction import EvictionManager, ManagerConfig, kubelet_view, parse_threshold_config
from agent.eviction.helpers import (
    build_signal_to_rank_func,
    cached_stats_func,
    exceed_memory_requests,
    memory,
    ordered_by,
    priority,
)
from agent.eviction.preference import (
    EVICTION_PREFERENCE_ANNOTATION,
    apply_eviction_preference,
    is_eviction_forbidden,
)
from agent.eviction.summary import Summary
from agent.eviction.thresholds import get_threshold_quantity
from kube.critical import is_critical_pod
from kube.objects import Pod
from tests.support.clock import FakeClock
from tests.support.eviction import MI, PodUsage, make_pod, pod_stats

STATIC_UID = "0123456789abcdef0123456789abcdef"  # a static pod's UID: the hash of its manifest
LOCAL_STORAGE_SIGNALS = {"emptydirfs.limit", "ephemeralpodfs.limit", "ephemeralcontainerfs.limit"}

priorities = st.sampled_from([None, -5, 0, 0, 10, 1000, 1999999999, 2000000000, 2000001000])
annotation_sets = st.sampled_from(
    [
        {},
        {},
        {"kubernetes.io/config.source": "file"},
        {"kubernetes.io/config.source": "api"},
        {"kubernetes.io/config.mirror": "x"},
        {"kubernetes.io/config.mirror": STATIC_UID},
        {EVICTION_PREFERENCE_ANNOTATION: "never"},
        {EVICTION_PREFERENCE_ANNOTATION: "avoid"},
    ]
)


@st.composite
def pod_and_usage(draw: st.DrawFn, index: int) -> tuple[Pod, PodUsage | None]:
    name = f"p{index}"
    mem_request = draw(st.sampled_from([None, "0", "50Mi", "100Mi", "1Gi"]))
    eph_limit = draw(st.sampled_from([None, None, "10Mi", "1Gi"]))
    requests = {"memory": mem_request} if mem_request else {}
    limits = {"ephemeral-storage": eph_limit} if eph_limit else {}
    size_limit = draw(st.sampled_from([None, None, "5Mi"]))
    volumes = [{"name": "v", "emptyDir": {"sizeLimit": size_limit} if size_limit else {}}]
    pod = make_pod(
        name,
        priority=draw(priorities),
        requests=requests,
        limits=limits,
        annotations=draw(annotation_sets),
        volumes=volumes,
        tgps=draw(st.sampled_from([None, 0, 10, 60])),
    )
    if draw(st.integers(0, 5)) == 0:
        return pod, None
    usage = PodUsage(
        name,
        memory=draw(st.integers(0, 2048)) * MI,
        processes=draw(st.integers(0, 500)),
        rootfs=draw(st.integers(0, 20)) * MI,
        logs=draw(st.integers(0, 20)) * MI,
        volumes={"v": draw(st.integers(0, 10)) * MI},
        ephemeral=draw(st.integers(0, 50)) * MI,
    )
    return pod, usage


@st.composite
def pod_sets(draw: st.DrawFn) -> tuple[list[Pod], list[PodUsage]]:
    n = draw(st.integers(0, 8))
    pairs = [draw(pod_and_usage(i)) for i in range(n)]
    usage = [u for _, u in pairs if u is not None]
    if draw(st.booleans()):  # a static pod runs on the node, under its hash
        usage.append(
            PodUsage("static-node-1", memory=draw(st.integers(0, 2048)) * MI, uid=STATIC_UID)
        )
    return [p for p, _ in pairs], usage


def node_summary(available: int, procs: int, nodefs: int, usage: list[PodUsage]) -> Summary:
    return Summary.from_dict(
        {
            "node": {
                "memory": {"availableBytes": available, "workingSetBytes": 8192 * MI - available},
                "fs": {"availableBytes": nodefs, "capacityBytes": 10240 * MI},
                "rlimit": {"maxpid": 10000, "curproc": procs},
            },
            "pods": [pod_stats(u) for u in usage],
        }
    )


configs = st.sampled_from(
    [
        ({"memory.available": "500Mi"}, {}, {}, {}),
        ({"memory.available": "10%"}, {}, {}, {"memory.available": "200Mi"}),
        ({}, {"memory.available": "1Gi"}, {"memory.available": "20s"}, {}),
        ({"nodefs.available": "1Gi", "pid.available": "1000"}, {}, {}, {}),
        (
            {"memory.available": "300Mi"},
            {"memory.available": "1Gi", "pid.available": "2000"},
            {"memory.available": "10s", "pid.available": "1m"},
            {"memory.available": "1%"},
        ),
    ]
)

steps = st.lists(
    st.tuples(
        st.integers(0, 2048),  # memory available, Mi
        st.integers(0, 10000),  # processes
        st.integers(0, 3072),  # nodefs available, Mi
        st.sampled_from([0.0, 1.0, 5.0, 10.0, 30.0]),  # clock step
    ),
    min_size=1,
    max_size=8,
)


@given(pod_sets(), configs, steps, st.booleans(), st.sampled_from([(), ("*",), ("default",)]))
def test_sync_invariants(
    pods_usage: tuple[list[Pod], list[PodUsage]],
    cfg: tuple[dict[str, str], ...],
    sequence: list[tuple[int, int, int, float]],
    local_storage: bool,
    allowed: tuple[str, ...],
) -> None:
    pods, usage = pods_usage
    hard, soft, grace, reclaim = cfg
    thresholds = parse_threshold_config(["pods"], hard, soft, grace, reclaim)
    clock = FakeClock()
    m = EvictionManager(
        ManagerConfig(
            thresholds=thresholds,
            max_pod_grace_period_seconds=30,
            local_storage_capacity_isolation=local_storage,
            eviction_preference_namespaces=frozenset(allowed),
        ),
        clock,
    )
    for available, procs, nodefs, dt in sequence:
        clock.step(dt)
        s = node_summary(available * MI, procs, nodefs * MI, usage)
        # as the loop hands them over: the kubelet's view of the node's API pods
        seen = kubelet_view(pods, node_pod_uids=[u.pod_ref.uid for u in s.pods]).pods
        decisions = m.synchronize(s, seen)
        for d in decisions:
            # never a critical pod, never a pod the operator protected
            assert not is_critical_pod(d.pod)
            assert not is_eviction_forbidden(d.pod, allowed=allowed)
            assert d.pod in seen
        threshold_decisions = [d for d in decisions if d.signal not in LOCAL_STORAGE_SIGNALS]
        if threshold_decisions:
            # at most one pod per sync outside the local-storage pass, never mixed with it
            assert len(decisions) == 1
            (d,) = threshold_decisions
            # never without an active threshold that is really crossed
            assert m.last_sync is not None and d.threshold in m.last_sync.active
            assert d.threshold in m.thresholds_met
            obs = m.last_sync.observations[d.signal]
            trigger = get_threshold_quantity(d.threshold.value, obs.capacity)
            if d.threshold.min_reclaim is not None:
                trigger += get_threshold_quantity(d.threshold.min_reclaim, obs.capacity)
            assert trigger > obs.available
            assert d.condition is not None and d.condition.type == "DisruptionTarget"
            if d.threshold.grace_period == 0:
                assert d.grace_period_override == 1
            else:
                assert d.grace_period_override <= 30
        else:
            assert all(d.grace_period_override == 1 for d in decisions)
            assert all(d.condition is None for d in decisions)
        if not local_storage:
            assert not [d for d in decisions if d.signal in LOCAL_STORAGE_SIGNALS]


@given(pod_sets(), st.sampled_from(["memory.available", "nodefs.available", "pid.available"]))
def test_ranking_is_a_stable_permutation(
    pods_usage: tuple[list[Pod], list[PodUsage]], signal: str
) -> None:
    pods, usage = pods_usage
    stats = cached_stats_func(node_summary(0, 0, 0, usage).pods)
    rank = build_signal_to_rank_func(False, False)[signal]
    ranked = rank(list(pods), stats)
    assert sorted(p.uid for p in ranked) == sorted(p.uid for p in pods)
    assert len(ranked) == len(pods)
    position = {id(p): i for i, p in enumerate(pods)}
    if signal == "memory.available":
        sorter = ordered_by(exceed_memory_requests(stats), priority, memory(stats))
        for a, b in itertools.pairwise(ranked):
            c = sorter.compare(a, b)
            assert c <= 0
            if c == 0:
                assert position[id(a)] < position[id(b)]
    # ranking twice changes nothing (the order is total and stable)
    assert rank(list(ranked), stats) == ranked


@given(pod_sets())
def test_preference_reorder_is_a_permutation_keeping_priority_slots(
    pods_usage: tuple[list[Pod], list[PodUsage]],
) -> None:
    pods, _ = pods_usage
    reordered = apply_eviction_preference(list(pods), allowed={"*"})
    assert sorted(map(id, reordered)) == sorted(map(id, pods))
    assert [p.priority for p in reordered] == [p.priority for p in pods]
    for prio in {p.priority for p in pods}:
        group = [p for p in reordered if p.priority == prio]
        avoid = [p.annotations.get(EVICTION_PREFERENCE_ANNOTATION) == "avoid" for p in group]
        assert avoid == sorted(avoid)  # every avoid pod after every other pod of its priority
    plain = [p for p in pods if EVICTION_PREFERENCE_ANNOTATION not in p.annotations]
    assert apply_eviction_preference(list(plain), allowed={"*"}) == plain
    # where the operator allows nothing, nothing moves: the kubelet's order
    assert apply_eviction_preference(list(pods), allowed=()) == pods
