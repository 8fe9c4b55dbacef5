"""The disruption controller: PDB status from pods, controllers' scale and evictions."""

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
from kubesim.controllers import FROZEN
from kubesim.controllers.disruption import (
    DisruptionController,
    SyncError,
    build_disrupted_pod_map,
    count_healthy_pods,
    disruptions_allowed,
    get_expected_pod_count,
    scaled_value,
)
from kubesim.controllers.namespace import NamespaceController
from kubesim.node.kubelet import Kubelet
from kubesim.sim import Simulator
from tests.support import manifests
from tests.support.manifests import pdb
from tests.support.wait import until

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-1"},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}


# The pods here are web's (app=web) whatever their owner, and have none unless given.
pod = partial(manifests.pod, app="web", owner=None)


def workload(kind: str, name: str, replicas: int, *, owner: dict[str, Any] | None = None) -> Any:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"{name}-uid"}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    }
    if kind != "DaemonSet":
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    # The workloads here are fixtures for the budget's arithmetic: no controller may change
    # their pods (nor collect pods whose owners the test leaves out on purpose).
    async with kubesim.serve(state=[NODE], time_scale=10.0, disabled_controllers=FROZEN) as s:
        yield s


def status_of(sim: Simulator, name: str = "web") -> dict[str, Any]:
    stored = sim.get("PodDisruptionBudget", "default", name)
    assert stored is not None
    status: dict[str, Any] = stored.get("status") or {}
    return status


def counts(status: dict[str, Any]) -> tuple[int, int, int, int]:
    return (
        status.get("expectedPods", 0),
        status.get("desiredHealthy", 0),
        status.get("currentHealthy", 0),
        status.get("disruptionsAllowed", 0),
    )


async def settled(sim: Simulator, name: str = "web") -> dict[str, Any]:
    await until(lambda: status_of(sim, name).get("observedGeneration") is not None)
    await asyncio.sleep(0.02)
    return status_of(sim, name)


# --- computations through the running controller ----------------------------------------------


async def test_integer_min_available_with_plain_pods(sim: Simulator) -> None:
    sim.apply([pod("a"), pod("b"), pod("c", ready=False), pdb("web", min_available=1)])
    status = await settled(sim)
    assert counts(status) == (3, 1, 2, 1)
    assert status["observedGeneration"] == 1
    (cond,) = status["conditions"]
    assert set(cond) == {
        "type",
        "status",
        "observedGeneration",
        "lastTransitionTime",
        "reason",
        "message",
    }
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "DisruptionAllowed",
        "True",
        "SufficientPods",
        "",
    )


async def test_percentage_min_available_uses_the_replicaset_scale(sim: Simulator) -> None:
    rs = ("apps/v1", "ReplicaSet", "web-rs")
    sim.apply(
        [workload("ReplicaSet", "web-rs", 5)]
        + [pod(f"p{i}", owner=rs) for i in range(4)]
        + [pdb("web", min_available="50%")]
    )
    status = await settled(sim)
    assert counts(status) == (5, 3, 4, 1)  # ceil(50% of 5) = 3


async def test_max_unavailable_uses_the_deployment_scale(sim: Simulator) -> None:
    dep = workload("Deployment", "web", 4)
    owner = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": "web-uid",
        "controller": True,
    }
    rs = ("apps/v1", "ReplicaSet", "web-abc")
    sim.apply(
        [dep, workload("ReplicaSet", "web-abc", 2, owner=owner)]
        + [pod(f"p{i}", owner=rs) for i in range(3)]
        + [pdb("web", max_unavailable=1)]
    )
    status = await settled(sim)
    assert counts(status) == (4, 3, 3, 0)
    assert status["conditions"][0]["reason"] == "InsufficientPods"


async def test_max_unavailable_percentage_with_a_statefulset(sim: Simulator) -> None:
    ss = ("apps/v1", "StatefulSet", "db")
    sim.apply(
        [workload("StatefulSet", "db", 4)]
        + [pod(f"db-{i}", owner=ss) for i in range(4)]
        + [pdb("web", max_unavailable="25%")]
    )
    status = await settled(sim)
    assert counts(status) == (4, 3, 4, 1)


