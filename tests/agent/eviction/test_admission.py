"""Admission under node pressure (the eviction manager's ``Admit``,
pkg/kubelet/eviction/eviction_manager.go)."""

from __future__ import annotations

import pytest

from agent.eviction import admit_pod, kubelet_view
from kube.qos import get_pod_qos
from tests.support.eviction import make_pod

BEST_EFFORT = make_pod("be")
BURSTABLE = make_pod("bu", requests={"memory": "1Mi"})
GUARANTEED = make_pod(
    "gu", requests={"memory": "1Mi", "cpu": "1"}, limits={"memory": "1Mi", "cpu": "1"}
)
TOLERATING = make_pod(
    "tol",
    tolerations=[
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}
    ],
)
CRITICAL = make_pod("crit", priority=2000001000)
STATIC_UID = "0123456789abcdef0123456789abcdef"  # a static pod's UID: the hash of its manifest


def test_qos_classes() -> None:
    assert get_pod_qos(BEST_EFFORT) == "BestEffort"
    assert get_pod_qos(BURSTABLE) == "Burstable"
    assert get_pod_qos(GUARANTEED) == "Guaranteed"
    assert get_pod_qos(make_pod("l", limits={"memory": "1Mi"})) == "Burstable"
    assert get_pod_qos(make_pod("eph", requests={"ephemeral-storage": "1Gi"})) == "BestEffort"


def test_no_pressure_admits_everything() -> None:
    assert admit_pod(BEST_EFFORT, []).admit


@pytest.mark.parametrize("pod", [BURSTABLE, GUARANTEED, TOLERATING, CRITICAL])
def test_memory_pressure_alone_admits_all_but_intolerant_best_effort(pod: object) -> None:
    assert admit_pod(pod, ["MemoryPressure"]).admit  # type: ignore[arg-type]


def test_memory_pressure_rejects_best_effort_with_the_kubelets_message() -> None:
    result = admit_pod(BEST_EFFORT, ["MemoryPressure"])
    assert not result.admit
    assert result.reason == "Evicted"
    assert result.message == "The node had condition: [MemoryPressure]. "


def test_wrong_effect_toleration_does_not_help() -> None:
    pod = make_pod(
        "tol-exec",
        tolerations=[
            {
                "key": "node.kubernetes.io/memory-pressure",
                "operator": "Exists",
                "effect": "NoExecute",
            }
        ],
    )
    assert not admit_pod(pod, ["MemoryPressure"]).admit


@pytest.mark.parametrize(
    "conditions",
    [["DiskPressure"], ["PIDPressure"], ["MemoryPressure", "DiskPressure"]],
)
def test_disk_or_pid_pressure_rejects_all_but_critical(conditions: list[str]) -> None:
    for pod in (BEST_EFFORT, BURSTABLE, GUARANTEED, TOLERATING):
        result = admit_pod(pod, conditions)
        assert not result.admit
        assert result.message == f"The node had condition: [{' '.join(conditions)}]. "
    assert admit_pod(CRITICAL, conditions).admit
    # the mirror pod of a static pod running on the node, as the kubelet sees it
    [mirror] = kubelet_view(
        [make_pod("static", annotations={"kubernetes.io/config.mirror": STATIC_UID})],
        node_pod_uids=[STATIC_UID],
    ).pods
    assert admit_pod(mirror, conditions).admit
    # an API pod that calls itself static is an ordinary pod to the kubelet
    [forged] = kubelet_view(
        [make_pod("forged", annotations={"kubernetes.io/config.source": "file"})],
        node_pod_uids=[STATIC_UID],
    ).pods
    assert not admit_pod(forged, conditions).admit
