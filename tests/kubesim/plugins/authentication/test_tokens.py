"""ServiceAccount tokens as kube-apiserver issues and checks them: the TokenRequest API with
its rejections, the JWT's claims, the user a token authenticates as, and every reason a
token stops working — expiry proved by moving the token clock, never by waiting."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import jwt
import pytest
from jwt.utils import base64url_decode, base64url_encode

import kubesim
from kube.times import format_time, parse_time
from kubesim.controllers import FROZEN
from kubesim.plugins.authentication.serviceaccounts import ISSUER
from kubesim.sim import BOOTSTRAP_NAMESPACES, Simulator
from tests.support.api import STATE
from tests.support.wait import until

SA = "system:serviceaccount:kube-system:eviction-agent"
AGENT = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: eviction-agent, namespace: kube-system}
---
apiVersion: v1
kind: Pod
metadata: {name: agent-1, namespace: kube-system}
spec:
  nodeName: node-1
  serviceAccountName: eviction-agent
  containers: [{name: agent, image: agent}]
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: kube-system}
spec:
  nodeName: node-2
  containers: [{name: c, image: c}]
---
apiVersion: v1
kind: Secret
metadata: {name: bound, namespace: kube-system}
"""
TOKEN_PATH = "/api/v1/namespaces/kube-system/serviceaccounts/eviction-agent/token"
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


