"""Create as kube-apiserver: generated names retried on a clash, gated pods marked as such.

* RetryGenerateName (GA in 1.32): a ``generateName`` create whose generated name is taken gets
  a new name, up to 8 in all; then 409 ``AlreadyExists`` ``… already exists, the server was
  not able to generate a unique name for the object`` with ``retryAfterSeconds: 1`` (a dry run
  tries one name). A name the client chose is never replaced: plain 409.
* ``applySchedulingGatedCondition``: a pod created with ``schedulingGates`` carries
  ``PodScheduled=False`` reason ``SchedulingGated`` from the API server itself.

The generated names are made predictable by giving the registry a seeded random generator and
drawing the same names from a twin of it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

import kubesim
from kubesim.core.names import NAME_CHARS
from kubesim.sim import Simulator
from tests.support.wait import until

NODE = """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
"""
SEED = 7
PODS = "/api/v1/namespaces/default/pods"


def generated_names(prefix: str, n: int) -> list[str]:
    twin = random.Random(SEED)
    return [prefix + "".join(twin.choice(NAME_CHARS) for _ in range(5)) for _ in range(n)]


def pod(name: str = "", *, generate: str = "", gates: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {"app": "web"}}
    if name:
        meta["name"] = name
    if generate:
        meta["generateName"] = generate
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if gates:
        spec["schedulingGates"] = [{"name": "example.com/quota"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=NODE, time_scale=0.01) as s:
        s.registry.rng = random.Random(SEED)
        yield s


async def post(sim: Simulator, body: Any, query: str = "") -> tuple[int, Any, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(sim.url + PODS + query, json=body) as resp,
    ):
        return resp.status, await resp.json(), resp.headers


def seed_names(sim: Simulator, names: list[str]) -> None:
    sim.apply([{**pod(n), "metadata": {"name": n, "namespace": "default"}} for n in names])


async def test_a_taken_generated_name_is_generated_again(sim: Simulator) -> None:
    names = generated_names("web-", 4)
    seed_names(sim, names[:3])
    code, body, _ = await post(sim, pod(generate="web-"))
    assert code == 201, body
    assert body["metadata"]["name"] == names[3]
    assert body["metadata"]["generateName"] == "web-"


async def test_eight_taken_names_answer_409_with_retry_after(sim: Simulator) -> None:
    names = generated_names("web-", 9)
    seed_names(sim, names[:8])
    before = len(sim.list_objects("Pod", "default"))
    code, body, headers = await post(sim, pod(generate="web-"))
    assert code == 409
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == (
        f'pods "{names[7]}" already exists, the server was not able to generate a unique name'
        " for the object"
    )
    assert body["details"] == {"name": names[7], "kind": "pods", "retryAfterSeconds": 1}
    assert headers["Retry-After"] == "1"
    assert len(sim.list_objects("Pod", "default")) == before  # nothing stored
    # The ninth name is free: the client's own retry succeeds.
    code, body, _ = await post(sim, pod(generate="web-"))
    assert (code, body["metadata"]["name"]) == (201, names[8])


async def test_a_dry_run_tries_one_generated_name(sim: Simulator) -> None:
    names = generated_names("web-", 2)
    seed_names(sim, names[:1])
    code, body, _ = await post(sim, pod(generate="web-"), "?dryRun=All")
    assert code == 409
    assert body["message"].startswith(f'pods "{names[0]}" already exists, the server was not')


async def test_a_chosen_name_is_never_replaced(sim: Simulator) -> None:
    seed_names(sim, ["web-fixed"])
    code, body, _ = await post(sim, pod("web-fixed", generate="web-"))
    assert code == 409
    assert body["message"] == 'pods "web-fixed" already exists'
    assert "retryAfterSeconds" not in body["details"]


async def test_a_replicaset_gets_its_pod_despite_a_clash(sim: Simulator) -> None:
    names = generated_names("web-", 2)
    seed_names(sim, names[:1])
    sim.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web", "tier": "x"}},
                "template": {
                    "metadata": {"labels": {"app": "web", "tier": "x"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        }
    )
    await until(
        lambda: sim.get("Pod", "default", names[1]) is not None, what="the second name used"
    )
    reasons = {e.get("reason") for e in sim.list_objects("events.events.k8s.io", "default")}
    reasons |= {e.get("reason") for e in sim.list_objects("Event", "default")}
    assert "SuccessfulCreate" in reasons
    assert "FailedCreate" not in reasons


def scheduled_condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return dict(c)
    return None


async def test_a_gated_pod_is_created_with_scheduling_gated(sim: Simulator) -> None:
    code, body, _ = await post(sim, pod("gated", gates=True))
    assert code == 201, body
    assert body["status"]["conditions"] == [
        {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": None,
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }
    ]
    # The scheduler leaves it there; once the gate is removed it binds and the condition flips.
    await asyncio.sleep(0.05)
    stored = sim.get("Pod", "default", "gated")
    assert stored is not None and not stored["spec"].get("nodeName")
    stored["spec"]["schedulingGates"] = []
    sim.registry.update(sim.scheme.for_storage("pods"), "default", "gated", stored)

    def bound() -> bool:
        now = sim.get("Pod", "default", "gated") or {}
        cond = scheduled_condition(now) or {}
        return now["spec"].get("nodeName") == "node-1" and cond.get("status") == "True"

    await until(bound, what="gated pod bound once ungated")


async def test_an_ungated_pod_starts_without_conditions() -> None:
    async with kubesim.serve(state=NODE, scheduler_loop=False) as sim:
        code, body, _ = await post(sim, pod("plain"))
        assert code == 201
        assert "conditions" not in body["status"]
