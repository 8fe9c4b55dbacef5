"""Bad input gets the Status kube-apiserver gives: 400/404/405/413/415/422, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesim.core.errors import StatusError
from kubesim.sim import Simulator
from tests.support.api import raw

POD_JSON = (
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},'
    '"spec":{"containers":[{"name":"c","image":"x"}]}}'
)


async def test_malformed_json_is_400(sim: Simulator) -> None:
    code, _, body = await raw(sim, "POST", "/api/v1/namespaces/default/pods", body="{nope")
    assert code == 400
    assert body["reason"] == "BadRequest"
    assert body["message"].startswith(
        "the object provided is unrecognized (must be of type Pod): couldn't get version/kind;"
        " json parse error: "
    )
    assert body["message"].endswith("({nope)")
    assert "details" not in body


async def test_empty_body_is_400(sim: Simulator) -> None:
    code, _, body = await raw(sim, "POST", "/api/v1/namespaces/default/pods", body="")
    assert code == 400
    assert "unexpected end of JSON input" in body["message"]


async def test_yaml_body_is_accepted_and_bad_yaml_is_400(sim: Simulator) -> None:
    yaml_pod = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: y}\n"
        "spec: {containers: [{name: c, image: x}]}\n"
    )
    code, _, body = await raw(
        sim,
        "POST",
        "/api/v1/namespaces/default/pods",
        body=yaml_pod,
        content_type="application/yaml",
    )
    assert code == 201
    assert body["metadata"]["name"] == "y"
    code, _, body = await raw(
        sim,
        "POST",
        "/api/v1/namespaces/default/pods",
        body="a: [b",
        content_type="application/yaml",
    )
    assert code == 400
    assert "error converting YAML to JSON" in body["message"]


async def test_protobuf_body_is_415(sim: Simulator) -> None:
    code, _, body = await raw(
        sim,
        "POST",
        "/api/v1/namespaces/default/pods",
        body=b"\x00k8s",
        content_type="application/vnd.kubernetes.protobuf",
    )
    assert code == 415
    assert body["reason"] == "UnsupportedMediaType"


async def test_wrong_kind_is_400(sim: Simulator) -> None:
    code, _, body = await raw(
        sim,
        "POST",
        "/api/v1/namespaces/default/pods",
        body='{"apiVersion":"v1","kind":"Node","metadata":{"name":"x"}}',
    )
    assert code == 400
    assert body["message"].startswith('Node in version "v1" cannot be handled as a Pod:')


async def test_missing_required_fields_is_422(sim: Simulator) -> None:
    code, _, body = await raw(
        sim,
        "POST",
        "/api/v1/namespaces/default/pods",
        body='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{}}',
    )
    assert code == 422
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Pod "x" is invalid: spec.containers: Required value',
        "reason": "Invalid",
        "details": {
            "name": "x",
            "kind": "Pod",
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": "spec.containers",
                }
            ],
        },
        "code": 422,
    }
    code, _, body = await raw(
        sim,
        "POST",
        "/api/v1/namespaces/default/pods",
        body='{"apiVersion":"v1","kind":"Pod","metadata":{},"spec":{"containers":[{"name":"c"}]}}',
    )
    assert code == 422
    assert body["message"] == (
        'Pod "" is invalid: [metadata.name: Required value: name or generateName is required,'
        " spec.containers[0].image: Required value]"
    )


async def test_invalid_name_is_422(sim: Simulator) -> None:
    code, _, body = await raw(
        sim, "POST", "/api/v1/namespaces/default/pods", body=POD_JSON % "Bad_Name"
    )
    assert code == 422
    cause = body["details"]["causes"][0]
    assert cause["field"] == "metadata.name"
    assert cause["reason"] == "FieldValueInvalid"
    assert cause["message"].startswith('Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')


async def post_budget(sim: Simulator, spec: dict[str, Any]) -> tuple[int, Any]:
    """POST a PodDisruptionBudget ``p`` with ``spec``: the code and the body."""
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}}
    path = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
    code, _, body = await raw(sim, "POST", path, body=json.dumps(pdb | {"spec": spec}))
    return code, body


async def test_typed_validation_names_the_field(sim: Simulator) -> None:
    spec = {"minAvailable": 1, "unhealthyPodEvictionPolicy": "Sometimes"}
    code, body = await post_budget(sim, spec)
    assert code == 422
    assert body["reason"] == "Invalid"
    assert body["details"]["kind"] == "PodDisruptionBudget"
    assert body["details"]["group"] == "policy"
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "Sometimes": supported values: "AlwaysAllow",'
            ' "IfHealthyBudget"',
            "field": "spec.unhealthyPodEvictionPolicy",
        }
    ]
    assert body["message"].startswith('PodDisruptionBudget.policy "p" is invalid: ')


async def test_type_error_is_400(sim: Simulator) -> None:
    code, _, body = await raw(
        sim,
        "POST",
        "/api/v1/namespaces/default/pods",
        body='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},'
        '"spec":{"priority":"high","containers":[{"name":"c","image":"x"}]}}',
    )
    assert code == 400
    assert body["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go'
        " struct field PodSpec.spec.priority of type int"
    )


# (body change, the Go field path and type the decoder names: no list index, no map key)
TYPE_ERRORS = [
    ({"spec": {"containers": [{"name": "c", "image": "x", "args": [1]}]}},
     "number into Go struct field Container.spec.containers.args of type string"),
    ({"metadata": {"name": "x", "labels": {"app": 5}}},
     "number into Go struct field ObjectMeta.metadata.labels of type string"),
    ({"spec": {"containers": [{"name": "c", "image": "x"}], "hostNetwork": "yes"}},
     "string into Go struct field PodSpec.spec.hostNetwork of type bool"),
    ({"spec": {"containers": {"name": "c"}}},
     "object into Go struct field PodSpec.spec.containers of type []v1.Container"),
    # a generated name is decoded like any other (the typed conversion used to stop at the
    # missing name before it reached the spec)
    ({"metadata": {"generateName": "x-"}, "spec": {"priority": "high"}},
     "string into Go struct field PodSpec.spec.priority of type int"),
]  # fmt: skip


def _typed_pod(change: dict[str, Any]) -> dict[str, Any]:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}
    return pod | change


@pytest.mark.parametrize(("change", "detail"), TYPE_ERRORS, ids=lambda v: "")
async def test_a_value_of_the_wrong_type_is_gos_400_over_http_and_in_process(
    sim: Simulator, change: dict[str, Any], detail: str
) -> None:
    """Every field is decoded against the schema, not only those the scheduler reads (a pod's
    args, hostNetwork), and in-process writes decode as requests do."""
    message = f'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal {detail}'
    code, _, body = await raw(
        sim, "POST", "/api/v1/namespaces/default/pods", body=json.dumps(_typed_pod(change))
    )
    assert (code, body["message"]) == (400, message)
    pods = sim.scheme.for_storage("pods")
    with pytest.raises(StatusError) as err:
        sim.registry.create(pods, "default", _typed_pod(change))
    assert (err.value.code, err.value.message) == (400, message)
    code, _, body = await raw(sim, "GET", "/api/v1/namespaces/default/pods/x")
    assert code == 404


def _resources(**resources: dict[str, str]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]}}


R = "spec.containers[0].resources"
# (resources, kube 1.32's causes: ValidateContainerResourceRequirements)
RESOURCE_ERRORS = [
    (_resources(requests={"cpu": "-1", "memory": "-5Mi"}),
     [(f"{R}.requests[cpu]", 'Invalid value: "-1": must be greater than or equal to 0'),
      (f"{R}.requests[memory]", 'Invalid value: "-5Mi": must be greater than or equal to 0')]),
    (_resources(limits={"cpu": "-0.5"}),
     [(f"{R}.limits[cpu]", 'Invalid value: "-500m": must be greater than or equal to 0')]),
    (_resources(requests={"cpu": "2"}, limits={"cpu": "1000m"}),
     [(f"{R}.requests", 'Invalid value: "2": must be less than or equal to cpu limit of 1')]),
    (_resources(requests={"example.com/gpu": "1"}, limits={"example.com/gpu": "2"}),
     [(f"{R}.requests",
       'Invalid value: "1": must be equal to example.com/gpu limit of 2')]),
    (_resources(requests={"hugepages-2Mi": "2Mi"}),
     [(f"{R}.limits", "Required value: Limit must be set for non overcommitable resources")]),
    ({"spec": {"containers": [{"name": "c", "image": "x"}],
               "initContainers": [{"name": "i", "image": "x",
                                   "resources": {"requests": {"memory": "-1"}}}]}},
     [("spec.initContainers[0].resources.requests[memory]",
       'Invalid value: "-1": must be greater than or equal to 0')]),
]  # fmt: skip


@pytest.mark.parametrize(("change", "causes"), RESOURCE_ERRORS, ids=lambda v: "")
async def test_resource_quantities_are_validated_as_kube_does(
    sim: Simulator, change: dict[str, Any], causes: list[tuple[str, str]]
) -> None:
    """A negative quantity decodes (it is a quantity) and fails validation: a 422 naming the
    resource by its key, as do a request above its limit and an extended resource or hugepage
    request that is not exactly its limit — over HTTP and in process alike."""
    text = ", ".join(f"{f}: {m}" for f, m in causes)
    message = f'Pod "x" is invalid: {f"[{text}]" if len(causes) > 1 else text}'
    code, _, body = await raw(
        sim, "POST", "/api/v1/namespaces/default/pods", body=json.dumps(_typed_pod(change))
    )
    assert (code, body["reason"], body["message"]) == (422, "Invalid", message)
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == causes
    with pytest.raises(StatusError) as err:
        sim.registry.create(sim.scheme.for_storage("pods"), "default", _typed_pod(change))
    assert (err.value.code, err.value.message) == (422, message)
    assert sim.get("Pod", "default", "x") is None


async def test_requests_within_their_limits_are_stored(sim: Simulator) -> None:
    ok = _resources(
        requests={"cpu": "500m", "memory": "0", "example.com/gpu": "1"},
        limits={"cpu": "1", "example.com/gpu": "1"},
    )
    code, _, body = await raw(
        sim, "POST", "/api/v1/namespaces/default/pods", body=json.dumps(_typed_pod(ok))
    )
    assert code == 201, body


async def test_a_negative_budget_is_422(sim: Simulator) -> None:
    code, body = await post_budget(sim, {"minAvailable": -1})
    assert (code, body["message"]) == (
        422,
        'PodDisruptionBudget.policy "p" is invalid: spec.minAvailable: Invalid value: -1:'
        " must be greater than or equal to 0",
    )


async def test_decoding_comes_before_namespace_name_and_existence_checks(
    sim: Simulator,
) -> None:
    """Go decodes the body first: a type error is the answer even where the namespace does not
    exist (create) or the object and the URL disagree or nothing is stored (update)."""
    bad = json.dumps(_typed_pod({"spec": {"priority": "high"}}))
    for method, path in (
        ("POST", "/api/v1/namespaces/nowhere/pods"),
        ("PUT", "/api/v1/namespaces/default/pods/other-name"),
        ("PUT", "/api/v1/namespaces/nowhere/pods/x"),
    ):
        code, _, body = await raw(sim, method, path, body=bad)
        assert code == 400, (method, path, body)
        assert (
            "cannot unmarshal string into Go struct field PodSpec.spec.priority"
            in (body["message"])
        )


async def test_unknown_resource_and_group_are_404(sim: Simulator) -> None:
    for path in ("/api/v1/widgets", "/apis/nope.io/v1/things", "/api/v2/pods", "/nothing"):
        code, _, body = await raw(sim, "GET", path)
        assert code == 404, path
        assert body == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "the server could not find the requested resource",
            "reason": "NotFound",
            "details": {},
            "code": 404,
        }


async def test_method_not_allowed(sim: Simulator) -> None:
    code, _, body = await raw(sim, "POST", "/api/v1/pods", body=POD_JSON % "x")
    assert code == 405
    assert body["reason"] == "MethodNotAllowed"


async def test_unsupported_patch_type_is_415(sim: Simulator) -> None:
    code, _, body = await raw(
        sim,
        "PATCH",
        "/api/v1/namespaces/default/pods/web-0",
        body="{}",
        content_type="application/apply-patch+cbor",
    )
    assert code == 415
    assert body["message"] == (
        "the body of the request was in an unknown format - accepted media types include:"
        " application/json-patch+json, application/merge-patch+json,"
        " application/strategic-merge-patch+json, application/apply-patch+yaml"
    )


async def test_bad_patch_body_is_400(sim: Simulator) -> None:
    code, _, body = await raw(
        sim,
        "PATCH",
        "/api/v1/namespaces/default/pods/web-0",
        body="{x",
        content_type="application/merge-patch+json",
    )
    assert code == 400
    assert body["reason"] == "BadRequest"


async def test_bad_dry_run_value_is_422(sim: Simulator) -> None:
    code, _, body = await raw(
        sim, "POST", "/api/v1/namespaces/default/pods?dryRun=Some", body=POD_JSON % "x"
    )
    assert code == 422
    assert body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]:'
        ' supported values: "All"'
    )


async def test_dry_run_create_stores_nothing(sim: Simulator) -> None:
    code, _, body = await raw(
        sim, "POST", "/api/v1/namespaces/default/pods?dryRun=All", body=POD_JSON % "dry"
    )
    assert code == 201
    assert body["metadata"]["name"] == "dry"
    assert "resourceVersion" not in body["metadata"]
    assert sim.get("Pod", "default", "dry") is None


async def test_bad_query_integer_is_400(sim: Simulator) -> None:
    code, _, body = await raw(sim, "GET", "/api/v1/pods?limit=ten")
    assert code == 400
    assert body["message"] == 'strconv.ParseInt: parsing "ten": invalid syntax'


async def test_no_request_ever_gets_a_500(sim: Simulator) -> None:
    bodies = [
        "null",
        "[]",
        "1",
        '"s"',
        '{"metadata": 5}',
        '{"kind": 5}',
        '{"spec": "x"}',
        '{"metadata":{"name":"a","labels":"x"}}',
    ]
    for b in bodies:
        for method, path in (
            ("POST", "/api/v1/namespaces/default/pods"),
            ("PUT", "/api/v1/namespaces/default/pods/web-0"),
            ("PATCH", "/api/v1/namespaces/default/pods/web-0"),
            ("POST", "/api/v1/nodes"),
            ("DELETE", "/api/v1/namespaces/default/pods/web-1"),
        ):
            ctype = "application/merge-patch+json" if method == "PATCH" else "application/json"
            code, _, body = await raw(sim, method, path, body=b, content_type=ctype)
            assert code < 500, (method, path, b, body)
            if code >= 400:
                assert body["kind"] == "Status", (method, path, b)


async def test_a_write_over_3_mib_is_413_and_one_just_under_is_stored(sim: Simulator) -> None:
    def pod(name: str, size: int) -> str:
        head = POD_JSON % name
        args = '"args":["' + "x" * size + '"],'
        body = head.replace('"containers":[{', '"containers":[{' + args)
        return body

    limit = 3 * 1024 * 1024
    over = pod("big", limit)
    assert len(over.encode()) > limit
    code, _, body = await raw(sim, "POST", "/api/v1/namespaces/default/pods", body=over)
    assert code == 413
    assert body["reason"] == "RequestEntityTooLarge"
    assert body["message"] == f"Request entity too large: limit is {limit}"
    assert "details" not in body
    under = pod("fits", limit - 200)
    assert len(under.encode()) <= limit
    code, _, body = await raw(sim, "POST", "/api/v1/namespaces/default/pods", body=under)
    assert code == 201, body
    # a patch is a write too; a read is not bounded
    code, _, body = await raw(
        sim,
        "PATCH",
        "/api/v1/namespaces/default/pods/fits",
        body='{"metadata":{"annotations":{"a":"' + "y" * limit + '"}}}',
        content_type="application/merge-patch+json",
    )
    assert code == 413
    code, _, body = await raw(sim, "GET", "/api/v1/namespaces/default/pods/fits")
    assert code == 200 and len(body["spec"]["containers"][0]["args"][0]) == limit - 200
