"""What NodeResourcesFit's LeastAllocated score and NodeResourcesBalancedAllocation share
(kube's ``noderesources/resource_allocation.go``): the resources and weights they score, and
scoring once per ``NodeInfo.resource_class`` (nodes with equal amounts score alike).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from scheduler.framework import CycleState
from scheduler.plugins.helper import remember
from scheduler.snapshot import NodeInfo

__all__ = ["resource_weights", "score_by_resource_class"]


def resource_weights(
    resources: Mapping[str, int] | Sequence[Mapping[str, object]] | None,
) -> dict[str, int]:
    """Resource name -> weight from ``{"cpu": 1}`` or the YAML list form
    ``[{"name": "cpu", "weight": 1}, ...]``; cpu and memory at weight 1 when None."""
    if resources is None:
        return {"cpu": 1, "memory": 1}
    if isinstance(resources, Mapping):
        out = {str(k): int(v) for k, v in resources.items()}
    else:
        out = {}
        for i, item in enumerate(resources):
            name, weight = item.get("name"), item.get("weight", 1)
            if not isinstance(name, str) or not name:
                raise ValueError(f"resources[{i}].name: Required value")
            if isinstance(weight, bool) or not isinstance(weight, int):
                raise ValueError(f"resources[{i}].weight: must be an integer, not {weight!r}")
            out[name] = weight
    for name, weight in out.items():
        if not 1 <= weight <= 100:
            raise ValueError(
                f"resources[{name}].weight: Invalid value: {weight}: resource weight of {name}"
                " not in valid range [1, 100]"
            )
    return out


_CLASSES_KEY: Final = "ResourceClasses"
_FEW_CLASSES: Final = 16


def _resource_classes(
    state: CycleState, node_infos: Sequence[NodeInfo]
) -> tuple[list[int], dict[int, NodeInfo]] | None:
    """Each node's ``resource_class`` and one node per class; None when some node has none
    (a clone). Worked out once per list of nodes per cycle, shared by the resource scorers."""
    cached = state.read(_CLASSES_KEY)
    if cached is not None and cached[0] is node_infos:
        result: tuple[list[int], dict[int, NodeInfo]] | None = cached[1]
        return result
    classes = [ni.resource_class for ni in node_infos]
    distinct = set(classes)
    if len(distinct) <= _FEW_CLASSES:  # a C-level search per class beats building a dict
        representatives = {c: node_infos[classes.index(c)] for c in distinct}
    else:
        representatives = dict(zip(classes, node_infos, strict=True))
    result = None if -1 in representatives else (classes, representatives)
    state.write(_CLASSES_KEY, (node_infos, result))
    return result


def score_by_resource_class(
    state: CycleState, node_infos: Sequence[NodeInfo], key: str, score: Callable[[NodeInfo], int]
) -> list[int]:
    """``[score(ni) for ni in node_infos]`` for a score that depends only on the node's
    allocatable, requested and non-zero requested amounts (NodeResourcesFit's and
    BalancedAllocation's): one score per resource class, spread to the nodes at C level. A
    node's score is also remembered until the node changes (``NodeInfo.memo`` under ``key``),
    which pays when most nodes differ (each pod requesting something else)."""
    grouped = _resource_classes(state, node_infos)
    if grouped is None:
        return [
            v if (v := ni.memo.get(key)) is not None else remember(ni.memo, key, score(ni))
            for ni in node_infos
        ]
    classes, representatives = grouped
    table = {
        c: v if (v := ni.memo.get(key)) is not None else remember(ni.memo, key, score(ni))
        for c, ni in representatives.items()
    }
    return list(map(table.__getitem__, classes))
