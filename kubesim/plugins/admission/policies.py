"""ValidatingAdmissionPolicy: kube-apiserver's CEL admission, on every API write kubesim serves.

Reproduced from upstream's ``policy/validating`` dispatcher and validator
(``staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating``) in
``ValidatingAdmissionPolicies``. The policy and binding objects are defaulted and validated
when written (``kubesim.registry.admissionregistration``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kube.labels import LabelSelector, SelectorError
from kubesim.core.cel import (
    Activation,
    CelError,
    Program,
    compile_expression,
    evaluate,
)
from kubesim.core.errors import Cause, StatusError
from kubesim.plugins.admission.matching import Request, matches_resources
from kubesim.registry.admission import AdmissionCall
from kubesim.registry.admissionregistration import (
    declared_variables,
)
from kubesim.registry.generic import GenericStore

__all__ = [
    "CompiledPolicy",
    "ValidatingAdmissionPolicies",
    "admission_request",
    "compile_policy",
]

POLICIES: Final = "validatingadmissionpolicies"
BINDINGS: Final = "validatingadmissionpolicybindings"
GROUP: Final = "admissionregistration.k8s.io"
VALIDATION_FAILURE_KEY: Final = "validation.policy.admission.k8s.io/validation_failure"
MAX_MESSAGE_BYTES: Final = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes
MAX_AUDIT_VALUE: Final = 10 * 1024
_CODES: Final = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413}
_OPTIONS_KIND: Final = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
}


class _EvalError(Exception):
    """An expression that failed at run time, with upstream's message."""


@dataclass(frozen=True, slots=True)
class _Validation:
    expression: str
    program: Program
    message: str
    message_program: Program | None
    reason: str


@dataclass(slots=True)
class CompiledPolicy:
    """One policy generation, every expression compiled."""

    name: str
    spec: Mapping[str, Any]
    failure_policy: str
    config_error: str = ""
    match_conditions: list[tuple[str, Program]] = field(default_factory=list)
    variables: list[tuple[str, Program]] = field(default_factory=list)
    validations: list[_Validation] = field(default_factory=list)
    audit_annotations: list[tuple[str, Program]] = field(default_factory=list)


def compile_policy(policy: Mapping[str, Any]) -> CompiledPolicy:
    """Compile ``policy``; a problem (a stored policy kube would reject) is a config error."""
    meta = policy.get("metadata") or {}
    spec = policy.get("spec") or {}
    out = CompiledPolicy(
        name=str(meta.get("name") or ""),
        spec=spec,
        failure_policy=str(spec.get("failurePolicy") or "Fail"),
    )
    declared = declared_variables(spec)

    def comp(expr: Any) -> Program:
        return compile_expression(str(expr or ""), declared=declared)

    try:
        for cond in spec.get("matchConditions") or []:
            out.match_conditions.append((str(cond.get("name")), comp(cond.get("expression"))))
        for var in spec.get("variables") or []:
            out.variables.append((str(var.get("name")), comp(var.get("expression"))))
        for val in spec.get("validations") or []:
            msg_expr = val.get("messageExpression")
            out.validations.append(
                _Validation(
                    expression=str(val.get("expression") or ""),
                    program=comp(val.get("expression")),
                    message=str(val.get("message") or ""),
                    message_program=comp(msg_expr) if msg_expr else None,
                    reason=str(val.get("reason") or "Invalid"),
                )
            )
        for ann in spec.get("auditAnnotations") or []:
            out.audit_annotations.append((str(ann.get("key")), comp(ann.get("valueExpression"))))
    except (CelError, AttributeError, TypeError) as exc:
        out.config_error = f"compilation failed: {exc}"
    return out


@dataclass(slots=True)
class _Decision:
    policy: str
    binding: str
    message: str
    reason: str = "Invalid"


@dataclass(slots=True)
class _Result:
    """``ValidateResult``: failed validations (with their index), audit-annotation errors
    (which deny whatever the binding's actions), and the annotations to publish."""

    failed: list[tuple[int, _Decision]] = field(default_factory=list)
    annotation_errors: list[_Decision] = field(default_factory=list)
    annotations: list[tuple[str, str]] = field(default_factory=list)


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, str] | None:
    if obj is None:
        return None
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _param_kind_text(pk: Mapping[str, Any]) -> str:
    """``ParamKind.String()`` as the generated Go code prints it."""
    return f"&ParamKind{{APIVersion:{pk.get('apiVersion', '')},Kind:{pk.get('kind', '')},}}"


