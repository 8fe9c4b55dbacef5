"""Queueing hints of NodeResourcesFit and NodePorts, as upstream's tables have them
(``TestEventsToRegister``/``Test_isSchedulableAfter*`` in noderesources/fit_test.go and
nodeports/node_ports_test.go). A row: (name, pod, old object, new object, expected hint)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kube.objects import Pod
from scheduler.framework import QueueingHint
from scheduler.plugins import nodeports
from scheduler.plugins.noderesources import fit
from tests.support.objects import node, pod

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip
Row = tuple[str, Pod, Any, Any, QueueingHint]


def uid(p: Pod, value: str) -> Pod:
    return dataclasses.replace(p, uid=value)


TARGET = uid(pod("target", cpu="1"), "uid-target")
BOUND = uid(pod("other", cpu="2", memory="2Gi", node_name="n"), "uid-other")

FIT_POD_ROWS: list[Row] = [
    ("backoff-wrong-old-object", TARGET, "not a pod", BOUND, Q),
    ("skip-queue-on-unscheduled-pod-deleted", TARGET, uid(pod("o", cpu="2"), "u"), None, SKIP),
    ("queue-on-deleted", TARGET, BOUND, None, Q),
    (
        "skip-queue-on-other-unscheduled-pod",
        TARGET,
        uid(pod("o", cpu="2"), "u"),
        uid(pod("o", cpu="1"), "u"),
        SKIP,
    ),
    (
        "skip-queue-on-other-pod-non-resource-changes",
        TARGET,
        BOUND,
        dataclasses.replace(BOUND, labels={"a": "b"}),
        SKIP,
    ),
    (
        "skip-queue-on-other-pod-unrelated-resource-scaled-down",
        TARGET,
        BOUND,
        uid(pod("other", cpu="2", memory="1Gi", node_name="n"), "uid-other"),
        SKIP,
    ),
    (
        "queue-on-other-pod-some-resource-scale-down",
        TARGET,
        BOUND,
        uid(pod("other", cpu="1", memory="2Gi", node_name="n"), "uid-other"),
        Q,
    ),
    (
        "queue-on-target-pod-some-resource-scale-down",
        TARGET,
        TARGET,
        uid(pod("target", cpu="500m"), "uid-target"),
        Q,
    ),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), FIT_POD_ROWS)
def test_fit_after_pod_event(name: str, p: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert fit.is_schedulable_after_pod_event(p, old, new) is want, name


FIT_NODE_ROWS: list[Row] = [
    ("backoff-wrong-new-object", TARGET, None, "not a node", Q),
    ("queue-on-node-add-with-enough-resources", TARGET, None, node("n", cpu="2"), Q),
    ("skip-queue-on-node-add-without-enough-resources", TARGET, None, node("n", cpu="500m"), SKIP),
    ("skip-queue-on-node-unrelated-changes", TARGET, node("n"), node("n", labels={"a": "b"}), SKIP),
    ("queue-on-pod-requested-resources-increase", TARGET, node("n", cpu="2"), node("n"), Q),
    ("queue-on-more-pod-slots", TARGET, node("n", pods="1"), node("n", pods="2"), Q),
    (
        "skip-queue-on-unrequested-resource-increase",
        TARGET,
        node("n"),
        node("n", memory="64Gi"),
        SKIP,
    ),
    (
        "skip-queue-on-node-changes-from-suitable-to-unsuitable",
        TARGET,
        node("n", cpu="2"),
        node("n", cpu="500m"),
        SKIP,
    ),
    (
        "queue-on-node-changes-from-unsuitable-to-suitable",
        TARGET,
        node("n", cpu="500m"),
        node("n", cpu="2"),
        Q,
    ),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), FIT_NODE_ROWS)
def test_fit_after_node_change(name: str, p: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert fit.is_schedulable_after_node_change(p, old, new) is want, name


WANTS_8080 = pod("p", host_ports=[8080])

PORT_ROWS: list[Row] = [
    ("backoff-wrong-old-object", WANTS_8080, "not a pod", None, Q),
    ("skip-queue-on-unscheduled", WANTS_8080, pod("o", host_ports=[8080]), None, SKIP),
    ("skip-queue-on-non-hostport", WANTS_8080, pod("o", node_name="n"), None, SKIP),
    (
        "skip-queue-on-unrelated-hostport",
        WANTS_8080,
        pod("o", node_name="n", host_ports=[8081]),
        None,
        SKIP,
    ),
    ("queue-on-released-hostport", WANTS_8080, pod("o", node_name="n", host_ports=[8080]), None, Q),
    (
        "queue-on-nominated-pod-released-hostport",
        WANTS_8080,
        pod("o", nominated="n", host_ports=[8080]),
        None,
        Q,
    ),
    (
        "skip-queue-on-same-port-other-protocol",
        WANTS_8080,
        pod("o", node_name="n", host_ports=[(8080, "UDP", "")]),
        None,
        SKIP,
    ),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), PORT_ROWS)
def test_node_ports_after_pod_deleted(
    name: str, p: Pod, old: Any, new: Any, want: QueueingHint
) -> None:
    assert nodeports.is_schedulable_after_pod_deleted(p, old, new) is want, name
