"""The downward API's ``resourceFieldRef``: a container's requests and limits in its environment.

A container learns its own memory limit from ``env[].valueFrom.resourceFieldRef`` (node e2e's
memory hogs allocate ``$(MEMORY_LIMIT)``); the kubelet answers with the container's value, and a
limit the container does not set is the node's allocatable amount
(``MergeContainerResourceLimits``), so a pod without limits learns how much the node can give
it. The value is ``ceil(value / divisor)`` (divisor default 1; CPU in cores, or the divisor's
millicores), printed as a whole number (``ExtractContainerResourceValue``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from kube.quantity import QuantityError, quantity_value

__all__ = ["DownwardAPIError", "resource_field_value"]

_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})


class DownwardAPIError(ValueError):
    """A resourceFieldRef the kubelet would refuse; the message names the field."""


def resource_field_value(
    ref: Mapping[str, Any],
    containers: Mapping[str, Mapping[str, Any]],
    *,
    current: str,
    node_allocatable: Mapping[str, Any],
    where: str,
) -> str:
    """The value of ``resourceFieldRef`` ``ref`` for the container named ``current`` (or the
    one ``ref.containerName`` names) among the pod's ``containers`` (name → spec)."""
    resource = str(ref.get("resource", ""))
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or name not in _RESOURCES:
        raise DownwardAPIError(
            f"{where}.resource: {resource!r} is not supported (limits.* or requests.* of"
            f" {', '.join(sorted(_RESOURCES))})"
        )
    target = str(ref.get("containerName") or current)
    container = containers.get(target)
    if container is None:
        raise DownwardAPIError(f"{where}.containerName: no container {target!r} in the pod")
    amounts = (container.get("resources") or {}).get(kind) or {}
    raw = amounts.get(name)
    if raw is None and kind == "requests":
        raw = ((container.get("resources") or {}).get("limits") or {}).get(name)
    if raw is None and kind == "limits":
        raw = node_allocatable.get(name)
    if raw is None:
        raw = 0
    divisor = ref.get("divisor") or "1"
    milli = name == "cpu"  # CPU counts in millicores, so a divisor of 1m is exact
    try:
        value, div = quantity_value(raw, milli=milli), quantity_value(divisor, milli=milli)
    except QuantityError as exc:
        raise DownwardAPIError(f"{where}: {exc}") from None
    if div <= 0:
        raise DownwardAPIError(f"{where}.divisor: must be positive, not {divisor!r}")
    return str(math.ceil(value / div))
