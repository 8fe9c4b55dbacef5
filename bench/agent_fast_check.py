"""Benchmark: the CPU of the agent's fast memory check and of its syncs, in process.

The daemon (``agent.daemon.Agent``) is assembled as ``eviction-agent run`` assembles it, on a
fake node (``build_node``), and measured as CPU time of this process (``measure``). Anchor: the
agent's budget, 1 % of one core in all (``bench/agent_footprint.py`` measures the whole process
against it); the fast check runs 5 times a second, so every 20 µs of it is 0.01 % of a core.

Run: ``.venv/bin/python bench/agent_fast_check.py [--pods 110] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.config import load_config
from agent.daemon import Agent
from agent.informer import PodEntry
from kube.objects import Pod

MIB = 1 << 20
CAPACITY = 8192 * MIB
ANCHOR_PERCENT = 1.0
ANCHOR = {"name": "the agent's whole budget", "value": ANCHOR_PERCENT, "unit": "% of one core"}


def _cgroup(directory: Path, *, usage: int, limit: int | None = None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "memory.current").write_text(f"{usage}\n")
    (directory / "memory.max").write_text(f"{limit}\n" if limit else "max\n")
    (directory / "memory.stat").write_text(
        f"anon {usage // 2}\nfile {usage // 2}\ninactive_file {usage // 8}\n"
        "pgfault 42\npgmajfault 3\n"
    )
    (directory / "cgroup.procs").write_text("")


def build_node(base: Path, *, pods: int, node_usage: int) -> dict[str, str]:
    """The fake node's trees (the v2 root's usage is ``anon + file`` of its ``memory.stat``);
    the agent's root flags pointing at them.

    A cgroup v2 tree laid out as the kubelet's cgroupfs driver does (``kubepods`` with a limit,
    ``--pods`` pod cgroups of two containers each) and a ``/proc`` with ``meminfo``, under
    ``base``. No API server: the informer knows no pod, which changes nothing of what is read and
    little of what is decided.
    """
    cgroup = base / "cgroup"
    cgroup.mkdir()
    (cgroup / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (cgroup / "memory.stat").write_text(
        f"anon {node_usage // 2}\nfile {node_usage // 2}\ninactive_file {node_usage // 8}\n"
    )
    kubepods = cgroup / "kubepods"
    per_pod = node_usage // 2 // max(pods, 1)
    _cgroup(kubepods, usage=node_usage // 2, limit=CAPACITY - 512 * MIB)
    for qos in ("burstable", "besteffort"):
        _cgroup(kubepods / qos, usage=0)
    for i in range(pods):
        pod = kubepods / "burstable" / f"pod{uid(i)}"
        _cgroup(pod, usage=per_pod)
        for c in range(2):
            _cgroup(pod / f"{i:032x}{c:032x}", usage=per_pod // 2)
    proc = base / "proc"
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal: {CAPACITY // 1024} kB\n")
    (proc / "sys" / "kernel" / "pid_max").write_text("4194304\n")
    (proc / "loadavg").write_text("0.50 0.50 0.50 3/1234 5678\n")
    kubelet = base / "kubelet"
    kubelet.mkdir()
    return {
        "procRoot": str(proc),
        "cgroupRoot": str(cgroup),
        "kubeletRoot": str(kubelet),
        "runtimeRoot": str(kubelet),
    }


def uid(i: int) -> str:
    return f"{i:08d}-0000-4000-8000-000000000000"


def best_cpu(step: Callable[[], Any], *, calls: int, repeats: int) -> float:
    """The least CPU seconds one call took, over ``repeats`` runs of ``calls`` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            step()
        best = min(best, (time.process_time() - start) / calls)
    return best


async def best_sync_cpu(agent: Agent, *, calls: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            await agent.loop.sync_once()
        best = min(best, (time.process_time() - start) / calls)
    return best


async def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The best of ``--repeats`` runs (``time.process_time``) of:

    - one fast memory check (``EvictionLoop.check_memory``): what the agent does every 200 ms
      between syncs: read the node's and kubepods' memory, decide whether a hard memory threshold
      is met;
    - one steady sync (``EvictionLoop.sync_once``, no threshold met): the node-level figures;
    - one sync under pressure (``memory.available`` below its threshold): every pod cgroup read
      and ranked.
    """
    results: list[dict[str, Any]] = []
    for pressure in (False, True):
        with tempfile.TemporaryDirectory(prefix="agent-fast-check-") as tmp:
            # the working set is 7/8 of the usage: under pressure memory.available is 50Mi
            usage = (CAPACITY - 50 * MIB) * 8 // 7 if pressure else CAPACITY // 2
            roots = build_node(Path(tmp), pods=args.pods, node_usage=usage)
            cfg = load_config(
                {
                    "nodeName": "bench",
                    "dryRun": True,  # under pressure every sync decides; nothing is written
                    "evictionHard": {"memory.available": "100Mi"},
                    **roots,
                },
                env={},
            )
            agent = Agent(cfg, api_client=None, serve_http=False, use_psi=False)
            for i in range(args.pods):  # the pods the API would list, one per pod cgroup
                pod = Pod(name=f"pod-{i}", namespace="bench", uid=uid(i), node_name="bench")
                agent.informer.pods[pod.uid] = PodEntry(pod, {})
            loop = agent.loop
            assert loop.fast_check_active, "no hard memory threshold to check"
            await loop.sync_once()  # the first sync reads every pod
            if not pressure:
                fast = best_cpu(loop.check_memory, calls=args.calls, repeats=args.repeats)
                results.append(_figure("fast memory check", fast, per_second=5, pods=args.pods))
            sync = await best_sync_cpu(agent, calls=args.sync_calls, repeats=args.repeats)
            assert loop.stats.errors == 0, loop.stats.last_error
            assert bool(loop.manager.thresholds_met) == pressure
            assert bool(loop.stats.decisions) == pressure
            name = "sync under pressure (every pod read and ranked)" if pressure else "steady sync"
            results.append(_figure(name, sync, per_second=1, pods=args.pods))
            await agent.stop()
    return results


def _figure(name: str, seconds: float, *, per_second: float, pods: int) -> dict[str, Any]:
    share = seconds * per_second * 100
    return {
        "bench": "agent_fast_check",
        "name": name,
        "pods": pods,
        "cpu_us": round(seconds * 1e6, 1),
        "runs_per_second": per_second,
        "core_percent": round(share, 4),
        "anchor": ANCHOR,
        "ratio_to_anchor": round(share / ANCHOR_PERCENT, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=110, help="pod cgroups on the fake node")
    parser.add_argument("--repeats", type=int, default=5, help="runs; the best is kept")
    parser.add_argument("--calls", type=int, default=2000, help="fast checks per run")
    parser.add_argument("--sync-calls", type=int, default=50, help="syncs per run")
    args = parser.parse_args()
    for line in asyncio.run(measure(args)):
        print(json.dumps(line))


if __name__ == "__main__":
    main()
