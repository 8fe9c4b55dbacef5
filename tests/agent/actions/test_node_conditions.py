"""``--node-conditions``: written when they change, refreshed at the kubelet's cadence, cleared
when the agent stops.

The kubelet writes its Node status when it changes and otherwise every
``nodeStatusReportFrequency`` (5 min), the first report after a change a random ±50 % of that
later (``delayAfterNodeStatusChange``); the agent does the same for its own conditions, so an
idle fleet of agents costs the API server about what the kubelets' status does. A condition
nobody refreshes cannot be told from one whose writer died, so the refresh still comes; a clean
stop writes every condition ``False`` with reason ``NodePressureAgentStopped`` (and removes its
taints with ``--node-taints``). Against kubesim in process; the report period runs on a fake
clock injected into the node's writers, so no test waits for it in real time.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

import kubesim
from agent.actions.node_conditions import NODE_WRITE_RETRY, NodeConditions
from agent.actions.node_taints import NodeTaints
from agent.config import load_config
from agent.daemon import Agent
from evictor.api.calls import Response
from kube.times import format_time
from kubesim.endpoints.requestlog import RequestRecord
from kubesim.sim import Simulator
from tests.support.agent import MEMORY_TAINT, OPERATOR_TAINT, TAINTED_STATE, more_syncs, taints
from tests.support.fakenode import MI, FakeNode
from tests.support.wait import until

MEMORY = "NodePressureAgentMemoryPressure"
START = 1_700_000_000.0
PERIOD = 300.0  # the default nodeStatusReportFrequency


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FixedRandom(random.Random):
    """``random()`` always ``value``: 0.5 is no jitter, 0 the earliest report, 1 the latest."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=TAINTED_STATE, time_scale=0.01, bookmark_interval=0.2) as s:
        yield s


def condition(sim: Simulator, ctype: str = MEMORY) -> dict[str, Any] | None:
    node = sim.get("Node", "", "node-1") or {}
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def status_patches(sim: Simulator) -> list[RequestRecord]:
    return sim.requests.filter(verb="patch", resource="nodes", subresource="status")


def node_requests(sim: Simulator) -> list[RequestRecord]:
    """Everything the agent asked of its Node: reads and writes, status or not."""
    return sim.requests.filter(resource="nodes")


async def start(
    sim: Simulator, fake: FakeNode, clock: FakeClock, *, jitter: float = 0.5, **fields: Any
) -> tuple[Agent, Any]:
    cfg = load_config(
        {
            "nodeName": "node-1",
            "nodeConditions": True,
            "housekeepingInterval": "20ms",
            "evictionHard": {"memory.available": "500Mi"},
            "evictionPressureTransitionPeriod": "300ms",
            **fields,
        }
    )
    api = sim.api_client()
    agent = Agent(cfg, api_client=api, stats=fake.get_summary, serve_http=False, use_psi=False)
    agent.node_conditions.clock = agent.node_taints.clock = clock
    agent.node_conditions.rng = FixedRandom(jitter)
    await agent.start()
    return agent, api


async def test_unchanged_conditions_are_refreshed_every_report_period(sim: Simulator) -> None:
    fake = FakeNode(sim, usage={"default/a": 10 * MI, "kube-system/crit": 10 * MI})
    clock = FakeClock(START)
    agent, api = await start(sim, fake, clock)
    try:
        await until(lambda: condition(sim) is not None)
        first = condition(sim)
        assert first is not None
        assert first["status"] == "False"
        assert first["reason"] == "NodeHasNoMemoryPressure"
        assert first["lastHeartbeatTime"] == first["lastTransitionTime"] == format_time(START)
        await more_syncs(agent, 5)
        assert len(status_patches(sim)) == 1  # unchanged and not due: nothing written

        clock.now += PERIOD - 1
        await more_syncs(agent, 5)
        assert len(status_patches(sim)) == 1  # 4 min 59 s < the 5 min period

        clock.now += 1
        await until(lambda: len(status_patches(sim)) == 2)
        beat = condition(sim)
        assert beat is not None
        assert beat["lastHeartbeatTime"] == format_time(START + PERIOD)
        assert beat["lastTransitionTime"] == first["lastTransitionTime"]  # no transition
        assert beat["status"] == "False"
    finally:
        await agent.stop()
        await api.close()


async def test_an_idle_agent_writes_its_node_once_per_period_and_a_change_at_once(
    sim: Simulator,
) -> None:
    """Idle for an hour with ``--node-conditions --node-taints``: one Node write per 5 minutes
    besides the pod watch (the first after start jittered as the kubelet's), the Node read once
    (the taints' start); then pressure is written in the same moment."""
    fake = FakeNode(sim, usage={"default/a": 10 * MI, "kube-system/crit": 10 * MI})
    clock = FakeClock(START)
    agent, api = await start(sim, fake, clock, jitter=0.0, nodeTaints=True)
    try:
        await until(lambda: len(status_patches(sim)) == 1)
        await until(lambda: len(node_requests(sim)) == 2)  # + the taints' one read
        # the earliest jitter (-50 %) brings the first report forward; then every 5 minutes
        reports = [0.0, *(PERIOD / 2 + k * PERIOD for k in range(12))]
        step = PERIOD / 4
        for n in range(1, int(3600 / step) + 1):
            clock.now = START + n * step
            due = sum(at <= n * step for at in reports)
            await more_syncs(agent, 1)
            await until(lambda due=due: len(status_patches(sim)) >= due)  # type: ignore[misc]
            assert len(status_patches(sim)) == due, f"at {n * step:g}s"
        await more_syncs(agent, 5)
        assert len(status_patches(sim)) == 13  # in the hour: the start's, then one per 5 min
        others = [r for r in sim.requests if r.resource != "pods"]
        assert [(r.verb, r.subresource) for r in others if r.verb != "patch"] == [("get", "")]
        assert all(r.subresource == "status" for r in others if r.verb == "patch")
        assert {r.verb for r in sim.requests if r.resource == "pods"} <= {"list", "watch"}

        # pressure (a critical pod is never evicted: it lasts): written without waiting
        before = len(node_requests(sim))
        fake.usage["kube-system/crit"] = 700 * MI
        await until(lambda: (condition(sim) or {}).get("status") == "True")
        await until(lambda: MEMORY_TAINT in taints(sim))
        assert condition(sim)["lastTransitionTime"] == format_time(clock.now)  # type: ignore[index]
        await more_syncs(agent, 5)
        # one status patch, and the taint: one read, one patch
        changes = [(r.verb, r.subresource) for r in node_requests(sim)[before:]]
        assert sorted(changes) == [("get", ""), ("patch", ""), ("patch", "status")]
    finally:
        await agent.stop()
        await api.close()


