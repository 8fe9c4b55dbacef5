"""The strategies of the RBAC kinds: defaulting and validation of Roles, ClusterRoles and their
bindings, as ``pkg/apis/rbac/v1/defaults.go`` and ``pkg/apis/rbac/validation/validation.go`` do
it.

The messages keep Go's formatting of the bad value (``[]string{"/healthz"}``,
``rbac.RoleRef{...}``), since clients show them as they come.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from kube.labels import LabelSelector, SelectorError, dns1123_subdomain_errors
from kube.objects import InvalidObject
from kubesim.core.errors import Cause
from kubesim.core.names import path_segment_name_errors
from kubesim.registry.strategy import Strategy

__all__ = ["RBAC_KINDS", "STRATEGIES", "apply_rbac_defaults", "check_shape", "rbac_causes"]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
RBAC_KINDS: Final = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})


_RULE_LISTS: Final = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")


def check_shape(kind: str, obj: Mapping[str, Any]) -> None:
    """The decoding step: a field of the wrong JSON type raises InvalidObject (a 400, as the
    Go decoder's ``cannot unmarshal``), so malformed rules never reach the authorizer."""
    meta = obj.get("metadata")
    name = str(meta.get("name") or "") if isinstance(meta, Mapping) else ""

    def fail(path: str, detail: str) -> InvalidObject:
        return InvalidObject(kind, name, path, detail)

    def need_list(value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise fail(path, f"must be a list, not {type(value).__name__}")
        return value

    def need_object(value: Any, path: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise fail(path, f"must be an object, not {type(value).__name__}")
        return value

    def need_string(value: Any, path: str) -> None:
        if value is not None and not isinstance(value, str):
            raise fail(path, f"must be a string, not {value!r}")

    if kind in ("Role", "ClusterRole"):
        for i, raw in enumerate(need_list(obj.get("rules"), "rules")):
            rule = need_object(raw, f"rules[{i}]")
            for key in _RULE_LISTS:
                for j, item in enumerate(need_list(rule.get(key), f"rules[{i}].{key}")):
                    need_string(item, f"rules[{i}].{key}[{j}]")
        if kind == "ClusterRole":
            agg = need_object(obj.get("aggregationRule"), "aggregationRule")
            path = "aggregationRule.clusterRoleSelectors"
            for i, selector in enumerate(need_list(agg.get("clusterRoleSelectors"), path)):
                labels = need_object(
                    need_object(selector, f"{path}[{i}]").get("matchLabels"),
                    f"{path}[{i}].matchLabels",
                )
                for key, value in labels.items():
                    need_string(value, f"{path}[{i}].matchLabels.{key}")
    elif kind in ("RoleBinding", "ClusterRoleBinding"):
        ref = need_object(obj.get("roleRef"), "roleRef")
        for key in ("apiGroup", "kind", "name"):
            need_string(ref.get(key), f"roleRef.{key}")
        for i, raw in enumerate(need_list(obj.get("subjects"), "subjects")):
            subject = need_object(raw, f"subjects[{i}]")
            for key in ("kind", "apiGroup", "name", "namespace"):
                need_string(subject.get(key), f"subjects[{i}].{key}")


def _go_strings(values: Any) -> str:
    items = values if isinstance(values, list) else []
    return "[]string{" + ", ".join(json.dumps(str(v)) for v in items) + "}"


def _q(value: Any) -> str:
    return json.dumps("" if value is None else str(value), ensure_ascii=False)


def apply_rbac_defaults(kind: str, obj: dict[str, Any]) -> None:
    """``SetDefaults_Subject`` / ``SetDefaults_*RoleBinding``: a User or Group subject and a
    ``roleRef`` without ``apiGroup`` get ``rbac.authorization.k8s.io``.
    """
    if kind not in ("RoleBinding", "ClusterRoleBinding"):
        return
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = RBAC_GROUP
    subjects = obj.get("subjects")
    if isinstance(subjects, list):
        for subject in subjects:
            if (
                isinstance(subject, dict)
                and not subject.get("apiGroup")
                and subject.get("kind") in ("User", "Group")
            ):
                subject["apiGroup"] = RBAC_GROUP


def _rule_causes(rule: Any, *, namespaced: bool, path: str) -> list[Cause]:
    if not isinstance(rule, Mapping):
        return [Cause("FieldValueInvalid", "Invalid value: must be an object", path)]
    causes: list[Cause] = []
    verbs = rule.get("verbs") or []
    if not verbs:
        causes.append(
            Cause(
                "FieldValueRequired",
                "Required value: verbs must contain at least one value",
                f"{path}.verbs",
            )
        )
    urls = rule.get("nonResourceURLs") or []
    if urls:
        shown = _go_strings(urls)
        if namespaced:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {shown}: namespaced rules cannot apply to non-resource URLs",
                    f"{path}.nonResourceURLs",
                )
            )
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {shown}: rules cannot apply to both regular resources and"
                    " non-resource URLs",
                    f"{path}.nonResourceURLs",
                )
            )
        return causes
    if not rule.get("apiGroups"):
        causes.append(
            Cause(
                "FieldValueRequired",
                "Required value: resource rules must supply at least one api group",
                f"{path}.apiGroups",
            )
        )
    resources = rule.get("resources") or []
    if not resources:
        causes.append(
            Cause(
                "FieldValueRequired",
                "Required value: resource rules must supply at least one resource",
                f"{path}.resources",
            )
        )
    if rule.get("resourceNames") and len(resources) > 1:
        causes.append(
            Cause(
                "FieldValueRequired",
                "Required value: resource names cannot apply to multiple resources",
                f"{path}.resourceNames",
            )
        )
    return causes


