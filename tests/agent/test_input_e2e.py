"""The agent end to end against kubesim in process: what an operator can trust about its input.

A pod author cannot exempt a pod (the ``eviction-preference`` annotation counts only where the
operator allows it); a Summary with absurd figures never causes an eviction; emptyDir limits
from the pod's manifest reach the decisions; the brake holds evictions back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

import kubesim
from agent.config import load_config
from kubesim.sim import Simulator
from tests.support.agent import pod_deletes, start, stop
from tests.support.fakenode import MI, NODES, FakeNode, pod
from tests.support.wait import until

NEVER = {"node-pressure-evictor.io/eviction-preference": "never"}
STATE = "\n---\n".join(
    [
        NODES,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}",
        pod("hog", namespace="team", priority=0, request="100Mi", annotations=NEVER),
        pod("quiet", priority=0, request="100Mi"),
    ]
)
USAGE = {"team/hog": 600 * MI, "default/quiet": 150 * MI}


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01, bookmark_interval=0.2) as s:
        yield s


def config(**fields: Any) -> Any:
    base: dict[str, Any] = {
        "evictionHard": {"memory.available": "500Mi"},
        "housekeepingInterval": "50ms",
        "nodeName": "node-1",
    }
    base.update(fields)
    return load_config(base, env={})


# --- eviction-preference is the operator's -------------------------------------------------


async def test_a_pod_cannot_exempt_itself_by_default(sim: Simulator) -> None:
    fake = FakeNode(sim, usage=USAGE)
    agent, api = await start(sim, fake, config())
    try:
        await until(lambda: sim.get("Pod", "team", "hog") is None)
        await asyncio.sleep(0.3)
    finally:
        await stop(agent, api)
    # ranked as the kubelet ranks it: the hog is furthest over its request, so it goes first
    assert pod_deletes(sim) == ["hog"]
    assert sim.get("Pod", "default", "quiet") is not None


async def test_preference_is_honoured_where_the_operator_allows_it(sim: Simulator) -> None:
    fake = FakeNode(sim, usage=USAGE)
    agent, api = await start(sim, fake, config(evictionPreferenceNamespaces=["team"]))
    try:
        await until(lambda: sim.get("Pod", "default", "quiet") is None)
        await asyncio.sleep(0.3)
    finally:
        await stop(agent, api)
    assert pod_deletes(sim) == ["quiet"]
    assert sim.get("Pod", "team", "hog") is not None
    refused = agent.loop.stats.decisions
    assert all(d.pod.name != "hog" for d in refused)


# --- emptyDir limits and media reach the decisions -----------------------------------------

GI = 1024 * MI


def volume_pod(name: str, volumes: str) -> str:
    return "\n".join(
        [
            "apiVersion: v1",
            "kind: Pod",
            f"metadata: {{name: {name}, namespace: default}}",
            "spec:",
            "  nodeName: node-1",
            "  priority: 0",
            "  containers: [{name: c, image: app}]",
            f"  volumes: {volumes}",
        ]
    )


class DiskNode(FakeNode):
    """FakeNode plus the kubelet's per-volume figures and a node filesystem whose use is the
    disk-backed emptyDirs of the pods that still exist (tmpfs ones use memory, not disk)."""

    def __init__(self, sim: Simulator, volumes: dict[str, dict[str, int]], **kw: Any) -> None:
        super().__init__(sim, **kw)
        self.volumes = volumes  # "ns/name" → {volume: usedBytes}
        self.on_disk: set[tuple[str, str]] = set()  # (pod key, volume) on the node's disk
        self.fs_capacity = 10 * GI
        self.fs_base = 8 * GI

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        used = self.fs_base
        for entry in out["pods"]:
            ref = entry["podRef"]
            key = f"{ref['namespace']}/{ref['name']}"
            vols = self.volumes.get(key, {})
            entry["volume"] = [{"name": v, "usedBytes": b} for v, b in vols.items()]
            used += sum(b for v, b in vols.items() if (key, v) in self.on_disk)
        t = out["node"]["memory"]["time"]
        out["node"]["fs"] = {
            "time": t,
            "capacityBytes": self.fs_capacity,
            "availableBytes": max(self.fs_capacity - used, 0),
        }
        return out


async def test_an_emptydir_over_its_limit_is_evicted_with_the_kubelets_message() -> None:
    state = "\n---\n".join(
        [
            NODES,
            volume_pod("scratchy", "[{name: scratch, emptyDir: {sizeLimit: 1Mi}}]"),
            volume_pod("tidy", "[{name: scratch, emptyDir: {sizeLimit: 1Gi}}]"),
        ]
    )
    async with kubesim.serve(state=state, time_scale=0.01, bookmark_interval=0.2) as sim:
        fake = DiskNode(
            sim,
            {"default/scratchy": {"scratch": 2 * MI}, "default/tidy": {"scratch": 2 * MI}},
        )
        # no threshold is anywhere near: the local-storage pass acts on its own, as the kubelet's
        agent, api = await start(sim, fake, config(evictionHard={"memory.available": "1Mi"}))
        try:
            await until(lambda: sim.get("Pod", "default", "scratchy") is None)
            await asyncio.sleep(0.3)
        finally:
            await stop(agent, api)
        assert pod_deletes(sim) == ["scratchy"]
        delete = sim.requests.filter(verb="delete", resource="pods", name="scratchy")[0]
        assert delete.body["gracePeriodSeconds"] == 1
        events = sim.requests.filter(verb="create", resource="events")
        assert [e.body["regarding"]["name"] for e in events] == ["scratchy"]
        assert (
            events[0].body["note"] == 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". '
        )
        assert events[0].body["reason"] == "Evicted"
        # the kubelet writes no DisruptionTarget for a local-storage eviction
        assert sim.requests.filter(verb="patch", resource="pods", subresource="status") == []
        evicted = agent.metrics.evictions.labels("emptydirfs.limit", "evicted")._value.get()
        assert evicted == 1


async def test_a_memory_emptydir_is_not_counted_as_disk() -> None:
    state = "\n---\n".join(
        [
            NODES,
            volume_pod("ram", "[{name: cache, emptyDir: {medium: Memory}}]"),
            volume_pod("disk", "[{name: cache, emptyDir: {}}]"),
        ]
    )
    async with kubesim.serve(state=state, time_scale=0.01, bookmark_interval=0.2) as sim:
        fake = DiskNode(
            sim,
            # the tmpfs holds more bytes than the disk emptyDir, but in memory: its pages are
            # in the pod's working set (the memory figure), not on the node's filesystem
            {"default/ram": {"cache": 900 * MI}, "default/disk": {"cache": 300 * MI}},
            usage={"default/ram": 900 * MI, "default/disk": 10 * MI},
        )
        fake.on_disk = {("default/disk", "cache")}
        fake.fs_base = 8 * GI - 100 * MI  # available 1.8Gi < 2Gi while "disk" exists, 2.1Gi after
        cfg = config(evictionHard={"nodefs.available": "2Gi"})
        agent, api = await start(sim, fake, cfg)
        try:
            await until(lambda: sim.get("Pod", "default", "disk") is None)
            await asyncio.sleep(0.3)
        finally:
            await stop(agent, api)
        # with the medium lost, "ram" (900Mi of "disk" usage) would have gone first
        assert pod_deletes(sim) == ["disk"]
        assert sim.get("Pod", "default", "ram") is not None
        (event,) = sim.requests.filter(verb="create", resource="events")
        assert event.body["note"].startswith("The node was low on resource: ephemeral-storage. ")


# --- the brake --------------------------------------------------------------------------------


async def test_the_brake_holds_evictions_back_with_an_event() -> None:
    names = ["s0", "s1", "s2"]
    state = "\n---\n".join(
        [NODES, *(volume_pod(n, "[{name: scratch, emptyDir: {sizeLimit: 1Mi}}]") for n in names)]
    )
    async with kubesim.serve(state=state, time_scale=0.01, bookmark_interval=0.2) as sim:
        fake = DiskNode(sim, {f"default/{n}": {"scratch": 2 * MI} for n in names})
        cfg = config(evictionHard={"memory.available": "1Mi"}, maxEvictionsPerMinute=1)

        def held_events() -> list[Any]:
            return [
                r
                for r in sim.requests.filter(verb="create", resource="events")
                if r.body["reason"] == "EvictionHeldBack"
            ]

        agent, api = await start(sim, fake, cfg)
        try:
            await until(lambda: len(held_events()) >= 2)
            await asyncio.sleep(0.3)  # more syncs: still one eviction, no repeated Events
            held = held_events()
        finally:
            await stop(agent, api)
        assert len(pod_deletes(sim)) == 1
        assert sorted(r.body["regarding"]["name"] for r in held) == sorted(
            set(names) - set(pod_deletes(sim))
        )
        assert all(r.code == 201 for r in held)
        ev = held[0].body
        assert ev["type"] == "Warning" and ev["action"] == "Evict"
        assert ev["reportingController"] == "node-pressure-evictor.io/eviction-agent"
        assert ev["note"].startswith("Eviction held back: 1 evictions in the last 60s")
        count = agent.metrics.evictions_held_back.labels("emptydirfs.limit")._value.get()
        assert count >= 2
