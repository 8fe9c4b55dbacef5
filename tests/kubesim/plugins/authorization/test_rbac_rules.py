"""The RBAC evaluation itself, transcribed from upstream's table tests
(``plugin/pkg/auth/authorizer/rbac/rbac_test.go`` TestAuthorizer / TestRuleMatches,
``pkg/registry/rbac/validation/rule_test.go`` TestAppliesTo, the policy comparator's Covers),
plus properties of it that must hold for any rules."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.core.attributes import ALL_AUTHENTICATED, Attributes, UserInfo
from kubesim.core.store import Store
from kubesim.plugins.authorization import Decision
from kubesim.plugins.authorization.aggregation import aggregated_rules
from kubesim.plugins.authorization.bootstrap import (
    BOOTSTRAP_CLUSTER_ROLE_BINDINGS,
    BOOTSTRAP_CLUSTER_ROLES,
)
from kubesim.plugins.authorization.escalation import (
    FULL_AUTHORITY,
    compact_rules,
    covers,
    missing_rules,
)
from kubesim.plugins.authorization.rbac import (
    PolicyRule,
    RBACAuthorizer,
    RuleResolver,
    applies_to_user,
    rule_allows,
)

GROUP = "rbac.authorization.k8s.io"


def rule(verbs: str, groups: str, resources: str, urls: str = "") -> dict[str, Any]:
    """upstream's ``newRule(verbs, apiGroups, resources, nonResourceURLs)``: comma lists."""
    out: dict[str, Any] = {"verbs": verbs.split(",")}
    if urls:
        out["nonResourceURLs"] = urls.split(",")
    else:
        out["apiGroups"] = groups.split(",")
        out["resources"] = resources.split(",")
    return out


def subjects(*specs: str) -> list[dict[str, str]]:
    out = []
    for spec in specs:
        kind, _, name = spec.partition(":")
        out.append({"kind": kind, "name": name, "apiGroup": GROUP})
    return out


