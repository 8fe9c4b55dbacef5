"""Scheduling throughput in the shape of kube-scheduler_perf's SchedulingBasic.

5000 nodes (4 CPU, 32Gi, 110 pods, labels hostname and zone), 5000 pods already bound, then
10000 pods (100m CPU / 500Mi, like ``pod-default.yaml``) scheduled one at a time
(``run_scheduling_basic``). The anchor is the scheduler_perf threshold for
SchedulingBasic/5000Nodes_10000Pods (680 pods/s, Go, parallel filtering), measured with
kube's default adaptive percentageOfNodesToScore; ``main`` says what else is reported. Prints
one JSON object per line; ``--quick`` runs a small size as a smoke test.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from kube.objects import Node, Pod
from scheduler.plugins.registry import default_framework
from scheduler.schedule import schedule_one
from scheduler.snapshot import Snapshot

ANCHOR_PODS_PER_SECOND = 680.0
ZONES = 10
SPREAD_PODS = 2000
SPREAD_LABELS = {"app": "spread-bench"}
SPREAD_CONSTRAINTS = [
    {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": SPREAD_LABELS},
    },
    {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": SPREAD_LABELS},
    },
]
GI = 1024**3
MI = 1024**2


def make_nodes(count: int) -> list[Node]:
    return [
        Node.from_dict(
            {
                "kind": "Node",
                "metadata": {
                    "name": f"node-{i}",
                    "labels": {
                        "kubernetes.io/hostname": f"node-{i}",
                        "topology.kubernetes.io/zone": f"zone-{i % ZONES}",
                    },
                },
                "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"}},
            }
        )
        for i in range(count)
    ]


def pod_template(*, spread: bool = False) -> Pod:
    spec_extra: dict[str, Any] = {"topologySpreadConstraints": SPREAD_CONSTRAINTS} if spread else {}
    return Pod.from_dict(
        {
            "kind": "Pod",
            "metadata": {
                "name": "template",
                "namespace": "default",
                "labels": SPREAD_LABELS if spread else {},
            },
            "spec": {
                **spec_extra,
                "containers": [
                    {
                        "name": "pause",
                        "image": "registry.k8s.io/pause:3.10.1",
                        "ports": [{"containerPort": 80}],
                        "resources": {
                            "limits": {"cpu": "100m", "memory": "500Mi"},
                            "requests": {"cpu": "100m", "memory": "500Mi"},
                        },
                    }
                ],
            },
        }
    )


def build_cluster(num_nodes: int, num_init_pods: int) -> Snapshot:
    template = pod_template()
    nodes = make_nodes(num_nodes)
    init = [
        template.with_changes(name=f"init-{i}", node_name=nodes[i % num_nodes].name)
        for i in range(num_init_pods)
    ]
    return Snapshot.from_objects([*nodes, *init])


def run_scheduling_basic(
    num_nodes: int,
    num_init_pods: int,
    num_pods: int,
    *,
    percentage_of_nodes_to_score: int | None = None,
    distinct_requests: bool = False,
    spread: bool = False,
) -> dict[str, Any]:
    """Schedule ``num_pods`` pods one by one; returns the rate and what was decided.

    Each pod is scheduled with ``schedule_one`` and bound with ``Snapshot.bind_pod`` before the
    next, the round-robin start index carried over as kube-scheduler does.
    ``distinct_requests`` gives every pod its own cpu request (``100 + i % 997`` millicores,
    as pod-level resources), so no per-node result can be reused from an earlier pod.
    ``spread`` gives the pods ``SPREAD_CONSTRAINTS`` (the initial pods have none).
    """
    snapshot = build_cluster(num_nodes, num_init_pods)
    template = pod_template(spread=spread)
    pods = [template.with_changes(name=f"pod-{i}") for i in range(num_pods)]
    if distinct_requests:
        pods = [p.with_changes(pod_requests={"cpu": 100 + i % 997}) for i, p in enumerate(pods)]
    framework = default_framework()
    start_index = 0
    placed: dict[str, int] = {}
    evaluated = 0
    began = time.perf_counter()
    for pod in pods:
        result = schedule_one(
            pod,
            snapshot,
            framework=framework,
            percentage_of_nodes_to_score=percentage_of_nodes_to_score,
            start_index=start_index,
        )
        if not result.suggested_host:
            raise RuntimeError(f"pod {pod.key} did not fit: {result.message}")
        snapshot.bind_pod(pod, result.suggested_host)
        start_index = result.next_start_index
        placed[result.suggested_host] = placed.get(result.suggested_host, 0) + 1
        evaluated += result.evaluated_nodes
    elapsed = time.perf_counter() - began
    return {
        "pods_per_second": num_pods / elapsed,
        "seconds": elapsed,
        "nodes_used": len(placed),
        "max_pods_per_node": max(placed.values()),
        "mean_evaluated_nodes": evaluated / num_pods,
    }


def _line(bench: str, value: float, anchor: float | None, **extra: Any) -> str:
    ratio = round(value / anchor, 3) if anchor else None
    return json.dumps(
        {
            "bench": bench,
            "value": round(value, 1),
            "unit": "pods/s",
            "anchor": anchor,
            "ratio": ratio,
            **extra,
        }
    )


def main() -> None:
    """SchedulingBasic against its anchor; then, without an anchor: the same run evaluating
    every node, the adaptive run with a distinct cpu request per pod (so no per-node result kept
    in ``NodeInfo.memo`` is ever reused: the cost without that cache), and the all-nodes run with
    the spread constraints most production Deployments carry (zone ``DoNotSchedule``, hostname
    ``ScheduleAnyway``, both ``maxSkew`` 1 over the pods' own label), so PodTopologySpread's
    PreFilter, Filter, PreScore and Score all run for every pod; it schedules fewer pods
    (``SPREAD_PODS``) because each one costs more.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke-test size")
    args = parser.parse_args()
    nodes, init_pods, pods = (500, 500, 500) if args.quick else (5000, 5000, 10000)
    spread_pods = min(pods, SPREAD_PODS)
    name = f"schedule_one/SchedulingBasic/{nodes}Nodes_{init_pods}Init_{pods}Pods"
    adaptive = run_scheduling_basic(nodes, init_pods, pods)
    print(
        _line(
            name,
            adaptive["pods_per_second"],
            None if args.quick else ANCHOR_PODS_PER_SECOND,
            percentage_of_nodes_to_score="adaptive",
            mean_evaluated_nodes=round(adaptive["mean_evaluated_nodes"], 1),
        )
    )
    distinct = run_scheduling_basic(nodes, init_pods, pods, distinct_requests=True)
    print(
        _line(
            name + "/distinct_requests",
            distinct["pods_per_second"],
            None,
            percentage_of_nodes_to_score="adaptive",
            mean_evaluated_nodes=round(distinct["mean_evaluated_nodes"], 1),
        )
    )
    every = run_scheduling_basic(nodes, init_pods, pods, percentage_of_nodes_to_score=100)
    print(
        _line(
            name + "/all_nodes",
            every["pods_per_second"],
            None,
            percentage_of_nodes_to_score=100,
            mean_evaluated_nodes=round(every["mean_evaluated_nodes"], 1),
        )
    )
    spread = run_scheduling_basic(
        nodes, init_pods, spread_pods, percentage_of_nodes_to_score=100, spread=True
    )
    print(
        _line(
            f"schedule_one/SchedulingBasic/{nodes}Nodes_{init_pods}Init_{spread_pods}Pods"
            "/all_nodes/topology_spread",
            spread["pods_per_second"],
            None,
            percentage_of_nodes_to_score=100,
            mean_evaluated_nodes=round(spread["mean_evaluated_nodes"], 1),
            max_pods_per_node=spread["max_pods_per_node"],
        )
    )


if __name__ == "__main__":
    main()
