"""RBAC over HTTP: kube's 403 words, validation 422s, escalation prevention, the access
reviews, impersonation and aggregation, against a running kubesim with ``--authorization
rbac`` (and the reviews under the default AlwaysAllow)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import pytest

import kubesim
from kubesim.controllers import FROZEN
from kubesim.core.attributes import Attributes, UserInfo
from kubesim.core.errors import StatusError
from kubesim.endpoints.impersonation import Impersonation, impersonation_requests
from kubesim.plugins.authorization import Decision
from kubesim.sim import Simulator
from tests.support.api import STATE

SA = "system:serviceaccount:kube-system:eviction-agent"
SA_GROUPS = ("system:serviceaccounts", "system:serviceaccounts:kube-system")
RBAC = "/apis/rbac.authorization.k8s.io/v1"
AUTHZ = "/apis/authorization.k8s.io/v1"
G = "rbac.authorization.k8s.io"


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(
        state=STATE, time_scale=0.01, disabled_controllers=FROZEN, authorization="rbac"
    ) as s:
        s.tokens.add("sa", UserInfo(SA, groups=SA_GROUPS))
        s.tokens.add("alice", UserInfo("alice"))
        yield s


async def call(
    sim: Simulator,
    method: str,
    path: str,
    *,
    token: str | None = None,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, Any]:
    h = dict(headers or {})
    if token:
        h["Authorization"] = f"Bearer {token}"
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, sim.url + path, headers=h, json=body) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


async def admin(sim: Simulator, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    return await call(sim, method, path, token=sim.admin_token, body=body)


def role(name: str, rules: list[dict[str, Any]], *, namespace: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": f"{G}/v1",
        "kind": "Role" if namespace else "ClusterRole",
        "metadata": meta,
        "rules": rules,
    }


def binding(
    name: str,
    role_kind: str,
    role_name: str,
    subjects: list[dict[str, Any]],
    *,
    namespace: str = "",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": f"{G}/v1",
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": G, "kind": role_kind, "name": role_name},
        "subjects": subjects,
    }


SA_SUBJECT = {"kind": "ServiceAccount", "name": "eviction-agent", "namespace": "kube-system"}
ALICE = {"kind": "User", "name": "alice", "apiGroup": G}


async def grant(
    sim: Simulator, name: str, rules: list[dict[str, Any]], subject: dict[str, Any]
) -> None:
    code, body = await admin(sim, "POST", f"{RBAC}/clusterroles", role(name, rules))
    assert code == 201, body
    code, body = await admin(
        sim, "POST", f"{RBAC}/clusterrolebindings", binding(name, "ClusterRole", name, [subject])
    )
    assert code == 201, body


# --- the authorization filter ------------------------------------------------------------------


async def test_denied_delete_is_kubes_403_word_for_word(sim: Simulator) -> None:
    code, body = await call(sim, "DELETE", "/api/v1/namespaces/default/pods/x", token="sa")
    assert code == 403
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "x" is forbidden: User "system:serviceaccount:kube-system:eviction-agent"'
        ' cannot delete resource "pods" in API group "" in the namespace "default"',
        "reason": "Forbidden",
        "details": {"name": "x", "kind": "pods"},
        "code": 403,
    }
    record = sim.requests[-1]
    assert (record.user, record.authorization, record.authorization_reason) == (SA, "deny", "")


async def test_role_binding_grants_within_its_namespace_only(sim: Simulator) -> None:
    code, body = await admin(
        sim,
        "POST",
        f"{RBAC}/namespaces/default/roles",
        role(
            "evictor",
            [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete"]},
                {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
            ],
            namespace="default",
        ),
    )
    assert code == 201, body
    code, body = await admin(
        sim,
        "POST",
        f"{RBAC}/namespaces/default/rolebindings",
        binding(
            "evictor",
            "Role",
            "evictor",
            [{"kind": "ServiceAccount", "name": "eviction-agent", "namespace": "kube-system"}],
            namespace="default",
        ),
    )
    assert code == 201, body
    code, pod = await call(sim, "GET", "/api/v1/namespaces/default/pods/web-0", token="sa")
    assert code == 200, pod
    assert sim.requests[-1].authorization_reason == (
        'RBAC: allowed by RoleBinding "evictor/default" of Role "evictor" to'
        ' ServiceAccount "eviction-agent/kube-system"'
    )
    code, body = await call(sim, "GET", "/api/v1/namespaces/prod/pods/db-0", token="sa")
    assert code == 403
    code, body = await call(sim, "GET", "/api/v1/namespaces/default/pods", token="sa")
    assert code == 403
    assert body["message"] == (
        f'pods is forbidden: User "{SA}" cannot list resource "pods" in API group "" in the'
        ' namespace "default"'
    )
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web-0"}}
    code, body = await call(
        sim, "POST", "/api/v1/namespaces/default/pods/web-0/eviction", token="sa", body=eviction
    )
    assert code == 201, body


async def test_resource_names_allow_get_and_a_list_naming_the_object(sim: Simulator) -> None:
    await grant(
        sim,
        "one-node",
        [
            {
                "apiGroups": [""],
                "resources": ["nodes"],
                "resourceNames": ["node-1"],
                "verbs": ["get", "list", "watch"],
            }
        ],
        ALICE,
    )
    assert (await call(sim, "GET", "/api/v1/nodes/node-1", token="alice"))[0] == 200
    assert (await call(sim, "GET", "/api/v1/nodes/node-2", token="alice"))[0] == 403
    assert (await call(sim, "GET", "/api/v1/nodes", token="alice"))[0] == 403
    code, listed = await call(
        sim, "GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dnode-1", token="alice"
    )
    assert code == 200, listed
    assert [n["metadata"]["name"] for n in listed["items"]] == ["node-1"]


async def test_probe_and_discovery_under_rbac(sim: Simulator) -> None:
    async with aiohttp.ClientSession() as session, session.get(sim.url + "/readyz") as resp:
        assert resp.status == 200
    code, body = await call(sim, "GET", "/api")
    assert code == 403
    assert body["message"] == 'forbidden: User "system:anonymous" cannot get path "/api"'
    assert (await call(sim, "GET", "/apis", token="alice"))[0] == 200
    code, body = await call(sim, "GET", "/metrics", token="alice")
    assert code == 403
    assert body["message"] == 'forbidden: User "alice" cannot get path "/metrics"'


async def test_missing_role_is_the_403_suffix(sim: Simulator) -> None:
    code, body = await admin(
        sim,
        "POST",
        f"{RBAC}/clusterrolebindings",
        binding("dangling", "ClusterRole", "gone", [ALICE]),
    )
    assert code == 201, body
    code, body = await call(sim, "GET", "/api/v1/nodes", token="alice")
    assert code == 403
    assert body["message"] == (
        'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the'
        ' cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'
    )


async def test_rules_follow_role_changes(sim: Simulator) -> None:
    await grant(
        sim, "reader", [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}], ALICE
    )
    assert (await call(sim, "GET", "/api/v1/nodes", token="alice"))[0] == 200
    _, current = await admin(sim, "GET", f"{RBAC}/clusterroles/reader")
    current["rules"] = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    assert (await admin(sim, "PUT", f"{RBAC}/clusterroles/reader", current))[0] == 200
    assert (await call(sim, "GET", "/api/v1/nodes", token="alice"))[0] == 403
    assert (await call(sim, "GET", "/api/v1/pods", token="alice"))[0] == 200


# --- validation --------------------------------------------------------------------------------

INVALID = [
    (
        f"{RBAC}/clusterroles",
        role("no-verbs", [{"apiGroups": [""], "resources": ["pods"]}]),
        'ClusterRole.rbac.authorization.k8s.io "no-verbs" is invalid: rules[0].verbs: Required'
        " value: verbs must contain at least one value",
        "rules[0].verbs",
    ),
    (
        f"{RBAC}/namespaces/default/roles",
        role("urls", [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}], namespace="default"),
        'Role.rbac.authorization.k8s.io "urls" is invalid: rules[0].nonResourceURLs: Invalid'
        ' value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs',
        "rules[0].nonResourceURLs",
    ),
    (
        f"{RBAC}/clusterrolebindings",
        binding("robots", "ClusterRole", "view", [{"kind": "Robot", "name": "r2"}]),
        'ClusterRoleBinding.rbac.authorization.k8s.io "robots" is invalid: subjects[0].kind:'
        ' Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
        "subjects[0].kind",
    ),
    (
        f"{RBAC}/clusterrolebindings",
        binding("sa", "ClusterRole", "view", [{"kind": "ServiceAccount", "name": "x"}]),
        'ClusterRoleBinding.rbac.authorization.k8s.io "sa" is invalid: subjects[0].namespace:'
        " Required value",
        "subjects[0].namespace",
    ),
    (
        f"{RBAC}/clusterroles",
        {**role("agg", []), "aggregationRule": {"clusterRoleSelectors": []}},
        'ClusterRole.rbac.authorization.k8s.io "agg" is invalid:'
        " aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector"
        " required if aggregationRule is non-nil",
        "aggregationRule.clusterRoleSelectors",
    ),
    (
        f"{RBAC}/clusterrolebindings",
        binding("role-ref", "Role", "view", [ALICE]),
        'ClusterRoleBinding.rbac.authorization.k8s.io "role-ref" is invalid: roleRef.kind:'
        ' Unsupported value: "Role": supported values: "ClusterRole"',
        "roleRef.kind",
    ),
]


@pytest.mark.parametrize(("path", "obj", "message", "field"), INVALID, ids=lambda v: "")
async def test_invalid_rbac_objects_are_422_naming_the_field(
    sim: Simulator, path: str, obj: dict[str, Any], message: str, field: str
) -> None:
    code, body = await admin(sim, "POST", path, obj)
    assert code == 422, body
    assert body["message"] == message
    assert [c["field"] for c in body["details"]["causes"]] == [field]


MALFORMED = [
    (
        f"{RBAC}/clusterroles",
        {**role("a", []), "rules": [{"verbs": "get", "apiGroups": [""], "resources": ["pods"]}]},
        'ClusterRole in version "v1" cannot be handled as a ClusterRole: json: cannot unmarshal'
        " string into Go struct field PolicyRule.rules.verbs of type []string",
    ),
    (
        f"{RBAC}/clusterroles",
        {**role("a", []), "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": 5}]}},
        'ClusterRole in version "v1" cannot be handled as a ClusterRole: json: cannot unmarshal'
        " number into Go struct field LabelSelector.aggregationRule.clusterRoleSelectors"
        ".matchLabels of type map[string]string",
    ),
    (
        f"{RBAC}/clusterrolebindings",
        binding("b", "ClusterRole", "view", [{"kind": "User", "name": 5}]),
        'ClusterRoleBinding in version "v1" cannot be handled as a ClusterRoleBinding: json:'
        " cannot unmarshal number into Go struct field Subject.subjects.name of type string",
    ),
]


@pytest.mark.parametrize(("path", "obj", "message"), MALFORMED, ids=lambda v: "")
async def test_malformed_rbac_objects_are_400(
    sim: Simulator, path: str, obj: dict[str, Any], message: str
) -> None:
    code, body = await admin(sim, "POST", path, obj)
    assert (code, body["message"]) == (400, message)


async def test_role_ref_is_immutable_and_defaults_fill_api_groups(sim: Simulator) -> None:
    obj = binding("b", "ClusterRole", "view", [{"kind": "User", "name": "alice"}])
    del obj["roleRef"]["apiGroup"]
    code, created = await admin(sim, "POST", f"{RBAC}/clusterrolebindings", obj)
    assert code == 201, created
    assert created["roleRef"]["apiGroup"] == G
    assert created["subjects"][0]["apiGroup"] == G
    created["roleRef"]["name"] = "edit"
    code, body = await admin(sim, "PUT", f"{RBAC}/clusterrolebindings/b", created)
    assert code == 422
    assert body["message"] == (
        'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value:'
        ' rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}:'
        " cannot change roleRef"
    )


async def test_role_names_may_contain_colons(sim: Simulator) -> None:
    code, body = await admin(
        sim,
        "POST",
        f"{RBAC}/clusterroles",
        role("example:reader", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
    )
    assert code == 201, body


# --- escalation prevention ---------------------------------------------------------------------

ROLE_WRITER = [
    {
        "apiGroups": [G],
        "resources": ["clusterroles", "clusterrolebindings"],
        "verbs": ["create", "update", "get"],
    },
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
]


async def test_creating_a_role_with_permissions_not_held_is_forbidden(sim: Simulator) -> None:
    await grant(sim, "role-writer", ROLE_WRITER, ALICE)
    wider = role(
        "wider",
        [
            {
                "apiGroups": [""],
                "resources": ["pods"],
                "verbs": ["get", "delete", "deletecollection"],
            },
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
        ],
    )
    code, body = await call(sim, "POST", f"{RBAC}/clusterroles", token="alice", body=wider)
    assert code == 403
    assert body["message"] == (
        'clusterroles.rbac.authorization.k8s.io "wider" is forbidden: user "alice"'
        ' (groups=["system:authenticated"]) is attempting to grant RBAC permissions not'
        ' currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["delete"'
        ' "deletecollection"]}\n{NonResourceURLs:["/metrics"], Verbs:["get"]}'
    )
    assert body["details"] == {"name": "wider", "group": G, "kind": "clusterroles"}
    narrower = role("narrower", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
    code, body = await call(sim, "POST", f"{RBAC}/clusterroles", token="alice", body=narrower)
    assert code == 201, body
    aggregating = role("agg", [])
    aggregating["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}
    code, body = await call(sim, "POST", f"{RBAC}/clusterroles", token="alice", body=aggregating)
    assert code == 403
    assert body["message"] == (
        'clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin'
        " privileges to use the aggregationRule"
    )


async def test_escalation_message_lists_resolution_errors(sim: Simulator) -> None:
    await grant(sim, "role-writer", ROLE_WRITER, ALICE)
    dangling = binding("dangling", "ClusterRole", "gone", [ALICE])
    assert (await admin(sim, "POST", f"{RBAC}/clusterrolebindings", dangling))[0] == 201
    wider = role("wider", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}])
    code, body = await call(sim, "POST", f"{RBAC}/clusterroles", token="alice", body=wider)
    assert code == 403
    assert body["message"].endswith(
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}; resolution errors:'
        ' [clusterrole.rbac.authorization.k8s.io "gone" not found]'
    )


async def test_escalate_verb_lifts_the_check(sim: Simulator) -> None:
    await grant(
        sim,
        "role-writer",
        [*ROLE_WRITER, {"apiGroups": [G], "resources": ["clusterroles"], "verbs": ["escalate"]}],
        ALICE,
    )
    wider = role("wider", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
    code, body = await call(sim, "POST", f"{RBAC}/clusterroles", token="alice", body=wider)
    assert code == 201, body


async def test_binding_needs_bind_or_the_roles_permissions(sim: Simulator) -> None:
    await grant(sim, "role-writer", ROLE_WRITER, ALICE)
    to_admin = binding("alice-admin", "ClusterRole", "cluster-admin", [ALICE])
    code, body = await call(
        sim, "POST", f"{RBAC}/clusterrolebindings", token="alice", body=to_admin
    )
    assert code == 403
    assert body["message"].startswith(
        'clusterrolebindings.rbac.authorization.k8s.io "alice-admin" is forbidden: user "alice"'
        ' (groups=["system:authenticated"]) is attempting to grant RBAC permissions not'
        " currently held:\n"
    )
    code, body = await admin(
        sim,
        "POST",
        f"{RBAC}/clusterroles",
        role("pod-reader", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
    )
    held = binding("sa-reads", "ClusterRole", "pod-reader", [SA_SUBJECT])
    code, body = await call(sim, "POST", f"{RBAC}/clusterrolebindings", token="alice", body=held)
    assert code == 201, body
    missing = binding("dangling", "ClusterRole", "no-such-role", [ALICE])
    code, body = await call(sim, "POST", f"{RBAC}/clusterrolebindings", token="alice", body=missing)
    assert code == 404
    assert body["message"] == 'clusterroles.rbac.authorization.k8s.io "no-such-role" not found'
    await grant(
        sim,
        "binder",
        [
            {
                "apiGroups": [G],
                "resources": ["clusterroles"],
                "resourceNames": ["cluster-admin"],
                "verbs": ["bind"],
            }
        ],
        ALICE,
    )
    code, body = await call(
        sim, "POST", f"{RBAC}/clusterrolebindings", token="alice", body=to_admin
    )
    assert code == 201, body


# --- reviews -----------------------------------------------------------------------------------


def sar(kind: str, spec: dict[str, Any], **meta: str) -> dict[str, Any]:
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": kind,
        "metadata": dict(meta),
        "spec": spec,
    }


async def test_subject_access_review_answers_for_any_user(sim: Simulator) -> None:
    spec = {
        "user": "alice",
        "resourceAttributes": {
            "verb": "create",
            "group": "authorization.k8s.io",
            "resource": "selfsubjectaccessreviews",
        },
    }
    code, body = await admin(
        sim, "POST", f"{AUTHZ}/subjectaccessreviews", sar("SubjectAccessReview", spec)
    )
    assert code == 201
    assert body["status"] == {"allowed": False}  # alice is not in system:authenticated here
    spec["groups"] = ["system:authenticated"]
    code, body = await admin(
        sim, "POST", f"{AUTHZ}/subjectaccessreviews", sar("SubjectAccessReview", spec)
    )
    assert code == 201
    assert body["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole'
        ' "system:basic-user" to Group "system:authenticated"',
    }
    assert body["spec"] == spec
    code, body = await call(
        sim,
        "POST",
        f"{AUTHZ}/subjectaccessreviews",
        token="alice",
        body=sar("SubjectAccessReview", spec),
    )
    assert code == 403


async def test_review_validation(sim: Simulator) -> None:
    code, body = await admin(
        sim, "POST", f"{AUTHZ}/subjectaccessreviews", sar("SubjectAccessReview", {})
    )
    assert code == 422
    assert body["message"] == (
        'SubjectAccessReview.authorization.k8s.io "" is invalid: [spec.resourceAttributes:'
        ' Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must'
        ' be specified, spec.user: Invalid value: "": at least one of user or group must be'
        " specified]"
    )
    local = sar(
        "LocalSubjectAccessReview",
        {
            "user": "alice",
            "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "prod"},
        },
        namespace="default",
    )
    code, body = await admin(
        sim, "POST", f"{AUTHZ}/namespaces/default/localsubjectaccessreviews", local
    )
    assert code == 422
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "prod": must match metadata.namespace',
            "field": "spec.resourceAttributes.namespace",
        }
    ]
    code, body = await call(
        sim,
        "POST",
        f"{AUTHZ}/selfsubjectrulesreviews",
        token="alice",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectRulesReview",
            "spec": {},
        },
    )
    assert code == 400
    assert body["message"] == "no namespace on request"
    code, body = await admin(sim, "GET", f"{AUTHZ}/subjectaccessreviews")
    assert code == 405


async def test_local_review_and_self_reviews(sim: Simulator) -> None:
    await grant(
        sim,
        "pods",
        [{"apiGroups": [""], "resources": ["pods", "pods/eviction"], "verbs": ["get", "create"]}],
        SA_SUBJECT,
    )
    local = sar(
        "LocalSubjectAccessReview",
        {
            "user": SA,
            "resourceAttributes": {
                "verb": "create",
                "resource": "pods",
                "subresource": "eviction",
                "namespace": "default",
            },
        },
        namespace="default",
    )
    code, body = await admin(
        sim, "POST", f"{AUTHZ}/namespaces/default/localsubjectaccessreviews", local
    )
    assert code == 201, body
    assert body["status"]["allowed"] is True
    ssar = sar(
        "SelfSubjectAccessReview",
        {"resourceAttributes": {"verb": "delete", "resource": "pods", "namespace": "default"}},
    )
    code, body = await call(sim, "POST", f"{AUTHZ}/selfsubjectaccessreviews", token="sa", body=ssar)
    assert code == 201
    assert body["status"] == {"allowed": False}
    rules = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": "default"},
    }
    code, body = await call(sim, "POST", f"{AUTHZ}/selfsubjectrulesreviews", token="sa", body=rules)
    assert code == 201
    status = body["status"]
    assert status["incomplete"] is False
    assert {
        "verbs": ["get", "create"],
        "apiGroups": [""],
        "resources": ["pods", "pods/eviction"],
    } in status["resourceRules"]
    assert {
        "verbs": ["get"],
        "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
    } in status["nonResourceRules"]


async def test_reviews_under_always_allow() -> None:
    async with kubesim.serve(state=STATE, time_scale=0.01, disabled_controllers=FROZEN) as s:
        ssar = sar(
            "SelfSubjectAccessReview",
            {"resourceAttributes": {"verb": "delete", "resource": "secrets"}},
        )
        code, body = await call(s, "POST", f"{AUTHZ}/selfsubjectaccessreviews", body=ssar)
        assert code == 201
        assert body["status"] == {"allowed": True}
        rules = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": "default"},
        }
        code, body = await call(s, "POST", f"{AUTHZ}/selfsubjectrulesreviews", body=rules)
        assert body["status"] == {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
        # the bootstrap policy is there in every mode
        assert s.get("ClusterRole", None, "view") is not None


# --- impersonation -----------------------------------------------------------------------------


async def test_admin_impersonates_a_service_account(sim: Simulator) -> None:
    code, body = await call(
        sim,
        "GET",
        "/api/v1/namespaces/default/pods",
        token=sim.admin_token,
        headers={"Impersonate-User": SA},
    )
    assert code == 403
    assert body["message"].startswith(f'pods is forbidden: User "{SA}" cannot list')
    record = sim.requests[-1]
    assert (record.user, record.impersonated_by) == (SA, "kubernetes-admin")
    assert record.groups == (*SA_GROUPS, "system:authenticated")


async def test_impersonation_needs_the_impersonate_verb(sim: Simulator) -> None:
    code, body = await call(
        sim, "GET", "/api/v1/pods", token="alice", headers={"Impersonate-User": "bob"}
    )
    assert code == 403
    assert body["message"] == (
        'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API'
        ' group "" at the cluster scope'
    )
    record = sim.requests[-1]
    assert (record.user, record.authorization, record.impersonated_by) == ("alice", "", "")
    code, body = await call(
        sim, "GET", "/api/v1/pods", token="alice", headers={"Impersonate-User": SA}
    )
    assert body["message"] == (
        'serviceaccounts "eviction-agent" is forbidden: User "alice" cannot impersonate resource'
        ' "serviceaccounts" in API group "" in the namespace "kube-system"'
    )
    await grant(
        sim,
        "impersonator",
        [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]}],
        ALICE,
    )
    code, body = await call(
        sim,
        "GET",
        "/api/v1/pods",
        token="alice",
        headers={"Impersonate-User": "bob", "Impersonate-Extra-Scopes": "view"},
    )
    assert body["message"] == (
        'userextras.authentication.k8s.io "view" is forbidden: User "alice" cannot impersonate'
        ' resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope'
    )


class TableAuthorizer:
    """The authorizer of upstream's TestImpersonationFilter."""

    def __call__(self, a: Attributes) -> tuple[Decision, str]:
        user = a.user
        if a.verb != "impersonate":
            return Decision.NO_OPINION, ""
        if user.name == "sa-impersonater" and a.resource == "serviceaccounts":
            return Decision.ALLOW, ""
        if "wheel" in user.groups and a.resource == "users":
            return Decision.ALLOW, ""
        if "group-impersonater" in user.groups and a.resource == "groups":
            return Decision.ALLOW, ""
        if (
            "extra-setter-scopes" in user.groups
            and a.resource == "userextras"
            and a.subresource == "scopes"
        ):
            return Decision.ALLOW, ""
        if "regular-impersonater" in user.groups and a.resource == "users":
            return Decision.ALLOW, ""
        if "uid-impersonater" in user.groups and a.resource == "uids":
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""