def cluster_role(name: str, *rules: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "clusterroles", {"metadata": {"name": name}, "rules": list(rules)}


def cluster_binding(role: str, *subjs: str) -> tuple[str, dict[str, Any]]:
    return "clusterrolebindings", {
        "metadata": {"name": role},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": subjects(*subjs),
    }


def role_binding(ns: str, name: str, kind: str, *subjs: str) -> tuple[str, dict[str, Any]]:
    return "rolebindings", {
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": GROUP, "kind": kind, "name": name},
        "subjects": subjects(*subjs),
    }


def resolver_with(objects: Iterable[tuple[str, dict[str, Any]]]) -> RuleResolver:
    store = Store()
    for storage, obj in objects:
        meta = obj["metadata"]
        store.put(storage, (meta.get("namespace", ""), meta["name"]), obj, rv=store.next_rv())
    return RuleResolver(store)


def attrs(  # noqa: PLR0917 - upstream's defaultAttributes is positional
    user: str,
    groups: str,
    verb: str,
    resource: str,
    subresource: str,
    namespace: str,
    group: str = "",
) -> Attributes:
    """upstream's ``defaultAttributes{user, groups, verb, resource, subresource, ns, group}``."""
    return Attributes(
        user=UserInfo(user, groups=tuple(g for g in groups.split(",") if g)),
        verb=verb,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        api_group=group,
    )


def path_attrs(verb: str, path: str, *, name: str = "", groups: tuple[str, ...] = ()) -> Attributes:
    return Attributes(UserInfo(name, groups=groups), verb, is_resource=False, path=path)


def allowed(resolver: RuleResolver, a: Attributes) -> bool:
    return RBACAuthorizer(resolver).authorize(a)[0] is Decision.ALLOW


# --- TestAuthorizer ----------------------------------------------------------------------------

AUTHORIZER_CASES: list[tuple[list[tuple[str, dict[str, Any]]], list[Attributes], list[Attributes]]]
AUTHORIZER_CASES = [
    (
        [
            cluster_role("admin", rule("*", "*", "*")),
            role_binding("ns1", "admin", "ClusterRole", "User:admin", "Group:admins"),
        ],
        [
            attrs("admin", "", "get", "Pods", "", "ns1"),
            attrs("admin", "", "watch", "Pods", "", "ns1"),
            attrs("admin", "group1", "watch", "Foobar", "", "ns1"),
            attrs("joe", "admins", "watch", "Foobar", "", "ns1"),
            attrs("joe", "group1,admins", "watch", "Foobar", "", "ns1"),
        ],
        [
            attrs("admin", "", "GET", "Pods", "", "ns2"),
            attrs("admin", "", "GET", "Nodes", "", ""),
            attrs("admin", "admins", "GET", "Pods", "", "ns2"),
            attrs("admin", "admins", "GET", "Nodes", "", ""),
        ],
    ),
    (
        [
            cluster_role("non-resource-url-getter", rule("get", "", "", "/apis")),
            cluster_role("non-resource-url", rule("*", "", "", "/apis")),
            cluster_role("non-resource-url-prefix", rule("get", "", "", "/apis/*")),
            cluster_binding("non-resource-url-getter", "User:foo", "Group:bar"),
            cluster_binding("non-resource-url", "User:admin", "Group:admin"),
            cluster_binding("non-resource-url-prefix", "User:prefixed", "Group:prefixed"),
        ],
        [
            path_attrs("get", "/apis", name="foo"),
            path_attrs("get", "/apis", groups=("bar",)),
            path_attrs("get", "/apis", name="admin"),
            path_attrs("get", "/apis", groups=("admin",)),
            path_attrs("watch", "/apis", name="admin"),
            path_attrs("watch", "/apis", groups=("admin",)),
            path_attrs("get", "/apis/v1", name="prefixed"),
            path_attrs("get", "/apis/v1", groups=("prefixed",)),
            path_attrs("get", "/apis/v1/foobar", name="prefixed"),
            path_attrs("get", "/apis/v1/foorbar", groups=("prefixed",)),
        ],
        [
            path_attrs("watch", "/apis", name="foo"),
            path_attrs("watch", "/apis", groups=("bar",)),
            path_attrs("get", "/api/v1", name="foo"),
            path_attrs("get", "/api/v1", groups=("bar",)),
            path_attrs("get", "/api/v1", name="admin"),
            path_attrs("get", "/api/v1", groups=("admin",)),
            path_attrs("get", "/api/v1", name="prefixed"),
            path_attrs("get", "/api/v1", groups=("prefixed",)),
        ],
    ),
    (
        [
            cluster_role("admin", rule("*", "*", "pods")),
            role_binding("ns1", "admin", "ClusterRole", "User:admin", "Group:admins"),
        ],
        [attrs("admin", "", "get", "pods", "", "ns1")],
        [attrs("admin", "", "get", "pods", "status", "ns1")],
    ),
    (
        [
            cluster_role("admin", rule("*", "*", "pods/status"), rule("*", "*", "*/scale")),
            role_binding("ns1", "admin", "ClusterRole", "User:admin", "Group:admins"),
        ],
        [
            attrs("admin", "", "get", "pods", "status", "ns1"),
            attrs("admin", "", "get", "pods", "scale", "ns1"),
            attrs("admin", "", "get", "deployments", "scale", "ns1"),
            attrs("admin", "", "get", "anything", "scale", "ns1"),
        ],
        [attrs("admin", "", "get", "pods", "", "ns1")],
    ),
]


@pytest.mark.parametrize(("objects", "should_pass", "should_fail"), AUTHORIZER_CASES)
def test_authorizer_table(
    objects: list[tuple[str, dict[str, Any]]],
    should_pass: list[Attributes],
    should_fail: list[Attributes],
) -> None:
    resolver = resolver_with(objects)
    for a in should_pass:
        assert allowed(resolver, a), a
    for a in should_fail:
        assert not allowed(resolver, a), a


# --- TestRuleMatches ---------------------------------------------------------------------------


def req(verb: str, group: str, resource: str, subresource: str = "") -> Attributes:
    return Attributes(
        UserInfo("u"), verb, api_group=group, resource=resource, subresource=subresource
    )


def url(verb: str, path: str) -> Attributes:
    return Attributes(UserInfo("u"), verb, is_resource=False, path=path)


def _grid(expect: Any) -> list[tuple[Attributes, bool]]:
    return [
        (req(v, g, r), expect(v, g, r))
        for v in ("verb1", "verb2")
        for g in ("group1", "group2")
        for r in ("resource1", "resource2")
    ]


RULE_MATCH_CASES: list[tuple[str, PolicyRule, list[tuple[Attributes, bool]]]] = [
    (
        "star verb, exact match other",
        PolicyRule(("*",), ("group1",), ("resource1",)),
        _grid(lambda v, g, r: g == "group1" and r == "resource1"),
    ),
    (
        "star group, exact match other",
        PolicyRule(("verb1",), ("*",), ("resource1",)),
        _grid(lambda v, g, r: v == "verb1" and r == "resource1"),
    ),
    (
        "star resource, exact match other",
        PolicyRule(("verb1",), ("group1",), ("*",)),
        _grid(lambda v, g, r: v == "verb1" and g == "group1"),
    ),
    (
        "tuple expansion",
        PolicyRule(("verb1", "verb2"), ("group1", "group2"), ("resource1", "resource2")),
        _grid(lambda v, g, r: True),
    ),
    (
        "subresource expansion",
        PolicyRule(("*",), ("*",), ("resource1/subresource1",)),
        [
            (req(v, g, r, s), r == "resource1" and s == "subresource1")
            for v in ("verb1", "verb2")
            for g in ("group1", "group2")
            for r in ("resource1", "resource2")
            for s in ("subresource1", "subresource2")
        ],
    ),
    (
        "star nonresource, exact match other",
        PolicyRule(("verb1",), non_resource_urls=("*",)),
        [
            (url(v, p), v == "verb1")
            for v in ("verb1", "verb2")
            for p in ("/foo", "/foo/bar", "/foo/baz", "/foo/bar/one", "/foo/baz/one")
        ],
    ),
    (
        "star nonresource subpath",
        PolicyRule(("verb1",), non_resource_urls=("/foo/*",)),
        [
            (url(v, p), v == "verb1" and p.startswith("/foo/"))
            for v in ("verb1", "verb2")
            for p in ("/foo", "/foo/bar", "/foo/baz", "/foo/bar/one", "/foo/baz/one", "/notfoo")
        ],
    ),
    (
        "star verb, exact nonresource",
        PolicyRule(("*",), non_resource_urls=("/foo", "/foo/bar/one")),
        [
            (url(v, p), p in ("/foo", "/foo/bar/one"))
            for v in ("verb1", "verb2")
            for p in ("/foo", "/foo/bar", "/foo/baz", "/foo/bar/one", "/foo/baz/one")
        ],
    ),
]


@pytest.mark.parametrize(("name", "policy", "expected"), RULE_MATCH_CASES, ids=lambda c: "")
def test_rule_matches(
    name: str, policy: PolicyRule, expected: list[tuple[Attributes, bool]]
) -> None:
    for request, want in expected:
        assert rule_allows(request, policy) is want, (name, request)


def test_resource_names_never_match_a_request_without_a_name() -> None:
    """create, list and deletecollection carry no name: a rule with resourceNames cannot
    allow them (a list naming one object with a field selector can, see the HTTP tests)."""
    named = PolicyRule(("*",), ("",), ("pods",), ("web-0",))
    pod = Attributes(UserInfo("u"), "get", namespace="default", resource="pods", name="web-0")
    assert rule_allows(pod, named)
    assert not rule_allows(
        Attributes(UserInfo("u"), "get", namespace="default", resource="pods", name="web-1"), named
    )
    for verb in ("create", "list", "watch", "deletecollection"):
        assert not rule_allows(Attributes(UserInfo("u"), verb, resource="pods"), named)


# --- TestAppliesTo -----------------------------------------------------------------------------

SA_DEFAULT = "system:serviceaccount:kube-system:default"
APPLIES_TO_CASES: list[tuple[str, list[dict[str, str]], UserInfo, str, int | None]] = [
    ("single subject that matches username", subjects("User:foobar"), UserInfo("foobar"), "", 0),
    (
        "multiple subjects, one that matches username",
        subjects("User:barfoo", "User:foobar"),
        UserInfo("foobar"),
        "",
        1,
    ),
    (
        "multiple subjects, none that match username",
        subjects("User:barfoo", "User:foobar"),
        UserInfo("zimzam"),
        "",
        None,
    ),
    (
        "multiple subjects, one that match group",
        subjects("User:barfoo", "Group:foobar"),
        UserInfo("zimzam", groups=("foobar",)),
        "",
        1,
    ),
    (
        "multiple subjects, one that match group, should ignore namespace",
        subjects("User:barfoo", "Group:foobar"),
        UserInfo("zimzam", groups=("foobar",)),
        "namespace1",
        1,
    ),
    (
        "multiple subjects with a service account that matches",
        [
            *subjects("User:barfoo", "Group:foobar"),
            {"kind": "ServiceAccount", "namespace": "kube-system", "name": "default"},
        ],
        UserInfo(SA_DEFAULT),
        "default",
        2,
    ),
    (
        "* user subject name doesn't match all users",
        subjects("User:*"),
        UserInfo("foobar"),
        "",
        None,
    ),
    (
        "binding to all authenticated and unauthenticated subjects matches authenticated user",
        subjects("Group:system:authenticated", "Group:system:unauthenticated"),
        UserInfo("foobar", groups=("system:authenticated",)),
        "",
        0,
    ),
    (
        "binding to all authenticated and unauthenticated subjects matches anonymous user",
        subjects("Group:system:authenticated", "Group:system:unauthenticated"),
        UserInfo("system:anonymous", groups=("system:unauthenticated",)),
        "",
        1,
    ),
    (
        "service account without namespace takes the binding's",
        [{"kind": "ServiceAccount", "name": "default"}],
        UserInfo(SA_DEFAULT),
        "kube-system",
        0,
    ),
    (
        "service account without namespace in a cluster binding matches nobody",
        [{"kind": "ServiceAccount", "name": "default"}],
        UserInfo(SA_DEFAULT),
        "",
        None,
    ),
]


@pytest.mark.parametrize(("case", "subjs", "user", "namespace", "index"), APPLIES_TO_CASES)
def test_applies_to(
    case: str, subjs: list[dict[str, str]], user: UserInfo, namespace: str, index: int | None
) -> None:
    found = next((i for i, s in enumerate(subjs) if applies_to_user(user, s, namespace)), None)
    assert found == index, case


# --- reasons -----------------------------------------------------------------------------------


def test_allowed_reason_names_binding_role_and_subject() -> None:
    resolver = resolver_with(
        [
            cluster_role("pod-reader", rule("get", "", "pods")),
            (
                "rolebindings",
                {
                    "metadata": {"name": "sa-read", "namespace": "ns1"},
                    "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "pod-reader"},
                    "subjects": [{"kind": "ServiceAccount", "name": "agent"}],
                },
            ),
        ]
    )
    resolver.store.put(
        "clusterrolebindings",
        ("", "readers"),
        {
            "metadata": {"name": "readers"},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "pod-reader"},
            "subjects": subjects("User:z"),
        },
        rv=resolver.store.next_rv(),
    )
    authz = RBACAuthorizer(resolver)
    assert authz.authorize(attrs("z", "", "get", "pods", "", "ns1")) == (
        Decision.ALLOW,
        'RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to User "z"',
    )
    sa = Attributes(
        UserInfo("system:serviceaccount:ns1:agent"), "get", namespace="ns1", resource="pods"
    )
    assert authz.authorize(sa) == (
        Decision.ALLOW,
        'RBAC: allowed by RoleBinding "sa-read/ns1" of ClusterRole "pod-reader" to'
        ' ServiceAccount "agent/ns1"',
    )
    # a plain denial has no reason: kube's 403 message then has no suffix
    assert authz.authorize(attrs("z", "", "delete", "pods", "", "ns1")) == (Decision.NO_OPINION, "")


