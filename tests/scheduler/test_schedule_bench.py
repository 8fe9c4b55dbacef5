"""The SchedulingBasic benchmark's core on a tiny cluster, so it cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.bench import BENCH_DIR, load_bench

BENCH = BENCH_DIR / "schedule.py"


def test_scheduling_basic_core_spreads_pods() -> None:
    bench = load_bench("schedule")
    result = bench.run_scheduling_basic(20, 10, 30)
    # LeastAllocated spreads identical pods: 40 pods over 20 nodes, two each.
    assert result["nodes_used"] == 20
    assert result["max_pods_per_node"] == 2
    assert result["pods_per_second"] > 0
    every = bench.run_scheduling_basic(150, 0, 5, percentage_of_nodes_to_score=100)
    assert every["mean_evaluated_nodes"] == 150
    adaptive = bench.run_scheduling_basic(150, 0, 5)
    assert adaptive["mean_evaluated_nodes"] == 100  # numFeasibleNodesToFind's minimum


def test_quick_run_prints_json_lines() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], check=True, capture_output=True, text=True
    ).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["unit"] for line in lines] == ["pods/s"] * 4
    assert all({"bench", "value", "anchor", "ratio"} <= line.keys() for line in lines)
    assert lines[3]["bench"].endswith("/all_nodes/topology_spread")


def test_spread_pods_use_every_node_before_doubling_up() -> None:
    bench = load_bench("schedule")
    result = bench.run_scheduling_basic(20, 0, 25, percentage_of_nodes_to_score=100, spread=True)
    assert result["nodes_used"] == 20  # hostname ScheduleAnyway and zone DoNotSchedule
    assert result["max_pods_per_node"] == 2
    assert result["mean_evaluated_nodes"] == 20
