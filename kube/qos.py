"""A pod's QoS class (``Guaranteed``, ``Burstable``, ``BestEffort``), decided once for every
package: kube-apiserver writes it to ``status.qosClass``, the kubelet places the pod's cgroup by
it (kubesim's node runtime), and the kubelet's eviction admission refuses BestEffort pods under
memory pressure (the agent). The rules are ``pkg/apis/core/helper/qos``'s (``compute_pod_qos``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kube.quantity import CPU, QuantityError, quantity_value
from kube.resourcehelper import aggregate_requests

if TYPE_CHECKING:
    from kube.objects import Pod

__all__ = [
    "QOS_BEST_EFFORT",
    "QOS_BURSTABLE",
    "QOS_CLASSES",
    "QOS_GUARANTEED",
    "InvalidPodResources",
    "compute_pod_qos",
    "get_pod_qos",
]

QOS_GUARANTEED: Final = "Guaranteed"
QOS_BURSTABLE: Final = "Burstable"
QOS_BEST_EFFORT: Final = "BestEffort"
QOS_CLASSES: Final = (QOS_GUARANTEED, QOS_BURSTABLE, QOS_BEST_EFFORT)

_MEMORY: Final = "memory"
_QOS_RESOURCES: Final = (CPU, _MEMORY)  # supportedQoSComputeResources
_HUGEPAGES_PREFIX: Final = "hugepages-"


class InvalidPodResources(ValueError):
    """A manifest whose resources cannot be read; the message names the field."""


@dataclass(frozen=True, slots=True)
class _Resources:
    """The cpu/memory requests and limits of a container or of the pod, in milli-units, with
    the names of every resource its lists name (pod-level: whether the lists are set)."""

    requests: Mapping[str, int]
    limits: Mapping[str, int]
    is_restartable_init: bool = False  # a sidecar
    request_names: frozenset[str] = frozenset()
    limit_names: frozenset[str] = frozenset()


def get_pod_qos(pod: Pod | Mapping[str, Any]) -> str:
    """``GetPodQOS``: ``status.qosClass`` when set, else ``compute_pod_qos``."""
    if isinstance(pod, Mapping):
        status = pod.get("status")
        stored = status.get("qosClass") if isinstance(status, Mapping) else None
    else:
        stored = pod.qos_class
    if stored in QOS_CLASSES:
        return str(stored)
    return compute_pod_qos(pod)


def compute_pod_qos(pod: Pod | Mapping[str, Any]) -> str:
    """``ComputePodQOS`` on the spec; ``InvalidPodResources`` for a manifest whose resources do
    not parse. The rules, as the API server applies them to a pod it has decoded and defaulted:

    * only cpu and memory count, and only amounts above zero;
    * every value in a resource list is first rounded up to the milli scale
      (``SetDefaults_ResourceList``, kubernetes/kubernetes#18538), and a container's missing request
      takes its limit (``SetDefaults_Pod``) — so ``requests: {cpu: "1", memory: 1Gi}`` with
      ``limits: {cpu: 1000m, memory: 1024Mi}`` is Guaranteed: quantities are compared by value,
      never as strings;
    * app and init containers are summed per resource; the pod is Guaranteed when every container
      limits both cpu and memory and the sums of requests equal the sums of limits, BestEffort when
      nothing is requested or limited, Burstable otherwise;
    * with pod-level resources (``spec.resources``, the PodLevelResources feature, on by default)
      naming cpu or memory, the pod-level requests and limits decide instead of the containers'. An
      empty ``spec.resources`` leaves the containers in charge, as since the
      ``PodLevelResourcesFixKubeletQOSClass`` fix (kubernetes/kubernetes#135082; before it an empty
      ``resources: {}`` made any pod BestEffort). Missing pod-level requests are defaulted as the
      API server does (``defaultPodRequests``): from the containers' effective request for the
      resource when they state one, else from the pod-level limit.

    ``pod`` is a manifest (a mapping, as kubesim stores it) or a ``kube.objects.Pod`` (as the
    agent watches it). A manifest is read exactly; the typed view keeps memory and the other
    non-cpu resources in whole units (``kube.objects``), so a memory amount with a fraction of
    a byte can only be told apart in a manifest.
    """
    if isinstance(pod, Mapping):
        containers, init_containers, pod_level = _read_manifest(pod)
    else:
        containers, init_containers, pod_level = _read_typed(pod)
    return _classify(containers, init_containers, pod_level)


# --- the rules --------------------------------------------------------------------------------


def _defaulted(requests: Mapping[str, int], limits: Mapping[str, int]) -> dict[str, int]:
    """``SetDefaults_Pod``: a request the container leaves out is its limit."""
    out = dict(requests)
    for name, value in limits.items():
        out.setdefault(name, value)
    return out


def _positive(values: Mapping[str, int]) -> dict[str, int]:
    return {n: values[n] for n in _QOS_RESOURCES if values.get(n, 0) > 0}


def _add(into: dict[str, int], values: Mapping[str, int]) -> None:
    for name, value in values.items():
        into[name] = into.get(name, 0) + value


def _pod_level_set(pod_level: _Resources) -> bool:
    """``IsPodLevelResourcesSet``: the pod-level lists name a resource they may hold."""
    return any(
        n in _QOS_RESOURCES or n.startswith(_HUGEPAGES_PREFIX)
        for n in pod_level.request_names | pod_level.limit_names
    )


def _classify(
    containers: Sequence[_Resources],
    init_containers: Sequence[_Resources],
    pod_level: _Resources | None,
) -> str:
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    if pod_level is not None and _pod_level_set(pod_level):
        pod_requests = dict(pod_level.requests)
        if pod_level.limit_names:  # defaultPodRequests, after the containers' defaulting
            effective = aggregate_requests(containers, init_containers)
            for name in _QOS_RESOURCES:
                if name not in pod_requests and name in effective:
                    pod_requests[name] = effective[name]
                elif name not in pod_requests and name in pod_level.limits:
                    pod_requests[name] = pod_level.limits[name]
            limited = _positive(pod_level.limits)
            _add(limits, limited)
            if set(limited) != set(_QOS_RESOURCES):
                guaranteed = False
        _add(requests, _positive(pod_requests))
    else:
        for c in (*containers, *init_containers):
            _add(requests, _positive(c.requests))
            limited = _positive(c.limits)
            _add(limits, limited)
            if set(limited) != set(_QOS_RESOURCES):
                guaranteed = False
    if not requests and not limits:
        return QOS_BEST_EFFORT
    if guaranteed and requests == limits:
        return QOS_GUARANTEED
    return QOS_BURSTABLE


# --- reading a pod ----------------------------------------------------------------------------


def _read_typed(pod: Pod) -> tuple[list[_Resources], list[_Resources], _Resources | None]:
    def milli(values: Mapping[str, int]) -> dict[str, int]:
        # the typed view keeps cpu in millicores and everything else in whole units
        return {n: v if n == CPU else v * 1000 for n, v in values.items() if n in _QOS_RESOURCES}

    def one(requests: Mapping[str, int], limits: Mapping[str, int], sidecar: bool) -> _Resources:
        lim = milli(limits)
        return _Resources(_defaulted(milli(requests), lim), lim, sidecar)

    containers = [one(c.requests, c.limits, False) for c in pod.containers]
    inits = [one(c.requests, c.limits, c.is_restartable_init) for c in pod.init_containers]
    pod_level = _Resources(
        milli(pod.pod_requests),
        milli(pod.pod_limits),
        request_names=frozenset(pod.pod_requests),
        limit_names=frozenset(pod.pod_limits),
    )
    return containers, inits, pod_level


def _read_manifest(
    pod: Mapping[str, Any],
) -> tuple[list[_Resources], list[_Resources], _Resources | None]:
    spec = pod.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise InvalidPodResources("spec: must be an object")

    def resource_list(
        owner: Mapping[str, Any], key: str, path: str
    ) -> tuple[dict[str, int], set[str]]:
        raw = owner.get(key)
        if raw is None:
            return {}, set()
        if not isinstance(raw, Mapping):
            raise InvalidPodResources(f"{path}: must be an object")
        values = {}
        for name in _QOS_RESOURCES:
            if name in raw:
                try:  # SetDefaults_ResourceList: rounded up to the milli scale
                    values[name] = quantity_value(raw[name], milli=True)
                except QuantityError as exc:
                    raise InvalidPodResources(f"{path}.{name}: {exc}") from None
        return values, {str(n) for n in raw}

    def resources(
        owner: Mapping[str, Any], path: str
    ) -> tuple[dict[str, int], dict[str, int], set[str], set[str]]:
        res = owner.get("resources")
        if res is None:
            res = {}
        if not isinstance(res, Mapping):
            raise InvalidPodResources(f"{path}: must be an object")
        requests, request_names = resource_list(res, "requests", f"{path}.requests")
        limits, limit_names = resource_list(res, "limits", f"{path}.limits")
        return requests, limits, request_names, limit_names

    def containers(key: str) -> list[_Resources]:
        items = spec.get(key)
        if items is None:
            return []
        if not isinstance(items, list):
            raise InvalidPodResources(f"spec.{key}: must be a list of objects")
        out = []
        for i, c in enumerate(items):
            if not isinstance(c, Mapping):
                raise InvalidPodResources(f"spec.{key}[{i}]: must be an object")
            requests, limits, _, _ = resources(c, f"spec.{key}[{i}].resources")
            sidecar = key == "initContainers" and c.get("restartPolicy") == "Always"
            out.append(_Resources(_defaulted(requests, limits), limits, sidecar))
        return out

    pod_level = None
    if spec.get("resources") is not None:
        requests, limits, request_names, limit_names = resources(spec, "spec.resources")
        pod_level = _Resources(
            requests,
            limits,
            request_names=frozenset(request_names),
            limit_names=frozenset(limit_names),
        )
    return containers("containers"), containers("initContainers"), pod_level