def test_missing_roles_are_the_denial_reason() -> None:
    resolver = resolver_with(
        [
            cluster_binding("gone", "User:z"),
            role_binding("ns1", "also-gone", "Role", "User:z"),
        ]
    )
    decision, reason = RBACAuthorizer(resolver).authorize(attrs("z", "", "get", "pods", "", "ns1"))
    assert decision is Decision.NO_OPINION
    assert reason == (
        'RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found,'
        ' role.rbac.authorization.k8s.io "also-gone" not found]'
    )


def test_cache_follows_rbac_writes() -> None:
    resolver = resolver_with([cluster_role("r", rule("get", "", "pods"))])
    a = attrs("z", "", "get", "pods", "", "ns1")
    assert not allowed(resolver, a)
    store = resolver.store
    obj = {
        "metadata": {"name": "b"},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "r"},
        "subjects": subjects("User:z"),
    }
    store.put("clusterrolebindings", ("", "b"), obj, rv=store.next_rv())
    assert allowed(resolver, a)
    store.put(
        "clusterroles", ("", "r"), {"metadata": {"name": "r"}, "rules": []}, rv=store.next_rv()
    )
    assert not allowed(resolver, a)


# --- Covers and escalation messages ------------------------------------------------------------

COVERS_CASES: list[tuple[str, list[PolicyRule], list[PolicyRule], list[PolicyRule]]] = [
    (
        "exact match",
        [PolicyRule(("get", "list"), ("",), ("pods",))],
        [PolicyRule(("get",), ("",), ("pods",))],
        [],
    ),
    (
        "missing verb",
        [PolicyRule(("get",), ("",), ("pods",))],
        [PolicyRule(("get", "delete"), ("",), ("pods",))],
        [PolicyRule(("delete",), ("",), ("pods",))],
    ),
    (
        "star subresource covers pods/status, not pods",
        [PolicyRule(("get",), ("",), ("*/status",))],
        [PolicyRule(("get",), ("",), ("pods/status", "pods"))],
        [PolicyRule(("get",), ("",), ("pods",))],
    ),
    (
        "named owner does not cover unnamed",
        [PolicyRule(("get",), ("",), ("pods",), ("a",))],
        [PolicyRule(("get",), ("",), ("pods",)), PolicyRule(("get",), ("",), ("pods",), ("a",))],
        [PolicyRule(("get",), ("",), ("pods",))],
    ),
    (
        "url prefix",
        [PolicyRule(("get",), non_resource_urls=("/apis/*",))],
        [PolicyRule(("get",), non_resource_urls=("/apis/v1", "/api"))],
        [PolicyRule(("get",), non_resource_urls=("/api",))],
    ),
]


