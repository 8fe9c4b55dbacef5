"""The pure policy core: Kubernetes objects as typed values and kube-scheduler's decisions.

No I/O, no asyncio, no wall-clock reads: a clock is passed in wherever time matters, and any
randomness comes from a seeded RNG the caller provides.
"""

from scheduler.apierrors import AdmissionError, FieldError, InvalidError, StatusError
from scheduler.framework import Code, CycleState, Framework, NodeToStatus, Status, fit_error_message
from scheduler.labels import LabelSelector, Requirement, SelectorError, parse_label_selector
from scheduler.objects import (
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
    Taint,
    Toleration,
    load_manifests,
    load_objects,
    object_from_dict,
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
from scheduler.quantity import QuantityError, parse_quantity
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "SYSTEM_CLUSTER_CRITICAL",
    "SYSTEM_CRITICAL_PRIORITY",
    "SYSTEM_NODE_CRITICAL",
    "AdmissionError",
    "Affinity",
    "Code",
    "Container",
    "CycleState",
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
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PodDisruptionBudget",
    "PriorityAdmission",
    "PriorityClass",
    "QuantityError",
    "Requirement",
    "SelectorError",
    "Snapshot",
    "Status",
    "StatusError",
    "Taint",
    "Toleration",
    "fit_error_message",
    "is_critical_pod",
    "load_manifests",
    "load_objects",
    "object_from_dict",
    "parse_label_selector",
    "parse_quantity",
    "system_priority_classes",
    "validate_priority_class",
    "validate_priority_class_update",
]
