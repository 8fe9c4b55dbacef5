"""The queueing-hint table (``scheduler.hints``): kube 1.32's ``EventsToRegister`` with
SchedulerQueueingHints on, for the in-tree plugins."""

from __future__ import annotations

from scheduler.hints import DEFAULT_PLUGIN_HINTS, plugin_hints
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.queue import events as ev
from tests.support.objects import node, pod


def test_every_in_tree_plugin_has_hints() -> None:
    assert set(DEFAULT_PLUGIN_HINTS) == set(ev.DEFAULT_PLUGIN_EVENTS)


def test_hinted_node_events_drop_the_precheck_workaround() -> None:
    """With hints on no plugin but those that judge taints or labels registers them; off,
    every plugin adds ``UpdateNodeTaint | UpdateNodeLabel`` to ``Node/Add``."""
    taint = ev.ClusterEvent(ev.Node, ev.ActionType.UpdateNodeTaint)
    label = ev.ClusterEvent(ev.Node, ev.ActionType.UpdateNodeLabel)

    def registered(plugin: str, event: ev.ClusterEvent) -> bool:
        return ev.match_any_cluster_event(event, [h.event for h in DEFAULT_PLUGIN_HINTS[plugin]])

    assert {p for p in DEFAULT_PLUGIN_HINTS if registered(p, taint)} == {
        "NodeUnschedulable",
        "TaintToleration",
        "PodTopologySpread",
    }
    assert {p for p in DEFAULT_PLUGIN_HINTS if registered(p, label)} == {
        "NodeAffinity",
        "InterPodAffinity",
        "PodTopologySpread",
    }
    assert all(ev.match_any_cluster_event(taint, e) for e in ev.DEFAULT_PLUGIN_EVENTS.values() if e)


def test_a_configured_plugin_answers_with_its_args() -> None:
    zone = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]
        }
    }
    table = plugin_hints(node_affinity=NodeAffinity(added_affinity=zone))
    [entry] = table["NodeAffinity"]
    assert entry.hint is not None
    p = pod("p")
    assert entry.hint(p, None, node("n")).name == "QueueSkip"
    assert entry.hint(p, None, node("n", labels={"zone": "a"})).name == "Queue"