@pytest.mark.parametrize(("case", "owner", "servant", "missing"), COVERS_CASES)
def test_covers(
    case: str, owner: list[PolicyRule], servant: list[PolicyRule], missing: list[PolicyRule]
) -> None:
    assert missing_rules(owner, servant) == missing, case
    assert covers(owner, servant) is (not missing)


def test_compact_rules_merge_verbs_and_print_as_go() -> None:
    missing = [
        PolicyRule(("get",), ("",), ("pods",)),
        PolicyRule(("list",), ("",), ("pods",)),
        PolicyRule(("get",), non_resource_urls=("/x",)),
    ]
    assert sorted(r.compact_string() for r in compact_rules(missing)) == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}',
        '{NonResourceURLs:["/x"], Verbs:["get"]}',
    ]


# --- aggregation and bootstrap -----------------------------------------------------------------


def test_aggregation_unions_selected_roles_in_name_order_without_repeats() -> None:
    shared = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
    roles = {
        "agg": {
            "metadata": {"name": "agg", "labels": {"x": "true"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "true"}}]},
        },
        "b": {"metadata": {"name": "b", "labels": {"x": "true"}}, "rules": [shared]},
        "a": {
            "metadata": {"name": "a", "labels": {"x": "true"}},
            "rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}, shared],
        },
        "c": {
            "metadata": {"name": "c"},
            "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        },
    }
    assert aggregated_rules(roles["agg"], roles) == [roles["a"]["rules"][0], shared]
    assert aggregated_rules(roles["b"], roles) is None


