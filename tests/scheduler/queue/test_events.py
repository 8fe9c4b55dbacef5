"""ClusterEvent labels and matching (framework.MatchClusterEvents), pod update events."""

from __future__ import annotations

import pytest

from kube.objects import Container, Toleration
from scheduler.queue import events as ev
from scheduler.queue.events import ActionType, ClusterEvent
from tests.support.objects import mkpod

A = ActionType


def test_labels() -> None:
    assert ev.NodeAdd.label == "NodeAdd"
    assert ev.AssignedPodDelete.label == "AssignedPodDelete"
    assert ev.UnscheduledPodUpdate.label == "UnschedulablePodUpdate"
    assert ev.NodeTaintChange.label == "NodeUpdateNodeTaint"
    assert ev.UnschedulableTimeout.label == "UnschedulableTimeout"
    assert ev.ForceActivate.label == "ForceActivate"
    assert ClusterEvent(ev.Node, A.Add | A.Delete).label == "Node"  # no String() for a mix
    assert str(ev.NodeAdd) == "NodeAdd"


def test_action_type_values_match_go() -> None:
    assert int(A.Add) == 1 and int(A.Delete) == 2
    assert int(A.UpdatePodGeneratedResourceClaim) == 1 << 11
    assert int(A.All) == (1 << 12) - 1
    assert int(A.Update) == int(A.All) - 3
    assert ev.action_type_string(A.All) == "All"
    assert ev.action_type_string(A.Update) == "Update"
    assert ev.action_type_string(A.UpdateNodeLabel) == "UpdateNodeLabel"


def test_wildcards() -> None:
    assert ev.UnschedulableTimeout.is_wildcard()
    assert ev.WildCardEvent.is_wildcard()
    assert not ClusterEvent(ev.WildCard, A.Add).is_wildcard()
    assert not ev.NodeAdd.is_wildcard()


@pytest.mark.parametrize(
    ("registered", "incoming", "match"),
    [
        (ClusterEvent(ev.Node, A.Update), ev.NodeLabelChange, True),
        (ev.NodeLabelChange, ClusterEvent(ev.Node, A.Update), False),
        (ClusterEvent(ev.Node, A.All), ev.NodeDelete, True),
        (ev.NodeAdd, ev.NodeDelete, False),
        (ClusterEvent(ev.PodResource, A.Delete), ev.AssignedPodDelete, True),
        (ClusterEvent(ev.PodResource, A.Add), ev.UnscheduledPodAdd, True),
        (ev.AssignedPodAdd, ClusterEvent(ev.PodResource, A.Add), False),
        (ClusterEvent(ev.WildCard, A.Add), ev.NodeAdd, True),
        (ev.WildCardEvent, ev.NodeAdd, True),
        # An incoming wildcard matches only a registered wildcard.
        (ClusterEvent(ev.Node, A.All), ev.UnschedulableTimeout, False),
        (ev.WildCardEvent, ev.UnschedulableTimeout, True),
        (ClusterEvent(ev.Node, A.Add | A.UpdateNodeTaint), ev.NodeTaintChange, True),
        (ClusterEvent(ev.Node, A.Add | A.UpdateNodeTaint), ev.NodeAllocatableChange, False),
    ],
)
def test_match_cluster_events(
    registered: ClusterEvent, incoming: ClusterEvent, match: bool
) -> None:
    assert ev.match_cluster_events(registered, incoming) is match


def test_match_any_and_plugin_fallback() -> None:
    assert ev.match_any_cluster_event(ev.NodeAdd, [ev.PvAdd, ClusterEvent(ev.Node, A.All)])
    assert not ev.match_any_cluster_event(ev.NodeAdd, [])
    assert ev.events_for_plugin("SchedulingGates", ev.DEFAULT_PLUGIN_EVENTS) == ()
    assert ev.events_for_plugin("custom", ev.DEFAULT_PLUGIN_EVENTS) == ev.ALL_RESOURCES_EVENTS
    # Every in-tree plugin that registers Node/Add also registers the preCheck workaround.
    for name, events in ev.DEFAULT_PLUGIN_EVENTS.items():
        for e in events:
            if e.resource == ev.Node and A.Add in e.action_type:
                assert A.UpdateNodeTaint in e.action_type, name
                assert A.UpdateNodeLabel in e.action_type, name


def test_pod_scheduling_properties_change() -> None:
    old = mkpod("p", containers=(Container("c", requests={"cpu": 500, "memory": 100}),))
    assert ev.pod_scheduling_properties_change(old, old) == [ev.UnscheduledPodUpdate]
    bound = old.with_changes(node_name="n1")
    assert ev.pod_scheduling_properties_change(bound, bound) == [ev.AssignedPodUpdate]
    new = old.with_changes(
        labels={"a": "b"},
        containers=(Container("c", requests={"cpu": 500}),),  # memory request removed
        tolerations=(Toleration(key="k"),),
    )
    got = ev.pod_scheduling_properties_change(new, old)
    assert [e.action_type for e in got] == [
        A.UpdatePodLabel,
        A.UpdatePodScaleDown,
        A.UpdatePodToleration,
    ]
    assert all(e.resource == ev.UnschedulablePod for e in got)
    gated = old.with_changes(scheduling_gates=("g",))
    assert ev.pod_scheduling_properties_change(old, gated) == [
        ClusterEvent(ev.UnschedulablePod, A.UpdatePodSchedulingGatesEliminated)
    ]
    scaled_up = old.with_changes(containers=(Container("c", requests={"cpu": 900, "memory": 100}),))
    assert ev.pod_scheduling_properties_change(scaled_up, old) == [ev.UnscheduledPodUpdate]
