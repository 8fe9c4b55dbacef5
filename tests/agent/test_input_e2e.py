"""The agent end to end against kubesim in process: what an operator can trust about its input.

A pod author cannot exempt a pod (the ``eviction-preference`` annotation counts only where the
operator allows it); a Summary with absurd figures never causes an eviction; emptyDir limits
from the pod's manifest reach the decisions; the brake holds evictions back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import kubesim
from agent.config import load_config
from agent.daemon import Agent
from kubesim.sim import Simulator
from tests.agent.agent_fakes import MI, NODES, FakeNode, pod

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


async def until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


def pod_deletes(sim: Simulator) -> list[str]:
    return [r.name for r in sim.requests.filter(verb="delete", resource="pods")]


async def start(sim: Simulator, fake: Any, cfg: Any, **kw: Any) -> tuple[Agent, Any]:
    api = sim.api_client()
    agent = Agent(
        cfg,
        api_client=api,
        stats=fake.get_summary,
        serve_http=False,
        use_psi=False,
        cleanup_timeout=5.0,
        **kw,
    )
    await agent.start()
    return agent, api


async def stop(agent: Agent, api: Any) -> None:
    await agent.stop()
    await api.close()


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