class _Evaluation:
    """One policy evaluated for one binding and one parameter: variables memoised, and lazy as
    kube's (``cel/lazy``): a variable is evaluated when an expression first reads it, so one
    that is never read (``variables.kind == 'x' ? variables.x : 0``) never fails."""

    def __init__(self, compiled: CompiledPolicy, activation: Activation) -> None:
        self.compiled = compiled
        self.activation = activation
        self.values: dict[str, Any] = {}
        self.errors: dict[str, str] = {}
        self.programs = dict(compiled.variables)
        activation.set("variables", {})

    def _value(self, program: Program, seen: frozenset[str]) -> Any:
        """Run ``program`` with the variables evaluated so far; a read of one not evaluated
        yet (a missing key of ``variables``) evaluates it, and the program runs again."""
        while True:
            try:
                return evaluate(program, self.activation)
            except CelError as exc:
                name = exc.missing
                if name not in self.programs or name in self.values or name in seen:
                    raise
                if name in self.errors:
                    raise _EvalError(
                        f'composited variable "{name}" fails to evaluate: {self.errors[name]}'
                    ) from None
                try:
                    self.values[name] = self._value(self.programs[name], seen | {name})
                except (CelError, _EvalError) as inner:
                    self.errors[name] = str(inner)
                    raise _EvalError(
                        f'composited variable "{name}" fails to evaluate: {inner}'
                    ) from None
                self.activation.set("variables", dict(self.values))

    def run(self, program: Program) -> Any:
        """The value of ``program``; ``_EvalError`` with upstream's message when it fails."""
        try:
            return self._value(program, frozenset())
        except (CelError, _EvalError) as exc:
            raise _EvalError(
                f"expression '{program.expression}' resulted in error: {exc}"
            ) from None


