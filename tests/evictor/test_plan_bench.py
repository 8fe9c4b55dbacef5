"""Keeps bench/drain_plan.py from rotting: its cluster settles, its command runs and its lines
have the agreed format (the figure, its anchor and the ratio)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import kubesim

BENCH = Path(__file__).resolve().parents[2] / "bench" / "drain_plan.py"


def load_bench() -> ModuleType:
    name = "bench_drain_plan"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


async def test_a_tiny_cluster_is_planned_and_reported() -> None:
    bench = load_bench()
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
