"""A ``resource.Quantity`` that does not decode is a 400 at decoding, as kube-apiserver answers.

Go's JSON decoder calls ``Quantity.UnmarshalJSON`` for every quantity of the body (containers'
and init containers' resources, a pod's overhead, an emptyDir's sizeLimit, a node's capacity,
the pod templates of the workloads); its error (``resource.ErrFormatWrong`` or ``ErrSuffix``)
becomes ``<Kind> in version "v1" cannot be handled as a <Kind>: <error>``, a BadRequest Status
without details, before admission and validation.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

import kubesim
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.api import raw

FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
SUFFIX = "unable to parse quantity's suffix"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(disabled_controllers=FROZEN) as s:
        yield s


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "x"}], **spec},
    }


def _with_requests(requests: dict[str, Any], key: str = "containers") -> dict[str, Any]:
    return {key: [{"name": "c", "image": "x", "resources": {"requests": requests}}]}


async def merge_patch(sim: Simulator, path: str, patch: dict[str, Any]) -> tuple[int, Any, Any]:
    return await raw(
        sim, "PATCH", path, body=json.dumps(patch), content_type="application/merge-patch+json"
    )


def _refused(kind: str, error: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{kind} in version "v1" cannot be handled as a {kind}: {error}',
        "reason": "BadRequest",
        "code": 400,
    }


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        (_with_requests({"cpu": "abc"}), FORMAT),
        (_with_requests({"memory": "32MMi"}), SUFFIX),
        (_with_requests({"memory": "1ki"}), SUFFIX),
        (_with_requests({"cpu": True}), FORMAT),
        (_with_requests({"cpu": {"n": 1}}), FORMAT),
        (_with_requests({"cpu": "1.2.3"}, "initContainers"), FORMAT),
        ({"overhead": {"memory": "lots"}}, FORMAT),
        ({"volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Gb"}}]}, FORMAT),
    ],
)
async def test_a_pod_with_an_unparsable_quantity_is_a_400(
    sim: Simulator, spec: dict[str, Any], error: str
) -> None:
    code, _, body = await raw(sim, "POST", PODS, body=json.dumps(_pod("bad", **spec)))
    assert (code, body) == (400, _refused("Pod", error))
    assert sim.get("Pod", "default", "bad") is None


async def test_quantities_as_json_numbers_decode(sim: Simulator) -> None:
    spec = _with_requests({"cpu": 0.5, "memory": 1e3})
    code, _, body = await raw(sim, "POST", PODS, body=json.dumps(_pod("ok", **spec)))
    assert code == 201, body
    assert body["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "500m",
        "memory": "1k",
    }


async def test_quantities_are_stored_as_the_go_type_writes_them(sim: Simulator) -> None:
    """What a client reads back is the canonical string (``1000m`` is ``1``), ``null`` is
    ``0`` and white space around a quantity is dropped: a body kube-apiserver accepts."""
    requests = {"cpu": "1000m", "memory": "1024Mi", "ephemeral-storage": " 2Gi "}
    spec = {
        "containers": [
            {"name": "c", "image": "x", "resources": {"requests": requests}},
            {"name": "d", "image": "x", "resources": {"limits": {"cpu": None}}},
        ],
        "overhead": {"memory": "0.5Gi"},
        "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1500M"}}],
    }
    code, _, body = await raw(sim, "POST", PODS, body=json.dumps(_pod("p", **spec)))
    assert code == 201, body
    stored = sim.get("Pod", "default", "p")
    assert stored is not None
    containers = stored["spec"]["containers"]
    assert containers[0]["resources"]["requests"] == {
        "cpu": "1",
        "memory": "1Gi",
        "ephemeral-storage": "2Gi",
    }
    assert containers[1]["resources"]["limits"] == {"cpu": "0"}
    assert stored["spec"]["overhead"] == {"memory": "512Mi"}
    assert stored["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "1500M"
    assert body["spec"] == {**body["spec"], **stored["spec"]}
    code, _, body = await merge_patch(sim, PODS + "/p", {"spec": {"activeDeadlineSeconds": 5}})
    assert code == 200, body
    assert body["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"


async def test_updates_patches_and_templates_are_decoded_alike(sim: Simulator) -> None:
    code, _, _ = await raw(sim, "POST", PODS, body=json.dumps(_pod("p")))
    assert code == 201
    bad_pod = _pod("p", **_with_requests({"cpu": "x1"}))
    code, _, body = await raw(sim, "PUT", PODS + "/p", body=json.dumps(bad_pod))
    assert (code, body) == (400, _refused("Pod", FORMAT))
    status_patch = {
        "status": {"containerStatuses": [{"name": "c", "allocatedResources": {"cpu": "1Q"}}]}
    }
    code, _, body = await merge_patch(sim, PODS + "/p/status", status_patch)
    assert (code, body) == (400, _refused("Pod", FORMAT))
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"limits": {"memory": "1Mb"}}}
                    ]
                },
            },
        },
    }
    code, _, body = await raw(
        sim, "POST", "/apis/apps/v1/namespaces/default/deployments", body=json.dumps(deployment)
    )
    assert (code, body) == (400, _refused("Deployment", FORMAT))
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {"capacity": {"cpu": "4", "memory": "8Mii"}},
    }
    code, _, body = await raw(sim, "POST", "/api/v1/nodes", body=json.dumps(node))
    assert (code, body) == (400, _refused("Node", SUFFIX))
