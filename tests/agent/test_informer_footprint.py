"""The informer keeps only what the agent reads, and a relist never holds two full copies.

Pods here are the footprint benchmark's realistic ones (~30 KB of JSON each: managedFields,
last-applied-configuration, environment, probes, affinity; ``bench/agent_footprint.py``).
Slimming must not change any decision: every field the decision core, the actions and the stats
sources read is the same on the slim pod as on the full one.
"""

from __future__ import annotations

import asyncio
import gc
import json
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import pytest

import kubesim
from agent.eviction.preference import EVICTION_PREFERENCE_ANNOTATION, is_eviction_forbidden
from agent.informer import PodInformer, container_names, slim_pod
from kube.critical import is_critical_pod, is_node_critical_pod
from kube.objects import Pod
from kube.qos import get_pod_qos
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.bench import load_bench

FP = load_bench("agent_footprint")


def _read_by_agent(pod: Pod) -> tuple[Any, ...]:
    """Every pod field the agent reads (decision core, actions, admission, preference)."""
    return (
        pod.name,
        pod.namespace,
        pod.uid,
        pod.resource_version,
        pod.node_name,
        pod.phase,
        pod.deletion_timestamp,
        pod.priority,
        pod.spec_priority,
        pod.priority_class_name,
        pod.termination_grace_period_seconds,
        pod.requests,
        pod.non_zero_requests,
        pod.overhead,
        pod.pod_requests,
        tuple((c.name, c.requests, c.limits, c.restart_policy) for c in pod.containers),
        tuple((c.name, c.requests, c.limits, c.restart_policy) for c in pod.init_containers),
        pod.volumes,
        pod.tolerations,
        get_pod_qos(pod),
        is_critical_pod(pod),
        is_node_critical_pod(pod),
        is_eviction_forbidden(pod, allowed={"*"}),
        pod.annotations.get(EVICTION_PREFERENCE_ANNOTATION),
    )


