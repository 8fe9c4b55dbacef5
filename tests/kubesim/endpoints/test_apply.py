"""Server-Side Apply over HTTP: ``PATCH`` with ``application/apply-patch+yaml``, its query
parameters (``fieldManager``, ``force``, ``dryRun``, ``fieldValidation``) and kube's answers,
and the manager every other write is recorded under."""

from __future__ import annotations

import json

from kubesim.sim import Simulator
from tests.support.api import raw

APPLY = "application/apply-patch+yaml"
PATH = "/api/v1/namespaces/default/configmaps/cfg"
YAML = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: "1"
"""


async def test_apply_needs_a_field_manager(sim: Simulator) -> None:
    code, _, body = await raw(sim, "PATCH", PATH, body=YAML, content_type=APPLY)
    assert code == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for'
        " apply patch"
    )
    assert body["details"] == {
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [
            {
                "reason": "FieldValueRequired",
                "message": "Required value: is required for apply patch",
                "field": "fieldManager",
            }
        ],
    }


async def test_apply_creates_then_changes_nothing_when_repeated(sim: Simulator) -> None:
    code, _, created = await raw(
        sim, "PATCH", PATH + "?fieldManager=me", body=YAML, content_type=APPLY
    )
    assert code == 201
    assert created["data"] == {"a": "1"}
    [entry] = created["metadata"]["managedFields"]
    assert entry["manager"] == "me"
    assert entry["operation"] == "Apply"
    code, _, again = await raw(
        sim, "PATCH", PATH + "?fieldManager=me", body=YAML, content_type=APPLY
    )
    assert code == 200
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    # JSON is YAML too
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "2"}}
    code, _, changed = await raw(
        sim, "PATCH", PATH + "?fieldManager=me", body=json.dumps(doc), content_type=APPLY
    )
    assert code == 200
    assert changed["data"] == {"a": "2"}


async def test_conflict_then_force(sim: Simulator) -> None:
    await raw(sim, "PATCH", PATH + "?fieldManager=me", body=YAML, content_type=APPLY)
    other = YAML.replace('"1"', '"9"')
    code, _, body = await raw(
        sim, "PATCH", PATH + "?fieldManager=other", body=other, content_type=APPLY
    )
    assert code == 409
    assert body["reason"] == "Conflict"
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "me": .data.a'
    assert body["details"] == {
        "causes": [
            {"reason": "FieldManagerConflict", "message": 'conflict with "me"', "field": ".data.a"}
        ]
    }
    code, _, body = await raw(
        sim, "PATCH", PATH + "?fieldManager=other&force=true", body=other, content_type=APPLY
    )
    assert code == 200
    assert body["data"] == {"a": "9"}
    assert [e["manager"] for e in body["metadata"]["managedFields"]] == ["other"]


async def test_dry_run_stores_nothing(sim: Simulator) -> None:
    code, _, body = await raw(
        sim, "PATCH", PATH + "?fieldManager=me&dryRun=All", body=YAML, content_type=APPLY
    )
    assert code == 201
    assert body["data"] == {"a": "1"}
    code, _, _ = await raw(sim, "GET", PATH)
    assert code == 404


async def test_field_validation_strict_refuses_unknown_fields(sim: Simulator) -> None:
    bad = YAML + "bogus: 1\n"
    code, _, body = await raw(
        sim,
        "PATCH",
        PATH + "?fieldManager=me&fieldValidation=Strict",
        body=bad,
        content_type=APPLY,
    )
    assert code == 400
    assert body["message"] == 'strict decoding error: unknown field "bogus"'


async def test_force_is_for_apply_only(sim: Simulator) -> None:
    code, _, body = await raw(
        sim,
        "PATCH",
        "/api/v1/namespaces/default/pods/web-0?force=true",
        body="{}",
        content_type="application/merge-patch+json",
    )
    assert code == 422
    assert body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for'
        " non-apply patch"
    )


async def test_updates_are_recorded_under_the_user_agent_or_field_manager(sim: Simulator) -> None:
    patch = '{"metadata":{"labels":{"x":"y"}}}'
    code, _, body = await raw(
        sim,
        "PATCH",
        "/api/v1/namespaces/default/pods/web-0",
        body=patch,
        content_type="application/merge-patch+json",
    )
    assert code == 200
    # aiohttp's user agent is "Python/3.x aiohttp/3.x": its first segment is the manager
    [entry] = body["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("Python", "Update")
    assert entry["fieldsV1"] == {"f:metadata": {"f:labels": {"f:x": {}}}}
    code, _, body = await raw(
        sim,
        "PATCH",
        "/api/v1/namespaces/default/pods/web-0?fieldManager=tool",
        body='{"metadata":{"labels":{"x":"z"}}}',
        content_type="application/merge-patch+json",
    )
    assert [(e["manager"], e["fieldsV1"]) for e in body["metadata"]["managedFields"]] == [
        ("tool", {"f:metadata": {"f:labels": {"f:x": {}}}})
    ]


async def test_apply_to_the_status_subresource(sim: Simulator) -> None:
    status = """