def replication_controller(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid"},
        "spec": {
            "replicas": replicas,
            "selector": {"app": "web"},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


async def test_replication_controller_scale_counts_and_follows_a_resize(sim: Simulator) -> None:
    # getPodReplicationController: a core/v1 ReplicationController owner gives its replicas.
    rc = ("v1", "ReplicationController", "legacy")
    sim.apply(
        [replication_controller("legacy", 4)]
        + [pod(f"legacy-{i}", owner=rc) for i in range(4)]
        + [pdb("web", max_unavailable=1)]
    )
    status = await settled(sim)
    assert counts(status) == (4, 3, 4, 1)
    assert status["conditions"][0]["reason"] == "SufficientPods"
    # The controller watches ReplicationControllers: a scale-up re-syncs the budget.
    sim.apply([replication_controller("legacy", 6)])
    await until(lambda: counts(status_of(sim)) == (6, 5, 4, 0))


async def test_replication_controller_with_another_uid_is_not_the_owner(sim: Simulator) -> None:
    orphan = pod("a", owner=("v1", "ReplicationController", "old"))
    orphan["metadata"]["ownerReferences"][0]["name"] = "legacy"  # same name, an older UID
    sim.apply([replication_controller("legacy", 2), orphan, pdb("web", min_available="50%")])
    await until(lambda: bool(status_of(sim).get("conditions")))
    (cond,) = status_of(sim)["conditions"]
    assert (cond["reason"], cond["message"]) == ("SyncFailed", 'found no controllers for pod "a"')


async def test_unmanaged_pods_expect_nothing(sim: Simulator) -> None:
    sim.apply([pod("a"), pod("b"), pdb("web", max_unavailable=1)])
    status = await settled(sim)
    assert counts(status) == (0, 0, 2, 0)
    assert status["conditions"][0]["reason"] == "InsufficientPods"


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        (
            [
                workload("DaemonSet", "agent", 0),
                pod("a", owner=("apps/v1", "DaemonSet", "agent")),
            ],
            "daemonsets.apps does not implement the scale subresource",
        ),
        (
            [pod("a", owner=("apps/v1", "ReplicaSet", "gone"))],
            'found no controllers for pod "a"',
        ),
        (
            [pod("a", owner=("example.com/v1", "Widget", "w"))],
            'no matches for kind "Widget" in version "example.com/v1"',
        ),
    ],
)
async def test_unscalable_controllers_fail_safe(
    sim: Simulator, objects: list[Any], message: str
) -> None:
    sim.apply([*objects, pdb("web", min_available="50%")])
    await until(lambda: bool(status_of(sim).get("conditions")))
    status = status_of(sim)
    assert status["disruptionsAllowed"] == 0
    assert "observedGeneration" not in status  # failSafe leaves it: evictions get 429 "still"
    (cond,) = status["conditions"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "SyncFailed", message)


async def test_integer_min_available_needs_no_controller(sim: Simulator) -> None:
    sim.apply([pod("a", owner=("apps/v1", "DaemonSet", "agent")), pdb("web", min_available=0)])
    status = await settled(sim)
    assert counts(status) == (1, 0, 1, 1)


async def test_status_follows_pod_readiness(sim: Simulator) -> None:
    sim.apply([pod("a"), pod("b"), pdb("web", min_available=1)])
    await settled(sim)
    sim.apply(pod("b", ready=False))
    await until(lambda: status_of(sim)["currentHealthy"] == 1)
    assert counts(status_of(sim)) == (2, 1, 1, 0)
    sim.apply(pod("c"))
    await until(lambda: status_of(sim)["expectedPods"] == 3)
    assert counts(status_of(sim)) == (3, 1, 2, 1)