def test_bootstrap_policy_names_and_bindings() -> None:
    names = {r["metadata"]["name"] for r in BOOTSTRAP_CLUSTER_ROLES}
    assert {
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:basic-user",
        "system:discovery",
        "system:public-info-viewer",
    } <= names
    for obj in (*BOOTSTRAP_CLUSTER_ROLES, *BOOTSTRAP_CLUSTER_ROLE_BINDINGS):
        assert obj["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert obj["metadata"]["annotations"] == {
            "rbac.authorization.kubernetes.io/autoupdate": "true"
        }
    groups = {
        b["metadata"]["name"]: [s["name"] for s in b["subjects"]]
        for b in BOOTSTRAP_CLUSTER_ROLE_BINDINGS
    }
    assert groups == {
        "cluster-admin": ["system:masters"],
        "system:basic-user": ["system:authenticated"],
        "system:discovery": ["system:authenticated"],
        "system:public-info-viewer": ["system:authenticated", "system:unauthenticated"],
    }


# --- properties --------------------------------------------------------------------------------

WORDS = st.sampled_from(["get", "list", "delete", "create", "*"])
GROUPS = st.sampled_from(["", "apps", "policy", "*"])
RESOURCES = st.sampled_from(["pods", "pods/status", "pods/eviction", "nodes", "*/status", "*"])
NAMES = st.sampled_from(["a", "b"])
URLS = st.sampled_from(["/api", "/api/*", "/healthz", "*", "/apis/apps"])