AUTH = "system:authenticated"
IMPERSONATION_CASES: list[tuple[str, UserInfo, list[tuple[str, str]], UserInfo | int]] = [
    ("impersonating-error", UserInfo("tester"), [("Impersonate-User", "anyone")], 403),
    (
        "impersonating-group-without-user",
        UserInfo("tester"),
        [("Impersonate-Group", "some-group")],
        500,
    ),
    (
        "impersonating-extra-without-user",
        UserInfo("tester"),
        [("Impersonate-Extra-scopes", "scope-a")],
        500,
    ),
    ("impersonating-uid-without-user", UserInfo("tester"), [("Impersonate-Uid", "some-uid")], 500),
    (
        "disallowed-group",
        UserInfo("dev", groups=("wheel",)),
        [("Impersonate-User", "system:admin"), ("Impersonate-Group", "some-group")],
        403,
    ),
    (
        "allowed-group",
        UserInfo("dev", groups=("wheel", "group-impersonater")),
        [("Impersonate-User", "system:admin"), ("Impersonate-Group", "some-group")],
        UserInfo("system:admin", groups=("some-group", AUTH)),
    ),
    (
        "disallowed-userextra-1",
        UserInfo("dev", groups=("wheel",)),
        [("Impersonate-User", "system:admin"), ("Impersonate-Extra-scopes", "scope-a")],
        403,
    ),
    (
        "allowed-userextras",
        UserInfo("dev", groups=("wheel", "extra-setter-scopes")),
        [
            ("Impersonate-User", "system:admin"),
            ("Impersonate-Extra-scopes", "scope-a"),
            ("Impersonate-Extra-scopes", "scope-b"),
        ],
        UserInfo("system:admin", groups=(AUTH,), extra={"scopes": ("scope-a", "scope-b")}),
    ),
    (
        "percent-encoded-userextras",
        UserInfo("dev", groups=("wheel",)),
        [("Impersonate-User", "system:admin"), ("Impersonate-Extra-example.com%2fescaped", "x")],
        403,
    ),
    (
        "allowed-users-impersonation",
        UserInfo("dev", groups=("regular-impersonater",)),
        [("Impersonate-User", "tester")],
        UserInfo("tester", groups=(AUTH,)),
    ),
    (
        "disallowed-impersonating",
        UserInfo("sa-impersonater"),
        [("Impersonate-User", "tester")],
        403,
    ),
    (
        "allowed-sa-impersonating",
        UserInfo("sa-impersonater"),
        [("Impersonate-User", "system:serviceaccount:foo:default")],
        UserInfo(
            "system:serviceaccount:foo:default",
            groups=("system:serviceaccounts", "system:serviceaccounts:foo", AUTH),
        ),
    ),
    (
        "anonymous-username-prevents-adding-authenticated-group",
        UserInfo("dev", groups=("wheel",)),
        [("Impersonate-User", "system:anonymous")],
        UserInfo("system:anonymous", groups=("system:unauthenticated",)),
    ),
    (
        "unauthenticated-group-prevents-adding-authenticated-group",
        UserInfo("dev", groups=("wheel", "group-impersonater")),
        [("Impersonate-User", "unknown"), ("Impersonate-Group", "system:unauthenticated")],
        UserInfo("unknown", groups=("system:unauthenticated",)),
    ),
    (
        "specified-authenticated-group-prevents-double-adding-authenticated-group",
        UserInfo("dev", groups=("wheel", "group-impersonater")),
        [("Impersonate-User", "unknown"), ("Impersonate-Group", AUTH)],
        UserInfo("unknown", groups=(AUTH,)),
    ),
    (
        "allowed-user-impersonation-with-uid",
        UserInfo("dev", groups=("regular-impersonater", "uid-impersonater")),
        [("Impersonate-User", "tester"), ("Impersonate-Uid", "some-uid")],
        UserInfo("tester", uid="some-uid", groups=(AUTH,)),
    ),
    (
        "disallowed-user-impersonation-with-uid",
        UserInfo("dev", groups=("regular-impersonater",)),
        [("Impersonate-User", "tester"), ("Impersonate-Uid", "some-uid")],
        403,
    ),
]


