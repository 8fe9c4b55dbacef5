"""NodeResourcesFit's Score with the ``RequestedToCapacityRatio`` strategy
(``noderesources/requested_to_capacity_ratio.go``, ``helper/shape_score.go``).

The operator draws the score as a function of utilization: ``shape`` points (utilization 0-100,
score 0-10, scaled by 10 to 0-100) joined by straight lines, flat before the first point and
after the last. Each scored resource with non-zero allocatable is placed on it at
``requested * 100 / allocatable`` (a request above the allocatable at 100); resources scoring 0
are left out of the weighted mean, which is rounded half away from zero (``math.Round``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from scheduler.framework import MAX_NODE_SCORE
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.plugins.noderesources.fit import NAME, is_scalar_resource_name
from scheduler.plugins.noderesources.least_allocated import LeastAllocatedScorer
from scheduler.snapshot import NodeInfo

__all__ = ["RequestedToCapacityRatioScorer", "broken_linear_function"]

MAX_CUSTOM_PRIORITY_SCORE: Final = 10
MAX_UTILIZATION: Final = 100


def _go_div(a: int, b: int) -> int:
    """Go's integer division: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def broken_linear_function(shape: Sequence[tuple[int, int]], p: int) -> int:
    """``BuildBrokenLinearFunction`` evaluated at utilization ``p``; ``shape`` holds
    (utilization, score) points sorted by utilization."""
    for i, (utilization, score) in enumerate(shape):
        if p <= utilization:
            if i == 0:
                return score
            u0, s0 = shape[i - 1]
            return s0 + _go_div((score - s0) * (p - u0), utilization - u0)
    return shape[-1][1]


class RequestedToCapacityRatioScorer(LeastAllocatedScorer):
    """NodeResourcesFit's Score with ``scoringStrategy.type: RequestedToCapacityRatio``;
    ``shape`` as in YAML: ``[{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]``.
    """

    strategy = "RequestedToCapacityRatio"

    def __init__(
        self,
        weight: int = DEFAULT_PLUGIN_WEIGHTS[NAME],
        *,
        resources: Mapping[str, int] | Sequence[Mapping[str, object]] | None = None,
        shape: Sequence[Mapping[str, int]] = (),
    ) -> None:
        super().__init__(weight, resources=resources)
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        self.shape: tuple[tuple[int, int], ...] = tuple(
            (int(p.get("utilization", 0)), int(p.get("score", 0)) * scale) for p in shape
        )
        if not self.shape:
            raise ValueError("shape: Required value: at least one point must be specified")
        self._key = (*self._key, self.shape)

    def _resource_score(self, requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return broken_linear_function(self.shape, MAX_UTILIZATION)
        return broken_linear_function(self.shape, requested * MAX_UTILIZATION // capacity)

    def _score(self, node_info: NodeInfo, pod_requests: tuple[int, ...]) -> int:
        node_score = weight_sum = 0
        for (name, weight), want in zip(self.resources.items(), pod_requests, strict=True):
            if name in ("cpu", "memory"):
                requested = node_info.non_zero_requested.get(name, 0) + want
            elif want == 0 and is_scalar_resource_name(name):
                continue
            else:
                requested = node_info.requested.get(name, 0) + want
            allocatable = node_info.allocatable.get(name, 0)
            if allocatable == 0:
                continue
            score = self._resource_score(requested, allocatable)
            if score > 0:
                node_score += score * weight
                weight_sum += weight
        if weight_sum == 0:
            return 0
        return (2 * node_score + weight_sum) // (2 * weight_sum)  # math.Round, non-negative
