"""PodTopologySpread's queueing hints, as upstream's ``Test_isSchedulableAfterPodChange`` and
``Test_isSchedulableAfterNodeChange`` tables have them (podtopologyspread/plugin_test.go).
A row: (name, pod, old object, new object, expected hint)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kube.objects import Pod
from scheduler.framework import QueueingHint
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from tests.support.objects import node as mknode
from tests.support.objects import pod as mkpod
from tests.support.spread import tolerate, unschedulable

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip
Row = tuple[str, Pod, Any, Any, QueueingHint]


def spread(key: str, *, honor_taints: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
    }
    if honor_taints:
        c["nodeTaintsPolicy"] = "Honor"
    return c


TARGET = dataclasses.replace(mkpod("p", spread=[spread("zone"), spread("node")]), uid="uid-p")
HONOR = dataclasses.replace(mkpod("p", spread=[spread("zone", honor_taints=True)]), uid="uid-p")
FOO = mkpod("m", node_name="n", labels={"foo": ""})
BAR = mkpod("m", node_name="n", labels={"bar": ""})

POD_ROWS: list[Row] = [
    ("add pod with labels match topologySpreadConstraints selector", TARGET, None, FOO, Q),
    ("add un-scheduled pod", TARGET, None, mkpod("m", labels={"foo": ""}), SKIP),
    ("update un-scheduled pod", TARGET, mkpod("m"), mkpod("m", labels={"foo": ""}), SKIP),
    ("delete un-scheduled pod", TARGET, mkpod("m", labels={"foo": ""}), None, SKIP),
    (
        "add pod with different namespace",
        TARGET,
        None,
        mkpod("m", node_name="n", namespace="x", labels={"foo": ""}),
        SKIP,
    ),
    ("add pod with labels don't match topologySpreadConstraints selector", TARGET, None, BAR, SKIP),
    ("delete pod with labels that match topologySpreadConstraints selector", TARGET, FOO, None, Q),
    ("delete pod with labels that don't match", TARGET, BAR, None, SKIP),
    (
        "update pod's non-related label",
        TARGET,
        FOO,
        mkpod("m", node_name="n", labels={"foo": "", "bar": ""}),
        SKIP,
    ),
    ("add pod's label that matches topologySpreadConstraints selector", TARGET, BAR, FOO, Q),
    ("delete pod label that matches topologySpreadConstraints selector", TARGET, FOO, BAR, Q),
    (
        "change pod's label value that the selector only asks to exist",
        TARGET,
        FOO,
        mkpod("m", node_name="n", labels={"foo": "a"}),
        SKIP,
    ),
    (
        "the unschedulable pod's own toleration update with NodeTaintsPolicy Honor",
        HONOR,
        HONOR,
        dataclasses.replace(
            mkpod("p", spread=[spread("zone", honor_taints=True)], tolerations=tolerate("t")),
            uid="uid-p",
        ),
        Q,
    ),
    ("a pod without constraints", mkpod("p"), None, FOO, SKIP),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), POD_ROWS)
def test_after_pod_change(name: str, p: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert PodTopologySpread().is_schedulable_after_pod_change(p, old, new) is want, name


BOTH = {"zone": "zone1", "node": "node1"}

NODE_ROWS: list[Row] = [
    (
        "add node with topologyKey in pod's topologySpreadConstraints",
        TARGET,
        None,
        mknode("n", BOTH),
        Q,
    ),
    ("add node without topologyKey", TARGET, None, mknode("n", {"zone": "zone1"}), SKIP),
    ("delete node with topologyKey", TARGET, mknode("n", BOTH), None, Q),
    ("delete node without topologyKey", TARGET, mknode("n", {"foo": "x"}), None, SKIP),
    (
        "update node topologyKey value",
        TARGET,
        mknode("n", BOTH),
        mknode("n", {**BOTH, "zone": "zone2"}),
        Q,
    ),
    (
        "update node losing a topologyKey",
        TARGET,
        mknode("n", BOTH),
        mknode("n", {"zone": "zone1"}),
        Q,
    ),
    (
        "update node gaining a topologyKey",
        TARGET,
        mknode("n", {"zone": "zone1"}),
        mknode("n", BOTH),
        Q,
    ),
    (
        "update node's unrelated label",
        TARGET,
        mknode("n", BOTH),
        mknode("n", {**BOTH, "x": "y"}),
        SKIP,
    ),
    (
        "update node's taints",
        TARGET,
        mknode("n", BOTH),
        mknode("n", BOTH, taints=unschedulable(True)),
        Q,
    ),
    (
        "update unrelated node's taints",
        TARGET,
        mknode("n", {"x": "y"}),
        mknode("n", {"x": "y"}, taints=unschedulable(True)),
        SKIP,
    ),
]


@pytest.mark.parametrize(("name", "p", "old", "new", "want"), NODE_ROWS)
def test_after_node_change(name: str, p: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert PodTopologySpread().is_schedulable_after_node_change(p, old, new) is want, name