class ValidatingAdmissionPolicies:
    """The ``ValidatingAdmissionPolicy`` admission plugin over one simulator's store.

    Only policies named by at least one binding (``spec.policyName``) are evaluated; a request
    is evaluated against a policy when its ``matchConstraints`` match and, per binding, when
    the binding's ``matchResources`` match (``kubesim.plugins.admission.matching``). Per
    binding the parameters are collected (``_collect_params``) and the policy is evaluated
    once per parameter (``_validate``), then the binding's actions are taken (``_act``).

    Every expression is compiled once per policy generation (``compiled``: a cache keyed by
    the policy's uid and ``metadata.generation``); a request meets a dictionary lookup when no
    binding exists. The ``authorizer`` variable is declared but not served (an expression
    using it errs and follows ``failurePolicy``).
    """

    def __init__(self, registry: GenericStore) -> None:
        self.registry = registry
        self._compiled: dict[str, tuple[Any, CompiledPolicy]] = {}

    # --- requests ---------------------------------------------------------------------------

    def compiled(self, policy: Mapping[str, Any]) -> CompiledPolicy:
        meta = policy.get("metadata") or {}
        uid = self._uid(policy)
        # spec changes bump the generation; status writes (same generation) reuse the programs
        version = meta.get("generation") or meta.get("resourceVersion")
        cached = self._compiled.get(uid)
        if cached is not None and cached[0] == version:
            return cached[1]
        result = compile_policy(policy)
        self._compiled[uid] = (version, result)
        return result

    def __call__(self, call: AdmissionCall) -> None:
        bindings = self.registry.store.objects(BINDINGS)
        if not bindings:
            return
        by_policy: dict[str, list[Mapping[str, Any]]] = {}
        for key in sorted(bindings):
            spec_of = bindings[key].get("spec") or {}
            by_policy.setdefault(str(spec_of.get("policyName") or ""), []).append(bindings[key])
        policies = self.registry.store.objects(POLICIES)
        live = {str(k[1]) for k in policies}
        if len(self._compiled) > len(policies):  # deleted policies' programs
            current = {self._uid(p) for p in policies.values()}
            for uid in [u for u in self._compiled if u not in current]:
                del self._compiled[uid]
        denied: list[_Decision] = []
        req = self._request_facts(call)
        state = _RequestState(self, call)
        for name in sorted(by_policy):
            if name not in live:
                continue
            policy = policies[("", name)]
            spec = policy.get("spec") or {}
            if not matches_resources(spec.get("matchConstraints"), req, policy=True):
                continue
            compiled = self.compiled(policy)
            fail = compiled.failure_policy != "Ignore"
            if compiled.config_error:
                if fail:
                    denied.append(
                        _Decision(name, "", f"failed to configure policy: {compiled.config_error}")
                    )
                continue
            for binding in by_policy[name]:
                bspec = binding.get("spec") or {}
                bname = str((binding.get("metadata") or {}).get("name") or "")
                if not matches_resources(bspec.get("matchResources"), req, policy=False):
                    continue
                try:
                    params = self._collect_params(spec, bspec, call)
                except _EvalError as exc:
                    if fail:
                        denied.append(_Decision(name, bname, f"failed to configure binding: {exc}"))
                    continue
                for param in params:
                    result = self._validate(compiled, state, param)
                    self._act(
                        result, policy=name, binding=bname, bspec=bspec, call=call, denied=denied
                    )
        if denied:
            raise self._denial(call, denied[0])

    @staticmethod
    def _uid(policy: Mapping[str, Any]) -> str:
        meta = policy.get("metadata") or {}
        return str(meta.get("uid") or meta.get("name") or "")

    def _request_facts(self, call: AdmissionCall) -> Request:
        rt = call.rt
        namespace = call.namespace if rt.namespaced else ""

        def namespace_labels() -> Mapping[str, str] | None:
            ns = self.registry.store.get("namespaces", ("", namespace))
            return _labels(ns)

        return Request(
            operation=call.operation,
            group=rt.group,
            version=rt.version,
            resource=rt.plural,
            subresource=call.subresource,
            name=call.name,
            namespace=namespace,
            labels_new=_labels(call.obj),
            labels_old=_labels(call.old),
            namespace_labels=namespace_labels,
        )

    def _collect_params(
        self, spec: Mapping[str, Any], bspec: Mapping[str, Any], call: AdmissionCall
    ) -> list[Any]:
        """``generic.CollectParams``: the parameter objects to evaluate the policy with.

        ``paramKind`` + ``paramRef``: by name or selector, in the request's namespace unless
        ``paramRef.namespace`` says otherwise; none found is allowed, or a denial with
        ``parameterNotFoundAction: Deny``; one ``params: null`` without a paramKind."""
        kind = spec.get("paramKind")
        ref = bspec.get("paramRef")
        if not kind or not ref:
            return [None]
        rt = self.registry.scheme.for_kind(
            str(kind.get("apiVersion") or ""), str(kind.get("kind") or "")
        )
        if rt is None or self.registry.scheme.is_virtual(rt):
            raise _EvalError(f"paramKind kind `{_param_kind_text(kind)}` not known")
        namespace = ""
        if rt.namespaced:
            namespace = str(ref.get("namespace") or "") or (
                call.namespace if call.rt.namespaced else ""
            )
            if not namespace:
                raise _EvalError(
                    "cannot use namespaced paramRef in policy binding that matches cluster-scoped"
                    " resources"
                )
        elif ref.get("namespace"):
            raise _EvalError(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
            )
        params: list[Any]
        if ref.get("name"):
            found = self.registry.find(rt, namespace, str(ref["name"]))
            params = [] if found is None else [self.registry.to_wire(rt, found)]
        elif ref.get("selector") is not None:
            try:
                selector = LabelSelector.from_dict(ref.get("selector"))
            except SelectorError as exc:
                raise _EvalError(str(exc)) from None
            params = [
                self.registry.to_wire(rt, o)
                for o in self.registry.list_matching(
                    rt, namespace if rt.namespaced else None, labels=selector
                )
            ]
        else:
            raise _EvalError("one of name or selector must be provided")
        if not params and ref.get("parameterNotFoundAction") == "Deny":
            raise _EvalError(
                "no params found for policy binding with `Deny` parameterNotFoundAction"
            )
        return params

    def _validate(self, compiled: CompiledPolicy, state: _RequestState, param: Any) -> _Result:
        """``validator.Validate`` for one parameter: matchConditions, then validations, then
        audit annotations; evaluation errors become failures only under ``failurePolicy:
        Fail``.

        ``matchConditions`` first (all must be true; a false one skips the policy), then each
        validation with ``object``, ``oldObject`` (null on CREATE, ``object`` null on DELETE),
        ``request`` (an AdmissionRequest: kind, resource, subResource, requestKind..., name,
        namespace, operation, userInfo, dryRun, options), ``params``, ``namespaceObject`` and
        ``variables`` (``spec.variables``, evaluated on first use, once per evaluation). A
        validation that is not true fails with ``messageExpression``'s result, else
        ``message``, else ``failed expression: <expression>``; its ``reason`` (default Invalid)
        gives the code (Forbidden 403, Unauthorized 401, RequestEntityTooLarge 413, otherwise
        422). A runtime error is ``expression '<e>' resulted in error: <error>`` (failing only
        under ``Fail``, the default); configuration problems (missing params, unknown
        paramKind) are ``failed to configure binding: ...`` under the same rule."""
        fail = compiled.failure_policy != "Ignore"
        ev = _Evaluation(compiled, state.activation(param))
        out = _Result()
        errors: list[str] = []
        for _, program in compiled.match_conditions:
            try:
                value = ev.run(program)
            except _EvalError as exc:
                errors.append(str(exc))
                continue
            if value is False:
                return out
        if errors:
            if fail:
                text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
                out.failed.append((0, _Decision(compiled.name, "", text)))
            return out
        for i, val in enumerate(compiled.validations):
            try:
                value = ev.run(val.program)
            except _EvalError as exc:
                if fail:
                    out.failed.append((i, _Decision(compiled.name, "", str(exc))))
                continue
            if value is True:
                continue
            message = ""
            if val.message_program is not None:
                try:
                    got = ev.run(val.message_program)
                except _EvalError:
                    got = None
                if isinstance(got, str):
                    got = got.strip()
                    if len(got.encode()) <= MAX_MESSAGE_BYTES and "\n" not in got:
                        message = got
            if not message and val.message:
                message = val.message.strip()
            if not message:
                message = f"failed expression: {val.expression.strip()}"
            out.failed.append((i, _Decision(compiled.name, "", message, val.reason)))
        for key, program in compiled.audit_annotations:
            try:
                value = ev.run(program)
            except _EvalError as exc:
                if fail:
                    out.annotation_errors.append(_Decision(compiled.name, "", str(exc)))
                continue
            if value is None:
                continue
            if not isinstance(value, str):
                if fail:
                    message = (
                        f"valueExpression '{program.expression}' resulted in unsupported return"
                        f" type: {_cel_type(value)}. Return type must be either string or null."
                    )
                    out.annotation_errors.append(_Decision(compiled.name, "", message))
                continue
            if value.strip():
                out.annotations.append((f"{compiled.name}/{key}", value.strip()[:MAX_AUDIT_VALUE]))
        return out

    def _act(
        self,
        result: _Result,
        *,
        policy: str,
        binding: str,
        bspec: Mapping[str, Any],
        call: AdmissionCall,
        denied: list[_Decision],
    ) -> None:
        """The binding's ``validationActions`` applied to one evaluation's failures.

        ``Deny`` fails the request with ``<resource> "<name>" is forbidden:
        ValidatingAdmissionPolicy '<p>' with binding '<b>' denied request: <message>`` (the
        first denial wins; the Status has that text as its one cause), ``Warn`` adds a
        ``Warning`` header ``Validation failed for ValidatingAdmissionPolicy '<p>' with binding
        '<b>': <message>``, ``Audit`` records the ``validation.policy.admission.k8s.io/
        validation_failure`` annotation on the request log entry, as ``auditAnnotations``
        do."""
        actions = [a for a in bspec.get("validationActions") or [] if isinstance(a, str)]
        notes = call.notes.audit_annotations
        for key, value in result.annotations:
            known = notes.get(key)
            if not known:
                notes[key] = value
            elif value not in known.split(", "):
                notes[key] = f"{known}, {value}"  # distinct values from several bindings
        for decision in result.annotation_errors:
            decision.binding = binding
            denied.append(decision)
        for index, decision in result.failed:
            decision.binding = binding
            for action in actions:
                if action == "Deny":
                    denied.append(decision)
                elif action == "Warn":
                    call.notes.warnings.append(
                        f"Validation failed for ValidatingAdmissionPolicy '{policy}' with"
                        f" binding '{binding}': {decision.message}"
                    )
                elif action == "Audit":
                    call.notes.audit_annotations[VALIDATION_FAILURE_KEY] = json.dumps(
                        [
                            {
                                "message": decision.message,
                                "policy": policy,
                                "binding": binding,
                                "expressionIndex": index,
                                "validationActions": actions,
                            }
                        ],
                        separators=(",", ":"),
                    )

    @staticmethod
    def _denial(call: AdmissionCall, decision: _Decision) -> StatusError:
        """``admission.NewForbidden`` with the decision's reason and code, one cause."""
        if decision.binding:
            message = (
                f"ValidatingAdmissionPolicy '{decision.policy}' with binding"
                f" '{decision.binding}' denied request: {decision.message}"
            )
        else:
            message = (
                f"ValidatingAdmissionPolicy '{decision.policy}' denied request: {decision.message}"
            )
        rt = call.rt
        qualified = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
        head = f'{qualified} "{call.name}"' if call.name else qualified
        reason = decision.reason or "Invalid"
        return StatusError(
            _CODES.get(reason, 422),
            reason,
            f"{head} is forbidden: {message}",
            name=call.name,
            group=rt.group,
            kind=rt.plural,
            causes=(Cause(message=message),),
        )


