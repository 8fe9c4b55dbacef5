"""Keeps bench/drain_plan.py from rotting: its cluster settles, its command runs and its lines
have the agreed format (the figure, its anchor and the ratio)."""

from __future__ import annotations

import json

import kubesim
from tests.support.bench import load_bench


async def test_a_tiny_cluster_is_planned_and_reported() -> None:
    bench = load_bench("drain_plan")
    state = bench.make_state(6, 3, 4)
    assert sum(1 for o in state if o["kind"] == "PodDisruptionBudget") == 2
    async with kubesim.serve(state=state, time_scale=1.0) as sim:
        await bench.settled(sim, 12)
        node = sim.list_objects("Pod")[0]["spec"]["nodeName"]
        seconds, cpu, plan = await bench.cli(sim, node)
    assert plan["kind"] == "DrainPlan" and plan["order"] == [node]
    assert cpu > 0 and seconds > 0
    line = json.loads(bench.line("x", 1.0, cpu_seconds=0.5))
    assert line == {"bench": "x", "value": 1.0, "unit": "s", "anchor": 2.0, "ratio": 0.5,
                    "cpu_seconds": 0.5}  # fmt: skip