def _ref_text(ref: Mapping[str, Any]) -> str:
    return (
        f"rbac.RoleRef{{APIGroup:{_q(ref.get('apiGroup'))}, Kind:{_q(ref.get('kind'))},"
        f" Name:{_q(ref.get('name'))}}}"
    )


def _subject_causes(subject: Any, *, namespaced: bool, path: str) -> list[Cause]:
    if not isinstance(subject, Mapping):
        return [Cause("FieldValueInvalid", "Invalid value: must be an object", path)]
    causes: list[Cause] = []
    name = subject.get("name") or ""
    if not name:
        causes.append(Cause("FieldValueRequired", "Required value", f"{path}.name"))
    kind = subject.get("kind") or ""
    group = subject.get("apiGroup") or ""
    if kind == "ServiceAccount":
        if name:
            causes.extend(
                Cause("FieldValueInvalid", f"Invalid value: {_q(name)}: {e}", f"{path}.name")
                for e in dns1123_subdomain_errors(str(name))
            )
        if group:
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: {_q(group)}: supported values: ""',
                    f"{path}.apiGroup",
                )
            )
        if not namespaced and not subject.get("namespace"):
            causes.append(Cause("FieldValueRequired", "Required value", f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if not name:
            word = "user" if kind == "User" else "group"
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "": {word} name cannot be empty',
                    f"{path}.name",
                )
            )
        if group != RBAC_GROUP:
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: {_q(group)}: supported values: "{RBAC_GROUP}"',
                    f"{path}.apiGroup",
                )
            )
    else:
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: {_q(kind)}: supported values: "ServiceAccount", "User",'
                ' "Group"',
                f"{path}.kind",
            )
        )
    return causes


