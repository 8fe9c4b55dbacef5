"""Every metric the alerts and the dashboard name is one a running agent exports.

The names come from the rules and the dashboard (``tests.monitoring.promql``), the exported ones
from the /metrics of an agent running against kubesim — never from a list kept here, so a metric
renamed in agent/metrics.py fails this test until the rules and the dashboard follow. A family
counts with every sample name Prometheus stores for it (a counter's ``_total``, a histogram's
``_bucket``, ``_sum`` and ``_count``), also before its first sample. ``up`` is Prometheus's own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

import kubesim
from agent.actions.evict import OUTCOMES
from agent.config import load_config
from agent.daemon import Agent
from kubesim.sim import Simulator
from tests.monitoring.promql import every_metric_name, metric_names
from tests.support.fakenode import MI, NODES, FakeNode, pod
from tests.support.wait import until

PROMETHEUS_OWN = {"up"}
SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "info": ("_info",),
}


@pytest.fixture
async def exposition() -> AsyncIterator[str]:
    """/metrics of an agent that has listed its pods and synced."""
    state = "\n---\n".join([NODES, pod("a", request="10Mi")])
    async with kubesim.serve(state=state, time_scale=0.01, bookmark_interval=0.2) as sim:
        yield await _scrape(sim)


async def _scrape(sim: Simulator) -> str:
    fake = FakeNode(sim, usage={"default/a": 10 * MI})
    cfg = load_config(
        {"housekeepingInterval": "50ms", "nodeName": "node-1", "listen": "127.0.0.1:0"}
    )
    api = sim.api_client()
    agent = Agent(cfg, api_client=api, stats=fake.get_summary, use_psi=False)
    try:
        await agent.start()
        await until(lambda: agent.ready()[0])
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{agent.http_port}/metrics") as r,
        ):
            assert r.status == 200
            return await r.text()
    finally:
        await agent.stop()
        await api.close()


def exported_names(text: str) -> set[str]:
    names = set()
    for family in text_string_to_metric_families(text):
        names |= {family.name + suffix for suffix in SUFFIXES[family.type]}
        names |= {s.name for s in family.samples}
    return names


def test_metric_names_are_read_from_promql() -> None:
    assert metric_names(
        'histogram_quantile(0.99, sum by (node, le) (rate(a_bucket{node=~"$node"}[5m])))'
    ) == {"a_bucket"}
    assert metric_names(
        '100 * b{x="y"} / ignoring (kind) group_left c offset 5m or on (node) vector(0)'
    ) == {"b", "c"}
    assert metric_names('time() - d > bool 30 and e{s="f(g)"} unless count(h) == 1') == {
        "d",
        "e",
        "h",
    }
    assert metric_names("sum(increase(i[$__range])) or absent(up{job='j'})") == {"i", "up"}


async def test_every_metric_of_the_rules_and_dashboard_is_exported(exposition: str) -> None:
    exported = exported_names(exposition)
    used = every_metric_name()
    assert any(name.startswith("eviction_agent_") for name in used)
    missing = {
        name: sorted(where)
        for name, where in used.items()
        if name not in exported and name not in PROMETHEUS_OWN
    }
    assert missing == {}


async def test_the_first_eviction_of_each_signal_is_counted_from_zero(exposition: str) -> None:
    """The per-signal series exist at 0 before any eviction, so ``increase()`` sees the first."""
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(exposition)
        for s in family.samples
    }
    for result in OUTCOMES:
        key = (
            "eviction_agent_evictions_total",
            (("result", result), ("signal", "memory.available")),
        )
        assert samples[key] == 0.0
    for name in (
        "eviction_agent_evictions_held_back_total",
        "eviction_agent_reaction_latency_seconds_count",
    ):
        assert samples[(name, (("signal", "nodefs.available"),))] == 0.0
    # the local-storage limits only when pods carry disk figures (no kubelet summary here)
    assert not any(dict(labels).get("signal") == "emptydirfs.limit" for _, labels in samples)