async def test_terminating_pods_are_not_healthy(sim: Simulator) -> None:
    sim.apply([pod("a"), pod("b"), pdb("web", min_available=1)])
    await settled(sim)
    api = sim.api_client()
    try:
        await client.CoreV1Api(api).delete_namespaced_pod("a", "default")
    finally:
        await api.close()
    await until(lambda: status_of(sim)["currentHealthy"] == 1)
    assert counts(status_of(sim)) == (2, 1, 1, 0)


async def test_spec_change_moves_observed_generation(sim: Simulator) -> None:
    sim.apply([pod("a"), pod("b"), pdb("web", min_available=1)])
    await settled(sim)
    api = sim.api_client()
    try:
        await client.PolicyV1Api(api).patch_namespaced_pod_disruption_budget(
            "web", "default", {"spec": {"minAvailable": 2}}
        )
    finally:
        await api.close()
    await until(lambda: status_of(sim).get("observedGeneration") == 2)
    assert counts(status_of(sim)) == (2, 2, 2, 0)
    assert status_of(sim)["conditions"][0]["observedGeneration"] == 2


async def test_status_is_not_rewritten_when_unchanged(sim: Simulator) -> None:
    sim.apply([pod("a"), pdb("web", min_available=0)])
    await settled(sim)
    before = sim.get("PodDisruptionBudget", "default", "web")
    sim.apply(pod("a"))  # same pod again: an event, but nothing changes for the budget
    await asyncio.sleep(0.05)
    after = sim.get("PodDisruptionBudget", "default", "web")
    assert before is not None and after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


# --- disruptedPods and the deletion timeout ---------------------------------------------------


async def test_disrupted_entry_expires_and_the_pod_counts_again() -> None:
    controllers = [NamespaceController(), Kubelet(), DisruptionController(deletion_timeout=0.4)]
    async with kubesim.serve(state=[NODE], controllers=controllers) as sim:
        sim.apply([pod("a"), pod("b"), pod("c"), pdb("web", min_available=1)])
        await settled(sim)
        assert counts(status_of(sim)) == (3, 1, 3, 2)
        api = sim.api_client()
        try:
            body = client.V1Eviction(
                metadata=client.V1ObjectMeta(name="a", namespace="default"),
                delete_options=client.V1DeleteOptions(
                    preconditions=client.V1Preconditions(uid="not-a")
                ),
            )
            with pytest.raises(ApiException) as info:
                await client.CoreV1Api(api).create_namespaced_pod_eviction("a", "default", body)
        finally:
            await api.close()
        assert info.value.status == 409
        # Granted, recorded, then the delete failed: "a" is held as disrupted.
        await until(lambda: status_of(sim)["currentHealthy"] == 2)
        status = status_of(sim)
        assert list(status["disruptedPods"]) == ["a"]
        assert counts(status) == (3, 1, 2, 1)
        # After the deletion timeout the entry goes and "a" counts as healthy again.
        await until(lambda: "disruptedPods" not in status_of(sim), timeout=3.0)
        assert counts(status_of(sim)) == (3, 1, 3, 2)


async def test_granted_eviction_entry_leaves_with_the_pod(sim: Simulator) -> None:
    sim.apply([pod("a"), pod("b"), pdb("web", min_available=1)])
    await settled(sim)
    api = sim.api_client()
    try:
        await client.CoreV1Api(api).create_namespaced_pod_eviction(
            "a",
            "default",
            client.V1Eviction(metadata=client.V1ObjectMeta(name="a", namespace="default")),
        )
    finally:
        await api.close()
    # "a" is terminating now: not healthy, and its entry is dropped from disruptedPods.
    await until(lambda: "disruptedPods" not in status_of(sim))
    assert counts(status_of(sim)) == (2, 1, 1, 0)


# --- static PDBs ------------------------------------------------------------------------------


