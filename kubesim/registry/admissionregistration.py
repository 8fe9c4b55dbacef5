"""The strategies of ValidatingAdmissionPolicies and their bindings: defaults and validation.

Unknown fields never get here: the server's strict field validation rejects them first (400).
``status.typeChecking`` is not written (kubesim's CEL has no type checker), so a policy's status
stays empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from kube.labels import LabelSelector, SelectorError
from kubesim.core.cel import CelError, compile_expression
from kubesim.core.errors import Cause
from kubesim.registry.strategy import Strategy

__all__ = [
    "BINDING_KIND",
    "POLICY_KIND",
    "STRATEGIES",
    "binding_causes",
    "declared_variables",
    "default_binding",
    "default_policy",
    "policy_causes",
]

GROUP: Final = "admissionregistration.k8s.io"
POLICY_KIND: Final = "ValidatingAdmissionPolicy"
BINDING_KIND: Final = "ValidatingAdmissionPolicyBinding"

FAILURE_POLICIES: Final = ("Fail", "Ignore")
MATCH_POLICIES: Final = ("Equivalent", "Exact")
OPERATIONS: Final = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES: Final = ("*", "Cluster", "Namespaced")
REASONS: Final = ("Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized")
VALIDATION_ACTIONS: Final = ("Audit", "Deny", "Warn")
NOT_FOUND_ACTIONS: Final = ("Allow", "Deny")
_CEL_IDENT: Final = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
# Every variable kube declares for a policy; ``params`` only with a paramKind.
_ALWAYS: Final = ("object", "oldObject", "request", "namespaceObject", "authorizer", "variables")


def declared_variables(spec: Mapping[str, Any]) -> tuple[str, ...]:
    return (*_ALWAYS, "params") if spec.get("paramKind") else _ALWAYS


def _selector_defaults(match: dict[str, Any]) -> None:
    for key in ("namespaceSelector", "objectSelector"):
        if not isinstance(match.get(key), dict):
            match[key] = {}
    if match.get("matchPolicy") in (None, ""):
        match["matchPolicy"] = "Equivalent"
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in match.get(key) or []:
            if isinstance(rule, dict) and rule.get("scope") in (None, ""):
                rule["scope"] = "*"


def default_policy(obj: dict[str, Any]) -> None:
    """``SetDefaults_ValidatingAdmissionPolicySpec`` and the MatchResources defaults:
    ``failurePolicy: Fail``, ``matchPolicy: Equivalent``, empty ``namespaceSelector``/
    ``objectSelector``, rule ``scope: "*"``.
    """
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if spec.get("failurePolicy") in (None, ""):
        spec["failurePolicy"] = "Fail"
    match = spec.get("matchConstraints")
    if isinstance(match, dict):
        _selector_defaults(match)


def default_binding(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    match = spec.get("matchResources")
    if isinstance(match, dict):
        _selector_defaults(match)


class _Errors:
    def __init__(self) -> None:
        self.causes: list[Cause] = []

    def required(self, field: str, detail: str = "") -> None:
        text = "Required value" + (f": {detail}" if detail else "")
        self.causes.append(Cause("FieldValueRequired", text, field))

    def invalid(self, field: str, value: Any, detail: str) -> None:
        self.causes.append(
            Cause("FieldValueInvalid", f"Invalid value: {_go_value(value)}: {detail}", field)
        )

    def not_supported(self, field: str, value: Any, supported: Iterable[str]) -> None:
        values = ", ".join(f'"{s}"' for s in supported)
        self.causes.append(
            Cause(
                "FieldValueNotSupported",
                f"Unsupported value: {_go_value(value)}: supported values: {values}",
                field,
            )
        )

    def duplicate(self, field: str, value: Any) -> None:
        self.causes.append(
            Cause("FieldValueDuplicate", f"Duplicate value: {_go_value(value)}", field)
        )

    def forbidden(self, field: str, detail: str) -> None:
        self.causes.append(Cause("FieldValueForbidden", f"Forbidden: {detail}", field))


def _go_value(value: Any) -> str:
    """``field.Error``'s rendering of a value: strings quoted, lists as Go prints them."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, list):
        return "[]string{" + ", ".join(_go_value(v) for v in value) + "}"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _compile(
    errors: _Errors,
    field: str,
    expression: Any,
    declared: Iterable[str],
    *,
    required: bool,
    variables: Iterable[str] = (),
) -> None:
    if not isinstance(expression, str) or not expression.strip():
        if required:
            errors.required(field, "expression is not specified")
        return
    try:
        compile_expression(expression, declared=declared, variables=variables)
    except CelError as exc:
        errors.invalid(field, expression, f"compilation failed: {exc}")


