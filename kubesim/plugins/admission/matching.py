"""Which requests a policy (``matchConstraints``) or a binding (``matchResources``) covers,
as upstream's ``policy/matching`` and the webhook rule matcher.

``matchPolicy: Equivalent`` would also match a request made through another version of the
same resource; kubesim serves each resource in one version, so Equivalent and Exact agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from kube.labels import LabelSelector, SelectorError

__all__ = ["Request", "matches_resources"]


class Request:
    """The facts of one admission request that matching reads."""

    __slots__ = (
        "group",
        "labels_new",
        "labels_old",
        "name",
        "namespace",
        "namespace_labels",
        "operation",
        "resource",
        "subresource",
        "version",
    )

    def __init__(
        self,
        *,
        operation: str,
        group: str,
        version: str,
        resource: str,
        subresource: str,
        name: str,
        namespace: str,
        labels_new: Mapping[str, str] | None,
        labels_old: Mapping[str, str] | None,
        namespace_labels: Callable[[], Mapping[str, str] | None],
    ) -> None:
        self.operation = operation
        self.group = group
        self.version = version
        self.resource = resource
        self.subresource = subresource
        self.name = name
        self.namespace = namespace
        self.labels_new = labels_new
        self.labels_old = labels_old
        self.namespace_labels = namespace_labels


def _in(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def _resource_matches(patterns: Any, resource: str, subresource: str) -> bool:
    """``resource/subresource`` patterns; ``*`` stands for any one part (``pods/*`` includes
    pods itself, as upstream's rule matcher compares the parts one by one)."""
    if not isinstance(patterns, list):
        return False
    for pattern in patterns:
        if not isinstance(pattern, str):
            continue
        res, _, sub = pattern.partition("/")
        if res in ("*", resource) and sub in ("*", subresource):
            return True
    return False


def _rule_matches(rule: Mapping[str, Any], req: Request) -> bool:
    if not _in(rule.get("operations"), req.operation):
        return False
    if not _in(rule.get("apiGroups"), req.group):
        return False
    if not _in(rule.get("apiVersions"), req.version):
        return False
    if not _resource_matches(rule.get("resources"), req.resource, req.subresource):
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and req.namespace:
        return False
    if scope == "Namespaced" and not req.namespace:
        return False
    names = rule.get("resourceNames")
    return not names or req.name in names


def _rules_match(rules: Any, req: Request) -> bool:
    return isinstance(rules, list) and any(
        isinstance(r, Mapping) and _rule_matches(r, req) for r in rules
    )


class _Nothing:
    def is_empty(self) -> bool:
        return False

    def matches(self, labels: Mapping[str, str]) -> bool:
        return False


_NOTHING: Final = _Nothing()


def _selector(value: Any) -> LabelSelector | _Nothing | None:
    """None for an empty selector (everything); a bad one matches nothing (``Nothing()``)."""
    if not value:
        return None
    try:
        sel = LabelSelector.from_dict(value)
    except SelectorError:
        return _NOTHING
    return None if sel.is_empty() else sel


def matches_resources(match: Mapping[str, Any] | None, req: Request, *, policy: bool) -> bool:
    """Whether ``match`` (a MatchResources) covers ``req``.

    * ``excludeResourceRules`` win over ``resourceRules``; a binding without ``matchResources``
      (or with no ``resourceRules``) covers everything its policy covers;
    * a rule matches on operation (``*`` for all), API group, API version, resource and
      ``scope``; ``pods`` is the main resource only, ``pods/status`` one subresource, ``pods/*``
      pods and every subresource of pods, ``*/status`` the status of everything, ``*`` every main
      resource and ``*/*`` everything; ``resourceNames`` restricts by the object's name;
    * ``namespaceSelector`` is matched against the labels of the request's namespace; a
      cluster-scoped object is always in (a Namespace is matched by its own labels);
    * ``objectSelector`` is matched against the labels of the new or of the old object (either
      suffices), so an update that removes a label is still seen.
    """
    if match is None:
        return not policy
    if _rules_match(match.get("excludeResourceRules"), req):
        return False
    rules = match.get("resourceRules")
    if (rules or policy) and not _rules_match(rules, req):
        return False
    ns_sel = _selector(match.get("namespaceSelector"))
    if ns_sel is not None:
        if req.resource == "namespaces" and not req.group:
            labels = req.labels_new if req.labels_new is not None else req.labels_old
            if not ns_sel.matches(labels or {}):
                return False
        elif req.namespace:
            ns_labels = req.namespace_labels()
            if not ns_sel.matches(ns_labels or {}):
                return False
    obj_sel = _selector(match.get("objectSelector"))
    if obj_sel is not None:
        hit = (req.labels_new is not None and obj_sel.matches(req.labels_new)) or (
            req.labels_old is not None and obj_sel.matches(req.labels_old)
        )
        if not hit:
            return False
    return True
