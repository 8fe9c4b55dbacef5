"""``--node-conditions``: the conditions heartbeat while the agent runs, cleared when it stops.

A condition nobody refreshes cannot be told from one whose writer died, so the agent refreshes
``lastHeartbeatTime`` on a period even when nothing changed (as the kubelet does for its own), and
a clean stop writes every condition ``False`` with reason ``NodePressureAgentStopped`` (and
removes its taints with ``--node-taints``). Against kubesim in process; the heartbeat period runs
on a fake clock injected into the actions, so no test waits for it in real time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import kubesim
from agent.config import load_config
from agent.daemon import Agent
from kube.times import format_time
from kubesim.sim import Simulator
from tests.agent.agent_fakes import MI, FakeNode
from tests.agent.test_loop_e2e import until
from tests.agent.test_node_taints import MEMORY_TAINT, OPERATOR_TAINT, STATE, taints

MEMORY = "NodePressureAgentMemoryPressure"


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01, bookmark_interval=0.2) as s:
        yield s


def condition(sim: Simulator, ctype: str = MEMORY) -> dict[str, Any] | None:
    node = sim.get("Node", "", "node-1") or {}
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def status_patches(sim: Simulator) -> list[Any]:
    return sim.requests.filter(verb="patch", resource="nodes", subresource="status")


async def start(
    sim: Simulator, fake: FakeNode, clock: FakeClock, **fields: Any
) -> tuple[Agent, Any]:
    cfg = load_config(
        {
            "nodeName": "node-1",
            "nodeConditions": True,
            "housekeepingInterval": "50ms",
            "evictionHard": {"memory.available": "500Mi"},
            "evictionPressureTransitionPeriod": "300ms",
            **fields,
        }
    )
    api = sim.api_client()
    agent = Agent(
        cfg,
        api_client=api,
        stats=fake.get_summary,
        serve_http=False,
        use_psi=False,
        condition_heartbeat=10.0,
    )
    agent.actions.clock = clock
    await agent.start()
    return agent, api


async def test_heartbeat_refreshes_unchanged_conditions(sim: Simulator) -> None:
    fake = FakeNode(sim, usage={"default/a": 10 * MI, "kube-system/crit": 10 * MI})
    clock = FakeClock(1_700_000_000.0)
    agent, api = await start(sim, fake, clock)
    try:
        await until(lambda: condition(sim) is not None)
        first = condition(sim)
        assert first is not None
        assert first["status"] == "False"
        assert first["reason"] == "NodeHasNoMemoryPressure"
        assert first["lastHeartbeatTime"] == first["lastTransitionTime"] == format_time(clock.now)
        syncs = agent.loop.stats.syncs
        await until(lambda: agent.loop.stats.syncs >= syncs + 5)
        assert len(status_patches(sim)) == 1  # unchanged and not due: nothing written

        clock.now += 9.0
        await until(lambda: agent.loop.stats.syncs >= syncs + 10)
        assert len(status_patches(sim)) == 1  # 9 s < the 10 s period

        clock.now += 1.0
        await until(
            lambda: (condition(sim) or {}).get("lastHeartbeatTime") != first["lastHeartbeatTime"]
        )
        beat = condition(sim)
        assert beat is not None
        assert beat["lastHeartbeatTime"] == format_time(1_700_000_010.0)
        assert beat["lastTransitionTime"] == first["lastTransitionTime"]  # no transition
        assert beat["status"] == "False"
        assert len(status_patches(sim)) == 2
    finally:
        await agent.stop()
        await api.close()


async def test_clean_stop_clears_conditions_and_taints(sim: Simulator) -> None:
    # a critical pod is never evicted: the pressure lasts until the agent stops
    fake = FakeNode(sim, usage={"default/a": 10 * MI, "kube-system/crit": 700 * MI})
    clock = FakeClock(1_700_000_000.0)
    agent, api = await start(sim, fake, clock, nodeTaints=True)
    try:
        await until(lambda: (condition(sim) or {}).get("status") == "True")
        await until(lambda: MEMORY_TAINT in taints(sim))
        pressed = condition(sim)
        assert pressed is not None and pressed["reason"] == MEMORY
        clock.now += 3.0
    finally:
        await agent.stop()
        await api.close()
    cleared = condition(sim)
    assert cleared is not None
    assert cleared["status"] == "False"
    assert cleared["reason"] == "NodePressureAgentStopped"
    assert "stopped" in cleared["message"]
    assert cleared["lastTransitionTime"] == format_time(1_700_000_003.0)
    for other in ("NodePressureAgentDiskPressure", "NodePressureAgentPIDPressure"):
        assert (condition(sim, other) or {}).get("reason") == "NodePressureAgentStopped"
    assert taints(sim) == [OPERATOR_TAINT]


async def test_dry_run_writes_no_conditions(sim: Simulator) -> None:
    fake = FakeNode(sim, usage={"default/a": 10 * MI, "kube-system/crit": 700 * MI})
    agent, api = await start(sim, fake, FakeClock(1_700_000_000.0), dryRun=True)
    try:
        await until(agent.manager.is_under_memory_pressure)
    finally:
        await agent.stop()
        await api.close()
    assert status_patches(sim) == []
    assert condition(sim) is None
