"""``evict`` as users run it: a subprocess with KUBECONFIG pointing at a kubesim; and the
cluster its CLI tests drain (``BASE``: two nodes, a ReplicaSet of three, a DaemonSet)."""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from kubesim.sim import Simulator
from tests.support.manifests import daemonset, node, pod, replicaset

EVICT = str(Path(sys.executable).with_name("evict"))


@dataclass
class Evict:
    """``evict`` as users run it: a subprocess with KUBECONFIG pointing at the kubesim."""

    sim: Simulator

    @staticmethod
    def binary() -> str:
        return EVICT

    async def __call__(self, *args: str, timeout: float = 60) -> tuple[int, str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["KUBECONFIG"] = str(self.sim.kubeconfig_path)
        proc = await asyncio.create_subprocess_exec(
            EVICT,
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
        return proc.returncode or 0, out.decode(), err.decode()


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


WEB = [pod(f"web-{i}", app="web") for i in range(3)]

AGENT = pod("agent-x", namespace="kube-system", owner=("apps/v1", "DaemonSet", "agent"))

BASE = [node("node-1"), node("node-2"), replicaset("web"), daemonset("agent"), *WEB, AGENT]
