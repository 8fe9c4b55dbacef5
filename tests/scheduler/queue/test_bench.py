"""Keeps bench/scheduling_queue.py from rotting: its workloads run (tiny) and print the
agreed format."""

from __future__ import annotations

import json

import pytest

from tests.support.bench import load_bench


def test_workloads_run_on_a_small_size() -> None:
    bench = load_bench("scheduling_queue")
    add_pop = bench.bench_add_pop(300)
    assert add_pop.bench == "queue_add_pop" and add_pop.ops == 600
    requeue = bench.bench_requeue(300)
    # Every pod is added once and popped ROUNDS times, with re-adds in between.
    assert requeue.ops >= 300 * (1 + 2 * bench.ROUNDS - 1)


def test_main_prints_one_json_object_per_workload(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_bench("scheduling_queue")
    assert bench.main(["--pods", "200"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["bench"] for line in lines] == ["queue_add_pop", "queue_requeue"]
    for line in lines:
        assert line["unit"] == "ops/s" and line["value"] > 0
        assert line["anchor"] is None and line["ratio"] is None