def _items(errors: _Errors, value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.invalid(field, value, "must be a list")
        return []
    return value


def _validate_selector(errors: _Errors, value: Any, field: str) -> None:
    if value is None:
        return
    try:
        LabelSelector.from_dict(value)
    except SelectorError as exc:
        errors.invalid(field, value, str(exc))


def _validate_rules(errors: _Errors, rules: Any, field: str) -> None:
    for i, rule in enumerate(_items(errors, rules, field)):
        at = f"{field}[{i}]"
        if not isinstance(rule, Mapping):
            errors.invalid(at, rule, "must be an object")
            continue
        ops = rule.get("operations")
        if not ops:
            errors.required(f"{at}.operations")
        for j, op in enumerate(_items(errors, ops, f"{at}.operations")):
            if op not in OPERATIONS:
                errors.not_supported(f"{at}.operations[{j}]", op, OPERATIONS)
        if len(ops or []) > 1 and "*" in (ops or []):
            errors.invalid(
                f"{at}.operations", ops, "if '*' is present, must not specify other operations"
            )
        for key in ("apiGroups", "apiVersions", "resources"):
            if not rule.get(key):
                errors.required(f"{at}.{key}")
        for j, res in enumerate(_items(errors, rule.get("resources"), f"{at}.resources")):
            if not isinstance(res, str) or not res:
                errors.required(f"{at}.resources[{j}]", "resource must be non-empty")
            elif res.count("/") > 1:
                errors.invalid(
                    f"{at}.resources[{j}]", res, "resource may not have more than one '/'"
                )
        scope = rule.get("scope")
        if scope is not None and scope not in SCOPES:
            errors.not_supported(f"{at}.scope", scope, SCOPES)


def _validate_match(errors: _Errors, match: Any, field: str, *, policy: bool) -> None:
    if match is None:
        if policy:
            errors.required(field)
        return
    if not isinstance(match, Mapping):
        errors.invalid(field, match, "must be an object")
        return
    if policy and not match.get("resourceRules"):
        errors.required(f"{field}.resourceRules")
    _validate_rules(errors, match.get("resourceRules"), f"{field}.resourceRules")
    _validate_rules(errors, match.get("excludeResourceRules"), f"{field}.excludeResourceRules")
    mp = match.get("matchPolicy")
    if mp is not None and mp not in MATCH_POLICIES:
        errors.not_supported(f"{field}.matchPolicy", mp, MATCH_POLICIES)
    _validate_selector(errors, match.get("namespaceSelector"), f"{field}.namespaceSelector")
    _validate_selector(errors, match.get("objectSelector"), f"{field}.objectSelector")


def policy_causes(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateValidatingAdmissionPolicy``: a field error for each bad field.

    Every problem is a ``field.Error`` naming the field (``spec.validations[0].expression``), and a
    policy whose CEL does not compile is a 422 whose detail is the compiler's, e.g.
    ``spec.validations[0].expression: Invalid value: "object.spec.(": compilation failed: ERROR:
    <input>:1:13: Syntax error: ...``.
    """
    errors = _Errors()
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        errors.required("spec")
        return errors.causes
    fp = spec.get("failurePolicy")
    if fp is not None and fp not in FAILURE_POLICIES:
        errors.not_supported("spec.failurePolicy", fp, FAILURE_POLICIES)
    pk = spec.get("paramKind")
    if pk is not None:
        if not isinstance(pk, Mapping):
            errors.invalid("spec.paramKind", pk, "must be an object")
        else:
            for key in ("apiVersion", "kind"):
                if not pk.get(key):
                    errors.required(f"spec.paramKind.{key}")
    _validate_match(errors, spec.get("matchConstraints"), "spec.matchConstraints", policy=True)
    declared = declared_variables(spec)
    validations = _items(errors, spec.get("validations"), "spec.validations")
    audits = _items(errors, spec.get("auditAnnotations"), "spec.auditAnnotations")
    if not validations and not audits:
        errors.required(
            "spec.validations", "validations or auditAnnotations must contain at least one item"
        )
    all_variables = [
        str(v.get("name"))
        for v in _items(_Errors(), spec.get("variables"), "")
        if isinstance(v, Mapping) and v.get("name")
    ]
    seen: set[str] = set()
    for i, cond in enumerate(_items(errors, spec.get("matchConditions"), "spec.matchConditions")):
        at = f"spec.matchConditions[{i}]"
        if not isinstance(cond, Mapping):
            errors.invalid(at, cond, "must be an object")
            continue
        cname = cond.get("name")
        if not cname:
            errors.required(f"{at}.name")
        elif cname in seen:
            errors.duplicate(f"{at}.name", cname)
        else:
            seen.add(str(cname))
        _compile(
            errors,
            f"{at}.expression",
            cond.get("expression"),
            declared,
            required=True,
            variables=all_variables,
        )
    vnames: set[str] = set()
    for i, var in enumerate(_items(errors, spec.get("variables"), "spec.variables")):
        at = f"spec.variables[{i}]"
        if not isinstance(var, Mapping):
            errors.invalid(at, var, "must be an object")
            continue
        vname = var.get("name")
        if not vname:
            errors.required(f"{at}.name")
        elif not isinstance(vname, str) or not _CEL_IDENT.match(vname):
            errors.invalid(f"{at}.name", vname, "name is not a valid CEL identifier")
        elif vname in vnames:
            errors.duplicate(f"{at}.name", vname)
        else:
            vnames.add(vname)
        _compile(
            errors,
            f"{at}.expression",
            var.get("expression"),
            declared,
            required=True,
            variables=all_variables[:i],
        )
    for i, val in enumerate(validations):
        at = f"spec.validations[{i}]"
        if not isinstance(val, Mapping):
            errors.invalid(at, val, "must be an object")
            continue
        _compile(
            errors,
            f"{at}.expression",
            val.get("expression"),
            declared,
            required=True,
            variables=all_variables,
        )
        msg = val.get("message")
        if isinstance(msg, str) and "\n" in msg:
            errors.invalid(f"{at}.message", msg, "message must not contain line breaks")
        if isinstance(msg, str) and msg and not msg.strip():
            errors.invalid(f"{at}.message", msg, "message must be non-empty if specified")
        if val.get("messageExpression") is not None:
            _compile(
                errors,
                f"{at}.messageExpression",
                val.get("messageExpression"),
                declared,
                required=True,
                variables=all_variables,
            )
        reason = val.get("reason")
        if reason is not None and reason not in REASONS:
            errors.not_supported(f"{at}.reason", reason, REASONS)
    for i, ann in enumerate(audits):
        at = f"spec.auditAnnotations[{i}]"
        if not isinstance(ann, Mapping):
            errors.invalid(at, ann, "must be an object")
            continue
        if not ann.get("key"):
            errors.required(f"{at}.key")
        _compile(
            errors,
            f"{at}.valueExpression",
            ann.get("valueExpression"),
            declared,
            required=True,
            variables=all_variables,
        )
    return errors.causes


def binding_causes(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateValidatingAdmissionPolicyBinding``: a field error for each bad field.

    Bindings need ``policyName`` and at least one ``validationAction`` (``Deny``, ``Warn``,
    ``Audit``; never both Deny and Warn), and a ``paramRef`` names exactly one of ``name`` or
    ``selector`` and says what to do when no parameter is found.
    """
    errors = _Errors()
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        errors.required("spec")
        return errors.causes
    if not spec.get("policyName"):
        errors.required("spec.policyName")
    actions = spec.get("validationActions")
    if not actions:
        errors.required("spec.validationActions", "at least one validation action is required")
    seen: set[str] = set()
    for i, action in enumerate(_items(errors, actions, "spec.validationActions")):
        at = f"spec.validationActions[{i}]"
        if action not in VALIDATION_ACTIONS:
            errors.not_supported(at, action, VALIDATION_ACTIONS)
        elif action in seen:
            errors.duplicate(at, action)
        else:
            seen.add(action)
    if {"Deny", "Warn"} <= seen:
        errors.invalid(
            "spec.validationActions",
            list(actions or []),
            "must not contain both Deny and Warn (repeating the same validation failure"
            " information in the API response and headers serves no purpose)",
        )
    ref = spec.get("paramRef")
    if ref is not None:
        if not isinstance(ref, Mapping):
            errors.invalid("spec.paramRef", ref, "must be an object")
        else:
            if ref.get("name") and ref.get("selector") is not None:
                errors.forbidden("spec.paramRef.name", "name and selector are mutually exclusive")
            if not ref.get("name") and ref.get("selector") is None:
                errors.required("spec.paramRef", "one of name or selector must be specified")
            _validate_selector(errors, ref.get("selector"), "spec.paramRef.selector")
            action = ref.get("parameterNotFoundAction")
            if action in (None, ""):
                errors.required("spec.paramRef.parameterNotFoundAction")
            elif action not in NOT_FOUND_ACTIONS:
                errors.not_supported(
                    "spec.paramRef.parameterNotFoundAction", action, NOT_FOUND_ACTIONS
                )
    _validate_match(errors, spec.get("matchResources"), "spec.matchResources", policy=False)
    return errors.causes


# Defaulted on every write, as the decoder defaults them, not only on create.
STRATEGIES: Final = {
    POLICY_KIND: Strategy(
        validate=lambda obj, old, group: policy_causes(obj),
        defaults=default_policy,
        default_on_update=True,
    ),
    BINDING_KIND: Strategy(
        validate=lambda obj, old, group: binding_causes(obj),
        defaults=default_binding,
        default_on_update=True,
    ),
}
