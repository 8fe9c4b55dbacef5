"""A minimal OpenAPI endpoint: what kubectl needs to use server-side field validation.

kubectl 1.27+ decides how to validate (``--validate=strict`` by default) by asking
``/openapi/v3`` whether the PATCH operation of the object's group/version/kind declares the
``fieldValidation`` query parameter (``queryParamVerifierV3``); if it cannot tell, it downloads
the OpenAPI v2 schema — protobuf only — for client-side validation and fails without it. So
kubesim publishes ``openapi_v3_group_version`` and an empty ``openapi_v2_protobuf``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kubesim.core.scheme import ResourceType, Scheme

__all__ = [
    "openapi_v2_protobuf",
    "openapi_v3_discovery",
    "openapi_v3_group_version",
]


def _pb_string(field: int, text: str) -> bytes:
    data = text.encode()
    assert len(data) < 128
    return bytes([(field << 3) | 2, len(data)]) + data


def openapi_v2_protobuf(version: str = "v1.32.0-kubesim") -> bytes:
    """``openapi_v2.Document{swagger: "2.0", info: {title: "Kubernetes", version}}``.

    kubectl 1.27 and 1.28 download ``/openapi/v2`` (protobuf only,
    ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``) before validating, and
    fail if it is missing. This valid but empty gnostic document (swagger version and info, no
    definitions) makes client-side validation find no schema for the kind and accept the
    object, leaving validation to the server, as with a CRD without a schema."""
    info = _pb_string(1, "Kubernetes") + _pb_string(2, version)
    return _pb_string(1, "2.0") + bytes([(2 << 3) | 2, len(info)]) + info


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}


def _ops(rt: ResourceType, *, item: bool) -> dict[str, Any]:
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    common = [_param("dryRun"), _param("fieldManager")]
    write = [*common, _param("fieldValidation")]
    body = {"content": {"application/json": {"schema": {"type": "object"}}}}
    if item:
        return {
            "get": {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "get"},
            "put": {
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "put",
                "parameters": write,
                "requestBody": body,
            },
            "patch": {
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "patch",
                "parameters": [*write, _param("force")],
                "requestBody": {
                    "content": {
                        "application/json-patch+json": {"schema": {"type": "object"}},
                        "application/merge-patch+json": {"schema": {"type": "object"}},
                        "application/apply-patch+yaml": {"schema": {"type": "object"}},
                    }
                },
            },
            "delete": {
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "delete",
                "parameters": common,
            },
        }
    return {
        "get": {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "list"},
        "post": {
            "x-kubernetes-group-version-kind": gvk,
            "x-kubernetes-action": "post",
            "parameters": write,
            "requestBody": body,
        },
    }


def openapi_v3_group_version(scheme: Scheme, group: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3 document of a group/version: paths carrying each resource's operations
    tagged with ``x-kubernetes-group-version-kind`` and the ``fieldValidation`` parameter, and
    no schemas. The PATCH operations do not offer ``application/strategic-merge-patch+json``,
    so ``kubectl apply`` computes its three-way strategic merge patch from its compiled-in
    types (the same patch metadata kube-apiserver uses) instead of from schemas kubesim does
    not have."""
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths: dict[str, Any] = {}
    for rt in scheme.in_group_version(group, version):
        base = (
            f"{prefix}/namespaces/{{namespace}}/{rt.plural}"
            if rt.namespaced
            else (f"{prefix}/{rt.plural}")
        )
        paths[base] = _ops(rt, item=False)
        paths[f"{base}/{{name}}"] = _ops(rt, item=True)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0-kubesim"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def openapi_v3_discovery(scheme: Scheme) -> dict[str, Any]:
    gvs = [("", "v1")] + [(g, v) for g, vs in scheme.groups() for v in vs]
    paths = {}
    for group, version in gvs:
        doc = openapi_v3_group_version(scheme, group, version)
        digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:128]
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest.upper()}"}
    return {"paths": paths}
