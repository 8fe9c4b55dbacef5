"""The ``authorization.k8s.io/v1`` reviews: "may this user do that?" asked of the apiserver.

Reproduced from ``pkg/registry/authorization/{subjectaccessreview,selfsubjectaccessreview,
localsubjectaccessreview,selfsubjectrulesreview}`` and ``pkg/apis/authorization/validation``
(``Reviews``). They are served in every authorization mode: kubectl's ``auth can-i`` must get
an answer from an AlwaysAllow kubesim too (everything is allowed there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from kubesim.core.attributes import Attributes, UserInfo
from kubesim.core.errors import Cause, bad_request, invalid
from kubesim.core.scheme import ResourceType
from kubesim.plugins.authorization import Decision
from kubesim.plugins.authorization.rbac import PolicyRule, RuleResolver, aggregate_errors

__all__ = ["GROUP", "Reviews", "rules_review_status"]

GROUP: Final = "authorization.k8s.io"

Authorize = Callable[[Attributes], tuple[Decision, str]]


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _spec_causes(spec: Mapping[str, Any], *, needs_user: bool) -> list[Cause]:
    res = _dict(spec.get("resourceAttributes"))
    non = _dict(spec.get("nonResourceAttributes"))
    causes: list[Cause] = []
    if res is not None and non is not None:
        causes.append(
            Cause(
                "FieldValueInvalid",
                'Invalid value: "object": cannot be specified in combination with'
                " resourceAttributes",
                "spec.nonResourceAttributes",
            )
        )
    if res is None and non is None:
        causes.append(
            Cause(
                "FieldValueInvalid",
                'Invalid value: "null": exactly one of nonResourceAttributes or'
                " resourceAttributes must be specified",
                "spec.resourceAttributes",
            )
        )
    if needs_user and not spec.get("user") and not _strings(spec.get("groups")):
        causes.append(
            Cause(
                "FieldValueInvalid",
                'Invalid value: "": at least one of user or group must be specified',
                "spec.user",
            )
        )
    return causes


def _meta_not_empty(body: Mapping[str, Any], *, allow_namespace: bool) -> bool:
    meta = _dict(body.get("metadata")) or {}
    ignored = {"managedFields", "creationTimestamp"} | ({"namespace"} if allow_namespace else set())
    return any(v not in (None, "", {}, []) for k, v in meta.items() if k not in ignored)


def attributes_from_spec(spec: Mapping[str, Any], user: UserInfo) -> Attributes:
    """``authorizationutil.AuthorizationAttributesFrom``."""
    res = _dict(spec.get("resourceAttributes"))
    if res is not None:
        return Attributes(
            user=user,
            verb=str(res.get("verb") or ""),
            namespace=str(res.get("namespace") or ""),
            resource=str(res.get("resource") or ""),
            subresource=str(res.get("subresource") or ""),
            name=str(res.get("name") or ""),
            api_group=str(res.get("group") or ""),
            api_version=str(res.get("version") or ""),
        )
    non = _dict(spec.get("nonResourceAttributes")) or {}
    return Attributes(
        user=user,
        verb=str(non.get("verb") or ""),
        is_resource=False,
        path=str(non.get("path") or ""),
    )


def _spec_user(spec: Mapping[str, Any]) -> UserInfo:
    extra_raw = _dict(spec.get("extra")) or {}
    return UserInfo(
        str(spec.get("user") or ""),
        uid=str(spec.get("uid") or ""),
        groups=_strings(spec.get("groups")),
        extra={str(k): _strings(v) for k, v in extra_raw.items()},
    )


def _answer(body: dict[str, Any], decision: Decision, reason: str) -> dict[str, Any]:
    status: dict[str, Any] = {"allowed": decision is Decision.ALLOW}
    if decision is Decision.DENY:
        status["denied"] = True
    if reason:
        status["reason"] = reason
    body["status"] = status
    body.setdefault("metadata", {})
    return body


class Reviews:
    """The four reviews over one authorizer chain: each takes the review's type, the URL's
    namespace, the requester and the decoded body, and answers the review (201, never
    stored; the endpoints decode and respond).

    * ``SubjectAccessReview`` asks for any user (``spec.user``/``groups``/``uid``/``extra``),
      ``SelfSubjectAccessReview`` for the requester (``kubectl auth can-i``, with ``--as`` for
      an impersonated one), ``LocalSubjectAccessReview`` for any user within the URL's
      namespace; each is answered by the server's whole authorizer chain (``system:masters``
      first) on ``spec.resourceAttributes`` or ``spec.nonResourceAttributes``, and comes back
      as sent with ``status: {allowed, denied?, reason?, evaluationError?}``;
    * ``SelfSubjectRulesReview`` lists the requester's rules in ``spec.namespace`` (``kubectl
      auth can-i --list``) as ``resourceRules`` and ``nonResourceRules``; ``incomplete`` with
      the ``evaluationError`` when a binding's role is missing. Under AlwaysAllow it is ``*``
      on everything, as upstream's AlwaysAllow rule resolver answers;
    * a review that asks for neither or both kinds of attributes, names no user, or carries
      metadata, is a 422 naming the field (``SubjectAccessReview.authorization.k8s.io "" is
      invalid: ...``).
    """

    def __init__(self, authorize: Authorize, resolver: Callable[[], RuleResolver | None]) -> None:
        self.authorize = authorize
        self.resolver = resolver

    @staticmethod
    def _spec(body: dict[str, Any]) -> dict[str, Any]:
        spec = _dict(body.get("spec"))
        if spec is None:
            spec = {}
            body["spec"] = spec
        return spec

    def subject_access_review(
        self, rt: ResourceType, namespace: str, user: UserInfo, body: dict[str, Any]
    ) -> dict[str, Any]:
        spec = self._spec(body)
        causes = _spec_causes(spec, needs_user=True)
        if _meta_not_empty(body, allow_namespace=False):
            causes.append(Cause("FieldValueInvalid", "Invalid value: must be empty", "metadata"))
        if causes:
            raise invalid(rt.kind, GROUP, "", causes)
        decision, reason = self.authorize(attributes_from_spec(spec, _spec_user(spec)))
        return _answer(body, decision, reason)

    def local_subject_access_review(
        self, rt: ResourceType, namespace: str, user: UserInfo, body: dict[str, Any]
    ) -> dict[str, Any]:
        spec = self._spec(body)
        meta = _dict(body.get("metadata")) or {}
        body_ns = str(meta.get("namespace") or "")
        if body_ns and body_ns != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the"
                " request"
            )
        causes = _spec_causes(spec, needs_user=True)
        if _meta_not_empty(body, allow_namespace=True):
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    "Invalid value: must be empty except for namespace",
                    "metadata",
                )
            )
        res = _dict(spec.get("resourceAttributes"))
        if res is not None and str(res.get("namespace") or "") != namespace:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{res.get("namespace") or ""}": must match metadata.namespace',
                    "spec.resourceAttributes.namespace",
                )
            )
        if _dict(spec.get("nonResourceAttributes")) is not None:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    'Invalid value: "object": disallowed on this kind of request',
                    "spec.nonResourceAttributes",
                )
            )
        if causes:
            raise invalid(rt.kind, GROUP, "", causes)
        meta["namespace"] = namespace
        body["metadata"] = meta
        decision, reason = self.authorize(attributes_from_spec(spec, _spec_user(spec)))
        return _answer(body, decision, reason)

    def self_subject_access_review(
        self, rt: ResourceType, namespace: str, user: UserInfo, body: dict[str, Any]
    ) -> dict[str, Any]:
        spec = self._spec(body)
        causes = _spec_causes(spec, needs_user=False)
        if causes:
            raise invalid(rt.kind, GROUP, "", causes)
        decision, reason = self.authorize(attributes_from_spec(spec, user))
        return _answer(body, decision, reason)

    def self_subject_rules_review(
        self, rt: ResourceType, namespace: str, user: UserInfo, body: dict[str, Any]
    ) -> dict[str, Any]:
        spec = self._spec(body)
        rules_namespace = str(spec.get("namespace") or "")  # the spec's, not the URL's
        if not rules_namespace:
            raise bad_request("no namespace on request")
        body["status"] = rules_review_status(self.resolver(), user, rules_namespace)
        body.setdefault("metadata", {})
        return body


def rules_review_status(
    resolver: RuleResolver | None, user: UserInfo, namespace: str
) -> dict[str, Any]:
    """``SubjectRulesReviewStatus``; None resolver: AlwaysAllow's ``*`` everywhere."""
    if resolver is None:
        rules: list[PolicyRule] = [
            PolicyRule(verbs=("*",), api_groups=("*",), resources=("*",)),
            PolicyRule(verbs=("*",), non_resource_urls=("*",)),
        ]
        errors: list[str] = []
    else:
        rules, errors = resolver.rules_for(user, namespace)
    resource_rules: list[dict[str, Any]] = []
    non_resource_rules: list[dict[str, Any]] = []
    for rule in rules:
        if rule.resources:
            entry: dict[str, Any] = {"verbs": list(rule.verbs)}
            if rule.api_groups:
                entry["apiGroups"] = list(rule.api_groups)
            entry["resources"] = list(rule.resources)
            if rule.resource_names:
                entry["resourceNames"] = list(rule.resource_names)
            resource_rules.append(entry)
        if rule.non_resource_urls:
            non_resource_rules.append(
                {"verbs": list(rule.verbs), "nonResourceURLs": list(rule.non_resource_urls)}
            )
    status: dict[str, Any] = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": bool(errors),
    }
    if errors:
        status["evaluationError"] = aggregate_errors(errors)
    return status