def _variants() -> list[dict[str, Any]]:
    pods = [FP.realistic_pod(f"p-{i}", i) for i in range(3)]
    critical = FP.realistic_pod("static", 4)
    critical["metadata"]["annotations"]["kubernetes.io/config.source"] = "file"
    critical["spec"]["priority"] = 2000001000
    critical["spec"]["priorityClassName"] = "system-node-critical"
    mirror = FP.realistic_pod("mirror", 5)
    mirror["metadata"]["annotations"]["kubernetes.io/config.mirror"] = "abc"
    mirror["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:10Z"
    never = FP.realistic_pod("never", 6)
    never["metadata"]["annotations"][EVICTION_PREFERENCE_ANNOTATION] = "never"
    sidecar = FP.realistic_pod("sidecar", 7)
    sidecar["spec"]["initContainers"] = [
        {"name": "log", "image": "x", "restartPolicy": "Always", "resources": {}},
    ]
    sidecar["spec"]["overhead"] = {"memory": "10Mi"}
    sidecar["spec"]["volumes"].append({"name": "mem", "emptyDir": {"medium": "Memory"}})
    sidecar["spec"]["volumes"].append({"name": "repo", "gitRepo": {"repository": "r"}})
    return [*pods, critical, mirror, never, sidecar]


@pytest.mark.parametrize("manifest", _variants(), ids=lambda m: m["metadata"]["name"])
def test_slim_pod_keeps_every_field_the_agent_reads(manifest: dict[str, Any]) -> None:
    full = Pod.from_dict(manifest)
    slim_manifest = slim_pod(manifest)
    slim = Pod.from_dict(slim_manifest)
    assert _read_by_agent(slim) == _read_by_agent(full)
    assert container_names(manifest) == {
        cs["containerID"].partition("://")[2]: cs["name"]
        for cs in manifest["status"]["containerStatuses"]
    }
    # the watch slims each pod as it is parsed; the informer reads the same from the slim one
    assert container_names(slim_manifest) == container_names(manifest)
    assert slim_pod(slim_manifest) == slim_manifest
    # and nothing else: no managedFields, labels, other annotations, env, probes, affinity
    text = json.dumps(slim_manifest)
    for gone in ("managedFields", "last-applied", "labels", "env", "Probe", "affinity", "image"):
        assert gone not in text, gone
    assert len(text) < len(json.dumps(manifest)) / 10


def test_a_volume_already_slim_is_kept_not_copied() -> None:
    manifest = FP.realistic_pod("vols", 1)
    manifest["spec"]["volumes"] = [{"name": f"v{i}", "emptyDir": {}} for i in range(1000)]
    slim = slim_pod(manifest)
    kept = zip(slim["spec"]["volumes"], manifest["spec"]["volumes"], strict=True)
    assert all(a is b for a, b in kept)
    assert len(Pod.from_dict(slim).volumes) == 1000


def test_malformed_kept_fields_are_still_refused() -> None:
    manifest = FP.realistic_pod("bad", 1)
    manifest["spec"]["containers"][0]["resources"]["requests"]["memory"] = "lots"
    with pytest.raises(ValueError, match=r"spec\.containers\[0\]\.resources\.requests"):
        Pod.from_dict(slim_pod(manifest))


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    # frozen: tracemalloc counts the whole process, so the kubelet starting 110 pods (status
    # writes, watch history) while the informer's cache is measured would be counted with it
    async with kubesim.serve(state=[FP.NODE], time_scale=0.01, disabled_controllers=FROZEN) as s:
        for i in range(110):
            s.apply(FP.realistic_pod(f"p-{i}", i))
        yield s


def _traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def test_relist_pages_and_never_holds_two_full_copies(sim: Simulator) -> None:
    api = sim.api_client()
    informer = PodInformer(api, "bench-node", list_page_size=25)
    try:
        # first request's one-time allocations (connection pool, lazy imports) outside the count
        await PodInformer(api, "bench-node", list_page_size=25).list_once()
        # one full copy of the node's pods, as the old informer cached them
        full = [FP.realistic_pod(f"p-{i}", i) for i in range(110)]
        tracemalloc.start()
        base = _traced()
        parsed = json.loads(json.dumps(full))
        full_copy = _traced() - base
        del parsed, full
        await informer.list_once()
        assert len(informer.pods) == 110
        # what the cache holds is what dropping it frees (tracemalloc counts the whole
        # process, and the server and the connection allocate around a list too)
        held = _traced()
        entries = list(informer.pods.values())
        informer.pods.clear()
        del entries
        cached = held - _traced()
        await informer.list_once()  # the cache again, for the relist below
        assert len(informer.pods) == 110
        tracemalloc.reset_peak()
        start = _traced()
        await informer.list_once()  # the relist: old view still held while the new one builds
        peak = tracemalloc.get_traced_memory()[1] - start
        tracemalloc.stop()
    finally:
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        await api.close()
    assert len(informer.pods) == 110
    # the cache is a small fraction of the pods as served...
    assert cached < full_copy / 8, (cached, full_copy)
    # ...and a relist stays well below one full copy, let alone two
    assert peak < full_copy / 2, (peak, full_copy)
    lists = sim.requests.filter(verb="list", resource="pods")
    assert len(lists) == 4 * 5  # 110 pods in pages of 25, four times
    assert all(r.query["limit"] == ["25"] for r in lists)
    assert sum(1 for r in lists if "continue" in r.query) == 4 * 4


async def test_lookup_names_containers_from_the_status(sim: Simulator) -> None:
    api = sim.api_client()
    informer = PodInformer(api, "bench-node")
    try:
        await informer.list_once()
    finally:
        await api.close()
    uid = next(e.pod.uid for e in informer.pods.values() if e.pod.name == "p-3")
    who = informer.lookup(uid)
    assert who is not None
    assert (who.name, who.namespace) == ("p-3", "default")
    assert sorted(who.containers.values()) == ["app", "proxy"]
    assert all(len(cid) == 64 for cid in who.containers)


async def test_expired_continue_token_lists_again(sim: Simulator) -> None:
    sim.add_faults(
        {
            "faults": [
                {
                    "match": {"verb": "list", "resource": "pods", "calls": "2"},
                    "respond": {"code": 410, "reason": "Expired", "message": "continue expired"},
                }
            ]
        }
    )
    api = sim.api_client()
    informer = PodInformer(api, "bench-node", list_page_size=50)
    task = asyncio.create_task(informer.run())
    try:
        for _ in range(200):
            if informer.synced.is_set():
                break
            await asyncio.sleep(0.02)
        assert informer.synced.is_set()
        assert len(informer.pods) == 110
        assert informer.relists >= 1
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await api.close()
