"""kube-scheduler's metrics on kubesim's ``/metrics`` (Prometheus text), read as ``curl`` would.

The scheduler loop's collector is registered in the API server's own registry: pending pods per
queue (active, backoff, unschedulable, gated), schedule attempts by result and profile,
preemption attempts and a histogram of victims.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

import kubesim
from kubesim.scheduling import SchedulerLoop
from kubesim.sim import Simulator
from tests.support.manifests import pending_pod
from tests.support.wait import until

STATE = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Node
metadata: {name: node-1}
status:
  capacity: {cpu: "1", memory: 1Gi, pods: "10"}
"""


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01) as s:
        yield s


async def scrape(
    sim: Simulator,
) -> tuple[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    """GET /metrics like ``curl -H 'Authorization: Bearer …' $SERVER/metrics``."""
    headers = {"Authorization": f"Bearer {sim.admin_token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(sim.url + "/metrics", headers=headers) as resp,
    ):
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain; version=")
        text = await resp.text()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    return text, samples


def create(sim: Simulator, obj: dict[str, Any]) -> None:
    sim.registry.create(sim.scheme.for_storage("pods"), "default", obj)


def node_of(sim: Simulator, name: str) -> str:
    return str(((sim.get("Pod", "default", name) or {}).get("spec") or {}).get("nodeName") or "")


async def test_metrics_count_attempts_queues_and_preemption(sim: Simulator) -> None:
    loop = sim.find_controller(SchedulerLoop)
    assert loop is not None
    text, samples = await scrape(sim)
    assert "# TYPE scheduler_pending_pods gauge" in text
    for queue in ("active", "backoff", "unschedulable", "gated"):
        assert samples[("scheduler_pending_pods", (("queue", queue),))] == 0

    create(sim, pending_pod("low", cpu="800m"))
    await until(lambda: node_of(sim, "low") == "node-1", what="low bound")
    create(sim, pending_pod("gated", cpu="100m", schedulingGates=[{"name": "example.com/hold"}]))
    create(
        sim, pending_pod("big", cpu="2")
    )  # more than the node has: unschedulable, nothing to preempt
    await loop.wait_idle()
    create(sim, pending_pod("high", cpu="500m", priority_class="high"))  # preempts "low"
    await until(lambda: node_of(sim, "high") == "node-1", timeout=10, what="high bound")
    await loop.wait_idle()

    text, samples = await scrape(sim)
    attempts = "scheduler_schedule_attempts_total"
    profile = ("profile", "default-scheduler")
    assert samples[(attempts, (profile, ("result", "scheduled")))] == 2
    assert samples[(attempts, (profile, ("result", "unschedulable")))] >= 2  # big, high once
    assert samples[("scheduler_pending_pods", (("queue", "gated"),))] == 1
    assert samples[("scheduler_pending_pods", (("queue", "unschedulable"),))] == 1  # big
    assert samples[("scheduler_preemption_attempts_total", ())] >= 2
    assert samples[("scheduler_preemption_victims_count", ())] == 1
    assert samples[("scheduler_preemption_victims_sum", ())] == 1
    assert samples[("scheduler_preemption_victims_bucket", (("le", "1"),))] == 1
    assert 'scheduler_preemption_victims_bucket{le="64"} 1.0' in text
    assert "# TYPE scheduler_preemption_victims histogram" in text
    assert "_created" not in text
