"""Benchmark: the scheduling queue's throughput (scheduler.queue.SchedulingQueue).

Two workloads (``bench_add_pop``, ``bench_requeue``), each printed as one JSON line in queue
operations per second. There is no upstream figure for the queue alone (scheduler_perf
measures whole scheduling cycles), so ``anchor`` and ``ratio`` are null.

Run: ``.venv/bin/python bench/scheduling_queue.py [--quick] [--pods N] [--seed S]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named like the stdlib ``queue`` module that our dependencies import; keep the
# script's own directory off the import path so they get the real one.
_HERE = str(Path(__file__).resolve().parent)
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _HERE]

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402

from kube.objects import Pod  # noqa: E402
from scheduler.queue import SchedulingQueue  # noqa: E402
from scheduler.queue import events as ev  # noqa: E402

PRIORITIES = (-10, 0, 0, 0, 100, 1000, 1000000, 2000000000)
ROUNDS = 3
MOVE_EVERY = 500


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def now(self) -> float:
        return self.t


@dataclass(frozen=True)
class Result:
    bench: str
    ops: int
    seconds: float

    def line(self) -> str:
        rate = self.ops / self.seconds if self.seconds > 0 else float("inf")
        return json.dumps(
            {
                "bench": self.bench,
                "value": round(rate, 1),
                "unit": "ops/s",
                "anchor": None,
                "ratio": None,
            }
        )


def make_pods(n: int, seed: int) -> list[Pod]:
    rng = random.Random(seed)
    return [
        Pod(f"p{i}", namespace=f"ns{i % 7}", uid=f"u{i}", spec_priority=rng.choice(PRIORITIES))
        for i in range(n)
    ]


def bench_add_pop(n: int, seed: int = 1) -> Result:
    """``queue_add_pop``: N pods with mixed priorities added, then all popped (2N operations)."""
    pods = make_pods(n, seed)
    clock = Clock()
    q = SchedulingQueue(clock)
    start = time.perf_counter()
    for pod in pods:
        clock.t += 0.0001
        q.add(pod)
    popped = 0
    while q.pop() is not None:
        popped += 1
    elapsed = time.perf_counter() - start
    if popped != n:
        raise AssertionError(f"popped {popped} of {n} pods")
    return Result("queue_add_pop", 2 * n, elapsed)


def bench_requeue(n: int, seed: int = 2) -> Result:
    """``queue_requeue``: N pods added and popped; every popped pod is rejected by a plugin and
    put back (``add_unschedulable_if_not_present``); every 500 rejections a cluster event moves the
    pool (``move_all_to_active_or_backoff_queue``), the clock advances and the backoff and
    leftover flushes run, until every pod was scheduled ``ROUNDS`` times.
    """
    pods = make_pods(n, seed)
    clock = Clock()
    q = SchedulingQueue(clock)
    ops = 0
    start = time.perf_counter()
    for pod in pods:
        q.add(pod)
        ops += 1
    tries: dict[str, int] = {}
    done = 0
    while done < n:
        pinfo = q.pop()
        ops += 1
        if pinfo is None:
            clock.t += 1.0
            q.flush_backoff_q_completed()
            q.flush_unschedulable_pods_leftover()
            q.move_all_to_active_or_backoff_queue(ev.NodeAdd)
            ops += 3
            continue
        key = pinfo.pod.key
        tries[key] = tries.get(key, 0) + 1
        if tries[key] >= ROUNDS:
            done += 1
            continue
        pinfo.unschedulable_plugins = {"NodeResourcesFit"}
        q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
        ops += 1
        if ops % MOVE_EVERY == 0:
            clock.t += 0.5
            q.move_all_to_active_or_backoff_queue(ev.AssignedPodDelete)
            q.flush_backoff_q_completed()
            ops += 2
    elapsed = time.perf_counter() - start
    if len(q) != 0:
        raise AssertionError(f"{len(q)} pods left in the queue")
    return Result("queue_requeue", ops, elapsed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke size (2000 pods)")
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    n = 2000 if args.quick else args.pods
    for result in (bench_add_pop(n, args.seed), bench_requeue(n, args.seed + 1)):
        print(result.line(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
