"""ValidatingAdmissionPolicies over HTTP against a running kubesim: kube's denial bodies, the
requests and subresources they see, params, matchConditions, failurePolicy and validation
actions."""

from __future__ import annotations

import json

import pytest

from kubesim.core.attributes import UserInfo
from kubesim.sim import Simulator
from tests.support.admission import (
    BINDING_API,
    PARAM_POLICY_RULES,
    PODS,
    binding,
    call,
    install,
    pod,
    policy,
)
from tests.support.manifests import new_event


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


async def test_events_k8s_io_writes_are_seen_in_their_own_shape(sim: Simulator) -> None:
    """kubesim stores core events; a policy on ``events.k8s.io`` sees the object and the old
    object as that group writes them (``note``, ``regarding``), on create, update and delete."""
    await install(
        sim,
        policy(
            "quiet-notes",
            [
                {
                    "expression": "(object == null || !object.note.contains('secret'))"
                    " && (oldObject == null || oldObject.regarding.name == 'web-0')",
                    "message": "no secrets in notes",
                }
            ],
            rules=[
                {
                    "apiGroups": ["events.k8s.io"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                    "resources": ["events"],
                }
            ],
        ),
        binding("quiet-notes-b", "quiet-notes"),
    )
    events = "/apis/events.k8s.io/v1/namespaces/default/events"

    code, body, _ = await call(sim, "POST", events, body=new_event("a", "a secret"))
    assert (code, body["message"]) == (
        422,
        "events.events.k8s.io \"a\" is forbidden: ValidatingAdmissionPolicy 'quiet-notes'"
        " with binding 'quiet-notes-b' denied request: no secrets in notes",
    )
    code, created, _ = await call(sim, "POST", events, body=new_event("b", "fine"))
    assert code == 201, created
    code, body, _ = await call(sim, "POST", events, body=new_event("c", "fine", regarding="web-1"))
    assert code == 201, body
    created["note"] = "now a secret"  # an update is denied by its new object, in its shape
    code, body, _ = await call(sim, "PUT", f"{events}/b", body=created)
    assert code == 422, body
    code, _, _ = await call(sim, "DELETE", f"{events}/c")  # and a delete by its old object
    assert code == 422
    code, _, _ = await call(sim, "DELETE", f"{events}/b")
    assert code == 200
