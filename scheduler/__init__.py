"""The pure policy core: Kubernetes objects as typed values and kube-scheduler's decisions.

No I/O, no asyncio, no wall-clock reads: a clock is passed in wherever time matters, and any
randomness comes from a seeded RNG the caller provides.

The names below are exported lazily (PEP 562): importing one module of the package (or one of
the old names of the ``kube`` basics, such as ``scheduler.objects``) does not import the
plugins, preemption, queue and simulator with it.
Each name is imported from its module on first access and then cached here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kube.apierrors import AdmissionError, FieldError, InvalidError, StatusError
    from kube.labels import LabelSelector, Requirement, SelectorError, parse_label_selector
    from kube.objects import (
        Affinity,
        Container,
        InvalidObject,
        Namespace,
        Node,
        NodeAffinity,
        NodeSelector,
        NodeSelectorTerm,
        Pod,
        PodAffinity,
        PodAffinityTerm,
        PodAntiAffinity,
        PodDisruptionBudget,
        PriorityClass,
        ReplicaSet,
        ReplicationController,
        Service,
        StatefulSet,
        Taint,
        Toleration,
        TopologySpreadConstraint,
        load_manifests,
        load_objects,
        object_from_dict,
    )
    from kube.quantity import QuantityError, parse_quantity
    from scheduler.framework import (
        Code,
        CycleState,
        Framework,
        NodeToStatus,
        Status,
        fit_error_message,
    )
    from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
    from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
    from scheduler.plugins.registry import (
        FILTER_REGISTRY,
        SCORE_REGISTRY,
        default_filter_plugins,
        default_framework,
        default_score_plugins,
    )
    from scheduler.preemption import (
        Candidate,
        Explanation,
        PreemptionResult,
        Victims,
        pick_one_node_for_preemption,
        preempt,
        select_victims_on_node,
    )
    from scheduler.priority import (
        HIGHEST_USER_DEFINABLE_PRIORITY,
        SYSTEM_CLUSTER_CRITICAL,
        SYSTEM_CRITICAL_PRIORITY,
        SYSTEM_NODE_CRITICAL,
        PriorityAdmission,
        is_critical_pod,
        system_priority_classes,
        validate_priority_class,
        validate_priority_class_update,
    )
    from scheduler.queue import (
        ClusterEvent,
        NominatingInfo,
        NominatingMode,
        QueuedPodInfo,
        SchedulingQueue,
        backoff_duration,
        less,
        validate_pod_update_while_gated,
    )
    from scheduler.schedule import (
        ScheduleResult,
        SchedulingError,
        find_feasible_nodes,
        find_nodes_that_fit_pod,
        num_feasible_nodes_to_find,
        schedule_one,
        unmodelled_warning,
    )
    from scheduler.simulator import SimulationReport, build_snapshot, simulate
    from scheduler.snapshot import NodeInfo, Snapshot

_EXPORTS: dict[str, str] = {
    "FILTER_REGISTRY": "scheduler.plugins.registry",
    "PodTopologySpread": "scheduler.plugins.podtopologyspread.plugin",
    "DEFAULT_PLUGIN_WEIGHTS": "scheduler.plugins.defaults",
    "SCORE_REGISTRY": "scheduler.plugins.registry",
    "Service": "kube.objects",
    "ReplicationController": "kube.objects",
    "ReplicaSet": "kube.objects",
    "StatefulSet": "kube.objects",
    "TopologySpreadConstraint": "kube.objects",
    "unmodelled_warning": "scheduler.schedule",
    "AdmissionError": "kube.apierrors",
    "FieldError": "kube.apierrors",
    "InvalidError": "kube.apierrors",
    "StatusError": "kube.apierrors",
    "default_filter_plugins": "scheduler.plugins.registry",
    "default_framework": "scheduler.plugins.registry",
    "Code": "scheduler.framework",
    "CycleState": "scheduler.framework",
    "Framework": "scheduler.framework",
    "NodeToStatus": "scheduler.framework",
    "Status": "scheduler.framework",
    "fit_error_message": "scheduler.framework",
    "LabelSelector": "kube.labels",
    "Requirement": "kube.labels",
    "SelectorError": "kube.labels",
    "parse_label_selector": "kube.labels",
    "Affinity": "kube.objects",
    "Container": "kube.objects",
    "InvalidObject": "kube.objects",
    "Namespace": "kube.objects",
    "Node": "kube.objects",
    "NodeAffinity": "kube.objects",
    "NodeSelector": "kube.objects",
    "NodeSelectorTerm": "kube.objects",
    "Pod": "kube.objects",
    "PodAffinity": "kube.objects",
    "PodAffinityTerm": "kube.objects",
    "PodAntiAffinity": "kube.objects",
    "PodDisruptionBudget": "kube.objects",
    "PriorityClass": "kube.objects",
    "Taint": "kube.objects",
    "Toleration": "kube.objects",
    "load_manifests": "kube.objects",
    "load_objects": "kube.objects",
    "object_from_dict": "kube.objects",
    "Candidate": "scheduler.preemption",
    "Explanation": "scheduler.preemption",
    "PreemptionResult": "scheduler.preemption",
    "Victims": "scheduler.preemption",
    "pick_one_node_for_preemption": "scheduler.preemption",
    "preempt": "scheduler.preemption",
    "select_victims_on_node": "scheduler.preemption",
    "HIGHEST_USER_DEFINABLE_PRIORITY": "scheduler.priority",
    "SYSTEM_CLUSTER_CRITICAL": "scheduler.priority",
    "SYSTEM_CRITICAL_PRIORITY": "scheduler.priority",
    "SYSTEM_NODE_CRITICAL": "scheduler.priority",
    "PriorityAdmission": "scheduler.priority",
    "is_critical_pod": "scheduler.priority",
    "system_priority_classes": "scheduler.priority",
    "validate_priority_class": "scheduler.priority",
    "validate_priority_class_update": "scheduler.priority",
    "QuantityError": "kube.quantity",
    "parse_quantity": "kube.quantity",
    "ClusterEvent": "scheduler.queue",
    "NominatingInfo": "scheduler.queue",
    "NominatingMode": "scheduler.queue",
    "QueuedPodInfo": "scheduler.queue",
    "SchedulingQueue": "scheduler.queue",
    "backoff_duration": "scheduler.queue",
    "less": "scheduler.queue",
    "validate_pod_update_while_gated": "scheduler.queue",
    "ScheduleResult": "scheduler.schedule",
    "SchedulingError": "scheduler.schedule",
    "find_feasible_nodes": "scheduler.schedule",
    "find_nodes_that_fit_pod": "scheduler.schedule",
    "num_feasible_nodes_to_find": "scheduler.schedule",
    "schedule_one": "scheduler.schedule",
    "default_score_plugins": "scheduler.plugins.registry",
    "SimulationReport": "scheduler.simulator",
    "build_snapshot": "scheduler.simulator",
    "simulate": "scheduler.simulator",
    "NodeInfo": "scheduler.snapshot",
    "Snapshot": "scheduler.snapshot",
}

__all__ = [
    "DEFAULT_PLUGIN_WEIGHTS",
    "FILTER_REGISTRY",
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "SCORE_REGISTRY",
    "SYSTEM_CLUSTER_CRITICAL",
    "SYSTEM_CRITICAL_PRIORITY",
    "SYSTEM_NODE_CRITICAL",
    "AdmissionError",
    "Affinity",
    "Candidate",
    "ClusterEvent",
    "Code",
    "Container",
    "CycleState",
    "Explanation",
    "FieldError",
    "Framework",
    "InvalidError",
    "InvalidObject",
    "LabelSelector",
    "Namespace",
    "Node",
    "NodeAffinity",
    "NodeInfo",
    "NodeSelector",
    "NodeSelectorTerm",
    "NodeToStatus",
    "NominatingInfo",
    "NominatingMode",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PodDisruptionBudget",
    "PodTopologySpread",
    "PreemptionResult",
    "PriorityAdmission",
    "PriorityClass",
    "QuantityError",
    "QueuedPodInfo",
    "ReplicaSet",
    "ReplicationController",
    "Requirement",
    "ScheduleResult",
    "SchedulingError",
    "SchedulingQueue",
    "SelectorError",
    "Service",
    "SimulationReport",
    "Snapshot",
    "StatefulSet",
    "Status",
    "StatusError",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
    "Victims",
    "backoff_duration",
    "build_snapshot",
    "default_filter_plugins",
    "default_framework",
    "default_score_plugins",
    "find_feasible_nodes",
    "find_nodes_that_fit_pod",
    "fit_error_message",
    "is_critical_pod",
    "less",
    "load_manifests",
    "load_objects",
    "num_feasible_nodes_to_find",
    "object_from_dict",
    "parse_label_selector",
    "parse_quantity",
    "pick_one_node_for_preemption",
    "preempt",
    "schedule_one",
    "select_victims_on_node",
    "simulate",
    "system_priority_classes",
    "unmodelled_warning",
    "validate_pod_update_while_gated",
    "validate_priority_class",
    "validate_priority_class_update",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'scheduler' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
