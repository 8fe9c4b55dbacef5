"""Cluster events: what happened in the cluster, as the scheduling queue sees it.

Plugins register the events that may make a pod they rejected schedulable
(``EventsToRegister``: ``DEFAULT_PLUGIN_EVENTS`` for the in-tree ones); the queue moves a pod
out of the unschedulable pool only on an event one of its rejecting plugins registered
(``match_cluster_events``), or on a wildcard event (``*``/All), which moves every pod that is
not gated.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from kube.objects import Pod
from scheduler.framework import QueueingHint

__all__ = [
    "ALL_RESOURCES_EVENTS",
    "DEFAULT_PLUGIN_EVENTS",
    "ActionType",
    "AssignedPod",
    "AssignedPodAdd",
    "AssignedPodDelete",
    "AssignedPodUpdate",
    "BackoffComplete",
    "CSINode",
    "ClusterEvent",
    "ClusterEventWithHint",
    "ForceActivate",
    "Node",
    "NodeAdd",
    "NodeAllocatableChange",
    "NodeAnnotationChange",
    "NodeConditionChange",
    "NodeDelete",
    "NodeLabelChange",
    "NodeSpecUnschedulableChange",
    "NodeTaintChange",
    "NodeUpdate",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PodResource",
    "PopFromBackoffQ",
    "PvAdd",
    "PvUpdate",
    "PvcAdd",
    "PvcUpdate",
    "QueueingHintFn",
    "ScheduleAttemptFailure",
    "StorageClass",
    "StorageClassAdd",
    "UnschedulablePod",
    "UnschedulableTimeout",
    "UnscheduledPodAdd",
    "UnscheduledPodDelete",
    "UnscheduledPodUpdate",
    "WildCard",
    "WildCardEvent",
    "action_type_string",
    "events_for_plugin",
    "match_any_cluster_event",
    "match_cluster_events",
    "pod_scheduling_properties_change",
]


class ActionType(enum.IntFlag):
    """``fwk.ActionType``: bits that combine; the values are the Go ones."""

    Add = 1 << 0
    Delete = 1 << 1
    UpdateNodeAllocatable = 1 << 2
    UpdateNodeLabel = 1 << 3
    UpdateNodeTaint = 1 << 4  # also node.spec.unschedulable
    UpdateNodeCondition = 1 << 5
    UpdateNodeAnnotation = 1 << 6
    UpdatePodLabel = 1 << 7
    UpdatePodScaleDown = 1 << 8
    UpdatePodToleration = 1 << 9
    UpdatePodSchedulingGatesEliminated = 1 << 10
    UpdatePodGeneratedResourceClaim = 1 << 11
    All = (1 << 12) - 1
    Update = All & ~(Add | Delete)


_ACTION_NAMES: Final[dict[int, str]] = {
    int(member): name
    for name, member in ActionType.__members__.items()
    if name not in ("All", "Update")
}
_ACTION_NAMES[int(ActionType.All)] = "All"
_ACTION_NAMES[int(ActionType.Update)] = "Update"


def action_type_string(action: ActionType | int) -> str:
    """``ActionType.String()``: a single bit's name, ``All``, ``Update``, else ``""``."""
    return _ACTION_NAMES.get(int(action), "")


# EventResource values (``fwk.EventResource``); the two internal pod resources are what the
# queue's own events carry, and a registered ``Pod`` matches both.
PodResource: Final = "Pod"
AssignedPod: Final = "AssignedPod"
UnschedulablePod: Final = "UnschedulablePod"
Node: Final = "Node"
PersistentVolume: Final = "PersistentVolume"
PersistentVolumeClaim: Final = "PersistentVolumeClaim"
CSINode: Final = "storage.k8s.io/CSINode"
CSIDriver: Final = "storage.k8s.io/CSIDriver"
CSIStorageCapacity: Final = "storage.k8s.io/CSIStorageCapacity"
StorageClass: Final = "storage.k8s.io/StorageClass"
ResourceClaim: Final = "resource.k8s.io/ResourceClaim"
DeviceClass: Final = "resource.k8s.io/DeviceClass"
WildCard: Final = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """``fwk.ClusterEvent``: a change of ``resource`` of kind ``action_type`` (a bit-set), with
    an optional custom label."""

    resource: str
    action_type: ActionType
    custom_label: str = ""

    @property
    def label(self) -> str:
        """``Label()``: the custom label, else resource and action concatenated."""
        if self.custom_label:
            return self.custom_label
        return f"{self.resource}{action_type_string(self.action_type)}"

    def is_wildcard(self) -> bool:
        return self.resource == WildCard and self.action_type == ActionType.All

    def __str__(self) -> str:
        return self.label


