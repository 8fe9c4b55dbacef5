"""Writes of the policy kinds: the 422s for ValidatingAdmissionPolicies and their bindings that
kube-apiserver would not store, naming the field and the expression."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from kubesim.plugins.admission import policies
from kubesim.sim import Simulator
from tests.support.admission import (
    BINDING_API,
    PARAM_POLICY_RULES,
    PODS,
    POLICY_API,
    binding,
    call,
    install,
    pod,
    policy,
)

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
