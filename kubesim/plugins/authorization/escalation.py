"""RBAC escalation prevention, as kube-apiserver's RBAC registry enforces it
(``pkg/registry/rbac/escalation_check.go``, ``role/policybased``, ``clusterrole/policybased``,
``rolebinding/policybased``, ``clusterrolebinding/policybased``).

RBAC would be pointless if whoever may write Roles could grant themselves anything, so on
create and update of an RBAC object, before validation, ``EscalationCheck`` refuses what the
user could not have done themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from kubesim.core.attributes import MASTERS, Attributes, current_attributes
from kubesim.core.errors import StatusError, not_found
from kubesim.core.scheme import ResourceType
from kubesim.plugins.authorization import Decision
from kubesim.plugins.authorization.rbac import (
    RBAC_GROUP,
    PolicyRule,
    RuleResolver,
    aggregate_errors,
    rules_of,
)
from kubesim.registry.generic import GenericStore

__all__ = [
    "FULL_AUTHORITY",
    "Authorize",
    "EscalationCheck",
    "compact_rules",
    "covers",
    "missing_rules",
]

FULL_AUTHORITY: Final = (
    PolicyRule(verbs=("*",), api_groups=("*",), resources=("*",)),
    PolicyRule(verbs=("*",), non_resource_urls=("*",)),
)
_GC_FIELDS: Final = frozenset(
    {"ownerReferences", "finalizers", "resourceVersion", "managedFields", "generation"}
)

Authorize = Callable[[Attributes], tuple[Decision, str]]


# --- policy_comparator.go ------------------------------------------------------------------


def breakdown_rule(rule: PolicyRule) -> list[PolicyRule]:
    """``BreakdownRule``: one verb, one resource, at most one name per sub-rule."""
    out: list[PolicyRule] = []
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                if rule.resource_names:
                    out.extend(
                        PolicyRule((verb,), (group,), (resource,), (name,))
                        for name in rule.resource_names
                    )
                else:
                    out.append(PolicyRule((verb,), (group,), (resource,)))
    out.extend(
        PolicyRule((verb,), non_resource_urls=(url,))
        for url in rule.non_resource_urls
        for verb in rule.verbs
    )
    return out


def _resource_covers_all(owned: tuple[str, ...], wanted: tuple[str, ...]) -> bool:
    if "*" in owned or all(w in owned for w in wanted):
        return True
    for path in wanted:
        if path in owned:
            continue
        if "/" not in path:
            return False
        if "*/" + path.split("/", 1)[1] not in owned:
            return False
    return True


def _url_covers(owner: str, sub: str) -> bool:
    return owner == sub or (owner.endswith("*") and sub.startswith(owner.rstrip("*")))


def rule_covers(owner: PolicyRule, sub: PolicyRule) -> bool:
    """``ruleCovers``: the owner rule grants everything of the broken-down sub-rule."""
    verbs = "*" in owner.verbs or all(v in owner.verbs for v in sub.verbs)
    groups = "*" in owner.api_groups or all(g in owner.api_groups for g in sub.api_groups)
    resources = _resource_covers_all(owner.resources, sub.resources)
    urls = all(
        any(_url_covers(o, u) for o in owner.non_resource_urls) for u in sub.non_resource_urls
    )
    if not sub.resource_names:
        names = not owner.resource_names
    else:
        names = not owner.resource_names or all(
            n in owner.resource_names for n in sub.resource_names
        )
    return verbs and groups and resources and names and urls


def missing_rules(owner: Iterable[PolicyRule], servant: Iterable[PolicyRule]) -> list[PolicyRule]:
    owned = list(owner)
    return [
        sub
        for rule in servant
        for sub in breakdown_rule(rule)
        if not any(rule_covers(o, sub) for o in owned)
    ]


def covers(owner: Iterable[PolicyRule], servant: Iterable[PolicyRule]) -> bool:
    """``validation.Covers``."""
    return not missing_rules(owner, servant)


def compact_rules(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """``CompactRules``: rules of one group and one resource (and at most one name) merge verbs."""
    out: list[PolicyRule] = []
    simple: dict[tuple[str, str, tuple[str, ...]], PolicyRule] = {}
    for rule in rules:
        if (
            len(rule.resource_names) <= 1
            and not rule.non_resource_urls
            and len(rule.api_groups) == 1
            and len(rule.resources) == 1
        ):
            key = (rule.api_groups[0], rule.resources[0], rule.resource_names)
            have = simple.get(key)
            simple[key] = (
                rule
                if have is None
                else PolicyRule(
                    have.verbs + rule.verbs, have.api_groups, have.resources, have.resource_names
                )
            )
        else:
            out.append(rule)
    return out + list(simple.values())


# --- the checks --------------------------------------------------------------------------


def _go_groups(groups: Iterable[str]) -> str:
    import json

    return "[" + " ".join(json.dumps(g, ensure_ascii=False) for g in groups) + "]"


def _forbidden(rt: ResourceType, name: str, message: str) -> StatusError:
    return StatusError(
        403,
        "Forbidden",
        f'{rt.plural}.{rt.group} "{name}" is forbidden: {message}',
        name=name,
        group=rt.group,
        kind=rt.plural,
    )


def confirm_no_escalation(
    resolver: RuleResolver, attrs: Attributes, namespace: str, rules: Iterable[PolicyRule]
) -> str | None:
    """``ConfirmNoEscalation``: None when the user holds every rule, else the message."""
    owner, errors = resolver.rules_for(attrs.user, namespace)
    missing = missing_rules(owner, rules)
    if not missing:
        return None
    lines = sorted({r.compact_string() for r in compact_rules(missing)})
    user = attrs.user
    message = (
        f'user "{user.name}" (groups={_go_groups(user.groups)}) is attempting to grant RBAC'
        " permissions not currently held:\n" + "\n".join(lines)
    )
    if errors:
        message += f"; resolution errors: [{aggregate_errors(errors)}]"
    return message


def _only_gc_fields_changed(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    def strip(obj: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(obj)
        meta = out.get("metadata")
        if isinstance(meta, dict):
            out["metadata"] = {k: v for k, v in meta.items() if k not in _GC_FIELDS}
        return out

    return strip(new) == strip(old)


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return ""
    return str(meta.get("name") or meta.get("generateName") or "")


def _namespace(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("namespace") or "") if isinstance(meta, dict) else ""


class EscalationCheck:
    """The admission plugin (``GenericStore.admission``) that refuses an escalation.

    * members of ``system:masters`` (and kubesim's own in-process writes) pass;
    * a Role or ClusterRole passes when the user may ``escalate`` it (verb ``escalate`` on
      ``roles``/``clusterroles`` with its name), or when the user already holds every
      permission it grants (``covers`` of the user's rules in that namespace — cluster-wide
      ones for a ClusterRole); a ClusterRole with an ``aggregationRule`` needs full authority
      (``*`` on everything) instead: ``must have cluster-admin privileges to use the
      aggregationRule``;
    * a RoleBinding or ClusterRoleBinding passes when the user may ``bind`` its ``roleRef``
      (verb ``bind`` on ``roles``/``clusterroles`` named so, in the binding's namespace), or
      holds every permission of the referenced role (a missing role is its 404);
    * otherwise the answer is a 403 ``<resource> "<name>" is forbidden: user "u"
      (groups=[...]) is attempting to grant RBAC permissions not currently held:`` and the
      missing permissions, one ``CompactString`` a line (``compact_rules`` merges the verbs
      of one group/resource).

    An update that only changes what the garbage collector writes (owner references,
    finalizers) is not checked, as upstream.
    """

    def __init__(
        self, registry: GenericStore, resolver: RuleResolver, authorize: Authorize
    ) -> None:
        self.registry = registry
        self.resolver = resolver
        self.authorize = authorize

    def __call__(
        self, op: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if rt.group != RBAC_GROUP or op not in ("CREATE", "UPDATE"):
            return
        request = current_attributes()
        if request is None or MASTERS in request.user.groups:
            return
        if old is not None and _only_gc_fields_changed(obj, old):
            return
        if rt.kind in ("Role", "ClusterRole"):
            self._check_role(rt, obj, request)
        elif rt.kind in ("RoleBinding", "ClusterRoleBinding"):
            self._check_binding(rt, obj, request)

    def _allowed(self, request: Attributes, verb: str, resource: str, ns: str, name: str) -> bool:
        attrs = Attributes(
            user=request.user,
            verb=verb,
            namespace=ns,
            resource=resource,
            name=name,
            api_group=RBAC_GROUP,
            api_version="v1",
        )
        decision, _ = self.authorize(attrs)
        return decision is Decision.ALLOW

    def _check_role(self, rt: ResourceType, obj: dict[str, Any], request: Attributes) -> None:
        name = _name(obj)
        namespace = _namespace(obj) if rt.namespaced else ""
        if self._allowed(request, "escalate", rt.plural, namespace, name):
            return
        aggregates = rt.kind == "ClusterRole" and isinstance(obj.get("aggregationRule"), dict)
        if aggregates and confirm_no_escalation(self.resolver, request, namespace, FULL_AUTHORITY):
            raise _forbidden(
                rt, name, "must have cluster-admin privileges to use the aggregationRule"
            )
        problem = confirm_no_escalation(self.resolver, request, namespace, rules_of(obj))
        if problem is not None:
            raise _forbidden(rt, name, problem)

    def _check_binding(self, rt: ResourceType, obj: dict[str, Any], request: Attributes) -> None:
        name = _name(obj)
        namespace = _namespace(obj) if rt.namespaced else ""
        raw = obj.get("roleRef")
        ref: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
        kind = ref.get("kind")
        if kind not in ("Role", "ClusterRole"):
            return  # validation answers with its 422
        resource = "roles" if kind == "Role" else "clusterroles"
        ref_name = str(ref.get("name") or "")
        if self._allowed(request, "bind", resource, namespace, ref_name):
            return
        try:
            rules = self.resolver.role_reference_rules(ref, namespace)
        except LookupError:
            raise not_found(resource, RBAC_GROUP, ref_name) from None
        problem = confirm_no_escalation(self.resolver, request, namespace, rules)
        if problem is not None:
            raise _forbidden(rt, name, problem)
