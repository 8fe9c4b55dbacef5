"""``kube.qos``: the one QoS class of a pod, compared with kube's rules over random pods.

The reference below is written from ``pkg/apis/core/helper/qos`` (``ComputePodQOS``) and the
API server's defaulting (``SetDefaults_ResourceList`` rounding every amount up to the milli
scale, ``SetDefaults_Pod`` giving a container its limits as missing requests,
``defaultPodRequests`` for pod-level requests), step by step in Go's order and with exact
decimals, so that the module's own arithmetic (integers in milli-units) is checked against it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.objects import Pod
from kube.qos import (
    QOS_BEST_EFFORT,
    QOS_BURSTABLE,
    QOS_GUARANTEED,
    InvalidPodResources,
    compute_pod_qos,
    get_pod_qos,
)
from kube.quantity import parse_quantity

# --- kube's rules, as the Go code states them --------------------------------------------------

QOS_RESOURCES = ("cpu", "memory")


def _round_up_milli(value: Decimal) -> Decimal:
    return Decimal(math.ceil(value * 1000)) / 1000


def _resource_list(raw: Mapping[str, Any] | None) -> dict[str, Decimal]:
    return {str(k): _round_up_milli(parse_quantity(v)) for k, v in (raw or {}).items()}


def _supported_pod_level(name: str) -> bool:
    return name in QOS_RESOURCES or name.startswith("hugepages-")


def _add(into: dict[str, Decimal], other: Mapping[str, Decimal]) -> None:
    for k, v in other.items():
        into[k] = into[k] + v if k in into else v


def _max(into: dict[str, Decimal], other: Mapping[str, Decimal]) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def _aggregate_container_requests(
    containers: list[dict[str, Any]], inits: list[dict[str, Any]]
) -> dict[str, Decimal]:
    reqs: dict[str, Decimal] = {}
    for c in containers:
        _add(reqs, c["requests"])
    restartable: dict[str, Decimal] = {}
    init_reqs: dict[str, Decimal] = {}
    for c in inits:
        container_reqs = c["requests"]
        if c["restartPolicy"] == "Always":
            _add(reqs, container_reqs)
            _add(restartable, container_reqs)
            container_reqs = restartable
        else:
            tmp: dict[str, Decimal] = {}
            _add(tmp, container_reqs)
            _add(tmp, restartable)
            container_reqs = tmp
        _max(init_reqs, container_reqs)
    _max(reqs, init_reqs)
    return reqs


def kube_compute_pod_qos(manifest: Mapping[str, Any]) -> str:
    spec = manifest.get("spec") or {}

    def defaulted(c: Mapping[str, Any]) -> dict[str, Any]:
        res = c.get("resources") or {}
        limits = _resource_list(res.get("limits"))
        requests = _resource_list(res.get("requests"))
        for k, v in limits.items():
            requests.setdefault(k, v)
        return {"requests": requests, "limits": limits, "restartPolicy": c.get("restartPolicy")}

    containers = [defaulted(c) for c in spec.get("containers") or []]
    inits = [defaulted(c) for c in spec.get("initContainers") or []]
    pod_res = spec.get("resources")
    pod_requests: dict[str, Decimal] = {}
    pod_limits: dict[str, Decimal] = {}
    if pod_res is not None:
        pod_requests = _resource_list(pod_res.get("requests"))
        pod_limits = _resource_list(pod_res.get("limits"))
        if pod_limits:  # defaultPodRequests
            for k, v in _aggregate_container_requests(containers, inits).items():
                if k not in pod_requests and _supported_pod_level(k):
                    pod_requests[k] = v
            for k, v in pod_limits.items():
                if k not in pod_requests and _supported_pod_level(k):
                    pod_requests[k] = v
    pod_level_set = pod_res is not None and any(
        _supported_pod_level(k)
        for k in [*(pod_res.get("requests") or {}), *(pod_res.get("limits") or {})]
    )

    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    is_guaranteed = True
    if pod_level_set:
        for k, v in pod_requests.items():
            if k in QOS_RESOURCES and v > 0:
                requests[k] = requests.get(k, Decimal(0)) + v
        if pod_limits:
            for k, v in pod_limits.items():
                if k in QOS_RESOURCES and v > 0:
                    limits[k] = limits.get(k, Decimal(0)) + v
            if not {k for k, v in pod_limits.items() if k in QOS_RESOURCES and v > 0} >= {
                "cpu",
                "memory",
            }:
                is_guaranteed = False
    else:
        for c in [*containers, *inits]:
            for k, v in c["requests"].items():
                if k in QOS_RESOURCES and v > 0:
                    requests[k] = requests.get(k, Decimal(0)) + v
            found = set()
            for k, v in c["limits"].items():
                if k in QOS_RESOURCES and v > 0:
                    found.add(k)
                    limits[k] = limits.get(k, Decimal(0)) + v
            if not found >= {"cpu", "memory"}:
                is_guaranteed = False
    if not requests and not limits:
        return QOS_BEST_EFFORT
    if is_guaranteed:
        for k, req in requests.items():
            if k not in limits or limits[k] != req:
                is_guaranteed = False
                break
    if is_guaranteed and len(requests) == len(limits):
        return QOS_GUARANTEED
    return QOS_BURSTABLE


# --- random pods ---------------------------------------------------------------------------------

# Spellings of a few amounts, so that equal values written differently meet often.
CPU = ["0", "1", "1000m", "1.0", "500m", "0.5", "2", "2000m", "0.0001", "1m", "1e0", "-1"]
MEMORY_WHOLE = ["0", "1Gi", "1024Mi", "1073741824", "1G", "1000M", "512Mi", "0.5Gi", "1", "2"]
MEMORY_ANY = [*MEMORY_WHOLE, "500m", "1.5", "1001m"]
OTHER = ["1", "1Gi"]


def _resource_lists(memory: list[str]) -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "cpu": st.sampled_from(CPU),
            "memory": st.sampled_from(memory),
            "ephemeral-storage": st.sampled_from(OTHER),
            "hugepages-2Mi": st.sampled_from(OTHER),
        },
    )


def _resources(memory: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {}, optional={"requests": _resource_lists(memory), "limits": _resource_lists(memory)}
    )


def _container(memory: list[str], *, init: bool) -> st.SearchStrategy[dict[str, Any]]:
    optional: dict[str, Any] = {"resources": _resources(memory)}
    if init:
        optional["restartPolicy"] = st.just("Always")
    return st.fixed_dictionaries({"name": st.just("c")}, optional=optional)


def pods(memory: list[str] = MEMORY_ANY) -> st.SearchStrategy[dict[str, Any]]:
    spec = st.fixed_dictionaries(
        {
            "containers": st.lists(_container(memory, init=False), min_size=1, max_size=3),
        },
        optional={
            "initContainers": st.lists(_container(memory, init=True), max_size=2),
            "resources": _resources(memory),
        },
    )
    return st.builds(lambda s: {"metadata": {"name": "p"}, "spec": s}, spec)


@settings(max_examples=400)
@given(pods())
def test_compute_pod_qos_follows_kube(manifest: dict[str, Any]) -> None:
    assert compute_pod_qos(manifest) == kube_compute_pod_qos(manifest)


@given(pods(MEMORY_WHOLE))
def test_the_typed_view_gets_the_same_class(manifest: dict[str, Any]) -> None:
    """Pods the agent watches are typed values; whole bytes and whole millicores (what the
    API server stores for cpu) are kept exactly there, so the class is the same."""
    manifest = _non_negative(manifest)
    assert compute_pod_qos(Pod.from_dict(manifest)) == compute_pod_qos(manifest)


def _non_negative(value: Any) -> Any:
    """The typed view refuses negative amounts (as API validation does)."""
    if isinstance(value, dict):
        return {k: _non_negative(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_non_negative(v) for v in value]
    return "1" if value == "-1" else value


@given(pods(), st.sampled_from([QOS_GUARANTEED, QOS_BURSTABLE, QOS_BEST_EFFORT]))
def test_get_pod_qos_prefers_the_stored_class(manifest: dict[str, Any], stored: str) -> None:
    manifest = {**manifest, "status": {"qosClass": stored}}
    assert get_pod_qos(manifest) == stored
    assert get_pod_qos(Pod.from_dict(_non_negative(manifest))) == stored
    del manifest["status"]
    assert get_pod_qos(manifest) == compute_pod_qos(manifest)


def test_the_issue_example_is_guaranteed() -> None:
    """Equal amounts written differently (kubesim once compared them as strings)."""
    manifest = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "resources": {
                        "requests": {"cpu": "1", "memory": "1Gi"},
                        "limits": {"cpu": "1000m", "memory": "1024Mi"},
                    },
                }
            ]
        },
    }
    assert compute_pod_qos(manifest) == QOS_GUARANTEED
    assert compute_pod_qos(Pod.from_dict(manifest)) == QOS_GUARANTEED


def _pod(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": containers, **spec}}


def _c(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Any:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources}


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (_pod([_c()]), QOS_BEST_EFFORT),
        (_pod([_c({"ephemeral-storage": "1Gi"})]), QOS_BEST_EFFORT),  # only cpu/memory count
        (_pod([_c({"cpu": "0"}, {"memory": "0"})]), QOS_BEST_EFFORT),  # only amounts above 0
        (_pod([_c(limits={"cpu": "1", "memory": "1Gi"})]), QOS_GUARANTEED),  # defaulted
        (_pod([_c(limits={"memory": "1Mi"})]), QOS_BURSTABLE),
        (_pod([_c({"cpu": "1"}, {"cpu": "2", "memory": "1Gi"})]), QOS_BURSTABLE),
        (_pod([_c(limits={"cpu": "1", "memory": "1Gi"}), _c({"cpu": "1"})]), QOS_BURSTABLE),
        # sub-millicore amounts are rounded up by the API server before it compares
        (_pod([_c({"cpu": "0.0001"}, {"cpu": "1m", "memory": "1"})]), QOS_GUARANTEED),
        # pod-level limits decide, and default the pod-level requests
        (_pod([_c()], resources={"limits": {"cpu": "1", "memory": "1Gi"}}), QOS_GUARANTEED),
        (
            _pod([_c({"cpu": "500m"})], resources={"limits": {"cpu": "1", "memory": "1Gi"}}),
            QOS_BURSTABLE,  # the pod-level cpu request defaults to the containers' 500m
        ),
        (
            _pod([_c(limits={"cpu": "1", "memory": "1Gi"})], resources={}),
            QOS_GUARANTEED,  # an empty spec.resources leaves the containers in charge
        ),
        (
            _pod(
                [_c(limits={"cpu": "1", "memory": "1Gi"})],
                initContainers=[_c(limits={"cpu": "1", "memory": "2Gi"})],
            ),
            QOS_GUARANTEED,  # init containers are summed too
        ),
        (
            _pod(
                [_c(limits={"cpu": "1", "memory": "1Gi"})],
                initContainers=[_c({"cpu": "1"})],
            ),
            QOS_BURSTABLE,
        ),
    ],
)
def test_examples(manifest: dict[str, Any], expected: str) -> None:
    assert compute_pod_qos(manifest) == expected == kube_compute_pod_qos(manifest)
    assert compute_pod_qos(Pod.from_dict(manifest)) == expected


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"containers": {"name": "c"}}, "spec.containers"),
        ({"containers": ["c"]}, "spec.containers[0]"),
        (
            {"containers": [{"name": "c", "resources": {"limits": {"cpu": "lots"}}}]},
            "spec.containers[0].resources.limits.cpu",
        ),
        ({"containers": [], "resources": {"requests": []}}, "spec.resources.requests"),
    ],
)
def test_a_malformed_manifest_names_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidPodResources, match="^" + re.escape(field) + ": "):
        compute_pod_qos({"spec": spec})
