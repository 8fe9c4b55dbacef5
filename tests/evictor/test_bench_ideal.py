"""The ideal client of ``bench/drain_vs_kubectl.py`` (c) measures what it claims: every pod of
the node evicted at once and the clock stopped only when the last one is gone."""

from __future__ import annotations

import pytest

from tests.support.bench import load_bench


@pytest.mark.asyncio
async def test_ideal_client_evicts_every_pod_and_waits_for_the_last() -> None:
    bench = load_bench("drain_vs_kubectl")
    pods = 24
    state = bench.make_state(pods, deployments=3, pdb=False, ready_after=None)
    result = await bench.ideal_seconds(state, {"latency": 0.02}, pods)
    # it raises when a pod is left on node-1; the times are ordered and include the grace period
    # (30 s × the bench's time scale) that every evicted pod spends terminating
    assert 0.02 <= result["evictions_s"] < result["seconds"]
    assert result["seconds"] >= 30 * bench.TIME_SCALE
