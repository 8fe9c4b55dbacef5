"""ValidatingAdmissionPolicies over HTTP against a running kubesim: kube's denial bodies, the
requests and subresources they see, params, matchConditions, failurePolicy, validation
actions, and the 422s for policies and bindings that kube-apiserver would not store."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

import kubesim
from kubesim.controllers import FROZEN
from kubesim.core.attributes import UserInfo
from kubesim.plugins.admission import policies
from kubesim.sim import Simulator
from tests.support.api import STATE

POLICY_API = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDING_API = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
AGENT = "system:serviceaccount:kube-system:eviction-agent"


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01, disabled_controllers=FROZEN) as s:
        yield s


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


async def test_denial_is_kube_apiserver_body(sim: Simulator) -> None:
    await install(
        sim,
        policy("no-bad", [{"expression": "object.metadata.name != 'bad'"}]),
        binding("no-bad-b", "no-bad"),
    )
    code, body, _ = await call(sim, "POST", PODS, body=pod("bad"))
    message = (
        "ValidatingAdmissionPolicy 'no-bad' with binding 'no-bad-b' denied request: failed"
        " expression: object.metadata.name != 'bad'"
    )
    assert code == 422
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods "bad" is forbidden: {message}',
        "reason": "Invalid",
        "details": {"name": "bad", "kind": "pods", "causes": [{"message": message}]},
        "code": 422,
    }
    assert sim.get("Pod", "default", "bad") is None
    code, _, _ = await call(sim, "POST", PODS, body=pod("good"))
    assert code == 201


async def test_a_denied_create_of_a_taken_name_is_denied_not_a_conflict(sim: Simulator) -> None:
    """kube-apiserver runs validating admission before the storage finds the name taken."""
    code, _, _ = await call(sim, "POST", PODS, body=pod("taken", labels={"tier": "web"}))
    assert code == 201
    await install(
        sim,
        policy("labelled", [{"expression": "has(object.metadata.labels.team)"}]),
        binding("labelled-b", "labelled"),
    )
    code, body, _ = await call(sim, "POST", PODS, body=pod("taken"))
    assert (code, body["reason"]) == (422, "Invalid"), body
    code, body, _ = await call(sim, "POST", PODS, body=pod("taken", labels={"team": "a"}))
    assert (code, body["reason"]) == (409, "AlreadyExists"), body


async def test_message_message_expression_and_reason(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "named",
            [
                {
                    "expression": "object.metadata.name.startsWith('ok-')",
                    "messageExpression": "'name ' + object.metadata.name + ' lacks ok-'",
                    "message": "unused when messageExpression works",
                    "reason": "Forbidden",
                },
                {"expression": "has(object.metadata.labels)", "message": "  labels please  "},
            ],
        ),
        binding("named-b", "named"),
    )
    code, body, _ = await call(sim, "POST", PODS, body=pod("x", labels={"a": "b"}))
    assert (code, body["reason"]) == (403, "Forbidden")
    assert body["message"].endswith("denied request: name x lacks ok-")
    nolabels = pod("ok-1")
    del nolabels["metadata"]["labels"]
    code, body, _ = await call(sim, "POST", PODS, body=nolabels)
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"].endswith("denied request: labels please")


async def test_message_expression_error_falls_back_to_message(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "fallback",
            [{"expression": "false", "messageExpression": "object.nope", "message": "plain"}],
        ),
        binding("fallback-b", "fallback"),
    )
    code, body, _ = await call(sim, "POST", PODS, body=pod("p"))
    assert code == 422
    assert body["message"].endswith("denied request: plain")


async def test_update_sees_old_and_new_object(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "keep-app",
            [
                {
                    "expression": "oldObject == null || object.metadata.labels['app'] =="
                    " oldObject.metadata.labels['app']",
                    "message": "app label is immutable",
                }
            ],
        ),
        binding("keep-app-b", "keep-app"),
    )
    code, body, _ = await call(
        sim,
        "PATCH",
        f"{PODS}/web-0",
        body={"metadata": {"labels": {"app": "other"}}},
        content_type="application/merge-patch+json",
    )
    assert code == 422, body
    assert body["message"] == (
        "pods \"web-0\" is forbidden: ValidatingAdmissionPolicy 'keep-app' with binding"
        " 'keep-app-b' denied request: app label is immutable"
    )
    code, _, _ = await call(
        sim,
        "PATCH",
        f"{PODS}/web-0",
        body={"metadata": {"labels": {"tier": "x"}}},
        content_type="application/merge-patch+json",
    )
    assert code == 200


async def test_delete_has_null_object(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "delete-on-node-2",
            [
                {
                    "expression": "request.operation != 'DELETE' || (object == null &&"
                    " oldObject.spec.nodeName == 'node-2')"
                }
            ],
        ),
        binding("d-b", "delete-on-node-2"),
    )
    code, body, _ = await call(sim, "DELETE", f"{PODS}/web-0")
    assert code == 422
    assert "denied request: failed expression" in body["message"]
    assert sim.get("Pod", "default", "web-0") is not None
    code, _, _ = await call(sim, "DELETE", f"{PODS}/web-1")
    assert code == 200


async def test_status_subresource_is_matched_by_its_own_rule(sim: Simulator) -> None:
    rules = [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["UPDATE"],
            "resources": ["pods/status", "nodes/status"],
        }
    ]
    await install(
        sim,
        policy(
            "status-only",
            [
                {
                    "expression": "request.subResource == 'status' && request.kind.kind != 'Pod'",
                    "messageExpression": "'status of ' + request.kind.kind + ' ' + request.name",
                }
            ],
            rules=rules,
        ),
        binding("status-only-b", "status-only"),
    )
    patch = {"metadata": {"labels": {"x": "y"}}}
    code, _, _ = await call(
        sim, "PATCH", f"{PODS}/web-0", body=patch, content_type="application/merge-patch+json"
    )
    assert code == 200  # the main resource is not pods/status
    code, body, _ = await call(
        sim,
        "PATCH",
        f"{PODS}/web-0/status",
        body={"status": {"message": "m"}},
        content_type="application/merge-patch+json",
    )
    assert code == 422
    assert body["message"].endswith("denied request: status of Pod web-0")
    code, _, _ = await call(
        sim,
        "PATCH",
        "/api/v1/nodes/node-1/status",
        body={"status": {"phase": "Running"}},
        content_type="application/merge-patch+json",
    )
    assert code == 200


async def test_eviction_policy_sees_the_eviction(sim: Simulator) -> None:
    rules = [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["pods/eviction"],
        }
    ]
    await install(
        sim,
        policy(
            "evictions",
            [
                {
                    "expression": "object.kind == 'Eviction' && request.kind.group == 'policy'"
                    " && !has(object.spec) && object.metadata.name != 'web-0'",
                    "messageExpression": "'no evicting ' + object.metadata.name + ' (' +"
                    " request.resource.resource + '/' + request.subResource + ')'",
                }
            ],
            rules=rules,
        ),
        binding("evictions-b", "evictions"),
    )
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-0", "namespace": "default"},
    }
    code, body, _ = await call(sim, "POST", f"{PODS}/web-0/eviction", body=eviction)
    assert code == 422, body
    assert body["message"] == (
        "pods \"web-0\" is forbidden: ValidatingAdmissionPolicy 'evictions' with binding"
        " 'evictions-b' denied request: no evicting web-0 (pods/eviction)"
    )
    assert sim.get("Pod", "default", "web-0")["metadata"].get("deletionTimestamp") is None  # type: ignore[index]
    code, _, _ = await call(sim, "DELETE", f"{PODS}/web-0")
    assert code == 200  # pods/eviction does not cover DELETE on pods


PARAM_POLICY_RULES = [
    {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE"],
        "resources": ["pods"],
    }
]


async def test_params_from_a_config_map(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "max-containers",
            [
                {
                    "expression": "size(object.spec.containers) <= int(params.data.max)",
                    "messageExpression": "'at most ' + params.data.max + ' containers'",
                }
            ],
            rules=PARAM_POLICY_RULES,
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        ),
        binding(
            "max-b",
            "max-containers",
            paramRef={"name": "limits", "parameterNotFoundAction": "Deny"},
        ),
    )
    code, body, _ = await call(sim, "POST", PODS, body=pod("p1"))
    assert code == 422
    assert body["message"].endswith(
        "denied request: failed to configure binding: no params found for policy binding with"
        " `Deny` parameterNotFoundAction"
    )
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "limits"},
        "data": {"max": "1"},
    }
    code, _, _ = await call(sim, "POST", "/api/v1/namespaces/default/configmaps", body=cm)
    assert code == 201
    code, _, _ = await call(sim, "POST", PODS, body=pod("p1"))
    assert code == 201
    two = pod("p2")
    two["spec"]["containers"].append({"name": "d", "image": "busybox"})
    code, body, _ = await call(sim, "POST", PODS, body=two)
    assert code == 422
    assert body["message"].endswith("denied request: at most 1 containers")
    # In another namespace the param (namespaced, from the request's namespace) is missing.
    prod = pod("p3")
    code, body, _ = await call(sim, "POST", "/api/v1/namespaces/prod/pods", body=prod)
    assert code == 422 and "no params found" in body["message"]


async def test_params_by_selector_and_allow_when_missing(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "denylist",
            [{"expression": "params.data.name != object.metadata.name"}],
            rules=PARAM_POLICY_RULES,
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        ),
        binding(
            "denylist-b",
            "denylist",
            paramRef={
                "selector": {"matchLabels": {"role": "denylist"}},
                "namespace": "kube-system",
                "parameterNotFoundAction": "Allow",
            },
        ),
    )
    code, _, _ = await call(sim, "POST", PODS, body=pod("a"))
    assert code == 201  # no params, Allow: nothing to evaluate
    for name, denied in (("d1", "x"), ("d2", "y")):
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"role": "denylist"}},
            "data": {"name": denied},
        }
        code, _, _ = await call(sim, "POST", "/api/v1/namespaces/kube-system/configmaps", body=cm)
        assert code == 201
    for name in ("x", "y"):
        code, _, _ = await call(sim, "POST", PODS, body=pod(name))
        assert code == 422, name  # evaluated once per selected param
    code, _, _ = await call(sim, "POST", PODS, body=pod("z"))
    assert code == 201


async def test_match_conditions_and_failure_policy(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "only-labelled",
            [{"expression": "object.metadata.labels.team == 'a'"}],
            rules=PARAM_POLICY_RULES,
            matchConditions=[
                {"name": "has-team", "expression": "has(object.metadata.labels.team)"},
                {
                    "name": "not-system",
                    "expression": "!request.userInfo.username.startsWith('sys')",
                },
            ],
        ),
        binding("only-labelled-b", "only-labelled"),
    )
    code, _, _ = await call(sim, "POST", PODS, body=pod("no-team"))
    assert code == 201  # has-team false: the policy does not apply
    code, _, _ = await call(sim, "POST", PODS, body=pod("b", labels={"team": "b"}))
    assert code == 422
    token = sim.tokens.add("sys", UserInfo("system:someone"))
    code, _, _ = await call(sim, "POST", PODS, token=token, body=pod("c", labels={"team": "b"}))
    assert code == 201  # not-system false


@pytest.mark.parametrize(("failure_policy", "code"), [("Fail", 422), (None, 422), ("Ignore", 201)])
async def test_runtime_errors_follow_failure_policy(
    sim: Simulator, failure_policy: str | None, code: int
) -> None:
    extra = {"failurePolicy": failure_policy} if failure_policy else {}
    await install(
        sim,
        policy(
            "crashy",
            [{"expression": "1 / (size(object.spec.containers) - 1) == 1"}],
            rules=PARAM_POLICY_RULES,
            **extra,
        ),
        binding("crashy-b", "crashy"),
    )
    got, body, _ = await call(sim, "POST", PODS, body=pod("p"))
    assert got == code
    if code == 422:
        assert body["message"] == (
            "pods \"p\" is forbidden: ValidatingAdmissionPolicy 'crashy' with binding 'crashy-b'"
            " denied request: expression '1 / (size(object.spec.containers) - 1) == 1' resulted"
            " in error: division by zero"
        )
    stored = sim.get("ValidatingAdmissionPolicy", None, "crashy")
    assert stored is not None and stored["spec"]["failurePolicy"] == (failure_policy or "Fail")


async def test_match_condition_error_follows_failure_policy(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "mc-error",
            [{"expression": "true"}],
            rules=PARAM_POLICY_RULES,
            matchConditions=[{"name": "boom", "expression": "object.spec.nope == 'x'"}],
        ),
        binding("mc-error-b", "mc-error"),
    )
    code, body, _ = await call(sim, "POST", PODS, body=pod("p"))
    assert code == 422
    assert body["message"].endswith(
        "denied request: expression 'object.spec.nope == 'x'' resulted in error: no such key: nope"
    )


async def test_warn_and_audit_actions(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "warned", [{"expression": "false", "message": "think twice"}], rules=PARAM_POLICY_RULES
        ),
        binding("warned-b", "warned", actions=("Warn", "Audit")),
    )
    code, _, warnings = await call(sim, "POST", PODS, body=pod("p"))
    assert code == 201
    assert warnings == [
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'warned' with binding"
        " 'warned-b': think twice\""
    ]
    [record] = sim.requests.filter(method="POST", path=PODS)
    audit = json.loads(
        record.audit_annotations["validation.policy.admission.k8s.io/validation_failure"]
    )
    assert audit == [
        {
            "message": "think twice",
            "policy": "warned",
            "binding": "warned-b",
            "expressionIndex": 0,
            "validationActions": ["Warn", "Audit"],
        }
    ]


async def test_variables_are_evaluated_in_order_and_namespace_object(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "vars",
            [
                {
                    "expression": "variables.isProd == false || variables.replicas <= 0",
                    "messageExpression": "'no pods in ' + namespaceObject.metadata.name",
                }
            ],
            rules=PARAM_POLICY_RULES,
            variables=[
                {"name": "ns", "expression": "namespaceObject.metadata.name"},
                {"name": "isProd", "expression": "variables.ns == 'prod'"},
                {"name": "replicas", "expression": "size(object.spec.containers)"},
            ],
        ),
        binding("vars-b", "vars"),
    )
    code, _, _ = await call(sim, "POST", PODS, body=pod("ok"))
    assert code == 201
    code, body, _ = await call(sim, "POST", "/api/v1/namespaces/prod/pods", body=pod("no"))
    assert code == 422
    assert body["message"].endswith("denied request: no pods in prod")


async def test_variables_are_lazy_and_macros_bind_their_variable(sim: Simulator) -> None:
    """A variable is evaluated when first read (kube's ``cel/lazy``): one that would fail
    denies only the request whose expression reads it. A macro's iteration variable
    (``c`` below) is bound by the macro, not an undeclared reference."""
    reads_bad = "has(object.metadata.labels) && 'probe' in object.metadata.labels"
    await install(
        sim,
        policy(
            "lazy",
            [
                {
                    "expression": f"{reads_bad} ? variables.bad : variables.images.all("
                    "i, i != 'forbidden')"
                }
            ],
            rules=PARAM_POLICY_RULES,
            variables=[
                {"name": "bad", "expression": "object.spec.nope == 1"},
                {"name": "images", "expression": "object.spec.containers.map(c, c.image)"},
            ],
        ),
        binding("lazy-b", "lazy"),
    )
    code, body, _ = await call(sim, "POST", PODS, body=pod("ok"))
    assert code == 201, body
    forbidden = pod("no")
    forbidden["spec"]["containers"][0]["image"] = "forbidden"
    code, body, _ = await call(sim, "POST", PODS, body=forbidden)
    assert code == 422
    assert body["message"].endswith(
        "denied request: failed expression: "
        + (f"{reads_bad} ? variables.bad : variables.images.all(i, i != 'forbidden')")
    )
    code, body, _ = await call(sim, "POST", PODS, body=pod("probe", labels={"probe": "1"}))
    assert code == 422
    assert body["message"].endswith(
        'resulted in error: composited variable "bad" fails to evaluate: no such key: nope'
    )


async def test_binding_match_resources_and_policy_name(sim: Simulator) -> None:
    await install(
        sim,
        policy("deny-all", [{"expression": "false"}], rules=PARAM_POLICY_RULES),
        binding(
            "prod-only",
            "deny-all",
            matchResources={
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "prod"}}
            },
        ),
    )
    code, _, _ = await call(sim, "POST", PODS, body=pod("a"))
    assert code == 201
    code, _, _ = await call(sim, "POST", "/api/v1/namespaces/prod/pods", body=pod("a"))
    assert code == 422
    # A binding naming a policy that does not exist does nothing.
    code, _, _ = await call(sim, "POST", BINDING_API, body=binding("orphan", "missing"))
    assert code == 201
    code, _, _ = await call(sim, "POST", PODS, body=pod("b"))
    assert code == 201


async def test_object_selector_and_exclude_rules(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "guarded",
            [{"expression": "false"}],
            rules=PARAM_POLICY_RULES,
            matchConstraints={
                "resourceRules": PARAM_POLICY_RULES,
                "objectSelector": {"matchLabels": {"guard": "yes"}},
                "excludeResourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["*"],
                        "resources": ["pods"],
                        "resourceNames": ["exempt"],
                    }
                ],
            },
        ),
        binding("guarded-b", "guarded"),
    )
    code, _, _ = await call(sim, "POST", PODS, body=pod("free"))
    assert code == 201
    code, _, _ = await call(sim, "POST", PODS, body=pod("held", labels={"guard": "yes"}))
    assert code == 422
    code, _, _ = await call(sim, "POST", PODS, body=pod("exempt", labels={"guard": "yes"}))
    assert code == 201


# --- the project's own pattern: an agent confined to its node ---------------------------------

CONFINE = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "eviction-agent-own-node"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["DELETE"],
                    "resources": ["pods"],
                },
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["UPDATE"],
                    "resources": ["pods/status", "nodes", "nodes/status"],
                },
            ]
        },
        "matchConditions": [
            {"name": "agent", "expression": f"request.userInfo.username == '{AGENT}'"}
        ],
        "variables": [
            {
                "name": "node",
                "expression": f"has(request.userInfo.extra) && '{NODE_NAME_EXTRA}' in"
                f" request.userInfo.extra ? request.userInfo.extra['{NODE_NAME_EXTRA}'][0] : ''",
            }
        ],
        "validations": [
            {
                "expression": "variables.node != ''",
                "message": "the agent's token carries no node (bind it to its pod)",
                "reason": "Forbidden",
            },
            {
                "expression": "request.resource.resource != 'pods' || oldObject.spec.nodeName =="
                " variables.node",
                "messageExpression": "'pod ' + oldObject.metadata.name + ' is not on node ' +"
                " variables.node",
                "reason": "Forbidden",
            },
            {
                "expression": "request.resource.resource != 'nodes' || request.name =="
                " variables.node",
                "messageExpression": "'node ' + request.name + ' is not ' + variables.node",
                "reason": "Forbidden",
            },
        ],
    },
}


async def test_agent_confined_to_its_node(sim: Simulator) -> None:
    await install(sim, CONFINE, binding("eviction-agent-own-node", "eviction-agent-own-node"))
    agent = sim.tokens.add(
        "agent",
        UserInfo(AGENT, groups=("system:serviceaccounts",), extra={NODE_NAME_EXTRA: ("node-1",)}),
    )
    bare = sim.tokens.add("bare", UserInfo(AGENT, groups=("system:serviceaccounts",)))
    merge = "application/merge-patch+json"
    # web-0 and db-0 are on node-1, web-1 on node-2.
    code, body, _ = await call(sim, "DELETE", f"{PODS}/web-1", token=agent)
    assert code == 403, body
    assert body["message"] == (
        "pods \"web-1\" is forbidden: ValidatingAdmissionPolicy 'eviction-agent-own-node' with"
        " binding 'eviction-agent-own-node' denied request: pod web-1 is not on node node-1"
    )
    code, _, _ = await call(
        sim, "PATCH", f"{PODS}/web-1/status", token=agent, body={"status": {}}, content_type=merge
    )
    assert code == 403
    code, body, _ = await call(
        sim,
        "PATCH",
        "/api/v1/nodes/node-2",
        token=agent,
        body={"spec": {"unschedulable": True}},
        content_type=merge,
    )
    assert (code, body["details"]["kind"]) == (403, "nodes")
    assert body["message"].endswith("denied request: node node-2 is not node-1")
    code, _, _ = await call(
        sim,
        "PATCH",
        "/api/v1/nodes/node-2/status",
        token=agent,
        body={"status": {"phase": "x"}},
        content_type=merge,
    )
    assert code == 403
    # Its own node and pods: allowed.
    for path, patch in (
        ("/api/v1/nodes/node-1", {"spec": {"unschedulable": True}}),
        ("/api/v1/nodes/node-1/status", {"status": {"phase": "Running"}}),
        (f"{PODS}/web-0/status", {"status": {"message": "evicting"}}),
    ):
        code, body, _ = await call(sim, "PATCH", path, token=agent, body=patch, content_type=merge)
        assert code == 200, (path, body)
    code, _, _ = await call(sim, "DELETE", f"{PODS}/web-0", token=agent)
    assert code == 200
    # A token without the node extra may do none of it.
    code, body, _ = await call(sim, "DELETE", "/api/v1/namespaces/prod/pods/db-0", token=bare)
    assert code == 403
    assert body["message"].endswith(
        "denied request: the agent's token carries no node (bind it to its pod)"
    )
    # Other users are not matched (matchConditions).
    code, _, _ = await call(sim, "DELETE", f"{PODS}/web-1")
    assert code == 200


# --- writes of the policy kinds -----------------------------------------------------------------


async def test_bad_cel_is_422_naming_field_and_expression(sim: Simulator) -> None:
    bad = policy("bad-cel", [{"expression": "object.spec.("}])
    code, body, _ = await call(sim, "POST", POLICY_API, body=bad)
    detail = (
        'Invalid value: "object.spec.(": compilation failed: ERROR: <input>:1:13: Syntax error:'
        " no viable alternative at input '.('\n | object.spec.(\n | ............^"
    )
    assert code == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        'ValidatingAdmissionPolicy.admissionregistration.k8s.io "bad-cel" is invalid:'
        f" spec.validations[0].expression: {detail}"
    )
    assert body["details"] == {
        "name": "bad-cel",
        "group": "admissionregistration.k8s.io",
        "kind": "ValidatingAdmissionPolicy",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": detail,
                "field": "spec.validations[0].expression",
            }
        ],
    }
    assert sim.get("ValidatingAdmissionPolicy", None, "bad-cel") is None


async def test_undeclared_params_and_bad_enums_are_422(sim: Simulator) -> None:
    bad = policy(
        "bad",
        [{"expression": "params.x == 1", "reason": "Teapot"}],
        failurePolicy="Sometimes",
        rules=[
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "PATCH"],
                "resources": ["pods"],
            }
        ],
    )
    code, body, _ = await call(sim, "POST", POLICY_API, body=bad)
    assert code == 422
    fields = {c["field"]: c["message"] for c in body["details"]["causes"]}
    assert fields["spec.failurePolicy"] == (
        'Unsupported value: "Sometimes": supported values: "Fail", "Ignore"'
    )
    assert fields["spec.matchConstraints.resourceRules[0].operations[1]"] == (
        'Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"'
    )
    assert "undeclared reference to 'params'" in fields["spec.validations[0].expression"]
    assert fields["spec.validations[0].reason"].startswith('Unsupported value: "Teapot"')
    empty = policy("empty", [])
    del empty["spec"]["matchConstraints"]
    code, body, _ = await call(sim, "POST", POLICY_API, body=empty)
    assert code == 422
    assert {c["field"]: c["message"] for c in body["details"]["causes"]} == {
        "spec.matchConstraints": "Required value",
        "spec.validations": (
            "Required value: validations or auditAnnotations must contain at least one item"
        ),
    }


async def test_binding_validation(sim: Simulator) -> None:
    bad = binding("b", "", actions=())
    code, body, _ = await call(sim, "POST", BINDING_API, body=bad)
    assert code == 422
    assert body["message"] == (
        'ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io "b" is invalid:'
        " [spec.policyName: Required value, spec.validationActions: Required value: at least"
        " one validation action is required]"
    )
    both = binding(
        "b2",
        "p",
        actions=("Deny", "Warn", "Shout"),
        paramRef={"name": "x", "selector": {}},
    )
    code, body, _ = await call(sim, "POST", BINDING_API, body=both)
    assert code == 422
    fields = {c["field"]: c["message"] for c in body["details"]["causes"]}
    assert fields["spec.validationActions[2]"] == (
        'Unsupported value: "Shout": supported values: "Audit", "Deny", "Warn"'
    )
    assert fields["spec.validationActions"].startswith(
        'Invalid value: []string{"Deny", "Warn", "Shout"}: must not contain both Deny and Warn'
    )
    assert fields["spec.paramRef.name"] == "Forbidden: name and selector are mutually exclusive"
    assert fields["spec.paramRef.parameterNotFoundAction"] == "Required value"


async def test_unknown_field_is_rejected_by_strict_field_validation(sim: Simulator) -> None:
    bad = policy("typo", [{"expression": "true", "mesage": "x"}])
    code, body, _ = await call(sim, "POST", POLICY_API + "?fieldValidation=Strict", body=bad)
    assert code == 400
    assert body["message"] == 'strict decoding error: unknown field "spec.validations[0].mesage"'


async def test_policy_update_recompiles(sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    real = policies.compile_policy

    def counting(obj: Any) -> policies.CompiledPolicy:
        compiled.append(obj["metadata"]["name"])
        return real(obj)

    monkeypatch.setattr(policies, "compile_policy", counting)
    await install(
        sim,
        policy("gen", [{"expression": "object.metadata.name != 'a'"}], rules=PARAM_POLICY_RULES),
        binding("gen-b", "gen"),
    )
    for name in ("a", "a", "b"):
        await call(sim, "POST", PODS, body=pod(name))
    assert compiled == ["gen"]  # once for three requests
    code, _, _ = await call(
        sim,
        "PATCH",
        f"{POLICY_API}/gen",
        body={"spec": {"validations": [{"expression": "object.metadata.name != 'c'"}]}},
        content_type="application/merge-patch+json",
    )
    assert code == 200
    code, _, _ = await call(sim, "POST", PODS, body=pod("a"))
    assert code == 201
    code, _, _ = await call(sim, "POST", PODS, body=pod("c"))
    assert code == 422
    assert compiled == ["gen", "gen"]


async def test_in_process_writes_are_not_admitted(sim: Simulator) -> None:
    await install(
        sim, policy("deny-all", [{"expression": "false"}]), binding("deny-all-b", "deny-all")
    )
    sim.apply(pod("internal"))
    assert sim.get("Pod", "default", "internal") is not None


def test_cel_library_is_imported_only_when_a_policy_is_compiled() -> None:
    code = (
        "import sys, kubesim.sim, kubesim.cli\n"
        "sim = kubesim.sim.Simulator()\n"
        "assert 'cel' not in sys.modules, 'imported at start-up'\n"
        "from kubesim.core.cel import compile_expression\n"
        "compile_expression('true', declared=())\n"
        "assert 'cel' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


async def test_undefined_variable_is_422(sim: Simulator) -> None:
    bad = policy(
        "vars",
        [{"expression": "variables.isProd"}],
        variables=[
            {"name": "isprod", "expression": "true"},
            {"name": "later", "expression": "variables.after"},
            {"name": "after", "expression": "variables.isprod"},
        ],
    )
    code, body, _ = await call(sim, "POST", POLICY_API, body=bad)
    assert code == 422
    causes = {c["field"]: c["message"] for c in body["details"]["causes"]}
    assert causes == {
        "spec.variables[1].expression": (
            'Invalid value: "variables.after": compilation failed: ERROR: <input>:1:10:'
            " undefined field 'after'\n | variables.after\n | .........^"
        ),
        "spec.validations[0].expression": (
            'Invalid value: "variables.isProd": compilation failed: ERROR: <input>:1:10:'
            " undefined field 'isProd'\n | variables.isProd\n | .........^"
        ),
    }


async def test_namespace_delete_is_admitted(sim: Simulator) -> None:
    rules = [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["DELETE"],
            "resources": ["namespaces"],
        }
    ]
    await install(
        sim,
        policy(
            "keep-prod",
            [{"expression": "oldObject.metadata.name != 'prod'", "reason": "Forbidden"}],
            rules=rules,
        ),
        binding("keep-prod-b", "keep-prod"),
    )
    code, body, _ = await call(sim, "DELETE", "/api/v1/namespaces/prod")
    assert code == 403
    assert body["message"] == (
        "namespaces \"prod\" is forbidden: ValidatingAdmissionPolicy 'keep-prod' with binding"
        " 'keep-prod-b' denied request: failed expression: oldObject.metadata.name != 'prod'"
    )
    code, _, _ = await call(
        sim, "POST", "/api/v1/namespaces", body={"metadata": {"name": "scratch"}}
    )
    assert code == 201
    code, _, _ = await call(sim, "DELETE", "/api/v1/namespaces/scratch")
    assert code == 200


async def test_removing_the_binding_or_policy_stops_enforcement(sim: Simulator) -> None:
    await install(
        sim, policy("deny-all", [{"expression": "false"}]), binding("deny-all-b", "deny-all")
    )
    code, _, _ = await call(sim, "POST", PODS, body=pod("a"))
    assert code == 422
    code, _, _ = await call(sim, "DELETE", f"{BINDING_API}/deny-all-b")
    assert code == 200
    code, _, _ = await call(sim, "POST", PODS, body=pod("a"))
    assert code == 201
    await call(sim, "POST", BINDING_API, body=binding("deny-all-b", "deny-all"))
    code, _, _ = await call(sim, "DELETE", f"{POLICY_API}/deny-all")
    assert code == 200
    code, _, _ = await call(sim, "POST", PODS, body=pod("b"))
    assert code == 201


@pytest.mark.parametrize(("failure_policy", "code"), [("Fail", 422), ("Ignore", 201)])
async def test_unknown_param_kind_is_a_binding_configuration_error(
    sim: Simulator, failure_policy: str, code: int
) -> None:
    await install(
        sim,
        policy(
            "widgets",
            [{"expression": "params != null"}],
            rules=PARAM_POLICY_RULES,
            paramKind={"apiVersion": "example.com/v1", "kind": "Widget"},
            failurePolicy=failure_policy,
        ),
        binding("widgets-b", "widgets", paramRef={"name": "w", "parameterNotFoundAction": "Deny"}),
    )
    got, body, _ = await call(sim, "POST", PODS, body=pod("p"))
    assert got == code
    if code == 422:
        assert body["message"].endswith(
            "denied request: failed to configure binding: paramKind kind"
            " `&ParamKind{APIVersion:example.com/v1,Kind:Widget,}` not known"
        )


async def test_audit_annotations_are_published_and_their_errors_deny(sim: Simulator) -> None:
    await install(
        sim,
        policy(
            "annotated",
            [],
            rules=PARAM_POLICY_RULES,
            auditAnnotations=[
                {"key": "node", "valueExpression": "'placed on ' + object.spec.nodeName"},
                {"key": "empty", "valueExpression": "null"},
            ],
        ),
        binding("annotated-b", "annotated", actions=("Audit",)),
    )
    code, _, _ = await call(sim, "POST", PODS, body=pod("p", node="node-1"))
    assert code == 201
    [record] = sim.requests.filter(method="POST", path=PODS)
    assert record.audit_annotations == {"annotated/node": "placed on node-1"}
    code, body, _ = await call(sim, "POST", PODS, body=pod("unbound"))
    assert code == 422  # no nodeName: the valueExpression errs, and failurePolicy is Fail
    assert body["message"].endswith(
        "denied request: expression ''placed on ' + object.spec.nodeName' resulted in error:"
        " no such key: nodeName"
    )