apiVersion: v1
kind: Pod
metadata:
  name: web-0
status:
  conditions:
  - type: Example
    status: "True"
"""
    code, _, body = await raw(
        sim,
        "PATCH",
        "/api/v1/namespaces/default/pods/web-0/status?fieldManager=probe",
        body=status,
        content_type=APPLY,
    )
    assert code == 200, body
    assert {"type": "Example", "status": "True"} in body["status"]["conditions"]
    [entry] = [e for e in body["metadata"]["managedFields"] if e["manager"] == "probe"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {
        "f:status": {
            "f:conditions": {'k:{"type":"Example"}': {".": {}, "f:status": {}, "f:type": {}}}
        }
    }


DEPLOY = "/apis/apps/v1/namespaces/default/deployments/shop"
DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: %d
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec: {containers: [{name: shop, image: nginx}]}
"""


async def test_apply_to_scale_owns_the_workloads_replicas(sim: Simulator) -> None:
    code, _, _ = await raw(
        sim, "PATCH", DEPLOY + "?fieldManager=me", body=DEPLOYMENT % 2, content_type=APPLY
    )
    assert code == 201
    scale = "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: shop}\nspec: {replicas: 4}\n"
    code, _, body = await raw(
        sim, "PATCH", DEPLOY + "/scale?fieldManager=hpa", body=scale, content_type=APPLY
    )
    assert code == 409  # "me" set the replicas
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "me": .spec.replicas'
    code, _, body = await raw(
        sim, "PATCH", DEPLOY + "/scale?fieldManager=hpa&force=true", body=scale, content_type=APPLY
    )
    assert code == 200
    assert (body["kind"], body["spec"]) == ("Scale", {"replicas": 4})
    code, _, body = await raw(sim, "GET", DEPLOY)
    [hpa] = [e for e in body["metadata"]["managedFields"] if e["manager"] == "hpa"]
    assert (hpa["operation"], hpa["subresource"]) == ("Apply", "scale")
    assert hpa["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    code, _, body = await raw(
        sim, "PATCH", DEPLOY + "?fieldManager=me", body=DEPLOYMENT % 3, content_type=APPLY
    )
    assert code == 409
    assert body["message"] == (
        'Apply failed with 1 conflict: conflict with "hpa" with subresource "scale": .spec.replicas'
    )


async def test_managed_fields_are_cleared_as_the_documentation_shows(sim: Simulator) -> None:
    await raw(sim, "PATCH", PATH + "?fieldManager=me", body=YAML, content_type=APPLY)
    clear = '[{"op": "replace", "path": "/metadata/managedFields", "value": [{}]}]'
    code, _, body = await raw(
        sim, "PATCH", PATH, body=clear, content_type="application/json-patch+json"
    )
    assert code == 200
    assert "managedFields" not in body["metadata"]
    assert body["data"] == {"a": "1"}


async def test_an_apply_configuration_is_converted_by_apply_not_decoded(sim: Simulator) -> None:
    # An apply configuration is never decoded into the Go type: kube-apiserver (1.32) turns it
    # into a typed object by Server-Side Apply's rules and answers that conversion's 500
    # (a container without its key, here), where a create of the same object would be the
    # decoder's 400 for spec.priority.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"priority": "high", "containers": [{"image": "x"}]},
    }
    pods = "/api/v1/namespaces/default/pods"
    code, _, body = await raw(
        sim, "PATCH", pods + "/p?fieldManager=me", body=json.dumps(pod), content_type=APPLY
    )
    assert code == 500, body
    assert body["message"] == (
        "failed to create typed patch object (v1, Kind=Pod): .spec.containers: element 0:"
        ' associative list with keys has an element that omits key field "name" (and'
        " doesn't have default value)"
    )
    code, _, body = await raw(sim, "POST", pods, body=json.dumps(pod))
    assert (code, body["message"]) == (
        400,
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into'
        " Go struct field PodSpec.spec.priority of type int",
    )