@st.composite
def policy_rules(draw: st.DrawFn) -> PolicyRule:
    verbs = tuple(draw(st.lists(WORDS, min_size=1, max_size=3, unique=True)))
    if draw(st.booleans()):
        return PolicyRule(
            verbs, non_resource_urls=tuple(draw(st.lists(URLS, min_size=1, max_size=2)))
        )
    return PolicyRule(
        verbs,
        tuple(draw(st.lists(GROUPS, min_size=1, max_size=2, unique=True))),
        tuple(draw(st.lists(RESOURCES, min_size=1, max_size=2, unique=True))),
        tuple(draw(st.lists(NAMES, max_size=1))),
    )


@st.composite
def requests(draw: st.DrawFn) -> Attributes:
    verb = draw(st.sampled_from(["get", "list", "delete", "create", "patch"]))
    if draw(st.booleans()):
        path = draw(st.sampled_from(["/api", "/api/v1", "/healthz", "/apis/apps", "/metrics"]))
        return Attributes(UserInfo("u"), verb, is_resource=False, path=path)
    return Attributes(
        UserInfo("u"),
        verb,
        namespace=draw(st.sampled_from(["", "default"])),
        resource=draw(st.sampled_from(["pods", "nodes", "deployments"])),
        subresource=draw(st.sampled_from(["", "status", "eviction", "scale"])),
        name=draw(st.sampled_from(["", "a", "b"])),
        api_group=draw(st.sampled_from(["", "apps", "policy"])),
    )


