"""Fault injection while serving: respond, delay, drop, latency, pod faults, and the request log."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

import kubesim
from kubesim.sim import Simulator
from tests.support.api import raw, status_of
from tests.support.wait import until

EVICT_PATH = "/api/v1/namespaces/default/pods/{}/eviction"


def eviction_body(name: str) -> str:
    return json.dumps({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})


# --- respond ----------------------------------------------------------------------------------


async def test_respond_on_a_call_range(sim: Simulator) -> None:
    sim.add_faults(
        {
            "faults": [
                {
                    "match": {
                        "verb": "create",
                        "resource": "pods",
                        "subresource": "eviction",
                        "namespace": "default",
                        "name": "web-0",
                        "calls": "1-2",
                    },
                    "respond": {
                        "code": 429,
                        "reason": "TooManyRequests",
                        "message": "slow down",
                        "causes": [{"reason": "DisruptionBudget", "message": "wait"}],
                        "retryAfterSeconds": 2,
                    },
                }
            ]
        }
    )
    results = []
    for _ in range(3):
        code, headers, body = await raw(
            sim, "POST", EVICT_PATH.format("web-0"), body=eviction_body("web-0")
        )
        results.append((code, headers.get("Retry-After"), body))
    assert (
        results[0]
        == results[1]
        == (
            429,
            "2",
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "slow down",
                "reason": "TooManyRequests",
                "details": {
                    "causes": [{"reason": "DisruptionBudget", "message": "wait"}],
                    "retryAfterSeconds": 2,
                },
                "code": 429,
            },
        )
    )
    assert results[2][0] == 201
    assert [r.code for r in sim.requests.filter(subresource="eviction")] == [429, 429, 201]


async def test_calls_count_per_object_and_from_load(sim: Simulator, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    await core.read_namespaced_pod("web-0", "default")  # before the fault: not counted
    sim.add_faults(
        {
            "faults": [
                {
                    "match": {"verb": "get", "resource": "pods", "calls": "2"},
                    "respond": {"code": 503, "message": "flaky"},
                }
            ]
        }
    )
    await core.read_namespaced_pod("web-0", "default")  # call 1 of web-0
    await core.read_namespaced_pod("web-1", "default")  # call 1 of web-1
    with pytest.raises(ApiException) as info:
        await core.read_namespaced_pod("web-1", "default")  # call 2 of web-1
    assert info.value.status == 503
    assert status_of(info.value)["reason"] == "ServiceUnavailable"
    with pytest.raises(ApiException):
        await core.read_namespaced_pod("web-0", "default")  # call 2 of web-0
    await core.read_namespaced_pod("web-0", "default")  # call 3: normal again
    # The status subresource is another object for matching: untouched.
    await core.read_namespaced_pod_status("web-0", "default")
    codes = [(r.name, r.subresource, r.code) for r in sim.requests.filter(verb="get")]
    assert codes == [
        ("web-0", "", 200),
        ("web-0", "", 200),
        ("web-1", "", 200),
        ("web-1", "", 503),
        ("web-0", "", 503),
        ("web-0", "", 200),
        ("web-0", "status", 200),
    ]


async def test_resource_with_subresource_shorthand(sim: Simulator) -> None:
    sim.add_faults(
        {
            "faults": [
                {
                    "match": {"resource": "pods/eviction", "name": "web-0"},
                    "respond": {"code": 500, "reason": "InternalError", "message": "boom"},
                }
            ]
        }
    )
    code, _, body = await raw(sim, "POST", EVICT_PATH.format("web-0"), body=eviction_body("web-0"))
    assert (code, body["message"]) == (500, "boom")
    code, _, _ = await raw(sim, "GET", "/api/v1/namespaces/default/pods/web-0")
    assert code == 200


# --- delay, latency, drop ---------------------------------------------------------------------


async def test_delay_then_normal_answer(sim: Simulator, api: client.ApiClient) -> None:
    sim.add_faults(
        {"faults": [{"match": {"verb": "get", "resource": "pods", "name": "web-0"}, "delay": 0.3}]}
    )
    core = client.CoreV1Api(api)
    start = time.monotonic()
    pod = await core.read_namespaced_pod("web-0", "default")
    assert time.monotonic() - start >= 0.3
    assert pod.metadata.name == "web-0"
    start = time.monotonic()
    await core.read_namespaced_pod("web-1", "default")
    assert time.monotonic() - start < 0.3
    assert sim.requests[-2].code == 200


async def test_latency_applies_to_every_request(sim: Simulator) -> None:
    sim.add_faults({"latency": 0.15})
    for path in ("/api/v1/nodes", "/version"):
        start = time.monotonic()
        code, _, _ = await raw(sim, "GET", path)
        assert code == 200
        assert time.monotonic() - start >= 0.15


async def test_drop_closes_the_connection(sim: Simulator) -> None:
    # aiohttp retries an idempotent request once when the server hangs up: drop two calls.
    sim.add_faults(
        {"faults": [{"match": {"verb": "list", "resource": "pods", "calls": "1-2"}, "drop": True}]}
    )
    with pytest.raises(aiohttp.ClientError):
        await raw(sim, "GET", "/api/v1/pods")
    code, _, _ = await raw(sim, "GET", "/api/v1/pods")
    assert code == 200
    codes = [r.code for r in sim.requests.filter(verb="list")]
    assert codes[-1] == 200 and set(codes[:-1]) == {0}


async def test_drop_a_watch(sim: Simulator, api: client.ApiClient) -> None:
    sim.add_faults({"faults": [{"match": {"verb": "watch", "resource": "pods"}, "drop": True}]})
    w = watch.Watch()
    with pytest.raises(aiohttp.ClientError):
        async for _ in w.stream(
            client.CoreV1Api(api).list_namespaced_pod, "default", timeout_seconds=1
        ):
            pass
    assert sim.requests.filter(verb="watch")[0].code == 0


async def test_delay_and_respond_combine(sim: Simulator) -> None:
    sim.add_faults(
        {
            "faults": [
                {"match": {"verb": "get", "resource": "nodes"}, "delay": 0.1},
                {
                    "match": {"verb": "get", "resource": "nodes"},
                    "delay": 0.1,
                    "respond": {"code": 404, "reason": "NotFound", "message": "gone"},
                },
            ]
        }
    )
    start = time.monotonic()
    code, _, body = await raw(sim, "GET", "/api/v1/nodes/node-1")
    assert time.monotonic() - start >= 0.2
    assert (code, body["message"]) == (404, "gone")


async def test_faults_posted_at_run_time(sim: Simulator) -> None:
    code, _, _ = await raw(
        sim,
        "POST",
        "/_kubesim/faults",
        body="faults:\n- match: {verb: delete, resource: pods}\n"
        "  respond: {code: 409, message: refused}\n",
        content_type="application/yaml",
    )
    assert code == 200
    code, _, body = await raw(sim, "DELETE", "/api/v1/namespaces/default/pods/web-0")
    assert (code, body["reason"], body["message"]) == (409, "Conflict", "refused")
    assert sim.get("Pod", "default", "web-0") is not None


# --- pod faults -------------------------------------------------------------------------------


async def test_deletion_delay_and_never_delete(sim: Simulator, api: client.ApiClient) -> None:
    sim.add_faults(
        {
            "pods": [
                {"ref": "default/web-0", "deletionDelay": 0.2},
                {"ref": "default/web-1", "neverDelete": True},
            ]
        }
    )
    core = client.CoreV1Api(api)
    # grace 300 s would take 3 s at time scale 0.01; the override says 0.2 s.
    await core.delete_namespaced_pod("web-0", "default", grace_period_seconds=300)
    await core.delete_namespaced_pod("web-1", "default", grace_period_seconds=1)
    await until(lambda: sim.get("Pod", "default", "web-0") is None, timeout=1.5)
    await asyncio.sleep(0.1)
    stuck = sim.get("Pod", "default", "web-1")
    assert stuck is not None and stuck["metadata"]["deletionTimestamp"]


async def test_recreate_after_delete(sim: Simulator, api: client.ApiClient) -> None:
    sim.add_faults(
        {
            "pods": [
                {
                    "ref": "default/web-0",
                    "recreateAfterDelete": {"uid": "web-0-new", "node": "node-2", "after": 0.1},
                }
            ]
        }
    )
    old = sim.get("Pod", "default", "web-0")
    assert old is not None
    await client.CoreV1Api(api).delete_namespaced_pod("web-0", "default", grace_period_seconds=0)
    assert sim.get("Pod", "default", "web-0") is None
    await until(
        lambda: (
            (sim.get("Pod", "default", "web-0") or {}).get("status", {}).get("phase") == "Running"
        )
    )
    new = sim.get("Pod", "default", "web-0")
    assert new is not None
    assert new["metadata"]["uid"] == "web-0-new"
    assert new["spec"]["nodeName"] == "node-2"
    assert new["metadata"]["labels"] == old["metadata"]["labels"]
    ready = {c["type"]: c["status"] for c in new["status"]["conditions"]}
    assert ready["Ready"] == "True"
    # Only once: deleting the replacement does not bring it back again.
    await client.CoreV1Api(api).delete_namespaced_pod("web-0", "default", grace_period_seconds=0)
    await asyncio.sleep(0.2)
    assert sim.get("Pod", "default", "web-0") is None


async def test_timeline_relative_to_server_start() -> None:
    faults = {
        "pods": [
            {
                "ref": "default/web-0",
                "timeline": [
                    {
                        "after": 0.1,
                        "set": {
                            "status.phase": "Failed",
                            "metadata.labels.app.kubernetes.io/state": "x",
                        },
                    },
                    {"after": 0.4, "delete": True},
                ],
            }
        ]
    }
    state = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        },
    ]
    async with kubesim.serve(state=state, faults=faults, time_scale=10.0) as sim:
        await until(
            lambda: (sim.get("Pod", "default", "web-0") or {})["status"]["phase"] == "Failed"
        )
        pod = sim.get("Pod", "default", "web-0")
        assert pod is not None
        assert pod["metadata"]["labels"] == {"app": "web", "app.kubernetes.io/state": "x"}
        ready = {c["type"]: (c["status"], c.get("reason")) for c in pod["status"]["conditions"]}
        assert ready["Ready"] == ("False", "PodFailed")
        assert ready["ContainersReady"] == ("False", "PodFailed")
        # A Failed pod is deleted at once (no grace), by the second step.
        await until(lambda: sim.get("Pod", "default", "web-0") is None)


async def test_timeline_added_at_run_time_sets_a_condition(sim: Simulator) -> None:
    await asyncio.sleep(0.3)
    start = time.monotonic()
    sim.add_faults(
        {
            "pods": [
                {
                    "ref": "default/web-1",
                    "timeline": [{"after": 0.2, "set": {"status.conditions.Ready": "True"}}],
                }
            ]
        }
    )

    def ready() -> bool:
        pod = sim.get("Pod", "default", "web-1") or {}
        conds = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
        return conds.get("Ready") == "True"

    assert not ready()
    await until(ready)
    assert time.monotonic() - start >= 0.2  # relative to the load, not to the server start


# --- the request log --------------------------------------------------------------------------


async def test_request_log_records_an_eviction(sim: Simulator) -> None:
    sim.requests.clear()
    code, _, _ = await raw(
        sim, "POST", EVICT_PATH.format("web-0") + "?dryRun=All", body=eviction_body("web-0")
    )
    assert code == 201
    (rec,) = sim.requests.filter(subresource="eviction")
    assert (rec.verb, rec.method, rec.resource, rec.namespace, rec.name, rec.code) == (
        "create",
        "POST",
        "pods",
        "default",
        "web-0",
        201,
    )
    assert rec.path == "/api/v1/namespaces/default/pods/web-0/eviction"
    assert rec.query == {"dryRun": ["All"]}
    assert rec.body == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-0"},
    }
    code, _, listing = await raw(sim, "GET", "/_kubesim/requests")
    assert code == 200
    entries: list[dict[str, Any]] = listing["requests"]
    assert entries[-1]["subresource"] == "eviction" and entries[-1]["code"] == 201


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


async def test_drain_example_files() -> None:
    async with kubesim.serve(
        state=EXAMPLES / "kubesim-drain.yaml",
        faults=EXAMPLES / "kubesim-drain-faults.yaml",
        time_scale=0.01,
    ) as sim:
        await until(
            lambda: (
                (sim.get("pdb", "default", "web") or {}).get("status", {}).get("currentHealthy")
                == 3
            )
        )
        path = EVICT_PATH.format("web-5d4f-a")
        code, _, _ = await raw(sim, "POST", path, body=eviction_body("web-5d4f-a"))
        assert code == 201
        # the budget as the first eviction left it (on a loaded machine the recreated pod could
        # otherwise be Ready before the second request arrives)
        sim.pin_pdb("default", "web")
        path_b = EVICT_PATH.format("web-5d4f-b")
        code, _, body = await raw(sim, "POST", path_b, body=eviction_body("web-5d4f-b"))
        assert (code, body["details"]["causes"][0]["message"]) == (
            429,
            "The disruption budget web needs 2 healthy pods and has 2 currently",
        )
        sim.unpin_pdb("default", "web")

        def replaced() -> bool:
            pod = sim.get("Pod", "default", "web-5d4f-a") or {}
            return pod.get("spec", {}).get("nodeName") == "node-2" and pod["status"]["phase"] == (
                "Running"
            )

        await until(replaced)
        await until(lambda: sim.get("pdb", "default", "web")["status"]["currentHealthy"] == 3)  # type: ignore[index]
        code, _, _ = await raw(sim, "POST", path_b, body=eviction_body("web-5d4f-b"))
        assert code == 201
