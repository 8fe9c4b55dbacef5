"""The loop under hostile input: a Summary with absurd figures never evicts, an overrunning sync
never starves the event loop."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from agent.loop import EvictionLoop
from agent.metrics import AgentMetrics
from tests.support.agentloop import Actions, Node, manager, summary
from tests.support.fakenode import MI


def absurd(kind: str) -> dict[str, Any]:
    s = summary(1024 * MI, {"p0": 900 * MI, "p1": 10 * MI})
    mem = s["node"]["memory"]
    if kind == "huge":
        s["pods"][0]["memory"]["workingSetBytes"] = 10**400
    elif kind == "negative":
        mem["availableBytes"] = -1
    elif kind == "nan":
        mem["availableBytes"] = float("nan")
    elif kind == "inf":
        mem["workingSetBytes"] = float("inf")
    elif kind == "nan-time":
        mem["time"] = float("nan")
    elif kind == "fs":
        s["node"]["fs"] = {"availableBytes": 2 * MI, "capacityBytes": MI}
    elif kind == "inodes":
        s["node"]["fs"] = {"inodesFree": 11, "inodes": 10}
    elif kind == "pids":
        s["node"]["rlimit"] = {"maxpid": 10, "curproc": 11}
    return s


KINDS = ("huge", "negative", "nan", "inf", "nan-time", "fs", "inodes", "pids")


@pytest.mark.parametrize("kind", KINDS)
async def test_absurd_summary_is_rejected_with_a_reason_and_never_evicts(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    node = Node({"p0": 900 * MI, "p1": 10 * MI})  # memory.available 114Mi < 500Mi: would evict
    actions = Actions(node)
    metrics = AgentMetrics()

    async def stats() -> dict[str, Any]:
        return absurd(kind)

    loop = EvictionLoop(
        manager(evictionHard={"memory.available": "500Mi"}),
        stats=stats,
        pods=node.active,
        actions=actions,
        metrics=metrics,
    )
    caplog.set_level(logging.WARNING, logger="agent.loop")
    for _ in range(3):
        assert await loop.sync_once() == []
    assert actions.calls == []
    assert loop.stats.syncs == 0 and loop.stats.rejected == 3
    assert loop.manager.last_sync is None  # the core never saw it: no timers advanced
    assert metrics.stats_rejected._value.get() == 3
    rejected = [r for r in caplog.records if r.getMessage().startswith("stats summary rejected")]
    assert len(rejected) == 3 and "stats summary:" in rejected[0].reason  # type: ignore[attr-defined]
    assert "Traceback" not in caplog.text
    # the same node with sane figures is acted on: the rejection was the figures' fault
    node_ok = EvictionLoop(
        manager(evictionHard={"memory.available": "500Mi"}),
        stats=node.stats,
        pods=node.active,
        actions=actions,
    )
    await node_ok.sync_once()
    assert [c[0] for c in actions.calls] == ["p0"]


async def test_a_sync_slower_than_the_interval_does_not_starve_other_tasks() -> None:
    node = Node({"p0": 10 * MI})
    calls = 0

    async def slow_stats() -> dict[str, Any]:
        # never suspends and takes longer than the interval: a sync that always overruns
        nonlocal calls
        calls += 1
        if calls > 20:
            raise asyncio.CancelledError
        time.sleep(0.02)
        return summary(1024 * MI, node.usage)

    loop = EvictionLoop(
        manager(evictionHard={"memory.available": "100Mi"}),
        stats=slow_stats,
        pods=node.active,
        actions=Actions(node),
        interval=0.01,
    )
    ticks = 0

    async def other() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    bystander = asyncio.create_task(other())
    try:
        with pytest.raises(asyncio.CancelledError):
            await loop.run()
    finally:
        bystander.cancel()
    assert loop.stats.syncs == 20
    assert ticks >= 19  # the other task ran between (nearly) every pair of syncs


def test_the_daemon_exports_the_kubelet_summary_age(tmp_path: Any) -> None:
    import math

    from agent.config import load_config
    from agent.daemon import Agent

    cfg = load_config(
        {
            "nodeName": "n1",
            "kubeletSummaryUrl": "https://127.0.0.1:10250/stats/summary",
            "procRoot": str(tmp_path),
            "cgroupRoot": str(tmp_path),
            "kubeletRoot": str(tmp_path),
        },
        env={},
    )
    agent = Agent(cfg, api_client=None, serve_http=False, use_psi=False)
    name = "eviction_agent_kubelet_summary_age_seconds"
    value = agent.metrics.registry.get_sample_value(name)
    assert value is not None and math.isnan(value)  # nothing fetched yet
    agent.collector._kubelet_cached_at = time.monotonic() - 12
    age = agent.metrics.registry.get_sample_value(name)
    assert age is not None and 12 <= age < 20
    kubelet = agent.collector.config.kubelet_summary
    assert str(kubelet.token_path).endswith("serviceaccount/token")
    assert str(kubelet.ca_path).endswith("serviceaccount/ca.crt") and not kubelet.insecure
