"""The eviction subresource, rule by rule, through the real kubernetes-asyncio client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

import kubesim
from kubesim.core.errors import StatusError, conflict
from kubesim.plugins.eviction import EVICTION_MESSAGE
from kubesim.sim import Simulator
from tests.support import manifests
from tests.support.api import raw

STATE = """
apiVersion: v1
kind: Node
metadata: {name: node-1}
status: {conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
"""

# The pods here are web's (app=web) in the shop namespace, owned by nothing.
pod = partial(manifests.pod, namespace="shop", app="web", owner=None, grace=30)


# The budgets here select app=web whatever their name, in the shop namespace.
pdb = partial(manifests.pdb, namespace="shop", app="web")


def budget(
    allowed: int, *, healthy: int = 2, desired: int = 2, generation: int = 1
) -> dict[str, Any]:
    return {
        "observedGeneration": generation,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": 3,
    }


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    # A long time scale: evicted pods stay Terminating while a test looks at them.
    async with kubesim.serve(state=STATE, time_scale=10.0) as s:
        yield s


@pytest.fixture
async def core(sim: Simulator) -> AsyncIterator[client.CoreV1Api]:
    api = sim.api_client()
    try:
        yield client.CoreV1Api(api)
    finally:
        await api.close()


def eviction(name: str, namespace: str = "shop", **delete_options: Any) -> client.V1Eviction:
    return client.V1Eviction(
        api_version="policy/v1",
        kind="Eviction",
        metadata=client.V1ObjectMeta(name=name, namespace=namespace),
        delete_options=client.V1DeleteOptions(**delete_options) if delete_options else None,
    )


async def evict(
    core: client.CoreV1Api, name: str, *, body: Any = None, **kw: Any
) -> tuple[int, dict[str, str], dict[str, Any]]:
    """POST the eviction; (status, headers, Status body) for success and failure alike."""
    try:
        resp = await core.create_namespaced_pod_eviction(
            name, "shop", body if body is not None else eviction(name), _preload_content=False, **kw
        )
    except ApiException as exc:
        return exc.status, dict(exc.headers or {}), json.loads(exc.body)
    return resp.status, dict(resp.headers), json.loads(await resp.read())


def failure(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    if reason:
        out["reason"] = reason
    if details:
        out["details"] = details
    out["code"] = code
    return out


SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def conditions(sim: Simulator, name: str) -> dict[str, dict[str, Any]]:
    p = sim.get("Pod", "shop", name)
    assert p is not None
    return {c["type"]: c for c in p["status"].get("conditions", [])}


# --- request checks ---------------------------------------------------------------------------


async def test_no_pdb_evicts_with_201_and_disruption_target(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    sim.apply(pod("web-0"))
    code, headers, body = await evict(core, "web-0")
    assert (code, body) == (201, SUCCESS)
    assert "Retry-After" not in headers
    stored = sim.get("Pod", "shop", "web-0")
    assert stored is not None
    assert stored["metadata"]["deletionGracePeriodSeconds"] == 30
    target = conditions(sim, "web-0")["DisruptionTarget"]
    assert {k: target[k] for k in ("status", "reason", "message")} == {
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    }
    # The condition is written before the delete: the pod's last update is the delete.
    updates = [r for r in sim.requests if r.subresource == "eviction"]
    assert [r.code for r in updates] == [201]


async def test_grace_period_from_delete_options(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply(pod("web-0"))
    code, _, _ = await evict(core, "web-0", body=eviction("web-0", grace_period_seconds=7))
    assert code == 201
    stored = sim.get("Pod", "shop", "web-0")
    assert stored is not None and stored["metadata"]["deletionGracePeriodSeconds"] == 7


async def test_grace_zero_removes_the_pod(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply(pod("web-0"))
    code, _, _ = await evict(core, "web-0", body=eviction("web-0", grace_period_seconds=0))
    assert code == 201
    assert sim.get("Pod", "shop", "web-0") is None


async def test_name_mismatch_and_empty_name(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply(pod("web-0"))
    for body_name in ("web-1", ""):
        body = eviction("web-0")
        body.metadata.name = body_name
        code, _, body_out = await evict(core, "web-0", body=body)
        assert (code, body_out) == (
            400,
            failure(400, "BadRequest", "name in URL does not match name in Eviction object"),
        )
    assert sim.get("Pod", "shop", "web-0") is not None


async def test_namespace_mismatch(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply(pod("web-0"))
    code, _, body = await evict(core, "web-0", body=eviction("web-0", namespace="default"))
    assert code == 400
    assert body["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


async def test_wrong_api_version_and_method(sim: Simulator) -> None:
    path = "/api/v1/namespaces/shop/pods/web-0/eviction"
    body = {"apiVersion": "policy/v2", "kind": "Eviction", "metadata": {"name": "web-0"}}
    code, _, out = await raw(sim, "POST", path, body=json.dumps(body))
    assert (code, out["message"]) == (
        400,
        "the API version in the data (policy/v2) does not match the expected API version"
        " (policy/v1)",
    )
    code, _, out = await raw(sim, "GET", path)
    assert (code, out["reason"]) == (405, "MethodNotAllowed")


async def test_missing_pod(sim: Simulator, core: client.CoreV1Api) -> None:
    code, _, body = await evict(core, "nope")
    assert (code, body) == (
        404,
        failure(404, "NotFound", 'pods "nope" not found', name="nope", kind="pods"),
    )


async def test_namespace_terminating(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply(pod("web-0"))
    sim.add_faults({"pods": [{"ref": "shop/web-0", "neverDelete": True}]})
    await core.delete_namespace("shop")
    await asyncio.sleep(0.1)  # the namespace controller marks web-0 for deletion
    code, _, body = await evict(core, "web-0")
    assert (code, body) == (
        403,
        failure(
            403,
            "Forbidden",
            'pods "web-0" is forbidden: unable to create new content in namespace shop because'
            " it is being terminated",
            name="web-0",
            kind="pods",
            causes=[
                {
                    "reason": "NamespaceTerminating",
                    "message": "namespace shop is being terminated",
                    "field": "metadata.namespace",
                }
            ],
        ),
    )


# --- dry run ----------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["query", "body", "both"])
async def test_dry_run_changes_nothing(sim: Simulator, core: client.CoreV1Api, where: str) -> None:
    sim.apply([pod("web-0"), pod("web-1"), pdb("web", min_available=1)])
    sim.pin_pdb("shop", "web", budget(1))
    body = eviction("web-0", dry_run=["All"]) if where != "query" else eviction("web-0")
    kw = {"dry_run": "All"} if where != "body" else {}
    code, _, out = await evict(core, "web-0", body=body, **kw)
    assert (code, out) == (201, SUCCESS)
    stored = sim.get("Pod", "shop", "web-0")
    assert stored is not None
    assert "deletionTimestamp" not in stored["metadata"]
    assert "DisruptionTarget" not in conditions(sim, "web-0")
    stored_pdb = sim.get("PodDisruptionBudget", "shop", "web")
    assert stored_pdb is not None and stored_pdb["status"] == budget(1)


async def test_dry_run_mismatch_is_a_500(sim: Simulator) -> None:
    sim.apply(pod("web-0"))
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-0", "namespace": "shop"},
        "deleteOptions": {"dryRun": ["All", "All"]},
    }
    code, _, out = await raw(
        sim, "POST", "/api/v1/namespaces/shop/pods/web-0/eviction?dryRun=All", body=json.dumps(body)
    )
    # propagateDryRun returns a plain Go error: ErrorToAPIStatus makes it a 500, reason "".
    assert (code, out) == (
        500,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Non-matching dry-run options in request and content: [All] and [All All]",
            "code": 500,
        },
    )


async def test_invalid_dry_run_query(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply(pod("web-0"))
    code, _, out = await evict(core, "web-0", dry_run="Some")
    assert (code, out["reason"]) == (422, "Invalid")
    assert out["message"].startswith('CreateOptions.meta.k8s.io "" is invalid: dryRun')


# --- pods that bypass budgets ------------------------------------------------------------------


@pytest.mark.parametrize("phase", ["Succeeded", "Failed", "Pending"])
async def test_terminal_and_pending_pods_ignore_the_budget(
    sim: Simulator, core: client.CoreV1Api, phase: str
) -> None:
    sim.apply([pod("web-0", phase=phase, ready=None), pod("web-1"), pdb("web", min_available=5)])
    sim.pin_pdb("shop", "web", budget(0))
    code, _, out = await evict(core, "web-0")
    assert (code, out) == (201, SUCCESS)
    stored = sim.get("Pod", "shop", "web-0")
    if phase == "Pending":  # bound to a node: deleted gracefully
        assert stored is not None and stored["metadata"]["deletionTimestamp"]
    else:  # terminal pods go at once
        assert stored is None
    stored_pdb = sim.get("PodDisruptionBudget", "shop", "web")
    assert stored_pdb is not None and stored_pdb["status"] == budget(0)


async def test_pending_pod_with_stale_resource_version(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    sim.apply(pod("web-0", phase="Pending", ready=None))
    current = sim.get("Pod", "shop", "web-0")
    assert current is not None
    rv = current["metadata"]["resourceVersion"]
    stale = str(int(rv) - 1)
    body = eviction("web-0", preconditions=client.V1Preconditions(resource_version=stale))
    code, _, out = await evict(core, "web-0", body=body)
    assert (code, out) == (
        409,
        failure(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on Pod "web-0": the ResourceVersion in the'
            f" precondition ({stale}) does not match the ResourceVersion in record ({rv})."
            " The object might have been modified",
            name="web-0",
            kind="Pod",
        ),
    )


async def test_terminating_pod_is_evicted_again(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply([pod("web-0"), pdb("web", min_available=5)])
    sim.pin_pdb("shop", "web", budget(0))
    await core.delete_namespaced_pod("web-0", "shop")
    code, _, out = await evict(core, "web-0", body=eviction("web-0", grace_period_seconds=3))
    assert (code, out) == (201, SUCCESS)
    stored = sim.get("Pod", "shop", "web-0")
    assert stored is not None and stored["metadata"]["deletionGracePeriodSeconds"] == 3


# --- PDB lookup -------------------------------------------------------------------------------


async def test_more_than_one_pdb_is_a_500(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply([pod("web-0"), pdb("a", min_available=1), pdb("b", selector={}, min_available=1)])
    code, headers, out = await evict(core, "web-0")
    assert (code, out) == (
        500,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "This pod has more than one PodDisruptionBudget, which the eviction"
            " subresource does not support.",
            "code": 500,
        },
    )
    assert "Retry-After" not in headers


async def test_empty_selector_matches_everything(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply([pod("db-0", app="db"), pdb("all", selector={}, min_available=1)])
    sim.pin_pdb("shop", "all", budget(0))
    code, _, out = await evict(core, "db-0")
    assert code == 429
    assert out["details"]["causes"][0]["message"] == (
        "The disruption budget all needs 2 healthy pods and has 2 currently"
    )


async def test_absent_selector_matches_nothing(sim: Simulator, core: client.CoreV1Api) -> None:
    body = pdb("none", min_available=1)
    del body["spec"]["selector"]
    sim.apply([pod("db-0", app="db"), body])
    sim.pin_pdb("shop", "none", budget(0))
    code, _, _ = await evict(core, "db-0")
    assert code == 201


# --- the budget -------------------------------------------------------------------------------


async def test_budget_exhausted_is_429_without_retry_after(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    sim.apply([pod("web-0"), pod("web-1"), pdb("web", min_available=2)])
    await asyncio.sleep(0.05)  # the disruption controller computes: 2 healthy, 2 desired
    code, headers, out = await evict(core, "web-0")
    assert (code, out) == (
        429,
        failure(
            429,
            "TooManyRequests",
            EVICTION_MESSAGE,
            causes=[
                {
                    "reason": "DisruptionBudget",
                    "message": "The disruption budget web needs 2 healthy pods and has 2 currently",
                }
            ],
        ),
    )
    assert "Retry-After" not in headers
    stored = sim.get("Pod", "shop", "web-0")
    assert stored is not None and "deletionTimestamp" not in stored["metadata"]


async def test_stale_observed_generation_is_429_retry_after_10(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    sim.apply([pod("web-0"), pdb("web", min_available=1)])
    sim.pin_pdb("shop", "web", budget(5, generation=0))
    code, headers, out = await evict(core, "web-0")
    assert (code, out) == (
        429,
        failure(
            429,
            "TooManyRequests",
            EVICTION_MESSAGE,
            causes=[
                {
                    "reason": "DisruptionBudget",
                    "message": "The disruption budget web is still being processed by the server.",
                }
            ],
            retryAfterSeconds=10,
        ),
    )
    assert headers["Retry-After"] == "10"


async def test_negative_budget_is_403(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply([pod("web-0"), pdb("web", min_available=1)])
    sim.pin_pdb("shop", "web", budget(-1))
    code, _, out = await evict(core, "web-0")
    assert (code, out) == (
        403,
        failure(
            403,
            "Forbidden",
            'poddisruptionbudget.policy "web" is forbidden: pdb disruptions allowed is negative',
            name="web",
            group="policy",
            kind="poddisruptionbudget",
        ),
    )


async def test_too_many_disrupted_pods_is_403(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply([pod("web-0"), pdb("web", min_available=1)])
    status = budget(3)
    status["disruptedPods"] = {f"p-{i}": "2026-01-01T00:00:00Z" for i in range(2001)}
    sim.pin_pdb("shop", "web", status)
    code, _, out = await evict(core, "web-0")
    assert code == 403
    assert out["message"] == (
        'poddisruptionbudget.policy "web" is forbidden: DisruptedPods map too big - too many'
        " evictions not confirmed by PDB controller"
    )
    status["disruptedPods"].popitem()  # exactly 2000 is still allowed
    sim.pin_pdb("shop", "web", status)
    code, _, _ = await evict(core, "web-0")
    assert code == 201


async def test_granted_eviction_decrements_and_records(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    sim.apply([pod("web-0"), pod("web-1"), pdb("web", min_available=1)])
    sim.pin_pdb("shop", "web", budget(1))
    code, _, _ = await evict(core, "web-0")
    assert code == 201
    stored = sim.get("PodDisruptionBudget", "shop", "web")
    assert stored is not None
    status = stored["status"]
    assert status["disruptionsAllowed"] == 0
    assert list(status["disruptedPods"]) == ["web-0"]
    (cond,) = status["conditions"]
    assert {k: cond[k] for k in ("type", "status", "reason", "message")} == {
        "type": "DisruptionAllowed",
        "status": "False",
        "reason": "InsufficientPods",
        "message": "",
    }
    code, _, out = await evict(core, "web-1")
    assert code == 429
    assert out["details"]["causes"][0]["reason"] == "DisruptionBudget"


async def test_uid_precondition_conflict_after_decrement(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    sim.apply([pod("web-0"), pdb("web", min_available=1)])
    sim.pin_pdb("shop", "web", budget(2))
    stored = sim.get("Pod", "shop", "web-0")
    assert stored is not None
    uid = stored["metadata"]["uid"]
    body = eviction("web-0", preconditions=client.V1Preconditions(uid="other-uid"))
    code, _, out = await evict(core, "web-0", body=body)
    assert (code, out) == (
        409,
        failure(
            409,
            "Conflict",
            'Operation cannot be fulfilled on Pod "web-0": the UID in the precondition'
            f" (other-uid) does not match the UID in record ({uid}). The object might have"
            " been deleted and then recreated",
            name="web-0",
            kind="Pod",
        ),
    )
    # The budget was decremented before the delete failed (checkAndDecrement comes first in
    # pkg/registry/core/pod/storage/eviction.go): one disruption slot is held.
    after = sim.get("PodDisruptionBudget", "shop", "web")
    assert after is not None
    assert after["status"]["disruptionsAllowed"] == 1
    assert list(after["status"]["disruptedPods"]) == ["web-0"]
    body = eviction("web-0", preconditions=client.V1Preconditions(uid=uid))
    code, _, _ = await evict(core, "web-0", body=body)
    assert code == 201


# --- unhealthy pods ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        ("AlwaysAllow", 0, 3, 201),
        (None, 3, 3, 201),  # IfHealthyBudget by default: the application is not disrupted
        ("IfHealthyBudget", 3, 3, 201),
        ("IfHealthyBudget", 2, 3, 429),
        ("IfHealthyBudget", 0, 0, 429),  # desiredHealthy must be > 0
    ],
)
async def test_unhealthy_pod_policy(
    sim: Simulator, core: client.CoreV1Api, case: tuple[str | None, int, int, int]
) -> None:
    policy, healthy, desired, expected = case
    sim.apply([pod("web-0", ready=False), pdb("web", min_available=1, unhealthy_policy=policy)])
    sim.pin_pdb("shop", "web", budget(0, healthy=healthy, desired=desired))
    code, _, _ = await evict(core, "web-0")
    assert code == expected
    stored = sim.get("PodDisruptionBudget", "shop", "web")
    assert stored is not None and stored["status"]["disruptionsAllowed"] == 0
    assert "disruptedPods" not in stored["status"]  # never charged to the budget


async def test_unhealthy_pod_conflict_is_still_processing(
    sim: Simulator, core: client.CoreV1Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim.apply(
        [
            pod("web-0", ready=False),
            pdb("web", min_available=1, unhealthy_policy="AlwaysAllow"),
        ]
    )
    sim.pin_pdb("shop", "web", budget(0))

    def racing_delete(*args: Any, **kw: Any) -> Any:
        # Another writer changed the pod between the handler's read and its delete.
        raise conflict("pods", "", "web-0", "the object has been modified")

    monkeypatch.setattr(sim.registry, "delete", racing_delete)
    code, headers, out = await evict(core, "web-0")
    assert code == 429
    assert headers["Retry-After"] == "10"
    assert out["details"] == {
        "causes": [
            {
                "reason": "DisruptionBudget",
                "message": "The disruption budget web is still being processed by the server.",
            }
        ],
        "retryAfterSeconds": 10,
    }


# --- body encodings ---------------------------------------------------------------------------


async def test_policy_v1beta1_body(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.apply(pod("web-0"))
    body = eviction("web-0")
    body.api_version = "policy/v1beta1"
    code, _, out = await evict(core, "web-0", body=body)
    assert (code, out) == (201, SUCCESS)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def protobuf_eviction(name: str, namespace: str, *, grace: int, dry_run: bool) -> bytes:
    meta = _field(1, name.encode()) + _field(3, namespace.encode())
    opts = _field(1, grace) + (_field(5, b"All") if dry_run else b"")
    raw_obj = _field(1, meta) + _field(2, opts)
    type_meta = _field(1, b"policy/v1") + _field(2, b"Eviction")
    return b"k8s\x00" + _field(1, type_meta) + _field(2, raw_obj)


async def test_protobuf_body(sim: Simulator) -> None:
    sim.apply([pod("web-0"), pod("web-1")])
    path = "/api/v1/namespaces/shop/pods/{}/eviction"
    ctype = "application/vnd.kubernetes.protobuf"
    data = protobuf_eviction("web-0", "shop", grace=4, dry_run=True)
    code, _, out = await raw(sim, "POST", path.format("web-0"), body=data, content_type=ctype)
    assert (code, out) == (201, SUCCESS)
    stored = sim.get("Pod", "shop", "web-0")
    assert stored is not None and "deletionTimestamp" not in stored["metadata"]
    data = protobuf_eviction("web-1", "shop", grace=4, dry_run=False)
    code, _, _ = await raw(sim, "POST", path.format("web-1"), body=data, content_type=ctype)
    assert code == 201
    stored = sim.get("Pod", "shop", "web-1")
    assert stored is not None and stored["metadata"]["deletionGracePeriodSeconds"] == 4


# --- invariants (in process, no HTTP) ----------------------------------------------------------


def _evict_in_process(sim: Simulator, name: str) -> int:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    try:
        sim.eviction.create("shop", name, body, dry_run=[])
    except StatusError as err:
        return err.code
    return 201


@settings(max_examples=25, deadline=None)
@given(allowed=st.integers(0, 6), pods=st.integers(1, 8), dry=st.booleans())
def test_n_granted_evictions_then_429(allowed: int, pods: int, dry: bool) -> None:
    sim = Simulator(state=STATE)
    sim.apply([pod(f"web-{i}") for i in range(pods)] + [pdb("web", min_available=1)])
    sim.pin_pdb("shop", "web", budget(allowed))
    codes = []
    for i in range(pods):
        if dry:
            body = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": f"web-{i}"},
            }
            try:
                sim.eviction.create("shop", f"web-{i}", body, dry_run=["All"])
                codes.append(201)
            except StatusError as err:
                codes.append(err.code)
        else:
            codes.append(_evict_in_process(sim, f"web-{i}"))
        stored = sim.get("PodDisruptionBudget", "shop", "web")
        assert stored is not None
        assert stored["status"]["disruptionsAllowed"] >= 0
    granted = pods if dry and allowed > 0 else min(allowed, pods)
    assert codes == [201] * granted + [429] * (pods - granted)
    stored = sim.get("PodDisruptionBudget", "shop", "web")
    assert stored is not None
    if not dry:
        assert len(stored["status"].get("disruptedPods") or {}) == granted
