"""The benchmark's core on a small size, so it cannot rot (timings are not asserted)."""

import json

import pytest

from tests.support.bench import load_bench


@pytest.mark.parametrize(
    ("mode", "with_filter_pass"), [("exhaustive", False), ("sampled", False), ("exhaustive", True)]
)
def test_bench_core_preempts_every_pod_once(mode: str, with_filter_pass: bool) -> None:
    bench = load_bench("preemption")
    nodes = 12
    r = bench.run(nodes, nodes, mode=mode, with_filter_pass=with_filter_pass)
    assert r.decisions == nodes - 1
    assert r.rate > 0


def test_bench_cluster_shape_and_final_state() -> None:
    bench = load_bench("preemption")
    snap = bench.make_cluster(3)
    assert [len(ni.pods) for ni in snap.node_info_list] == [4, 4, 4]
    assert all(ni.requested["cpu"] == 3600 for ni in snap.node_info_list)


def test_bench_prints_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_bench("preemption")
    assert bench.main(["--quick", "--nodes", "8", "--preemptors", "8"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["bench"] for x in lines] == [
        "preemption_exhaustive",
        "preemption_sampled",
        "preemption_exhaustive_with_filter_pass",
    ]
    for x in lines:
        assert x["unit"] == "decisions/s" and x["anchor"] == 570.0
        assert x["ratio"] == pytest.approx(x["value"] / 570.0, abs=0.01)
