import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kube.objects import load_objects
from scheduler.simulator import SimulationError, simulate
from tests.support.manifests import node, pending_pod

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "preemption.yaml"


def manifests(*docs: dict[str, Any]) -> list[Any]:
    return load_objects(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": list(docs)}) + "\n"
    )


def pclass(name: str, value: int, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


def test_the_bundled_example_preempts_on_the_node_without_pdb_violations() -> None:
    report = simulate(load_objects(EXAMPLE, ignore_unknown=True))
    assert report.nodes == 3
    [d] = report.decisions
    assert (d.pod, d.outcome, d.nominated_node, d.node) == (
        "shop/checkout-api-7f9c",
        "preempting",
        "node-b",
        "node-b",
    )
    assert d.priority == 100000 and d.priority_class == "online-high"
    # etl-0 is reprieved (oldest, still fits beside the preemptor); search-0 has equal priority.
    assert [v.pod for v in d.victims] == ["batch/etl-1", "batch/etl-2"]
    assert d.pdb_violations == 0
    assert d.message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    )
    text = "\n".join(d.explanation)
    assert "node-a: outranked: fewest PDB violations" in text
    assert "node-c: not considered" in text


def test_pods_go_in_queue_order_and_later_pods_see_earlier_bindings() -> None:
    objs = manifests(
        pclass("high", 100),
        node("n1", cpu="2"),
        pending_pod("low", cpu="2"),
        pending_pod("high", cpu="2", priority_class="high"),
    )
    report = simulate(objs)
    assert [(d.pod, d.outcome) for d in report.decisions] == [
        ("default/high", "scheduled"),
        ("default/low", "unschedulable"),
    ]
    low = report.decisions[1]
    assert low.message == "0/1 nodes are available: 1 Insufficient cpu."
    assert low.preemption_message == (
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_preemption_policy_never_does_not_preempt() -> None:
    objs = manifests(
        pclass("polite", 100, preemptionPolicy="Never"),
        node("n1", cpu="1"),
        pending_pod("victim", cpu="1", node_name="n1"),
        pending_pod("p", cpu="1", priority_class="polite"),
    )
    [d] = simulate(objs).decisions
    assert d.outcome == "unschedulable"
    assert d.preemption_message == "preemption: not eligible due to preemptionPolicy=Never."


def test_gated_pods_wait() -> None:
    objs = manifests(
        node("n1", cpu="4"),
        pending_pod("g", cpu="1", schedulingGates=[{"name": "a"}, {"name": "b"}]),
    )
    [d] = simulate(objs).decisions
    assert (d.outcome, d.message) == ("gated", "waiting for scheduling gates: [a b]")


def test_extra_pending_pods() -> None:
    objs = manifests(node("n1", cpu="4"))
    [extra] = manifests(pending_pod("extra", cpu="1"))
    [d] = simulate(objs, pending=[extra]).decisions  # type: ignore[list-item]
    assert (d.pod, d.outcome, d.node) == ("default/extra", "scheduled", "n1")
    [bound] = manifests(pending_pod("bound", cpu="1", node_name="n1"))
    with pytest.raises(SimulationError, match="a pending pod must not be bound"):
        simulate(objs, pending=[bound])  # type: ignore[list-item]


def test_admission_and_class_validation_errors() -> None:
    with pytest.raises(SimulationError, match="no PriorityClass with name nope was found") as err:
        simulate(manifests(node("n1", cpu="4"), pending_pod("x", cpu="1", priority_class="nope")))
    assert err.value.pod == "default/x"
    with pytest.raises(
        SimulationError, match="maximum allowed value of a user defined priority is 1000000000"
    ):
        simulate(manifests(pclass("huge", 2_000_000_000)))
    with pytest.raises(SimulationError, match="is already marked as default"):
        simulate(
            manifests(
                pclass("a", 1, globalDefault=True),
                pclass("b", 2, globalDefault=True),
            )
        )


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


def test_cli_table_and_json() -> None:
    table = run_cli("simulate", str(EXAMPLE))
    assert table.returncode == 0, table.stderr
    assert "preempting" in table.stdout
    assert "evict batch/etl-1 (priority 1000)" in table.stdout
    out = run_cli("simulate", str(EXAMPLE), "-o", "json")
    assert out.returncode == 0
    doc = json.loads(out.stdout)
    assert doc["decisions"][0]["victims"][0] == {
        "pod": "batch/etl-1",
        "node": "node-b",
        "priority": 1000,
    }


def test_cli_bad_input_exits_2_naming_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {priority: high}\n")
    out = run_cli("simulate", str(bad))
    assert out.returncode == 2
    assert (
        f'{bad}: document 1: Pod "x": json: cannot unmarshal string into Go struct field'
        " PodSpec.spec.priority of type int" in out.stderr
    )
    missing = run_cli("simulate", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "No such file or directory" in missing.stderr
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: y}\nspec: {priorityClassName: gold}\n"
    )
    pending = run_cli("simulate", str(EXAMPLE), "--pending", str(unknown))
    assert pending.returncode == 2
    assert f'{unknown}: pods "y" is forbidden: no PriorityClass with name gold' in pending.stderr
    assert run_cli("simulate", str(EXAMPLE), "--mode", "random").returncode == 2


def test_build_snapshot_admits_pods_as_the_readme_shows() -> None:
    from scheduler import build_snapshot, preempt, schedule_one

    snapshot, pending = build_snapshot(load_objects(EXAMPLE))
    assert [p.key for p in pending] == ["shop/checkout-api-7f9c"]
    assert pending[0].priority == 100000
    assert snapshot.get_pod("batch/etl-0").priority == 1000  # type: ignore[union-attr]
    assert "system-node-critical" in snapshot.priority_classes
    result = schedule_one(pending[0], snapshot)
    assert not result.succeeded
    decision = preempt(pending[0], snapshot, node_statuses=result.node_statuses)
    assert decision.nominated_node_name == "node-b"
    assert [v.key for v in decision.victims] == ["batch/etl-1", "batch/etl-2"]