def _cel_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


class _RequestState:
    """The request's CEL variables, built once per request and only when a binding matches."""

    def __init__(self, plugin: ValidatingAdmissionPolicies, call: AdmissionCall) -> None:
        self.plugin = plugin
        self.call = call
        self._activation: Activation | None = None

    def activation(self, param: Any) -> Activation:
        """The request's variables (converted to CEL once per request) with ``params``."""
        if self._activation is None:
            self._activation = Activation(
                {
                    "object": self.call.obj,
                    "oldObject": self.call.old,
                    "request": admission_request(self.call),
                    "namespaceObject": self._namespace_object(),
                }
            )
        self._activation.set("params", param)
        return self._activation

    def _namespace_object(self) -> dict[str, Any] | None:
        call = self.call
        if not call.rt.namespaced or not call.namespace:
            return None
        ns = self.plugin.registry.store.get("namespaces", ("", call.namespace))
        if ns is None:
            return None
        out = dict(ns)
        meta = dict(out.get("metadata") or {})
        meta.pop("managedFields", None)
        out["metadata"] = meta
        return out


def admission_request(call: AdmissionCall) -> dict[str, Any]:
    """``cel.CreateAdmissionRequest``: the AdmissionRequest CEL sees as ``request``.

    Empty optional fields are left out, as the Go type's ``omitempty`` drops them (``has()``
    tells whether they are set); kubesim serves one version per resource, so the request's
    kind and resource are also its ``requestKind`` and ``requestResource``.
    """
    rt = call.rt
    if call.kind:
        kind = {"group": call.kind_group, "version": call.kind_version, "kind": call.kind}
    else:
        kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    resource = {"group": rt.group, "version": rt.version, "resource": rt.plural}
    out: dict[str, Any] = {"uid": str(uuid.uuid4()), "kind": kind, "resource": resource}
    if call.subresource:
        out["subResource"] = call.subresource
    out["requestKind"] = dict(kind)
    out["requestResource"] = dict(resource)
    if call.subresource:
        out["requestSubResource"] = call.subresource
    if call.name:
        out["name"] = call.name
    namespace = call.namespace if rt.namespaced else ""
    if namespace:
        out["namespace"] = namespace
    out["operation"] = call.operation
    out["userInfo"] = call.request.user.to_dict()
    out["dryRun"] = call.dry_run
    options_kind = _OPTIONS_KIND.get(call.request.verb, "CreateOptions")
    options: dict[str, Any] = {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"}
    if call.dry_run:
        options["dryRun"] = ["All"]
    out["options"] = options
    return out