class Clock:
    """The token clock, moved by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(
        state=[STATE, AGENT], time_scale=0.01, disabled_controllers=FROZEN
    ) as s:
        yield s


@pytest.fixture
def clock(sim: Simulator) -> Clock:
    clock = Clock(float(int(time.time())))  # the stored objects' timestamps are wall time
    sim.service_account_tokens.clock = clock
    return clock


async def call(
    sim: Simulator, method: str, path: str, *, token: str | None = None, body: Any = None
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, sim.url + path, headers=headers, json=body) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


def uid(sim: Simulator, kind: str, namespace: str, name: str) -> str:
    obj = sim.get(kind, namespace, name)
    assert obj is not None
    return str(obj["metadata"]["uid"])


def pod_ref(name: str = "agent-1", **more: str) -> dict[str, Any]:
    return {"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": name, **more}}}


async def token_for(sim: Simulator, body: Any = None, path: str = TOKEN_PATH) -> str:
    code, out = await call(sim, "POST", path, body=body or {})
    assert code == 201, out
    return str(out["status"]["token"])


async def whoami(sim: Simulator, token: str) -> tuple[int, Any]:
    return await call(sim, "POST", WHOAMI, token=token, body={})


async def test_token_request_answers_a_jwt_with_kube_claims(sim: Simulator, clock: Clock) -> None:
    code, out = await call(sim, "POST", TOKEN_PATH, body=pod_ref())
    assert code == 201
    assert out["kind"] == "TokenRequest"
    assert out["apiVersion"] == "authentication.k8s.io/v1"
    assert out["metadata"]["name"] == "eviction-agent"
    assert out["metadata"]["namespace"] == "kube-system"
    assert out["spec"]["expirationSeconds"] == 3600  # the default
    assert out["spec"]["audiences"] == [ISSUER]
    assert out["status"]["expirationTimestamp"] == format_time(clock.now + 3600)
    token = out["status"]["token"]
    assert jwt.get_unverified_header(token)["alg"] == "ES256"
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["iss"] == ISSUER
    assert claims["sub"] == SA
    assert claims["aud"] == [ISSUER]
    assert claims["iat"] == claims["nbf"] == clock.now
    assert claims["exp"] == clock.now + 3600
    assert claims["jti"]
    assert claims["kubernetes.io"] == {
        "namespace": "kube-system",
        "serviceaccount": {
            "name": "eviction-agent",
            "uid": uid(sim, "ServiceAccount", "kube-system", "eviction-agent"),
        },
        "pod": {"name": "agent-1", "uid": uid(sim, "Pod", "kube-system", "agent-1")},
        "node": {"name": "node-1", "uid": uid(sim, "Node", "", "node-1")},
    }


async def test_a_pod_bound_token_is_the_service_account_on_its_pod_and_node(
    sim: Simulator, clock: Clock
) -> None:
    token = await token_for(sim, pod_ref())
    code, out = await whoami(sim, token)
    assert code == 201
    jti = jwt.decode(token, options={"verify_signature": False})["jti"]
    assert out["status"]["userInfo"] == {
        "username": SA,
        "uid": uid(sim, "ServiceAccount", "kube-system", "eviction-agent"),
        "groups": [
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
            "system:authenticated",
        ],
        "extra": {
            "authentication.kubernetes.io/pod-name": ["agent-1"],
            "authentication.kubernetes.io/pod-uid": [uid(sim, "Pod", "kube-system", "agent-1")],
            "authentication.kubernetes.io/node-name": ["node-1"],
            "authentication.kubernetes.io/node-uid": [uid(sim, "Node", "", "node-1")],
            "authentication.kubernetes.io/credential-id": [f"JTI={jti}"],
        },
    }
    [record] = sim.requests.filter(path=WHOAMI)
    assert (record.user, record.code) == (SA, 201)


async def test_an_unbound_token_has_no_pod_or_node(sim: Simulator, clock: Clock) -> None:
    code, out = await whoami(sim, await token_for(sim))
    assert code == 201
    assert set(out["status"]["userInfo"]["extra"]) == {"authentication.kubernetes.io/credential-id"}


@pytest.mark.parametrize(
    ("path", "body", "code", "message"),
    [
        (
            "/api/v1/namespaces/kube-system/serviceaccounts/nope/token",
            {},
            404,
            'serviceaccounts "nope" not found',
        ),
        (
            TOKEN_PATH,
            {"spec": {"expirationSeconds": 599}},
            422,
            'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid'
            " value: 599: may not specify a duration less than 10 minutes",
        ),
        (
            TOKEN_PATH,
            {"spec": {"expirationSeconds": 2**32 + 1}},
            422,
            'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid'
            " value: 4294967297: may not specify a duration larger than 2^32 seconds",
        ),
        (
            TOKEN_PATH,
            {"metadata": {"name": "other"}},
            422,
            'TokenRequest.authentication.k8s.io "eviction-agent" is invalid: metadata.name:'
            ' Invalid value: "other": must match the service account name if specified',
        ),
        (
            TOKEN_PATH,
            {"metadata": {"namespace": "default"}},
            422,
            'TokenRequest.authentication.k8s.io "eviction-agent" is invalid: metadata.namespace:'
            ' Invalid value: "default": must match the service account namespace if specified',
        ),
        (TOKEN_PATH, pod_ref("ghost"), 404, 'pods "ghost" not found'),
        (
            TOKEN_PATH,
            pod_ref("other"),
            400,
            'cannot bind token for serviceaccount "eviction-agent" to pod running with different'
            " serviceaccount name.",
        ),
        (
            TOKEN_PATH,
            pod_ref(uid="not-its-uid"),
            409,
            'Operation cannot be fulfilled on Pod "agent-1": the UID in the bound object'
            " reference (not-its-uid) does not match the UID in record. The object might have"
            " been deleted and then recreated",
        ),
        (
            TOKEN_PATH,
            {"spec": {"boundObjectRef": {"kind": "Deployment", "apiVersion": "apps/v1"}}},
            400,
            "cannot bind token to object of type apps/v1, Kind=Deployment",
        ),
        (
            TOKEN_PATH,
            {"spec": {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "x"}}},
            404,
            'secrets "x" not found',
        ),
        (
            TOKEN_PATH,
            {"spec": {"boundObjectRef": {"kind": "Node", "apiVersion": "v1", "name": "x"}}},
            404,
            'nodes "x" not found',
        ),
    ],
)
async def test_token_request_rejections_are_kubes(
    sim: Simulator, path: str, body: Any, code: int, message: str
) -> None:
    got, out = await call(sim, "POST", path, body=body)
    assert (got, out["message"]) == (code, message)
    assert out["kind"] == "Status"


@pytest.mark.parametrize(
    "body", [b"{not json", b"[1, 2]", b'{"spec": "x"}', b'{"spec": {"expirationSeconds": "1h"}}']
)
async def test_garbage_token_requests_are_400_not_500(sim: Simulator, body: bytes) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            sim.url + TOKEN_PATH, data=body, headers={"Content-Type": "application/json"}
        ) as resp,
    ):
        assert resp.status == 400
        assert (await resp.json())["reason"] == "BadRequest"


async def test_reading_the_token_subresource_is_405(sim: Simulator) -> None:
    code, out = await call(sim, "GET", TOKEN_PATH)
    assert (code, out["reason"]) == (405, "MethodNotAllowed")


async def test_expiry_follows_the_token_clock_with_kubes_minute_of_leeway(
    sim: Simulator, clock: Clock
) -> None:
    token = await token_for(sim, {"spec": {"expirationSeconds": 600}})
    clock.now += 600 + 59  # past exp, within go-jose's one-minute leeway
    assert (await whoami(sim, token))[0] == 201
    clock.now += 2
    assert await whoami(sim, token) == (401, UNAUTHORIZED)
    [*_, record] = sim.requests.filter(path=WHOAMI)
    assert (record.code, record.user) == (401, "")


async def test_a_token_from_the_future_is_rejected(sim: Simulator, clock: Clock) -> None:
    token = await token_for(sim)
    clock.now -= 120
    assert (await whoami(sim, token))[0] == 401


async def test_a_token_for_another_audience_is_rejected(sim: Simulator, clock: Clock) -> None:
    token = await token_for(sim, {"spec": {"audiences": ["vault"]}})
    assert await whoami(sim, token) == (401, UNAUTHORIZED)
    both = await token_for(sim, {"spec": {"audiences": ["vault", ISSUER]}})
    assert (await whoami(sim, both))[0] == 201


async def test_badly_signed_and_malformed_tokens_are_rejected(sim: Simulator, clock: Clock) -> None:
    token = await token_for(sim)
    head, payload, signature = token.split(".")
    forged_payload = base64url_encode(
        base64url_decode(payload).replace(b"eviction-agent", b"eviction-agenX")
    ).decode()
    for bad in (
        f"{head}.{forged_payload}.{signature}",
        f"{head}.{payload}.{signature[::-1]}",
        "not.a.jwt",
        "a" * 5000,
        token + "x",
    ):
        assert await whoami(sim, bad) == (401, UNAUTHORIZED), bad
    # signed by another server's key, same issuer: not this server's token
    async with kubesim.serve(state=AGENT, disabled_controllers=FROZEN) as other:
        foreign = await token_for(other)
    assert await whoami(sim, foreign) == (401, UNAUTHORIZED)


async def test_a_deleted_or_recreated_service_account_invalidates_its_tokens(
    sim: Simulator, clock: Clock
) -> None:
    token = await token_for(sim)
    base = "/api/v1/namespaces/kube-system/serviceaccounts"
    assert (await call(sim, "DELETE", f"{base}/eviction-agent"))[0] == 200
    assert await whoami(sim, token) == (401, UNAUTHORIZED)
    sa = {"metadata": {"name": "eviction-agent"}}
    assert (await call(sim, "POST", base, body=sa))[0] == 201  # same name, another uid
    assert await whoami(sim, token) == (401, UNAUTHORIZED)
    assert (await whoami(sim, await token_for(sim)))[0] == 201


async def test_a_deleted_or_recreated_bound_pod_invalidates_its_tokens(
    sim: Simulator, clock: Clock
) -> None:
    token = await token_for(sim, pod_ref())
    keep = await token_for(sim)  # not bound: unaffected
    pods = "/api/v1/namespaces/kube-system/pods"
    code, _ = await call(sim, "DELETE", f"{pods}/agent-1", body={"gracePeriodSeconds": 0})
    assert code == 200
    assert sim.get("Pod", "kube-system", "agent-1") is None
    assert await whoami(sim, token) == (401, UNAUTHORIZED)
    assert (await whoami(sim, keep))[0] == 201
    again = {
        "metadata": {"name": "agent-1"},
        "spec": {
            "serviceAccountName": "eviction-agent",
            "containers": [{"name": "a", "image": "a"}],
        },
    }
    assert (await call(sim, "POST", pods, body=again))[0] == 201
    assert await whoami(sim, token) == (401, UNAUTHORIZED)  # same name, another uid


async def test_a_pod_deleting_for_more_than_the_leeway_invalidates_its_tokens(
    sim: Simulator, clock: Clock
) -> None:
    held = {
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
        "spec": {
            "serviceAccountName": "eviction-agent",
            "containers": [{"name": "a", "image": "a"}],
        },
    }
    pods = "/api/v1/namespaces/kube-system/pods"
    assert (await call(sim, "POST", pods, body=held))[0] == 201
    token = await token_for(sim, pod_ref("held"))
    code, _ = await call(sim, "DELETE", f"{pods}/held", body={"gracePeriodSeconds": 0})
    assert code == 200
    deleting = (sim.get("Pod", "kube-system", "held") or {})["metadata"]["deletionTimestamp"]
    # the deletion is stamped with wall time, which may have moved past the token clock's start
    clock.now = max(clock.now, parse_time(deleting))
    assert (await whoami(sim, token))[0] == 201  # deleting for less than a minute
    clock.now = parse_time(deleting) + 61
    assert await whoami(sim, token) == (401, UNAUTHORIZED)


async def test_secret_and_node_bound_tokens_follow_their_object(
    sim: Simulator, clock: Clock
) -> None:
    secret = await token_for(
        sim, {"spec": {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "bound"}}}
    )
    node = await token_for(
        sim, {"spec": {"boundObjectRef": {"kind": "Node", "apiVersion": "v1", "name": "node-2"}}}
    )
    code, out = await whoami(sim, node)
    assert code == 201
    extra = out["status"]["userInfo"]["extra"]
    assert extra["authentication.kubernetes.io/node-name"] == ["node-2"]
    assert extra["authentication.kubernetes.io/node-uid"] == [uid(sim, "Node", "", "node-2")]
    assert "authentication.kubernetes.io/pod-name" not in extra
    assert (await whoami(sim, secret))[0] == 201
    assert (await call(sim, "DELETE", "/api/v1/namespaces/kube-system/secrets/bound"))[0] == 200
    assert await whoami(sim, secret) == (401, UNAUTHORIZED)
    assert (await call(sim, "DELETE", "/api/v1/nodes/node-2"))[0] == 200
    assert await whoami(sim, node) == (401, UNAUTHORIZED)


async def test_token_review_reports_user_or_error(sim: Simulator, clock: Clock) -> None:
    path = "/apis/authentication.k8s.io/v1/tokenreviews"
    token = await token_for(sim, pod_ref())
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    code, out = await call(sim, "POST", path, body={**body, "spec": {"token": token}})
    assert code == 201
    assert out["status"]["authenticated"] is True
    assert out["status"]["user"]["username"] == SA
    assert out["status"]["audiences"] == [ISSUER]
    code, out = await call(
        sim, "POST", path, body={**body, "spec": {"token": token, "audiences": ["vault"]}}
    )
    assert code == 201
    assert "authenticated" not in out["status"]
    assert "invalid" in out["status"]["error"]
    code, out = await call(sim, "POST", path, body={**body, "spec": {"token": sim.admin_token}})
    assert out["status"]["user"]["username"] == "kubernetes-admin"
    code, out = await call(sim, "POST", path, body={**body, "spec": {}})
    assert (code, out["message"]) == (400, "token is required for TokenReview in authentication")
    code, out = await call(sim, "GET", path)
    assert code == 405


async def test_self_subject_review_of_an_anonymous_request(sim: Simulator) -> None:
    code, out = await call(sim, "POST", WHOAMI, body={})
    assert code == 201
    assert out["status"]["userInfo"] == {
        "username": "system:anonymous",
        "groups": ["system:unauthenticated"],
    }


async def test_every_namespace_gets_a_default_service_account(sim: Simulator) -> None:
    for ns in (*BOOTSTRAP_NAMESPACES, "prod"):
        assert sim.get("ServiceAccount", ns, "default") is not None, ns
    code, _ = await call(sim, "POST", "/api/v1/namespaces", body={"metadata": {"name": "late"}})
    assert code == 201
    await until(lambda: sim.get("ServiceAccount", "late", "default") is not None)
    old = uid(sim, "ServiceAccount", "late", "default")
    assert (await call(sim, "DELETE", "/api/v1/namespaces/late/serviceaccounts/default"))[0] == 200
    await until(lambda: sim.get("ServiceAccount", "late", "default") is not None)
    assert uid(sim, "ServiceAccount", "late", "default") != old
