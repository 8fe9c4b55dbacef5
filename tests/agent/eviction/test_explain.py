"""``explain_ranking`` reports the comparator inputs behind each position."""

from __future__ import annotations

import pytest

from agent.eviction import (
    make_signal_observations,
    rank_disk_pressure_func,
    rank_memory_pressure,
)
from agent.eviction.explain import explain_ranking
from agent.eviction.helpers import build_signal_to_rank_func, fs_stats_to_measure
from agent.eviction.preference import EVICTION_PREFERENCE_ANNOTATION
from tests.support.eviction import MI, PodUsage, make_pod, manifest_volumes, summary


def test_memory_reasons() -> None:
    pods = [
        make_pod("within", requests={"memory": "1Gi"}),
        make_pod(
            "hog",
            requests={"memory": "100Mi"},
            annotations={EVICTION_PREFERENCE_ANNOTATION: "avoid"},
        ),
        make_pod("nostats"),
        make_pod("system", priority=2000000000),
    ]
    _, stats = make_signal_observations(
        summary(
            pods=[
                PodUsage("within", memory=10 * MI),
                PodUsage("hog", memory=300 * MI),
                PodUsage("system", memory=1),
            ]
        )
    )
    ranked = rank_memory_pressure(list(pods), stats)
    entries = explain_ranking("memory.available", ranked, stats, preference_namespaces={"*"})
    assert [e.pod.name for e in entries] == ["nostats", "hog", "system", "within"]
    assert [e.position for e in entries] == [0, 1, 2, 3]
    assert entries[0].reason == "no stats (ranked first by the kubelet)"
    assert entries[1].reason == (
        "exceeds request (300Mi used, 100Mi requested), priority 0, 200Mi above request; "
        "eviction-preference: avoid"
    )
    assert entries[2].reason.endswith("never evicted: critical pod")
    assert not entries[2].evictable
    assert entries[3].exceeds_request is False
    assert entries[3].reason.startswith("within request (10Mi used, 1Gi requested)")


def test_pid_reasons() -> None:
    pods = [make_pod("a", priority=5)]
    _, stats = make_signal_observations(summary(pods=[PodUsage("a", processes=42)]))
    (entry,) = explain_ranking("pid.available", pods, stats)
    assert entry.reason == "priority 5, 42 processes"
    assert entry.exceeds_request is None


def test_disk_usage_follows_the_layout() -> None:
    pod = make_pod("d", volumes=[{"name": "s", "emptyDir": {}}])
    _, stats = make_signal_observations(
        summary(pods=[PodUsage("d", rootfs=5 * MI, logs=3 * MI, volumes={"s": 2 * MI})])
    )
    single = explain_ranking("nodefs.available", [pod], stats, volumes=manifest_volumes)
    assert single[0].usage == 10 * MI
    dedicated = explain_ranking(
        "nodefs.available", [pod], stats, with_image_fs=True, volumes=manifest_volumes
    )
    assert dedicated[0].usage == 5 * MI  # logs + volumes
    image = explain_ranking("imagefs.available", [pod], stats, with_image_fs=True)
    assert image[0].usage == 5 * MI  # writable layer


@pytest.mark.parametrize(("image_fs", "split"), [(False, False), (True, False), (True, True)])
def test_measured_stats_agree_with_the_rankers(image_fs: bool, split: bool) -> None:
    # each disk ranker must order pods exactly as a ranker built from fs_stats_to_measure does
    pods = [make_pod(f"p{i}", volumes=[{"name": "s", "emptyDir": {}}]) for i in range(4)]
    usage = [
        PodUsage("p0", rootfs=9 * MI, logs=0, volumes={"s": 0}),
        PodUsage("p1", rootfs=0, logs=9 * MI, volumes={"s": 0}),
        PodUsage("p2", rootfs=0, logs=0, volumes={"s": 9 * MI}),
        PodUsage("p3", rootfs=1, logs=1, volumes={"s": 1}),
    ]
    _, stats = make_signal_observations(summary(pods=usage))
    ranks = build_signal_to_rank_func(image_fs, split, volumes=manifest_volumes)
    for signal in ("nodefs.available", "imagefs.available", "containerfs.available"):
        kinds = fs_stats_to_measure(signal, image_fs, split)
        expected = rank_disk_pressure_func(kinds, "ephemeral-storage", volumes=manifest_volumes)
        assert ranks[signal](list(pods), stats) == expected(list(pods), stats)
    assert fs_stats_to_measure("memory.available", image_fs, split) == ()
