"""The in-tree plugins' ``EventsToRegister`` with SchedulerQueueingHints on (kube 1.32).

Each plugin's hint functions live beside its Filter (``scheduler/plugins/...``); the queue may
not import plugins, so this module, above both, gathers them into the table the queue is given
(``SchedulingQueue(queueing_hints=...)``). With hints on, kube drops the workaround of also
registering ``UpdateNodeTaint | UpdateNodeLabel`` next to ``Node/Add`` (kubernetes#110175: the
hints, not ``preCheck``, now judge node events), and SchedulingGates registers its pod's own
gate removal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from scheduler.plugins import nodename, nodeports, nodeunschedulable, tainttoleration
from scheduler.plugins.interpodaffinity import hints as interpodaffinity_hints
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.noderesources import fit
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.queue.events import ActionType as A
from scheduler.queue.events import ClusterEvent, ClusterEventWithHint, Node, PodResource
from scheduler.queue.gates import is_schedulable_after_scheduling_gates_eliminated

__all__ = ["DEFAULT_PLUGIN_HINTS", "plugin_hints"]


def plugin_hints(
    *,
    node_affinity: NodeAffinity | None = None,
    pod_topology_spread: PodTopologySpread | None = None,
) -> Mapping[str, tuple[ClusterEventWithHint, ...]]:
    """The table for a profile; the two plugins whose hints read their args may be given
    configured (their defaults otherwise)."""
    na = node_affinity if node_affinity is not None else NodeAffinity()
    pts = pod_topology_spread if pod_topology_spread is not None else PodTopologySpread()
    return {
        "NodeResourcesFit": (
            ClusterEventWithHint(
                ClusterEvent(PodResource, A.Delete | A.UpdatePodScaleDown),
                fit.is_schedulable_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent(Node, A.Add | A.UpdateNodeAllocatable),
                fit.is_schedulable_after_node_change,
            ),
        ),
        "NodeAffinity": (
            ClusterEventWithHint(
                ClusterEvent(Node, A.Add | A.UpdateNodeLabel),
                na.is_schedulable_after_node_change,
            ),
        ),
        "NodeName": (
            ClusterEventWithHint(ClusterEvent(Node, A.Add), nodename.is_schedulable_after_node_add),
        ),
        "NodePorts": (
            ClusterEventWithHint(
                ClusterEvent(PodResource, A.Delete), nodeports.is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(Node, A.Add)),
        ),
        "NodeUnschedulable": (
            ClusterEventWithHint(
                ClusterEvent(Node, A.Add | A.UpdateNodeTaint),
                nodeunschedulable.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(PodResource, A.UpdatePodToleration),
                nodeunschedulable.is_schedulable_after_pod_toleration_change,
            ),
        ),
        "TaintToleration": (
            ClusterEventWithHint(
                ClusterEvent(Node, A.Add | A.UpdateNodeTaint),
                tainttoleration.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(PodResource, A.UpdatePodToleration),
                tainttoleration.is_schedulable_after_pod_toleration_change,
            ),
        ),
        "InterPodAffinity": (
            ClusterEventWithHint(
                ClusterEvent(PodResource, A.Add | A.UpdatePodLabel | A.Delete),
                interpodaffinity_hints.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Node, A.Add | A.UpdateNodeLabel),
                interpodaffinity_hints.is_schedulable_after_node_change,
            ),
        ),
        "PodTopologySpread": (
            ClusterEventWithHint(
                ClusterEvent(PodResource, A.Add | A.UpdatePodLabel | A.Delete),
                pts.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Node, A.Add | A.Delete | A.UpdateNodeLabel | A.UpdateNodeTaint),
                pts.is_schedulable_after_node_change,
            ),
        ),
        "SchedulingGates": (
            ClusterEventWithHint(
                ClusterEvent(PodResource, A.UpdatePodSchedulingGatesEliminated),
                is_schedulable_after_scheduling_gates_eliminated,
            ),
        ),
    }


DEFAULT_PLUGIN_HINTS: Final = plugin_hints()
