"""The RBAC authorizer, as kube-apiserver's ``--authorization-mode=RBAC`` evaluates a request.

Reproduced from ``plugin/pkg/auth/authorizer/rbac/rbac.go``, ``pkg/registry/rbac/validation/
rule.go`` and the rule helpers of ``k8s.io/component-helpers/auth/rbac``: ``RuleResolver``
finds a user's rules, ``rule_allows`` matches one, ``RBACAuthorizer`` decides.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubesim.core.attributes import Attributes, UserInfo
from kubesim.core.store import Store
from kubesim.plugins.authorization import Decision

__all__ = [
    "RBAC_GROUP",
    "RBAC_STORAGES",
    "PolicyRule",
    "RBACAuthorizer",
    "RuleResolver",
    "api_group_matches",
    "applies_to_user",
    "non_resource_url_matches",
    "resource_matches",
    "resource_name_matches",
    "rule_allows",
    "verb_matches",
]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
RBAC_STORAGES: Final = ("clusterroles", "clusterrolebindings", "roles", "rolebindings")
SERVICE_ACCOUNT_PREFIX: Final = "system:serviceaccount:"
ALL: Final = "*"
_CACHE_LIMIT: Final = 4096


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str))


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """``rbacv1.PolicyRule``."""

    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> PolicyRule:
        return cls(
            verbs=_strings(raw.get("verbs")),
            api_groups=_strings(raw.get("apiGroups")),
            resources=_strings(raw.get("resources")),
            resource_names=_strings(raw.get("resourceNames")),
            non_resource_urls=_strings(raw.get("nonResourceURLs")),
        )

    def to_dict(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {"verbs": list(self.verbs)}
        if self.api_groups:
            out["apiGroups"] = list(self.api_groups)
        if self.resources:
            out["resources"] = list(self.resources)
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        if self.non_resource_urls:
            out["nonResourceURLs"] = list(self.non_resource_urls)
        return out

    def compact_string(self) -> str:
        """``rbacv1helpers.CompactString``, as escalation errors list missing permissions:
        ``{APIGroups:[""], Resources:["pods"], Verbs:["get"]}``."""
        parts = [
            f"{label}:{_go_quoted(values)}"
            for label, values in (
                ("APIGroups", self.api_groups),
                ("Resources", self.resources),
                ("NonResourceURLs", self.non_resource_urls),
                ("ResourceNames", self.resource_names),
                ("Verbs", self.verbs),
            )
            if values
        ]
        return "{" + ", ".join(parts) + "}"


def _go_quoted(values: Iterable[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(json.dumps(v, ensure_ascii=False) for v in values) + "]"


def rules_of(obj: Mapping[str, Any] | None) -> tuple[PolicyRule, ...]:
    """The ``rules`` of a stored Role or ClusterRole."""
    if not obj:
        return ()
    raw = obj.get("rules")
    if not isinstance(raw, list):
        return ()
    return tuple(PolicyRule.from_dict(r) for r in raw if isinstance(r, dict))


# --- the helpers of k8s.io/component-helpers/auth/rbac -------------------------------------


def verb_matches(rule: PolicyRule, verb: str) -> bool:
    return any(v in (ALL, verb) for v in rule.verbs)


def api_group_matches(rule: PolicyRule, group: str) -> bool:
    return any(g in (ALL, group) for g in rule.api_groups)


def resource_matches(rule: PolicyRule, combined: str, subresource: str) -> bool:
    """``combined`` is ``resource`` or ``resource/subresource``; ``*/sub`` matches any
    resource's ``sub`` (only for a request with that subresource)."""
    for res in rule.resources:
        if res in (ALL, combined):
            return True
        if subresource and res == "*/" + subresource:
            return True
    return False


def resource_name_matches(rule: PolicyRule, name: str) -> bool:
    return not rule.resource_names or name in rule.resource_names


