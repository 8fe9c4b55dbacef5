"""``--order=priority``: the pods a drain deletes, in groups of equal priority, lowest first.

kubectl has no such order; it sends every eviction of a node at once. Pure: the drain helper
and the drain planner both group a node's pods with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cmp_to_key

from kube.objects import Pod

__all__ = ["order_by_priority"]


def order_by_priority(pods: Sequence[Pod], *, now: float | None = None) -> list[list[Pod]]:
    """Groups of equal priority, lowest first; inside a group the least important first.

    Importance is ``scheduler``'s ``more_important_pod`` (priority, then earlier start).
    """
    # imported here: a drain without --order=priority does not load the scheduling library
    from scheduler.preemption.core import more_important_pod

    def cmp(a: Pod, b: Pod) -> int:
        if more_important_pod(a, b, now=now):
            return 1
        if more_important_pod(b, a, now=now):
            return -1
        return 0

    ordered = sorted(pods, key=cmp_to_key(cmp))
    groups: list[list[Pod]] = []
    for pod in ordered:
        if groups and groups[-1][0].priority == pod.priority:
            groups[-1].append(pod)
        else:
            groups.append([pod])
    return groups
