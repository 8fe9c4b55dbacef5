"""The ideal client of ``bench/drain_vs_kubectl.py`` (c) measures what it claims: every pod of
the node evicted at once and the clock stopped only when the last one is gone."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "drain_vs_kubectl.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("drain_vs_kubectl", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("drain_vs_kubectl", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.asyncio
async def test_ideal_client_evicts_every_pod_and_waits_for_the_last() -> None:
    bench = _bench()
    pods = 24
    state = bench.make_state(pods, deployments=3, pdb=False, ready_after=None)
    result = await bench.ideal_seconds(state, {"latency": 0.02}, pods)
    # it raises when a pod is left on node-1; the times are ordered and include the grace period
    # (30 s × the bench's time scale) that every evicted pod spends terminating
    assert 0.02 <= result["evictions_s"] < result["seconds"]
    assert result["seconds"] >= 30 * bench.TIME_SCALE
