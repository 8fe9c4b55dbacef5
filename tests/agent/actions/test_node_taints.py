"""``--node-taints``: a NoSchedule taint of the agent's own key while under pressure, end to end.

The node lifecycle controller taints ``node.kubernetes.io/memory-pressure:NoSchedule`` from the
kubelet's MemoryPressure condition; the agent's taint uses its own key so the two never fight,
keeps every other taint on the node, follows the pressure-transition period like the condition,
and is removed when the agent stops (a taint left by a gone agent would bar the node for good).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import kubesim
from agent.actions.node_taints import NodeTaints
from agent.config import load_config
from agent.daemon import Agent
from evictor.api.calls import Response
from kubesim.sim import Simulator
from tests.support.agent import MEMORY_TAINT, OPERATOR_TAINT, TAINTED_STATE, taints
from tests.support.fakenode import MI, FakeNode
from tests.support.wait import until


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=TAINTED_STATE, time_scale=0.01, bookmark_interval=0.2) as s:
        yield s


def taint_patches(sim: Simulator) -> list[Any]:
    return [r for r in sim.requests.filter(verb="patch", resource="nodes") if not r.subresource]


async def start(sim: Simulator, fake: FakeNode, **fields: Any) -> tuple[Agent, Any]:
    cfg = load_config(
        {
            "nodeName": "node-1",
            "nodeTaints": True,
            "housekeepingInterval": "50ms",
            "evictionHard": {"memory.available": "500Mi"},
            "evictionPressureTransitionPeriod": "300ms",
            **fields,
        }
    )
    api = sim.api_client()
    agent = Agent(cfg, api_client=api, stats=fake.get_summary, serve_http=False, use_psi=False)
    await agent.start()
    return agent, api


async def test_taint_while_under_pressure_then_removed(sim: Simulator) -> None:
    fake = FakeNode(sim, usage={"default/a": 10 * MI, "kube-system/crit": 10 * MI})
    agent, api = await start(sim, fake)
    try:
        await until(lambda: agent.loop.stats.syncs >= 3)
        assert taints(sim) == [OPERATOR_TAINT]
        assert taint_patches(sim) == []  # nothing to change: nothing written
        fake.usage["default/a"] = 700 * MI  # a is evicted; memory comes back
        await until(lambda: MEMORY_TAINT in taints(sim))
        assert OPERATOR_TAINT in taints(sim)
        await until(lambda: sim.get("Pod", "default", "a") is None)
        # the taint follows MemoryPressure: kept for the transition period, then removed
        await until(lambda: taints(sim) == [OPERATOR_TAINT])
    finally:
        await agent.stop()
        await api.close()
    assert len(taint_patches(sim)) == 2
    assert all(r.code == 200 for r in taint_patches(sim))


async def test_stopping_agent_removes_its_taint(sim: Simulator) -> None:
    # a critical pod is never evicted: the pressure, and the taint, last until the agent stops
    fake = FakeNode(sim, usage={"default/a": 10 * MI, "kube-system/crit": 700 * MI})
    agent, api = await start(sim, fake)
    try:
        await until(lambda: MEMORY_TAINT in taints(sim))
    finally:
        await agent.stop()
        await api.close()
    assert taints(sim) == [OPERATOR_TAINT]
    assert sim.get("Pod", "kube-system", "crit") is not None


async def test_dry_run_writes_no_taint(sim: Simulator) -> None:
    fake = FakeNode(sim, usage={"default/a": 10 * MI, "kube-system/crit": 700 * MI})
    agent, api = await start(sim, fake, dryRun=True)
    try:
        await until(agent.manager.is_under_memory_pressure)
        await until(lambda: agent.loop.stats.syncs >= 5)
    finally:
        await agent.stop()
        await api.close()
    assert taints(sim) == [OPERATOR_TAINT]
    assert taint_patches(sim) == []


async def test_conflict_reads_the_node_again() -> None:
    """A 409 (someone changed the node between our read and write) is retried on a fresh read."""
    nodes = [
        {"metadata": {"resourceVersion": "1"}, "spec": {"taints": [OPERATOR_TAINT]}},
        {"metadata": {"resourceVersion": "2"}, "spec": {"taints": [OPERATOR_TAINT, {"key": "x"}]}},
    ]
    sent: list[tuple[str, Any]] = []

    class Replayed(NodeTaints):
        async def _send(self, method: str, body: Any, **kw: Any) -> Any:
            sent.append((method, body))
            if method == "GET":
                return Response(200, {}, nodes[min(len(sent) // 2, 1)])
            return Response(409 if len(sent) == 2 else 200, {}, {})

    node_taints = Replayed(object(), node_name="node-1")
    assert await node_taints.report({"MemoryPressure": True})
    assert [m for m, _ in sent] == ["GET", "PATCH", "GET", "PATCH"]
    final = sent[-1][1]
    assert final["metadata"]["resourceVersion"] == "2"
    assert final["spec"]["taints"] == [OPERATOR_TAINT, {"key": "x"}, MEMORY_TAINT]
    # the same state again: nothing read, nothing written
    assert await node_taints.report({"MemoryPressure": True})
    assert len(sent) == 4
