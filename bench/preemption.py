"""Preemption decisions per second on kube-scheduler_perf's PreemptionAsync shape.

Anchor: 570 decisions/s, kube-scheduler's published floor for this workload (Go, 16 dry-run
workers, sampled mode). One JSON line per figure: ``preemption_exhaustive`` (the headline),
``preemption_sampled`` and ``preemption_exhaustive_with_filter_pass`` (``run`` says what each
times). ``--quick`` runs a small size (used by the smoke test).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kube.objects import Container, Node, Pod
from scheduler.framework import Code, Framework, NodeToStatus, Status
from scheduler.preemption import PreemptionResult, preempt
from scheduler.preemption.core import default_preemption_framework
from scheduler.schedule import schedule_one
from scheduler.snapshot import Snapshot

ANCHOR = 570.0
LOW, HIGH = 0, 1000


def make_cluster(num_nodes: int, pods_per_node: int = 4) -> Snapshot:
    snapshot = Snapshot()
    for n in range(num_nodes):
        name = f"node-{n}"
        alloc = {"cpu": 4000, "memory": 32 * 2**30, "pods": 110}
        snapshot.add_node(Node(name, allocatable=alloc, capacity=alloc))
        for k in range(pods_per_node):
            snapshot.add_pod(
                Pod(
                    f"low-{n}-{k}",
                    containers=(Container("c", requests={"cpu": 900}),),
                    spec_priority=LOW,
                    node_name=name,
                )
            )
    return snapshot


def high_pod(i: int) -> Pod:
    return Pod(
        f"high-{i}",
        containers=(Container("c", requests={"cpu": 3000}),),
        spec_priority=HIGH,
    )


def apply(snapshot: Snapshot, pod: Pod, result: PreemptionResult) -> None:
    """What the cluster does after a decision: victims go, the preemptor lands."""
    if not result.nominated_node_name:
        raise RuntimeError(f"{pod.key}: no node nominated: {result.status.message}")
    for victim in result.victims:
        snapshot.remove_pod(victim)
    snapshot.bind_pod(pod, result.nominated_node_name)


def filter_pass(fw: Framework, pod: Pod, snapshot: Snapshot) -> NodeToStatus:
    """The scheduling attempt that fails and produces the statuses preemption starts from."""
    attempt = schedule_one(pod, snapshot, framework=fw)
    if attempt.succeeded:
        raise RuntimeError(f"{pod.key}: unexpectedly fits on {attempt.suggested_host}")
    return attempt.node_statuses


@dataclass
class Run:
    decisions: int
    seconds: float
    cold_seconds: float

    @property
    def rate(self) -> float:
        return self.decisions / self.seconds if self.seconds > 0 else 0.0


def run(
    num_nodes: int,
    num_preemptors: int,
    *,
    mode: str = "exhaustive",
    with_filter_pass: bool = False,
    seed: int = 1,
) -> Run:
    """Build the cluster, then time ``num_preemptors`` decisions (the first one, which fills
    the caches, is timed separately as ``cold_seconds``).

    ``num_nodes`` nodes of 4 CPU, four low-priority pods of 0.9 CPU on each, then high-priority
    pods of 3 CPU preempted one after another; after each decision the victims are removed and
    the preemptor is bound to the nominated node, as the scheduler would once the victims are
    gone (``apply``). Each rate counts whole decision loops: preempt, then applying the result.
    ``preempt`` gets the Filter statuses precomputed (every node Unschedulable ``Insufficient
    cpu``), in ``mode``; ``with_filter_pass`` runs the whole PostFilter path as the scheduler
    and ``simulate`` run it: a failed ``schedule_one`` (PreFilter, then Filter with nominated
    pods on every node) whose statuses feed ``preempt``."""
    snapshot = make_cluster(num_nodes)
    fw = default_preemption_framework()
    rng = random.Random(seed)
    insufficient = Status(Code.Unschedulable, "Insufficient cpu")
    precomputed = NodeToStatus({ni.name: insufficient for ni in snapshot.node_info_list})
    cold = 0.0
    start = time.perf_counter()
    for i in range(num_preemptors):
        pod = high_pod(i)
        statuses = filter_pass(fw, pod, snapshot) if with_filter_pass else precomputed
        result = preempt(pod, snapshot, node_statuses=statuses, mode=mode, rng=rng, framework=fw)
        apply(snapshot, pod, result)
        if i == 0:
            cold = time.perf_counter() - start
            start = time.perf_counter()
    seconds = time.perf_counter() - start
    return Run(max(num_preemptors - 1, 0), seconds, cold)


def line(bench: str, value: float, unit: str, anchor: float | None) -> str:
    ratio = None if anchor is None else round(value / anchor, 3)
    return json.dumps(
        {"bench": bench, "value": round(value, 1), "unit": unit, "anchor": anchor, "ratio": ratio}
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke size")
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--preemptors", type=int, default=None)
    args = parser.parse_args(argv)
    nodes = args.nodes or (200 if args.quick else 5000)
    preemptors = args.preemptors or (100 if args.quick else nodes)
    filter_preemptors = max(2, preemptors // (10 if not args.quick else 1))
    for bench, mode, with_filter, count in (
        ("preemption_exhaustive", "exhaustive", False, preemptors),
        ("preemption_sampled", "sampled", False, preemptors),
        ("preemption_exhaustive_with_filter_pass", "exhaustive", True, filter_preemptors),
    ):
        r = run(nodes, count, mode=mode, with_filter_pass=with_filter)
        print(line(bench, r.rate, "decisions/s", ANCHOR), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
