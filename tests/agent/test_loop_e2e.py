"""The agent end to end against kubesim in process, with a fake stats source.

What a node operator relies on: the kubelet's order, one pod per sync, nothing written in dry
run, and — when the API server drops connections, cuts the watch, answers 429 or is slow — no
crash, no pod evicted twice, and the eviction carried out once the API is back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

import kubesim
from kubesim.sim import Simulator
from tests.support.agent import STATE, USAGE, config, more_syncs, pod_deletes, start, stop
from tests.support.fakenode import MI, FakeNode, pod
from tests.support.wait import until


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01, bookmark_interval=0.2) as s:
        yield s


def evictions(sim: Simulator) -> list[str]:
    return [
        r.name for r in sim.requests.filter(verb="create", resource="pods", subresource="eviction")
    ]


def writes(sim: Simulator) -> list[Any]:
    return [
        r
        for r in sim.requests
        if r.method in ("POST", "PUT", "PATCH", "DELETE") and not r.path.startswith("/_kubesim")
    ]


async def test_evicts_in_kubelet_order_one_pod_per_sync_with_condition_and_event(
    sim: Simulator,
) -> None:
    fake = FakeNode(sim, usage=USAGE)
    agent, api = await start(sim, fake, config())
    try:
        await until(lambda: sim.get("Pod", "default", "b") is None)
        await more_syncs(agent, 10)  # nothing else may go
    finally:
        await stop(agent, api)
    # a (over request, priority 0) before b (over request, priority 1000); c is under its
    # request and, once a and b are gone, memory is back above the threshold.
    assert pod_deletes(sim) == ["a", "b"]
    delete = sim.requests.filter(verb="delete", resource="pods", name="a")[0]
    assert delete.body["gracePeriodSeconds"] == 1  # hard threshold: the kubelet's 1 s
    assert delete.body["preconditions"]["uid"]  # never a same-name replacement
    assert sim.get("Pod", "default", "c") is not None
    assert sim.get("Pod", "kube-system", "crit") is not None
    assert sim.get("Pod", "default", "other") is not None
    # DisruptionTarget patched before the delete, in the kubelet's message format.
    patches = sim.requests.filter(verb="patch", resource="pods", subresource="status", name="a")
    assert patches and patches[0].code == 200
    cond = patches[0].body["status"]["conditions"][0]
    assert cond["type"] == "DisruptionTarget"
    assert cond["reason"] == "TerminationByNodePressureAgent"
    assert cond["message"].startswith("The node was low on resource: memory. ")
    # The Event was accepted (events.k8s.io/v1) with the kubelet's reason and annotations.
    events = sim.requests.filter(verb="create", resource="events")
    assert [e.code for e in events] == [201, 201]
    ev = events[0].body
    assert ev["reason"] == "Evicted" and ev["type"] == "Warning"
    assert ev["regarding"]["name"] == "a"
    assert ev["metadata"]["annotations"]["starved_resource"] == "memory"
    assert ev["reportingController"] == "node-pressure-evictor.io/eviction-agent"
    # kubelet order: event, condition, delete
    order = [
        (r.resource, r.subresource) for r in writes(sim) if r.name == "a" or "events" in r.path
    ]
    assert order[:3] == [("events", ""), ("pods", "status"), ("pods", "")]
    assert agent.metrics.evictions.labels("memory.available", "evicted")._value.get() == 2


async def test_dry_run_writes_nothing_and_counts(
    sim: Simulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agent")  # the log path runs too
    fake = FakeNode(sim, usage=USAGE)
    agent, api = await start(sim, fake, config(dryRun=True))
    try:
        await until(lambda: agent.loop.stats.syncs >= 5)
    finally:
        await stop(agent, api)
    assert writes(sim) == []
    assert sim.get("Pod", "default", "a") is not None
    count = agent.metrics.evictions.labels("memory.available", "dry_run")._value.get()
    assert count >= 3
    assert {d.pod.name for d in agent.loop.stats.decisions} == {"a"}
    assert "dry run: would evict pod" in caplog.text


async def test_api_unreachable_then_back_evicts_once(sim: Simulator) -> None:
    fake = FakeNode(sim, usage={**USAGE, "default/a": 10 * MI, "default/b": 10 * MI})
    agent, api = await start(sim, fake, config())
    try:
        await until(lambda: agent.ready()[0])
        # every request is dropped: watch, delete, events, patches
        sim.add_faults({"faults": [{"match": {"calls": "all"}, "drop": True}]})
        fake.usage["default/b"] = 700 * MI  # pressure now: b is the victim
        failed = agent.metrics.evictions.labels("memory.available", "failed")
        await until(lambda: failed._value.get() >= 1, timeout=15)
        syncs = agent.loop.stats.syncs
        await until(lambda: agent.loop.stats.syncs > syncs)  # still syncing, no crash
        assert sim.get("Pod", "default", "b") is not None
        sim.injector.active.clear()  # the API server is back
        await until(lambda: sim.get("Pod", "default", "b") is None, timeout=20)
        await more_syncs(agent, 10)
    finally:
        await stop(agent, api)
    accepted = [
        r for r in sim.requests.filter(verb="delete", resource="pods") if 200 <= r.code < 300
    ]
    assert [r.name for r in accepted] == ["b"]
    assert sim.get("Pod", "default", "a") is not None
    events = [
        r for r in sim.requests.filter(verb="create", resource="events") if 200 <= r.code < 300
    ]
    assert [e.body["regarding"]["name"] for e in events] == ["b"]  # one Event, not per retry


async def test_watch_cut_resumes_and_still_evicts(sim: Simulator) -> None:
    sim.add_faults(
        {"faults": [{"match": {"verb": "watch", "resource": "pods", "calls": "1-2"}, "drop": True}]}
    )
    fake = FakeNode(sim, usage={**USAGE, "default/a": 10 * MI, "default/b": 10 * MI})
    agent, api = await start(sim, fake, config())
    try:
        await until(lambda: agent.informer.failures >= 1)
        await until(lambda: agent.informer.connected)
        # a pod created after the cut is seen through the resumed watch
        sim.apply(pod("late", priority=0, request="10Mi"))
        await until(lambda: any(e.pod.name == "late" for e in agent.informer.pods.values()))
        fake.usage["default/late"] = 800 * MI
        await until(lambda: sim.get("Pod", "default", "late") is None)
    finally:
        await stop(agent, api)
    assert pod_deletes(sim) == ["late"]


async def test_429_storm_in_eviction_api_mode(sim: Simulator) -> None:
    sim.add_faults(
        {
            "faults": [
                {
                    "match": {
                        "verb": "create",
                        "resource": "pods",
                        "subresource": "eviction",
                        "calls": "all",
                    },
                    "respond": {
                        "code": 429,
                        "reason": "TooManyRequests",
                        "message": "Cannot evict pod as it would violate the pod's disruption "
                        "budget.",
                        "causes": [
                            {
                                "reason": "DisruptionBudget",
                                "message": "The disruption budget pdb needs 1 healthy pods "
                                "and has 1 currently",
                            }
                        ],
                        "retryAfterSeconds": 1,
                    },
                }
            ]
        }
    )
    # Soft threshold only: the budget is respected, nothing is deleted.
    fake = FakeNode(sim, usage={**USAGE, "default/a": 10 * MI, "default/b": 10 * MI})
    cfg = config(
        evictionMode="eviction-api",
        evictionHard={"memory.available": "100Mi"},
        evictionSoft={"memory.available": "500Mi"},
        evictionSoftGracePeriod={"memory.available": "0.2s"},
    )
    agent, api = await start(sim, fake, cfg)
    try:
        await until(lambda: agent.ready()[0])
        fake.usage["default/b"] = 500 * MI  # available ~164Mi: soft met, hard not
        await until(lambda: len(evictions(sim)) >= 2, timeout=15)
        assert pod_deletes(sim) == []
        assert sim.get("Pod", "default", "b") is not None
        # Hard threshold: one eviction, 429, then delete — at once, not behind the soft retries.
        fake.usage["default/b"] = 800 * MI
        # the soft attempt keeps retrying for 5 min; the hard one does not wait for it
        await until(lambda: sim.get("Pod", "default", "b") is None, timeout=10)
        await asyncio.sleep(0.3)
    finally:
        await stop(agent, api)
    assert pod_deletes(sim) == ["b"]
    assert all(
        r.name == "b"
        for r in sim.requests.filter(verb="create", resource="pods", subresource="eviction")
    )


async def test_slow_api_no_duplicate_eviction(sim: Simulator) -> None:
    sim.add_faults(
        {
            "faults": [
                {"match": {"verb": "delete", "resource": "pods"}, "delay": 1.5},
                {"match": {"verb": "create", "resource": "events"}, "delay": 0.5},
            ]
        }
    )
    fake = FakeNode(sim, usage={**USAGE, "default/a": 10 * MI, "default/b": 10 * MI})
    agent, api = await start(sim, fake, config())
    try:
        await until(lambda: agent.ready()[0])
        fake.usage["default/c"] = 700 * MI
        await until(lambda: sim.get("Pod", "default", "c") is None, timeout=15)
        await more_syncs(agent, 20)
    finally:
        await stop(agent, api)
    assert pod_deletes(sim) == ["c"]


async def test_broken_stats_never_crash_or_evict(sim: Simulator) -> None:
    fake = FakeNode(sim, usage=USAGE)
    fake.broken = True
    agent, api = await start(sim, fake, config())
    try:
        await until(lambda: agent.loop.stats.errors >= 3)
        assert writes(sim) == []
        fake.broken = False
        await until(lambda: sim.get("Pod", "default", "a") is None)
    finally:
        await stop(agent, api)
    assert agent.loop.stats.syncs >= 1


async def test_eviction_api_soft_eviction_then_event(sim: Simulator) -> None:
    fake = FakeNode(sim, usage={**USAGE, "default/a": 10 * MI, "default/b": 10 * MI})
    cfg = config(
        evictionMode="eviction-api",
        evictionHard={"memory.available": "100Mi"},
        evictionSoft={"memory.available": "500Mi"},
        evictionSoftGracePeriod={"memory.available": "0.1s"},
        evictionMaxPodGracePeriod=5,
    )
    agent, api = await start(sim, fake, cfg)
    try:
        await until(lambda: agent.ready()[0])
        fake.usage["default/c"] = 500 * MI
        await until(lambda: sim.get("Pod", "default", "c") is None, timeout=15)
        await asyncio.sleep(0.3)
    finally:
        await stop(agent, api)
    accepted = [
        r for r in sim.requests.filter(verb="create", subresource="eviction") if r.code == 201
    ]
    assert [r.name for r in accepted] == ["c"]
    assert accepted[0].body["deleteOptions"]["gracePeriodSeconds"] == 5
    assert pod_deletes(sim) == []  # PDB-respecting path only
    events = sim.requests.filter(verb="create", resource="events")
    assert [(e.body["regarding"]["name"], e.code) for e in events] == [("c", 201)]
    assert events[0].time > accepted[0].time  # written once the eviction was accepted


async def test_node_conditions_of_our_own_types(sim: Simulator) -> None:
    fake = FakeNode(sim, usage={**USAGE, "default/a": 10 * MI, "default/b": 10 * MI})
    agent, api = await start(sim, fake, config(nodeConditions=True, dryRun=False))

    def condition(kind: str) -> str | None:
        node = sim.get("Node", "", "node-1") or {}
        for c in (node.get("status") or {}).get("conditions") or []:
            if c["type"] == kind:
                return str(c["status"])
        return None

    try:
        await until(lambda: condition("NodePressureAgentMemoryPressure") == "False")
        fake.usage["default/c"] = 700 * MI
        await until(lambda: condition("NodePressureAgentMemoryPressure") == "True")
    finally:
        await stop(agent, api)
    # the kubelet's own types are never written (kubesim's kubelet reports MemoryPressure itself)
    written = [
        c["type"]
        for r in sim.requests.filter(verb="patch", resource="nodes", subresource="status")
        for c in r.body["status"]["conditions"]
    ]
    assert written and all(t.startswith("NodePressureAgent") for t in written)
    assert condition("MemoryPressure") != "True"


async def test_api_server_restart_cuts_the_watch_and_eviction_follows(sim: Simulator) -> None:
    fake = FakeNode(sim, usage={**USAGE, "default/a": 10 * MI, "default/b": 10 * MI})
    agent, api = await start(sim, fake, config())
    try:
        await until(lambda: agent.ready()[0])
        await sim.stop()  # connection refused; the established watch is cut
        fake.usage["default/c"] = 700 * MI
        # a window counted in the informer's reconnection attempts, not seconds: the API calls
        # fail (the eviction of c is retried within its deadline), no sync does
        await until(lambda: agent.informer.failures >= 3)
        assert agent.loop.stats.errors == 0
        await sim.start()
        await until(lambda: sim.get("Pod", "default", "c") is None, timeout=20)
        await more_syncs(agent, 10)
    finally:
        await stop(agent, api)
    accepted = [r for r in sim.requests.filter(verb="delete", resource="pods") if r.code == 200]
    assert [r.name for r in accepted] == ["c"]
    assert agent.informer.connected