async def test_clean_stop_clears_conditions_and_taints(sim: Simulator) -> None:
    # a critical pod is never evicted: the pressure lasts until the agent stops
    fake = FakeNode(sim, usage={"default/a": 10 * MI, "kube-system/crit": 700 * MI})
    clock = FakeClock(START)
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
    assert cleared["lastTransitionTime"] == format_time(START + 3)
    for other in ("NodePressureAgentDiskPressure", "NodePressureAgentPIDPressure"):
        assert (condition(sim, other) or {}).get("reason") == "NodePressureAgentStopped"
    assert taints(sim) == [OPERATOR_TAINT]


async def test_dry_run_writes_no_conditions(sim: Simulator) -> None:
    fake = FakeNode(sim, usage={"default/a": 10 * MI, "kube-system/crit": 700 * MI})
    agent, api = await start(sim, fake, FakeClock(START), dryRun=True)
    try:
        await until(agent.manager.is_under_memory_pressure)
    finally:
        await agent.stop()
        await api.close()
    assert status_patches(sim) == []
    assert condition(sim) is None


class Recorder:
    """The node's writes, recorded in order and answered with ``status``."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.sent: list[tuple[str, float]] = []
        self.status = 200

    def answer(self, method: str) -> Response:
        self.sent.append((method, self.clock()))
        node = {"metadata": {"resourceVersion": "1"}, "spec": {"taints": []}}
        return Response(self.status, {}, node if method == "GET" else {})


class RecordedConditions(NodeConditions):
    def __init__(self, recorder: Recorder, *, jitter: float = 0.5) -> None:
        super().__init__(
            object(), node_name="node-1", clock=recorder.clock, rng=FixedRandom(jitter)
        )
        self.recorder = recorder

    async def _send(self, body: Any) -> Any:
        return self.recorder.answer("PATCH")


class RecordedTaints(NodeTaints):
    def __init__(self, recorder: Recorder) -> None:
        super().__init__(object(), node_name="node-1", clock=recorder.clock)
        self.recorder = recorder

    async def _send(self, method: str, body: Any, **kw: Any) -> Any:
        return self.recorder.answer(method)


QUIET = {"MemoryPressure": False, "DiskPressure": False, "PIDPressure": False}
PRESSED = {**QUIET, "MemoryPressure": True}


@pytest.mark.parametrize(("jitter", "first_report"), [(0.0, 150.0), (0.5, 300.0), (0.99, 447.0)])
async def test_the_first_report_after_a_change_is_jittered_then_every_period(
    jitter: float, first_report: float
) -> None:
    clock = FakeClock(START)
    recorder = Recorder(clock)
    conditions = RecordedConditions(recorder, jitter=jitter)
    for second in range(1500):  # a sync every second for 25 minutes
        clock.now = START + second
        assert await conditions.report(QUIET)
    at = [sent_at - START for _, sent_at in recorder.sent]
    assert at[:2] == [0.0, first_report]
    assert [b - a for a, b in itertools.pairwise(at[1:])] == [PERIOD] * (len(at) - 2)
    # a change is written at once, and restarts the jittered wait
    clock.now += 1
    assert await conditions.report(PRESSED)
    assert recorder.sent[-1][1] == clock.now


async def test_a_failed_node_write_is_not_repeated_on_every_sync() -> None:
    clock = FakeClock(START)
    recorder = Recorder(clock)
    conditions, node_taints = RecordedConditions(recorder), RecordedTaints(recorder)
    recorder.status = 403  # no RBAC for nodes/status or nodes
    for _ in range(20):  # twenty syncs within the same second
        assert not await conditions.report(PRESSED)
        assert not await node_taints.report(PRESSED)
    assert [m for m, _ in recorder.sent] == ["PATCH", "GET"]  # one try each
    clock.now += NODE_WRITE_RETRY
    assert not await conditions.report(PRESSED)
    assert not await node_taints.report(PRESSED)
    assert [m for m, _ in recorder.sent] == ["PATCH", "GET", "PATCH", "GET"]
    # a different state is tried at once; the farewell is tried whatever failed before
    assert not await conditions.report(QUIET)
    assert not await node_taints.report(QUIET)
    assert not await node_taints.report(QUIET, stopped=True)
    assert [m for m, _ in recorder.sent][4:] == ["PATCH", "GET", "GET"]
    recorder.status = 200
    assert await conditions.report(QUIET, stopped=True)
