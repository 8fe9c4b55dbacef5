"""A pod's effective requests and limits from its containers', as
``k8s.io/component-helpers/resource`` (``AggregateContainerRequests``,
``AggregateContainerLimits``) computes them for the scheduler, the kubelet and the API server's
QoS class alike. Standard library only: ``kube.qos`` and ``kube.objects`` both use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

__all__ = ["ContainerResources", "aggregate_limits", "aggregate_requests"]


class ContainerResources(Protocol):
    """What the aggregation reads of a container (``kube.objects.Container`` has it)."""

    @property
    def requests(self) -> Mapping[str, int]: ...

    @property
    def limits(self) -> Mapping[str, int]: ...

    @property
    def is_restartable_init(self) -> bool: ...


def _add(into: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, value in amounts.items():
        into[name] = into.get(name, 0) + value


def _max(into: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, value in amounts.items():
        if name not in into or value > into[name]:
            into[name] = value


def _aggregate(
    containers: Iterable[ContainerResources],
    init_containers: Iterable[ContainerResources],
    *,
    limits: bool,
    defaults: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """App containers run together, so their amounts add up; restartable init containers
    (sidecars) keep running beside them, so theirs add up too. An ordinary init container runs
    alone with the sidecars started before it, so the pod needs at least that sum while it runs:
    the result is the larger of the two, resource by resource.
    """

    def of(c: ContainerResources) -> Mapping[str, int]:
        own = c.limits if limits else c.requests
        if not defaults:
            return own
        merged = dict(own)
        for name, value in defaults.items():
            merged.setdefault(name, value)
        return merged

    result: dict[str, int] = {}
    for c in containers:
        _add(result, of(c))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for c in init_containers:
        own = of(c)
        if c.is_restartable_init:
            _add(result, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            alone = dict(own)
            _add(alone, sidecars)
            _max(init_peak, alone)
    _max(result, init_peak)
    return result


def aggregate_requests(
    containers: Iterable[ContainerResources],
    init_containers: Iterable[ContainerResources],
    *,
    defaults: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """``AggregateContainerRequests``: a resource no container names is absent; ``defaults``
    fills the resources a container leaves out (the scheduler's non-zero requests)."""
    return _aggregate(containers, init_containers, limits=False, defaults=defaults)


def aggregate_limits(
    containers: Iterable[ContainerResources], init_containers: Iterable[ContainerResources]
) -> dict[str, int]:
    """``AggregateContainerLimits``: a resource no container limits is absent."""
    return _aggregate(containers, init_containers, limits=True)
