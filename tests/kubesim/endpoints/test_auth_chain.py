"""The handler chain's access-control seams: 401 for unknown credentials, kube's 403 wording,
``system:masters`` before the authorizer, the user and verdict in the request log, and
validating admission that sees the request's user — the Eviction for ``pods/eviction``, never
the registry's own delete behind it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

import kubesim
from kubesim.controllers import FROZEN
from kubesim.core.attributes import MASTERS, Attributes, UserInfo
from kubesim.plugins.authorization import Decision, forbidden_error
from kubesim.registry.admission import AdmissionCall
from kubesim.sim import Simulator
from tests.support.api import STATE

SA = "system:serviceaccount:kube-system:eviction-agent"


class DenyAll:
    def __init__(self) -> None:
        self.seen: list[Attributes] = []

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        self.seen.append(attrs)
        return Decision.DENY, ""


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01, disabled_controllers=FROZEN) as s:
        yield s


async def call(
    sim: Simulator, method: str, path: str, *, token: str | None = None, body: Any = None
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, sim.url + path, headers=headers, json=body) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


async def test_unknown_token_is_401_with_kube_body(sim: Simulator) -> None:
    code, body = await call(sim, "GET", "/api/v1/pods", token="nope")
    assert code == 401
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }
    [record] = sim.requests.filter(path="/api/v1/pods")
    assert (record.code, record.user, record.authorization) == (401, "", "")


async def test_static_token_user_and_verdict_are_logged(sim: Simulator) -> None:
    token = sim.tokens.add("t-1", UserInfo("alice", groups=("devs",)))
    code, _ = await call(sim, "GET", "/api/v1/namespaces/default/pods", token=token)
    assert code == 200
    [record] = sim.requests.filter(path="/api/v1/namespaces/default/pods")
    assert record.user == "alice"
    assert record.groups == ("devs", "system:authenticated")
    assert record.authorization == "allow"
    await call(sim, "GET", "/version")
    assert sim.requests.filter(path="/version")[0].user == "system:anonymous"


@pytest.mark.parametrize(
    ("method", "path", "message"),
    [
        (
            "DELETE",
            "/api/v1/namespaces/default/pods/x",
            f'pods "x" is forbidden: User "{SA}" cannot delete resource "pods" in API group ""'
            ' in the namespace "default"',
        ),
        (
            "GET",
            "/api/v1/nodes",
            f'nodes is forbidden: User "{SA}" cannot list resource "nodes" in API group ""'
            " at the cluster scope",
        ),
        (
            "POST",
            "/api/v1/namespaces/shop/pods/web-0/eviction",
            f'pods "web-0" is forbidden: User "{SA}" cannot create resource "pods/eviction"'
            ' in API group "" in the namespace "shop"',
        ),
        (
            "GET",
            "/apis/apps/v1/namespaces/default/deployments",
            f'deployments.apps is forbidden: User "{SA}" cannot list resource "deployments"'
            ' in API group "apps" in the namespace "default"',
        ),
        ("GET", "/metrics", f'forbidden: User "{SA}" cannot get path "/metrics"'),
    ],
)
async def test_denial_is_kubes_403(sim: Simulator, method: str, path: str, message: str) -> None:
    sim.server.authorizer = DenyAll()
    token = sim.tokens.add("sa", UserInfo(SA, groups=("system:serviceaccounts",)))
    code, body = await call(sim, method, path, token=token, body={} if method == "POST" else None)
    assert code == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == message
    [record] = sim.requests.filter(path=path)
    assert (record.user, record.authorization, record.code) == (SA, "deny", 403)


async def test_masters_pass_before_the_authorizer_and_control_endpoints_need_them(
    sim: Simulator,
) -> None:
    deny = DenyAll()
    sim.server.authorizer = deny
    admin = sim.tokens.add("admin", UserInfo("admin", groups=(MASTERS,)))
    user = sim.tokens.add("user", UserInfo("bob"))
    assert (await call(sim, "GET", "/api/v1/nodes", token=admin))[0] == 200
    assert deny.seen == []
    assert (await call(sim, "GET", "/_kubesim/requests", token=admin))[0] == 200
    code, body = await call(sim, "GET", "/_kubesim/requests", token=user)
    assert code == 403 and 'User "bob" cannot get path "/_kubesim/requests"' in body["message"]
    assert (await call(sim, "GET", "/_kubesim/requests", token="bad"))[0] == 401


def test_forbidden_error_appends_the_authorizers_reason() -> None:
    attrs = Attributes(UserInfo("u"), "get", resource="secrets", namespace="a", name="s")
    err = forbidden_error(attrs, "no RBAC policy matched")
    assert err.message == (
        'secrets "s" is forbidden: User "u" cannot get resource "secrets" in API group ""'
        ' in the namespace "a": no RBAC policy matched'
    )
    assert (err.code, err.name, err.kind) == (403, "s", "secrets")


async def test_validating_admission_sees_the_eviction_not_the_inner_delete(
    sim: Simulator,
) -> None:
    calls: list[AdmissionCall] = []
    sim.registry.validating_admission.append(calls.append)
    token = sim.tokens.add("sa", UserInfo(SA))
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-0", "namespace": "default"},
    }
    code, _ = await call(
        sim, "POST", "/api/v1/namespaces/default/pods/web-0/eviction", token=token, body=eviction
    )
    assert code == 201
    [evicted] = calls
    assert (evicted.operation, evicted.rt.plural, evicted.subresource) == (
        "CREATE",
        "pods",
        "eviction",
    )
    assert evicted.kind == "Eviction" and evicted.obj is not None
    assert evicted.obj["metadata"]["name"] == "web-0"
    assert evicted.request.user.name == SA
    calls.clear()
    code, _ = await call(sim, "DELETE", "/api/v1/namespaces/default/pods/web-1", token=token)
    assert code == 200
    [deleted] = calls
    assert deleted.operation == "DELETE" and deleted.obj is None
    assert deleted.old is not None and deleted.old["spec"]["nodeName"] == "node-2"
    calls.clear()
    sim.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "in-process"}}
    )  # kubesim's own writes are not admitted
    assert calls == []
