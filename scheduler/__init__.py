"""The pure policy core: Kubernetes objects as typed values and kube-scheduler's decisions.

No I/O, no asyncio, no wall-clock reads: a clock is passed in wherever time matters, and any
randomness comes from a seeded RNG the caller provides.
"""

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
from scheduler.quantity import QuantityError, parse_quantity
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "Affinity",
    "Code",
    "Container",
    "CycleState",
    "Framework",
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
    "PriorityClass",
    "QuantityError",
    "Requirement",
    "SelectorError",
    "Snapshot",
    "Status",
    "Taint",
    "Toleration",
    "fit_error_message",
    "load_manifests",
    "load_objects",
    "object_from_dict",
    "parse_label_selector",
    "parse_quantity",
]