async def test_static_annotation_keeps_the_given_status(sim: Simulator) -> None:
    body = pdb("web", min_available=1)
    body["metadata"]["annotations"] = {"kubesim.io/static-status": "true"}
    body["status"] = {
        "observedGeneration": 1,
        "disruptionsAllowed": 7,
        "currentHealthy": 9,
        "desiredHealthy": 2,
        "expectedPods": 9,
    }
    sim.apply([pod("a"), body])
    await asyncio.sleep(0.1)
    assert status_of(sim) == body["status"]


async def test_pin_and_unpin(sim: Simulator) -> None:
    sim.apply([pod("a"), pod("b"), pdb("web", min_available=1)])
    await settled(sim)
    pinned = {"observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 0}
    sim.pin_pdb("default", "web", pinned)
    sim.apply(pod("c"))
    await asyncio.sleep(0.1)
    assert status_of(sim) == pinned
    sim.unpin_pdb("default", "web")
    await until(lambda: status_of(sim).get("expectedPods") == 3)
    assert counts(status_of(sim)) == (3, 1, 3, 2)


async def test_status_over_http(sim: Simulator) -> None:
    sim.apply([pod("a"), pod("b"), pdb("web", min_available=1)])
    await settled(sim)
    api = sim.api_client()
    try:
        resp = await client.PolicyV1Api(api).read_namespaced_pod_disruption_budget_status(
            "web", "default", _preload_content=False
        )
        body = json.loads(await resp.read())
    finally:
        await api.close()
    assert counts(body["status"]) == (2, 1, 2, 1)


# --- pure functions -----------------------------------------------------------------------------


def test_scaled_value_rounds_up() -> None:
    assert scaled_value("50%", 5) == 3
    assert scaled_value("0%", 5) == 0
    assert scaled_value("100%", 5) == 5
    assert scaled_value(2, 5) == 2
    with pytest.raises(SyncError, match='invalid value "x%"'):
        scaled_value("x%", 5)


@given(percent=st.integers(0, 100), total=st.integers(0, 1000))
def test_scaled_value_is_the_ceiling(percent: int, total: int) -> None:
    value = scaled_value(f"{percent}%", total)
    assert value * 100 >= percent * total
    assert (value - 1) * 100 < percent * total or value == 0


@given(healthy=st.integers(0, 50), desired=st.integers(0, 50), expected=st.integers(0, 50))
def test_disruptions_allowed_never_negative(healthy: int, desired: int, expected: int) -> None:
    allowed = disruptions_allowed(healthy, desired, expected)
    assert allowed >= 0
    assert allowed == (max(0, healthy - desired) if expected > 0 else 0)


def _plain(name: str, *, ready: bool, deleting: bool = False) -> dict[str, Any]:
    p = pod(name, ready=ready)
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return p


@settings(max_examples=50)
@given(
    flags=st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), max_size=12),
    min_available=st.integers(0, 12),
)
def test_status_invariants(flags: list[tuple[bool, bool, bool]], min_available: int) -> None:
    pods = [_plain(f"p{i}", ready=r, deleting=d) for i, (r, d, _) in enumerate(flags)]
    disrupted = {f"p{i}": 100.0 for i, (_, _, x) in enumerate(flags) if x}
    live, recheck = build_disrupted_pod_map(pods, disrupted, now=110.0, timeout=120.0)
    assert set(live) <= set(disrupted)
    assert all(
        not p["metadata"].get("deletionTimestamp") for p in pods if p["metadata"]["name"] in live
    )
    assert (recheck == 220.0) == bool(live)
    healthy = count_healthy_pods(pods, live, now=110.0, timeout=120.0)
    expected_healthy = sum(1 for r, d, x in flags if r and not d and not x)
    assert healthy == expected_healthy
    counts_ = get_expected_pod_count(
        pdb("web", min_available=min_available), pods, lambda ref, ns: None
    )
    assert (counts_.expected, counts_.desired) == (len(pods), min_available)
    # Past the timeout every entry is gone and ready pods count again.
    live_late, _ = build_disrupted_pod_map(pods, disrupted, now=221.0, timeout=120.0)
    assert live_late == {}