def non_resource_url_matches(rule: PolicyRule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url in (ALL, path):
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(attrs: Attributes, rule: PolicyRule) -> bool:
    """``RuleAllows``: verb, API group, ``resource[/subresource]`` (``*``, and ``*/sub`` for any
    resource's subresource) and ``resourceNames`` match; a rule with ``resourceNames`` never
    matches a request without a name (create, list, deletecollection — unless a list or watch
    names one object with ``fieldSelector=metadata.name=``); a non-resource request matches
    ``nonResourceURLs`` exactly or by a trailing ``*`` prefix."""
    if attrs.is_resource:
        combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        return (
            verb_matches(rule, attrs.verb)
            and api_group_matches(rule, attrs.api_group)
            and resource_matches(rule, combined, attrs.subresource)
            and resource_name_matches(rule, attrs.name)
        )
    return verb_matches(rule, attrs.verb) and non_resource_url_matches(rule, attrs.path)


# --- subjects ----------------------------------------------------------------------------------


def applies_to_user(user: UserInfo, subject: Mapping[str, Any], namespace: str) -> bool:
    """``appliesToUser``: a ServiceAccount subject without a namespace takes the binding's."""
    kind = subject.get("kind")
    name = subject.get("name")
    if not isinstance(name, str):
        return False
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        if not isinstance(sa_namespace, str) or not sa_namespace:
            return False
        return user.name == f"{SERVICE_ACCOUNT_PREFIX}{sa_namespace}:{name}"
    return False


def _subjects(binding: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = binding.get("subjects")
    return [s for s in raw if isinstance(s, dict)] if isinstance(raw, list) else []


def _applies_to(
    user: UserInfo, binding: Mapping[str, Any], namespace: str
) -> Mapping[str, Any] | None:
    """The binding's first subject that is the user, or None."""
    for subject in _subjects(binding):
        if applies_to_user(user, subject, namespace):
            return subject
    return None


def describe_subject(subject: Mapping[str, Any], binding_namespace: str) -> str:
    kind = str(subject.get("kind", ""))
    name = str(subject.get("name", ""))
    if kind == "ServiceAccount":
        ns = str(subject.get("namespace") or binding_namespace)
        return f'{kind} "{name}/{ns}"'
    return f'{kind} "{name}"'


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""


# --- resolution ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Grant:
    """The rules one binding gives one subject, with upstream's description of the source."""

    source: str
    rules: tuple[PolicyRule, ...]


@dataclass(frozen=True, slots=True)
class Resolved:
    """All grants of a (user, namespace), and the errors met resolving role references."""

    grants: tuple[Grant, ...]
    errors: tuple[str, ...]

    def rules(self) -> list[PolicyRule]:
        return [r for g in self.grants for r in g.rules]


class RuleResolver:
    """``DefaultRuleResolver`` over the store, with a cache per (user, namespace).

    The agent and ``evict`` make hundreds of requests a second, so the rules of each (user,
    namespace) are resolved once and cached until any RBAC object changes (``Store.revision``
    of the four RBAC storages)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cache: dict[tuple[str, tuple[str, ...], str], Resolved] = {}
        self._revisions: tuple[int, ...] = ()

    def _check_cache(self) -> None:
        revisions = tuple(self.store.revision(s) for s in RBAC_STORAGES)
        if revisions != self._revisions or len(self._cache) > _CACHE_LIMIT:
            self._cache.clear()
            self._revisions = revisions

    def role_reference_rules(
        self, role_ref: Mapping[str, Any], binding_namespace: str
    ) -> tuple[PolicyRule, ...]:
        """``GetRoleReferenceRules``; raises LookupError with upstream's message."""
        kind = role_ref.get("kind")
        name = str(role_ref.get("name", ""))
        if kind == "Role":
            role = self.store.get("roles", (binding_namespace, name))
            if role is None:
                raise LookupError(f'role.{RBAC_GROUP} "{name}" not found')
            return rules_of(role)
        if kind == "ClusterRole":
            role = self.store.get("clusterroles", ("", name))
            if role is None:
                raise LookupError(f'clusterrole.{RBAC_GROUP} "{name}" not found')
            return rules_of(role)
        raise LookupError(f'unsupported role reference kind: "{kind}"')

    def resolve(self, user: UserInfo, namespace: str) -> Resolved:
        """``VisitRulesFor``, collected: ClusterRoleBindings first, then the namespace's
        RoleBindings.

        In upstream's order: every ClusterRoleBinding whose subjects include the user (User by
        name, Group by membership, ServiceAccount by ``system:serviceaccount:NS:NAME``, its
        namespace defaulting to the binding's), then — for a namespaced request — the
        RoleBindings of that namespace, each resolved through its ``roleRef`` (a Role of the
        binding's namespace or a ClusterRole)."""
        self._check_cache()
        key = (user.name, user.groups, namespace)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        grants: list[Grant] = []
        errors: list[str] = []
        for binding in self.store.items("clusterrolebindings"):
            subject = _applies_to(user, binding, "")
            if subject is None:
                continue
            ref = binding.get("roleRef") if isinstance(binding.get("roleRef"), dict) else {}
            assert isinstance(ref, dict)
            try:
                rules = self.role_reference_rules(ref, "")
            except LookupError as exc:
                errors.append(str(exc))
                continue
            source = (
                f'ClusterRoleBinding "{_name(binding)}" of {ref.get("kind", "")}'
                f' "{ref.get("name", "")}" to {describe_subject(subject, "")}'
            )
            grants.append(Grant(source, rules))
        if namespace:
            for binding in self.store.items("rolebindings", namespace):
                subject = _applies_to(user, binding, namespace)
                if subject is None:
                    continue
                ref = binding.get("roleRef") if isinstance(binding.get("roleRef"), dict) else {}
                assert isinstance(ref, dict)
                try:
                    rules = self.role_reference_rules(ref, namespace)
                except LookupError as exc:
                    errors.append(str(exc))
                    continue
                source = (
                    f'RoleBinding "{_name(binding)}/{namespace}" of {ref.get("kind", "")}'
                    f' "{ref.get("name", "")}" to {describe_subject(subject, namespace)}'
                )
                grants.append(Grant(source, rules))
        resolved = Resolved(tuple(grants), tuple(errors))
        self._cache[key] = resolved
        return resolved

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[PolicyRule], list[str]]:
        """``RulesFor``: every rule that applies, and the resolution errors."""
        resolved = self.resolve(user, namespace)
        return resolved.rules(), list(resolved.errors)


def aggregate_errors(errors: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message, or ``[a, b]`` without repeats."""
    unique = list(dict.fromkeys(errors))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


class RBACAuthorizer:
    """``RBACAuthorizer.Authorize``: allow with the granting binding as reason, else no opinion.

    The first rule that allows wins with the reason ``RBAC: allowed by ClusterRoleBinding "b"
    of ClusterRole "r" to User "u"``; otherwise the answer is *no opinion*, whose reason is
    empty unless a binding's role could not be resolved (``RBAC:
    clusterrole.rbac.authorization.k8s.io "x" not found``) — that reason is what the 403
    message gets after a colon."""

    def __init__(self, resolver: RuleResolver) -> None:
        self.resolver = resolver

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        resolved = self.resolver.resolve(attrs.user, attrs.namespace)
        for grant in resolved.grants:
            for rule in grant.rules:
                if rule_allows(attrs, rule):
                    return Decision.ALLOW, f"RBAC: allowed by {grant.source}"
        if resolved.errors:
            return Decision.NO_OPINION, f"RBAC: {aggregate_errors(resolved.errors)}"
        return Decision.NO_OPINION, ""
