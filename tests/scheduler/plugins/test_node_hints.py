"""Queueing hints of the node-only plugins, as upstream's tables have them (the ``Test*
isSchedulableAfter*`` tables of nodeaffinity, nodename, nodeunschedulable, tainttoleration).

A row: (name, pod, old object, new object, expected hint). A wrong object type answers Queue,
as upstream's type error does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from kube.objects import Pod
from scheduler.framework import QueueingHint
from scheduler.plugins import nodename, nodeunschedulable, tainttoleration
from scheduler.plugins.nodeaffinity import NodeAffinity
from tests.support.objects import node, pod

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip
NO_SCHEDULE = {"key": "k", "value": "v", "effect": "NoSchedule"}
UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def with_uid(p: Pod, uid: str) -> Pod:
    return dataclasses.replace(p, uid=uid)


Row = tuple[str, Pod, Any, Any, QueueingHint]

FOO_BAR = pod("p", node_selector={"foo": "bar"})
ZONE_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]
    }
}

NODE_AFFINITY_ROWS: list[Row] = [
    ("backoff-wrong-new-object", FOO_BAR, None, "not a node", Q),
    ("skip-queue-on-add", FOO_BAR, None, node("n"), SKIP),
    ("queue-on-add", FOO_BAR, None, node("n", labels={"foo": "bar"}), Q),
    ("skip-unrelated-changes", FOO_BAR, node("n"), node("n", cpu="8"), SKIP),
    (
        "skip-unrelated-changes-on-labels",
        FOO_BAR,
        node("n", labels={"foo": "bar"}),
        node("n", labels={"foo": "bar", "k": "v"}),
        SKIP,
    ),
    ("queue-on-labels-change", FOO_BAR, node("n"), node("n", labels={"foo": "bar"}), Q),
    ("skip-on-labels-removed", FOO_BAR, node("n", labels={"foo": "bar"}), node("n"), SKIP),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), NODE_AFFINITY_ROWS)
def test_node_affinity_after_node_change(
    name: str, p: Pod, old: Any, new: Any, want: QueueingHint
) -> None:
    assert NodeAffinity().is_schedulable_after_node_change(p, old, new) is want, name


@pytest.mark.parametrize(
    ("labels", "want"),
    [({"foo": "bar"}, SKIP), ({"foo": "bar", "zone": "a"}, Q)],
    ids=["skip-queue-on-add-scheduler-enforced", "queue-on-add-scheduler-enforced"],
)
def test_node_affinity_reads_the_profiles_added_affinity(
    labels: dict[str, str], want: QueueingHint
) -> None:
    plugin = NodeAffinity(added_affinity=ZONE_AFFINITY)
    assert plugin.is_schedulable_after_node_change(FOO_BAR, None, node("n", labels=labels)) is want


PINNED = pod("p", node_name="foo")

NODE_NAME_ROWS: list[Row] = [
    ("backoff-wrong-new-object", PINNED, None, "not a node", Q),
    ("queue-on-the-named-node", PINNED, None, node("foo"), Q),
    ("skip-another-node", PINNED, None, node("bar"), SKIP),
    ("queue-when-no-node-named", pod("p"), None, node("bar"), Q),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), NODE_NAME_ROWS)
def test_node_name_after_node_add(
    name: str, p: Pod, old: Any, new: Any, want: QueueingHint
) -> None:
    assert nodename.is_schedulable_after_node_add(p, old, new) is want, name


P = with_uid(pod("p"), "uid-p")

NODE_UNSCHEDULABLE_NODE_ROWS: list[Row] = [
    ("backoff-wrong-new-object", P, None, "not a node", Q),
    ("queue-on-schedulable-node-added", P, None, node("n"), Q),
    ("skip-on-unschedulable-node-added", P, None, node("n", unschedulable=True), SKIP),
    ("queue-on-node-uncordoned", P, node("n", unschedulable=True), node("n"), Q),
    ("skip-schedulable-to-schedulable", P, node("n"), node("n", labels={"a": "b"}), SKIP),
    ("skip-on-node-cordoned", P, node("n"), node("n", unschedulable=True), SKIP),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), NODE_UNSCHEDULABLE_NODE_ROWS)
def test_node_unschedulable_after_node_change(
    name: str, p: Pod, old: Any, new: Any, want: QueueingHint
) -> None:
    assert nodeunschedulable.is_schedulable_after_node_change(p, old, new) is want, name


def _toleration_rows(tolerating: Pod, unrelated: Pod) -> list[Row]:
    other = with_uid(tolerating, "uid-other")
    return [
        ("backoff-wrong-new-object", P, P, "not a pod", Q),
        ("queue-own-new-toleration", P, P, tolerating, Q),
        ("skip-another-pods-toleration", P, other, other, SKIP),
        ("own-unrelated-toleration", P, P, unrelated, SKIP),
    ]


TOLERATES_UNSCHEDULABLE = with_uid(pod("p", tolerations=[UNSCHEDULABLE]), "uid-p")
TOLERATES_OTHER = with_uid(pod("p", tolerations=[{"key": "x", "operator": "Exists"}]), "uid-p")


@pytest.mark.parametrize(
    ("name", "p", "old", "new", "want"),
    _toleration_rows(TOLERATES_UNSCHEDULABLE, TOLERATES_OTHER),
)
def test_node_unschedulable_after_pod_toleration_change(
    name: str, p: Pod, old: Any, new: Any, want: QueueingHint
) -> None:
    assert nodeunschedulable.is_schedulable_after_pod_toleration_change(p, old, new) is want, name


TOLERANT = pod("p", tolerations=[{"key": "k", "operator": "Equal", "value": "v"}])
TAINTED = node("n", taints=[NO_SCHEDULE])

TAINT_NODE_ROWS: list[Row] = [
    ("backoff-wrong-new-object", P, None, "not a node", Q),
    ("backoff-wrong-old-object", P, "not a node", node("n"), Q),
    ("skip-queue-on-untolerated-taint-node-added", P, None, TAINTED, SKIP),
    ("queue-on-tolerated-taint-node-added", TOLERANT, None, TAINTED, Q),
    ("queue-on-taint-removed", P, TAINTED, node("n"), Q),
    ("skip-unrelated-change", TOLERANT, TAINTED, node("n", taints=[NO_SCHEDULE], cpu="8"), SKIP),
    (
        "skip-unrelated-change-that-keeps-untolerated-taint",
        P,
        TAINTED,
        node("n", taints=[NO_SCHEDULE], labels={"a": "b"}),
        SKIP,
    ),
    (
        "queue-on-prefer-no-schedule-only",
        P,
        TAINTED,
        node("n", taints=[{**NO_SCHEDULE, "effect": "PreferNoSchedule"}]),
        Q,
    ),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), TAINT_NODE_ROWS)
def test_taint_toleration_after_node_change(
    name: str, p: Pod, old: Any, new: Any, want: QueueingHint
) -> None:
    assert tainttoleration.is_schedulable_after_node_change(p, old, new) is want, name


def test_taint_toleration_after_pod_toleration_change() -> None:
    fn: Callable[[Pod, object, object], QueueingHint] = (
        tainttoleration.is_schedulable_after_pod_toleration_change
    )
    assert fn(P, P, TOLERATES_OTHER) is Q  # its own change: whatever it added
    assert fn(P, P, with_uid(TOLERATES_OTHER, "uid-other")) is SKIP
    assert fn(P, P, "not a pod") is Q
