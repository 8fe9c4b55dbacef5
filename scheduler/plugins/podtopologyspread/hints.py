"""PodTopologySpread's queueing hints (``isSchedulableAfterPodChange``,
``isSchedulableAfterNodeChange`` in pkg/scheduler/framework/plugins/podtopologyspread/plugin.go).

Only the pod's ``DoNotSchedule`` constraints can have rejected it. A pod event counts when the
pod is bound in the rejected pod's namespace (or is the rejected pod) and its labels enter or
leave some constraint's selector; a node event counts when the node carries every topology
key, or stopped or started to, or changed a key's value or its taints.
"""

from __future__ import annotations

from kube.objects import DO_NOT_SCHEDULE, Node, Pod
from scheduler.framework import QueueingHint
from scheduler.plugins.podtopologyspread.common import (
    HONOR,
    PluginBase,
    SpreadConstraint,
    node_labels_match_spread_constraints,
)

__all__ = ["QueueingHints"]


def _involved(incoming: Pod, pod: Pod) -> bool:
    """``involvedInTopologySpreading``."""
    return incoming.uid == pod.uid or (
        bool(incoming.node_name) and incoming.namespace == pod.namespace
    )


class QueueingHints(PluginBase):
    """The hint functions, as methods: they read the plugin's constraint settings."""

    def hard_constraints(self, pod: Pod) -> list[SpreadConstraint] | None:
        """The pod's ``DoNotSchedule`` constraints; None when they come from ``List`` defaults,
        whose selector needs the cluster's services (the hint then answers Queue)."""
        if pod.topology_spread_constraints:
            return self.filter_topology_spread_constraints(
                pod.topology_spread_constraints, pod.labels, DO_NOT_SCHEDULE
            )
        if self.system_defaulted or not any(
            c.when_unsatisfiable == DO_NOT_SCHEDULE for c in self.default_constraints
        ):
            return []
        return None

    def is_schedulable_after_pod_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        old_pod = old if isinstance(old, Pod) else None
        new_pod = new if isinstance(new, Pod) else None
        if old_pod is None and new_pod is None:
            return QueueingHint.Queue
        if (new_pod is not None and not _involved(new_pod, pod)) or (
            old_pod is not None and not _involved(old_pod, pod)
        ):
            return QueueingHint.QueueSkip
        constraints = self.hard_constraints(pod)
        if constraints is None:
            return QueueingHint.Queue
        if old_pod is not None and new_pod is not None:
            if (
                new_pod.uid == pod.uid
                and new_pod.tolerations != old_pod.tolerations
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.Queue
            if dict(new_pod.labels) == dict(old_pod.labels):
                return QueueingHint.QueueSkip
            if any(c.selects(old_pod.labels) != c.selects(new_pod.labels) for c in constraints):
                return QueueingHint.Queue
            return QueueingHint.QueueSkip
        changed = new_pod if new_pod is not None else old_pod
        assert changed is not None
        if any(c.selects(changed.labels) for c in constraints):  # podLabelsMatchSpreadConstraints
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def is_schedulable_after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        old_node = old if isinstance(old, Node) else None
        new_node = new if isinstance(new, Node) else None
        if old_node is None and new_node is None:
            return QueueingHint.Queue
        constraints = self.hard_constraints(pod)
        if constraints is None:
            return QueueingHint.Queue
        old_matching = old_node is not None and node_labels_match_spread_constraints(
            old_node.labels, constraints
        )
        new_matching = new_node is not None and node_labels_match_spread_constraints(
            new_node.labels, constraints
        )
        if old_node is not None and new_node is not None:
            if old_matching != new_matching:
                return QueueingHint.Queue
            if new_matching and (
                any(
                    old_node.labels.get(c.topology_key) != new_node.labels.get(c.topology_key)
                    for c in constraints
                )
                or old_node.taints != new_node.taints
            ):
                return QueueingHint.Queue
            return QueueingHint.QueueSkip
        if new_node is not None:
            return QueueingHint.Queue if new_matching else QueueingHint.QueueSkip
        return QueueingHint.Queue if old_matching else QueueingHint.QueueSkip
