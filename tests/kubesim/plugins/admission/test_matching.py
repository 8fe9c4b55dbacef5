"""``kubesim.plugins.admission.matching``: the cases of upstream's ``policy/matching`` and
webhook rule matcher tables that translate to kubesim (one served version per resource, so the
Equivalent-versus-Exact cases that need a second version do not)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kubesim.plugins.admission.matching import Request, matches_resources


def req(
    *,
    operation: str = "CREATE",
    group: str = "apps",
    version: str = "v1",
    resource: str = "deployments",
    subresource: str = "",
    name: str = "name",
    namespace: str = "ns",
    new: Mapping[str, str] | None = None,
    old: Mapping[str, str] | None = None,
    ns_labels: Mapping[str, str] | None = None,
) -> Request:
    return Request(
        operation=operation,
        group=group,
        version=version,
        resource=resource,
        subresource=subresource,
        name=name,
        namespace=namespace,
        labels_new=new,
        labels_old=old,
        namespace_labels=lambda: ns_labels,
    )


def rule(
    groups: list[str],
    versions: list[str],
    resources: list[str],
    *,
    operations: tuple[str, ...] = ("*",),
    scope: str = "*",
    names: list[str] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "operations": list(operations),
        "apiGroups": groups,
        "apiVersions": versions,
        "resources": resources,
        "scope": scope,
    }
    if names is not None:
        out["resourceNames"] = names
    return out


def match(*rules: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"namespaceSelector": {}, "objectSelector": {}, "resourceRules": list(rules), **extra}


SCALE = {"subresource": "scale"}


@pytest.mark.parametrize(
    ("criteria", "request_kw", "expected"),
    [
        pytest.param(
            match(rule(["*"], ["*"], ["*"])), {}, True, id="wildcard rule, match as requested"
        ),
        pytest.param(
            match(
                rule(["extensions"], ["v1"], ["deployments"]),
                rule(["apps"], ["v1beta1"], ["deployments"]),
                rule(["apps"], ["v1"], ["deployments"]),
            ),
            {},
            True,
            id="specific rules, prefer exact match",
        ),
        pytest.param(
            match(
                rule(["extensions"], ["v1beta1"], ["deployments"]),
                rule(["apps"], ["v1beta1"], ["deployments"]),
            ),
            {},
            False,
            id="specific rules, match miss",
        ),
        pytest.param(
            match(
                rule(["extensions"], ["v1beta1"], ["deployments", "deployments/scale"]),
                rule(["apps"], ["v1"], ["deployments", "deployments/scale"]),
            ),
            SCALE,
            True,
            id="specific rules, subresource prefer exact match",
        ),
        pytest.param(
            match(rule(["apps"], ["v1beta1"], ["deployments", "deployments/scale"])),
            SCALE,
            False,
            id="specific rules, subresource match miss",
        ),
        pytest.param(
            match(rule(["apps"], ["v1"], ["deployments"], names=["name"])),
            {},
            True,
            id="specific rules, prefer exact match and name match",
        ),
        pytest.param(
            match(rule(["apps"], ["v1"], ["deployments"], names=["wrong-name"])),
            {},
            False,
            id="specific rules, prefer exact match and name match miss",
        ),
        pytest.param(
            match(rule(["apps"], ["v1"], ["deployments"])),
            SCALE,
            False,
            id="main resource rule does not cover a subresource",
        ),
        pytest.param(
            match(rule(["*"], ["*"], ["*/scale"])), SCALE, True, id="*/scale covers every scale"
        ),
        pytest.param(
            match(rule(["*"], ["*"], ["deployments/*"])),
            {},
            True,
            id="deployments/* covers deployments itself",
        ),
        pytest.param(match(rule(["*"], ["*"], ["*/*"])), SCALE, True, id="*/* covers everything"),
        pytest.param(
            match(rule(["*"], ["*"], ["*"], operations=("UPDATE", "DELETE"))),
            {},
            False,
            id="operation not listed",
        ),
        pytest.param(
            match(rule(["*"], ["*"], ["*"], scope="Cluster")),
            {},
            False,
            id="Cluster scope misses a namespaced request",
        ),
        pytest.param(
            match(rule(["*"], ["*"], ["*"], scope="Namespaced")),
            {"namespace": "", "group": "", "resource": "nodes"},
            False,
            id="Namespaced scope misses a cluster-scoped request",
        ),
        pytest.param(
            match(
                rule(["*"], ["*"], ["*"]),
                excludeResourceRules=[rule(["apps"], ["v1"], ["deployments"], names=["name"])],
            ),
            {},
            False,
            id="excluded by name",
        ),
        pytest.param(
            match(
                rule(["*"], ["*"], ["*"]),
                excludeResourceRules=[rule(["apps"], ["v1"], ["deployments"], names=["other"])],
            ),
            {},
            True,
            id="exclusion for another name",
        ),
    ],
)
def test_resource_rules(
    criteria: dict[str, Any], request_kw: dict[str, Any], expected: bool
) -> None:
    assert matches_resources(criteria, req(**request_kw), policy=True) is expected


SEL = {"matchLabels": {"env": "prod"}}


@pytest.mark.parametrize(
    ("criteria", "request_kw", "expected"),
    [
        pytest.param({"namespaceSelector": SEL}, {"ns_labels": {"env": "prod"}}, True, id="ns hit"),
        pytest.param(
            {"namespaceSelector": SEL}, {"ns_labels": {"env": "dev"}}, False, id="ns miss"
        ),
        pytest.param(
            {"namespaceSelector": SEL},
            {"namespace": "", "group": "", "resource": "nodes", "ns_labels": None},
            True,
            id="cluster-scoped objects are never exempted by a namespaceSelector",
        ),
        pytest.param(
            {"namespaceSelector": SEL},
            {"namespace": "", "group": "", "resource": "namespaces", "new": {"env": "prod"}},
            True,
            id="a namespace is matched by its own labels",
        ),
        pytest.param(
            {"namespaceSelector": SEL},
            {"namespace": "", "group": "", "resource": "namespaces", "new": {}},
            False,
            id="a namespace without the labels",
        ),
        pytest.param({"objectSelector": SEL}, {"new": {"env": "prod"}}, True, id="new object"),
        pytest.param(
            {"objectSelector": SEL},
            {"operation": "UPDATE", "new": {}, "old": {"env": "prod"}},
            True,
            id="old object suffices (label removed by the update)",
        ),
        pytest.param(
            {"objectSelector": SEL},
            {"operation": "DELETE", "new": None, "old": {"env": "dev"}},
            False,
            id="neither object",
        ),
        pytest.param({}, {}, True, id="binding without resourceRules covers the policy's"),
    ],
)
def test_binding_selectors(
    criteria: dict[str, Any], request_kw: dict[str, Any], expected: bool
) -> None:
    assert matches_resources(criteria, req(**request_kw), policy=False) is expected


def test_binding_without_match_resources_matches_and_policy_without_does_not() -> None:
    assert matches_resources(None, req(), policy=False)
    assert not matches_resources(None, req(), policy=True)
