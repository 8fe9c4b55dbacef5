"""Benchmark: how fast the agent reacts to a hard ``memory.available`` crossing.

Measured per run (``bench``): from the crossing to the agent's eviction request. Anchor: the
kubelet's 10 s housekeeping loop (its reaction is up to 10 s plus up to 10 s of cAdvisor
staleness). Target: p99 ≤ 1 s over 20 runs. Needs a writable memory cgroup (root, cgroup v1
or v2); without one it prints a JSON line saying why and exits 0 without figures.

Run: ``.venv/bin/python bench/agent_reaction.py [--runs 20] [--capacity-mib 256]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import kubesim
from kubesim.sim import Simulator

MIB = 1 << 20
ANCHOR = {"name": "kubelet housekeeping loop", "value": 10.0, "unit": "s"}
THRESHOLD_MIB = 100


class FakeNodeCgroup:
    """The node's memory cgroup (v1 or v2) and the agent's ``--cgroup-root`` view of it.

    A small fake node: a memory cgroup of its own (``agentbench-<pid>``, laid out like a
    kubelet's cgroupfs tree ``kubepods/besteffort/pod<uid>``) whose capacity is given to the
    agent with ``--memory-capacity``, so a crossing costs a few hundred MiB, not the machine's
    memory."""

    def __init__(self, capacity: int) -> None:
        name = f"agentbench-{os.getpid()}"
        root = Path("/sys/fs/cgroup")
        self.tmp = Path(tempfile.mkdtemp(prefix="agentbench-"))
        if (root / "cgroup.controllers").is_file():
            self.v2 = True
            self.node = root / name
            self.node.mkdir()
            (root / "cgroup.subtree_control").write_text("+memory")
            self.agent_root = self.node
            (self.node / "memory.max").write_text(str(capacity))
        elif (root / "memory").is_dir():
            self.v2 = False
            self.node = root / "memory" / name
            self.node.mkdir()
            (self.node / "memory.limit_in_bytes").write_text(str(capacity))
            self.agent_root = self.tmp / "view"
            self.agent_root.mkdir()
            (self.agent_root / "memory").symlink_to(self.node)
        else:
            raise OSError("no memory cgroup controller under /sys/fs/cgroup")
        self.kubepods = self.node / "kubepods"
        self.kubepods.mkdir()
        if self.v2:
            (self.node / "cgroup.subtree_control").write_text("+memory")
            (self.kubepods / "cgroup.subtree_control").write_text("+memory")
        self.qos = self.kubepods / "besteffort"
        self.qos.mkdir()
        if self.v2:
            (self.qos / "cgroup.subtree_control").write_text("+memory")

    def working_set(self) -> int:
        if self.v2:
            usage = int((self.node / "memory.current").read_text())
            key = "inactive_file"
        else:
            usage = int((self.node / "memory.usage_in_bytes").read_text())
            key = "total_inactive_file"
        inactive = 0
        for line in (self.node / "memory.stat").read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                inactive = int(v)
        return max(usage - inactive, 0)

    def pod_cgroup(self, uid: str) -> Path:
        path = self.qos / f"pod{uid}"
        path.mkdir()
        if self.v2:
            (path / "cgroup.subtree_control").write_text("+memory")
        return path

    def remove(self) -> None:
        for path in sorted(self.node.rglob("*"), key=lambda p: -len(p.parts)):
            if path.is_dir():
                with contextlib.suppress(OSError):
                    path.rmdir()
        with contextlib.suppress(OSError):
            self.node.rmdir()


def pod_manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": "bench-node", "containers": [{"name": "c", "image": "hog"}]},
    }


NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "bench-node"},
    "status": {
        "capacity": {"cpu": "2", "memory": "256Mi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


def start_hog(cgroup: Path, rate_mib: float, max_mib: float) -> subprocess.Popen[bytes]:
    procs = cgroup / "cgroup.procs"

    def join() -> None:
        procs.write_text(str(os.getpid()))

    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubesim.node.memory_grower",
            "--rate-mib-per-s",
            str(rate_mib),
            "--max-mib",
            str(max_mib),
            "--step-ms",
            "20",
        ],
        preexec_fn=join,  # noqa: PLW1509 - joins the pod cgroup before exec
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def sample_crossing(node: FakeNodeCgroup, capacity: int, stop: threading.Event) -> float | None:
    limit = THRESHOLD_MIB * MIB
    while not stop.is_set():
        if capacity - node.working_set() < limit:
            return time.time()
        time.sleep(0.002)
    return None


def _sample_into(
    out: list[float | None], node: FakeNodeCgroup, capacity: int, stop: threading.Event
) -> None:
    out.append(sample_crossing(node, capacity, stop))


def delete_time(sim: Simulator, name: str) -> float | None:
    for r in sim.requests.filter(verb="delete", resource="pods", name=name):
        return r.time
    return None


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[idx]


async def bench(runs: int, capacity_mib: int) -> list[float]:
    """Seconds from each crossing to the agent's DELETE of the pod.

    A real process (``kubesim.node.memory_grower``) grows its working set inside the pod
    cgroup; the agent runs as its own process (``eviction-agent run``, default 1 s interval)
    against an in-process kubesim where the pod is bound to the node. The crossing is sampled
    independently here every 2 ms from the node cgroup's usage − inactive_file (the kubelet's
    working set); the DELETE's time is in kubesim's request log."""
    capacity = capacity_mib * MIB
    node = FakeNodeCgroup(capacity)
    agent: subprocess.Popen[bytes] | None = None
    results: list[float] = []
    try:
        async with kubesim.serve(state=[NODE], time_scale=0.01) as sim:
            assert sim.kubeconfig_path is not None
            agent = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agent",
                    "run",
                    "--node-name=bench-node",
                    f"--kubeconfig={sim.kubeconfig_path}",
                    f"--eviction-hard=memory.available<{THRESHOLD_MIB}Mi",
                    f"--memory-capacity={capacity_mib}Mi",
                    f"--cgroup-root={node.agent_root}",
                    f"--kubelet-root={node.tmp}",
                    f"--runtime-root={node.tmp}",
                    "--listen=127.0.0.1:0",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            await asyncio.sleep(4.0)  # imports and first sync
            if agent.poll() is not None:
                raise RuntimeError(f"agent exited with {agent.returncode}")
            for i in range(runs):
                name = f"hog-{i}"
                created = sim.apply(pod_manifest(name))[0]
                uid = created["metadata"]["uid"]
                cg = node.pod_cgroup(uid)
                await asyncio.sleep(0.5)  # the agent's watch sees the pod
                stop = threading.Event()
                crossing: list[float | None] = []
                sampler = threading.Thread(
                    target=_sample_into, args=(crossing, node, capacity, stop)
                )
                sampler.start()
                hog = start_hog(cg, rate_mib=200, max_mib=capacity_mib - 40)
                deadline = time.monotonic() + 30
                requested = None
                while requested is None and time.monotonic() < deadline:
                    await asyncio.sleep(0.01)
                    requested = delete_time(sim, name)
                stop.set()
                sampler.join()
                hog.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    hog.wait(5)
                if hog.poll() is None:
                    hog.kill()
                    hog.wait()
                t_cross = crossing[0] if crossing else None
                if requested is not None and t_cross is not None:
                    results.append(requested - t_cross)
                for _ in range(200):
                    try:
                        cg.rmdir()
                        break
                    except OSError:
                        await asyncio.sleep(0.02)
                await asyncio.sleep(1.0)
    finally:
        if agent is not None and agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                agent.wait(10)
            if agent.poll() is None:
                agent.kill()
        node.remove()
    return results


def line(name: str, value: float | None, runs: int, **extra: Any) -> str:
    return json.dumps(
        {
            "bench": name,
            "value": None if value is None else round(value, 4),
            "unit": "s",
            "runs": runs,
            "anchor": ANCHOR,
            "ratio": None if not value else round(ANCHOR["value"] / value, 1),
            "target": "p99 <= 1 s",
            **extra,
        }
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--capacity-mib", type=int, default=256)
    args = parser.parse_args()
    try:
        results = asyncio.run(bench(args.runs, args.capacity_mib))
    except OSError as exc:
        print(json.dumps({"bench": "agent_reaction", "skipped": f"no writable cgroup: {exc}"}))
        return 0
    if not results:
        print(json.dumps({"bench": "agent_reaction", "error": "no eviction observed"}))
        return 1
    print(line("agent_reaction_p50", statistics.median(results), len(results)), flush=True)
    print(
        line(
            "agent_reaction_p99",
            percentile(results, 0.99),
            len(results),
            max=round(max(results), 4),
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
