"""ValidatingAdmissionPolicies and their bindings written to a kubesim over HTTP, as the admission
tests do: the API paths, a policy and a binding built, both installed, a request sent as a user."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from kubesim.sim import Simulator

POLICY_API = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"

BINDING_API = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"

NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"


async def call(
    sim: Simulator,
    method: str,
    path: str,
    *,
    token: str | None = None,
    body: Any = None,
    content_type: str = "application/json",
) -> tuple[int, Any, list[str]]:
    """(status, parsed body, Warning headers) of one request (the admin's unless ``token``)."""
    headers = {
        "Authorization": f"Bearer {token or sim.admin_token}",
        "Content-Type": content_type,
    }
    data = None if body is None else json.dumps(body)
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, sim.url + path, headers=headers, data=data) as resp,
    ):
        return resp.status, await resp.json(content_type=None), resp.headers.getall("Warning", [])


def policy(
    name: str,
    validations: list[dict[str, Any]],
    *,
    rules: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    rules = rules or [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE", "DELETE"],
            "resources": ["pods"],
        }
    ]
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": rules}, "validations": validations, **spec},
    }


def binding(
    name: str, policy_name: str, *, actions: tuple[str, ...] = ("Deny",), **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy_name, "validationActions": list(actions), **spec},
    }


async def install(sim: Simulator, pol: dict[str, Any], bind: dict[str, Any]) -> None:
    code, body, _ = await call(sim, "POST", POLICY_API, body=pol)
    assert code == 201, body
    code, body, _ = await call(sim, "POST", BINDING_API, body=bind)
    assert code == 201, body


def pod(name: str, *, node: str = "", labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


PODS = "/api/v1/namespaces/default/pods"

PARAM_POLICY_RULES = [
    {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE"],
        "resources": ["pods"],
    }
]