# ``QueueingHintFn``: (the rejected pod, the object before the event, after it) -> hint; the
# old object is None for an Add, the new one None for a Delete.
QueueingHintFn = Callable[[Pod, object, object], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """``fwk.ClusterEventWithHint``: a registered event and the function that says whether one
    such event may make a pod the plugin rejected schedulable (None: always Queue)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


def _match_resources(registered: str, incoming: str) -> bool:
    if registered in (WildCard, incoming):
        return True
    return registered == PodResource and incoming in (AssignedPod, UnschedulablePod)


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """``MatchClusterEvents``: ``incoming`` is the same as or narrower than ``registered``.

    A registered event matches an incoming one when it is the wildcard, or when the resources
    match (``Pod`` also matches the internal ``AssignedPod`` and ``UnschedulablePod``
    resources), the action bits intersect and the incoming action is not broader than the
    registered one (``UpdateNodeLabel`` matches a registered ``Update``, a generic ``Update``
    does not match a registered ``UpdateNodeLabel``). An incoming wildcard matches only a
    registered wildcard, which is why gated pods ignore the leftover flush."""
    if registered.is_wildcard():
        return True
    a, b = int(registered.action_type), int(incoming.action_type)
    return _match_resources(registered.resource, incoming.resource) and a & b != 0 and b <= a


def match_any_cluster_event(incoming: ClusterEvent, registered: Iterable[ClusterEvent]) -> bool:
    """``MatchAnyClusterEvent``: any registered event matches ``incoming``."""
    return any(match_cluster_events(e, incoming) for e in registered)


A = ActionType

# Special event labels (framework/events.go).
ScheduleAttemptFailure: Final = "ScheduleAttemptFailure"
BackoffComplete: Final = "BackoffComplete"
PopFromBackoffQ: Final = "PopFromBackoffQ"

# The queue's own events.
AssignedPodAdd: Final = ClusterEvent(AssignedPod, A.Add)
AssignedPodUpdate: Final = ClusterEvent(AssignedPod, A.Update)
AssignedPodDelete: Final = ClusterEvent(AssignedPod, A.Delete)
UnscheduledPodAdd: Final = ClusterEvent(UnschedulablePod, A.Add)
UnscheduledPodUpdate: Final = ClusterEvent(UnschedulablePod, A.Update)
UnscheduledPodDelete: Final = ClusterEvent(UnschedulablePod, A.Delete)
UnschedulableTimeout: Final = ClusterEvent(WildCard, A.All, "UnschedulableTimeout")
ForceActivate: Final = ClusterEvent(WildCard, A.All, "ForceActivate")
WildCardEvent: Final = ClusterEvent(WildCard, A.All, "WildCardEvent")

# Node events as the scheduler's event handlers emit them (NodeSchedulingPropertiesChange).
NodeAdd: Final = ClusterEvent(Node, A.Add)
NodeDelete: Final = ClusterEvent(Node, A.Delete)
NodeUpdate: Final = ClusterEvent(Node, A.Update)
NodeAllocatableChange: Final = ClusterEvent(Node, A.UpdateNodeAllocatable)
NodeLabelChange: Final = ClusterEvent(Node, A.UpdateNodeLabel)
NodeTaintChange: Final = ClusterEvent(Node, A.UpdateNodeTaint)
NodeSpecUnschedulableChange: Final = ClusterEvent(Node, A.UpdateNodeTaint)
NodeConditionChange: Final = ClusterEvent(Node, A.UpdateNodeCondition)
NodeAnnotationChange: Final = ClusterEvent(Node, A.UpdateNodeAnnotation)

PvAdd: Final = ClusterEvent(PersistentVolume, A.Add)
PvUpdate: Final = ClusterEvent(PersistentVolume, A.Update)
PvcAdd: Final = ClusterEvent(PersistentVolumeClaim, A.Add)
PvcUpdate: Final = ClusterEvent(PersistentVolumeClaim, A.Update)
StorageClassAdd: Final = ClusterEvent(StorageClass, A.Add)

# UnrollWildCardResource: what a plugin without EventsToRegister is registered for.
ALL_RESOURCES_EVENTS: Final[tuple[ClusterEvent, ...]] = tuple(
    ClusterEvent(r, A.All)
    for r in (
        PodResource,
        Node,
        PersistentVolume,
        PersistentVolumeClaim,
        CSINode,
        CSIDriver,
        CSIStorageCapacity,
        StorageClass,
        ResourceClaim,
        DeviceClass,
    )
)

_NODE_ADD_LIKE: Final = A.Add | A.UpdateNodeTaint | A.UpdateNodeLabel

# EventsToRegister of the in-tree plugins with SchedulerQueueingHints off
# (InPlacePodVerticalScaling on, its default since 1.33). Every plugin has
# ``UpdateNodeTaint | UpdateNodeLabel`` next to ``Node/Add``: the workaround for Node/Add events
# lost to ``preCheck`` (kubernetes/kubernetes#109437, #110175). ``SchedulingGates`` registers
# nothing in that mode: a gated pod leaves the pool only through its own update.
DEFAULT_PLUGIN_EVENTS: Final[Mapping[str, tuple[ClusterEvent, ...]]] = {
    "NodeResourcesFit": (
        ClusterEvent(PodResource, A.Delete | A.UpdatePodScaleDown),
        ClusterEvent(Node, _NODE_ADD_LIKE | A.UpdateNodeAllocatable),
    ),
    "NodeAffinity": (ClusterEvent(Node, _NODE_ADD_LIKE),),
    "NodeName": (ClusterEvent(Node, _NODE_ADD_LIKE),),
    "NodePorts": (
        ClusterEvent(PodResource, A.Delete),
        ClusterEvent(Node, _NODE_ADD_LIKE),
    ),
    "NodeUnschedulable": (ClusterEvent(Node, _NODE_ADD_LIKE),),
    "TaintToleration": (ClusterEvent(Node, _NODE_ADD_LIKE),),
    "InterPodAffinity": (
        ClusterEvent(PodResource, A.Add | A.UpdatePodLabel | A.Delete),
        ClusterEvent(Node, _NODE_ADD_LIKE),
    ),
    "PodTopologySpread": (
        ClusterEvent(PodResource, A.Add | A.UpdatePodLabel | A.Delete),
        ClusterEvent(Node, _NODE_ADD_LIKE | A.Delete),
    ),
    "SchedulingGates": (),
}


def events_for_plugin(
    plugin: str, registry: Mapping[str, Iterable[ClusterEvent]]
) -> tuple[ClusterEvent, ...]:
    """The events ``plugin`` registered; every resource's events when it registered no
    ``EventsToRegister`` at all (``UnrollWildCardResource``)."""
    events = registry.get(plugin)
    if events is None:
        return ALL_RESOURCES_EVENTS
    return tuple(events)


def pod_scheduling_properties_change(new: Pod, old: Pod) -> list[ClusterEvent]:
    """``PodSchedulingPropertiesChange``: the Update* events one pod update amounts to.

    The resource is ``AssignedPod`` when the new pod is bound, ``UnschedulablePod`` otherwise;
    with no specific change the generic ``Update`` is returned.
    """
    resource = AssignedPod if new.node_name else UnschedulablePod
    actions: list[ActionType] = []
    if dict(new.labels) != dict(old.labels):
        actions.append(A.UpdatePodLabel)
    new_req, old_req = new.requests, old.requests
    if any(name not in new_req or value > new_req[name] for name, value in old_req.items()):
        actions.append(A.UpdatePodScaleDown)
    if not new.scheduling_gates and old.scheduling_gates:
        actions.append(A.UpdatePodSchedulingGatesEliminated)
    if len(new.tolerations) != len(old.tolerations):
        actions.append(A.UpdatePodToleration)
    if not actions:
        actions.append(A.Update)
    return [ClusterEvent(resource, a) for a in actions]
