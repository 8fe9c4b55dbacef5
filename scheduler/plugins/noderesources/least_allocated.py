"""NodeResourcesFit's Score with the default LeastAllocated strategy
(``noderesources/least_allocated.go``, ``resource_allocation.go``): spread pods by favouring
the nodes with the most room left. The other strategies of ``scoringStrategy``
(``most_allocated``, ``requested_to_capacity_ratio``) are this scorer with their own score per
resource.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kube.objects import Pod
from scheduler.framework import MAX_NODE_SCORE, CycleState, Status
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.plugins.noderesources.fit import NAME, is_scalar_resource_name
from scheduler.plugins.noderesources.resource_allocation import (
    resource_weights,
    score_by_resource_class,
)
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = ["LeastAllocatedScorer", "least_requested_score"]


def least_requested_score(requested: int, capacity: int) -> int:
    """``leastRequestedScore``: ``(capacity - requested) * 100 / capacity``, 0 when
    over-committed or without capacity; integer division."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


class LeastAllocatedScorer:
    """NodeResourcesFit's Score with the default ``LeastAllocated`` strategy (cpu, memory).

    With cpu and memory at weight 1 by default: for each resource with non-zero allocatable,
    ``resource_score(requested, allocatable)``, where requested is the node's
    ``NonZeroRequested`` plus the pod's non-zero request (a container without a cpu/memory
    request counts 100m / 200Mi here, and only here); the node score is the weighted mean,
    integer division throughout.
    """

    name = NAME
    scores_in_range = True
    strategy = "LeastAllocated"
    resource_score = staticmethod(least_requested_score)

    def __init__(
        self,
        weight: int = DEFAULT_PLUGIN_WEIGHTS[NAME],
        *,
        resources: Mapping[str, int] | Sequence[Mapping[str, object]] | None = None,
    ) -> None:
        self.weight = weight
        self.resources: dict[str, int] = resource_weights(resources)
        self._key: tuple[object, ...] = (self.name, *self.resources.items())

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        return None

    def pod_requests(self, pod: Pod) -> tuple[int, ...]:
        """``calculatePodResourceRequestList``: non-zero requests for cpu and memory."""
        return tuple(
            pod.non_zero_requests.get(name, 0)
            if name in ("cpu", "memory")
            else pod.requests.get(name, 0)
            for name in self.resources
        )

    def score_node(self, pod: Pod, node_info: NodeInfo) -> int:
        return self._score(node_info, self.pod_requests(pod))

    def _score(self, node_info: NodeInfo, pod_requests: tuple[int, ...]) -> int:
        """``leastResourceScorer`` on ``calculateResourceAllocatableRequest``."""
        node_score = weight_sum = 0
        for (name, weight), want in zip(self.resources.items(), pod_requests, strict=True):
            if name in ("cpu", "memory"):
                requested = node_info.non_zero_requested.get(name, 0) + want
            elif want == 0 and is_scalar_resource_name(name):
                continue  # an extended resource the pod does not ask for
            else:
                requested = node_info.requested.get(name, 0) + want
            allocatable = node_info.allocatable.get(name, 0)
            if allocatable == 0:
                continue
            node_score += self.resource_score(requested, allocatable) * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        pod_requests = self.pod_requests(pod)
        # A str key: its hash is computed once, a tuple's on every lookup.
        key = repr((self.strategy, self._key, pod_requests))
        score = self._scorer(pod_requests)
        return score_by_resource_class(state, node_infos, key, score)

    def _scorer(self, pod_requests: tuple[int, ...]) -> Callable[[NodeInfo], int]:
        if self._key != (self.name, ("cpu", 1), ("memory", 1)) or self.strategy != "LeastAllocated":
            return lambda ni: self._score(ni, pod_requests)
        want_cpu, want_mem = pod_requests

        def default(ni: NodeInfo) -> int:  # the default configuration, spelled out
            alloc = ni.allocatable
            a_cpu = alloc.get("cpu", 0)
            a_mem = alloc.get("memory", 0)
            if not (a_cpu and a_mem):
                return self._score(ni, pod_requests)
            r_cpu = ni.non_zero_requested["cpu"] + want_cpu
            r_mem = ni.non_zero_requested["memory"] + want_mem
            s_cpu = (a_cpu - r_cpu) * MAX_NODE_SCORE // a_cpu if r_cpu <= a_cpu else 0
            s_mem = (a_mem - r_mem) * MAX_NODE_SCORE // a_mem if r_mem <= a_mem else 0
            return (s_cpu + s_mem) // 2

        return default

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        return None