def _binding_causes(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None, *, namespaced: bool
) -> list[Cause]:
    causes: list[Cause] = []
    raw_ref = obj.get("roleRef")
    ref: Mapping[str, Any] = raw_ref if isinstance(raw_ref, Mapping) else {}
    if (ref.get("apiGroup") or "") != RBAC_GROUP:
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: {_q(ref.get("apiGroup"))}: supported values: "{RBAC_GROUP}"',
                "roleRef.apiGroup",
            )
        )
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if ref.get("kind") not in kinds:
        supported = ", ".join(f'"{k}"' for k in kinds)
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f"Unsupported value: {_q(ref.get('kind'))}: supported values: {supported}",
                "roleRef.kind",
            )
        )
    ref_name = str(ref.get("name") or "")
    if not ref_name:
        causes.append(Cause("FieldValueRequired", "Required value", "roleRef.name"))
    else:
        causes.extend(
            Cause("FieldValueInvalid", f"Invalid value: {_q(ref_name)}: {e}", "roleRef.name")
            for e in path_segment_name_errors(ref_name)
        )
    subjects = obj.get("subjects")
    if isinstance(subjects, list):
        for i, subject in enumerate(subjects):
            causes.extend(_subject_causes(subject, namespaced=namespaced, path=f"subjects[{i}]"))
    if old is not None:
        raw_old = old.get("roleRef")
        old_ref: Mapping[str, Any] = raw_old if isinstance(raw_old, Mapping) else {}
        fields = ("apiGroup", "kind", "name")
        if any((old_ref.get(f) or "") != (ref.get(f) or "") for f in fields):
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {_ref_text(ref)}: cannot change roleRef",
                    "roleRef",
                )
            )
    return causes


def _aggregation_causes(rule: Any) -> list[Cause]:
    """``ValidateClusterRole``'s aggregationRule: at least one selector, each valid."""
    if not isinstance(rule, Mapping):
        return []
    path = "aggregationRule.clusterRoleSelectors"
    selectors = rule.get("clusterRoleSelectors") or []
    if not selectors:
        return [
            Cause(
                "FieldValueRequired",
                "Required value: at least one clusterRoleSelector required if aggregationRule"
                " is non-nil",
                path,
            )
        ]
    causes: list[Cause] = []
    for i, selector in enumerate(selectors):
        try:
            LabelSelector.from_dict(selector)
        except SelectorError as exc:
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {exc}", f"{path}[{i}]"))
    return causes


def rbac_causes(
    kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> list[Cause]:
    """The field errors of an RBAC object (metadata is checked by the caller).

    kube-apiserver rejects a malformed Role, ClusterRole, RoleBinding or ClusterRoleBinding with a
    422 naming the field: a rule without verbs, a resource rule without apiGroups or resources,
    ``resourceNames`` with several resources, ``nonResourceURLs`` in a Role or beside resources, a
    ``roleRef`` of another kind or group, a changed ``roleRef`` (it is immutable: a binding is
    deleted and recreated instead), an unknown subject kind, a ServiceAccount subject of a
    ClusterRoleBinding without a namespace. Role and binding names only need to be valid path
    segments (``system:basic-user`` is a fine name).
    """
    if kind in ("Role", "ClusterRole"):
        raw_rules = obj.get("rules")
        rules = raw_rules if isinstance(raw_rules, list) else []
        namespaced = kind == "Role"
        causes: list[Cause] = []
        for i, rule in enumerate(rules):
            causes.extend(_rule_causes(rule, namespaced=namespaced, path=f"rules[{i}]"))
        if kind == "ClusterRole":
            causes.extend(_aggregation_causes(obj.get("aggregationRule")))
        return causes
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        return _binding_causes(obj, old, namespaced=kind == "RoleBinding")
    return []


def _strategy(kind: str) -> Strategy:
    def decode(obj: Mapping[str, Any]) -> None:
        check_shape(kind, obj)

    def validate(obj: Mapping[str, Any], old: Mapping[str, Any] | None, group: str) -> list[Cause]:
        return rbac_causes(kind, obj, old)

    def defaults(obj: dict[str, Any]) -> None:
        apply_rbac_defaults(kind, obj)

    # RBAC objects only need names that fit in a URL (``minimalNameRequirements``).
    return Strategy(
        decode=decode, validate=validate, defaults=defaults, name_errors=path_segment_name_errors
    )


STRATEGIES: Final = {kind: _strategy(kind) for kind in sorted(RBAC_KINDS)}
