"""Benchmark: the agent's own footprint on a full node.

``eviction-agent run`` at its default 1 s interval (plus the 100 ms fast memory check and the PSI
monitor) on a node with 110 pods (the kubelet's default ``maxPods``): 110 pods bound to the node in
an in-process kubesim, each with its pod cgroup under a fake node's ``kubepods`` tree (see
``agent_reaction.py``), so every sync reads 110 pod cgroups as on a real node. After a warm-up,
CPU time is measured over ``--seconds`` (60) and reported as a share of one core; peak RSS is the
process's high-water mark (``VmHWM``, imports included).

Targets: ≤ 1 % of a core and ≤ 60 MiB. Anchors: the targets themselves (the kubelet's eviction
manager cannot be measured apart from the kubelet).

Run: ``.venv/bin/python bench/agent_footprint.py [--seconds 60] [--pods 110]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped, unused-ignore]

import kubesim


def _reaction_module() -> Any:
    # the fake node cgroup is shared with agent_reaction.py (bench/ is not a package)
    path = Path(__file__).resolve().parent / "agent_reaction.py"
    spec = importlib.util.spec_from_file_location("agent_reaction", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_R = _reaction_module()
NODE, FakeNodeCgroup, pod_manifest = _R.NODE, _R.FakeNodeCgroup, _R.pod_manifest

MIB = 1 << 20


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return int(psutil.Process(pid).memory_info().rss)


async def bench(seconds: float, pods: int) -> tuple[float, int]:
    node = FakeNodeCgroup(1024 * MIB)
    agent: subprocess.Popen[bytes] | None = None
    try:
        async with kubesim.serve(state=[NODE], time_scale=0.01) as sim:
            assert sim.kubeconfig_path is not None
            for i in range(pods):
                created = sim.apply(pod_manifest(f"p-{i}"))[0]
                node.pod_cgroup(created["metadata"]["uid"])
            agent = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agent",
                    "run",
                    "--node-name=bench-node",
                    f"--kubeconfig={sim.kubeconfig_path}",
                    "--memory-capacity=1Gi",
                    f"--cgroup-root={node.agent_root}",
                    f"--kubelet-root={node.tmp}",
                    f"--runtime-root={node.tmp}",
                    "--listen=127.0.0.1:0",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            proc = psutil.Process(agent.pid)
            await asyncio.sleep(5.0)  # imports, list, first syncs
            if agent.poll() is not None:
                raise RuntimeError(f"agent exited with {agent.returncode}")
            t0 = time.monotonic()
            c0 = proc.cpu_times()
            await asyncio.sleep(seconds)
            c1 = proc.cpu_times()
            elapsed = time.monotonic() - t0
            cpu = (c1.user - c0.user) + (c1.system - c0.system)
            return cpu / elapsed, peak_rss(agent.pid)
    finally:
        if agent is not None and agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                agent.wait(10)
            if agent.poll() is None:
                agent.kill()
        node.remove()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--pods", type=int, default=110)
    args = parser.parse_args()
    try:
        share, rss = asyncio.run(bench(args.seconds, args.pods))
    except OSError as exc:
        print(json.dumps({"bench": "agent_footprint", "skipped": f"no writable cgroup: {exc}"}))
        return 0
    common = {"pods": args.pods, "seconds": args.seconds, "interval": "1s"}
    print(
        json.dumps(
            {
                "bench": "agent_footprint_cpu",
                "value": round(share * 100, 3),
                "unit": "% of one core",
                "anchor": {"name": "target", "value": 1.0, "unit": "%"},
                "ratio": round(share * 100 / 1.0, 3),
                **common,
            }
        ),
        flush=True,
    )
    print(
        json.dumps(
            {
                "bench": "agent_footprint_peak_rss",
                "value": round(rss / MIB, 1),
                "unit": "MiB",
                "anchor": {"name": "target", "value": 60, "unit": "MiB"},
                "ratio": round(rss / MIB / 60, 3),
                **common,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
