"""NodeResourcesBalancedAllocation: favours nodes whose resources are used evenly
(``noderesources/balanced_allocation.go``, ``resource_allocation.go``).

For each configured resource (cpu and memory by default) with non-zero allocatable, the
fraction ``(node requested + pod request) / allocatable`` capped at 1, using the real requests
(no 100m / 200Mi defaults); an extended resource the pod does not request is left out. The
score is ``int((1 - std) * 100)``, where ``std`` is ``|f1 - f2| / 2`` for two fractions and the
population standard deviation for more (0 for fewer). No normalization.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from kube.objects import Pod
from scheduler.framework import MAX_NODE_SCORE, CycleState, Status
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.plugins.noderesources.fit import is_scalar_resource_name
from scheduler.plugins.noderesources.resource_allocation import (
    resource_weights,
    score_by_resource_class,
)
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = ["BalancedAllocationScorer", "balanced_resource_score"]


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balancedResourceScorer``: 100 * (1 - standard deviation of the usage fractions)."""
    fractions = [
        min(req / alloc, 1.0) for req, alloc in zip(requested, allocatable, strict=True) if alloc
    ]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


class BalancedAllocationScorer:
    """NodeResourcesBalancedAllocation: favours nodes whose resources are used evenly."""

    name = "NodeResourcesBalancedAllocation"
    scores_in_range = True

    def __init__(
        self,
        weight: int = DEFAULT_PLUGIN_WEIGHTS["NodeResourcesBalancedAllocation"],
        *,
        resources: Mapping[str, int] | Sequence[Mapping[str, object]] | None = None,
    ) -> None:
        self.weight = weight
        self.resources: dict[str, int] = resource_weights(resources)

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        return None

    def pod_requests(self, pod: Pod) -> tuple[int, ...]:
        """``calculatePodResourceRequestList`` with ``useRequested``: the real requests."""
        return tuple(pod.requests.get(name, 0) for name in self.resources)

    def score_node(self, pod: Pod, node_info: NodeInfo) -> int:
        return self._score(node_info, self.pod_requests(pod))

    def _score(self, node_info: NodeInfo, pod_requests: tuple[int, ...]) -> int:
        requested: list[int] = []
        allocatable: list[int] = []
        for name, want in zip(self.resources, pod_requests, strict=True):
            if want == 0 and is_scalar_resource_name(name):
                continue  # an extended resource the pod does not ask for
            alloc = node_info.allocatable.get(name, 0)
            if alloc == 0:
                continue
            requested.append(node_info.requested.get(name, 0) + want)
            allocatable.append(alloc)
        return balanced_resource_score(requested, allocatable)

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        pod_requests = self.pod_requests(pod)
        key = repr((self.name, tuple(self.resources), pod_requests))
        score = self._scorer(pod_requests)
        return score_by_resource_class(state, node_infos, key, score)

    def _scorer(self, pod_requests: tuple[int, ...]) -> Callable[[NodeInfo], int]:
        if tuple(self.resources) != ("cpu", "memory"):
            return lambda ni: self._score(ni, pod_requests)
        want_cpu, want_mem = pod_requests
        generic = self._score

        def default(ni: NodeInfo) -> int:  # cpu and memory, spelled out
            alloc = ni.allocatable
            a_cpu = alloc.get("cpu", 0)
            a_mem = alloc.get("memory", 0)
            if not (a_cpu and a_mem):
                return generic(ni, pod_requests)
            req = ni.requested
            r_cpu = req.get("cpu", 0) + want_cpu
            r_mem = req.get("memory", 0) + want_mem
            f_cpu = r_cpu / a_cpu if r_cpu < a_cpu else 1.0
            f_mem = r_mem / a_mem if r_mem < a_mem else 1.0
            diff = f_cpu - f_mem if f_cpu >= f_mem else f_mem - f_cpu
            return int((1 - diff / 2) * 100.0)  # halving is exact: same as |f1 - f2| / 2

        return default

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        return None
