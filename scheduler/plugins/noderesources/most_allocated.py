"""NodeResourcesFit's Score with the ``MostAllocated`` strategy
(``noderesources/most_allocated.go``): bin packing, the fuller node first.

For each scored resource with non-zero allocatable, ``requested * 100 / allocatable``, where a
request above the allocatable counts as the allocatable (100); the node score is the weighted
mean, integer division throughout. Requested is counted as LeastAllocated counts it (the
node's ``NonZeroRequested`` for cpu and memory plus the pod's non-zero request).
"""

from __future__ import annotations

from scheduler.framework import MAX_NODE_SCORE
from scheduler.plugins.noderesources.least_allocated import LeastAllocatedScorer

__all__ = ["MostAllocatedScorer", "most_requested_score"]


def most_requested_score(requested: int, capacity: int) -> int:
    """``mostRequestedScore``."""
    if capacity == 0:
        return 0
    requested = min(requested, capacity)
    return requested * MAX_NODE_SCORE // capacity


class MostAllocatedScorer(LeastAllocatedScorer):
    """NodeResourcesFit's Score with ``scoringStrategy.type: MostAllocated``."""

    strategy = "MostAllocated"
    resource_score = staticmethod(most_requested_score)
