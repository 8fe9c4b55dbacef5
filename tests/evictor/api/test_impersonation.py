"""``evict --as``: kubectl's impersonation, against kubesim's ``WithImpersonation`` and RBAC.

``ops`` may only impersonate (``drainer`` or ``auditor``, the ``node-operators`` and ``auditors``
groups, uid ``u-1``, extra ``example.com/scopes``); the drain role is bound to the group
``node-operators``. So a drain succeeds only when the API server sees the impersonated identity
with ``node-operators`` as a group of its own — one comma-joined header value would be one
unknown group, and a 403. The kubeconfig's ``as`` fields work alone and under the flags; a user
without the ``impersonate`` verb gets kube's 403; groups or a uid without ``--as`` are refused
before any request, as clientcmd refuses them.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from evictor.api.impersonation import escape_extra_key, header_lines, with_lines
from kube.kubeconfig import Impersonation
from kubesim.core.attributes import UserInfo
from kubesim.endpoints.request import RequestContext
from kubesim.sim import Simulator
from tests.support.evict import Evict
from tests.support.kubeconfigs import write_kubeconfig
from tests.support.living import living, settle
from tests.support.manifests import node, pod, replicaset

ROOT = Path(__file__).resolve().parents[3]
EXTRA_KEY = "example.com/scopes"  # "/" is no header token character: sent as %2F


# --- the header lines (pure) -------------------------------------------------------------------


@given(st.text())
def test_an_extra_key_is_escaped_into_a_header_token_that_decodes_back(key: str) -> None:
    escaped = escape_extra_key(key)
    token = set("!#$&'*+-.^_`|~%0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    assert set(escaped) <= token
    assert urllib.parse.unquote(escaped, errors="strict") == key
    if "%" in key:  # the escape character itself is escaped, or "%41" would decode to "A"
        assert "%25" in escaped


def test_one_line_per_group_and_per_extra_value_in_client_gos_order() -> None:
    imp = Impersonation(
        "system:serviceaccount:ops:drainer",
        uid="u-1",
        groups=("a,b", "c"),
        extra=((EXTRA_KEY, ("x", "y")), ("Reason%", ("z",))),
    )
    assert header_lines(imp) == (
        ("Impersonate-User", "system:serviceaccount:ops:drainer"),
        ("Impersonate-Uid", "u-1"),
        ("Impersonate-Group", "a,b"),
        ("Impersonate-Group", "c"),
        ("Impersonate-Extra-example.com%2Fscopes", "x"),
        ("Impersonate-Extra-example.com%2Fscopes", "y"),
        ("Impersonate-Extra-Reason%25", "z"),
    )
    assert header_lines(Impersonation("bob")) == (("Impersonate-User", "bob"),)
    headers = with_lines({"Accept": "application/json"}, header_lines(imp))
    assert headers.getall("impersonate-group") == ["a,b", "c"]
    assert headers["Accept"] == "application/json"


# --- against kubesim ---------------------------------------------------------------------------


RBAC = "rbac.authorization.k8s.io"


def role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    }


def binding(name: str, role_name: str, kind: str, subject: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role_name},
        "subjects": [{"kind": kind, "name": subject, "apiGroup": RBAC}],
    }


def impersonate(group: str, resource: str, names: list[str]) -> dict[str, Any]:
    return {
        "apiGroups": [group],
        "resources": [resource],
        "verbs": ["impersonate"],
        "resourceNames": names,
    }


DRAIN_ROLE = yaml.safe_load((ROOT / "deploy" / "evict" / "drain-clusterrole.yaml").read_text())
STATE = [
    node("node-1"),
    node("node-2"),
    replicaset("web", replicas=1),
    pod("web-0", app="web"),
    DRAIN_ROLE,
    binding("drain-operators", "evict-drain", "Group", "node-operators"),
    role(
        "impersonator",
        [
            impersonate("", "users", ["drainer", "auditor"]),
            impersonate("", "groups", ["node-operators", "auditors"]),
            impersonate("authentication.k8s.io", "uids", ["u-1"]),
            impersonate("authentication.k8s.io", f"userextras/{EXTRA_KEY}", ["drain", "plan"]),
        ],
    ),
    binding("ops-impersonates", "impersonator", "User", "ops"),
]


class Seen:
    """What the API server made of each request: the acting user and the raw header lines
    (a request hook runs after authentication, impersonation and authorization)."""

    def __init__(self, sim: Simulator) -> None:
        self.users: list[UserInfo] = []
        self.groups: list[list[str]] = []
        self.extra_lines: list[list[str]] = []
        sim.server.request_hooks.append(self.hook)

    async def hook(self, ctx: RequestContext) -> web.StreamResponse | None:
        assert ctx.user is not None
        self.users.append(ctx.user)
        headers = ctx.request.headers
        self.groups.append(headers.getall("Impersonate-Group", []))
        self.extra_lines.append(
            [k for k, _ in headers.items() if k.lower().startswith("impersonate-extra-")]
        )
        return None

    def clear(self) -> None:
        self.users.clear()
        self.groups.clear()
        self.extra_lines.clear()


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with living(STATE, authorization="rbac", tls=True) as s:  # tokens go over TLS only
        await settle(s)
        s.tokens.add("ops-token", UserInfo("ops"))
        s.tokens.add("intruder-token", UserInfo("intruder"))
        yield s


def kubeconfig(tmp_path: Path, sim: Simulator) -> str:
    """The current user ``ops`` impersonates nobody; ``ops-as`` is ``ops`` acting as
    ``drainer`` by its own ``as`` fields; ``intruder`` may not impersonate anyone."""
    users = {
        "ops": {"token": "ops-token"},
        "ops-as": {
            "token": "ops-token",
            "as": "drainer",
            "as-uid": "u-1",
            "as-groups": ["node-operators", "auditors"],
            "as-user-extra": {EXTRA_KEY: ["drain", "plan"]},
        },
        "intruder": {"token": "intruder-token"},
    }
    ca = sim.certificate_authority_pem()
    path = tmp_path / "config"
    return str(write_kubeconfig(path, sim.url, users, current="ops", certificate_authority=ca))


def cordoned(sim: Simulator, name: str) -> bool:
    found = sim.get("Node", None, name)
    assert found is not None
    return bool(found["spec"].get("unschedulable"))


Run = Callable[..., Awaitable[tuple[int, str, str]]]


@pytest.fixture
def evict(sim: Simulator, tmp_path: Path) -> Run:
    """``evict --kubeconfig`` the file of ``kubeconfig``."""
    config = kubeconfig(tmp_path, sim)
    run = Evict(sim)

    async def call(*args: str) -> tuple[int, str, str]:
        return await run("--kubeconfig", config, *args)

    return call


async def test_a_drain_runs_as_the_impersonated_identity(sim: Simulator, evict: Run) -> None:
    seen = Seen(sim)
    # ops alone may not even read a node
    code, _, err = await evict("cordon", "node-1")
    assert code == 1 and 'User "ops" cannot get resource "nodes"' in err
    # --as before the subcommand, --as-group on both sides of it, repeated: every group counts
    before = len(sim.requests)
    code, out, err = await evict(
        "--as", "drainer", "--as-group", "node-operators",
        "drain", "node-1", "--as-uid=u-1", "--as-group=auditors", "--timeout=30s",
    )  # fmt: skip
    assert code == 0, err
    assert "node/node-1 drained" in out
    run = list(sim.requests)[before:]
    assert {(r.user, r.impersonated_by, r.code < 400) for r in run} == {("drainer", "ops", True)}
    assert {r.groups for r in run} == {("node-operators", "auditors", "system:authenticated")}
    assert any(r.subresource == "eviction" for r in run)
    assert sim.get("Pod", "default", "web-0") is None
    # one header line per group, and the uid (kubesim's request log keeps name and groups)
    assert {tuple(g) for g in seen.groups} == {("node-operators", "auditors")}
    assert {u.uid for u in seen.users} == {"u-1"}


async def test_the_kubeconfigs_as_fields_and_the_flags_over_them(
    sim: Simulator, evict: Run
) -> None:
    seen = Seen(sim)
    # the user's own as, as-uid, as-groups and as-user-extra (one line per extra value)
    before = len(sim.requests)
    code, _, err = await evict("--user", "ops-as", "cordon", "node-2")
    assert code == 0, err
    run = list(sim.requests)[before:]
    assert {(r.user, r.impersonated_by) for r in run} == {("drainer", "ops")}
    assert {r.groups for r in run} == {("node-operators", "auditors", "system:authenticated")}
    assert {(u.uid, tuple(u.extra.items())) for u in seen.users} == {
        ("u-1", ((EXTRA_KEY, ("drain", "plan")),))
    }
    assert {tuple(lines) for lines in seen.extra_lines} == {
        ("Impersonate-Extra-example.com%2Fscopes",) * 2
    }
    # --as and --as-group replace the user's; its uid and extras stay, as client-go merges
    seen.clear()
    before = len(sim.requests)
    code, _, err = await evict(
        "uncordon", "node-2", "--user=ops-as", "--as=auditor", "--as-group=node-operators"
    )
    assert code == 0, err
    run = list(sim.requests)[before:]
    assert {(r.user, r.groups) for r in run} == {
        ("auditor", ("node-operators", "system:authenticated"))
    }
    assert {(u.uid, tuple(u.extra)) for u in seen.users} == {("u-1", (EXTRA_KEY,))}
    assert not cordoned(sim, "node-2")


async def test_impersonation_without_the_right_or_without_a_user_is_refused(
    sim: Simulator, evict: Run
) -> None:
    # no impersonate verb at all: kube's 403, exit 1
    code, _, err = await evict("--user", "intruder", "--as", "drainer", "cordon", "node-1")
    assert code == 1
    assert err.splitlines() == [
        'Error from server (Forbidden): users "drainer" is forbidden: User "intruder" cannot '
        'impersonate resource "users" in API group "" at the cluster scope'
    ]
    # each attribute is authorized: ops may act as drainer but not in system:masters
    code, _, err = await evict("cordon", "node-1", "--as=drainer", "--as-group=system:masters")
    assert code == 1
    assert 'groups "system:masters" is forbidden: User "ops" cannot impersonate' in err
    assert not cordoned(sim, "node-1")
    # groups or a uid with nobody to act as: clientcmd's refusal, before any request (exit 2)
    before = len(sim.requests)
    for args, flags in (
        (("--as-group=node-operators",), "--as-group needs"),
        (("--as-uid", "u-1", "--as-group", "auditors"), "--as-uid and --as-group need"),
    ):
        code, _, err = await evict("cordon", "node-1", *args)
        assert code == 2
        assert err.splitlines() == [
            f"error: invalid configuration: {flags} --as: requesting uid, groups or user-extra "
            "for ops without impersonating a user (see 'evict cordon --help')"
        ]
    assert len(sim.requests) == before