def _allows(rules: Iterable[PolicyRule], request: Attributes) -> bool:
    return any(rule_allows(request, r) for r in rules)


@settings(max_examples=300, deadline=None)
@given(st.lists(policy_rules(), min_size=1, max_size=5), st.data(), requests())
def test_removing_a_rule_never_grants_more(
    rules: list[PolicyRule], data: st.DataObject, request: Attributes
) -> None:
    drop = data.draw(st.integers(0, len(rules) - 1))
    fewer = rules[:drop] + rules[drop + 1 :]
    if _allows(fewer, request):
        assert _allows(rules, request)


@settings(max_examples=300, deadline=None)
@given(requests(), policy_rules())
def test_star_rules_cover_every_request_and_every_rule(
    request: Attributes, other: PolicyRule
) -> None:
    assert _allows(FULL_AUTHORITY, request)
    assert covers(FULL_AUTHORITY, [other])


@settings(max_examples=300, deadline=None)
@given(st.lists(policy_rules(), min_size=1, max_size=3), policy_rules(), requests())
def test_covered_rules_allow_nothing_the_owner_does_not(
    owner: list[PolicyRule], servant: PolicyRule, request: Attributes
) -> None:
    """What escalation prevention relies on: a role the user's rules cover grants nothing
    the user could not already do."""
    if covers(owner, [servant]) and rule_allows(request, servant):
        assert _allows(owner, request)


def _bootstrapped() -> RuleResolver:
    from kubesim.core.scheme import default_scheme
    from kubesim.plugins.authorization import bootstrap
    from kubesim.registry.generic import GenericStore

    store = Store()
    bootstrap.seed(GenericStore(store, default_scheme()))
    return RuleResolver(store)


BOOTSTRAPPED = _bootstrapped()
DISCOVERY = {"/api", "/apis", "/healthz", "/livez", "/openapi", "/readyz", "/version", "/version/"}
SELF_REVIEWS = {
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
}


@settings(max_examples=300, deadline=None)
@given(
    requests(),
    st.sampled_from(["/api/v1", "/apis/apps/v1", "/openapi/v3", "/metrics", "/logs"]),
    st.sampled_from([*SELF_REVIEWS, ("", "pods"), ("apps", "deployments")]),
)
def test_unbound_user_gets_only_discovery_and_self_reviews(
    request: Attributes, path: str, review: tuple[str, str]
) -> None:
    user = UserInfo("nobody", groups=(ALL_AUTHENTICATED,))
    authz = RBACAuthorizer(BOOTSTRAPPED)
    for a in (
        Attributes(user, request.verb, is_resource=False, path=path),
        Attributes(user, request.verb, is_resource=False, path=request.path),
        Attributes(user, "create", api_group=review[0], resource=review[1]),
        Attributes(
            user,
            request.verb,
            namespace=request.namespace,
            resource=request.resource,
            subresource=request.subresource,
            api_group=request.api_group,
            name=request.name,
        ),
    ):
        decision, _ = authz.authorize(a)
        if a.is_resource:
            expected = a.verb == "create" and (a.api_group, a.resource) in SELF_REVIEWS
            expected = expected and not a.subresource and not a.name
        else:
            expected = a.verb == "get" and (
                a.path in DISCOVERY or a.path.startswith(("/api/", "/apis/", "/openapi/"))
            )
        assert (decision is Decision.ALLOW) is expected, a
    anonymous = UserInfo("system:anonymous", groups=("system:unauthenticated",))
    readyz = Attributes(anonymous, "get", is_resource=False, path="/readyz")
    assert authz.authorize(readyz)[0] is Decision.ALLOW
    api = Attributes(anonymous, "get", is_resource=False, path="/api")
    assert authz.authorize(api)[0] is Decision.NO_OPINION
