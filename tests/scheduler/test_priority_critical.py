"""The kubelet's critical-pod test: static and mirror pods, and priority at or above
system-cluster-critical (pkg/kubelet/types/pod_update.go).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube.apierrors import (
    AdmissionError,
)
from kube.objects import Pod, PriorityClass
from scheduler.priority import (
    SYSTEM_CLUSTER_CRITICAL,
    SYSTEM_NODE_CRITICAL,
    PriorityAdmission,
    is_critical_pod,
    is_critical_pod_based_on_priority,
    is_mirror_pod,
    is_node_critical_pod,
    is_static_pod,
    preemptable,
    system_priority_classes,
    validate_priority_class,
)
from tests.support.priority import manifest, pod

# --- critical pods ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "spec_priority", "static", "mirror", "critical"),
    [
        ({}, None, False, False, False),
        ({"kubernetes.io/config.source": "api"}, None, False, False, False),
        ({"kubernetes.io/config.source": "file"}, None, True, False, True),
        ({"kubernetes.io/config.source": "http"}, 0, True, False, True),
        ({"kubernetes.io/config.mirror": ""}, None, False, True, True),
        ({"kubernetes.io/config.mirror": "abc"}, -5, False, True, True),
        ({}, 2_000_000_000, False, False, True),
        ({}, 2_000_001_000, False, False, True),
        ({}, 1_999_999_999, False, False, False),
        ({"kubernetes.io/config.source": "api"}, 2_000_000_000, False, False, True),
    ],
)
def test_is_critical_pod(
    annotations: dict[str, str],
    spec_priority: int | None,
    static: bool,
    mirror: bool,
    critical: bool,
) -> None:
    p = pod(annotations=annotations, priority=spec_priority)
    assert is_static_pod(p) is static
    assert is_mirror_pod(p) is mirror
    assert is_critical_pod(p) is critical


@given(st.integers(-(2**31), 2**31 - 1))
def test_is_critical_pod_based_on_priority(priority: int) -> None:
    assert is_critical_pod_based_on_priority(priority) is (priority >= 2_000_000_000)
    assert is_critical_pod(pod(priority=priority)) is (priority >= 2_000_000_000)


def test_is_node_critical_pod() -> None:
    admission = PriorityAdmission(system_priority_classes())
    node = admission.admit_pod(pod(priority_class_name=SYSTEM_NODE_CRITICAL))
    cluster = admission.admit_pod(pod(priority_class_name=SYSTEM_CLUSTER_CRITICAL))
    assert is_node_critical_pod(node)
    assert not is_node_critical_pod(cluster)
    # The name alone is not enough: the pod must also be critical.
    assert not is_node_critical_pod(pod(priority_class_name=SYSTEM_NODE_CRITICAL))


@pytest.mark.parametrize(
    ("preemptor", "preemptee", "expected"),
    [
        (pod(priority=2_000_000_000), pod(priority=1_999_999_999), True),
        (pod(priority=2_000_000_000), pod(priority=2_000_000_000), False),
        (pod(annotations={"kubernetes.io/config.source": "file"}), pod(), True),
        (pod(priority=10), pod(priority=5), True),
        (pod(priority=5), pod(priority=5), False),
        (pod(priority=10), pod(), False),
        (pod(), pod(priority=-1), False),
    ],
)
def test_preemptable(preemptor: Pod, preemptee: Pod, expected: bool) -> None:
    assert preemptable(preemptor, preemptee) is expected


def test_end_to_end_like_kube_apiserver() -> None:
    """Bootstrap, create classes through validation then admission, then create pods."""
    admission = PriorityAdmission(system_priority_classes())
    docs = [
        {"metadata": {"name": "low"}, "value": -10, "globalDefault": True},
        {"metadata": {"name": "batch"}, "value": 100, "preemptionPolicy": "Never"},
        {"metadata": {"name": "other-default"}, "value": 5, "globalDefault": True},
    ]
    outcomes = []
    for doc in docs:
        new = PriorityClass.from_dict(doc)
        errs = validate_priority_class(new)
        assert errs == []
        try:
            admission.validate_class(new)
        except AdmissionError as err:
            outcomes.append(err.message)
            continue
        admission.set_class(new)
        outcomes.append("created")
    assert outcomes == [
        "created",
        "created",
        'priorityclasses.scheduling.k8s.io "other-default" is forbidden: PriorityClass low is'
        " already marked as default. Only one default can exist",
    ]
    pods = [
        manifest("a"),
        manifest("b", priorityClassName="batch"),
        manifest("c", priorityClassName=SYSTEM_NODE_CRITICAL),
    ]
    for m in pods:
        admission.admit_pod_manifest(m)
    assert [
        (m["spec"]["priorityClassName"], m["spec"]["priority"], m["spec"]["preemptionPolicy"])
        for m in pods
    ] == [
        ("low", -10, "PreemptLowerPriority"),
        ("batch", 100, "Never"),
        (SYSTEM_NODE_CRITICAL, 2_000_001_000, "PreemptLowerPriority"),
    ]
    assert [is_critical_pod(Pod.from_dict(m)) for m in pods] == [False, False, True]
