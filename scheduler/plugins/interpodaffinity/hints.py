"""InterPodAffinity's queueing hints (``isSchedulableAfterPodChange``,
``isSchedulableAfterNodeChange`` in pkg/scheduler/framework/plugins/interpodaffinity/plugin.go).

A rejected pod is worth retrying when a *bound* pod appears, or is relabelled, so that it
matches every required affinity term of the rejected pod, when one that matched every required
anti-affinity term goes away (deleted or relabelled), or when a node carries one of the terms'
topology keys. Like upstream, the terms are matched with no namespace labels: a term that only
a ``namespaceSelector`` would satisfy is not seen (the periodic flush retries such pods).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from kube.objects import Node, Pod, PodAffinityTerm
from scheduler.framework import QueueingHint
from scheduler.plugins.interpodaffinity.filtering import (
    required_affinity_terms,
    required_anti_affinity_terms,
)

__all__ = ["is_schedulable_after_node_change", "is_schedulable_after_pod_change"]

_NO_LABELS: Final[Mapping[str, str]] = {}


def _matches_all(terms: Sequence[PodAffinityTerm], pod: Pod) -> bool:
    """``podMatchesAllAffinityTerms`` with nil namespace labels: false for no terms."""
    return bool(terms) and all(t.matches(pod, _NO_LABELS) for t in terms)


def is_schedulable_after_pod_change(pod: Pod, old: object, new: object) -> QueueingHint:
    old_pod = old if isinstance(old, Pod) else None
    new_pod = new if isinstance(new, Pod) else None
    if old_pod is None and new_pod is None:
        return QueueingHint.Queue
    if (new_pod is not None and not new_pod.node_name) or (
        old_pod is not None and not old_pod.node_name
    ):
        return QueueingHint.QueueSkip  # an unbound pod counts for no term
    terms = required_affinity_terms(pod)
    anti_terms = required_anti_affinity_terms(pod)
    if old_pod is not None and new_pod is not None:
        if not _matches_all(terms, old_pod) and _matches_all(terms, new_pod):
            return QueueingHint.Queue
        if _matches_all(anti_terms, old_pod) and not _matches_all(anti_terms, new_pod):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip
    if new_pod is not None:  # added
        return QueueingHint.Queue if _matches_all(terms, new_pod) else QueueingHint.QueueSkip
    assert old_pod is not None  # deleted
    return QueueingHint.Queue if _matches_all(anti_terms, old_pod) else QueueingHint.QueueSkip


def is_schedulable_after_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
    if not isinstance(new, Node):
        return QueueingHint.Queue
    labels = new.labels
    for term in (*required_affinity_terms(pod), *required_anti_affinity_terms(pod)):
        if term.topology_key in labels:
            return QueueingHint.Queue
    return QueueingHint.QueueSkip