@pytest.mark.parametrize(
    ("case", "user", "headers", "expected"),
    IMPERSONATION_CASES,
    ids=[c[0] for c in IMPERSONATION_CASES],
)
def test_impersonation_filter_table(
    case: str, user: UserInfo, headers: list[tuple[str, str]], expected: UserInfo | int
) -> None:
    impersonation = Impersonation(TableAuthorizer())
    try:
        got: UserInfo | int = impersonation.act_as(user, impersonation_requests(headers))
    except StatusError as err:
        got = err.code
    assert got == expected, case


def test_percent_encoded_extra_keys_are_decoded() -> None:
    (req_user, req_extra) = impersonation_requests(
        [("Impersonate-User", "u"), ("Impersonate-Extra-Example.com%2Fescaped", "v")]
    )
    assert req_user.kind == "User"
    assert (req_extra.kind, req_extra.extra_key, req_extra.name) == (
        "UserExtra",
        "example.com/escaped",
        "v",
    )


# --- aggregation -------------------------------------------------------------------------------


async def test_aggregation_controller_widens_view_and_admin() -> None:
    async with kubesim.serve(state=STATE, time_scale=0.01, authorization="rbac") as s:
        extra = role(
            "crd-viewer",
            [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}],
        )
        extra["metadata"]["labels"] = {"rbac.authorization.k8s.io/aggregate-to-view": "true"}
        assert (await admin(s, "POST", f"{RBAC}/clusterroles", extra))[0] == 201
        wanted = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}
        for _ in range(200):
            names = [
                n
                for n in ("view", "edit", "admin")
                if wanted in (s.get("ClusterRole", None, n) or {}).get("rules", [])
            ]
            if len(names) == 3:
                break
            await asyncio.sleep(0.01)
        assert names == ["view", "edit", "admin"]
        view = s.get("ClusterRole", None, "view")
        # roles are taken in name order: crd-viewer before system:aggregate-to-view
        assert view is not None and view["rules"][0] == wanted
        assert (await admin(s, "DELETE", f"{RBAC}/clusterroles/crd-viewer"))[0] == 200
        for _ in range(200):
            if wanted not in (s.get("ClusterRole", None, "admin") or {}).get("rules", []):
                break
            await asyncio.sleep(0.01)
        assert wanted not in (s.get("ClusterRole", None, "admin") or {})["rules"]
