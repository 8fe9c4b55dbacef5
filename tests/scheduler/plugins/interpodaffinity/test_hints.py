"""InterPodAffinity's queueing hints, as upstream's ``Test_isSchedulableAfterPodChange`` and
``Test_isSchedulableAfterNodeChange`` tables have them (interpodaffinity/plugin_test.go).
A row: (name, pod, old object, new object, expected hint)."""

from __future__ import annotations

from typing import Any

import pytest

from kube.objects import Pod
from scheduler.framework import QueueingHint
from scheduler.plugins.interpodaffinity import hints
from tests.support.objects import node, pod, required, term

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip
Row = tuple[str, Pod, Any, Any, QueueingHint]

SEL = {"matchLabels": {"aaa": "a"}}
AFFINITY = pod("p", affinity=required("podAffinity", term(SEL, "zone")))
ANTI = pod("p", affinity=required("podAntiAffinity", term(SEL, "zone")))
MATCHING = pod("m", node_name="n", labels={"aaa": "a"})
OTHER = pod("m", node_name="n", labels={"bbb": "b"})

POD_ROWS: list[Row] = [
    ("add a pod which matches the pod affinity", AFFINITY, None, MATCHING, Q),
    ("add an un-scheduled pod", AFFINITY, None, pod("m", labels={"aaa": "a"}), SKIP),
    ("add a pod which doesn't match pod affinity", AFFINITY, None, OTHER, SKIP),
    ("update a pod from non-match to match pod affinity", AFFINITY, OTHER, MATCHING, Q),
    ("update a pod from match to non-match the pod affinity", AFFINITY, MATCHING, OTHER, SKIP),
    ("update a pod from match to non-match pod's anti-affinity", ANTI, MATCHING, OTHER, Q),
    ("update a pod from non-match to match pod's anti-affinity", ANTI, OTHER, MATCHING, SKIP),
    ("delete a pod which doesn't match pod's anti-affinity", ANTI, OTHER, None, SKIP),
    ("delete a pod which matches pod's anti-affinity", ANTI, MATCHING, None, Q),
    ("delete an un-scheduled pod", ANTI, pod("m", labels={"aaa": "a"}), None, SKIP),
    ("no terms: nothing matches all of none", pod("p"), None, MATCHING, SKIP),
    (
        "other namespace",
        AFFINITY,
        None,
        pod("m", namespace="x", node_name="n", labels={"aaa": "a"}),
        SKIP,
    ),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), POD_ROWS)
def test_after_pod_change(name: str, p: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.is_schedulable_after_pod_change(p, old, new) is want, name


NODE_ROWS: list[Row] = [
    (
        "add a new node with matched pod affinity topologyKey",
        AFFINITY,
        None,
        node("n", labels={"zone": "a"}),
        Q,
    ),
    (
        "add a new node without matched topologyKey",
        AFFINITY,
        None,
        node("n", labels={"x": "a"}),
        SKIP,
    ),
    (
        "add a new node with matched pod anti-affinity topologyKey",
        ANTI,
        None,
        node("n", labels={"zone": "a"}),
        Q,
    ),
    (
        "update node topologyKey",
        AFFINITY,
        node("n", labels={"x": "a"}),
        node("n", labels={"zone": "a"}),
        Q,
    ),
    ("a pod without terms", pod("p"), None, node("n", labels={"zone": "a"}), SKIP),
    ("backoff-wrong-new-object", AFFINITY, None, "not a node", Q),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), NODE_ROWS)
def test_after_node_change(name: str, p: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.is_schedulable_after_node_change(p, old, new) is want, name
