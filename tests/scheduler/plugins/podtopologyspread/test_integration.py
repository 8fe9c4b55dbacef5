"""Topology spreading, the new scores and the "not modelled" warning through schedule_one,
preemption and ``python -m scheduler simulate``."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from kube.objects import KubeObject, Pod, load_objects
from scheduler.framework import Code
from scheduler.preemption import preempt
from scheduler.schedule import schedule_one, unmodelled_features
from scheduler.simulator import simulate
from scheduler.snapshot import Snapshot
from tests.support import objects as obj
from tests.support.spread import HOSTNAME, UNSCHEDULABLE_TAINT, ZONE, service, tsc

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE = ROOT / "examples" / "topology-spread.yaml"
WEB = {"matchLabels": {"app": "web"}}


def zone_node(name: str, zone: str | None, **kw: Any) -> Any:
    labels = {HOSTNAME: name}
    if zone is not None:
        labels[ZONE] = zone
    return obj.node(name, labels, **kw)


def web(name: str, node: str = "", **kw: Any) -> Pod:
    return obj.pod(name, node_name=node, labels={"app": "web"}, cpu="100m", **kw)


def test_simulate_example_picks_the_node_kube_picks() -> None:
    report = simulate(load_objects(EXAMPLE, ignore_unknown=True))
    (decision,) = report.decisions
    assert (decision.pod, decision.outcome, decision.node) == (
        "default/web-4",
        "scheduled",
        "node-c",
    )
    assert decision.warning == ""


def test_cli_simulate_prints_the_spread_choice() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "scheduler", "simulate", str(EXAMPLE), "-o", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    (decision,) = json.loads(run.stdout)["decisions"]
    assert decision["node"] == "node-c"
    assert decision["outcome"] == "scheduled"


def test_fit_error_names_spread_reasons_with_kube_codes() -> None:
    objects: list[KubeObject] = [
        zone_node("a", "z1"),
        zone_node("b", None),
        zone_node("c", "z2", taints=[UNSCHEDULABLE_TAINT]),
        web("w1", "a"),
        web("w2", "a"),
    ]
    pod = web("p", spread=[tsc(1, ZONE, selector=WEB)])
    result = schedule_one(pod, Snapshot.from_objects(objects))
    assert not result.succeeded
    assert result.message == (
        "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints,"
        " 1 node(s) didn't match pod topology spread constraints (missing required label),"
        " 1 node(s) had untolerated taint(s)."
    )
    statuses = result.node_statuses
    assert statuses.get("a").code is Code.Unschedulable
    assert statuses.get("b").code is Code.UnschedulableAndUnresolvable
    assert "PodTopologySpread" in result.diagnosis.unschedulable_plugins


def test_preemption_reevaluates_spread_with_victims_removed() -> None:
    """node a is full (a priority-50 batch pod: only its eviction makes room); zone z2 has two
    web pods, z1 one, so node b breaks maxSkew 1. Removing one web pod from b fixes the skew:
    the RemovePod extension must see it, and b (victim priority 0) beats a (victim priority
    50). Without the extension b would not be a candidate at all."""
    objects: list[KubeObject] = [
        zone_node("a", "z1"),
        zone_node("b", "z2"),
        web("w1", "a"),
        obj.pod("big", node_name="a", labels={"app": "batch"}, cpu="3950m"),
        web("w2", "b"),
        web("w3", "b"),
    ]
    snapshot = Snapshot.from_objects(objects)
    big = snapshot.get_pod("default/big")
    assert big is not None
    snapshot.update_pod(big.with_changes(spec_priority=50))
    pod = web("p", spread=[tsc(1, ZONE, selector=WEB)]).with_changes(spec_priority=100)
    first = schedule_one(pod, snapshot)
    assert not first.succeeded
    assert first.node_statuses.get("a").reasons == ("Insufficient cpu",)
    assert first.node_statuses.get("b").reasons == (
        "node(s) didn't match pod topology spread constraints",
    )
    for mode in ("exhaustive", "sampled"):
        result = preempt(
            pod, snapshot, node_statuses=first.node_statuses, mode=mode, rng=random.Random(1)
        )
        assert result.nominated_node_name == "b"
        assert len(result.victims) == 1
        assert result.victims[0].labels == {"app": "web"}


def test_system_default_spreading_applies_to_pods_a_service_selects() -> None:
    base: list[KubeObject] = [
        zone_node("node-a", "z1"),
        zone_node("node-b", "z1"),
        web("w1", "node-a"),
        obj.pod("other", node_name="node-b", labels={"app": "other"}, cpu="100m"),
    ]
    pod = web("p")
    # Without a Service the two nodes tie and the first wins.
    alone = schedule_one(pod, Snapshot.from_objects(base))
    assert alone.suggested_host == "node-a"
    assert "PodTopologySpread" not in alone.node_scores["node-a"]
    # A Service selecting app=web brings the hostname (maxSkew 3) and zone (5) defaults.
    spread = schedule_one(pod, Snapshot.from_objects([*base, service({"app": "web"})]))
    assert spread.suggested_host == "node-b"
    assert spread.node_scores["node-b"]["PodTopologySpread"] == 200
    assert spread.node_scores["node-a"]["PodTopologySpread"] < 200


def test_unmodelled_features_are_named_in_one_line() -> None:
    pod = Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": {"name": "db", "namespace": "prod"},
            "spec": {
                "containers": [{"name": "c", "image": "postgres"}],
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "tmp", "emptyDir": {}},
                ],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
            },
        }
    )
    assert len(unmodelled_features(pod)) == 2
    result = schedule_one(pod, Snapshot.from_objects([zone_node("a", "z1")]))
    assert result.succeeded  # evaluated as far as modelled, and said so
    assert result.warning == result.diagnosis.unmodelled
    assert "\n" not in result.warning
    assert result.warning.startswith("pod prod/db: not evaluated here: ")
    for part in (
        'volume "data", "scratch"',
        'resourceClaims (claim "gpu"',
    ):
        assert part in result.warning
    assert '"tmp"' not in result.warning
    plain = schedule_one(web("p"), Snapshot.from_objects([zone_node("a", "z1")]))
    assert plain.warning == ""


def test_simulate_reports_the_warning_per_pod(tmp_path: Path) -> None:
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "metadata": {"name": "n1"},
                        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
                    },
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": "claims"},
                        "spec": {
                            "containers": [{"name": "c", "image": "x"}],
                            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "d"}}],
                        },
                    },
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": "plain"},
                        "spec": {"containers": [{"name": "c", "image": "x"}]},
                    },
                ],
            }
        )
    )
    report = simulate(load_objects(manifest))
    warnings = {d.pod: d.warning for d in report.decisions}
    assert warnings["default/plain"] == ""
    assert warnings["default/claims"].startswith("pod default/claims: not evaluated here: ")
    run = subprocess.run(
        [sys.executable, "-m", "scheduler", "simulate", str(manifest)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = [ln for ln in run.stdout.splitlines() if "warning:" in ln]
    assert lines == [f"  warning: {warnings['default/claims']}"]
